//! A client connection as crawlgate watches it: pingora reads and writes it as it would the bare
//! stream, while [`Watched`] keeps the two deadlines pingora does not (a request header must
//! arrive in time *in all*, not only between two reads; a keep-alive connection may wait only
//! so long for its next request), and puts words on the empty `400` pingora writes when it
//! cannot parse a request.
//!
//! The proxy tells it where a connection is (a request started, a request finished) through
//! [`Watched::request_started`] and [`Watched::request_finished`]; everything else is read off
//! the bytes it passes.

use super::refusal::Refusal;
use super::{Admission, Registry};
use async_trait::async_trait;
use pingora::protocols::raw_connect::ProxyDigest;
use pingora::protocols::tls::{SslDigest, TlsRef};
use pingora::protocols::{
    GetProxyDigest, GetSocketDigest, GetTimingDigest, Peek, Shutdown, SocketDigest, Ssl, Stream,
    TimingDigest, UniqueID, UniqueIDType, ALPN,
};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// The bytes of a header kept to say why pingora refused it: a request line and a few dozen
/// headers; past them, the header is too large anyway.
pub(super) const KEPT: usize = 8 * 1024;

/// Where a connection is, as the proxy says.
const FIRST: u8 = 0;
const IN_REQUEST: u8 = 1;
const BETWEEN: u8 = 2;

/// What the connection speaks, once known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    /// HTTP/1.x: the deadlines and the refusal text apply.
    Http1,
    /// HTTP/2 (by ALPN or prior knowledge): pingora's own idle timeout applies.
    Http2,
}

/// What the deadline armed is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waiting {
    /// Nothing: a request is in flight, and pingora's read and write timeouts apply.
    Nothing,
    /// The next request's first byte (a keep-alive connection).
    Idle,
    /// The rest of a request header.
    Header,
}

/// A client connection with crawlgate's deadlines.
pub struct Watched {
    inner: Stream,
    registry: Arc<Registry>,
    _admission: Admission,
    /// Set by the proxy: [`FIRST`], [`IN_REQUEST`] or [`BETWEEN`].
    phase: AtomicU8,
    /// The phase the read side last acted on.
    seen: u8,
    protocol: Option<Protocol>,
    waiting: Waiting,
    /// When what is waited for must have come.
    deadline: Instant,
    /// Whether `deadline` is set for what is waited for now: it is set when a read first has to
    /// wait, not when the waiting begins, since a header mostly arrives whole in the read that
    /// begins it and a deadline for it would never be looked at.
    armed: bool,
    /// Wakes the connection no later than `deadline`: re-armed only when a deadline comes
    /// sooner than it is set for, or when it fires before the deadline (a busy connection moves
    /// its deadline with every request, and resetting a timer each time costs more than the
    /// rest of this wrapper).
    timer: Pin<Box<Sleep>>,
    /// The header being read, up to [`KEPT`] bytes.
    header: Vec<u8>,
    /// crawlgate's answer in place of pingora's empty 400, and how much of it is written.
    rewrite: Option<(Vec<u8>, usize)>,
    /// Bytes read to tell HTTP/2's preface, not yet handed to pingora.
    peeked: Vec<u8>,
    /// While a write waits for the client to read, when it must have: armed only when the
    /// socket is full, so that writes that go through at once (nearly all) pay no timer.
    send_deadline: Option<Pin<Box<Sleep>>>,
}

impl std::fmt::Debug for Watched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watched")
            .field("inner", &self.inner)
            .field("phase", &self.phase)
            .finish_non_exhaustive()
    }
}

impl Watched {
    /// Watches `inner`, whose first request header must arrive within the header timeout.
    pub(super) fn new(inner: Stream, registry: Arc<Registry>, admission: Admission) -> Watched {
        let protocol =
            matches!(inner.selected_alpn_proto(), Some(ALPN::H2)).then_some(Protocol::Http2);
        let deadline = Instant::now() + registry.header_timeout();
        Watched {
            inner,
            registry,
            _admission: admission,
            phase: AtomicU8::new(FIRST),
            seen: FIRST,
            protocol,
            waiting: Waiting::Header,
            deadline,
            armed: true,
            timer: Box::pin(tokio::time::sleep_until(deadline)),
            header: Vec::new(),
            rewrite: None,
            peeked: Vec::new(),
            send_deadline: None,
        }
    }

    /// A write could not go through: the client has until the send timeout to take what it was
    /// sent; past it, the write fails (nginx's `send_timeout`).
    fn write_blocked(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        let registry = &self.registry;
        let timer = self
            .send_deadline
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(registry.send_timeout())));
        if timer.as_mut().poll(cx).is_ready() {
            self.send_deadline = None;
            self.registry.timed_out("send");
            return Poll::Ready(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client did not read what it was sent in time",
            ));
        }
        Poll::Pending
    }

    /// What a write came to: progress disarms the send deadline, a wait arms it.
    fn written<T>(
        &mut self,
        cx: &mut Context<'_>,
        poll: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        match poll {
            Poll::Pending => self.write_blocked(cx).map(Err),
            ready => {
                self.send_deadline = None;
                ready
            }
        }
    }

    /// A request header has been read: its body and response run on pingora's timeouts.
    pub fn request_started(&self) {
        self.phase.store(IN_REQUEST, Ordering::Release);
    }

    /// A response is complete: the connection waits for its next request.
    pub fn request_finished(&self) {
        self.phase.store(BETWEEN, Ordering::Release);
    }

    /// The connection as a [`Watched`], when it is one.
    pub fn of(stream: &Stream) -> Option<&Watched> {
        stream.as_any().downcast_ref::<Watched>()
    }

    /// Acts on a phase the proxy set since the last read.
    fn follow_phase(&mut self) {
        let phase = self.phase.load(Ordering::Acquire);
        if phase == self.seen {
            return;
        }
        self.seen = phase;
        self.header.clear();
        match phase {
            IN_REQUEST => self.waiting = Waiting::Nothing,
            _ => self.wait_for(Waiting::Idle),
        }
    }

    /// Waits for `waiting`, its deadline set by the first read that has to wait for it.
    fn wait_for(&mut self, waiting: Waiting) {
        self.waiting = waiting;
        self.armed = false;
    }

    /// Sets the deadline of what is waited for, from now, when it is not set yet.
    fn arm(&mut self) {
        if self.armed {
            return;
        }
        self.armed = true;
        let timeout = match self.waiting {
            Waiting::Idle => self.registry.idle_timeout(),
            _ => self.registry.header_timeout(),
        };
        self.deadline = Instant::now() + timeout;
        if self.deadline < self.timer.deadline() {
            self.timer.as_mut().reset(self.deadline);
        }
    }

    /// Whether the deadline has passed, the timer re-armed for it when it fired early.
    fn poll_deadline(&mut self, cx: &mut Context<'_>) -> bool {
        while self.timer.as_mut().poll(cx).is_ready() {
            if Instant::now() >= self.deadline {
                return true;
            }
            self.timer.as_mut().reset(self.deadline);
        }
        false
    }

    /// Bytes arrived while no request was in flight: the start of a header.
    fn header_bytes(&mut self, bytes: &[u8]) {
        if self.protocol.is_none() {
            // HTTP/2's connection preface (RFC 9113 §3.4), sent with prior knowledge.
            self.protocol = Some(if bytes.starts_with(b"PRI * HTTP/2.0") {
                Protocol::Http2
            } else {
                Protocol::Http1
            });
        }
        if self.protocol == Some(Protocol::Http2) {
            self.waiting = Waiting::Nothing;
            return;
        }
        if self.waiting == Waiting::Idle {
            self.wait_for(Waiting::Header);
        }
        let room = KEPT.saturating_sub(self.header.len());
        self.header
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// The deadline passed: an idle connection reads as closed (pingora closes it quietly), a
    /// header that did not arrive in time as a timed-out read.
    fn expired(&mut self) -> io::Result<()> {
        let idle = self.waiting == Waiting::Idle;
        self.waiting = Waiting::Nothing;
        self.registry
            .timed_out(if idle { "idle" } else { "header" });
        if idle {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the request header did not arrive in time",
            ))
        }
    }

    /// pingora answers a request it cannot parse with an empty 400 and closes; crawlgate says
    /// why, counts it and logs it, in its place.
    fn refusal(&mut self, buf: &[u8]) -> Option<Vec<u8>> {
        let phase = self.phase.load(Ordering::Acquire);
        if phase == IN_REQUEST
            || self.protocol == Some(Protocol::Http2)
            || !buf.starts_with(b"HTTP/1.1 400 ")
        {
            return None;
        }
        let peer = self
            .inner
            .get_socket_digest()
            .and_then(|d| d.peer_addr().and_then(|a| a.as_inet().map(|a| a.ip())));
        let refusal = Refusal::of(&self.header);
        Some(self.registry.refused_request(refusal, peer))
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        this.follow_phase();
        if !this.peeked.is_empty() {
            let n = this.peeked.len().min(buf.remaining());
            let peeked: Vec<u8> = this.peeked.drain(..n).collect();
            buf.put_slice(&peeked);
            if this.waiting != Waiting::Nothing {
                this.header_bytes(&peeked);
            }
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if this.waiting != Waiting::Nothing && buf.filled().len() > before {
                    this.header_bytes(&buf.filled()[before..]);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending => {
                if this.waiting != Waiting::Nothing {
                    this.arm();
                    if this.poll_deadline(cx) {
                        return Poll::Ready(this.expired());
                    }
                }
                Poll::Pending
            }
            other => other,
        }
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.rewrite.is_none() {
            match this.refusal(buf) {
                Some(answer) => this.rewrite = Some((answer, 0)),
                None => {
                    let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
                    return this.written(cx, poll);
                }
            }
        }
        // Writing crawlgate's answer; whatever pingora writes after its 400 is dropped.
        if let Some((answer, written)) = &mut this.rewrite {
            while *written < answer.len() {
                match Pin::new(&mut this.inner).poll_write(cx, &answer[*written..]) {
                    Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                    Poll::Ready(Ok(n)) => *written += n,
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => return Poll::Pending,
                }
            }
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_flush(cx);
        self.written(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.rewrite.is_none() && self.phase.load(Ordering::Acquire) == IN_REQUEST {
            let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
            return self.written(cx, poll);
        }
        // Outside a request, writes go one buffer at a time, so that a refusal is seen whole.
        let first = bufs
            .iter()
            .find(|b| !b.is_empty())
            .map_or(&[][..], |b| &**b);
        self.poll_write(cx, first)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[async_trait]
impl Shutdown for Watched {
    async fn shutdown(&mut self) {
        self.inner.shutdown().await
    }
}

impl UniqueID for Watched {
    fn id(&self) -> UniqueIDType {
        self.inner.id()
    }
}

impl Ssl for Watched {
    fn get_ssl(&self) -> Option<&TlsRef> {
        self.inner.get_ssl()
    }

    fn get_ssl_digest(&self) -> Option<Arc<SslDigest>> {
        self.inner.get_ssl_digest()
    }

    fn selected_alpn_proto(&self) -> Option<ALPN> {
        self.inner.selected_alpn_proto()
    }
}

impl GetTimingDigest for Watched {
    fn get_timing_digest(&self) -> Vec<Option<TimingDigest>> {
        self.inner.get_timing_digest()
    }

    fn get_read_pending_time(&self) -> Duration {
        self.inner.get_read_pending_time()
    }

    fn get_write_pending_time(&self) -> Duration {
        self.inner.get_write_pending_time()
    }
}

impl GetProxyDigest for Watched {
    fn get_proxy_digest(&self) -> Option<Arc<ProxyDigest>> {
        self.inner.get_proxy_digest()
    }

    fn set_proxy_digest(&mut self, digest: ProxyDigest) {
        self.inner.set_proxy_digest(digest)
    }
}

impl GetSocketDigest for Watched {
    fn get_socket_digest(&self) -> Option<Arc<SocketDigest>> {
        self.inner.get_socket_digest()
    }

    fn set_socket_digest(&mut self, digest: SocketDigest) {
        self.inner.set_socket_digest(digest)
    }
}

/// HTTP/2's connection preface (RFC 9113 §3.4).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// pingora peeks at a plain connection's first bytes to tell HTTP/2 with prior knowledge from
/// HTTP/1.1, by reading until it has as many as the preface: untimed, and for ever on a request
/// shorter than the preface (`GET / HTTP/1.0` and an empty line is 18). Here the peek stops as
/// soon as the bytes cannot be the preface, and at the header deadline; the bytes read are
/// handed to pingora's reads afterwards.
#[async_trait]
impl Peek for Watched {
    async fn try_peek(&mut self, buf: &mut [u8]) -> io::Result<bool> {
        use tokio::io::AsyncReadExt;
        self.arm();
        let deadline = self.deadline;
        let mut chunk = [0u8; 64];
        while self.peeked.len() < buf.len() && H2_PREFACE.starts_with(&self.peeked) {
            let read = tokio::time::timeout_at(deadline, self.inner.read(&mut chunk)).await;
            match read {
                Ok(Ok(0)) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(Ok(n)) => self.peeked.extend_from_slice(&chunk[..n]),
                Ok(Err(e)) => return Err(e),
                Err(_) => {
                    self.registry.timed_out("header");
                    return Err(io::ErrorKind::TimedOut.into());
                }
            }
        }
        let n = self.peeked.len().min(buf.len());
        buf[..n].copy_from_slice(&self.peeked[..n]);
        buf[n..].fill(0);
        Ok(true)
    }
}

//! An origin that answers with bytes written by hand, to misbehave as real origins do: cut a
//! response short, send a chunk size that is not one, stream, upgrade to a WebSocket and fall
//! silent. It records each request's header exactly as it arrived.
//!
//! Paths: `/echo` (the request's header and body length, as the body), `/cut-length` (a
//! Content-Length of 100, 5 bytes, close), `/cut-chunked` (one chunk, close), `/bad-chunk` (one
//! chunk, then a size that is not hex), `/stream` (two chunks and the last one), `/slow` (echo
//! after 300 ms), `/ws` (101, then silence until the client closes). Any body is read before
//! the answer, by Content-Length or chunked; no `100 Continue` is ever sent.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A request as the origin read it.
#[derive(Debug, Clone)]
pub struct RawSeen {
    /// The request line and header lines, as sent (CRLFs included).
    pub head: String,
    /// How many body bytes came with it.
    pub body_len: usize,
}

impl RawSeen {
    /// The path of the request line.
    pub fn path(&self) -> &str {
        self.head.split(' ').nth(1).unwrap_or("")
    }

    /// The values of header `name` (any case), one per line, in order.
    pub fn values(&self, name: &str) -> Vec<String> {
        self.head
            .split("\r\n")
            .skip(1)
            .filter_map(|line| {
                let (n, v) = line.split_once(':')?;
                n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
            })
            .collect()
    }
}

/// The running origin.
pub struct RawOrigin {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<RawSeen>>>,
}

impl RawOrigin {
    pub fn start() -> RawOrigin {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let recorded = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let recorded = recorded.clone();
                std::thread::spawn(move || serve(stream, &recorded));
            }
        });
        RawOrigin { addr, seen }
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<RawSeen> {
        self.seen.lock().unwrap().clone()
    }

    /// The last request for `path`.
    pub fn last(&self, path: &str) -> Option<RawSeen> {
        self.seen().into_iter().rev().find(|s| s.path() == path)
    }
}

fn serve(stream: TcpStream, seen: &Mutex<Vec<RawSeen>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut head = String::new();
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            head.push_str(&line);
            if line == "\r\n" || line == "\n" {
                break;
            }
        }
        let request = RawSeen {
            head: head.clone(),
            body_len: 0,
        };
        let length = request
            .values("content-length")
            .first()
            .and_then(|v| v.split(',').next()?.trim().parse::<usize>().ok());
        let chunked = request
            .values("transfer-encoding")
            .iter()
            .any(|v| v.eq_ignore_ascii_case("chunked"));
        let body_len = if chunked {
            read_chunked(&mut reader)
        } else {
            let mut body = vec![0; length.unwrap_or(0)];
            if reader.read_exact(&mut body).is_err() {
                return;
            }
            body.len()
        };
        let request = RawSeen { head, body_len };
        let path = request.path().to_owned();
        seen.lock().unwrap().push(request.clone());
        let answer: &[u8] = match path.as_str() {
            "/cut-length" => b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\nhello",
            "/cut-chunked" => {
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"
            }
            "/bad-chunk" => {
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\nworld\r\n"
            }
            "/stream" => {
                let _ = writer.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
                );
                let _ = writer.flush();
                std::thread::sleep(Duration::from_millis(50));
                let _ = writer.write_all(b"6\r\n world\r\n0\r\n\r\n");
                continue;
            }
            "/ws" => {
                let _ = writer.write_all(
                    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
                );
                // Silent until the other side closes.
                let mut sink = [0u8; 1024];
                while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
                return;
            }
            _ => {
                if path == "/slow" {
                    std::thread::sleep(Duration::from_millis(300));
                }
                let body = format!("{}--body {} bytes--\n", request.head, request.body_len);
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                );
                if writer.write_all(head.as_bytes()).is_err()
                    || writer.write_all(body.as_bytes()).is_err()
                {
                    return;
                }
                continue;
            }
        };
        let _ = writer.write_all(answer);
        let _ = writer.flush();
        let _ = writer.shutdown(std::net::Shutdown::Both);
        return;
    }
}

/// Reads a chunked body; its length.
fn read_chunked(reader: &mut impl BufRead) -> usize {
    let mut total = 0;
    loop {
        let mut size = String::new();
        if reader.read_line(&mut size).unwrap_or(0) == 0 {
            return total;
        }
        let size =
            usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
        let mut chunk = vec![0; size + 2];
        if reader.read_exact(&mut chunk).is_err() {
            return total;
        }
        total += size;
        if size == 0 {
            return total;
        }
    }
}

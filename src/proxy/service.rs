//! The request path: pingora's `ProxyHttp`, kept thin. Each phase does one job: decide in
//! `request_filter` (and write the judgement's answer there when crawlgate answers), pick the
//! origin in `upstream_peer`, add the verdict headers in `upstream_request_filter`, announce the
//! content-use preference the judgement read in `response_filter`, count the judgement's labels
//! and log in `logging`. The decision itself is [`super::decide`] (gathered) and
//! [`crate::judge`] (judged), shared with `crawlgate explain`.

use super::access_log::Entry;
use super::client::Forwarding;
use super::connection::{InFlight, Watched};
use super::decide::{self, Decision, Mode, RequestFacts};
use super::forward_auth;
use super::forwarding::{self, ClientHeaders, Hop};
use super::host::{host_name, InvalidHost};
use super::ledger::{self, Charged};
use super::metrics::Metrics;
use super::site::Snapshot;
use super::state::Shared;
use super::verify::signature::check::{is_signed, RequestView};
use super::verify::signature::SignatureOutcome;
use super::verify::Verified;
use crate::judge::{Body, Response};
use crate::policy::VerdictLabel;
use crate::pricing::{self, Payment, PaymentError};
use async_trait::async_trait;
use bytes::Bytes;
use http::header::{
    HeaderValue, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, EXPECT, HOST, ORIGIN, REFERER,
    RETRY_AFTER, TRANSFER_ENCODING, USER_AGENT,
};
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::prelude::*;
use pingora::proxy::{FailToProxy, ProxyHttp, Session};
use std::sync::Arc;

/// aipref's response header (draft-ietf-aipref-attach §2).
const CONTENT_USAGE: &str = "content-usage";

/// The crawlgate proxy.
pub struct CrawlGate {
    shared: Arc<Shared>,
    /// Answers an edge's forward-auth subrequests instead of proxying ([`forward_auth`]).
    forward_auth: bool,
}

impl CrawlGate {
    /// A proxy over the shared state.
    pub fn new(shared: Arc<Shared>) -> CrawlGate {
        CrawlGate {
            shared,
            forward_auth: false,
        }
    }

    /// The forward-auth responder over the shared state: the same judgement, answered to the
    /// edge that asks.
    pub fn forward_auth(shared: Arc<Shared>) -> CrawlGate {
        CrawlGate {
            shared,
            forward_auth: true,
        }
    }

    /// Refuses a request crawlgate cannot judge (a bad Host, several User-Agents, a
    /// forward-auth subrequest from the untrusted): answered, logged at INFO and counted in
    /// `crawlgate_bad_requests_total{reason}`.
    async fn refuse(
        &self,
        session: &mut Session,
        peer: Option<std::net::IpAddr>,
        status: u16,
        reason: &'static str,
        body: Bytes,
    ) -> Result<()> {
        self.shared
            .metrics
            .bad_requests
            .with_label_values(&[reason])
            .inc();
        log::info!(
            "refused a request from {}: {} ({reason})",
            peer.map_or_else(|| "?".to_owned(), |p| p.to_string()),
            String::from_utf8_lossy(&body).trim_end()
        );
        respond::<&str>(session, status, body, None, &[]).await
    }

    /// Answers a forward-auth subrequest: `200` (with the tag headers) to let the original
    /// request through, or the refusal crawlgate would have answered it with.
    async fn answer_edge(&self, session: &mut Session, ctx: &mut Ctx) -> Result<bool> {
        let peer = session
            .client_addr()
            .and_then(|a| a.as_inet())
            .map(|a| a.ip());
        let trusted = peer.is_some_and(|peer| self.shared.global.load().trusted.contains(peer));
        if !trusted {
            let body =
                Bytes::from_static(b"crawlgate forward-auth: only trusted_proxies may ask\n");
            self.refuse(session, peer, 403, "forward_auth_untrusted", body)
                .await?;
            return Ok(true);
        }
        let original = match forward_auth::original(&session.req_header().headers) {
            Ok(original) => original,
            Err(e) => {
                let body = Bytes::from(format!("{e}\n"));
                self.refuse(session, peer, 400, "forward_auth_no_target", body)
                    .await?;
                return Ok(true);
            }
        };
        let request = session.req_header();
        let user_agent = request
            .headers
            .get(USER_AGENT)
            .map_or(&b""[..], |v| v.as_bytes());
        let facts = RequestFacts {
            host: original.host,
            path: original.target,
            user_agent,
            peer,
            forwarding: Forwarding::Headers(&request.headers),
            signature: is_signed(&request.headers).then(|| RequestView {
                headers: &request.headers,
                method: original.method,
                authority: original
                    .host
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .unwrap_or(""),
                path_and_query: original.target,
                scheme: original.scheme,
            }),
            method: original.method,
            // crawlgate never sees the origin's answer here, so it can charge for none.
            payment_headers: None,
        };
        let nginx = original.nginx;
        ctx.original = Some((original.method.to_owned(), original.target.to_owned()));
        let Some(mut decision) = decide::decide(&self.shared, &facts, Mode::LIVE).await else {
            // No site for the host: nothing to judge it by, so the edge lets it through (a
            // 421 would reach every visitor of that host, as a 500 from nginx).
            self.shared.metrics.unknown_host.inc();
            respond::<&str>(session, 200, Bytes::new(), None, &[]).await?;
            return Ok(true);
        };
        // The edge serves robots.txt itself: its answers stay the edge's.
        if decision.robots_txt {
            decision.judgement.response = None;
        }
        let answer = forward_auth::answer(&decision, nginx);
        let body = match decision.judgement.response.take() {
            Some(response) if answer.refused => body_of(response.body, &decision.snapshot),
            _ => Bytes::new(),
        };
        ctx.decision = Some(Box::new(decision));
        respond(session, answer.status, body, None, &answer.headers).await?;
        Ok(true)
    }
}

/// Per-request context: the decision, for the later phases. Boxed: pingora moves the context
/// with its request future several times, and a pointer is cheaper to move than a decision.
#[derive(Debug, Default)]
pub struct Ctx {
    decision: Option<Box<Decision>>,
    /// What an agreed payment came to once the origin answered (pay per crawl).
    settled: Option<Settled>,
    /// crawlgate answered the client's `Expect: 100-continue` itself: the origin is not asked.
    continued: bool,
    /// The request is in flight (a stop waits for it) until the context is dropped.
    _in_flight: Option<InFlight>,
    /// The Host that chose the site, as sent (the Host header, or the target's authority).
    host: Option<HeaderValue>,
    /// A forward-auth subrequest's original method and target (the access log's).
    original: Option<(String, String)>,
}

// Request data echoed in headers and bodies is the judgement's concern too (its messages).
pub use crate::judge::sanitize;

/// Writes a complete text/plain response.
async fn respond<N: pingora::http::IntoCaseHeaderName + Clone>(
    session: &mut Session,
    status: u16,
    body: Bytes,
    retry_after: Option<u64>,
    more: &[(N, String)],
) -> Result<()> {
    let mut header = ResponseHeader::build(status, Some(4 + more.len()))?;
    header.insert_header(CONTENT_TYPE, Response::CONTENT_TYPE)?;
    header.insert_header(CONTENT_LENGTH, body.len().to_string())?;
    header.insert_header(CACHE_CONTROL, Response::CACHE_CONTROL)?;
    if let Some(seconds) = retry_after {
        header.insert_header(RETRY_AFTER, seconds.to_string())?;
    }
    for (name, value) in more {
        header.insert_header(name.clone(), value.as_str())?;
    }
    session
        .write_response_header(Box::new(header), false)
        .await?;
    session.write_response_body(Some(body), true).await?;
    Ok(())
}

/// The bytes of a judgement's answer: robots.txt's are the snapshot's, as loaded, and a
/// message's its own (neither copied).
fn body_of(body: Body, snapshot: &Snapshot) -> Bytes {
    match body {
        Body::RobotsTxt => snapshot.bytes.clone(),
        Body::Static(text) => Bytes::from_static(text.as_bytes()),
        Body::Text(text) => Bytes::from(text),
    }
}

/// A request whose Host cannot be trusted (RFC 9112 §3.2): answered 400, never routed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HostProblem {
    /// Two or more Host headers: proxies could disagree on the site (request smuggling).
    Duplicate,
    /// HTTP/1.1 without a Host header (HTTP/1.0 may omit it).
    Missing,
    /// A Host that is not `host[:port]`.
    Invalid(InvalidHost),
}

impl HostProblem {
    fn reason(self) -> &'static str {
        match self {
            HostProblem::Duplicate => "duplicate_host",
            HostProblem::Missing => "missing_host",
            HostProblem::Invalid(_) => "invalid_host",
        }
    }

    fn message(self) -> &'static str {
        match self {
            HostProblem::Duplicate => "crawlgate: more than one Host header\n",
            HostProblem::Missing => "crawlgate: HTTP/1.1 requests need a Host header\n",
            HostProblem::Invalid(why) => why.message(),
        }
    }
}

/// The host a request is for: the authority of an absolute-form target, else the Host header
/// (looked up once); `None` for an HTTP/1.0 request with neither.
fn request_host(request: &RequestHeader) -> Result<Option<&[u8]>, HostProblem> {
    let mut hosts = request.headers.get_all(HOST).iter();
    let header = hosts.next();
    if hosts.next().is_some() {
        return Err(HostProblem::Duplicate);
    }
    // RFC 9112 §3.2: an HTTP/1.1 request without Host is a 400, whatever its target says.
    if header.is_none() && request.version == http::Version::HTTP_11 {
        return Err(HostProblem::Missing);
    }
    let host = match (target_authority(request), header) {
        (Some(authority), _) => authority,
        (None, Some(header)) => header.as_bytes(),
        (None, None) => return Ok(None),
    };
    host_name(host).map_err(HostProblem::Invalid)?;
    Ok(Some(host))
}

/// The authority of a request's target: HTTP/2's `:authority`, or that of an HTTP/1.1
/// absolute-form target (`GET http://a.test/x`), which pingora keeps only in the raw target.
fn target_authority(request: &RequestHeader) -> Option<&[u8]> {
    if let Some(authority) = request.uri.authority() {
        return Some(authority.as_str().as_bytes());
    }
    let raw = request.raw_path();
    if raw.first() == Some(&b'/') {
        return None;
    }
    let scheme = raw.iter().position(|&b| b == b':')?;
    if !raw[..scheme].eq_ignore_ascii_case(b"http") && !raw[..scheme].eq_ignore_ascii_case(b"https")
    {
        return None;
    }
    let rest = raw[scheme..].strip_prefix(b"://")?;
    let end = rest
        .iter()
        .position(|&b| matches!(b, b'/' | b'?' | b'#'))
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

fn upstream_failure(code: u16) -> &'static str {
    match code {
        504 => "the origin did not answer in time",
        502 => "the origin could not be reached or answered with something that is not HTTP",
        400 => "the request could not be read",
        _ => "the request failed",
    }
}

/// The scheme a signer saw, for `@target-uri` and `@scheme`: `https` on a TLS listener, else
/// what `X-Forwarded-Proto` says, else `https`, since crawlers sign for the https URLs they
/// fetch and a plain-HTTP hop is usually behind a TLS terminator. A wrong scheme can only make
/// a signature fail, never pass: the signer signed the scheme it used.
fn signed_scheme(
    digest: Option<&pingora::protocols::Digest>,
    headers: &http::HeaderMap,
) -> &'static str {
    if digest.is_some_and(|d| d.ssl_digest.is_some()) {
        return "https";
    }
    match headers.get("x-forwarded-proto").map(|v| v.as_bytes()) {
        Some(b"http") => "http",
        _ => "https",
    }
}

/// What an operator takes and what its products send back: a crawl of one of the operators
/// the catalog lists referrer hosts for (unless its claim was proven false), or a person's
/// request whose `Referer` (else `Origin`) is one of those hosts (a site's own host never is).
fn count_crawl_or_referral(decision: &Decision, request: &RequestHeader, metrics: &Metrics) {
    let site = decision.site.settings.name.as_str();
    if decision.is_crawler() {
        let operator = decision
            .crawler()
            .and_then(|crawler| crawler.row.referral_operator.as_deref());
        if let Some(operator) = operator {
            if decision.verification.result != Verified::Spoofed {
                metrics.crawls.with_label_values(&[site, operator]).inc();
            }
        }
        return;
    }
    let headers = &request.headers;
    let Some(referer) = headers.get(REFERER).or_else(|| headers.get(ORIGIN)) else {
        return;
    };
    let own_host = headers.get(HOST).map(HeaderValue::as_bytes);
    let referrers = decision.snapshot.crawlers.referrers();
    if let Some(operator) = referrers.operator_of(referer.as_bytes(), own_host) {
        metrics.referrals.with_label_values(&[site, operator]).inc();
    }
}

/// Logs a request that failed: an origin's failure at WARN (the operator can act on it), a
/// client's (it hung up, or stopped sending) at DEBUG, crawlgate's own at ERROR.
fn log_failure(session: &Session, error: &Error, decision: Option<&Decision>) {
    let request = session.req_header();
    let site = decision.map_or("-", |d| d.site.settings.name.as_str());
    let target = sanitize(request.uri.path_and_query().map_or("/", |p| p.as_str()));
    let method = request.method.as_str();
    match error.esource() {
        ErrorSource::Upstream => {
            log::warn!("site {site}: {method} {target}: the origin failed: {error}")
        }
        ErrorSource::Downstream => {
            log::debug!("site {site}: {method} {target}: the client failed: {error}")
        }
        _ => log::error!("site {site}: {method} {target}: {error}"),
    }
}

/// Whether every User-Agent value of a request is a person's, by the site its host chooses: such
/// a request is forwarded as sent (a person is never refused); any other with several is
/// refused, since the origin and crawlgate could read different ones.
fn every_user_agent_is_a_person(
    shared: &Shared,
    host: Option<&[u8]>,
    request: &RequestHeader,
) -> bool {
    let sites = shared.sites.load();
    let Some(site) = sites.route(host) else {
        return true;
    };
    let snapshot = site.snapshot.load();
    request
        .headers
        .get_all(USER_AGENT)
        .iter()
        .all(|value| decide::is_person(&snapshot, value.as_bytes()))
}

/// What an agreed payment came to once the origin answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settled {
    /// Charged now, at this price.
    Charged(pricing::Price),
    /// The same signed request was charged before: not again.
    Before,
    /// The origin answered no success (or nothing): nothing charged.
    NotCharged,
    /// The charge could not be recorded: answered 503, `InternalError`.
    Unrecorded,
}

impl Settled {
    /// The `result` label of `crawlgate_payments_total` (and the access log's `payment`).
    fn label(self) -> &'static str {
        match self {
            Settled::Charged(_) => "charged",
            Settled::Before => "charged_before",
            Settled::NotCharged => "not_charged",
            Settled::Unrecorded => PaymentError::InternalError.label(),
        }
    }
}

impl CrawlGate {
    /// Records the charge of a request whose crawler agreed to the price, now that the origin
    /// answered (pay per crawl): a success is charged once and says so in `crawler-charged`;
    /// anything else is not charged. What it came to is kept for `logging`. A charge that
    /// cannot be recorded is an error: the response is replaced by a 503 (`fail_to_proxy`), so
    /// that nobody is told of a charge the ledger does not hold.
    async fn charge(
        &self,
        session: &Session,
        response: &mut ResponseHeader,
        ctx: &mut Ctx,
    ) -> Result<()> {
        let Some(decision) = &ctx.decision else {
            return Ok(());
        };
        let (Some(charge), Some(Payment::Agreed(price))) =
            (&decision.charge, decision.judgement.payment)
        else {
            return Ok(());
        };
        // Only crawlgate says what was charged.
        response.remove_header(pricing::CRAWLER_CHARGED);
        if !response.status.is_success() {
            ctx.settled = Some(Settled::NotCharged);
            return Ok(());
        }
        let Some(ledger) = &self.shared.ledger else {
            ctx.settled = Some(Settled::Unrecorded);
            return Error::e_explain(HTTPStatus(503), "pay per crawl: no ledger");
        };
        let request = session.req_header();
        let target = request.uri.path_and_query().map_or("/", |p| p.as_str());
        let path: String = target.chars().take(2048).collect();
        let host = ctx
            .host
            .as_ref()
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default();
        let crawler = decision.crawler();
        let line = ledger::to_line(&ledger::ChargeLine {
            kind: "charge",
            time: ledger::line_time(),
            id: ledger::id_hex(&charge.id),
            site: &decision.site.settings.name,
            host,
            method: request.method.as_str(),
            path: &path,
            bot: decision.bot(),
            operator: crawler.as_ref().and_then(|c| c.operator.as_deref()),
            directory: &charge.directory,
            keyid: &charge.keyid,
            client: decision.client.to_string(),
            price: price.to_string(),
            currency: price.currency(),
            amount: price.amount_text(),
            status: response.status.as_u16(),
            until: charge.until,
        });
        match ledger
            .charge(charge, line, self.shared.store.as_ref())
            .await
        {
            Ok(Charged::Now) => {
                response.insert_header(pricing::CRAWLER_CHARGED, price.to_string())?;
                ctx.settled = Some(Settled::Charged(price));
                Ok(())
            }
            Ok(Charged::Before) => {
                ctx.settled = Some(Settled::Before);
                Ok(())
            }
            Err(e) => {
                log::error!(
                    "site {}: pay per crawl: not charged, answered 503: {e}",
                    decision.site.settings.name
                );
                ctx.settled = Some(Settled::Unrecorded);
                Error::e_explain(
                    HTTPStatus(503),
                    "pay per crawl: the charge cannot be recorded",
                )
            }
        }
    }

    /// Takes back a charge whose response the origin broke off (the crawler did not get what
    /// it paid for): a `void` line in the ledger.
    async fn void_charge(&self, decision: &Decision, error: &Error) {
        let (Some(ledger), Some(charge)) = (&self.shared.ledger, &decision.charge) else {
            return;
        };
        let reason = format!(
            "the origin broke the response off: {}",
            error.etype().as_str()
        );
        let line = ledger::to_line(&ledger::VoidLine {
            kind: "void",
            time: ledger::line_time(),
            id: ledger::id_hex(&charge.id),
            site: &decision.site.settings.name,
            reason: &reason,
        });
        if let Err(e) = ledger.void(line, self.shared.store.as_ref()).await {
            log::error!("pay per crawl: a broken-off charge cannot be taken back: {e}");
        }
    }
}

/// Whether the client waits for `100 Continue` before sending its body (RFC 9110 §10.1.1).
/// Clients send it with a body, which GET and HEAD requests have none of: they are not looked
/// at (every request asks).
fn expects_continue(request: &RequestHeader) -> bool {
    !matches!(request.method, http::Method::GET | http::Method::HEAD)
        && request
            .headers
            .get(EXPECT)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"))
}

#[async_trait]
impl ProxyHttp for CrawlGate {
    type CTX = Ctx;

    fn new_ctx(&self) -> Ctx {
        Ctx::default()
    }

    async fn early_request_filter(&self, session: &mut Session, ctx: &mut Ctx) -> Result<()> {
        let connections = &self.shared.connections;
        ctx._in_flight = Some(connections.request_started());
        let downstream = session.as_downstream_mut();
        let watched = downstream.stream().and_then(Watched::of);
        if let Some(watched) = watched {
            watched.request_started();
        }
        let guarded = watched.is_some();
        // Requests a client sends before the answer to the one before (RFC 9112 §9.3.2) are
        // answered in order, instead of failing the request in flight.
        downstream.set_pipelining_enabled(true);
        downstream.set_read_timeout(Some(connections.body_timeout()));
        // The send timeout is the connection guard's: armed only while a write waits.
        // HTTP/1.0 keeps a connection only when it asks to (RFC 9112 §9.3).
        let request = downstream.req_header();
        let keep = request.version >= http::Version::HTTP_11
            || request
                .headers
                .get(http::header::CONNECTION)
                .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"keep-alive"));
        let keep = keep && !connections.draining();
        // A guarded connection's wait for its next request is the guard's (`Watched`); pingora's
        // keep-alive timer would be a second one, registered for every request (0: no timer).
        let idle = if guarded {
            0
        } else {
            connections.idle_timeout().as_secs().max(1)
        };
        downstream.set_keepalive(keep.then_some(idle));
        Ok(())
    }

    async fn request_filter(&self, session: &mut Session, ctx: &mut Ctx) -> Result<bool> {
        if self.forward_auth {
            return self.answer_edge(session, ctx).await;
        }
        let peer = session
            .client_addr()
            .and_then(|a| a.as_inet())
            .map(|a| a.ip());
        let request = session.req_header();
        let host = request_host(request);
        let mut user_agents = request.headers.get_all(USER_AGENT).iter();
        let user_agent = user_agents.next().map_or(&b""[..], |v| v.as_bytes());
        let several = user_agents.next().is_some();
        let refusal = match host {
            Err(problem) => Some((problem.reason(), Bytes::from_static(problem.message().as_bytes()))),
            Ok(host) if several && !every_user_agent_is_a_person(&self.shared, host, request) => Some((
                "several_user_agents",
                Bytes::from_static(b"crawlgate: a request names one User-Agent; this one names several, not all of them people's\n"),
            )),
            Ok(_) => None,
        };
        if let Some((reason, body)) = refusal {
            self.refuse(session, peer, 400, reason, body).await?;
            return Ok(true);
        }
        let request = session.req_header();
        let host = host.ok().flatten();
        // Kept for the origin's Host and X-Forwarded-Host: the header's own value when it chose
        // the site (no copy), else the authority's.
        ctx.host = host.and_then(|host| match request.headers.get(HOST) {
            Some(header) if header.as_bytes() == host => Some(header.clone()),
            _ => HeaderValue::from_bytes(host).ok(),
        });
        let facts = RequestFacts {
            host,
            path: request.uri.path_and_query().map_or("/", |p| p.as_str()),
            user_agent,
            peer,
            forwarding: Forwarding::Headers(&request.headers),
            // Unsigned requests (nearly all) pay this one lookup and nothing else.
            signature: is_signed(&request.headers).then(|| RequestView {
                headers: &request.headers,
                method: request.method.as_str(),
                authority: host.and_then(|h| std::str::from_utf8(h).ok()).unwrap_or(""),
                path_and_query: request.uri.path_and_query().map_or("/", |p| p.as_str()),
                scheme: signed_scheme(session.digest(), &request.headers),
            }),
            method: request.method.as_str(),
            payment_headers: Some(&request.headers),
        };
        let Some(decision) = decide::decide(&self.shared, &facts, Mode::LIVE).await else {
            self.shared.metrics.unknown_host.inc();
            let host = host.map(String::from_utf8_lossy).unwrap_or_default();
            let body = format!(
                "crawlgate: no site is configured for host `{}`\n",
                sanitize(&host)
            );
            respond::<&str>(session, 421, Bytes::from(body), None, &[]).await?;
            return Ok(true);
        };
        // The judgement says whether crawlgate answers, and with what.
        // The later phases read the rest of the judgement; its answer is written here, once.
        let mut decision = decision;
        let answer = decision.judgement.response.take().map(|r| {
            let body = body_of(r.body, &decision.snapshot);
            (r.status, body, r.retry_after, r.headers)
        });
        ctx.decision = Some(Box::new(decision));
        if let Some((status, body, retry_after, headers)) = answer {
            respond(session, status, body, retry_after, &headers).await?;
            return Ok(true);
        }
        // A client waiting for `100 Continue` before it sends its body gets it here, as nginx
        // gives it: an origin that never sends one would leave the client waiting.
        if expects_continue(session.req_header()) {
            session
                .as_downstream_mut()
                .write_continue_response()
                .await?;
            ctx.continued = true;
        }
        Ok(false)
    }

    /// Upstream failures get the status that says what happened: 504 when the origin did not
    /// answer in time, 502 when it answered nonsense, reset or refused. Once a response's header
    /// has gone to the client, nothing is written: the transfer is aborted (HTTP/1.1: closed
    /// short of its length or last chunk; HTTP/2: RST_STREAM), so that no client keeps a
    /// cut-off page as complete.
    async fn fail_to_proxy(&self, session: &mut Session, e: &Error, ctx: &mut Ctx) -> FailToProxy {
        let code = match (e.esource(), e.etype()) {
            (_, HTTPStatus(code)) => *code,
            (ErrorSource::Upstream, ConnectTimedout | ReadTimedout | WriteTimedout) => 504,
            (ErrorSource::Upstream, _) => 502,
            (ErrorSource::Downstream, ReadError | WriteError | ConnectionClosed) => 0,
            (ErrorSource::Downstream, _) => 400,
            _ => 500,
        };
        let started = session
            .response_written()
            .is_some_and(|r| !r.status.is_informational() || r.status == 101);
        if started {
            if code != 0 {
                let site = ctx
                    .decision
                    .as_ref()
                    .map_or("", |d| d.site.settings.name.as_str());
                let cause = match e.etype() {
                    ConnectTimedout | ReadTimedout | WriteTimedout => "timeout",
                    ConnectionClosed | ReadError | WriteError => "closed",
                    _ => "invalid",
                };
                self.shared
                    .metrics
                    .aborted_responses
                    .with_label_values(&[site, cause])
                    .inc();
            }
            session.as_downstream_mut().set_keepalive(None);
            session.as_downstream_mut().shutdown().await;
            return FailToProxy {
                error_code: code,
                can_reuse_downstream: false,
            };
        }
        if code == 400 {
            self.shared
                .metrics
                .bad_requests
                .with_label_values(&["unreadable_body"])
                .inc();
        }
        // A charge the ledger could not record: the judgement's own answer to such a payment.
        let unrecorded = match (&ctx.settled, &ctx.decision) {
            (Some(Settled::Unrecorded), Some(decision)) => decision
                .judgement
                .payment
                .map(|paid| (paid.price(), &decision.snapshot)),
            _ => None,
        };
        if let Some((price, snapshot)) = unrecorded {
            let error = PaymentError::InternalError;
            let answer = crate::judge::payment_answer(Payment::Refused(price, error));
            let body = body_of(answer.body, snapshot);
            let _ = respond(
                session,
                answer.status,
                body,
                answer.retry_after,
                &answer.headers,
            )
            .await;
            return FailToProxy {
                error_code: answer.status,
                can_reuse_downstream: false,
            };
        }
        if code > 0 {
            let body = Bytes::from(format!("crawlgate: {}\n", upstream_failure(code)));
            let _ = respond::<&str>(session, code, body, None, &[]).await;
        }
        FailToProxy {
            error_code: code,
            can_reuse_downstream: false,
        }
    }

    async fn upstream_peer(&self, _session: &mut Session, ctx: &mut Ctx) -> Result<Box<HttpPeer>> {
        match &ctx.decision {
            Some(decision) => Ok(Box::new(decision.site.peer.clone())),
            None => Error::e_explain(InternalError, "no site was chosen for the request"),
        }
    }

    async fn upstream_request_filter(
        &self,
        session: &mut Session,
        upstream: &mut RequestHeader,
        ctx: &mut Ctx,
    ) -> Result<()> {
        let Some(decision) = &ctx.decision else {
            return Ok(());
        };
        let site = &decision.site.settings;
        let global = self.shared.global.load();
        let trusted = global.trusted.contains(decision.peer);
        // Nobody forges a verdict or an address: what the client may not send goes first.
        ClientHeaders {
            tag_prefix: &site.tag_prefix,
            trusted,
            trusted_header: global.trusted.header().name(),
        }
        .strip(upstream);
        // The Host the origin reads is the one that chose the site, and the target is in origin
        // form, as nginx sends it (an origin need not read absolute-form).
        if target_authority(upstream).is_some() {
            if let Some(host) = &ctx.host {
                if upstream.headers.get(HOST) != Some(host) {
                    upstream.insert_header(HOST, host.clone())?;
                }
            }
            let target = upstream.uri.path_and_query().map_or("/", |p| p.as_str());
            if let Ok(origin_form) = http::Uri::try_from(target) {
                upstream.set_uri(origin_form);
            }
        }
        let proto = if session.digest().is_some_and(|d| d.ssl_digest.is_some()) {
            "https"
        } else {
            "http"
        };
        forwarding::add(
            upstream,
            &site.forwarding,
            &Hop {
                peer: decision.peer,
                trusted,
                client: decision.client,
                proto,
                host: ctx.host.as_ref(),
            },
        )?;
        forwarding::single_content_length(upstream)?;
        if session.as_downstream().is_http2() {
            forwarding::join_cookie_crumbs(upstream)?;
        }
        if ctx.continued {
            upstream.remove_header(&EXPECT);
        }
        for (name, value) in decision.tag_headers() {
            upstream.insert_header(name, value)?;
        }
        Ok(())
    }

    /// Keeps HTTP/1.0 clients' bodies as HTTP/1.0 frames them (by closing the connection: they
    /// read no chunked encoding), and tells whoever fetches the path what robots.txt's
    /// preference for it is, in aipref's `Content-Usage` header, combined with what the origin
    /// says (the stricter wins).
    async fn response_filter(
        &self,
        session: &mut Session,
        response: &mut ResponseHeader,
        ctx: &mut Ctx,
    ) -> Result<()> {
        if session.req_header().version < http::Version::HTTP_11
            && !session.as_downstream().is_http2()
            && response.headers.contains_key(TRANSFER_ENCODING)
        {
            response.remove_header(&TRANSFER_ENCODING);
            session.as_downstream_mut().set_keepalive(None);
        }
        self.charge(session, response, ctx).await?;
        let Some(decision) = &ctx.decision else {
            return Ok(());
        };
        // The preference was read with the verdict (only when the site announces it).
        let preference = decision.judgement.announce;
        if preference.is_unknown() {
            return Ok(());
        }
        let origin: Vec<&str> = response
            .headers
            .get_all(CONTENT_USAGE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .collect();
        let origin = (!origin.is_empty()).then(|| origin.join(", "));
        if let Some(value) = preference.response_header(origin.as_deref()) {
            response.insert_header(CONTENT_USAGE, value)?;
        }
        Ok(())
    }

    /// pingora's own error line is replaced by [`log_failure`]'s, at the level of its cause.
    fn suppress_error_log(&self, _session: &Session, _ctx: &Ctx, _error: &Error) -> bool {
        true
    }

    async fn logging(&self, session: &mut Session, error: Option<&Error>, ctx: &mut Ctx) {
        if let Some(watched) = session.as_downstream().stream().and_then(Watched::of) {
            watched.request_finished();
        }
        if let Some(error) = error {
            log_failure(session, error, ctx.decision.as_deref());
            if error.esource() == &ErrorSource::Downstream && error.etype() == &ReadTimedout {
                self.shared.connections.timed_out("body");
            }
        }
        let Some(decision) = &ctx.decision else {
            return;
        };
        let site = decision.site.settings.name.as_str();
        let metrics = &self.shared.metrics;
        let bot = decision.bot();
        let labels = &decision.judgement.labels;
        let category = labels.category;
        let verified = decision.verification.result;
        let values = [
            site,
            bot,
            category,
            labels.verdict,
            labels.outcome,
            verified.as_str(),
        ];
        // A person's forwarded request always has the same labels (bot and category `person`).
        if labels.person {
            decision
                .site
                .person_requests
                .get_or_init(|| metrics.requests.with_label_values(&values))
                .inc();
        } else {
            metrics.requests.with_label_values(&values).inc();
        }
        // Which method verified (or refuted) a crawler: people are never checked.
        if decision.is_crawler() && verified != Verified::None {
            metrics
                .verifications
                .with_label_values(&[
                    site,
                    bot,
                    verified.as_str(),
                    decision.verification.method.as_str(),
                ])
                .inc();
        }
        // Unsigned requests are the rest of crawlgate_requests_total: not counted twice. A
        // person's signature is counted too (an invalid one leaves it a person, never refused).
        if decision.signature != SignatureOutcome::Unsigned {
            metrics
                .signatures
                .with_label_values(&[site, bot, decision.signature.as_str()])
                .inc();
        }
        if labels.robots_fetch {
            metrics.robots_fetches.with_label_values(&[site, bot]).inc();
        }
        if labels.without_robots_fetch {
            metrics
                .requests_without_robots_fetch
                .with_label_values(&[site, bot])
                .inc();
        }
        if let Some(usage) = labels.content_usage {
            metrics
                .content_usage
                .with_label_values(&[site, bot, usage, labels.outcome])
                .inc();
        }
        if labels.over_budget {
            metrics
                .over_budget
                .with_label_values(&[site, bot, labels.outcome])
                .inc();
        }
        if let Some(mode) = labels.crawl_delay_exceeded {
            metrics
                .crawl_delay_exceeded
                .with_label_values(&[site, bot, mode])
                .inc();
        }
        count_crawl_or_referral(decision, session.req_header(), metrics);
        // Pay per crawl: what the judgement said, or what an agreed payment came to (agreed
        // and never settled: the origin never answered, nothing was charged).
        let payment = match (ctx.settled, decision.judgement.payment) {
            (Some(settled), _) => Some(settled.label()),
            (None, Some(Payment::Agreed(_))) => Some(Settled::NotCharged.label()),
            (None, payment) => payment.map(Payment::label),
        };
        if let Some(result) = payment {
            metrics
                .payments
                .with_label_values(&[site, bot, result])
                .inc();
            if let Some(Settled::Charged(price)) = ctx.settled {
                metrics
                    .charged
                    .with_label_values(&[site, bot, price.currency()])
                    .inc_by(price.amount());
                if let Some(error) = error.filter(|e| e.esource() == &ErrorSource::Upstream) {
                    self.void_charge(decision, error).await;
                }
            }
        }
        if let Some(error) = error {
            let kind = match error.etype() {
                ConnectTimedout | ConnectRefused | ConnectError | ConnectNoRoute => "connect",
                ReadTimedout | WriteTimedout => "timeout",
                _ => "other",
            };
            if error.esource() == &ErrorSource::Upstream {
                metrics
                    .upstream_errors
                    .with_label_values(&[site, kind])
                    .inc();
            }
        }
        let Some(log) = &self.shared.access_log else {
            return;
        };
        if !decision.is_crawler() {
            return;
        }
        let request = session.req_header();
        let (method, target) = match &ctx.original {
            Some((method, target)) => (method.as_str(), target.as_str()),
            None => (
                request.method.as_str(),
                request.uri.path_and_query().map_or("/", |p| p.as_str()),
            ),
        };
        let path: String = target.chars().take(2048).collect();
        let entry = Entry {
            time: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
            site,
            client: decision.client.to_string(),
            method,
            path: &path,
            bot,
            category,
            verified: decision.verification.result.as_str(),
            verified_by: decision.verification.method.as_str(),
            verdict: labels.verdict,
            rule_line: decision.deciding_line(),
            action: labels.outcome,
            status: session.response_written().map_or(0, |r| r.status.as_u16()),
            robots_unread: labels.without_robots_fetch,
            crawl_delay_exceeded: labels.crawl_delay_exceeded.is_some(),
            grace: decision.judgement.verdict == VerdictLabel::Grace,
            payment,
        };
        if !log.record(&entry) {
            metrics.access_log_dropped.inc();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_removes_line_breaks_and_bounds_length() {
        assert_eq!(sanitize("a\r\nb"), "a??b");
        let long = "x".repeat(2000);
        assert_eq!(sanitize(&long).chars().count(), crate::judge::MAX_ECHO + 1);
    }

    #[test]
    fn robots_txt_is_answered_with_what_is_enforced() {
        use crate::catalog::Catalog;
        use crate::judge::Served;
        use crate::proxy::config::Settings;
        use crate::proxy::site::CatalogIndex;
        use crate::proxy::site::SourceState;
        let yaml = "listen: [\"127.0.0.1:1\"]\nsites:\n  - name: s\n    upstream: \"127.0.0.1:9\"\n    robots: {origin: true, refresh: 30s}\n";
        let site = Settings::from_yaml(yaml, "t", std::path::Path::new("/"))
            .unwrap()
            .sites
            .remove(0);
        let catalog = CatalogIndex::new(Catalog::embedded().unwrap()).unwrap();
        let refresh = site.robots.refresh;
        let served = |bytes: &'static [u8], state| {
            let snapshot =
                Snapshot::build(&site, &catalog, Bytes::from_static(bytes), state).unwrap();
            decide::served(&snapshot, refresh)
        };
        assert_eq!(
            served(b"User-agent: *\nDisallow: /x\n", SourceState::Loaded),
            Served::File
        );
        assert_eq!(served(b"", SourceState::Unavailable), Served::NoFile);
        for state in [SourceState::Unreachable, SourceState::Pending] {
            assert_eq!(served(b"", state), Served::Unreachable { retry_after: 30 });
        }
        // The file in force is what is written, as loaded.
        let snapshot = Snapshot::build(
            &site,
            &catalog,
            Bytes::from_static(b"User-agent: *\nDisallow: /x\n"),
            SourceState::Loaded,
        )
        .unwrap();
        assert_eq!(body_of(Body::RobotsTxt, &snapshot), snapshot.bytes);
    }

    #[test]
    fn the_host_comes_from_one_place_or_the_request_is_refused() {
        let mut request = RequestHeader::build("GET", b"/", None).unwrap();
        assert_eq!(request_host(&request), Err(HostProblem::Missing));
        request.set_version(http::Version::HTTP_10);
        assert_eq!(request_host(&request), Ok(None));
        request.set_version(http::Version::HTTP_11);
        request.append_header("Host", "a.test").unwrap();
        assert_eq!(request_host(&request), Ok(Some(&b"a.test"[..])));
        request.append_header("Host", "b.test").unwrap();
        assert_eq!(request_host(&request), Err(HostProblem::Duplicate));
        let mut absolute = RequestHeader::build("GET", b"http://a.test/x", None).unwrap();
        assert_eq!(target_authority(&absolute), Some(&b"a.test"[..]));
        assert_eq!(request_host(&absolute), Err(HostProblem::Missing));
        absolute.set_version(http::Version::HTTP_10);
        assert_eq!(request_host(&absolute), Ok(Some(&b"a.test"[..])));
        // The target's authority wins over the Host header (RFC 9112 section 3.2.2).
        absolute.append_header("Host", "b.test").unwrap();
        assert_eq!(request_host(&absolute), Ok(Some(&b"a.test"[..])));
        // A Host that is not host[:port] is refused before any site is chosen.
        for bad in ["a.test:abc", "a.test:80:80", "a.test:+80", "a.test:-1"] {
            let mut request = RequestHeader::build("GET", b"/", None).unwrap();
            request.append_header("Host", bad).unwrap();
            assert!(
                matches!(request_host(&request), Err(HostProblem::Invalid(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn robots_txt_is_recognised_with_a_query() {
        assert!(decide::is_robots_txt("/robots.txt"));
        assert!(decide::is_robots_txt("/robots.txt?x=1"));
        assert!(!decide::is_robots_txt("/robots.txt/x"));
        assert!(!decide::is_robots_txt("/a/robots.txt"));
    }
}

//! The request path: pingora's `ProxyHttp`, kept thin. Each phase does one job: decide in
//! `request_filter` (and answer there when blocking), pick the origin in `upstream_peer`, add the
//! verdict headers in `upstream_request_filter`, count and log in `logging`.

use super::access_log::Entry;
use super::config::DEFAULT_TAG_PREFIX;
use super::site::{Site, Snapshot};
use super::state::Shared;
use crate::agent::Identity;
use crate::policy::{self, Outcome, Requester, VerdictLabel};
use crate::robots::Rule;
use async_trait::async_trait;
use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HOST, USER_AGENT};
use http::HeaderName;
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::prelude::*;
use pingora::proxy::{ProxyHttp, Session};
use std::sync::Arc;

/// The crawlgate proxy.
pub struct CrawlGate {
    shared: Arc<Shared>,
}

impl CrawlGate {
    /// A proxy over the shared state.
    pub fn new(shared: Arc<Shared>) -> CrawlGate {
        CrawlGate { shared }
    }
}

/// What `request_filter` decided, for the later phases.
#[derive(Debug)]
pub struct Decision {
    site: Arc<Site>,
    snapshot: Arc<Snapshot>,
    /// Metric label of the requester (`GPTBot`, `unnamed`, `person`).
    bot: Arc<str>,
    category: &'static str,
    verdict: VerdictLabel,
    /// Index of the deciding rule in the snapshot's file.
    rule: Option<usize>,
    outcome: Outcome,
    crawler: bool,
}

/// Per-request context.
#[derive(Debug, Default)]
pub struct Ctx {
    decision: Option<Decision>,
}

/// The longest piece of request data that goes into a header value or a body.
const MAX_ECHO: usize = 512;

/// Request data made safe to echo: control characters replaced, length bounded.
fn sanitize(text: &str) -> String {
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .take(MAX_ECHO)
        .collect();
    if text.chars().count() > MAX_ECHO {
        out.push('…');
    }
    out
}

/// The text of the rule for messages and the rule header: `Disallow: /private/`.
fn rule_text(rule: &Rule) -> String {
    format!("{}: {}", rule.kind.directive(), sanitize(&rule.pattern))
}

/// Removes every header a client sends with crawlgate's prefixes: nobody forges a verdict.
fn strip_forged_headers(request: &mut RequestHeader, prefix: &str) {
    let forged: Vec<HeaderName> = request
        .headers
        .keys()
        .filter(|name| {
            let name = name.as_str();
            starts_with_ignore_case(name, DEFAULT_TAG_PREFIX)
                || starts_with_ignore_case(name, prefix)
        })
        .cloned()
        .collect();
    for name in forged {
        request.remove_header(&name);
    }
}

fn starts_with_ignore_case(text: &str, prefix: &str) -> bool {
    text.len() >= prefix.len()
        && text.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

/// Writes a complete text/plain response.
async fn respond(
    session: &mut Session,
    status: u16,
    body: Bytes,
    content_type: &str,
) -> Result<()> {
    let mut header = ResponseHeader::build(status, Some(3))?;
    header.insert_header(CONTENT_TYPE, content_type)?;
    header.insert_header(CONTENT_LENGTH, body.len().to_string())?;
    header.insert_header("Cache-Control", "no-store")?;
    session
        .write_response_header(Box::new(header), false)
        .await?;
    session.write_response_body(Some(body), true).await?;
    Ok(())
}

fn host_of(request: &RequestHeader) -> Option<&[u8]> {
    request
        .uri
        .host()
        .map(str::as_bytes)
        .or_else(|| request.headers.get(HOST).map(|h| h.as_bytes()))
}

impl CrawlGate {
    /// Decides a request of `site`: who asks, what robots.txt says, what happens.
    fn decide(&self, site: &Arc<Site>, request: &RequestHeader) -> Decision {
        let snapshot = site.snapshot.load_full();
        let user_agent = request
            .headers
            .get(USER_AGENT)
            .map_or(&b""[..], |v| v.as_bytes());
        let identity = snapshot.classifier.classify(user_agent);
        let bot = snapshot.bot_label(&identity).clone();
        let path = request.uri.path_and_query().map_or("/", |p| p.as_str());
        let (requester, token, category) = match identity {
            Identity::Crawler { agent, .. } => (
                Requester::Crawler,
                agent.token.as_str(),
                agent.category.as_str(),
            ),
            // An unnamed crawler follows the `*` group: no token names it.
            Identity::Unnamed => (Requester::Crawler, "", "unnamed"),
            Identity::Person => (Requester::Person, "", "person"),
        };
        let (verdict, rule) = if requester == Requester::Person || is_robots_txt(path) {
            (VerdictLabel::Exempt, None)
        } else {
            let verdict = snapshot.robots.check_request(token, path);
            let label = if verdict.allowed {
                VerdictLabel::Allowed
            } else {
                VerdictLabel::Disallowed
            };
            (label, verdict.rule_index)
        };
        let action = snapshot.action(&identity);
        Decision {
            site: site.clone(),
            outcome: policy::decide(requester, verdict, action),
            snapshot,
            bot,
            category,
            verdict,
            rule,
            crawler: requester == Requester::Crawler,
        }
    }

    fn block_message(decision: &Decision, path: &str) -> String {
        let rule = decision
            .rule
            .and_then(|i| decision.snapshot.robots.file().rules.get(i));
        let bot = &decision.bot;
        let path = sanitize(path);
        match (decision.snapshot.stand_in_reason(), rule) {
            (Some(reason), _) => {
                format!("{reason}: everything is disallowed for {bot}; {path} was not fetched\n")
            }
            (None, Some(rule)) => format!(
                "robots.txt line {} ({}) disallows {path} for {bot}\n",
                rule.line,
                rule_text(rule)
            ),
            (None, None) => format!("robots.txt disallows {path} for {bot}\n"),
        }
    }
}

/// Whether a request path is the robots.txt file itself (whatever its query).
fn is_robots_txt(path_and_query: &str) -> bool {
    path_and_query.split('?').next() == Some("/robots.txt")
}

#[async_trait]
impl ProxyHttp for CrawlGate {
    type CTX = Ctx;

    fn new_ctx(&self) -> Ctx {
        Ctx::default()
    }

    async fn request_filter(&self, session: &mut Session, ctx: &mut Ctx) -> Result<bool> {
        let sites = self.shared.sites.load();
        let Some(site) = sites.route(host_of(session.req_header())).cloned() else {
            self.shared.metrics.unknown_host.inc();
            let host = host_of(session.req_header())
                .map(String::from_utf8_lossy)
                .unwrap_or_default();
            let body = format!(
                "crawlgate: no site is configured for host `{}`\n",
                sanitize(&host)
            );
            respond(session, 421, Bytes::from(body), "text/plain; charset=utf-8").await?;
            return Ok(true);
        };
        drop(sites);
        strip_forged_headers(session.req_header_mut(), &site.settings.tag_prefix);
        let decision = self.decide(&site, session.req_header());
        let path = session
            .req_header()
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        let served_here = is_robots_txt(&path) && decision.snapshot.serve_locally;
        let outcome = decision.outcome;
        let blocked_body =
            (outcome == Outcome::Blocked).then(|| Self::block_message(&decision, &path));
        let robots_body = served_here.then(|| decision.snapshot.bytes.clone());
        let status = decision.site.settings.block_status;
        ctx.decision = Some(decision);
        if let Some(body) = robots_body {
            respond(session, 200, body, "text/plain; charset=utf-8").await?;
            return Ok(true);
        }
        if let Some(body) = blocked_body {
            respond(
                session,
                status,
                Bytes::from(body),
                "text/plain; charset=utf-8",
            )
            .await?;
            return Ok(true);
        }
        Ok(false)
    }

    async fn upstream_peer(&self, _session: &mut Session, ctx: &mut Ctx) -> Result<Box<HttpPeer>> {
        match &ctx.decision {
            Some(decision) => Ok(Box::new(decision.site.peer.clone())),
            None => Error::e_explain(InternalError, "no site was chosen for the request"),
        }
    }

    async fn upstream_request_filter(
        &self,
        _session: &mut Session,
        upstream: &mut RequestHeader,
        ctx: &mut Ctx,
    ) -> Result<()> {
        let Some(decision) = &ctx.decision else {
            return Ok(());
        };
        if decision.outcome != Outcome::Tagged {
            return Ok(());
        }
        let prefix = &decision.site.settings.tag_prefix;
        upstream.insert_header(format!("{prefix}Bot"), decision.bot.as_ref())?;
        upstream.insert_header(format!("{prefix}Verdict"), decision.verdict.as_str())?;
        let rule = decision
            .rule
            .and_then(|i| decision.snapshot.robots.file().rules.get(i));
        if let Some(rule) = rule {
            let value = format!(
                "{} {} line {}",
                rule.kind.directive().to_ascii_lowercase(),
                sanitize(&rule.pattern),
                rule.line
            );
            upstream.insert_header(format!("{prefix}Rule"), value)?;
        }
        Ok(())
    }

    async fn logging(&self, session: &mut Session, error: Option<&Error>, ctx: &mut Ctx) {
        let Some(decision) = &ctx.decision else {
            return;
        };
        let site = decision.site.settings.name.as_str();
        let metrics = &self.shared.metrics;
        let request = session.req_header();
        let path = request.uri.path_and_query().map_or("/", |p| p.as_str());
        metrics
            .requests
            .with_label_values(&[
                site,
                &decision.bot,
                decision.category,
                decision.verdict.as_str(),
                decision.outcome.as_str(),
            ])
            .inc();
        if is_robots_txt(path) {
            metrics
                .robots_fetches
                .with_label_values(&[site, &decision.bot])
                .inc();
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
        if !decision.crawler {
            return;
        }
        let rule_line = decision
            .rule
            .and_then(|i| decision.snapshot.robots.file().rules.get(i))
            .map(|rule| rule.line);
        let client = session
            .client_addr()
            .and_then(|a| a.as_inet())
            .map(|a| a.ip().to_string())
            .unwrap_or_default();
        let path: String = path.chars().take(2048).collect();
        let entry = Entry {
            time: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
            site,
            client,
            method: request.method.as_str(),
            path: &path,
            bot: &decision.bot,
            category: decision.category,
            verdict: decision.verdict.as_str(),
            rule_line,
            action: decision.outcome.as_str(),
            status: session.response_written().map_or(0, |r| r.status.as_u16()),
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
        assert_eq!(sanitize(&long).chars().count(), MAX_ECHO + 1);
    }

    #[test]
    fn forged_headers_are_stripped_whatever_their_case() {
        let mut request = RequestHeader::build("GET", b"/", None).unwrap();
        request
            .insert_header("X-Crawlgate-Verdict", "allowed")
            .unwrap();
        request
            .insert_header("x-crawlgate-bot", "Googlebot")
            .unwrap();
        request.insert_header("X-Mine-Rule", "x").unwrap();
        request.insert_header("X-Other", "kept").unwrap();
        strip_forged_headers(&mut request, "X-Mine-");
        let names: Vec<&str> = request.headers.keys().map(|k| k.as_str()).collect();
        assert_eq!(names, vec!["x-other"]);
    }

    #[test]
    fn robots_txt_is_recognised_with_a_query() {
        assert!(is_robots_txt("/robots.txt"));
        assert!(is_robots_txt("/robots.txt?x=1"));
        assert!(!is_robots_txt("/robots.txt/x"));
        assert!(!is_robots_txt("/a/robots.txt"));
    }
}

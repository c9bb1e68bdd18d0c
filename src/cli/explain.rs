//! `crawlgate explain`: the whole decision on one request, as the proxy would make it.

use super::{CliError, ExitStatus};
use crate::agent::{Category, Place};
use crate::judge::Body;
use crate::policy::{Enforcement, Outcome};
use crate::proxy::client::Forwarding;
use crate::proxy::config::{RobotsSource, Settings};
use crate::proxy::decide::{self, Decision, Mode, RequestFacts};
use crate::proxy::metrics::Metrics;
use crate::proxy::politeness::Subject;
use crate::proxy::site::Snapshot;
use crate::proxy::source::{after_fetch, AfterFetch, Fetched, OriginClient};
use crate::proxy::state::Shared;
use crate::proxy::verify::signature::check::RequestView;
use crate::robots::path::path_and_query;
use crate::robots::{GroupKind, Preference};
use serde_json::json;
use std::borrow::Cow;
use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;

/// Arguments of `crawlgate explain`.
#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// The configuration the proxy runs with.
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// The request's User-Agent header.
    #[arg(long, value_name = "USER-AGENT")]
    pub ua: String,
    /// The TCP peer's address.
    #[arg(long, value_name = "ADDR")]
    pub ip: IpAddr,
    /// An X-Forwarded-For header value (repeatable, in order).
    #[arg(long, value_name = "VALUE")]
    pub xff: Vec<String>,
    /// A Forwarded header value (repeatable, in order).
    #[arg(long, value_name = "VALUE")]
    pub forwarded: Vec<String>,
    /// Another request header, `Name: value`, such as `X-Real-IP: 192.0.2.1` (repeatable).
    #[arg(long, value_name = "NAME: VALUE")]
    pub header: Vec<String>,
    /// The Host header (default: the URL's host).
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// Skip reverse-DNS lookups.
    #[arg(long)]
    pub no_dns: bool,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
    /// The URL (or path) requested.
    #[arg(value_name = "URL")]
    pub url: String,
}

fn host_of_url(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    Some(host)
}

/// Fetches an origin's robots.txt once, so that the explanation uses the file the proxy would,
/// by the proxy's own rule (an unreachable origin keeps a good file, such as the state
/// directory's). Returns what each origin answered, by site.
async fn fetch_origin_file(shared: &Shared) -> Vec<(String, String)> {
    let mut answers = Vec::new();
    for site in &shared.sites.load().all {
        if site.settings.robots.source != RobotsSource::Origin {
            continue;
        }
        let Ok(Some(client)) = OriginClient::new(&site.settings) else {
            continue;
        };
        let fetched = client.fetch().await;
        answers.push((site.settings.name.clone(), fetched.describe()));
        let current = site.snapshot.load().state;
        let AfterFetch::Install(bytes, state) =
            after_fetch(&fetched, current, site.settings.robots.on_unreachable)
        else {
            continue;
        };
        let catalog = shared.catalog.load();
        if let Ok(mut snapshot) = Snapshot::build(&site.settings, &catalog, bytes, state) {
            if !matches!(fetched, Fetched::Unreachable(_)) {
                snapshot.fetched_at = Some(std::time::SystemTime::now());
            }
            site.replace(snapshot);
        }
    }
    answers
}

/// The header lines a request carries: `--xff`, `--forwarded` and every `--header`.
fn header_lines(args: &ExplainArgs) -> Result<Vec<(&str, &[u8])>, CliError> {
    let mut lines: Vec<(&str, &[u8])> = Vec::new();
    lines.extend(args.xff.iter().map(|v| ("x-forwarded-for", v.as_bytes())));
    lines.extend(args.forwarded.iter().map(|v| ("forwarded", v.as_bytes())));
    for header in &args.header {
        let (name, value) = header.split_once(':').ok_or_else(|| {
            CliError::Usage(format!("--header `{header}`: write it as `Name: value`"))
        })?;
        lines.push((name.trim(), value.trim().as_bytes()));
    }
    Ok(lines)
}

/// The header lines as a header map (lines that are not valid headers are left out).
fn header_map(lines: &[(&str, &[u8])]) -> http::HeaderMap {
    let mut map = http::HeaderMap::new();
    for (name, value) in lines {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            http::HeaderValue::from_bytes(value),
        ) {
            map.append(name, value);
        }
    }
    map
}

/// Runs `explain` and writes the explanation on `out`.
pub fn run_explain(args: &ExplainArgs, mut out: impl Write) -> Result<ExitStatus, CliError> {
    let settings =
        Settings::from_file(&args.config).map_err(|e| CliError::Config(e.to_string()))?;
    let metrics = Metrics::new().map_err(|e| CliError::Config(e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::Write)?;
    let path = path_and_query(&args.url).into_owned();
    let host = args
        .host
        .clone()
        .or_else(|| host_of_url(&args.url).map(str::to_owned));
    let lines = header_lines(args)?;
    // A signed request's headers (`--header 'Signature-Input: ...'`) are checked with the keys
    // the state directory and the configured JWKS files hold; explain fetches none.
    let headers = header_map(&lines);
    let authority = host.clone().unwrap_or_default();
    let facts = RequestFacts {
        host: host.as_deref().map(str::as_bytes),
        path: &path,
        user_agent: args.ua.as_bytes(),
        peer: Some(args.ip),
        forwarding: Forwarding::Lines(&lines),
        signature: Some(RequestView {
            headers: &headers,
            method: "GET",
            authority: &authority,
            path_and_query: &path,
            scheme: if args.url.starts_with("http://") {
                "http"
            } else {
                "https"
            },
        }),
        method: "GET",
        payment_headers: Some(&headers),
    };
    let mode = Mode {
        record: false,
        use_dns: !args.no_dns,
    };
    let (decision, origins) = runtime.block_on(async {
        let shared =
            Shared::new(&settings, metrics, None).map_err(|e| CliError::Config(e.to_string()))?;
        let origins = fetch_origin_file(&shared).await;
        Ok::<_, CliError>((decide::decide(&shared, &facts, mode).await, origins))
    })?;
    let Some(decision) = decision else {
        let host = host.unwrap_or_default();
        writeln!(
            out,
            "no site is configured for host `{host}`: the proxy answers 421"
        )?;
        return Ok(ExitStatus::Failure);
    };
    let origin_now = origins
        .iter()
        .find(|(site, _)| *site == decision.site.settings.name)
        .map(|(_, answer)| answer.as_str());
    let request = Explained {
        path: &path,
        user_agent: args.ua.as_bytes(),
        header_lines: &lines,
        origin_now,
    };
    let text = render(&settings, &decision, &request, args.json).map_err(CliError::Write)?;
    write!(out, "{text}")?;
    Ok(ExitStatus::Success)
}

/// The request an explanation is about, beyond what the decision holds.
#[derive(Debug, Clone, Copy)]
pub struct Explained<'a> {
    /// The path and query judged.
    pub path: &'a str,
    /// The User-Agent header.
    pub user_agent: &'a [u8],
    /// The request's header lines that may carry a client address.
    pub header_lines: &'a [(&'a str, &'a [u8])],
    /// What the site's origin answered for robots.txt just now, when it was asked.
    pub origin_now: Option<&'a str>,
}

/// A decision explained as `crawlgate explain` prints it: lines of text, or one JSON object
/// (with its line end).
pub fn render(
    settings: &Settings,
    decision: &Decision,
    request: &Explained<'_>,
    json: bool,
) -> std::io::Result<String> {
    let facts = Facts {
        user_agent: request.user_agent,
        origin_now: request.origin_now,
        forwarding: forwarding_facts(settings, decision, request.header_lines),
    };
    if json {
        return Ok(format!("{}\n", to_json(decision, request.path, &facts)));
    }
    let mut out = Vec::new();
    write_text(decision, request.path, &facts, &mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// What the explanation says beyond the decision itself.
struct Facts<'a> {
    /// The request's User-Agent header.
    user_agent: &'a [u8],
    /// What the site's origin answered for robots.txt just now (origin sites).
    origin_now: Option<&'a str>,
    /// How the client address was found.
    forwarding: ForwardingFacts,
}

/// How the client address was found: the peer, or the trusted proxies' one header.
struct ForwardingFacts {
    /// "the TCP peer", "X-Forwarded-For written by trusted proxy 10.1.2.3", ...
    via: String,
    /// The header the trusted proxies write (when the peer is one).
    header_read: Option<String>,
    /// Forwarding headers the request carries that were not read, and why.
    ignored: Vec<String>,
}

/// The forwarding headers a request may carry; only the trusted proxies' own is read.
const FORWARDING_HEADERS: [&str; 5] = [
    "x-forwarded-for",
    "forwarded",
    "x-real-ip",
    "true-client-ip",
    "cf-connecting-ip",
];

fn forwarding_facts(
    settings: &Settings,
    decision: &Decision,
    lines: &[(&str, &[u8])],
) -> ForwardingFacts {
    let trusted = &settings.trusted_proxies;
    let header = trusted.header().name();
    let peer_trusted = trusted.contains(decision.peer);
    let via = match (peer_trusted, decision.client == decision.peer) {
        (false, _) => "the TCP peer".to_owned(),
        (true, false) => format!("{header} written by trusted proxy {}", decision.peer),
        (true, true) => format!(
            "trusted proxy {}, which sent no usable {header}",
            decision.peer
        ),
    };
    let mut ignored = Vec::new();
    for (name, _) in lines {
        let name = name.trim().to_ascii_lowercase();
        if !FORWARDING_HEADERS.contains(&name.as_str())
            || ignored.iter().any(|i: &String| i.starts_with(&name))
        {
            continue;
        }
        if !peer_trusted {
            ignored.push(format!("{name} (the peer is not a trusted proxy)"));
        } else if name != header {
            ignored.push(format!("{name} (trusted proxies write {header} only)"));
        }
    }
    ForwardingFacts {
        via,
        header_read: peer_trusted.then(|| header.to_owned()),
        ignored,
    }
}

/// Where the robots.txt in force came from and how old it is, for people.
fn provenance(snapshot: &Snapshot) -> String {
    match snapshot.fetched_at {
        Some(at) => {
            let age = std::time::Duration::from_secs(at.elapsed().unwrap_or_default().as_secs());
            let from = if snapshot.restored {
                "kept in the state directory, "
            } else {
                ""
            };
            format!(
                "{from}fetched {} ({} ago)",
                humantime::format_rfc3339_seconds(at),
                humantime::format_duration(age)
            )
        }
        None => String::new(),
    }
}

/// Whose crawl-delay slot and robots.txt-fetch memory the request counts in.
fn politeness(decision: &Decision) -> String {
    let bot = decision.bot();
    match &decision.subject {
        Subject::Crawler(_) => format!("shared by every verified {bot} address"),
        Subject::Claim(_, addr) => {
            format!("{addr}'s own: an unverified {bot} claim shares no one's slot")
        }
        Subject::Client(addr) => format!("{addr}'s own"),
    }
}

/// The status crawlgate answers with, when it answers itself (0: the origin answers): the
/// judgement's, which the proxy writes.
fn status_of(decision: &Decision) -> u16 {
    decision.judgement.response.as_ref().map_or(0, |r| r.status)
}

/// The body of crawlgate's own answer, as the proxy writes it (robots.txt's file is named, not
/// printed).
fn body_of(decision: &Decision) -> Option<Cow<'_, str>> {
    let response = decision.judgement.response.as_ref()?;
    Some(match &response.body {
        Body::RobotsTxt => Cow::Owned(format!(
            "the robots.txt in force ({} bytes)\n",
            decision.snapshot.bytes.len()
        )),
        Body::Static(text) => Cow::Borrowed(text),
        Body::Text(text) => Cow::Borrowed(text),
    })
}

/// Where a line of the robots.txt that decided comes from, when the site manages groups of its
/// own: `managed by crawlgate` or `the origin's line N`.
fn line_source(decision: &Decision, line: u32) -> Option<String> {
    let snapshot = decision
        .decided_by_previous
        .as_ref()
        .unwrap_or(&decision.snapshot);
    match snapshot.line_source(line)? {
        crate::managed::Source::Managed => Some("managed by crawlgate".to_owned()),
        crate::managed::Source::Origin(origin) => Some(format!("the origin's line {origin}")),
        crate::managed::Source::Overridden(_) => None,
    }
}

fn to_json(decision: &Decision, path: &str, facts: &Facts<'_>) -> String {
    let rule = decision.rule().map(|rule| {
        let source = line_source(decision, rule.line);
        json!({"kind": rule.kind, "pattern": rule.pattern, "line": rule.line, "source": source})
    });
    let snapshot = &decision.snapshot;
    let group_lines = group_lines(decision);
    let row = decision.crawler();
    let classified = snapshot.crawlers.read(facts.user_agent);
    let preference = preference_of(decision, path);
    let settings = &decision.site.settings;
    let content_usage = json!({
        "preference": preference.view(&snapshot.robots.file().preferences),
        "enforce": settings.content_usage.enforce,
        "announce": settings.content_usage.announce,
        "header": preference.header_value(),
        "refused": decision.judgement.content_usage.map(|r| r.usage),
        "rule": decision.preference_rule(),
    });
    let value = json!({
        "site": decision.site.settings.name,
        "path": path,
        "client": decision.client.to_string(),
        "peer": decision.peer.to_string(),
        "client_via": facts.forwarding.via,
        "forwarding_header": facts.forwarding.header_read,
        "forwarding_ignored": facts.forwarding.ignored,
        "bot": &**decision.bot(),
        "name": row.map(|c| &*c.row.name),
        "token": &**decision.token(),
        "category": decision.category(),
        "signal": classified.signal,
        "place": classified.place.map(Place::describe),
        "group": decision.selected.group(),
        "group_token": row.and_then(|c| c.group_token().map(str::to_owned)),
        "crawler": decision.is_crawler(),
        "verification": decision.verification,
        "robots": {
            "state": snapshot.state.as_str(),
            "sha256": snapshot.sha256,
            "fetched_at": snapshot.fetched_at.map(|at| humantime::format_rfc3339_seconds(at).to_string()),
            "restored": snapshot.restored,
            "origin_now": facts.origin_now,
            "group_lines": group_lines,
            "decided_by_previous_file": decision.decided_by_previous.is_some(),
        },
        "verdict": decision.judgement.verdict.as_str(),
        "rule": rule,
        "content_usage": content_usage,
        "robots_txt": decision.robots_txt,
        "robots_unread": decision.judgement.robots_unread,
        "politeness": politeness(decision),
        "crawl_delay": decision.judgement.crawl_delay,
        "action": decision.judgement.action.as_str(),
        "outcome": decision.judgement.outcome.as_str(),
        "mode": decision.site.settings.enforcement.as_str(),
        "status": status_of(decision),
        "payment": decision.judgement.payment.map(|payment| json!({
            "price": payment.price().to_string(),
            "result": payment.label(),
            "error": match payment {
                crate::pricing::Payment::Refused(_, error) => Some(error.code()),
                _ => None,
            },
        })),
    });
    value.to_string()
}

fn write_text(
    decision: &Decision,
    path: &str,
    facts: &Facts<'_>,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let settings = &decision.site.settings;
    let hosts = if settings.hosts.is_empty() {
        "any host".to_owned()
    } else {
        settings.hosts.join(", ")
    };
    writeln!(out, "site:          {} ({hosts})", settings.name)?;
    writeln!(
        out,
        "client:        {} ({})",
        decision.client, facts.forwarding.via
    )?;
    for ignored in &facts.forwarding.ignored {
        writeln!(out, "ignored:       {ignored}")?;
    }
    let Some(row) = decision.crawler() else {
        let shape = decision.snapshot.crawlers.read(facts.user_agent).shape;
        if shape.is_some_and(|shape| shape.device_app) {
            writeln!(
                out,
                "requester:     a person: an app on a person's phone or computer (its header carries Apple's CFNetwork/ or Android's ExoPlayerLib/, which only such apps write)"
            )?;
        } else {
            writeln!(
                out,
                "requester:     a person: a browser or an app (no known crawler token, crawler word or crawler's form where a header names its client, and no URL or e-mail address outside its platform comment)"
            )?;
        }
        writeln!(out, "action:        forwarded: people are never blocked")?;
        return Ok(());
    };
    let classified = decision.snapshot.crawlers.read(facts.user_agent);
    let why = match classified.signal {
        Some(signal) if !row.is_catalogs() => {
            format!(", its header carries {}", signal.describe())
        }
        _ => String::new(),
    };
    let named = if row.category == Category::Unlisted {
        ", named only by this site"
    } else {
        ""
    };
    writeln!(
        out,
        "crawler:       {} ({}{named}{why})",
        row.name,
        decision.category()
    )?;
    if let (Some(place), true) = (classified.place, decision.who == classified.who) {
        writeln!(out, "named in:      {}", place.describe())?;
    }
    let v = &decision.verification;
    writeln!(
        out,
        "verification:  {} by {}: {}",
        v.result.as_str(),
        v.method.as_str(),
        v.detail
    )?;
    let snapshot = &decision.snapshot;
    let judged_token = decision.token();
    let token = if judged_token.is_empty() {
        "*"
    } else {
        &**judged_token
    };
    let lines: Vec<String> = group_lines(decision).iter().map(u32::to_string).collect();
    let lines = lines.join(", ");
    let judged_as_row = !judged_token.is_empty() && *judged_token == row.token;
    let group = match (decision.selected.group(), row.group_token()) {
        (GroupKind::Agent, Some(own)) if own.eq_ignore_ascii_case(&row.token) => {
            format!("its own group at line {lines}")
        }
        (GroupKind::Agent, Some(other)) if judged_as_row => format!(
            "{other}'s group at line {lines} ({} obeys {other}'s group when no group names it)",
            row.name
        ),
        (GroupKind::Agent, _) => format!("the group at line {lines}"),
        (GroupKind::Star, _) => format!("the * group at line {lines}"),
        (GroupKind::None, _) if judged_as_row && !row.star => {
            "no group names it, and its operator says it ignores *".to_owned()
        }
        (GroupKind::None, _) => "no group applies".to_owned(),
    };
    let provenance = provenance(snapshot);
    let provenance = if provenance.is_empty() {
        provenance
    } else {
        format!(", {provenance}")
    };
    writeln!(
        out,
        "robots.txt:    {} ({}{provenance}), read as {token}: {group}",
        snapshot.state.as_str(),
        &snapshot.sha256[..12.min(snapshot.sha256.len())]
    )?;
    if let Some(answer) = facts.origin_now {
        writeln!(out, "origin now:    {answer}")?;
    }
    let rule = match (
        decision.judgement.content_usage,
        decision.preference_rule(),
        decision.rule(),
    ) {
        (Some(refusal), Some(rule), _) => format!(
            "line {} ({}) refuses {}, which {} crawlers are for,",
            rule.line,
            rule.text(),
            refusal.usage.label(),
            decision.category()
        ),
        (_, _, Some(rule)) => format!(
            "line {} ({}: {}{})",
            rule.line,
            rule.kind.directive(),
            rule.pattern,
            line_source(decision, rule.line).map_or(String::new(), |source| format!(", {source}"))
        ),
        _ => "no rule matches".to_owned(),
    };
    let previous = if decision.decided_by_previous.is_some() {
        " by the previous robots.txt, which it read"
    } else {
        ""
    };
    writeln!(
        out,
        "verdict:       {}{previous}: {rule} for {path}",
        decision.judgement.verdict.as_str()
    )?;
    let preference = preference_of(decision, path);
    if !preference.is_unknown() {
        let settings = &settings.content_usage;
        let what = match (settings.enforce, settings.announce) {
            (true, true) => "enforced and announced",
            (true, false) => "enforced",
            (false, true) => "announced",
            (false, false) => "neither enforced nor announced",
        };
        writeln!(
            out,
            "preference:    {} ({what})",
            preference.describe(&snapshot.robots.file().preferences)
        )?;
    }
    let read = match decision.judgement.last_robots_fetch {
        Some(at) => format!("last fetched {}", humantime::format_rfc3339_seconds(at)),
        None => "not fetched (as far as this process knows)".to_owned(),
    };
    let unread = if decision.judgement.robots_unread {
        ": robots_unread"
    } else {
        ""
    };
    writeln!(out, "robots.txt read: {read}{unread}")?;
    writeln!(out, "politeness:    {}", politeness(decision))?;
    match &decision.judgement.crawl_delay {
        Some(delay) => writeln!(
            out,
            "crawl-delay:   {} s ({}){}",
            delay.seconds,
            delay.mode.as_str(),
            if delay.exceeded {
                ": exceeded"
            } else {
                ": within it"
            }
        )?,
        None if !crate::policy::paced(row.category, decision.judgement.action) => writeln!(
            out,
            "crawl-delay:   not paced: {} is counted, not judged",
            row.category
        )?,
        None => writeln!(out, "crawl-delay:   none applies")?,
    }
    if let Some(payment) = decision.judgement.payment {
        use crate::pricing::Payment;
        let what = match payment {
            Payment::Quoted(_) => "quoted: 402 with crawler-price".to_owned(),
            Payment::Agreed(_) => {
                "agreed: forwarded, charged when the origin answers with success".to_owned()
            }
            Payment::Refused(_, error) => format!("refused: crawler-error {}", error.code()),
        };
        writeln!(out, "pay per crawl: {}, {what}", payment.price())?;
    }
    let status = status_of(decision);
    let status = if status > 0 {
        format!(" ({status})")
    } else if decision.site.settings.enforcement == Enforcement::Observe {
        let would = match decision.judgement.outcome {
            Outcome::WouldBlock => format!(
                "; enforcing, crawlgate answers {}",
                decision.site.settings.block_status
            ),
            Outcome::WouldThrottle => "; enforcing, crawlgate answers 429".to_owned(),
            _ => String::new(),
        };
        format!(" (mode observe: forwarded{would})")
    } else {
        String::new()
    };
    writeln!(
        out,
        "action:        {} → {}{status}",
        decision.judgement.action.as_str(),
        decision.judgement.outcome.as_str()
    )?;
    if let Some(body) = body_of(decision) {
        let retry = decision
            .judgement
            .response
            .as_ref()
            .and_then(|r| r.retry_after)
            .map_or(String::new(), |s| format!(" {s} s"));
        write!(out, "response:      {body}")?;
        if !retry.is_empty() {
            writeln!(out, "retry-after:  {retry}")?;
        }
    }
    Ok(())
}

/// The content-use preference on `path` for the groups the decision was judged by: none for
/// `/robots.txt` or for a path they disallow.
fn preference_of(decision: &Decision, path: &str) -> Preference {
    if decision.robots_txt {
        return Preference::UNKNOWN;
    }
    decision
        .snapshot
        .robots
        .preference_selected(decision.selected, path)
}

/// The lines of the groups the decision was judged by.
fn group_lines(decision: &Decision) -> Vec<u32> {
    let robots = &decision.snapshot.robots;
    robots
        .groups_of(decision.selected)
        .iter()
        .filter_map(|&g| robots.file().groups.get(g).map(|group| group.line))
        .collect()
}

/// The crawler signal of the request's header, for an unnamed crawler or a site's own token.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_taken_from_urls() {
        assert_eq!(host_of_url("https://example.com/x"), Some("example.com"));
        assert_eq!(
            host_of_url("http://u:p@example.com:8080?q"),
            Some("example.com:8080")
        );
        assert_eq!(host_of_url("/x"), None);
    }

    /// What explain prints is the judgement the proxy writes: a crawler that comes again within
    /// its crawl-delay is answered 429 with Retry-After, not 403.
    #[test]
    fn a_throttled_request_is_explained_with_the_proxys_429() {
        let yaml = "listen: [\"127.0.0.1:1\"]\nsites:\n  - name: s\n    upstream: \"127.0.0.1:9\"\n    robots: {inline: \"User-agent: *\\nCrawl-delay: 30\\nDisallow: /private/\\n\"}\n    crawl_delay: enforce\n";
        let settings = Settings::from_yaml(yaml, "t", std::path::Path::new("/")).unwrap();
        let shared = Shared::new(&settings, Metrics::new().unwrap(), None).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let facts = RequestFacts {
            host: Some(b"a.test"),
            path: "/page",
            user_agent: b"FooBot/1.0 (+https://foo.test/bot)",
            peer: Some("192.0.2.7".parse().unwrap()),
            forwarding: Forwarding::Lines(&[]),
            signature: None,
            method: "GET",
            payment_headers: None,
        };
        let look = Mode {
            record: false,
            use_dns: false,
        };
        let decide = |mode| {
            runtime
                .block_on(decide::decide(&shared, &facts, mode))
                .unwrap()
        };
        // The first request takes the crawler's slot; the next one, at once, is too soon.
        let first = decide(Mode {
            record: true,
            use_dns: false,
        });
        assert_eq!(status_of(&first), 0);
        let again = decide(look);
        let request = Explained {
            path: "/page",
            user_agent: facts.user_agent,
            header_lines: &[],
            origin_now: None,
        };
        let json = render(&settings, &again, &request, true).unwrap();
        let json: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            (json["outcome"].as_str(), json["status"].as_u64()),
            (Some("throttled"), Some(429))
        );
        let text = render(&settings, &again, &request, false).unwrap();
        assert!(text.contains("→ throttled (429)"), "{text}");
        assert!(
            text.contains("response:      robots.txt asks unnamed to wait 30 s"),
            "{text}"
        );
        assert!(text.contains("retry-after:   30 s"), "{text}");
        let blocked = runtime
            .block_on(decide::decide(
                &shared,
                &RequestFacts {
                    path: "/private/x",
                    ..facts
                },
                look,
            ))
            .unwrap();
        assert_eq!(status_of(&blocked), 403);
    }
}

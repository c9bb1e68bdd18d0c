//! The whole decision on one request, apart from pingora: which site, which client address, who
//! the crawler is and whether that is true, what robots.txt says (or said, for a crawler that read
//! the previous file), whether it keeps its crawl-delay, and what happens. The proxy runs it on
//! every request; `crawlgate explain` runs the same code and prints it.

use super::client::Forwarding;
use super::config::CrawlDelayMode;
use super::politeness::{Pace, PaceQuery, Subject};
use super::site::{Site, Snapshot};
use super::state::Shared;
use super::verify::signature::check::{is_signed, RequestView};
use super::verify::signature::directory::Directory;
use super::verify::signature::{reuse, SignatureOutcome, SignatureVerdict};
use super::verify::{Method, Verification, Verified};
use crate::agent::{Category, Who};
use crate::crawlers::Crawler;
use crate::policy::{self, Action, Outcome, VerdictLabel};
use crate::robots::{path, PreferenceRule, Selected, Usage};
use serde::Serialize;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// What the decision needs to know of a request.
#[derive(Debug, Clone, Copy)]
pub struct RequestFacts<'a> {
    /// The Host header (or the authority of an absolute-form request).
    pub host: Option<&'a [u8]>,
    /// The request target's path and query.
    pub path: &'a str,
    /// The User-Agent header.
    pub user_agent: &'a [u8],
    /// The TCP peer.
    pub peer: Option<IpAddr>,
    /// The forwarding headers (read only when the peer is a trusted proxy).
    pub forwarding: Forwarding<'a>,
    /// The request as a Web Bot Auth signature covers it, when its headers are at hand.
    pub signature: Option<RequestView<'a>>,
}

/// How the decision runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mode {
    /// Update politeness state (the proxy); `false` only looks (explain).
    pub record: bool,
    /// Verify by reverse DNS when configured.
    pub use_dns: bool,
}

impl Mode {
    /// What the proxy does.
    pub const LIVE: Mode = Mode {
        record: true,
        use_dns: true,
    };
}

/// The crawl-delay part of a decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CrawlDelay {
    /// The delay robots.txt asks of this crawler.
    pub seconds: f64,
    /// Whether this request came sooner than it allows.
    pub exceeded: bool,
    /// When it may come again, if it came too soon.
    pub retry_after_seconds: Option<u64>,
    /// What the site does about it.
    #[serde(serialize_with = "mode_as_str")]
    pub mode: CrawlDelayMode,
}

fn mode_as_str<S: serde::Serializer>(mode: &CrawlDelayMode, out: S) -> Result<S::Ok, S::Error> {
    out.serialize_str(mode.as_str())
}

/// A decision, with everything that went into it.
#[derive(Debug, Clone)]
pub struct Decision {
    /// The site.
    pub site: Arc<Site>,
    /// The snapshot of robots.txt in force.
    pub snapshot: Arc<Snapshot>,
    /// The snapshot that decided, when it is the previous one (a grace verdict).
    pub decided_by_previous: Option<Arc<Snapshot>>,
    /// The TCP peer.
    pub peer: IpAddr,
    /// The client address used (the peer, or what a trusted proxy's header says).
    pub client: IpAddr,
    /// Whose politeness state (crawl-delay slot, robots.txt fetches) the request counts in.
    pub subject: Subject,
    /// Who asks: a person, an unnamed crawler, or a row of the site's crawler table (in
    /// `snapshot`): the claimed one, or the one a verified signature speaks for.
    pub who: Who,
    /// The groups it is judged by in the snapshot in force (its own, its operator's fallback's,
    /// `*`, or none).
    pub selected: Selected,
    /// Verification.
    pub verification: Verification,
    /// What its Web Bot Auth signature said (`unsigned` when it has none).
    pub signature: SignatureOutcome,
    /// A replayed signature on a request whose User-Agent claims the crawler it speaks for:
    /// refused with 429, whatever the site's action.
    pub replayed: bool,
    /// robots.txt's verdict.
    pub verdict: VerdictLabel,
    /// Index of the deciding rule in the deciding snapshot's file.
    pub rule: Option<usize>,
    /// The action configured for this requester.
    pub action: Action,
    /// What happens.
    pub outcome: Outcome,
    /// Whether the request is for /robots.txt.
    pub robots_txt: bool,
    /// Whether the crawler had not fetched robots.txt within the read window.
    pub robots_unread: bool,
    /// When the crawler last fetched robots.txt.
    pub last_robots_fetch: Option<SystemTime>,
    /// The crawl-delay, when one applies.
    pub crawl_delay: Option<CrawlDelay>,
    /// The use the path's content-use preference refuses, when the verdict is `content-usage`.
    pub content_usage: Option<Refusal>,
}

/// A stated preference that refuses what the crawler is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// The refused use.
    pub usage: Usage,
    /// The refusing rule's index in the snapshot's [`crate::robots::ParsedFile::preferences`].
    pub rule: usize,
}

impl Decision {
    /// The crawler's row of the site's table (the one it claims to be); `None` for a person.
    pub fn crawler(&self) -> Option<Crawler<'_>> {
        self.snapshot.crawlers.row(self.who)
    }

    /// Whether it is a crawler.
    pub fn is_crawler(&self) -> bool {
        self.who.is_crawler()
    }

    /// The row robots.txt is read for: its own, or the unnamed crawlers' when its claim is
    /// spoofed (a fake Googlebot is not Googlebot) or it is a person.
    pub fn judged(&self) -> Crawler<'_> {
        match self.crawler() {
            Some(crawler) if self.verification.result != Verified::Spoofed => crawler,
            _ => self.snapshot.crawlers.unnamed(),
        }
    }

    /// The metric label of the requester (`GPTBot`, `MJ12bot`, `unnamed`, `person`).
    pub fn bot(&self) -> &Arc<str> {
        match self.crawler() {
            Some(crawler) => &crawler.row.label,
            None => self.snapshot.crawlers.person_label(),
        }
    }

    /// The product token robots.txt is asked about (`""` for `*`).
    pub fn token(&self) -> &Arc<str> {
        &self.judged().row.token
    }

    /// The category label (`person` for a person).
    pub fn category(&self) -> &'static str {
        self.crawler()
            .map_or("person", |crawler| crawler.category.as_str())
    }

    /// The category of the crawler it claims to be.
    pub fn crawler_category(&self) -> Option<Category> {
        self.crawler().map(|crawler| crawler.category)
    }

    /// The deciding rule.
    pub fn rule(&self) -> Option<&crate::robots::Rule> {
        let snapshot = self.decided_by_previous.as_ref().unwrap_or(&self.snapshot);
        self.rule.and_then(|i| snapshot.robots.file().rules.get(i))
    }

    /// The preference rule behind a `content-usage` verdict.
    pub fn preference_rule(&self) -> Option<&PreferenceRule> {
        let refusal = self.content_usage?;
        self.snapshot.robots.preference_rule(refusal.rule)
    }

    /// The line of robots.txt that decided: the preference rule of a `content-usage` verdict,
    /// else the deciding allow or disallow.
    pub fn deciding_line(&self) -> Option<u32> {
        match self.preference_rule() {
            Some(rule) => Some(rule.line),
            None => self.rule().map(|rule| rule.line),
        }
    }
}

/// Whether a request target is the robots.txt file itself (whatever its query, however it is
/// percent-encoded): [`path::is_robots_txt`] on the normalised path. Every request asks, so a
/// path without escapes is compared as it is: normalising it could only add escapes, and
/// `/robots.txt` has none.
pub fn is_robots_txt(target: &str) -> bool {
    let target = path::path_and_query(target);
    let raw_path = target.split('?').next().unwrap_or_default();
    if !raw_path.contains('%') {
        return raw_path == "/robots.txt";
    }
    path::is_robots_txt(&path::normalize(target.as_bytes()))
}

/// Whether a User-Agent is a person's (a browser or an app), by a site's snapshot.
pub fn is_person(snapshot: &Snapshot, user_agent: &[u8]) -> bool {
    matches!(snapshot.classify(user_agent), Who::Person)
}

/// Decides a request, or `None` when no site serves its host.
pub async fn decide(shared: &Shared, facts: &RequestFacts<'_>, mode: Mode) -> Option<Decision> {
    let site = shared.sites.load().route(facts.host)?.clone();
    let global = shared.global.load_full();
    let peer = facts
        .peer
        .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
        .to_canonical();
    let client = global.trusted.client_of(peer, &facts.forwarding);
    let snapshot = site.snapshot.load_full();
    let mut who = snapshot.classify(facts.user_agent);
    let mut crawler = snapshot.crawler(who);
    let signature = match &facts.signature {
        Some(view) if is_signed(view.headers) => {
            let claimed = match who {
                Who::Crawler(_) => crawler.map(|c| c.token_lower.clone()),
                _ => None,
            };
            shared
                .signatures
                .check(view, claimed.as_deref(), SystemTime::now())
        }
        _ => SignatureVerdict::Unsigned,
    };
    // A valid signature used before by someone else (or its nonce seen before) is a replay.
    // `explain` only looks: it checks no use.
    let signature = match signature {
        SignatureVerdict::Verified {
            directory,
            keyid,
            reuse,
        } if mode.record => {
            let holder = reuse::holder(client, &site.name, facts.user_agent);
            if shared.store.use_signature(&reuse, &holder).await {
                SignatureVerdict::Verified {
                    directory,
                    keyid,
                    reuse,
                }
            } else {
                SignatureVerdict::Replayed { directory }
            }
        }
        other => other,
    };
    // A verified signer is the crawler its directory speaks for, whatever its User-Agent says.
    // An invalid or replayed signature proves nothing: it makes a false claim only of a request
    // whose User-Agent claims the crawler the directory speaks for; anyone else (a person's
    // browser whose clock is off, or whose Host a CDN rewrote) stays who its User-Agent says,
    // as it would with no signature at all.
    let claims = |directory: &Directory| match (who, crawler, directory.bot.as_deref()) {
        (Who::Crawler(_), Some(crawler), Some(bot)) => crawler.token.eq_ignore_ascii_case(bot),
        _ => false,
    };
    let (directory, signed) = match &signature {
        SignatureVerdict::Verified {
            directory, keyid, ..
        } => (
            Some(directory),
            Verification::by(
                Verified::Verified,
                Method::Signature,
                format!("signed with key {keyid} of {}", directory.url),
            ),
        ),
        SignatureVerdict::Invalid {
            directory: Some(directory),
            why,
        } if claims(directory) => (
            Some(directory),
            Verification::by(
                Verified::Spoofed,
                Method::Signature,
                format!("an invalid signature for {}: {why}", directory.url),
            ),
        ),
        SignatureVerdict::Replayed { directory } if claims(directory) => (
            Some(directory),
            Verification::by(
                Verified::Spoofed,
                Method::Signature,
                format!(
                    "a replayed signature: it was used before, by another client, site or User-Agent, or its nonce came before, with a valid signature of {}",
                    directory.url
                ),
            ),
        ),
        _ => (None, Verification::none()),
    };
    let signer = directory
        .and_then(|d| d.bot.as_deref())
        .and_then(|bot| row_of(&snapshot, bot));
    let replayed = directory.is_some() && matches!(signature, SignatureVerdict::Replayed { .. });
    let signed = match signer {
        Some(index) => {
            who = Who::Crawler(index);
            crawler = snapshot.crawler(who);
            Some(signed)
        }
        None => None,
    };
    let robots_txt = is_robots_txt(facts.path);
    let site_name = &site.name;
    let verification = match (who, crawler) {
        _ if signed.is_some() => signed.unwrap_or_else(Verification::none),
        (Who::Crawler(_), Some(crawler)) => {
            global
                .verifier
                .verify(&crawler.token, &crawler.token_lower, client, mode.use_dns)
                .await
        }
        (Who::Crawler(_), None) => Verification::fixed(
            Verified::Unverifiable,
            "no published ranges or reverse DNS are configured for this crawler",
        ),
        (Who::Unnamed, _) => Verification::fixed(
            Verified::Unverifiable,
            "an unnamed crawler claims no identity",
        ),
        (Who::Person, _) => Verification::none(),
    };
    // A signature crawlgate could not check says why nothing else could verify the claim.
    let verification = match &signature {
        SignatureVerdict::Unverifiable { why }
            if verification.result == Verified::Unverifiable
                && verification.method == Method::None =>
        {
            Verification::by(Verified::Unverifiable, Method::Signature, why.clone())
        }
        _ => verification,
    };
    let spoofed = verification.result == Verified::Spoofed;
    // A fake Googlebot is not Googlebot: robots.txt is read for it as for any unnamed crawler,
    // and its politeness state is its own address's, not Googlebot's.
    let unnamed = snapshot.crawlers.unnamed();
    let judged = match crawler {
        Some(crawler) if !spoofed => crawler,
        _ => unnamed,
    };
    // Only a verified crawler shares one state across its addresses: a claim nobody checked
    // counts against its own address, so a forger uses up its own slot and not the crawler's.
    let subject = match (who, verification.result) {
        (Who::Crawler(_), Verified::Verified) => Subject::Crawler(judged.token_lower.clone()),
        (Who::Crawler(_), Verified::Unverifiable) => {
            Subject::Claim(judged.token_lower.clone(), client)
        }
        _ => Subject::Client(client),
    };

    let mut decision = Decision {
        site: site.clone(),
        snapshot: snapshot.clone(),
        decided_by_previous: None,
        peer,
        client,
        subject,
        who,
        selected: judged.selected,
        verification,
        signature: signature.outcome(),
        replayed,
        verdict: VerdictLabel::Exempt,
        rule: None,
        action: crawler.map_or(site.settings.action, |c| c.action),
        outcome: Outcome::Forwarded,
        robots_txt,
        robots_unread: false,
        last_robots_fetch: None,
        crawl_delay: None,
        content_usage: None,
    };
    if !who.is_crawler() {
        return Some(decision);
    }
    let store = &shared.store;
    let now = SystemTime::now();
    if robots_txt {
        if mode.record {
            store
                .robots_fetched(site_name, &decision.subject, now)
                .await;
        }
        return Some(decision);
    }

    let verdict = snapshot
        .robots
        .check_selected(decision.selected, facts.path);
    decision.rule = verdict.rule_index;
    decision.verdict = if verdict.allowed {
        VerdictLabel::Allowed
    } else {
        VerdictLabel::Disallowed
    };
    // What the previous file says, should the crawler have read it: whether grace can apply is
    // known before the store is asked, so that one round trip answers everything.
    let previous = if verdict.allowed {
        None
    } else {
        grace_candidate(&site, &snapshot, judged, facts.path, now, shared)
    };
    let delay_mode = site.settings.crawl_delay;
    let delay = snapshot
        .robots
        .crawl_delay_selected(decision.selected)
        .filter(|d| !d.is_zero() && delay_mode != CrawlDelayMode::Off && !spoofed);
    let pace = delay.and_then(|delay| {
        let forwarded = |label| policy::decide(who, label, decision.action) != Outcome::Blocked;
        if forwarded(decision.verdict) {
            Some(PaceQuery {
                delay,
                only_if_fetched: None,
            })
        } else {
            // Blocked unless grace lets it in: paced only then.
            let window = previous.as_ref()?.fetched;
            forwarded(VerdictLabel::Grace).then_some(PaceQuery {
                delay,
                only_if_fetched: Some(window),
            })
        }
    });
    let visit = store
        .visit(site_name, &decision.subject, pace, mode.record)
        .await;
    let last_fetch = visit.last_fetch;
    decision.last_robots_fetch = last_fetch;
    let window = shared.politeness_settings.robots_read_window;
    decision.robots_unread =
        last_fetch.is_none_or(|at| now.duration_since(at).unwrap_or_default() > window);
    if let Some(GraceCandidate {
        snapshot: previous,
        rule,
        fetched: (from, until),
    }) = previous
    {
        if last_fetch.is_some_and(|at| at >= from && at < until) {
            decision.verdict = VerdictLabel::Grace;
            decision.rule = rule;
            decision.decided_by_previous = Some(previous);
        }
    }
    // A path robots.txt lets the crawler fetch may still carry a preference that refuses what
    // the crawler is for; a site that enforces preferences treats it as disallowed. (A spoofed
    // claim is judged as the unnamed crawler, which no preference refuses.)
    if decision.verdict == VerdictLabel::Allowed && site.settings.content_usage.enforce {
        if let Some(refusal) = refused_use(&snapshot, judged, facts.path) {
            decision.verdict = VerdictLabel::ContentUsage;
            decision.rule = None;
            decision.content_usage = Some(refusal);
        }
    }
    if spoofed {
        decision.action = global.on_spoofed;
        decision.outcome = match global.on_spoofed {
            Action::Block => Outcome::Blocked,
            Action::Tag => Outcome::Tagged,
            Action::Count => Outcome::Counted,
        };
        return Some(decision);
    }
    decision.outcome = policy::decide(who, decision.verdict, decision.action);

    if let (Some(delay), Some(pace)) = (delay, visit.pace) {
        let (exceeded, retry_after) = match pace {
            Pace::Ok => (false, None),
            Pace::TooSoon(wait) => (true, Some(wait)),
        };
        decision.crawl_delay = Some(CrawlDelay {
            seconds: delay.as_secs_f64(),
            exceeded,
            retry_after_seconds: retry_after.map(ceil_seconds),
            mode: delay_mode,
        });
        if exceeded {
            decision.outcome = match delay_mode {
                CrawlDelayMode::Enforce => Outcome::Throttled,
                CrawlDelayMode::Tag => Outcome::Tagged,
                CrawlDelayMode::Count | CrawlDelayMode::Off => decision.outcome,
            };
        }
    }
    Some(decision)
}

/// The first use `crawler` is for that the preference on `path` refuses ([`policy::uses_of`]).
fn refused_use(snapshot: &Snapshot, crawler: Crawler<'_>, path: &str) -> Option<Refusal> {
    let uses = policy::uses_of(crawler.category);
    if uses.is_empty() || !snapshot.robots.has_preferences(crawler.selected) {
        return None;
    }
    let preference = snapshot
        .robots
        .stated_preference_of(crawler.selected, path, uses);
    let (usage, stated) = preference.refused(uses)?;
    Some(Refusal {
        usage,
        rule: stated.rule?,
    })
}

/// The row of the crawler `token` in a snapshot's table: the classifier's answer for the bare
/// token when it is that crawler (one automaton pass), else a scan of the table.
fn row_of(snapshot: &Snapshot, token: &str) -> Option<usize> {
    let row = snapshot.classify(token.as_bytes()).row();
    match row.and_then(|index| snapshot.crawlers.get(index)) {
        Some(crawler) if crawler.token.eq_ignore_ascii_case(token) => row,
        _ => snapshot.crawlers.position(token),
    }
}

fn ceil_seconds(wait: Duration) -> u64 {
    let whole = wait.as_secs();
    if wait.subsec_nanos() > 0 {
        whole.saturating_add(1)
    } else {
        whole.max(1)
    }
}

/// The previous file, when it allows what the current one refuses.
struct GraceCandidate {
    /// The previous snapshot.
    snapshot: Arc<Snapshot>,
    /// Its deciding rule.
    rule: Option<usize>,
    /// The fetch times that earn grace: `[from, until)`.
    fetched: (SystemTime, SystemTime),
}

/// RFC 9309 lets a crawler use a cached robots.txt for up to 24 hours: a crawler that fetched the
/// previous file within the grace period, and before the current one was loaded, is judged by the
/// file it read. When the previous file allows the path, returns it, its deciding rule and the
/// fetch times that earn grace (`[from, until)`); the caller checks the crawler's fetch against
/// them once the store has answered.
fn grace_candidate(
    site: &Site,
    current: &Snapshot,
    crawler: Crawler<'_>,
    path: &str,
    now: SystemTime,
    shared: &Shared,
) -> Option<GraceCandidate> {
    let previous = site.previous.load_full()?;
    let oldest = now
        .checked_sub(shared.politeness_settings.grace)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let from = previous.loaded_at.max(oldest);
    let until = current.loaded_at;
    if from >= until {
        return None;
    }
    let verdict = previous
        .robots
        .check_selected(crawler.select_in(&previous.robots), path);
    let rule = verdict.rule_index;
    verdict.allowed.then_some(GraceCandidate {
        snapshot: previous,
        rule,
        fetched: (from, until),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn robots_txt_is_the_normalised_predicate_with_a_fast_path() {
        let general = |target: &str| {
            path::is_robots_txt(&path::normalize(path::path_and_query(target).as_bytes()))
        };
        for target in [
            "/robots.txt",
            "/robots.txt?x=1",
            "/%72obots.txt",
            "/robots%2Etxt",
            "/robots.txt%3Fx",
            "/robots.txt/x",
            "/a/robots.txt",
            "https://example.com/robots.txt?x",
            "/robots.txt#top",
            "/robots.tx",
            "/ robots.txt",
            "",
        ] {
            assert_eq!(is_robots_txt(target), general(target), "{target}");
        }
        assert!(is_robots_txt("/%72obots.txt") && !is_robots_txt("/robots.txt%3Fx"));
    }
}

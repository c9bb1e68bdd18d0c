//! The decision on one request, apart from pingora, in two halves: [`gather`] does the I/O —
//! which site, which client address, who the crawler is and whether that is true (signatures,
//! reverse DNS), what the state store remembers — and [`crate::judge`] rules on what was
//! gathered, purely: what robots.txt says (or said, for a crawler that read the previous file),
//! whether it keeps its crawl-delay, what happens and what crawlgate answers. The proxy runs
//! [`decide`] on every request; `crawlgate explain` runs the same code and prints it.

use super::client::Forwarding;
use super::ledger::Charge;
use super::politeness::Subject;
use super::site::{Site, Snapshot, SourceState};
use super::state::Shared;
use super::verify::signature::check::{is_signed, RequestView};
use super::verify::signature::directory::Directory;
use super::verify::signature::reuse::SignatureUse;
use super::verify::signature::{reuse, SignatureOutcome, SignatureVerdict};
use super::verify::{Method, Verification, Verified};
use crate::agent::{Category, Who};
use crate::crawlers::Crawler;
use crate::judge::{
    self, Ask, Judgement, Law, Observed, Previous, Reading, Rules, Served, Spoofed, Visit,
};
use crate::policy::{Action, Outcome};
use crate::pricing::{self, Field, Offer, Payment};
use crate::robots::{path, PreferenceRule, Selected};
use std::borrow::Cow;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::SystemTime;

pub use crate::judge::{CrawlDelay, Refusal};

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
    /// Its method.
    pub method: &'a str,
    /// Its headers, where its pay-per-crawl price headers are read (only when its site prices
    /// pages and a crawler asks). `None` where crawlgate takes no payment: forward-auth answers,
    /// where the origin's answer, which a charge is for, never reaches crawlgate.
    pub payment_headers: Option<&'a http::HeaderMap>,
}

/// `crawler-exact-price` and `crawler-max-price`, named once: a lookup by a `&str` would parse
/// the name on every request that reads it.
static EXACT_PRICE: http::HeaderName = http::HeaderName::from_static(pricing::CRAWLER_EXACT_PRICE);
static MAX_PRICE: http::HeaderName = http::HeaderName::from_static(pricing::CRAWLER_MAX_PRICE);

/// One price header of a request.
fn price_field<'a>(headers: &'a http::HeaderMap, name: &http::HeaderName) -> Field<'a> {
    Field::of(
        headers
            .get_all(name)
            .iter()
            .map(http::HeaderValue::as_bytes),
    )
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

/// A decision, with everything that went into it: what was gathered, and the judgement.
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
    /// Whether the request is for /robots.txt.
    pub robots_txt: bool,
    /// The charge to record when the origin answers with success: a priced page the crawler
    /// agreed to pay for ([`Payment::Agreed`]).
    pub charge: Option<Charge>,
    /// The judgement: verdict, rule, outcome, crawlgate's answer, the labels.
    pub judgement: Judgement,
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
        let spoofed = self.verification.result == Verified::Spoofed;
        judge::judged(&self.snapshot.crawlers, self.who, spoofed)
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
        self.judgement.labels.category
    }

    /// The category of the crawler it claims to be.
    pub fn crawler_category(&self) -> Option<Category> {
        self.crawler().map(|crawler| crawler.category)
    }

    /// The deciding rule.
    pub fn rule(&self) -> Option<&crate::robots::Rule> {
        let snapshot = self.decided_by_previous.as_ref().unwrap_or(&self.snapshot);
        let rule = self.judgement.rule?;
        snapshot.robots.file().rules.get(rule)
    }

    /// The preference rule behind a `content-usage` verdict.
    pub fn preference_rule(&self) -> Option<&PreferenceRule> {
        let refusal = self.judgement.content_usage?;
        self.snapshot.robots.preference_rule(refusal.rule)
    }

    /// The verdict headers of a tagged request (`X-Crawlgate-Bot`, `-Verdict`, `-Verified`,
    /// `-Verified-By`, `-Rule`, `-Crawl-Delay`, `-Robots-Unread`, with the site's prefix): what
    /// the origin is told, by the proxy or by an edge asking in forward-auth. None for a request
    /// that is not tagged.
    pub fn tag_headers(&self) -> Vec<(String, String)> {
        let judgement = &self.judgement;
        if judgement.outcome != Outcome::Tagged {
            return Vec::new();
        }
        let prefix = &self.site.settings.tag_prefix;
        let mut headers = vec![
            (format!("{prefix}Bot"), self.bot().to_string()),
            (
                format!("{prefix}Verdict"),
                judgement.labels.verdict.to_owned(),
            ),
            (
                format!("{prefix}Verified"),
                self.verification.result.as_str().to_owned(),
            ),
        ];
        if self.verification.method != Method::None {
            headers.push((
                format!("{prefix}Verified-By"),
                self.verification.method.as_str().to_owned(),
            ));
        }
        if let Some(rule) = self.rule() {
            let value = format!(
                "{} {} line {}",
                rule.kind.directive().to_ascii_lowercase(),
                judge::sanitize(&rule.pattern),
                rule.line
            );
            headers.push((format!("{prefix}Rule"), value));
        }
        if let Some(rule) = self.preference_rule() {
            let value = format!("{} line {}", judge::sanitize(&rule.text()), rule.line);
            headers.push((format!("{prefix}Rule"), value));
        }
        if judgement.labels.crawl_delay_exceeded.is_some() {
            headers.push((format!("{prefix}Crawl-Delay"), "exceeded".to_owned()));
        }
        if judgement.robots_unread {
            headers.push((format!("{prefix}Robots-Unread"), "1".to_owned()));
        }
        headers
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
/// percent-encoded): [`path::is_robots_txt`] on the normalised path, for a caller that holds
/// only the raw target (the request path asks [`judge::read`], which has the normalised path at
/// hand). A path without escapes is compared as it is: normalising it could only add escapes,
/// and `/robots.txt` has none.
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

/// What was gathered of one request, before it is judged: the site and the snapshot it is
/// judged by, who asks and whether that is true, its path (normalised once, here), what
/// robots.txt says (read before the store is asked, since the store's one question depends on
/// it) and what the store answered. [`Gathered::judge`] makes it a [`Decision`].
#[derive(Debug)]
pub struct Gathered<'a> {
    /// The site.
    pub site: Arc<Site>,
    /// The snapshot of robots.txt in force.
    pub snapshot: Arc<Snapshot>,
    /// The snapshot it replaced, for a crawler (grace); `None` for a person.
    pub previous: Option<Arc<Snapshot>>,
    /// The TCP peer.
    pub peer: IpAddr,
    /// The client address used.
    pub client: IpAddr,
    /// Whose politeness state the request counts in.
    pub subject: Subject,
    /// Who asks.
    pub who: Who,
    /// Verification.
    pub verification: Verification,
    /// What its Web Bot Auth signature said.
    pub signature: SignatureOutcome,
    /// A replayed signature on a request whose User-Agent claims the crawler it speaks for.
    pub replayed: bool,
    /// The verified signature's use and signer, for a charge's record.
    pub signed: Option<Signed>,
    /// The request's method.
    pub method: &'a str,
    /// What it offers to pay, with what its signature vouches for (`None`: no payment taken).
    pub offer: Option<Offer<'a>>,
    /// The path and query as sent.
    pub target: &'a str,
    /// The path and query reduced and normalised: the request's one normalisation.
    pub path: Cow<'a, [u8]>,
    /// When the request was gathered.
    pub now: SystemTime,
    /// The site's policy.
    pub rules: Rules,
    /// What robots.txt says.
    pub reading: Reading,
    /// What the state store answered.
    pub visit: Visit,
}

/// A verified signature: its use (what a charge for it is keyed by) and who signed.
#[derive(Debug, Clone)]
pub struct Signed {
    /// The use.
    pub reuse: SignatureUse,
    /// The key directory.
    pub directory: Arc<str>,
    /// The key's id.
    pub keyid: String,
}

impl Gathered<'_> {
    /// What was observed, as the judgement reads it.
    pub fn observed(&self) -> Observed<'_> {
        observed(
            self.target,
            &self.path,
            self.who,
            self.client,
            &self.verification,
            self.replayed,
            self.now,
            self.method,
            self.offer,
        )
    }

    /// What the request is judged by.
    pub fn law(&self) -> Law<'_> {
        law(
            &self.site,
            &self.snapshot,
            self.previous.as_deref(),
            self.rules,
        )
    }

    /// Judges it ([`judge::judge`]): the decision.
    pub fn judge(self) -> Decision {
        let judgement = judge::judge(&self.observed(), &self.law(), &self.reading, self.visit);
        let decided_by_previous = if judgement.by_previous {
            self.previous
        } else {
            None
        };
        let charge = match (judgement.payment, &self.signed) {
            (Some(Payment::Agreed(price)), Some(signed)) => Some(Charge::new(
                &self.site.name,
                self.method,
                self.target,
                price,
                signed,
            )),
            _ => None,
        };
        Decision {
            site: self.site,
            snapshot: self.snapshot,
            decided_by_previous,
            peer: self.peer,
            client: self.client,
            subject: self.subject,
            who: self.who,
            selected: self.reading.selected,
            verification: self.verification,
            signature: self.signature,
            replayed: self.replayed,
            robots_txt: self.reading.robots_txt,
            charge,
            judgement,
        }
    }
}

/// The observation the judgement reads.
#[allow(clippy::too_many_arguments)]
fn observed<'a>(
    target: &'a str,
    path: &'a [u8],
    who: Who,
    client: IpAddr,
    verification: &'a Verification,
    replayed: bool,
    now: SystemTime,
    method: &str,
    offer: Option<Offer<'a>>,
) -> Observed<'a> {
    let spoofed = (verification.result == Verified::Spoofed).then(|| Spoofed {
        by_signature: verification.method == Method::Signature,
        detail: &verification.detail,
    });
    Observed {
        target,
        path,
        who,
        client,
        spoofed,
        replayed,
        now,
        verified: verification.result == Verified::Verified,
        get: method == "GET",
        offer,
    }
}

/// The law of a site: its snapshot in force, the previous one, its policy, and how its
/// robots.txt is answered.
fn law<'a>(
    site: &Site,
    snapshot: &'a Snapshot,
    previous: Option<&'a Snapshot>,
    rules: Rules,
) -> Law<'a> {
    let served = served(snapshot, site.settings.robots.refresh);
    Law {
        robots: &snapshot.robots,
        crawlers: &snapshot.crawlers,
        loaded_at: snapshot.loaded_at,
        previous: previous.map(|previous| Previous {
            robots: &previous.robots,
            loaded_at: previous.loaded_at,
        }),
        served,
        stand_in: snapshot.stand_in_reason(),
        rules,
        answers: true,
        pricing: snapshot.pricing.as_ref(),
    }
}

/// How `/robots.txt` is answered: with the copy being enforced, whatever the source, so that
/// what crawlers read is what they are judged by. A loaded file (from a file, inline text, the
/// origin, the state directory, or kept while the origin is unreachable) is served as enforced.
/// An origin's 4xx is answered `404`: crawlers read "no file, no restrictions", which is what is
/// enforced, and need not reach an origin that may since have changed. With nothing good at
/// hand (unreachable, or not fetched yet) the answer is `503` with `Retry-After` (the refresh
/// interval): a crawler reads "unreachable" and assumes complete disallow (RFC 9309 §2.3.1.4),
/// as crawlgate enforces by default, and comes back soon instead of caching a stand-in for a
/// day.
pub fn served(snapshot: &Snapshot, refresh: std::time::Duration) -> Served {
    match snapshot.state {
        // The site's managed groups are served over an origin's 4xx: they are what is enforced.
        SourceState::Unavailable if snapshot.managed.is_some() => Served::File,
        SourceState::Loaded => Served::File,
        SourceState::Unavailable => Served::NoFile,
        SourceState::Unreachable | SourceState::Pending => Served::Unreachable {
            retry_after: refresh.as_secs().max(1),
        },
    }
}

/// A site's policy, from its settings and the process's.
fn rules_of(site: &Site, shared: &Shared, on_spoofed: Action) -> Rules {
    let settings = &site.settings;
    Rules {
        action: settings.action,
        block_status: settings.block_status,
        enforce_content_use: settings.content_usage.enforce,
        announce_content_use: settings.content_usage.announce,
        crawl_delay: settings.crawl_delay,
        on_spoofed,
        read_window: shared.politeness_settings.robots_read_window,
        grace: shared.politeness_settings.grace,
        enforcement: settings.enforcement,
    }
}

/// Decides a request ([`gather`], then [`Gathered::judge`]), or `None` when no site serves its
/// host.
pub async fn decide(shared: &Shared, facts: &RequestFacts<'_>, mode: Mode) -> Option<Decision> {
    Some(gather(shared, facts, mode).await?.judge())
}

/// Gathers what the judgement needs of a request: the site its host chooses, the client
/// address, who asks (by its User-Agent, or the crawler a verified signature speaks for) and
/// whether that is true, what robots.txt says ([`judge::read`]), and what the state store
/// answers. `None` when no site serves its host.
pub async fn gather<'a>(
    shared: &Shared,
    facts: &RequestFacts<'a>,
    mode: Mode,
) -> Option<Gathered<'a>> {
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
            covers,
        } if mode.record => {
            let holder = reuse::holder(client, &site.name, facts.user_agent);
            if shared.store.use_signature(&reuse, &holder).await {
                SignatureVerdict::Verified {
                    directory,
                    keyid,
                    reuse,
                    covers,
                }
            } else {
                SignatureVerdict::Replayed { directory }
            }
        }
        other => other,
    };
    // What a verified signature vouches for of the price headers, and who signed it.
    // Only a site that prices pages needs them.
    let (covers, signed_use) = match &signature {
        _ if snapshot.pricing.is_none() => (None, None),
        SignatureVerdict::Verified {
            directory,
            keyid,
            reuse,
            covers,
        } => (
            Some(*covers),
            Some(Signed {
                reuse: reuse.clone(),
                directory: directory.url.clone(),
                keyid: keyid.clone(),
            }),
        ),
        _ => (None, None),
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

    // The price headers are read only where they can matter: a crawler, on a site that prices.
    let offer = match (facts.payment_headers, &snapshot.pricing) {
        (Some(headers), Some(_)) if who.is_crawler() => Some(Offer {
            exact: price_field(headers, &EXACT_PRICE),
            max: price_field(headers, &MAX_PRICE),
            signed: covers.is_some(),
            covers: covers.unwrap_or_default(),
        }),
        _ => None,
    };
    let path = judge::normalized(facts.path);
    // Only a crawler is judged by time (grace, the read window) and by the previous file: a
    // person's request (most of them) reads neither the clock nor the previous snapshot.
    let (now, previous) = if who.is_crawler() {
        (SystemTime::now(), site.previous.load_full())
    } else {
        (SystemTime::UNIX_EPOCH, None)
    };
    let rules = rules_of(&site, shared, global.on_spoofed);
    let reading = judge::read(
        &observed(
            facts.path,
            &path,
            who,
            client,
            &verification,
            replayed,
            now,
            facts.method,
            offer,
        ),
        &law(&site, &snapshot, previous.as_deref(), rules),
    );
    let store = &shared.store;
    let visit = match reading.ask {
        Ask::Nothing => Visit::default(),
        Ask::RobotsFetched => {
            if mode.record {
                store.robots_fetched(&site.name, &subject, now).await;
            }
            Visit::default()
        }
        Ask::Visit(pace) => store.visit(&site.name, &subject, pace, mode.record).await,
    };
    Some(Gathered {
        site,
        snapshot,
        previous,
        peer,
        client,
        subject,
        who,
        verification,
        signature: signature.outcome(),
        replayed,
        signed: signed_use,
        method: facts.method,
        offer,
        target: facts.path,
        path,
        now,
        rules,
        reading,
        visit,
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

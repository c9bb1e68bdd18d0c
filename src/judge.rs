//! The judgement on one request, apart from any I/O: given what was observed of a request (who
//! asks, whether that is true, the path, when the crawler last read robots.txt and whether it
//! keeps its crawl-delay) and the law it is judged by (the site's robots.txt and crawler table,
//! the previous file, the site's policy), what robots.txt says, what happens, what crawlgate
//! answers when it answers itself, and what is counted.
//!
//! The proxy gathers the observations ([`crate::proxy::decide::gather`]: routing, signatures,
//! verification, the state store) and writes the [`Judgement`]'s response; `crawlgate explain`
//! prints the same judgement; `audit` replays logs through it; the tests of people call it. No
//! clock is read here: the time is observed, and passed in.
//!
//! It is two calls, because the state store is asked one question per crawler request and the
//! question depends on robots.txt's answer (a request that is blocked takes no crawl-delay slot):
//! [`read`] reads robots.txt for the request (the matcher runs here, once per file) and says what
//! to ask the store ([`Reading::ask`]); [`judge`] takes the reading and the store's answer
//! ([`Visit`]) and rules.

use crate::agent::Who;
use crate::crawlers::{Crawler, Crawlers};
use crate::policy::{self, Action, Enforcement, Outcome, VerdictLabel};
use crate::pricing::{self, Offer, Payment, PaymentError, Pricing};
use crate::robots::{
    path, Preference, PreferenceRule, Reason, Robots, Rule, Selected, Usage, Verdict,
};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::net::IpAddr;
use std::time::{Duration, SystemTime};

/// What to do when a crawler comes sooner than its crawl-delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CrawlDelayMode {
    /// Answer 429 with Retry-After.
    Enforce,
    /// Forward with `X-Crawlgate-Crawl-Delay: exceeded`.
    Tag,
    /// Forward; count it.
    Count,
    /// Do not look.
    Off,
}

impl CrawlDelayMode {
    /// The value as written.
    pub fn as_str(self) -> &'static str {
        match self {
            CrawlDelayMode::Enforce => "enforce",
            CrawlDelayMode::Tag => "tag",
            CrawlDelayMode::Count => "count",
            CrawlDelayMode::Off => "off",
        }
    }
}

/// The crawl-delay verdict of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// Within the crawl-delay (or none applies).
    Ok,
    /// Sooner than the crawl-delay allows: the crawler may come back after this long.
    TooSoon(Duration),
}

/// The crawl-delay part of a crawler's visit: the delay, and when it applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaceQuery {
    /// robots.txt's crawl-delay for this crawler (not zero).
    pub delay: Duration,
    /// `None`: the request is forwarded whatever the crawler read, so the delay applies. `Some`:
    /// the request is forwarded only by grace (RFC 9309's cached copy), which holds when the
    /// crawler last fetched robots.txt at or after the first instant and before the second; the
    /// delay applies only then. The store decides it with the fetch time it reads in the same
    /// round trip, so a crawler's request never costs two.
    pub only_if_fetched: Option<(SystemTime, SystemTime)>,
}

impl PaceQuery {
    /// Whether the crawl-delay applies, given when the crawler last fetched robots.txt.
    pub fn applies(&self, last_fetch: Option<SystemTime>) -> bool {
        match self.only_if_fetched {
            None => true,
            Some((from, until)) => last_fetch.is_some_and(|at| at >= from && at < until),
        }
    }
}

/// What the state store answered about a crawler's request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Visit {
    /// When it last fetched robots.txt.
    pub last_fetch: Option<SystemTime>,
    /// Whether it keeps its crawl-delay: `None` when no delay was asked about, or it did not
    /// apply ([`PaceQuery::applies`]).
    pub pace: Option<Pace>,
}

/// A site's policy, as plain values: what the configuration says to do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rules {
    /// The site's action (a person's, for the labels; crawlers have their own in the table).
    pub action: Action,
    /// The status of a blocked request's answer.
    pub block_status: u16,
    /// Whether a path's content-use preference that refuses what a crawler is for is treated as
    /// disallowed.
    pub enforce_content_use: bool,
    /// Whether responses carry the path's preference in a `Content-Usage` header.
    pub announce_content_use: bool,
    /// What a crawler that comes sooner than its crawl-delay gets.
    pub crawl_delay: CrawlDelayMode,
    /// What happens to a crawler whose claim is proven false.
    pub on_spoofed: Action,
    /// How long a robots.txt fetch counts as read.
    pub read_window: Duration,
    /// How long a crawler may go by the previous file (RFC 9309's cache allowance).
    pub grace: Duration,
    /// Whether refusals are made or only recorded (`mode: observe`).
    pub enforcement: Enforcement,
}

impl Default for Rules {
    /// The defaults of a site's configuration.
    fn default() -> Self {
        Rules {
            action: Action::Block,
            block_status: 403,
            enforce_content_use: false,
            announce_content_use: false,
            crawl_delay: CrawlDelayMode::Count,
            on_spoofed: Action::Block,
            read_window: Duration::from_secs(24 * 3600),
            grace: Duration::from_secs(24 * 3600),
            enforcement: Enforcement::Enforce,
        }
    }
}

/// How `/robots.txt` itself is answered, by where the file in force came from: crawlers read
/// the copy they are judged by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// A file was loaded: it is served as enforced (200).
    File,
    /// The origin has none (4xx): `404`, "no restrictions", which is what is enforced.
    NoFile,
    /// Nothing good at hand (unreachable, or not fetched yet): `503` with `Retry-After`, so that
    /// a crawler assumes complete disallow (RFC 9309 §2.3.1.4), as enforced, and comes back soon.
    Unreachable {
        /// Seconds until the next fetch is tried.
        retry_after: u64,
    },
}

/// The file a site enforced before the one in force, for crawlers that read it.
#[derive(Debug, Clone, Copy)]
pub struct Previous<'a> {
    /// Its compiled file.
    pub robots: &'a Robots,
    /// When it was loaded.
    pub loaded_at: SystemTime,
}

/// What a request is judged by.
#[derive(Debug, Clone, Copy)]
pub struct Law<'a> {
    /// The robots.txt in force (or its stand-in).
    pub robots: &'a Robots,
    /// The site's crawler table, judged by it.
    pub crawlers: &'a Crawlers,
    /// When the file in force was loaded: the end of the previous file's grace.
    pub loaded_at: SystemTime,
    /// The previous file, if the site had one.
    pub previous: Option<Previous<'a>>,
    /// How `/robots.txt` is answered.
    pub served: Served,
    /// Why the file in force is a stand-in, for block messages.
    pub stand_in: Option<&'static str>,
    /// The site's policy.
    pub rules: Rules,
    /// Whether crawlgate's own answers are composed (the proxy, `explain`); a replay of logs
    /// only counts, and composes no message for each line it reads.
    pub answers: bool,
    /// What the site charges verified crawlers, when it prices pages (pay per crawl).
    pub pricing: Option<&'a Pricing>,
}

/// A claim proven false.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spoofed<'a> {
    /// By a signature (invalid, or replayed), rather than by the client's address.
    pub by_signature: bool,
    /// Why, for people.
    pub detail: &'a str,
}

/// What was observed of one request.
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a> {
    /// The path and query as sent, for the messages.
    pub target: &'a str,
    /// The path and query reduced ([`path::path_and_query`]) and normalised
    /// ([`path::normalize`]): the one normalisation of the request.
    pub path: &'a [u8],
    /// Who asks: a person, an unnamed crawler, or a row of the law's crawler table (the claimed
    /// one, or the one a verified signature speaks for).
    pub who: Who,
    /// The client address used.
    pub client: IpAddr,
    /// Its claim proven false, when it was.
    pub spoofed: Option<Spoofed<'a>>,
    /// A signature used before, on a request whose User-Agent claims the crawler it speaks for.
    pub replayed: bool,
    /// Now.
    pub now: SystemTime,
    /// Its claim was verified (by signature, published ranges or reverse DNS): only such a
    /// crawler is offered a price.
    pub verified: bool,
    /// It is a `GET`: the one method a page is priced for (a `HEAD` fetches no content).
    pub get: bool,
    /// What it offers to pay, and what vouches for it; `None` where crawlgate takes no
    /// payment (forward-auth: it never sees the origin's answer, so it cannot charge for it),
    /// and nothing is priced.
    pub offer: Option<Offer<'a>>,
}

/// A stated preference that refuses what the crawler is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// The refused use.
    pub usage: Usage,
    /// The refusing rule's index in the snapshot's [`crate::robots::ParsedFile::preferences`].
    pub rule: usize,
}

/// The previous file, when it allows what the current one refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grace {
    /// Its deciding rule.
    pub rule: Option<usize>,
    /// The fetch times that earn grace: `[from, until)`.
    pub fetched: (SystemTime, SystemTime),
}

/// What to ask the state store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    /// Nothing: a person.
    Nothing,
    /// Record a robots.txt fetch.
    RobotsFetched,
    /// When the crawler last read robots.txt, and (when a delay applies) whether it keeps it.
    Visit(Option<PaceQuery>),
}

/// What robots.txt says of a request, before the store is asked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// The request is for `/robots.txt`, which robots.txt does not judge.
    pub robots_txt: bool,
    /// The groups it is judged by in the file in force.
    pub selected: Selected,
    /// Whether the file in force lets it fetch the path.
    pub allowed: bool,
    /// The file in force's deciding rule.
    pub rule: Option<usize>,
    /// Judging the path took more work than a query may do (`robots::WORK_BUDGET`): it is
    /// disallowed by no rule.
    pub over_budget: bool,
    /// The previous file's verdict, when it allows what the current one refuses and the crawler
    /// may have read it.
    pub grace: Option<Grace>,
    /// The use the path's preference refuses (when the site enforces preferences).
    pub refusal: Option<Refusal>,
    /// The preference to announce in `Content-Usage` (unknown: none).
    pub announce: Preference,
    /// The crawl-delay that applies to it.
    pub delay: Option<Duration>,
    /// What the store is asked.
    pub ask: Ask,
}

/// The crawl-delay part of a judgement.
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

/// The body of an answer crawlgate gives itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// The robots.txt file in force, as loaded (the caller holds its bytes).
    RobotsTxt,
    /// A fixed text.
    Static(&'static str),
    /// A text about this request.
    Text(String),
}

/// An answer crawlgate gives itself, instead of forwarding: `text/plain; charset=utf-8`,
/// `Cache-Control: no-store`, and `Retry-After` when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status.
    pub status: u16,
    /// The body.
    pub body: Body,
    /// Seconds to wait before asking again.
    pub retry_after: Option<u64>,
    /// Headers of its own (pay per crawl's `crawler-price`, `crawler-error`).
    pub headers: Vec<(&'static str, String)>,
}

impl Response {
    /// The media type of every answer (robots.txt's is text too).
    pub const CONTENT_TYPE: &'static str = "text/plain; charset=utf-8";
    /// Nobody caches a verdict about one request.
    pub const CACHE_CONTROL: &'static str = "no-store";
}

/// What is counted of a request, beyond who asked (the bot label is the table's, by `who`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Labels {
    /// The category label (`person` for a person).
    pub category: &'static str,
    /// The verdict label.
    pub verdict: &'static str,
    /// The outcome label.
    pub outcome: &'static str,
    /// A person's forwarded request: always the same labels.
    pub person: bool,
    /// A robots.txt fetch.
    pub robots_fetch: bool,
    /// A crawler's request without a robots.txt fetch in the read window.
    pub without_robots_fetch: bool,
    /// The refused use, for a `content-usage` verdict.
    pub content_usage: Option<&'static str>,
    /// A crawler's request disallowed because judging its path ran out of the work budget.
    pub over_budget: bool,
    /// The crawl-delay mode, when the request came too soon.
    pub crawl_delay_exceeded: Option<&'static str>,
}

/// The judgement on one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// robots.txt's verdict.
    pub verdict: VerdictLabel,
    /// Index of the deciding rule in the deciding file's rules.
    pub rule: Option<usize>,
    /// The previous file decided (a grace verdict).
    pub by_previous: bool,
    /// The action configured for this requester.
    pub action: Action,
    /// What happens.
    pub outcome: Outcome,
    /// The use the path's content-use preference refuses, when the verdict is `content-usage`.
    pub content_usage: Option<Refusal>,
    /// The verdict is `disallowed` because judging the path took more work than a query may
    /// (a crafted path, or one past `robots::MAX_JUDGED_PATH`): no rule decided.
    pub over_budget: bool,
    /// The crawl-delay, when one applies.
    pub crawl_delay: Option<CrawlDelay>,
    /// Whether the crawler had not fetched robots.txt within the read window.
    pub robots_unread: bool,
    /// When the crawler last fetched robots.txt.
    pub last_robots_fetch: Option<SystemTime>,
    /// The preference announced in the response's `Content-Usage` header (unknown: none).
    pub announce: Preference,
    /// crawlgate's own answer, when the request is not forwarded.
    pub response: Option<Response>,
    /// What a priced page's request came to (pay per crawl); `None` when nothing is priced.
    pub payment: Option<Payment>,
    /// What is counted.
    pub labels: Labels,
}

/// The row robots.txt is read for: the claimed one, or the unnamed crawlers' when the claim is
/// spoofed (a fake Googlebot is not Googlebot) or it is a person.
pub fn judged<'a>(crawlers: &'a Crawlers, who: Who, spoofed: bool) -> Crawler<'a> {
    match crawlers.row(who) {
        Some(crawler) if !spoofed => crawler,
        _ => crawlers.unnamed(),
    }
}

/// Reads robots.txt for a request: the verdict of the file in force, the previous file's when
/// grace could apply, the content-use preference, the crawl-delay, and what the store must be
/// asked. Pure; the matcher runs once on each file.
pub fn read(observed: &Observed<'_>, law: &Law<'_>) -> Reading {
    read_with(observed, law, |selected, path| {
        Matched::of(&law.robots.check_normalized(selected, path))
    })
}

/// robots.txt's verdict on one normalised path, without borrows: what [`read_with`]'s caller
/// answers, and what `audit`'s memo remembers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Matched {
    /// Whether the crawler may fetch the path.
    pub allowed: bool,
    /// The deciding rule's index in the file's rules, if a rule decided.
    pub rule: Option<usize>,
    /// The query ran out of its work budget, and is disallowed by no rule.
    pub over_budget: bool,
}

impl Matched {
    /// The borrow-free part of `verdict`.
    pub fn of(verdict: &Verdict<'_>) -> Matched {
        Matched {
            allowed: verdict.allowed,
            rule: verdict.rule_index,
            over_budget: verdict.reason == Reason::OverBudget,
        }
    }
}

/// [`read`], with the verdict of the file in force (allowed, and the deciding rule's index) for
/// the groups and the normalised path given by `matched`: a caller that remembers verdicts
/// (`audit`'s memo) answers from memory what the matcher answered before.
pub fn read_with(
    observed: &Observed<'_>,
    law: &Law<'_>,
    matched: impl FnOnce(Selected, &[u8]) -> Matched,
) -> Reading {
    let robots_txt = path::is_robots_txt(observed.path);
    let spoofed = observed.spoofed.is_some();
    let crawler = judged(law.crawlers, observed.who, spoofed);
    let selected = crawler.selected;
    let mut reading = Reading {
        robots_txt,
        selected,
        allowed: true,
        rule: None,
        over_budget: false,
        grace: None,
        refusal: None,
        announce: Preference::UNKNOWN,
        delay: None,
        ask: Ask::Nothing,
    };
    let rules = &law.rules;
    let announces =
        rules.announce_content_use && !robots_txt && law.robots.has_preferences(selected);
    if !observed.who.is_crawler() {
        if announces && law.robots.check_normalized(selected, observed.path).allowed {
            reading.announce =
                law.robots
                    .stated_preference_normalized(selected, observed.path, &Usage::ALL);
        }
        return reading;
    }
    if robots_txt {
        reading.ask = Ask::RobotsFetched;
        return reading;
    }
    let Matched {
        allowed,
        rule,
        over_budget,
    } = matched(selected, observed.path);
    reading.allowed = allowed;
    reading.rule = rule;
    reading.over_budget = over_budget;
    if allowed {
        reading.refusal = read_preference(&mut reading, crawler, observed, law, announces);
    } else {
        reading.grace = grace(crawler, observed, law);
    }
    let delay = law.robots.crawl_delay_selected(selected).filter(|d| {
        !d.is_zero()
            && rules.crawl_delay != CrawlDelayMode::Off
            && !spoofed
            && policy::paced(crawler.category, crawler.action)
    });
    reading.delay = delay;
    let action = law
        .crawlers
        .row(observed.who)
        .map_or(rules.action, |c| c.action);
    let forwarded = |label| policy::decide(observed.who, label, action) != Outcome::Blocked;
    // robots.txt's own verdict decides whether the delay applies: a path whose preference
    // refuses the crawler is paced as the allowed path it is.
    let current = if allowed {
        VerdictLabel::Allowed
    } else {
        VerdictLabel::Disallowed
    };
    let pace = delay.and_then(|delay| {
        if forwarded(current) {
            Some(PaceQuery {
                delay,
                only_if_fetched: None,
            })
        } else {
            // Blocked unless grace lets it in: paced only then.
            let window = reading.grace?.fetched;
            forwarded(VerdictLabel::Grace).then_some(PaceQuery {
                delay,
                only_if_fetched: Some(window),
            })
        }
    });
    reading.ask = Ask::Visit(pace);
    reading
}

/// The preference on an allowed path: the one announced, and the use it refuses when the site
/// enforces preferences (a spoofed claim is read as the unnamed crawler, which none refuses).
/// One look-up answers both when the site does both.
fn read_preference(
    reading: &mut Reading,
    crawler: Crawler<'_>,
    observed: &Observed<'_>,
    law: &Law<'_>,
    announces: bool,
) -> Option<Refusal> {
    let uses = policy::uses_of(crawler.category);
    let enforces = law.rules.enforce_content_use
        && !uses.is_empty()
        && law.robots.has_preferences(crawler.selected);
    let preference = match (announces, enforces) {
        (false, false) => return None,
        (true, _) => {
            let all = law.robots.stated_preference_normalized(
                crawler.selected,
                observed.path,
                &Usage::ALL,
            );
            reading.announce = all;
            all
        }
        (false, true) => {
            law.robots
                .stated_preference_normalized(crawler.selected, observed.path, uses)
        }
    };
    if !enforces {
        return None;
    }
    let (usage, stated) = preference.refused(uses)?;
    Some(Refusal {
        usage,
        rule: stated.rule?,
    })
}

/// RFC 9309 lets a crawler use a cached robots.txt for up to 24 hours: a crawler that fetched the
/// previous file within the grace period, and before the current one was loaded, is judged by the
/// file it read. When the previous file allows the path, returns its deciding rule and the fetch
/// times that earn grace; [`judge`] checks the crawler's fetch against them.
fn grace(crawler: Crawler<'_>, observed: &Observed<'_>, law: &Law<'_>) -> Option<Grace> {
    let previous = law.previous?;
    let oldest = observed
        .now
        .checked_sub(law.rules.grace)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let from = previous.loaded_at.max(oldest);
    let until = law.loaded_at;
    if from >= until {
        return None;
    }
    let verdict = previous
        .robots
        .check_normalized(crawler.select_in(previous.robots), observed.path);
    verdict.allowed.then_some(Grace {
        rule: verdict.rule_index,
        fetched: (from, until),
    })
}

/// Rules on a request, from what was observed, what robots.txt says ([`read`]) and what the
/// store answered. Pure.
pub fn judge(observed: &Observed<'_>, law: &Law<'_>, reading: &Reading, visit: Visit) -> Judgement {
    let rules = &law.rules;
    let who = observed.who;
    let crawler = law.crawlers.row(who);
    let mut judgement = Judgement {
        verdict: VerdictLabel::Exempt,
        rule: None,
        by_previous: false,
        action: crawler.map_or(rules.action, |c| c.action),
        outcome: Outcome::Forwarded,
        content_usage: None,
        over_budget: false,
        crawl_delay: None,
        robots_unread: false,
        last_robots_fetch: None,
        announce: reading.announce,
        response: None,
        payment: None,
        labels: Labels {
            category: crawler.map_or("person", |c| c.category.as_str()),
            verdict: "",
            outcome: "",
            person: false,
            robots_fetch: reading.robots_txt,
            without_robots_fetch: false,
            content_usage: None,
            over_budget: false,
            crawl_delay_exceeded: None,
        },
    };
    if who.is_crawler() && !reading.robots_txt {
        rule(&mut judgement, observed, law, reading, visit);
        if rules.enforcement == Enforcement::Observe {
            judgement.outcome = judgement.outcome.observed();
        } else {
            price(&mut judgement, observed, law);
        }
    }
    if law.answers {
        judgement.response = respond(&judgement, observed, law, reading);
    }
    let labels = &mut judgement.labels;
    labels.verdict = judgement.verdict.as_str();
    labels.outcome = judgement.outcome.as_str();
    labels.person = !who.is_crawler();
    labels.without_robots_fetch = judgement.robots_unread;
    labels.content_usage = judgement.content_usage.map(|r| r.usage.label());
    labels.over_budget = judgement.over_budget;
    labels.crawl_delay_exceeded = judgement
        .crawl_delay
        .as_ref()
        .filter(|d| d.exceeded)
        .map(|d| d.mode.as_str());
    judgement
}

/// Pay per crawl: a verified crawler's `GET` that would be forwarded because robots.txt lets it
/// fetch the path (now, or by grace) is settled against the page's price, when the site prices
/// it and it is not a sitemap. Everyone else is judged as before: people, unverified and
/// spoofed claims, disallowed paths, throttled requests, observe mode.
fn price(judgement: &mut Judgement, observed: &Observed<'_>, law: &Law<'_>) {
    let (Some(pricing), Some(offer)) = (law.pricing, observed.offer) else {
        return;
    };
    let forwarded = matches!(judgement.outcome, Outcome::Forwarded | Outcome::Tagged);
    let allowed = matches!(
        judgement.verdict,
        VerdictLabel::Allowed | VerdictLabel::Grace
    );
    if !(observed.verified && observed.get && observed.spoofed.is_none() && allowed && forwarded) {
        return;
    }
    let Some(crawler) = law.crawlers.row(observed.who) else {
        return;
    };
    let Some(price) = pricing
        .prices
        .for_crawler(&crawler.token, &crawler.name, crawler.category)
    else {
        return;
    };
    if pricing.is_free(observed.path) {
        return;
    }
    let payment = pricing::settle(price, &offer);
    if !matches!(payment, Payment::Agreed(_)) {
        judgement.outcome = Outcome::PaymentRequired;
    }
    judgement.payment = Some(payment);
}

/// A crawler's request for a path other than `/robots.txt`.
fn rule(
    judgement: &mut Judgement,
    observed: &Observed<'_>,
    law: &Law<'_>,
    reading: &Reading,
    visit: Visit,
) {
    let rules = &law.rules;
    judgement.verdict = if reading.allowed {
        VerdictLabel::Allowed
    } else {
        VerdictLabel::Disallowed
    };
    judgement.rule = reading.rule;
    judgement.over_budget = reading.over_budget;
    let last_fetch = visit.last_fetch;
    judgement.last_robots_fetch = last_fetch;
    judgement.robots_unread = last_fetch
        .is_none_or(|at| observed.now.duration_since(at).unwrap_or_default() > rules.read_window);
    if let Some(Grace {
        rule,
        fetched: (from, until),
    }) = reading.grace
    {
        if last_fetch.is_some_and(|at| at >= from && at < until) {
            judgement.verdict = VerdictLabel::Grace;
            judgement.rule = rule;
            judgement.over_budget = false;
            judgement.by_previous = true;
        }
    }
    // A path robots.txt lets the crawler fetch may still carry a preference that refuses what
    // the crawler is for; a site that enforces preferences treats it as disallowed.
    if judgement.verdict == VerdictLabel::Allowed {
        if let Some(refusal) = reading.refusal {
            judgement.verdict = VerdictLabel::ContentUsage;
            judgement.rule = None;
            judgement.content_usage = Some(refusal);
        }
    }
    if observed.spoofed.is_some() {
        judgement.action = rules.on_spoofed;
        judgement.outcome = match rules.on_spoofed {
            Action::Block => Outcome::Blocked,
            Action::Tag => Outcome::Tagged,
            Action::Count => Outcome::Counted,
        };
        return;
    }
    judgement.outcome = policy::decide(observed.who, judgement.verdict, judgement.action);
    if let (Some(delay), Some(pace)) = (reading.delay, visit.pace) {
        let (exceeded, retry_after) = match pace {
            Pace::Ok => (false, None),
            Pace::TooSoon(wait) => (true, Some(wait)),
        };
        judgement.crawl_delay = Some(CrawlDelay {
            seconds: delay.as_secs_f64(),
            exceeded,
            retry_after_seconds: retry_after.map(ceil_seconds),
            mode: rules.crawl_delay,
        });
        if exceeded {
            judgement.outcome = match rules.crawl_delay {
                CrawlDelayMode::Enforce => Outcome::Throttled,
                CrawlDelayMode::Tag => Outcome::Tagged,
                CrawlDelayMode::Count | CrawlDelayMode::Off => judgement.outcome,
            };
        }
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

/// crawlgate's own answer, if any: a replayed signature's 429 first (RFC 9421 §7.2.2 and the
/// draft: a signature used twice is refused, whoever sent it), then robots.txt as enforced,
/// then a block or a throttle.
fn respond(
    judgement: &Judgement,
    observed: &Observed<'_>,
    law: &Law<'_>,
    reading: &Reading,
) -> Option<Response> {
    // Observe mode refuses nothing, a replayed signature included (its signature label still
    // says `replayed`).
    if observed.replayed && law.rules.enforcement == Enforcement::Enforce {
        let detail = observed.spoofed.map_or("", |s| s.detail);
        let body = format!("crawlgate: {}; sign each request anew\n", sanitize(detail));
        return Some(Response {
            status: 429,
            body: Body::Text(body),
            retry_after: None,
            headers: Vec::new(),
        });
    }
    if reading.robots_txt {
        return Some(match law.served {
            Served::File => Response {
                status: 200,
                body: Body::RobotsTxt,
                retry_after: None,
                headers: Vec::new(),
            },
            Served::NoFile => Response {
                status: 404,
                body: Body::Static(
                    "crawlgate: the origin has no robots.txt (4xx): no restrictions\n",
                ),
                retry_after: None,
                headers: Vec::new(),
            },
            Served::Unreachable { retry_after } => Response {
                status: 503,
                body: Body::Static(
                    "crawlgate: robots.txt cannot be fetched from the origin right now; try again later\n",
                ),
                retry_after: Some(retry_after),
                headers: Vec::new(),
            },
        });
    }
    match judgement.outcome {
        Outcome::Blocked => Some(Response {
            status: law.rules.block_status,
            body: Body::Text(block_message(judgement, observed, law)),
            retry_after: None,
            headers: Vec::new(),
        }),
        Outcome::Throttled => {
            let delay = judgement.crawl_delay.as_ref();
            let body = format!(
                "robots.txt asks {} to wait {} s between requests (crawl-delay); come back later\n",
                bot(law, observed.who),
                delay.map_or(0.0, |d| d.seconds)
            );
            Some(Response {
                status: 429,
                body: Body::Text(body),
                retry_after: delay.and_then(|d| d.retry_after_seconds),
                headers: Vec::new(),
            })
        }
        Outcome::PaymentRequired => judgement.payment.map(payment_answer),
        _ => None,
    }
}

/// The answer to a priced request that is not forwarded: `402` with the price when no payment
/// was offered, else the error's status with its `crawler-error` code (and the price, so that a
/// crawler can pay it on its next request). A charge crawlgate could not record
/// (`InternalError`, answered by the proxy once the origin has answered) may be tried again in a
/// second.
pub fn payment_answer(payment: Payment) -> Response {
    let price = payment.price().to_string();
    let (status, body, error) = match payment {
        Payment::Refused(_, error) => (
            error.status(),
            format!("crawlgate: {}; this page costs {price}\n", error.why()),
            Some(error),
        ),
        Payment::Quoted(_) | Payment::Agreed(_) => (
            402,
            format!("crawlgate: this page costs {price}: send crawler-exact-price (or crawler-max-price), covered by your Web Bot Auth signature\n"),
            None,
        ),
    };
    let mut headers = vec![(pricing::CRAWLER_PRICE, price)];
    headers.extend(error.map(|e: PaymentError| (pricing::CRAWLER_ERROR, e.code().to_owned())));
    Response {
        status,
        body: Body::Text(body),
        retry_after: (error == Some(PaymentError::InternalError)).then_some(1),
        headers,
    }
}

/// The metric label of the requester (`GPTBot`, `MJ12bot`, `unnamed`, `person`).
fn bot<'a>(law: &Law<'a>, who: Who) -> &'a str {
    match law.crawlers.row(who) {
        Some(crawler) => &crawler.row.label,
        None => law.crawlers.person_label(),
    }
}

/// The deciding rule of a judgement in the file that decided.
pub fn deciding_rule<'a>(judgement: &Judgement, law: &Law<'a>) -> Option<&'a Rule> {
    let robots = match (judgement.by_previous, law.previous) {
        (true, Some(previous)) => previous.robots,
        _ => law.robots,
    };
    judgement.rule.and_then(|i| robots.file().rules.get(i))
}

/// The preference rule behind a `content-usage` verdict.
pub fn preference_rule<'a>(judgement: &Judgement, law: &Law<'a>) -> Option<&'a PreferenceRule> {
    law.robots.preference_rule(judgement.content_usage?.rule)
}

/// The text of a blocked request's answer: which rule, or why the crawler is refused.
fn block_message(judgement: &Judgement, observed: &Observed<'_>, law: &Law<'_>) -> String {
    let bot = bot(law, observed.who);
    let path = sanitize(observed.target);
    match observed.spoofed {
        Some(spoofed) if spoofed.by_signature => {
            return format!(
                "crawlgate: this request's signature does not prove it is {bot} ({}); {path} was not fetched\n",
                sanitize(spoofed.detail)
            );
        }
        Some(spoofed) => {
            return format!(
                "crawlgate: this request says it is {bot}, but {} is not {bot}'s ({}); {path} was not fetched\n",
                observed.client,
                sanitize(spoofed.detail)
            );
        }
        None => {}
    }
    if let (Some(refusal), Some(rule)) = (judgement.content_usage, preference_rule(judgement, law))
    {
        return format!(
            "robots.txt line {} ({}) refuses {} use, which {bot} ({}) is for; {path} was not fetched\n",
            rule.line,
            sanitize(&rule.text()),
            refusal.usage.label(),
            judgement.labels.category,
        );
    }
    match (law.stand_in, deciding_rule(judgement, law)) {
        (Some(reason), _) => {
            format!("{reason}: everything is disallowed for {bot}; {path} was not fetched\n")
        }
        (None, Some(rule)) => format!(
            "robots.txt line {} ({}: {}) disallows {path} for {bot}\n",
            rule.line,
            rule.kind.directive(),
            sanitize(&rule.pattern)
        ),
        (None, None) if judgement.over_budget => format!(
            "crawlgate: {path} is too long or too costly to judge against robots.txt, so it is disallowed for {bot}\n"
        ),
        (None, None) => format!("robots.txt disallows {path} for {bot}\n"),
    }
}

/// A request target's path and query, reduced ([`path::path_and_query`]) and normalised
/// ([`path::normalize`]): borrowed from the target when neither changes it (nearly always).
pub fn normalized(target: &str) -> Cow<'_, [u8]> {
    match path::path_and_query(target) {
        Cow::Borrowed(reduced) => path::normalize(reduced.as_bytes()),
        Cow::Owned(reduced) => Cow::Owned(path::normalize(reduced.as_bytes()).into_owned()),
    }
}

/// The longest piece of request data that goes into a header value or a body.
pub const MAX_ECHO: usize = 512;

/// Request data made safe to echo: control characters replaced, length bounded.
pub fn sanitize(text: &str) -> Cow<'_, str> {
    if text.len() <= MAX_ECHO && !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .take(MAX_ECHO)
        .collect();
    if text.chars().count() > MAX_ECHO {
        out.push('…');
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Category;
    use crate::catalog::Catalog;
    use crate::crawlers::CatalogIndex;
    use crate::policy::Actions;
    use crate::pricing::{Covers, Field};

    const GPTBOT: &[u8] = b"Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)";
    const FIREFOX: &[u8] =
        b"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

    /// The file in force: GPTBot may not fetch /private/ and is asked to wait 10 s; a path it
    /// may fetch states that it is not for training.
    const FILE: &str = "User-agent: GPTBot\nDisallow: /private/\nCrawl-delay: 10\nContent-Usage: /no-ai/ train-ai=n\n\nUser-agent: *\nDisallow: /tmp/\n";
    /// The file before it, which let GPTBot fetch /private/.
    const PREVIOUS: &str = "User-agent: GPTBot\nAllow: /\n";

    fn at(seconds: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + seconds)
    }

    /// One row of the table: a request, what the store answered, and the judgement expected.
    struct Case {
        name: &'static str,
        user_agent: &'static [u8],
        target: &'static str,
        action: Action,
        rules: Rules,
        served: Served,
        spoofed: Option<Spoofed<'static>>,
        replayed: bool,
        visit: Visit,
        verdict: VerdictLabel,
        outcome: Outcome,
        /// crawlgate's answer: status and a piece of its body (`None`: forwarded).
        answer: Option<(u16, &'static str)>,
        retry_after: Option<u64>,
        /// The site prices ai-training crawlers at USD 0.01 (pay per crawl).
        priced: bool,
        /// The crawler's claim was verified.
        verified: bool,
        /// A `GET`.
        get: bool,
        /// What the request offers to pay (`None`: no payment taken, as in forward-auth).
        offer: Option<Offer<'static>>,
        /// What the payment came to (its label), when the page was priced for it.
        payment: Option<&'static str>,
    }

    /// A request from GPTBot for an allowed path, read recently: every row changes what it is
    /// about.
    fn case(name: &'static str) -> Case {
        Case {
            name,
            user_agent: GPTBOT,
            target: "/public/page",
            action: Action::Block,
            rules: Rules {
                enforce_content_use: true,
                crawl_delay: CrawlDelayMode::Enforce,
                ..Rules::default()
            },
            served: Served::File,
            spoofed: None,
            replayed: false,
            visit: Visit {
                last_fetch: Some(at(150)),
                pace: None,
            },
            verdict: VerdictLabel::Allowed,
            outcome: Outcome::Forwarded,
            answer: None,
            retry_after: None,
            priced: false,
            verified: true,
            get: true,
            offer: Some(Offer::default()),
            payment: None,
        }
    }

    fn run(case: &Case) -> (Reading, Judgement) {
        let catalog = CatalogIndex::new(Catalog::embedded().unwrap()).unwrap();
        let robots = Robots::parse(FILE.as_bytes());
        let previous = Robots::parse(PREVIOUS.as_bytes());
        let crawlers =
            Crawlers::build(&catalog, &robots, &Actions::for_site(case.action), &[]).unwrap();
        let pricing = case.priced.then(|| {
            let price = crate::pricing::Price::parse("USD 0.01").unwrap();
            let prices = crate::pricing::Prices::new([], [(Category::AiTraining, price)]);
            Pricing::new(prices, &robots)
        });
        let law = Law {
            robots: &robots,
            crawlers: &crawlers,
            loaded_at: at(100),
            previous: Some(Previous {
                robots: &previous,
                loaded_at: at(0),
            }),
            served: case.served,
            stand_in: None,
            rules: case.rules,
            answers: true,
            pricing: pricing.as_ref(),
        };
        let path = normalized(case.target);
        let observed = Observed {
            target: case.target,
            path: &path,
            who: crawlers.classify(case.user_agent),
            client: IpAddr::from([192, 0, 2, 1]),
            spoofed: case.spoofed,
            replayed: case.replayed,
            now: at(200),
            verified: case.verified,
            get: case.get,
            offer: case.offer,
        };
        let reading = read(&observed, &law);
        let judgement = judge(&observed, &law, &reading, case.visit);
        (reading, judgement)
    }

    fn text(response: &Response) -> &str {
        match &response.body {
            Body::RobotsTxt => "(robots.txt)",
            Body::Static(text) => text,
            Body::Text(text) => text,
        }
    }

    #[test]
    fn every_outcome_is_judged_as_the_proxy_answers_it() {
        let by_address = Spoofed {
            by_signature: false,
            detail: "192.0.2.1 is not in GPTBot's published ranges",
        };
        let by_signature = Spoofed {
            by_signature: true,
            detail: "a replayed signature",
        };
        let observe = Rules {
            enforcement: Enforcement::Observe,
            ..case("").rules
        };
        let cases = [
            case("allowed"),
            Case {
                target: "/private/report",
                verdict: VerdictLabel::Disallowed,
                outcome: Outcome::Blocked,
                answer: Some((403, "robots.txt line 2 (Disallow: /private/) disallows")),
                ..case("block")
            },
            Case {
                // Past the longest path judged: disallowed by no rule, and said so.
                target: Box::leak(format!("/public/{}", "a".repeat(40 << 10)).into_boxed_str()),
                verdict: VerdictLabel::Disallowed,
                outcome: Outcome::Blocked,
                answer: Some((403, "too long or too costly to judge")),
                ..case("over budget")
            },
            Case {
                target: "/private/report",
                action: Action::Tag,
                verdict: VerdictLabel::Disallowed,
                outcome: Outcome::Tagged,
                ..case("tag")
            },
            Case {
                action: Action::Tag,
                outcome: Outcome::Tagged,
                ..case("tag mode tags an allowed request too")
            },
            Case {
                target: "/private/report",
                action: Action::Count,
                verdict: VerdictLabel::Disallowed,
                outcome: Outcome::Counted,
                ..case("count")
            },
            Case {
                visit: Visit {
                    last_fetch: Some(at(150)),
                    pace: Some(Pace::TooSoon(Duration::from_millis(2500))),
                },
                outcome: Outcome::Throttled,
                answer: Some((429, "robots.txt asks GPTBot to wait 10 s")),
                retry_after: Some(3),
                ..case("throttle")
            },
            Case {
                rules: Rules {
                    crawl_delay: CrawlDelayMode::Tag,
                    ..case("").rules
                },
                visit: Visit {
                    last_fetch: Some(at(150)),
                    pace: Some(Pace::TooSoon(Duration::from_secs(1))),
                },
                outcome: Outcome::Tagged,
                ..case("a crawl-delay in tag mode tags")
            },
            Case {
                spoofed: Some(by_signature),
                replayed: true,
                verdict: VerdictLabel::Allowed,
                outcome: Outcome::Blocked,
                answer: Some((
                    429,
                    "crawlgate: a replayed signature; sign each request anew",
                )),
                ..case("replay")
            },
            Case {
                target: "/private/report",
                visit: Visit {
                    last_fetch: Some(at(50)),
                    pace: None,
                },
                verdict: VerdictLabel::Grace,
                outcome: Outcome::Forwarded,
                ..case("grace: told by the previous robots.txt")
            },
            Case {
                target: "/private/report",
                visit: Visit {
                    last_fetch: Some(at(150)),
                    pace: None,
                },
                verdict: VerdictLabel::Disallowed,
                outcome: Outcome::Blocked,
                answer: Some((403, "disallows /private/report for GPTBot")),
                ..case("no grace for a crawler that read the file in force")
            },
            Case {
                target: "/no-ai/page",
                verdict: VerdictLabel::ContentUsage,
                outcome: Outcome::Blocked,
                answer: Some((
                    403,
                    "refuses train-ai use, which GPTBot (ai-training) is for",
                )),
                ..case("content use")
            },
            Case {
                target: "/no-ai/page",
                rules: Rules {
                    enforce_content_use: false,
                    ..case("").rules
                },
                ..case("content use, not enforced")
            },
            Case {
                target: "/tmp/x",
                spoofed: Some(by_address),
                verdict: VerdictLabel::Disallowed,
                outcome: Outcome::Blocked,
                answer: Some((403, "says it is GPTBot, but 192.0.2.1 is not GPTBot's")),
                ..case("spoofed: judged as the unnamed crawler, and blocked")
            },
            Case {
                spoofed: Some(by_address),
                rules: Rules {
                    on_spoofed: Action::Count,
                    ..case("").rules
                },
                outcome: Outcome::Counted,
                ..case("spoofed, counted")
            },
            Case {
                target: "/robots.txt?x=1",
                verdict: VerdictLabel::Exempt,
                answer: Some((200, "(robots.txt)")),
                ..case("robots.txt served")
            },
            Case {
                target: "/%72obots.txt",
                served: Served::NoFile,
                verdict: VerdictLabel::Exempt,
                answer: Some((404, "no restrictions")),
                ..case("robots.txt, none at the origin")
            },
            Case {
                target: "/robots.txt",
                served: Served::Unreachable { retry_after: 30 },
                verdict: VerdictLabel::Exempt,
                answer: Some((503, "try again later")),
                retry_after: Some(30),
                ..case("robots.txt, unreachable")
            },
            Case {
                user_agent: FIREFOX,
                target: "/private/report",
                verdict: VerdictLabel::Exempt,
                ..case("person")
            },
            Case {
                user_agent: FIREFOX,
                target: "/robots.txt",
                verdict: VerdictLabel::Exempt,
                answer: Some((200, "(robots.txt)")),
                ..case("a person reads robots.txt too")
            },
            Case {
                target: "/private/report",
                rules: observe,
                verdict: VerdictLabel::Disallowed,
                outcome: Outcome::WouldBlock,
                ..case("observe: a block is forwarded and recorded")
            },
            Case {
                rules: observe,
                visit: Visit {
                    last_fetch: Some(at(150)),
                    pace: Some(Pace::TooSoon(Duration::from_millis(2500))),
                },
                outcome: Outcome::WouldThrottle,
                ..case("observe: a throttle is forwarded and recorded")
            },
            Case {
                target: "/tmp/x",
                rules: observe,
                spoofed: Some(by_address),
                verdict: VerdictLabel::Disallowed,
                outcome: Outcome::WouldBlock,
                ..case("observe: a spoofed crawler is forwarded and recorded")
            },
            Case {
                rules: observe,
                spoofed: Some(by_signature),
                replayed: true,
                outcome: Outcome::WouldBlock,
                ..case("observe: a replayed signature is forwarded")
            },
            Case {
                target: "/private/report",
                rules: observe,
                action: Action::Tag,
                verdict: VerdictLabel::Disallowed,
                outcome: Outcome::Tagged,
                ..case("observe: tags still reach the origin (they refuse nothing)")
            },
            Case {
                target: "/robots.txt",
                rules: observe,
                verdict: VerdictLabel::Exempt,
                answer: Some((200, "(robots.txt)")),
                ..case("observe: robots.txt is still served as enforced")
            },
            Case {
                outcome: Outcome::PaymentRequired,
                answer: Some((402, "this page costs USD 0.01")),
                payment: Some("quoted"),
                ..priced("priced: a verified crawler is quoted")
            },
            Case {
                target: "/private/report",
                visit: Visit {
                    last_fetch: Some(at(50)),
                    pace: None,
                },
                verdict: VerdictLabel::Grace,
                outcome: Outcome::PaymentRequired,
                answer: Some((402, "this page costs USD 0.01")),
                payment: Some("quoted"),
                ..priced("priced: allowed by grace, priced too")
            },
            Case {
                offer: Some(paying(Field::One(b"USD 0.01"), Field::Absent, true)),
                payment: Some("agreed"),
                ..priced("priced: paid, forwarded")
            },
            Case {
                action: Action::Tag,
                offer: Some(paying(Field::Absent, Field::One(b"USD 1"), true)),
                outcome: Outcome::Tagged,
                payment: Some("agreed"),
                ..priced("priced: paid up to a maximum, tagged as the site tags")
            },
            Case {
                offer: Some(paying(Field::Absent, Field::One(b"USD 0.005"), true)),
                outcome: Outcome::PaymentRequired,
                answer: Some((402, "crawler-max-price is below the price")),
                payment: Some("invalid_max_price"),
                ..priced("priced: a maximum too low")
            },
            Case {
                offer: Some(Offer {
                    covers: Covers::default(),
                    ..paying(Field::One(b"USD 0.01"), Field::Absent, true)
                }),
                outcome: Outcome::PaymentRequired,
                answer: Some((400, "does not cover its price header")),
                payment: Some("invalid_signature"),
                ..priced("priced: a price header the signature does not cover")
            },
            Case {
                offer: Some(paying(Field::One(b"USD 0.01"), Field::Absent, false)),
                outcome: Outcome::PaymentRequired,
                answer: Some((400, "Web Bot Auth signature verifies")),
                payment: Some("strong_auth_required"),
                ..priced("priced: an unsigned price header")
            },
            Case {
                verified: false,
                offer: Some(paying(Field::One(b"USD 0.01"), Field::Absent, false)),
                ..priced("priced: an unverified crawler is judged as before")
            },
            Case {
                target: "/private/report",
                verdict: VerdictLabel::Disallowed,
                outcome: Outcome::Blocked,
                answer: Some((403, "disallows /private/report")),
                ..priced("priced: a disallowed path is refused as before, never sold")
            },
            Case {
                target: "/shop/sitemap_index.xml",
                ..priced("priced: sitemaps are free")
            },
            Case {
                target: "/robots.txt",
                verdict: VerdictLabel::Exempt,
                answer: Some((200, "(robots.txt)")),
                ..priced("priced: robots.txt is free")
            },
            Case {
                get: false,
                ..priced("priced: a HEAD fetches no content and is not priced")
            },
            Case {
                offer: None,
                ..priced("priced: no payment taken (forward-auth)")
            },
            Case {
                rules: observe,
                ..priced("priced: observe mode prices nothing")
            },
            Case {
                spoofed: Some(by_address),
                verified: false,
                outcome: Outcome::Blocked,
                answer: Some((403, "is not GPTBot's")),
                ..priced("priced: a spoofed claim is refused as before")
            },
            Case {
                visit: Visit {
                    last_fetch: Some(at(150)),
                    pace: Some(Pace::TooSoon(Duration::from_millis(2500))),
                },
                outcome: Outcome::Throttled,
                answer: Some((429, "robots.txt asks GPTBot to wait 10 s")),
                retry_after: Some(3),
                ..priced("priced: too soon is throttled before any price")
            },
            Case {
                user_agent: FIREFOX,
                verdict: VerdictLabel::Exempt,
                ..priced("priced: a person is never priced")
            },
        ];
        for case in &cases {
            let (_, judgement) = run(case);
            let name = case.name;
            assert_eq!(judgement.verdict, case.verdict, "{name}");
            assert_eq!(judgement.outcome, case.outcome, "{name}");
            assert_eq!(judgement.labels.verdict, case.verdict.as_str(), "{name}");
            assert_eq!(judgement.labels.outcome, case.outcome.as_str(), "{name}");
            let over = case.name == "over budget";
            assert_eq!(
                (judgement.over_budget, judgement.labels.over_budget),
                (over, over),
                "{name}"
            );
            let response = judgement.response.as_ref();
            assert_eq!(
                response.map(|r| r.status),
                case.answer.map(|a| a.0),
                "{name}"
            );
            if let (Some(response), Some((_, piece))) = (response, case.answer) {
                assert!(text(response).contains(piece), "{name}: {}", text(response));
            }
            assert_eq!(
                response.and_then(|r| r.retry_after),
                case.retry_after,
                "{name}"
            );
            assert_eq!(
                judgement.payment.map(Payment::label),
                case.payment,
                "{name}"
            );
            // A priced answer says the price, and an error's code.
            if judgement.outcome == Outcome::PaymentRequired {
                let headers = &response.unwrap().headers;
                assert!(
                    headers.contains(&("crawler-price", "USD 0.01".into())),
                    "{name}: {headers:?}"
                );
                let error = headers.iter().find(|(n, _)| *n == "crawler-error");
                assert_eq!(error.is_some(), case.payment != Some("quoted"), "{name}");
            } else if let Some(response) = response {
                assert!(response.headers.is_empty(), "{name}");
            }
        }
    }

    /// [`case`] on a site that prices ai-training crawlers.
    fn priced(name: &'static str) -> Case {
        Case {
            priced: true,
            ..case(name)
        }
    }

    /// An offer with these headers, vouched for by a verified signature covering both (or no
    /// signature).
    fn paying(exact: Field<'static>, max: Field<'static>, signed: bool) -> Offer<'static> {
        Offer {
            exact,
            max,
            signed,
            covers: Covers {
                exact: signed,
                max: signed,
            },
        }
    }

    #[test]
    fn the_judgement_carries_what_is_counted_and_what_decided() {
        let (_, grace) = run(&Case {
            target: "/private/report",
            visit: Visit {
                last_fetch: Some(at(50)),
                pace: None,
            },
            ..case("grace")
        });
        assert!(grace.by_previous);
        assert_eq!(grace.rule, Some(0), "the previous file's Allow: /");
        let (_, content) = run(&Case {
            target: "/no-ai/page",
            ..case("content use")
        });
        assert_eq!(content.labels.content_usage, Some("train-ai"));
        assert_eq!(content.content_usage.map(|r| r.usage), Some(Usage::TrainAi));
        assert_eq!(content.rule, None);
        let (_, throttled) = run(&Case {
            visit: Visit {
                last_fetch: None,
                pace: Some(Pace::TooSoon(Duration::from_secs(4))),
            },
            ..case("throttle")
        });
        assert_eq!(throttled.labels.crawl_delay_exceeded, Some("enforce"));
        assert!(throttled.robots_unread && throttled.labels.without_robots_fetch);
        let delay = throttled.crawl_delay.unwrap();
        assert_eq!((delay.seconds, delay.retry_after_seconds), (10.0, Some(4)));
        let (_, robots) = run(&Case {
            target: "/robots.txt",
            ..case("robots.txt")
        });
        assert!(robots.labels.robots_fetch && !robots.labels.without_robots_fetch);
        let (_, person) = run(&Case {
            user_agent: FIREFOX,
            ..case("person")
        });
        assert!(person.labels.person);
        assert_eq!(person.labels.category, "person");
        assert!(!person.robots_unread);
    }

    #[test]
    fn the_store_is_asked_only_what_the_verdict_needs() {
        let delay = Duration::from_secs(10);
        let ask = |case: Case| run(&case).0.ask;
        assert_eq!(
            ask(Case {
                user_agent: FIREFOX,
                ..case("person")
            }),
            Ask::Nothing
        );
        assert_eq!(
            ask(Case {
                target: "/robots.txt",
                ..case("robots.txt")
            }),
            Ask::RobotsFetched
        );
        let paced = Ask::Visit(Some(PaceQuery {
            delay,
            only_if_fetched: None,
        }));
        assert_eq!(ask(case("allowed")), paced);
        // A blocked request takes no crawl-delay slot, unless grace would let it in.
        assert_eq!(
            ask(Case {
                target: "/private/report",
                ..case("grace could apply")
            }),
            Ask::Visit(Some(PaceQuery {
                delay,
                only_if_fetched: Some((at(0), at(100))),
            }))
        );
        assert_eq!(
            ask(Case {
                target: "/private/report",
                action: Action::Count,
                ..case("counted: forwarded, so paced")
            }),
            paced
        );
        // A spoofed claim is the unnamed crawler's, which has no delay here.
        assert_eq!(
            ask(Case {
                spoofed: Some(Spoofed {
                    by_signature: false,
                    detail: "",
                }),
                ..case("spoofed")
            }),
            Ask::Visit(None)
        );
    }

    #[test]
    fn the_preference_is_read_with_the_verdict_for_the_announcement() {
        let announcing = Rules {
            announce_content_use: true,
            ..case("").rules
        };
        let (reading, judgement) = run(&Case {
            target: "/no-ai/page",
            rules: announcing,
            ..case("announced and enforced")
        });
        assert_eq!(judgement.announce.header_value(), Some("train-ai=n"));
        assert_eq!(reading.announce, judgement.announce);
        let (_, blocked) = run(&Case {
            target: "/private/x",
            rules: announcing,
            ..case("a disallowed path has no preference")
        });
        assert!(blocked.announce.is_unknown());
        let (_, quiet) = run(&Case {
            target: "/no-ai/page",
            ..case("not announced")
        });
        assert!(quiet.announce.is_unknown());
    }

    #[test]
    fn echoed_request_data_is_borrowed_unless_it_must_change() {
        assert!(matches!(sanitize("/a/b?c"), Cow::Borrowed(_)));
        assert_eq!(sanitize("a\r\nb"), "a??b");
        assert_eq!(sanitize(&"x".repeat(600)).chars().count(), MAX_ECHO + 1);
    }
}

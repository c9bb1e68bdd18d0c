//! crawlgate: robots.txt, enforced.
//!
//! A library that reads robots.txt as RFC 9309 (and Google, where the RFC is silent) says, and a
//! reverse proxy on pingora that makes crawlers obey it.
//!
//! ```
//! let robots = crawlgate::Robots::parse(b"User-agent: GPTBot\nDisallow: /private/\n");
//! assert!(!robots.is_allowed("GPTBot", "/private/report?page=2"));
//! let verdict = robots.check("GPTBot", "https://example.com/private/x");
//! let rule = verdict.rule.expect("a rule decided");
//! assert_eq!((rule.pattern.as_str(), rule.line), ("/private/", 2));
//! ```
//!
//! # Modules
//! The data flows one way:
//! - [`robots`]: bytes of robots.txt → parsed file (groups, rules, content-use preferences,
//!   line-numbered problems) → compiled matcher → [`Verdict`] and [`Preference`]. Builds
//!   without the proxy (`--no-default-features`).
//! - [`agent`]: User-Agent header, read as products and comments ([`agent::grammar`]) → who
//!   asks ([`agent::Who`]): a known crawler (by a product token where the header names its
//!   client), an unnamed crawler (a crawler signal), or a person (a browser or an app, never
//!   judged).
//! - [`policy`]: who asks × robots.txt's verdict × configured action (per crawler, per
//!   category) → what happens. Pure.
//! - [`catalog`] (feature `cli`): the crawler catalog (`conf/bots.yaml`, and the entries
//!   imported from public lists in `conf/catalog/bots-imported.yaml`).
//! - [`crawlers`] (feature `cli`): a site's crawler table (token, name, category, action,
//!   verification, the groups each obeys), which the proxy, `explain` and `audit` share; a
//!   [`agent::Who`]'s crawler is one of its rows.
//! - [`judge`] (feature `cli`): what was observed of a request × the site's law (robots.txt,
//!   crawler table, policy) → the [`judge::Judgement`]: verdict, rule, outcome, the answer
//!   crawlgate gives itself, the labels to count. Pure; the proxy, `explain` and `audit` share it.
//! - [`managed`] (feature `cli`): a site's robots.txt with the groups its operator manages at
//!   the edge, composed so that what is served is what is enforced.
//! - [`pricing`] (feature `cli`): pay per crawl: a site's prices × a verified crawler's
//!   payment headers → quoted, agreed or refused, as Cloudflare's pay per crawl answers. Pure.
//! - [`referrals`] (feature `cli`): a person's `Referer` → the crawler operator whose product
//!   sent them, so that crawls are set against referrals.
//! - [`audit`] (feature `cli`): access logs → what each crawler did, replayed against robots.txt.
//! - [`cli`] (feature `cli`): the command line over the library.
//! - [`proxy`] (feature `proxy`): the pingora reverse proxy, its configuration, hot reload and
//!   metrics.

pub mod agent;
pub mod policy;
pub mod robots;

/// README.md's and the manual's Rust examples run as doc-tests, so that they stay true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeExamples;

/// The operator's manual's Rust examples (its library section).
#[doc = include_str!("../docs/manual.md")]
#[cfg(doctest)]
pub struct ManualExamples;

#[cfg(feature = "cli")]
pub mod audit;
#[cfg(feature = "cli")]
pub mod catalog;
#[cfg(feature = "cli")]
pub mod cli;
#[cfg(feature = "cli")]
pub mod crawlers;
#[cfg(feature = "cli")]
pub mod judge;
#[cfg(feature = "cli")]
pub mod managed;
#[cfg(feature = "cli")]
pub mod pricing;
#[cfg(feature = "proxy")]
pub mod proxy;
#[cfg(feature = "cli")]
pub mod referrals;

pub use robots::{
    GroupKind, Options, Preference, Problem, ProblemKind, Reason, Robots, Rule, RuleKind, Usage,
    Verdict,
};

//! What to do with a request, given who asks and what robots.txt says: pure decision code.

use crate::agent::{Category, Who};
use crate::robots::Usage;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// What the operator wants done with crawler requests that robots.txt disallows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Answer with the configured status; the origin never sees the request.
    Block,
    /// Forward, telling the origin the verdict in `X-Crawlgate-*` headers.
    Tag,
    /// Forward untouched; only metrics and the access log record it.
    Count,
}

impl Action {
    /// The value as written in configuration: `block`, `tag`, `count`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Block => "block",
            Action::Tag => "tag",
            Action::Count => "count",
        }
    }
}

/// Whether a site's refusals are made, or only recorded: `mode: observe` is the dry run of the
/// first week in front of a site, when every metric and log line says what would have happened
/// and nothing is refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Enforcement {
    /// Blocks and throttles are answered by crawlgate (the default).
    #[default]
    Enforce,
    /// Every request is forwarded; a block or a throttle is recorded as `would_block` or
    /// `would_throttle`.
    Observe,
}

impl Enforcement {
    /// The value as written in configuration: `enforce`, `observe`.
    pub fn as_str(self) -> &'static str {
        match self {
            Enforcement::Enforce => "enforce",
            Enforcement::Observe => "observe",
        }
    }
}

/// Which action a site takes on each crawler's disallowed requests: the crawler's own override
/// (`bots:`), else its category's (`categories:`), else the default for its category, which is
/// the site's `action` for every category but `http-library`: generic HTTP clients are what
/// apps are built on (`okhttp`, `Dart`), so they are counted, not blocked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actions {
    /// The site's action.
    pub site: Action,
    /// Per-category actions.
    pub categories: BTreeMap<Category, Action>,
    /// Per-crawler overrides, by lower-cased token or name.
    pub crawlers: HashMap<String, Action>,
}

impl Default for Actions {
    fn default() -> Self {
        Actions::for_site(Action::Block)
    }
}

impl Actions {
    /// A site's action alone, with the default for each category.
    pub fn for_site(site: Action) -> Actions {
        Actions {
            site,
            categories: BTreeMap::new(),
            crawlers: HashMap::new(),
        }
    }

    /// What a category gets when the site says nothing about it.
    pub fn default_for(category: Category, site: Action) -> Action {
        match category {
            Category::HttpLibrary | Category::SiteService | Category::Proxy => Action::Count,
            _ => site,
        }
    }

    /// The action for a crawler with this token, name and category.
    pub fn for_crawler(&self, token: &str, name: &str, category: Category) -> Action {
        let own = |key: &str| {
            if self.crawlers.is_empty() {
                None
            } else {
                self.crawlers.get(&key.to_ascii_lowercase()).copied()
            }
        };
        own(token)
            .or_else(|| own(name))
            .or_else(|| self.categories.get(&category).copied())
            .unwrap_or_else(|| Self::default_for(category, self.site))
    }
}

/// robots.txt's verdict on the request, as metrics label it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VerdictLabel {
    /// robots.txt lets the crawler fetch the path.
    Allowed,
    /// robots.txt asks the crawler not to fetch the path.
    Disallowed,
    /// The robots.txt in force disallows the path, but the crawler read the previous file within
    /// RFC 9309's cache allowance, and that file allows it: the crawler is compliant.
    Grace,
    /// robots.txt does not apply: `/robots.txt` itself, or a person.
    Exempt,
    /// robots.txt lets the crawler fetch the path, but its stated content-use preference
    /// (`Content-Usage`, `Content-Signal`) refuses what the crawler's category is for, and the
    /// site enforces preferences: treated as disallowed.
    #[serde(rename = "content-usage")]
    ContentUsage,
}

impl VerdictLabel {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictLabel::Allowed => "allowed",
            VerdictLabel::Disallowed => "disallowed",
            VerdictLabel::Grace => "grace",
            VerdictLabel::Exempt => "exempt",
            VerdictLabel::ContentUsage => "content-usage",
        }
    }
}

/// What happens to the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Passed to the origin untouched (people, allowed crawlers outside tag mode, exempt paths).
    Forwarded,
    /// Answered by crawlgate with the block status.
    Blocked,
    /// Passed to the origin with `X-Crawlgate-*` headers.
    Tagged,
    /// Passed to the origin untouched, and recorded as a violation.
    Counted,
    /// Answered 429: the crawler came sooner than its crawl-delay allows.
    Throttled,
    /// Observe mode: forwarded untouched, where enforcing would have blocked it.
    WouldBlock,
    /// Observe mode: forwarded untouched, where enforcing would have throttled it.
    WouldThrottle,
    /// Answered by crawlgate: the site prices the page and the crawler has not paid it (pay
    /// per crawl: `402` with the price, or a payment error).
    PaymentRequired,
}

impl Outcome {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Forwarded => "forwarded",
            Outcome::Blocked => "blocked",
            Outcome::Tagged => "tagged",
            Outcome::Counted => "counted",
            Outcome::Throttled => "throttled",
            Outcome::WouldBlock => "would_block",
            Outcome::WouldThrottle => "would_throttle",
            Outcome::PaymentRequired => "payment_required",
        }
    }

    /// What an outcome becomes in observe mode: a refusal is only recorded.
    pub fn observed(self) -> Outcome {
        match self {
            Outcome::Blocked => Outcome::WouldBlock,
            Outcome::Throttled => Outcome::WouldThrottle,
            other => other,
        }
    }
}

/// Decides what happens to a request from `who`. `action` is the one configured for this
/// crawler (its override, else the site's). A person is always forwarded. In tag mode, allowed
/// crawler requests are tagged too, so that the origin sees every crawler's verdict.
pub fn decide(who: Who, verdict: VerdictLabel, action: Action) -> Outcome {
    if !who.is_crawler() {
        return Outcome::Forwarded;
    }
    match (verdict, action) {
        (VerdictLabel::Exempt, _) => Outcome::Forwarded,
        (VerdictLabel::Allowed | VerdictLabel::Grace, Action::Tag) => Outcome::Tagged,
        (VerdictLabel::Allowed | VerdictLabel::Grace, _) => Outcome::Forwarded,
        (VerdictLabel::Disallowed | VerdictLabel::ContentUsage, Action::Block) => Outcome::Blocked,
        (VerdictLabel::Disallowed | VerdictLabel::ContentUsage, Action::Tag) => Outcome::Tagged,
        (VerdictLabel::Disallowed | VerdictLabel::ContentUsage, Action::Count) => Outcome::Counted,
    }
}

/// Whether robots.txt's `Crawl-delay` paces a crawler of `category` whose action is `action`.
/// A category counted by default ([`Actions::default_for`]: the clients apps are built on, the
/// fetches a site set up for itself, proxies fetching for a person) is counted rather than
/// judged while it is counted, and pacing is judging: a `429` refuses the app, the payment
/// provider's webhook or every visitor of a CDN that writes its own name, which is what
/// counting them was for. A site that judges their category (`http-library: block`) paces them
/// as any crawler; a crawler counted by the site's choice (`bots: {CCBot: count}`) is paced.
pub fn paced(category: Category, action: Action) -> bool {
    let counted_by_default = Actions::default_for(category, Action::Block) == Action::Count;
    !(counted_by_default && action == Action::Count)
}

/// The uses of content a crawler of `category` is for: the one place where crawler categories
/// meet content-use preferences (docs/manual.md's "Content-use preferences" has the same table). A
/// crawler goes against a site's preference when the site refuses any of them.
///
/// Training crawlers train models (`train-ai=n`, `ai-train=no`). AI search and AI assistants
/// put pages into answers at question time, which is Content-Signal's `ai-input`, and they are
/// search applications in aipref's sense (`search=n`). A search engine's indexer is search.
/// Every other category (SEO, archives, previews, monitors, feeds, libraries, crawling
/// frameworks, scanners, site services, proxies, the unlisted and the unnamed) is for none of
/// them: no preference refuses it, since nothing says what it does with the content.
pub fn uses_of(category: Category) -> &'static [Usage] {
    match category {
        Category::AiTraining => &[Usage::TrainAi],
        Category::AiSearch | Category::AiAssistant => &[Usage::AiInput, Usage::Search],
        Category::Search => &[Usage::Search],
        Category::Seo
        | Category::Archiver
        | Category::Social
        | Category::Monitoring
        | Category::Feed
        | Category::HttpLibrary
        | Category::CrawlerFramework
        | Category::Scanner
        | Category::SiteService
        | Category::Proxy
        | Category::Other
        | Category::Unlisted
        | Category::Unnamed => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Action::*;
    use VerdictLabel::*;

    /// Any crawler: the policy does not ask which.
    const CRAWLER: Who = Who::Crawler(0);

    #[test]
    fn overrides_then_categories_then_defaults() {
        let check = |actions: &Actions, cases: &[(&str, &str, Category, Action)]| {
            for &(token, name, category, want) in cases {
                assert_eq!(actions.for_crawler(token, name, category), want, "{name}");
            }
        };
        let mut actions = Actions::for_site(Tag);
        check(
            &actions,
            &[
                ("okhttp", "okhttp", Category::HttpLibrary, Count),
                ("DCV", "Sectigo DCV", Category::SiteService, Count),
                (
                    "GoogleImageProxy",
                    "GoogleImageProxy",
                    Category::Proxy,
                    Count,
                ),
                ("GPTBot", "GPTBot", Category::AiTraining, Tag),
            ],
        );
        actions.categories.insert(Category::AiTraining, Block);
        actions.categories.insert(Category::HttpLibrary, Block);
        actions.categories.insert(Category::SiteService, Block);
        actions.categories.insert(Category::Proxy, Block);
        actions.crawlers.insert("ccbot".into(), Count);
        actions.crawlers.insert("mj12bot".into(), Count);
        check(
            &actions,
            &[
                ("GPTBot", "GPTBot", Category::AiTraining, Block),
                ("CCBot", "CCBot", Category::AiTraining, Count),
                ("MJ", "MJ12bot", Category::Seo, Count),
                ("curl", "curl", Category::HttpLibrary, Block),
                ("DCV", "Sectigo DCV", Category::SiteService, Block),
                (
                    "GoogleImageProxy",
                    "GoogleImageProxy",
                    Category::Proxy,
                    Block,
                ),
                ("", "", Category::Unnamed, Tag),
            ],
        );
    }

    #[test]
    fn crawl_delay_paces_crawlers_not_the_categories_counted_by_default() {
        assert!(paced(Category::AiTraining, Block));
        assert!(paced(Category::Seo, Count));
        assert!(!paced(Category::HttpLibrary, Count));
        assert!(!paced(Category::Proxy, Count));
        assert!(!paced(Category::SiteService, Count));
        // A site that judges them paces them too.
        assert!(paced(Category::Proxy, Block));
        assert!(paced(Category::SiteService, Tag));
        assert!(paced(Category::HttpLibrary, Block));
    }

    #[test]
    fn people_and_exempt_paths_are_always_forwarded() {
        for action in [Block, Tag, Count] {
            for verdict in [Allowed, Disallowed, Exempt] {
                assert_eq!(decide(Who::Person, verdict, action), Outcome::Forwarded);
            }
            assert_eq!(decide(CRAWLER, Exempt, action), Outcome::Forwarded);
            assert_eq!(
                decide(Who::Unnamed, Disallowed, action),
                decide(CRAWLER, Disallowed, action)
            );
        }
    }

    #[test]
    fn crawlers_get_the_configured_action_when_disallowed() {
        assert_eq!(decide(CRAWLER, Disallowed, Block), Outcome::Blocked);
        assert_eq!(decide(CRAWLER, Disallowed, Tag), Outcome::Tagged);
        assert_eq!(decide(CRAWLER, Disallowed, Count), Outcome::Counted);
    }

    #[test]
    fn a_content_usage_verdict_is_treated_as_disallowed() {
        for action in [Block, Tag, Count] {
            assert_eq!(
                decide(CRAWLER, ContentUsage, action),
                decide(CRAWLER, Disallowed, action)
            );
            assert_eq!(
                decide(Who::Person, ContentUsage, action),
                Outcome::Forwarded
            );
        }
    }

    #[test]
    fn categories_map_to_the_uses_they_are_for() {
        assert_eq!(uses_of(Category::AiTraining), &[Usage::TrainAi]);
        assert_eq!(
            uses_of(Category::AiAssistant),
            &[Usage::AiInput, Usage::Search]
        );
        assert_eq!(uses_of(Category::Search), &[Usage::Search]);
        let none: Vec<Category> = Category::ALL
            .into_iter()
            .filter(|&c| uses_of(c).is_empty())
            .collect();
        assert_eq!(none.len(), Category::ALL.len() - 4, "{none:?}");
    }

    #[test]
    fn a_grace_verdict_is_treated_as_allowed() {
        assert_eq!(decide(CRAWLER, Grace, Block), Outcome::Forwarded);
        assert_eq!(decide(CRAWLER, Grace, Tag), Outcome::Tagged);
        assert_eq!(decide(CRAWLER, Grace, Count), Outcome::Forwarded);
    }

    #[test]
    fn allowed_crawlers_are_tagged_only_in_tag_mode() {
        assert_eq!(decide(CRAWLER, Allowed, Tag), Outcome::Tagged);
        assert_eq!(decide(CRAWLER, Allowed, Block), Outcome::Forwarded);
        assert_eq!(decide(CRAWLER, Allowed, Count), Outcome::Forwarded);
    }
}

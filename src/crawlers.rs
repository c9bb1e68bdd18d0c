//! A site's crawlers: one table of every crawler it knows, built once per robots.txt, that the
//! proxy, `crawlgate explain` and `crawlgate audit` all classify and judge with.
//!
//! A row is a crawler: the token robots.txt names it by, the name operators see, its category,
//! the action the site takes on it, how it can be verified, the groups it obeys in this file
//! (its own, else its operator's documented fallbacks, else `*` unless it ignores `*`), and
//! whether only the site names it. The catalog's rows come first (their automaton is shared by
//! every site); the tokens that only the site's robots.txt or configuration names follow, and
//! count only in a header with a crawler signal, never when they are browser vocabulary.

use crate::agent::{Category, Classifier, ClassifierError, Identity, KnownAgent, Matching, Signal};
use crate::catalog::{Catalog, CatalogEntry, Verification, MAX_FALLBACK};
use crate::policy::{Action, Actions};
use crate::robots::{Robots, Selected};
use std::sync::Arc;

/// How many tokens named only by a site's robots.txt (or its `bots:` overrides) get a metric
/// label of their own; the rest are labelled `other`, so that a hostile file cannot blow up the
/// number of series.
pub const MAX_SITE_TOKEN_LABELS: usize = 100;

/// The catalog's crawlers, classified by one automaton that every site shares: a site pays only
/// for the tokens its own robots.txt and overrides add.
#[derive(Debug)]
pub struct CatalogIndex {
    /// The catalog.
    pub catalog: Catalog,
    classifier: Arc<Classifier>,
    /// Per classifier agent: the catalog entry's parts every site's row shares.
    rows: Vec<Shared>,
}

/// The parts of a catalog row that do not depend on the site.
#[derive(Debug, Clone)]
struct Shared {
    token: Arc<str>,
    token_lower: Arc<str>,
    name: Arc<str>,
    operator: Option<Arc<str>>,
    verify: Option<Arc<Verification>>,
    fallback: Arc<[Arc<str>]>,
    star: bool,
}

impl CatalogIndex {
    /// Builds the shared automaton over a catalog.
    pub fn new(catalog: Catalog) -> Result<CatalogIndex, ClassifierError> {
        let classifier = Arc::new(Classifier::new(catalog.known_agents())?);
        let rows = classifier
            .agents()
            .iter()
            .map(|agent| {
                let entry = catalog.get(&agent.token);
                shared(agent, entry)
            })
            .collect();
        Ok(CatalogIndex {
            catalog,
            classifier,
            rows,
        })
    }

    /// The catalog's classifier.
    pub fn classifier(&self) -> &Classifier {
        &self.classifier
    }

    fn knows(&self, token: &str) -> bool {
        self.rows
            .iter()
            .any(|row| row.token.eq_ignore_ascii_case(token))
    }
}

fn shared(agent: &KnownAgent, entry: Option<&CatalogEntry>) -> Shared {
    Shared {
        token: Arc::from(agent.token.as_str()),
        token_lower: Arc::from(agent.token.to_ascii_lowercase()),
        name: Arc::from(agent.name.as_str()),
        operator: agent.operator.as_deref().map(Arc::from),
        verify: entry.and_then(|e| e.verify.clone()).map(Arc::new),
        fallback: entry
            .map(|e| e.fallback.iter().map(|t| Arc::from(t.as_str())).collect())
            .unwrap_or_else(|| Arc::from([])),
        star: entry.is_none_or(|e| !e.ignores_star),
    }
}

/// Where a row comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The crawler catalog.
    Catalog,
    /// Only the site's robots.txt or configuration names it: it counts only in a header with a
    /// crawler signal, and never when it is browser vocabulary.
    Site,
    /// No known token, but a crawler signal.
    Unnamed,
}

/// One crawler of a site.
#[derive(Debug, Clone)]
pub struct Crawler {
    /// The product token robots.txt names it by (`MJ`); empty for unnamed crawlers.
    pub token: Arc<str>,
    /// The token, lower-cased.
    pub token_lower: Arc<str>,
    /// The name operators know it by (`MJ12bot`), shown in reports and explanations.
    pub name: Arc<str>,
    /// Its metric label: the name, or `other` past [`MAX_SITE_TOKEN_LABELS`] site tokens.
    pub label: Arc<str>,
    /// Who runs it, when known.
    pub operator: Option<Arc<str>>,
    /// What it is for.
    pub category: Category,
    /// What the site does with its disallowed requests.
    pub action: Action,
    /// How its claim can be checked, from the catalog.
    pub verify: Option<Arc<Verification>>,
    /// The tokens whose groups it obeys when none names its own, in order.
    pub fallback: Arc<[Arc<str>]>,
    /// Whether the `*` groups apply to it when no group names it (false: its operator says it
    /// ignores `*`).
    pub star: bool,
    /// Where the row comes from.
    pub origin: Origin,
    /// Where its token counts in a header.
    pub matching: Matching,
    /// The groups it obeys in this table's robots.txt.
    pub selected: Selected,
}

impl Crawler {
    /// The groups it obeys in `robots` (another file than the table's, such as the previous
    /// one for a grace verdict): its token, then its fallbacks, then `*` unless it ignores it.
    pub fn select_in(&self, robots: &Robots) -> Selected {
        let mut chain: [&str; MAX_FALLBACK + 1] = [""; MAX_FALLBACK + 1];
        let mut len = 0;
        if !self.token.is_empty() {
            chain[0] = &self.token;
            len = 1;
        }
        for token in self.fallback.iter().take(MAX_FALLBACK) {
            if let Some(slot) = chain.get_mut(len) {
                *slot = token;
                len += 1;
            }
        }
        robots.select(&chain[..len], self.star)
    }

    /// The token whose groups apply to it, when a named group does (its own or a fallback's).
    pub fn group_token(&self) -> Option<&str> {
        let position = self.selected.token()?;
        if self.token.is_empty() {
            return self.fallback.get(position).map(|t| &**t);
        }
        match position {
            0 => Some(&self.token),
            n => self.fallback.get(n - 1).map(|t| &**t),
        }
    }
}

/// A site's crawler table for one robots.txt.
#[derive(Debug)]
pub struct Crawlers {
    catalog: Arc<Classifier>,
    /// The tokens the site names that the catalog does not.
    site: Option<Classifier>,
    /// Catalog rows (classifier order), then site rows.
    rows: Vec<Crawler>,
    unnamed: Crawler,
    person: Arc<str>,
}

impl Crawlers {
    /// Builds the table: the catalog's crawlers, then every token `robots` and `extra` (the
    /// configuration's overrides) name that the catalog does not, with the site's `actions`.
    pub fn build(
        catalog: &CatalogIndex,
        robots: &Robots,
        actions: &Actions,
        extra: &[String],
    ) -> Result<Crawlers, ClassifierError> {
        let named: Vec<KnownAgent> = robots
            .file()
            .groups
            .iter()
            .flat_map(|group| group.agents.iter())
            .chain(extra.iter())
            .filter(|token| !catalog.knows(token))
            .map(|token| KnownAgent::unlisted(token))
            .collect();
        let site = if named.is_empty() {
            None
        } else {
            Some(Classifier::new(named)?)
        };
        let other: Arc<str> = Arc::from("other");
        let mut rows: Vec<Crawler> = catalog
            .classifier
            .agents()
            .iter()
            .zip(&catalog.rows)
            .map(|(agent, shared)| {
                let action = actions.for_crawler(&shared.token, &shared.name, agent.category);
                row(
                    shared.clone(),
                    agent,
                    action,
                    Origin::Catalog,
                    shared.name.clone(),
                )
            })
            .collect();
        if let Some(site) = &site {
            for (position, agent) in site.agents().iter().enumerate() {
                let shared = shared(agent, None);
                let label = if position < MAX_SITE_TOKEN_LABELS {
                    shared.name.clone()
                } else {
                    other.clone()
                };
                let action = actions.for_crawler(&shared.token, &shared.name, agent.category);
                rows.push(row(shared, agent, action, Origin::Site, label));
            }
        }
        let unnamed_name: Arc<str> = Arc::from("unnamed");
        let mut unnamed = Crawler {
            token: Arc::from(""),
            token_lower: Arc::from(""),
            name: unnamed_name.clone(),
            label: unnamed_name,
            operator: None,
            category: Category::Unnamed,
            action: actions.for_crawler("", "", Category::Unnamed),
            verify: None,
            fallback: Arc::from([]),
            star: true,
            origin: Origin::Unnamed,
            matching: Matching::Never,
            selected: Selected::NONE,
        };
        for crawler in rows.iter_mut().chain(std::iter::once(&mut unnamed)) {
            crawler.selected = crawler.select_in(robots);
        }
        Ok(Crawlers {
            catalog: catalog.classifier.clone(),
            site,
            rows,
            unnamed,
            person: Arc::from("person"),
        })
    }

    /// Classifies a User-Agent against the catalog and the site's own tokens: the longest
    /// known name wins, as within one automaton. An [`Identity::Crawler`]'s index is its row.
    pub fn classify<'a>(&'a self, user_agent: &[u8]) -> Identity<'a> {
        self.classify_why(user_agent).0
    }

    /// [`Crawlers::classify`], and the crawler signal the header carries when it decided.
    pub fn classify_why<'a>(&'a self, user_agent: &[u8]) -> (Identity<'a>, Option<Signal>) {
        let from_catalog = self.catalog.classify_why(user_agent);
        let Some(site) = &self.site else {
            return from_catalog;
        };
        let offset = self.catalog.agents().len();
        let from_site = site.classify_why(user_agent);
        match (from_catalog, from_site) {
            (
                (Identity::Crawler { agent, .. }, _),
                (Identity::Crawler { index, agent: own }, why),
            ) if own.name.len() > agent.name.len() => (
                Identity::Crawler {
                    index: offset + index,
                    agent: own,
                },
                why,
            ),
            (catalog @ (Identity::Crawler { .. }, _), _) => catalog,
            ((_, _), (Identity::Crawler { index, agent }, why)) => (
                Identity::Crawler {
                    index: offset + index,
                    agent,
                },
                why,
            ),
            ((Identity::Unnamed, why), _) | (_, (Identity::Unnamed, why)) => {
                (Identity::Unnamed, why)
            }
            _ => (Identity::Person, None),
        }
    }

    /// The classifier's agent behind row `index`.
    pub fn agent(&self, index: usize) -> Option<&KnownAgent> {
        let catalog = self.catalog.agents();
        match catalog.get(index) {
            Some(agent) => Some(agent),
            None => self
                .site
                .as_ref()
                .and_then(|site| site.agents().get(index - catalog.len())),
        }
    }

    /// Row `index` (catalog rows first, then the site's).
    pub fn get(&self, index: usize) -> Option<&Crawler> {
        self.rows.get(index)
    }

    /// The row of an identity: its crawler's, the unnamed crawlers' row, or none for a person.
    pub fn row(&self, identity: &Identity<'_>) -> Option<&Crawler> {
        match identity {
            Identity::Crawler { index, .. } => Some(self.rows.get(*index).unwrap_or(&self.unnamed)),
            Identity::Unnamed => Some(&self.unnamed),
            Identity::Person => None,
        }
    }

    /// The metric label of people.
    pub fn person_label(&self) -> &Arc<str> {
        &self.person
    }

    /// The row unnamed crawlers share.
    pub fn unnamed(&self) -> &Crawler {
        &self.unnamed
    }

    /// Every named row, catalog first.
    pub fn rows(&self) -> &[Crawler] {
        &self.rows
    }

    /// The row for a token or a name, compared case-insensitively.
    pub fn find(&self, token_or_name: &str) -> Option<&Crawler> {
        self.rows
            .iter()
            .find(|row| row.token.eq_ignore_ascii_case(token_or_name))
            .or_else(|| {
                self.rows
                    .iter()
                    .find(|row| row.name.eq_ignore_ascii_case(token_or_name))
            })
    }
}

fn row(
    shared: Shared,
    agent: &KnownAgent,
    action: Action,
    origin: Origin,
    label: Arc<str>,
) -> Crawler {
    Crawler {
        token: shared.token,
        token_lower: shared.token_lower,
        name: shared.name,
        label,
        operator: shared.operator,
        category: agent.category,
        action,
        verify: shared.verify,
        fallback: shared.fallback,
        star: shared.star,
        origin,
        matching: agent.matching,
        selected: Selected::NONE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::robots::GroupKind;

    fn table(robots: &str, actions: &Actions, extra: &[&str]) -> (Robots, Crawlers) {
        let catalog = CatalogIndex::new(Catalog::embedded().unwrap()).unwrap();
        let robots = Robots::parse(robots.as_bytes());
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let crawlers = Crawlers::build(&catalog, &robots, actions, &extra).unwrap();
        (robots, crawlers)
    }

    fn crawler<'a>(crawlers: &'a Crawlers, ua: &str) -> Option<&'a Crawler> {
        crawlers.row(&crawlers.classify(ua.as_bytes()))
    }

    #[test]
    fn compliant_crawlers_are_judged_by_the_group_they_obey() {
        let text = "User-agent: Googlebot\nAllow: /\n\nUser-agent: *\nDisallow: /\n";
        let (robots, crawlers) = table(text, &Actions::default(), &[]);
        let image = crawler(&crawlers, "Googlebot-Image/1.0").unwrap();
        assert_eq!(image.name.as_ref(), "Googlebot-Image");
        assert_eq!(image.group_token(), Some("Googlebot"));
        assert!(robots.check_selected(image.selected, "/photo.jpg").allowed);
        // Storebot-Google documents no fallback: it follows `*`.
        let store = crawler(&crawlers, "Mozilla/5.0 (X11; Linux x86_64; Storebot-Google/1.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/79.0.3945.88 Safari/537.36").unwrap();
        assert_eq!(store.selected.group(), GroupKind::Star);
        assert!(!robots.check_selected(store.selected, "/p").allowed);
        // AdsBot ignores `*`: with no group of its own, nothing restricts it.
        let ads = crawler(
            &crawlers,
            "AdsBot-Google (+http://www.google.com/adsbot.html)",
        )
        .unwrap();
        assert!(!ads.star);
        assert_eq!(ads.selected.group(), GroupKind::None);
        assert!(robots.check_selected(ads.selected, "/p").allowed);
        // Applebot follows Googlebot's group, as Apple documents.
        let apple = crawler(&crawlers, "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)").unwrap();
        assert_eq!(apple.group_token(), Some("Googlebot"));
        // Its own group wins over its fallback's.
        let own =
            "User-agent: Googlebot-Image\nDisallow: /img/\n\nUser-agent: Googlebot\nAllow: /\n";
        let (robots, crawlers) = table(own, &Actions::default(), &[]);
        let image = crawler(&crawlers, "Googlebot-Image/1.0").unwrap();
        assert_eq!(image.group_token(), Some("Googlebot-Image"));
        assert!(!robots.check_selected(image.selected, "/img/a.png").allowed);
    }

    #[test]
    fn rows_carry_the_name_operators_know() {
        let (robots, crawlers) = table(
            "User-agent: MJ12bot\nDisallow: /\n",
            &Actions::default(),
            &[],
        );
        let mj = crawler(
            &crawlers,
            "Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)",
        )
        .unwrap();
        assert_eq!(
            (&*mj.token, &*mj.name, &*mj.label),
            ("MJ", "MJ12bot", "MJ12bot")
        );
        assert_eq!(mj.origin, Origin::Catalog);
        assert!(!robots.check_selected(mj.selected, "/x").allowed);
        assert_eq!(crawlers.find("mj12bot").map(|c| &*c.token), Some("MJ"));
    }

    #[test]
    fn actions_per_category_with_overrides_winning() {
        let mut actions = Actions::for_site(Action::Block);
        actions.categories.insert(Category::Seo, Action::Tag);
        actions.crawlers.insert("ahrefsbot".into(), Action::Count);
        let (_, crawlers) = table("User-agent: *\nDisallow: /\n", &actions, &[]);
        let action = |ua: &str| crawler(&crawlers, ua).map(|c| c.action);
        assert_eq!(action("okhttp/4.12.0"), Some(Action::Count));
        assert_eq!(action("Dart/3.2 (dart:io)"), Some(Action::Count));
        assert_eq!(action("GPTBot/1.2"), Some(Action::Block));
        assert_eq!(action("SemrushBot/7"), Some(Action::Tag));
        assert_eq!(action("AhrefsBot/7.0"), Some(Action::Count));
        assert_eq!(action("FooBot/1.0"), Some(Action::Block));
        assert_eq!(crawlers.unnamed().category, Category::Unnamed);
    }

    #[test]
    fn site_tokens_never_turn_people_into_crawlers() {
        let text = "User-agent: Mozilla/4.0 (compatible; BullsEye; Windows 95)\nUser-agent: Microsoft URL Control\nUser-agent: Java/1.4\nUser-agent: FooCrawler\nDisallow: /\n";
        let (_, crawlers) = table(text, &Actions::default(), &["BarAgent"]);
        for person in [
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
            "Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0.4266; Pro)",
            "Mozilla/5.0 (Java; U; en-us; nokia201) UCBrowser8.3.0.154/70/355/UCWEB Mobile",
            "BarAgent/1.0",
        ] {
            assert!(crawler(&crawlers, person).is_none(), "{person}");
        }
        let mozilla = crawlers.find("Mozilla").unwrap();
        assert_eq!(
            (mozilla.origin, mozilla.matching),
            (Origin::Site, Matching::Never)
        );
        assert_eq!(
            crawler(&crawlers, "FooCrawler/2").map(|c| &*c.name),
            Some("FooCrawler")
        );
        // Java is the catalog's, counted only as the first product.
        assert_eq!(
            crawler(&crawlers, "Java/1.8.0_151").map(|c| c.origin),
            Some(Origin::Catalog)
        );
    }

    #[test]
    fn labels_for_site_tokens_are_capped() {
        let mut text = String::new();
        for i in 0..(MAX_SITE_TOKEN_LABELS + 20) {
            let token: String = format!("{i:04}")
                .bytes()
                .map(|b| char::from(b'a' + b - b'0'))
                .collect();
            text.push_str(&format!("User-agent: zz{token}bot\n"));
        }
        text.push_str("Disallow: /\n");
        let (_, crawlers) = table(&text, &Actions::default(), &[]);
        assert_eq!(
            crawler(&crawlers, "zzaaaabot").map(|c| &*c.label),
            Some("zzaaaabot")
        );
        assert_eq!(
            crawler(&crawlers, "zzabbjbot").map(|c| &*c.label),
            Some("other")
        );
    }
}

//! A site's crawlers: one table of every crawler it knows, built once per robots.txt, that the
//! proxy, `crawlgate explain` and `crawlgate audit` all classify and judge with.
//!
//! A [`Crawler`] is a crawler as a site judges it: the token robots.txt names it by, the name
//! operators see, its category, the action the site takes on it, how it can be verified, the
//! groups it obeys in this file (its own, else its operator's documented fallbacks, else `*`
//! unless it ignores `*`), and whether only the site names it. The catalog's rows come first;
//! they, and their automaton, are shared by every site, which keeps only what differs for it
//! (the few crawlers its file or its overrides name), so that a thousand sites do not hold a
//! thousand copies of the catalog. The tokens that only the site's robots.txt or configuration
//! names follow (category `unlisted`), and count only in a header with a crawler signal, never
//! when they are browser vocabulary.
//!
//! Who asks is a [`Who`] whose crawler rows are this table's: [`Crawlers::classify`] gives it,
//! [`Crawlers::row`] turns it into the [`Crawler`] to judge.

use crate::agent::{
    Category, Classified, Classifier, ClassifierError, KnownAgent, Matching, Signal, Who,
};
use crate::catalog::{Catalog, CatalogEntry, Verification, MAX_FALLBACK};
use crate::policy::{Action, Actions};
use crate::referrals::Referrers;
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
    /// Per classifier agent, its row, shared by every site.
    rows: Arc<[Row]>,
    /// The catalog's tokens, lower-cased.
    tokens: std::collections::HashSet<Arc<str>>,
    /// The operators' referrer hosts.
    referrers: Arc<Referrers>,
}

impl CatalogIndex {
    /// Builds the shared automaton over a catalog.
    pub fn new(catalog: Catalog) -> Result<CatalogIndex, ClassifierError> {
        let classifier = Arc::new(Classifier::new(catalog.known_agents())?);
        let referrers = Arc::new(catalog.referrers());
        let rows: Arc<[Row]> = classifier
            .agents()
            .iter()
            .map(|agent| {
                let mut row = Row::new(agent, catalog.get(&agent.token));
                row.referral_operator = row
                    .operator
                    .as_deref()
                    .and_then(|operator| referrers.operator(operator))
                    .cloned();
                row
            })
            .collect();
        let tokens = rows.iter().map(|row| row.token_lower.clone()).collect();
        Ok(CatalogIndex {
            catalog,
            classifier,
            rows,
            tokens,
            referrers,
        })
    }

    /// The catalog's classifier.
    pub fn classifier(&self) -> &Classifier {
        &self.classifier
    }

    fn knows(&self, token: &str) -> bool {
        self.tokens.contains(token.to_ascii_lowercase().as_str())
    }

    /// Whether a crawler of the catalog has this name (`MJ12bot`, any case): what a
    /// configuration's `bots:` key that is not a product token must be.
    pub fn knows_name(&self, name: &str) -> bool {
        self.rows
            .iter()
            .any(|row| row.name.eq_ignore_ascii_case(name))
    }
}

/// What a site's crawler is whatever the site: shared by every site for the catalog's.
#[derive(Debug, Clone)]
pub struct Row {
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
    /// Its operator, when the catalog lists where that operator's referrals come from: its
    /// crawls are counted against them.
    pub referral_operator: Option<Arc<str>>,
    /// What it is for; `unlisted` for a token only the site names (it counts only in a header
    /// with a crawler signal, never when it is browser vocabulary), `unnamed` for the row every
    /// unnamed crawler shares.
    pub category: Category,
    /// How its claim can be checked, from the catalog.
    pub verify: Option<Arc<Verification>>,
    /// The tokens whose groups it obeys when none names its own, in order.
    pub fallback: Arc<[Arc<str>]>,
    /// Whether the `*` groups apply to it when no group names it (false: its operator says it
    /// ignores `*`).
    pub star: bool,
    /// Where its token counts in a header.
    pub matching: Matching,
}

impl Row {
    fn new(agent: &KnownAgent, entry: Option<&CatalogEntry>) -> Row {
        let name: Arc<str> = Arc::from(agent.name.as_str());
        Row {
            token: Arc::from(agent.token.as_str()),
            token_lower: Arc::from(agent.token.to_ascii_lowercase()),
            label: name.clone(),
            name,
            operator: agent.operator.as_deref().map(Arc::from),
            referral_operator: None,
            category: agent.category,
            verify: entry.and_then(|e| e.verify.clone()).map(Arc::new),
            fallback: entry
                .map(|e| e.fallback.iter().map(|t| Arc::from(t.as_str())).collect())
                .unwrap_or_else(|| Arc::from([])),
            star: entry.is_none_or(|e| !e.ignores_star),
            matching: agent.matching,
        }
    }

    /// Whether the catalog lists it (not a token only the site names, nor the unnamed row).
    pub fn is_catalogs(&self) -> bool {
        !matches!(self.category, Category::Unlisted | Category::Unnamed)
    }

    /// The groups it obeys in `robots`: its token's, then its fallbacks', then `*` unless it
    /// ignores it.
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
}

/// One crawler of a site: its [`Row`] (reached through `Deref`), the action the site takes on
/// its disallowed requests, and the groups it obeys in the table's robots.txt.
#[derive(Debug, Clone, Copy)]
pub struct Crawler<'a> {
    /// What it is whatever the site.
    pub row: &'a Row,
    /// What the site does with its disallowed requests.
    pub action: Action,
    /// The groups it obeys in this table's robots.txt.
    pub selected: Selected,
}

impl std::ops::Deref for Crawler<'_> {
    type Target = Row;

    fn deref(&self) -> &Row {
        self.row
    }
}

impl Crawler<'_> {
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
    /// The catalog's rows, shared by every site.
    catalog_rows: Arc<[Row]>,
    /// The groups a catalog crawler obeys when no group names it or a fallback of it: `*`, or
    /// nothing for one that ignores `*`.
    star: Selected,
    /// Catalog crawlers whose token or fallback this file names, with the groups they obey, by
    /// row (sorted).
    named: Vec<(usize, Selected)>,
    /// The action for each category, in [`Category::ALL`]'s order.
    by_category: [Action; Category::ALL.len()],
    /// Catalog crawlers the site overrides, with their action, by row (sorted).
    overridden: Vec<(usize, Action)>,
    /// The tokens the site names that the catalog does not.
    site: Option<Classifier>,
    /// Their rows, with their action and groups.
    site_rows: Vec<(Row, Action, Selected)>,
    unnamed: (Row, Action, Selected),
    person: Arc<str>,
    referrers: Arc<Referrers>,
}

/// The value for `index` in a list sorted by index.
fn lookup<T: Copy>(list: &[(usize, T)], index: usize) -> Option<T> {
    list.binary_search_by_key(&index, |(i, _)| *i)
        .ok()
        .and_then(|at| list.get(at))
        .map(|(_, value)| *value)
}

/// A category's place in [`Category::ALL`], which lists them in declaration order.
fn category_slot(category: Category) -> usize {
    category as usize
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
        let star = robots.select(&[], true);
        let named = catalog
            .rows
            .iter()
            .enumerate()
            .filter_map(|(index, row)| {
                let selected = row.select_in(robots);
                let default = if row.star { star } else { Selected::NONE };
                (selected != default).then_some((index, selected))
            })
            .collect();
        let mut by_category = [actions.site; Category::ALL.len()];
        for (slot, category) in by_category.iter_mut().zip(Category::ALL) {
            *slot = actions.for_crawler("", "", category);
        }
        let overridden = if actions.crawlers.is_empty() {
            Vec::new()
        } else {
            catalog
                .rows
                .iter()
                .enumerate()
                .filter_map(|(index, row)| {
                    let action = actions.for_crawler(&row.token, &row.name, row.category);
                    (action != by_category[category_slot(row.category)]).then_some((index, action))
                })
                .collect()
        };
        let other: Arc<str> = Arc::from("other");
        let site_rows = site
            .iter()
            .flat_map(|site| site.agents().iter().enumerate())
            .map(|(position, agent)| {
                let mut row = Row::new(agent, None);
                if position >= MAX_SITE_TOKEN_LABELS {
                    row.label = other.clone();
                }
                let action = actions.for_crawler(&row.token, &row.name, row.category);
                let selected = row.select_in(robots);
                (row, action, selected)
            })
            .collect();
        let unnamed_name: Arc<str> = Arc::from("unnamed");
        let unnamed = Row {
            token: Arc::from(""),
            token_lower: Arc::from(""),
            name: unnamed_name.clone(),
            label: unnamed_name,
            operator: None,
            referral_operator: None,
            category: Category::Unnamed,
            verify: None,
            fallback: Arc::from([]),
            star: true,
            matching: Matching::Never,
        };
        let unnamed_action = by_category[category_slot(Category::Unnamed)];
        Ok(Crawlers {
            catalog: catalog.classifier.clone(),
            catalog_rows: catalog.rows.clone(),
            star,
            named,
            by_category,
            overridden,
            site,
            site_rows,
            unnamed: (unnamed, unnamed_action, star),
            person: Arc::from("person"),
            referrers: catalog.referrers.clone(),
        })
    }

    /// The catalog operators' referrer hosts: which operator sent a person.
    pub fn referrers(&self) -> &Referrers {
        &self.referrers
    }

    /// Classifies a User-Agent against the catalog and the site's own tokens: the longest
    /// known name wins, as within one automaton. A [`Who::Crawler`]'s row is this table's.
    pub fn classify(&self, user_agent: &[u8]) -> Who {
        self.read(user_agent).who
    }

    /// [`Crawlers::classify`], with where the name stood and the crawler signal the header
    /// carries. The header is read once for the catalog and the site's tokens.
    pub fn read(&self, user_agent: &[u8]) -> Classified {
        let (from_catalog, reading) = self.catalog.read_keeping(user_agent);
        // The site's tokens count only in a header with a crawler signal; a person by the
        // catalog has none (it looked for crawler words, having found no name; or the header
        // holds nothing that could name a crawler and was not read), so the site's tokens
        // cannot name one either.
        let (Some(site), Some(mut reading)) = (&self.site, reading) else {
            return from_catalog;
        };
        if from_catalog.who == Who::Person {
            return from_catalog;
        }
        if from_catalog.persons_app {
            // A person's app the catalog knows owns its URLs for the site's tokens too.
            for signal in Signal::AN_APPS_OWN {
                reading.signals.remove(signal);
            }
        }
        let offset = self.catalog.agents().len();
        let from_site = site.read_with(user_agent, &reading);
        let name_len = |classifier: &Classifier, who: Who| {
            classifier.agent(who).map_or(0, |agent| agent.name.len())
        };
        let site_row = |classified: Classified| Classified {
            who: match classified.who {
                Who::Crawler(index) => Who::Crawler(offset + index),
                other => other,
            },
            ..classified
        };
        match (from_catalog.who, from_site.who) {
            (Who::Crawler(_), Who::Crawler(_))
                if name_len(site, from_site.who) > name_len(&self.catalog, from_catalog.who) =>
            {
                site_row(from_site)
            }
            (Who::Crawler(_), _) => from_catalog,
            (_, Who::Crawler(_)) => site_row(from_site),
            (Who::Unnamed, _) => from_catalog,
            (_, Who::Unnamed) => from_site,
            _ => from_catalog,
        }
    }

    /// Crawler `index` (the catalog's first, then the site's).
    pub fn get(&self, index: usize) -> Option<Crawler<'_>> {
        let Some(row) = self.catalog_rows.get(index) else {
            let (row, action, selected) = self.site_rows.get(index - self.catalog_rows.len())?;
            return Some(Crawler {
                row,
                action: *action,
                selected: *selected,
            });
        };
        let selected = match lookup(&self.named, index) {
            Some(selected) => selected,
            None if row.star => self.star,
            None => Selected::NONE,
        };
        let action = lookup(&self.overridden, index)
            .unwrap_or(self.by_category[category_slot(row.category)]);
        Some(Crawler {
            row,
            action,
            selected,
        })
    }

    /// The crawler `who` is: its row, the unnamed crawlers' row, or none for a person.
    pub fn row(&self, who: Who) -> Option<Crawler<'_>> {
        match who {
            Who::Crawler(index) => self.get(index).or(Some(self.unnamed())),
            Who::Unnamed => Some(self.unnamed()),
            Who::Person => None,
        }
    }

    /// The row unnamed crawlers share.
    pub fn unnamed(&self) -> Crawler<'_> {
        let (row, action, selected) = &self.unnamed;
        Crawler {
            row,
            action: *action,
            selected: *selected,
        }
    }

    /// The metric label of people.
    pub fn person_label(&self) -> &Arc<str> {
        &self.person
    }

    /// How many named crawlers the table holds (the catalog's and the site's).
    pub fn len(&self) -> usize {
        self.catalog_rows.len() + self.site_rows.len()
    }

    /// Whether the table holds no named crawler.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every named crawler, the catalog's first.
    pub fn iter(&self) -> impl Iterator<Item = Crawler<'_>> {
        (0..self.len()).filter_map(|index| self.get(index))
    }

    /// The row of the crawler whose product token is `token` (compared case-insensitively):
    /// how a verified signer, whatever its User-Agent says, is found in the table.
    pub fn position(&self, token: &str) -> Option<usize> {
        (0..self.len()).find(|&index| {
            self.get(index)
                .is_some_and(|c| c.token.eq_ignore_ascii_case(token))
        })
    }

    /// The crawler with a token or a name, compared case-insensitively.
    pub fn find(&self, token_or_name: &str) -> Option<Crawler<'_>> {
        self.iter()
            .find(|c| c.token.eq_ignore_ascii_case(token_or_name))
            .or_else(|| {
                self.iter()
                    .find(|c| c.name.eq_ignore_ascii_case(token_or_name))
            })
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

    fn crawler<'a>(crawlers: &'a Crawlers, ua: &str) -> Option<Crawler<'a>> {
        crawlers.row(crawlers.classify(ua.as_bytes()))
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
    fn categories_are_listed_in_declaration_order() {
        for (slot, category) in Category::ALL.into_iter().enumerate() {
            assert_eq!(category_slot(category), slot, "{category}");
        }
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
        assert!(mj.is_catalogs());
        assert!(!robots.check_selected(mj.selected, "/x").allowed);
        assert_eq!(crawlers.find("mj12bot").map(|c| &*c.row.token), Some("MJ"));
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
            (mozilla.category, mozilla.matching),
            (Category::Unlisted, Matching::Never)
        );
        assert_eq!(
            crawler(&crawlers, "FooCrawler/2").map(|c| &*c.row.name),
            Some("FooCrawler")
        );
        // Java is the catalog's, counted only as the first product.
        assert_eq!(
            crawler(&crawlers, "Java/1.8.0_151").map(|c| c.is_catalogs()),
            Some(true)
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
            crawler(&crawlers, "zzaaaabot").map(|c| &*c.row.label),
            Some("zzaaaabot")
        );
        assert_eq!(
            crawler(&crawlers, "zzabbjbot").map(|c| &*c.row.label),
            Some("other")
        );
    }
}

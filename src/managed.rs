//! A robots.txt the site manages at the edge: groups the operator adds to the origin's (or the
//! file's) robots.txt without editing it, composed by one rule, so that what crawlgate serves at
//! `/robots.txt` is exactly what it enforces.
//!
//! **A managed crawler's rules are the managed block's, never merged.** RFC 9309 merges every
//! group that names a token and lets the least restrictive of two equally long rules win, so a
//! managed `Disallow: /` merged with the origin's `Allow: /` would allow. Each origin line that
//! names a managed token is therefore commented out (`# managed by crawlgate: …`, kept so that
//! a reader sees what was overridden); a group left naming no one is commented out whole
//! (sitemaps inside it stay, being file-wide), and its rules with it. The managed block goes
//! first, so that a file at the parse limit loses its own tail, never the block. A
//! `Content-Signal` line is a `User-agent: *` group of its own, which RFC 9309 merges with the
//! origin's `*` group.

use crate::agent::Category;
use crate::catalog::Catalog;
use crate::robots::parse::{self, lines};

/// What the operator manages for a site.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Managed {
    /// Categories whose catalog crawlers are managed, and how.
    pub categories: Vec<(Category, Choice)>,
    /// Crawlers (product tokens) managed one by one, and how: this wins over a category.
    pub crawlers: Vec<(String, Choice)>,
    /// A `Content-Signal` value (`search=yes, ai-train=no`) for every crawler.
    pub content_signal: Option<String>,
}

/// What the managed block says of a crawler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Choice {
    /// `Disallow: /`, whatever the origin's file says of it.
    Disallow,
    /// Left to the origin's file (a crawler exempted from its category's choice).
    Origin,
}

/// Where a line of the composed file comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "from", content = "line")]
pub enum Source {
    /// The managed block.
    Managed,
    /// The origin's file, at this line.
    Origin(u32),
    /// The origin's line, commented out: it named a managed crawler.
    Overridden(u32),
}

impl Source {
    /// How `robots compose --sources`, `lint` and `check` name it: `managed`, `origin N`,
    /// `overridden N`.
    pub fn label(self) -> String {
        match self {
            Source::Managed => "managed".to_owned(),
            Source::Origin(line) => format!("origin {line}"),
            Source::Overridden(line) => format!("overridden {line}"),
        }
    }
}

/// The composed file, and where each of its lines comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Composed {
    /// The text served and enforced.
    pub text: Vec<u8>,
    /// One per line of `text`.
    pub sources: Vec<Source>,
}

/// What commented-out origin lines start with.
pub const OVERRIDDEN: &str = "# managed by crawlgate: ";

impl Managed {
    /// The product tokens the block disallows: the catalog's crawlers of each `disallow`
    /// category and each `disallow` crawler, less the crawlers left to the origin; sorted,
    /// each once (case-insensitively).
    pub fn disallowed(&self, catalog: &Catalog) -> Vec<String> {
        let choice_of = |token: &str| {
            self.crawlers
                .iter()
                .find(|(named, _)| named.eq_ignore_ascii_case(token))
                .map(|&(_, choice)| choice)
        };
        let by_category = catalog.bots.iter().filter_map(|entry| {
            let managed = self.categories.iter().any(|&(category, choice)| {
                category == entry.category && choice == Choice::Disallow
            });
            managed.then_some(entry.token.as_str())
        });
        let named = self
            .crawlers
            .iter()
            .filter(|(_, choice)| *choice == Choice::Disallow)
            .map(|(token, _)| token.as_str());
        let mut tokens: Vec<String> = by_category
            .chain(named)
            .filter(|token| choice_of(token) != Some(Choice::Origin))
            .map(str::to_owned)
            .collect();
        tokens.sort_by_key(|token| token.to_ascii_lowercase());
        tokens.dedup_by(|a, b| a.eq_ignore_ascii_case(b));
        tokens
    }

    /// The origin's file composed with the block for `disallowed` tokens ([`Managed::disallowed`]).
    pub fn compose(&self, origin: &[u8], disallowed: &[String]) -> Composed {
        let mut composed = Composed {
            text: Vec::with_capacity(origin.len() + 64 * (disallowed.len() + 4)),
            sources: Vec::new(),
        };
        let mut managed_line = |text: &str| {
            composed.text.extend_from_slice(text.as_bytes());
            composed.text.push(b'\n');
            composed.sources.push(Source::Managed);
        };
        if !disallowed.is_empty() || self.content_signal.is_some() {
            managed_line("# Managed by crawlgate: these groups are the site operator's, and win over any line below that names the same crawler.");
        }
        if !disallowed.is_empty() {
            for token in disallowed {
                managed_line(&format!("User-agent: {token}"));
            }
            managed_line("Disallow: /");
            managed_line("");
        }
        if let Some(signal) = &self.content_signal {
            managed_line("User-agent: *");
            managed_line(&format!("Content-Signal: {signal}"));
            // Only a rule ends a group: without one, the origin's first user-agent lines would
            // join this `*` group. An empty `Disallow` ends it and restricts nothing.
            managed_line("Disallow:");
            managed_line("");
        }
        let managed = |token: &str| {
            disallowed
                .iter()
                .any(|named| named.eq_ignore_ascii_case(token))
        };
        let dropped = dropped_lines(origin, &managed);
        for (index, line) in lines(strip_bom(origin)).enumerate() {
            let number = u32::try_from(index + 1).unwrap_or(u32::MAX);
            if dropped.binary_search(&number).is_ok() {
                composed.text.extend_from_slice(OVERRIDDEN.as_bytes());
                composed.sources.push(Source::Overridden(number));
            } else {
                composed.sources.push(Source::Origin(number));
            }
            composed.text.extend_from_slice(line);
            composed.text.push(b'\n');
        }
        composed
    }
}

fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
}

/// The origin's lines (1-based, sorted) the managed block overrides: each user-agent line that
/// names a managed token, every line of a group left naming no one but its sitemaps, and every
/// line but a sitemap before the first group.
fn dropped_lines(origin: &[u8], managed: &dyn Fn(&str) -> bool) -> Vec<u32> {
    let file = parse::parse(origin, usize::MAX);
    let all: Vec<&[u8]> = lines(strip_bom(origin)).collect();
    let line_text = |number: u32| {
        let index = (number as usize).checked_sub(1);
        index.and_then(|i| all.get(i)).copied().unwrap_or_default()
    };
    // What one line is, read by the parser itself: the token a user-agent line names, a
    // sitemap, or something else.
    let read = |number: u32| parse::parse(line_text(number), usize::MAX);
    let mut dropped = Vec::new();
    // Before the origin's first group nothing applies to anyone but sitemaps; after the block,
    // a rule there would be the block's last group's. Every such line goes.
    let first = file
        .groups
        .first()
        .map_or(file.lines + 1, |group| group.line);
    for number in 1..first {
        let text = line_text(number);
        let content = text.split(|&b| b == b'#').next().unwrap_or_default();
        if !content.trim_ascii().is_empty() && read(number).sitemaps.is_empty() {
            dropped.push(number);
        }
    }
    for (index, group) in file.groups.iter().enumerate() {
        let end = file
            .groups
            .get(index + 1)
            .map_or(file.lines, |next| next.line - 1);
        let keeps_someone = group.star || group.agents.iter().any(|agent| !managed(agent));
        for number in group.line..=end {
            let line = read(number);
            let names_managed = line
                .groups
                .first()
                .is_some_and(|g| !g.star && g.agents.iter().any(|agent| managed(agent)));
            if names_managed || (!keeps_someone && line.sitemaps.is_empty()) {
                dropped.push(number);
            }
        }
    }
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Robots;

    fn block(tokens: &[&str], signal: Option<&str>) -> (Managed, Vec<String>) {
        let managed = Managed {
            categories: Vec::new(),
            crawlers: tokens
                .iter()
                .map(|t| ((*t).to_owned(), Choice::Disallow))
                .collect(),
            content_signal: signal.map(str::to_owned),
        };
        let disallowed = managed.disallowed(&Catalog::default());
        (managed, disallowed)
    }

    fn composed(origin: &str, tokens: &[&str], signal: Option<&str>) -> (String, Robots) {
        let (managed, disallowed) = block(tokens, signal);
        let text = managed.compose(origin.as_bytes(), &disallowed).text;
        let robots = Robots::parse(&text);
        (String::from_utf8(text).unwrap(), robots)
    }

    #[test]
    fn a_managed_crawler_is_disallowed_whatever_the_origin_allowed_it() {
        let origin = "User-agent: GPTBot\nAllow: /\n\nUser-agent: *\nDisallow: /private/\n";
        let (text, robots) = composed(origin, &["GPTBot"], None);
        assert!(!robots.is_allowed("GPTBot", "/"), "{text}");
        assert!(robots.is_allowed("Googlebot", "/page"), "{text}");
        assert!(!robots.is_allowed("Googlebot", "/private/x"), "{text}");
        assert!(
            text.contains("# managed by crawlgate: User-agent: GPTBot\n"),
            "{text}"
        );
        assert!(
            text.contains("# managed by crawlgate: Allow: /\n"),
            "{text}"
        );
    }

    #[test]
    fn a_group_that_names_others_too_keeps_them_and_its_rules() {
        let origin = "User-agent: CCBot\nUser-agent: Bingbot\nDisallow: /drafts/\nSitemap: https://example.com/s.xml\n";
        let (text, robots) = composed(origin, &["ccbot"], None);
        assert!(!robots.is_allowed("CCBot", "/page"), "{text}");
        assert!(!robots.is_allowed("Bingbot", "/drafts/x"), "{text}");
        assert!(robots.is_allowed("Bingbot", "/page"), "{text}");
        assert_eq!(robots.sitemaps().count(), 1);
    }

    #[test]
    fn a_group_left_naming_no_one_goes_whole_but_its_sitemaps_stay() {
        let origin = "User-agent: GPTBot\nDisallow: /only-this/\nSitemap: https://example.com/s.xml\n\nUser-agent: *\nAllow: /\n";
        let (text, robots) = composed(origin, &["GPTBot"], None);
        // Its rules do not fall to the group before or after it.
        assert!(!robots.is_allowed("GPTBot", "/other"), "{text}");
        assert!(robots.is_allowed("Googlebot", "/only-this/x"), "{text}");
        assert_eq!(robots.sitemaps().count(), 1, "{text}");
        assert!(
            text.contains("# managed by crawlgate: Disallow: /only-this/"),
            "{text}"
        );
    }

    #[test]
    fn each_line_says_where_it_comes_from_and_origin_lines_keep_their_numbers() {
        let origin = "User-agent: GPTBot\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n";
        let (managed, disallowed) = block(&["GPTBot"], Some("search=yes, ai-train=no"));
        let composed = managed.compose(origin.as_bytes(), &disallowed);
        let text = String::from_utf8(composed.text.clone()).unwrap();
        assert_eq!(text.lines().count(), composed.sources.len());
        let origin_lines: Vec<Source> = composed
            .sources
            .iter()
            .copied()
            .filter(|s| *s != Source::Managed)
            .collect();
        assert_eq!(
            origin_lines,
            [
                Source::Overridden(1),
                Source::Overridden(2),
                Source::Overridden(3),
                Source::Origin(4),
                Source::Origin(5),
            ]
        );
        let robots = Robots::parse(&composed.text);
        assert!(
            robots.problems().is_empty(),
            "{:?}\n{text}",
            robots.problems()
        );
        assert_eq!(robots.file().preferences.len(), 1, "{text}");
    }

    #[test]
    fn the_block_captures_none_of_the_origins_lines() {
        // A stray rule before any user-agent line applies to no one, and the origin's first
        // group is not the block's `*` group.
        let origin =
            "Allow: /x\nSitemap: https://example.com/s.xml\nUser-agent: Yeti\nDisallow: /\n";
        let (text, robots) = composed(origin, &["GPTBot"], Some("ai-train=no"));
        assert!(!robots.is_allowed("GPTBot", "/x"), "{text}");
        assert!(!robots.is_allowed("Yeti", "/page"), "{text}");
        assert!(robots.is_allowed("Googlebot", "/page"), "{text}");
        assert!(
            text.contains("# managed by crawlgate: Allow: /x\n"),
            "{text}"
        );
        assert_eq!(robots.sitemaps().count(), 1, "{text}");
    }

    #[test]
    fn nothing_managed_leaves_the_file_as_it_reads() {
        let origin = "\u{feff}User-agent: *\r\nDisallow: /x\rAllow: /x/y\n";
        let (text, robots) = composed(origin, &[], None);
        assert_eq!(text, "User-agent: *\nDisallow: /x\nAllow: /x/y\n");
        assert!(!robots.is_allowed("a", "/x/z") && robots.is_allowed("a", "/x/y"));
    }

    #[test]
    fn categories_are_the_catalogs_crawlers_less_those_left_to_the_origin() {
        let catalog = Catalog::embedded().unwrap();
        let managed = Managed {
            categories: vec![(Category::AiTraining, Choice::Disallow)],
            crawlers: vec![
                ("GPTBot".into(), Choice::Origin),
                ("Googlebot".into(), Choice::Disallow),
            ],
            content_signal: None,
        };
        let tokens = managed.disallowed(&catalog);
        let has = |t: &str| tokens.iter().any(|x| x.eq_ignore_ascii_case(t));
        assert!(
            has("CCBot") && has("ClaudeBot") && has("Googlebot"),
            "{tokens:?}"
        );
        assert!(!has("GPTBot") && !has("Bingbot"), "{tokens:?}");
    }
}

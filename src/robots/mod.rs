//! robots.txt: the [`Robots`] type, which parses a file once and answers queries from automata.
//!
//! The data flows one way: bytes → [`parse`] (lines, groups, problems) → [`pattern`] (normalised,
//! ranked rules, each sorted into a shape) → [`matcher`] (each group compiled once, rule by rule
//! into the cheapest strategy) → [`Verdict`]. Every query's work is bounded ([`WORK_BUDGET`]):
//! one over it is disallowed ([`Reason::OverBudget`]). A crawler named by several groups is answered by
//! asking each of them in turn for a better rule than the best so far, so that no group is ever
//! compiled twice, however the file combines its groups.
//!
//! A group's content-use preferences (`Content-Usage`, `Content-Signal`) are compiled beside its
//! rules ([`preferences`], `preference_matcher`) and asked the same way:
//! [`Robots::preference_selected`].

mod matcher;
pub mod parse;
pub mod path;
mod pattern;
mod preference_matcher;
pub mod preferences;
mod problem;
mod radix;
mod segments;
pub mod token;

pub use parse::{
    Group, ParsedFile, Rule, RuleKind, Sitemap, DEFAULT_MAX_BYTES, MAX_CRAWL_DELAY_SECONDS,
};
pub use preferences::{
    Preference, PreferenceForm, PreferenceRule, Stance, Stated, StatedView, Usage,
};
pub use problem::{Problem, ProblemKind};

use matcher::{Budget, Found, GroupMatcher};
pub use path::Form;
use pattern::Prepared;
use preference_matcher::PreferenceMatcher;
use serde::Serialize;
use std::collections::HashMap;
use std::time::Duration;
use token::leading_token;

/// How a file is parsed and compiled. `Options::default()` is what [`Robots::parse`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// The parse limit: bytes past it are ignored at a line boundary (RFC 9309 requires at
    /// least 500 KiB; the default is 512 KiB).
    pub max_bytes: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// A crawler that more groups than this name is answered from one matcher compiled over all of
/// them (while the file's merge budget lasts) rather than by asking each group in turn.
const MERGE_ABOVE_GROUPS: usize = 8;

/// The most rules compiled into merged matchers, as a multiple of the file's rules: a file in
/// which thousands of crawlers each name many groups cannot make compiling quadratic.
const MERGE_BUDGET_FACTOR: usize = 2;

/// The work one query may do, in octets read (tree walks, automaton scans, substring searches;
/// a match the piece automaton reports counts sixteen) over every form of its path and every
/// group it asks: a query that needs more is judged disallowed ([`Reason::OverBudget`]), never
/// allowed. Every corpus query passes on an eighth of it (see `docs/decisions/matcher.md`); it
/// bounds what a crafted pair of file and path costs to about 100 µs.
pub const WORK_BUDGET: usize = 32 << 10;

/// The longest path (with its query) judged, once normalised: a longer one is over the budget at
/// once ([`Reason::OverBudget`]) and is not read past this. nginx's default refuses a request
/// line over 8 KiB (`large_client_header_buffers 4 8k`), so an origin behind one never serves
/// such a path.
pub const MAX_JUDGED_PATH: usize = 8 << 10;

/// The rules one crawler follows: the groups selected for it.
#[derive(Debug)]
struct Selection {
    /// Indices into [`ParsedFile::groups`] (and [`Robots::matchers`]) of the merged groups.
    groups: Vec<usize>,
    /// Lines of those groups' first user-agent lines, for verdicts.
    group_lines: Vec<u32>,
    /// One matcher over all the groups' rules, for a crawler named by many groups.
    merged: Option<GroupMatcher>,
    /// The largest crawl-delay among the merged groups.
    crawl_delay: Option<f64>,
    /// Whether any of the groups states a content-use preference (most files: none).
    preferences: bool,
    /// One preference matcher over all the groups', for a crawler named by many groups.
    merged_preferences: Option<PreferenceMatcher>,
}

/// A parsed and compiled robots.txt. Parsing never fails; what could not be used is listed in
/// [`Robots::problems`]. Queries never re-parse the file or scan its rules one by one.
///
/// `Robots` is `Send + Sync`: share one behind an `Arc` between threads.
#[derive(Debug)]
pub struct Robots {
    file: ParsedFile,
    /// One matcher per group of the file, in file order.
    matchers: Vec<GroupMatcher>,
    /// Per group, in file order, its content-use preferences compiled (`None`: it states none).
    preference_matchers: Vec<Option<Box<PreferenceMatcher>>>,
    /// Lower-cased product token → index into `selections`.
    by_agent: foldhash::HashMap<Box<str>, usize>,
    /// Index into `selections` of the merged `*` groups.
    star: Option<usize>,
    selections: Vec<Selection>,
    /// Problems found while compiling (after the parser's).
    problems: Vec<Problem>,
}

/// The rules of `groups`, ready to compile.
fn prepare(file: &ParsedFile, groups: &[&Group]) -> Vec<Prepared> {
    groups
        .iter()
        .flat_map(|group| group.rules.iter())
        .filter_map(|&index| file.rules.get(index).map(|rule| Prepared::new(index, rule)))
        .collect()
}

/// The groups a crawler obeys in one file, chosen once by [`Robots::select`] and reused for
/// every path it asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Selected {
    /// Index into the file's selections; `None` when no group applies.
    selection: Option<usize>,
    /// Which kind of groups applies.
    group: GroupKind,
    /// Which of the tokens given to [`Robots::select`] named the groups.
    token: Option<usize>,
}

impl Selected {
    /// No group applies: everything is allowed.
    pub const NONE: Selected = Selected {
        selection: None,
        group: GroupKind::None,
        token: None,
    };

    /// Which kind of groups applies.
    pub fn group(&self) -> GroupKind {
        self.group
    }

    /// The position, among the tokens given to [`Robots::select`], of the token whose groups
    /// apply; `None` for the `*` groups or none.
    pub fn token(&self) -> Option<usize> {
        self.token
    }
}

/// Which groups a verdict was decided by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupKind {
    /// Groups that name the crawler's product token.
    Agent,
    /// The `*` groups: no group names the crawler.
    Star,
    /// No group names the crawler and there is no `*` group: everything is allowed.
    None,
}

/// Why a verdict is what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// A rule matched; it is in [`Verdict::rule`].
    Rule,
    /// The crawler's groups have no rule that matches the path.
    NoMatchingRule,
    /// No group applies to the crawler.
    NoGroup,
    /// `/robots.txt` itself is always allowed (RFC 9309 §2.2.2).
    RobotsTxt,
    /// Judging the path took more work than a query may ([`WORK_BUDGET`]), or the path is longer
    /// than [`MAX_JUDGED_PATH`]: it is disallowed, with no rule, and a caller counts it apart.
    OverBudget,
}

/// The answer to "may this crawler fetch this path?", with what decided it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict<'a> {
    /// Whether the crawler may fetch the path.
    pub allowed: bool,
    /// The deciding rule (kind, pattern as written, line), if a rule decided.
    pub rule: Option<&'a Rule>,
    /// The deciding rule's index in [`ParsedFile::rules`], to keep without a borrow.
    #[serde(skip)]
    pub rule_index: Option<usize>,
    /// Which groups applied.
    pub group: GroupKind,
    /// The lines of the groups that applied (their first user-agent line).
    pub group_lines: &'a [u32],
    /// Why the verdict is what it is.
    pub reason: Reason,
    /// The form of the path that was judged: as sent, unless an origin's reading of it (see
    /// [`Robots::check_selected`]) is disallowed where the path as sent is not.
    pub form: Form,
}

impl Verdict<'_> {
    /// The verdict for a query over the work budget: disallowed, by no rule.
    fn over_budget(selected: Selected, form: Form) -> Self {
        Verdict {
            allowed: false,
            rule: None,
            rule_index: None,
            group: selected.group,
            group_lines: &[],
            reason: Reason::OverBudget,
            form,
        }
    }
}

impl Robots {
    /// Parses and compiles robots.txt bytes with the default parse limit (512 KiB).
    ///
    /// ```
    /// let robots = crawlgate::Robots::parse(b"User-agent: GPTBot\nDisallow: /private/\n");
    /// assert!(!robots.is_allowed("GPTBot", "/private/x"));
    /// assert!(robots.is_allowed("Googlebot", "/private/x"));
    /// ```
    pub fn parse(bytes: &[u8]) -> Robots {
        Self::parse_with(bytes, Options::default())
    }

    /// Parses and compiles robots.txt bytes with the given parse limit.
    pub fn parse_with(bytes: &[u8], options: Options) -> Robots {
        let file = parse::parse(bytes, options.max_bytes);
        let mut problems = Vec::new();
        let matchers: Vec<GroupMatcher> = file
            .groups
            .iter()
            .map(|group| GroupMatcher::build(prepare(&file, &[group]), &mut problems))
            .collect();
        let preference_matchers = file
            .groups
            .iter()
            .map(|group| {
                PreferenceMatcher::build(&file.preferences, &group.preferences, &mut problems)
                    .map(Box::new)
            })
            .collect();
        let mut groups_of: HashMap<Box<str>, Vec<usize>> = HashMap::new();
        let mut star_groups = Vec::new();
        for (index, group) in file.groups.iter().enumerate() {
            if group.star {
                star_groups.push(index);
            }
            for agent in &group.agents {
                let groups = groups_of
                    .entry(agent.to_ascii_lowercase().into_boxed_str())
                    .or_default();
                if groups.last() != Some(&index) {
                    groups.push(index);
                }
            }
        }
        let mut robots = Robots {
            file,
            matchers,
            preference_matchers,
            by_agent: foldhash::HashMap::with_capacity_and_hasher(
                groups_of.len(),
                Default::default(),
            ),
            star: None,
            selections: Vec::new(),
            problems,
        };
        // Agents named by the same groups share one selection.
        let mut selection_of: HashMap<Vec<usize>, usize> = HashMap::new();
        for (agent, groups) in groups_of {
            let index = robots.selection(groups, &mut selection_of);
            robots.by_agent.insert(agent, index);
        }
        if !star_groups.is_empty() {
            robots.star = Some(robots.selection(star_groups, &mut selection_of));
        }
        robots.merge_large_selections();
        robots
    }

    /// The index of the selection for `groups`, made the first time.
    fn selection(&mut self, groups: Vec<usize>, known: &mut HashMap<Vec<usize>, usize>) -> usize {
        if let Some(&index) = known.get(&groups) {
            return index;
        }
        let mut crawl_delay: Option<f64> = None;
        let mut group_lines = Vec::with_capacity(groups.len());
        let mut preferences = false;
        for group in groups.iter().filter_map(|&g| self.file.groups.get(g)) {
            group_lines.push(group.line);
            preferences |= !group.preferences.is_empty();
            if let Some(delay) = group.crawl_delay {
                crawl_delay = Some(crawl_delay.map_or(delay, |d| d.max(delay)));
            }
        }
        let index = self.selections.len();
        self.selections.push(Selection {
            groups: groups.clone(),
            group_lines,
            merged: None,
            crawl_delay,
            preferences,
            merged_preferences: None,
        });
        known.insert(groups, index);
        index
    }

    /// Compiles one matcher for each selection of many groups, the largest first, while the
    /// budget lasts; the others ask their groups in turn.
    fn merge_large_selections(&mut self) {
        let mut budget = self.file.rules.len().max(1024) * MERGE_BUDGET_FACTOR;
        let mut large: Vec<usize> = (0..self.selections.len())
            .filter(|&i| self.selections[i].groups.len() > MERGE_ABOVE_GROUPS)
            .collect();
        large.sort_by_key(|&i| std::cmp::Reverse(self.selections[i].groups.len()));
        for index in large {
            let groups: Vec<&Group> = self.selections[index]
                .groups
                .iter()
                .filter_map(|&g| self.file.groups.get(g))
                .collect();
            let rules: usize = groups.iter().map(|group| group.rules.len()).sum();
            if rules > budget {
                continue;
            }
            budget -= rules;
            let matcher = GroupMatcher::build(prepare(&self.file, &groups), &mut Vec::new());
            self.selections[index].merged = Some(matcher);
        }
        // The same for preferences, within a budget of their own.
        let mut budget = self.file.preferences.len().max(1024) * MERGE_BUDGET_FACTOR;
        let mut large: Vec<usize> = (0..self.selections.len())
            .filter(|&i| {
                let selection = &self.selections[i];
                selection.preferences && selection.groups.len() > MERGE_ABOVE_GROUPS
            })
            .collect();
        large.sort_by_key(|&i| std::cmp::Reverse(self.selections[i].groups.len()));
        for index in large {
            let rules: Vec<usize> = self.selections[index]
                .groups
                .iter()
                .filter_map(|&g| self.file.groups.get(g))
                .flat_map(|group| group.preferences.iter().copied())
                .collect();
            if rules.len() > budget {
                continue;
            }
            budget -= rules.len();
            let matcher = PreferenceMatcher::build(&self.file.preferences, &rules, &mut Vec::new());
            self.selections[index].merged_preferences = matcher;
        }
    }

    /// The groups a crawler obeys. `tokens` are tried in order (a crawler's own product token
    /// first, then the tokens whose groups its operator says it falls back to, such as
    /// `Googlebot` for `Googlebot-Image`); the first that a group names decides. When none does,
    /// the `*` groups apply, unless `star` is false (a crawler whose operator says it ignores
    /// `*`). Each token is cut to its leading product token (`GPTBot/1.2` is `GPTBot`).
    ///
    /// ```
    /// let robots = crawlgate::Robots::parse(b"User-agent: Googlebot\nAllow: /\n\nUser-agent: *\nDisallow: /\n");
    /// let selected = robots.select(&["Googlebot-Image", "Googlebot"], true);
    /// assert_eq!(selected.token(), Some(1));
    /// assert!(robots.check_selected(selected, "/photo.jpg").allowed);
    /// ```
    pub fn select(&self, tokens: &[&str], star: bool) -> Selected {
        for (position, agent) in tokens.iter().enumerate() {
            if let Some(index) = self.named(agent) {
                return Selected {
                    selection: Some(index),
                    group: GroupKind::Agent,
                    token: Some(position),
                };
            }
        }
        match self.star {
            Some(index) if star => Selected {
                selection: Some(index),
                group: GroupKind::Star,
                token: None,
            },
            _ => Selected::NONE,
        }
    }

    /// The selection of the groups that name `agent`'s product token, if any.
    fn named(&self, agent: &str) -> Option<usize> {
        let token = leading_token(agent.trim_start());
        if token.is_empty() {
            return None;
        }
        if token.len() <= 64 {
            let mut buffer = [0u8; 64];
            let lower = &mut buffer[..token.len()];
            lower.copy_from_slice(token.as_bytes());
            lower.make_ascii_lowercase();
            std::str::from_utf8(lower)
                .ok()
                .and_then(|lower| self.by_agent.get(lower))
                .copied()
        } else {
            self.by_agent
                .get(token.to_ascii_lowercase().as_str())
                .copied()
        }
    }

    /// The compiled selection behind `selected`.
    fn selection_of(&self, selected: Selected) -> Option<&Selection> {
        selected
            .selection
            .and_then(|index| self.selections.get(index))
    }

    /// Decides whether the crawler with product token `agent` may fetch `url` (a path with its
    /// query, or a full URL), and says which rule decided: [`Robots::select`] with `agent` alone
    /// (falling back to `*`), then [`Robots::check_selected`].
    ///
    /// `agent` is a product token such as `GPTBot`; anything after its leading run of
    /// `[A-Za-z_-]` is ignored, so `GPTBot/1.2` is `GPTBot`.
    pub fn check(&self, agent: &str, url: &str) -> Verdict<'_> {
        self.check_selected(self.select(&[agent], true), url)
    }

    /// Whether the crawler with product token `agent` may fetch `url` ([`Robots::check`]).
    pub fn is_allowed(&self, agent: &str, url: &str) -> bool {
        self.check(agent, url).allowed
    }

    /// The verdict for a request as an origin server may read it: the path is judged in every
    /// form an origin could resolve it to (see [`path::forms`]: as sent, with `.`/`..` segments
    /// and doubled slashes resolved, and with `%2F`/`%5C` read as separators), and the strictest
    /// verdict holds, so that neither `/public/../private/x` nor `/public%2F..%2Fprivate/x` can
    /// slip past `Disallow: /private/`. The proxy, `crawlgate check`, `explain` and `audit` all
    /// decide with it.
    pub fn check_selected(&self, selected: Selected, url: &str) -> Verdict<'_> {
        let raw = path::path_and_query(url);
        self.check_normalized(selected, &path::normalize(raw.as_bytes()))
    }

    /// [`Robots::check_selected`] for a path and query already reduced
    /// ([`path::path_and_query`]) and normalised ([`path::normalize`]): a caller that asks
    /// several questions of one request (the verdict, the previous file's, the preference)
    /// normalises its path once.
    pub fn check_normalized(&self, selected: Selected, as_sent: &[u8]) -> Verdict<'_> {
        let mut budget = Budget::new(WORK_BUDGET);
        let verdict = self.judge(selected, as_sent, Form::AsSent, &mut budget);
        // No group applies to any form, and robots.txt is always allowed.
        if !verdict.allowed || matches!(verdict.reason, Reason::RobotsTxt | Reason::NoGroup) {
            return verdict;
        }
        let stricter = path::forms(as_sent)
            .map(|(form, other)| self.judge(selected, &other, form, &mut budget))
            .find(|other| !other.allowed);
        stricter.unwrap_or(verdict)
    }

    /// The verdict for `url` exactly as RFC 9309 §2.2.2 compares it, in one form only: the path
    /// as written, percent-encoding normalised. [`Robots::check`] is what enforcement uses; this
    /// is the protocol's own answer, for conformance tests and comparisons with other parsers.
    pub fn check_exact(&self, agent: &str, url: &str) -> Verdict<'_> {
        let selected = self.select(&[agent], true);
        let raw = path::path_and_query(url);
        let normal = path::normalize(raw.as_bytes());
        self.judge(
            selected,
            &normal,
            Form::AsSent,
            &mut Budget::new(WORK_BUDGET),
        )
    }

    /// The verdict for one normalised path, its work paid from `budget`.
    fn judge(
        &self,
        selected: Selected,
        path: &[u8],
        form: Form,
        budget: &mut Budget,
    ) -> Verdict<'_> {
        if path::is_robots_txt(path) {
            return Verdict {
                allowed: true,
                rule: None,
                rule_index: None,
                group: GroupKind::None,
                group_lines: &[],
                reason: Reason::RobotsTxt,
                form,
            };
        }
        let Some(selection) = self.selection_of(selected) else {
            return Verdict {
                allowed: true,
                rule: None,
                rule_index: None,
                group: GroupKind::None,
                group_lines: &[],
                reason: Reason::NoGroup,
                form,
            };
        };
        if path.len() > MAX_JUDGED_PATH {
            return Verdict::over_budget(selected, form);
        }
        let found = match &selection.merged {
            Some(merged) => merged.decide(path, None, budget),
            None => selection
                .groups
                .iter()
                .fold(None, |best: Option<Found>, &group| {
                    let floor = best.map(|found| found.key);
                    let better = self
                        .matchers
                        .get(group)
                        .and_then(|matcher| matcher.decide(path, floor, budget));
                    better.or(best)
                }),
        };
        if budget.exhausted() {
            return Verdict {
                group_lines: &selection.group_lines,
                ..Verdict::over_budget(selected, form)
            };
        }
        let rule_index = found.map(|found| found.rule);
        let rule = rule_index.and_then(|index| self.file.rules.get(index));
        Verdict {
            allowed: rule.is_none_or(|rule| rule.kind == RuleKind::Allow),
            rule,
            rule_index,
            group: selected.group,
            group_lines: &selection.group_lines,
            reason: if rule.is_some() {
                Reason::Rule
            } else {
                Reason::NoMatchingRule
            },
            form,
        }
    }

    /// The content-use preference that applies to `url` for the crawler with product token
    /// `agent`: [`Robots::select`] with `agent` alone (falling back to `*`), then
    /// [`Robots::preference_selected`].
    ///
    /// ```
    /// use crawlgate::robots::{Stance, Usage};
    /// let robots = crawlgate::Robots::parse(
    ///     b"User-Agent: *\nAllow: /\nContent-Usage: train-ai=n\nContent-Usage: /ai-ok/ train-ai=y\n",
    /// );
    /// let training = robots.preference("AnyBot", "/ai-ok/test").get(Usage::TrainAi);
    /// assert_eq!(training.stance, Stance::Allowed);
    /// let rule = robots.preference_rule(training.rule.unwrap()).unwrap();
    /// assert_eq!((rule.line, rule.path.as_str()), (4, "/ai-ok/"));
    /// assert_eq!(robots.preference("AnyBot", "/test").get(Usage::TrainAi).stance, Stance::Disallowed);
    /// ```
    pub fn preference(&self, agent: &str, url: &str) -> Preference {
        self.preference_selected(self.select(&[agent], true), url)
    }

    /// The content-use preference that applies to `url` for the groups in `selected`: none
    /// when they disallow it (a path that may not be crawled has no preferences, attach draft
    /// §3.1), else [`Robots::stated_preference`].
    pub fn preference_selected(&self, selected: Selected, url: &str) -> Preference {
        if !self.has_preferences(selected) || !self.check_selected(selected, url).allowed {
            return Preference::UNKNOWN;
        }
        self.stated_preference(selected, url)
    }

    /// What the preference rules of the groups in `selected` state about `url`, whether or not
    /// the path may be crawled (for a caller that has judged it already): per use, the longest
    /// matching rule that states it, the most restrictive on a tie (see [`preferences`]). Like
    /// [`Robots::check_selected`], it reads the path in every form an origin may, and the most
    /// restrictive answer holds.
    pub fn stated_preference(&self, selected: Selected, url: &str) -> Preference {
        self.stated_preference_of(selected, url, &Usage::ALL)
    }

    /// [`Robots::stated_preference`] for `uses` only (the others are unknown): a caller that
    /// asks whether a crawler's own uses are refused looks up only those.
    pub fn stated_preference_of(
        &self,
        selected: Selected,
        url: &str,
        uses: &[Usage],
    ) -> Preference {
        let raw = path::path_and_query(url);
        self.stated_preference_normalized(selected, &path::normalize(raw.as_bytes()), uses)
    }

    /// [`Robots::stated_preference_of`] for a path and query already reduced and normalised
    /// (see [`Robots::check_normalized`]).
    pub fn stated_preference_normalized(
        &self,
        selected: Selected,
        as_sent: &[u8],
        uses: &[Usage],
    ) -> Preference {
        let Some(selection) = self.selection_of(selected).filter(|s| s.preferences) else {
            return Preference::UNKNOWN;
        };
        // A path over the work budget is disallowed, and so has no preference.
        if as_sent.len() > MAX_JUDGED_PATH {
            return Preference::UNKNOWN;
        }
        let mut budget = Budget::new(WORK_BUDGET);
        let preference = self.prefer(selection, as_sent, uses, &mut budget);
        let preference = path::forms(as_sent).fold(preference, |preference, (_, other)| {
            preference.stricter(self.prefer(selection, &other, uses, &mut budget))
        });
        if budget.exhausted() {
            return Preference::UNKNOWN;
        }
        preference
    }

    /// Whether any group in `selected` states a content-use preference: when none does, every
    /// path's preference is unknown, and asking costs nothing.
    pub fn has_preferences(&self, selected: Selected) -> bool {
        self.selection_of(selected).is_some_and(|s| s.preferences)
    }

    /// The preference of one normalised path.
    fn prefer(
        &self,
        selection: &Selection,
        path: &[u8],
        uses: &[Usage],
        budget: &mut Budget,
    ) -> Preference {
        let mut preference = Preference::UNKNOWN;
        for &usage in uses {
            let found = match &selection.merged_preferences {
                Some(merged) => merged.decide(usage, path, None, budget),
                None => selection
                    .groups
                    .iter()
                    .fold(None, |best: Option<Found>, &group| {
                        let better = self
                            .preference_matchers
                            .get(group)
                            .and_then(Option::as_deref)
                            .and_then(|m| {
                                m.decide(usage, path, best.map(|found| found.key), budget)
                            });
                        better.or(best)
                    }),
            };
            if let Some(found) = found {
                let stance = self
                    .file
                    .preferences
                    .get(found.rule)
                    .map_or(Stance::Unknown, |rule| rule.stance(usage));
                preference.set(
                    usage,
                    Stated {
                        stance,
                        rule: Some(found.rule),
                    },
                );
            }
        }
        preference
    }

    /// The content-use preference rule with this index (a [`Stated::rule`]).
    pub fn preference_rule(&self, index: usize) -> Option<&PreferenceRule> {
        self.file.preferences.get(index)
    }

    /// The crawl-delay that applies to `agent` (the largest among its groups), if any.
    pub fn crawl_delay(&self, agent: &str) -> Option<Duration> {
        self.crawl_delay_selected(self.select(&[agent], true))
    }

    /// The crawl-delay of the groups in `selected` (the largest among them), if any.
    pub fn crawl_delay_selected(&self, selected: Selected) -> Option<Duration> {
        let seconds = self.selection_of(selected)?.crawl_delay?;
        // The parser keeps delays within a day, so this conversion cannot fail or overflow.
        Duration::try_from_secs_f64(seconds.clamp(0.0, parse::MAX_CRAWL_DELAY_SECONDS)).ok()
    }

    /// The sitemap URLs the file lists, in file order.
    pub fn sitemaps(&self) -> impl Iterator<Item = &str> {
        self.file.sitemaps.iter().map(|s| s.url.as_str())
    }

    /// Every line that was not understood or was read leniently, by line number.
    pub fn problems(&self) -> Vec<&Problem> {
        let mut all: Vec<&Problem> = self.file.problems.iter().chain(&self.problems).collect();
        all.sort_by_key(|problem| problem.line);
        all
    }

    /// The product tokens the file names in its user-agent lines (lower-cased, each once).
    pub fn agents(&self) -> impl Iterator<Item = &str> {
        self.by_agent.keys().map(|agent| &**agent)
    }

    /// The parsed file: groups, rules, sitemaps, and the parser's problems.
    pub fn file(&self) -> &ParsedFile {
        &self.file
    }

    /// How many distinct group selections the file's crawlers follow.
    pub fn compiled_selections(&self) -> usize {
        self.selections.len()
    }

    /// How many rules were compiled, in the groups and in merged selections (duplicates within
    /// a group counted once): a measure of the work compiling the file took.
    pub fn compiled_rules(&self) -> usize {
        let groups: usize = self.matchers.iter().map(GroupMatcher::len).sum();
        let merged: usize = self
            .selections
            .iter()
            .filter_map(|selection| selection.merged.as_ref())
            .map(GroupMatcher::len)
            .sum();
        groups + merged
    }

    /// The indices of the groups that apply to `agent`, in file order.
    pub fn groups_for(&self, agent: &str) -> &[usize] {
        self.groups_of(self.select(&[agent], true))
    }

    /// The indices of the groups in `selected`, in file order.
    pub fn groups_of(&self, selected: Selected) -> &[usize] {
        self.selection_of(selected)
            .map_or(&[], |selection| selection.groups.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(text: &str) -> Robots {
        Robots::parse(text.as_bytes())
    }

    #[test]
    fn verdict_names_the_deciding_rule() {
        let robots = compile("user-agent: *\ndisallow: /private/\nallow: /private/press/\n");
        let verdict = robots.check("AnyBot", "/private/x");
        assert!(!verdict.allowed);
        let rule = verdict.rule.unwrap();
        assert_eq!(
            (rule.kind, rule.pattern.as_str(), rule.line),
            (RuleKind::Disallow, "/private/", 2)
        );
        assert_eq!(verdict.group, GroupKind::Star);
        assert_eq!(verdict.group_lines, &[1]);
        let verdict = robots.check("AnyBot", "/private/press/x");
        assert_eq!(verdict.rule.unwrap().line, 3);
        assert!(verdict.allowed);
        let verdict = robots.check("AnyBot", "/public");
        assert_eq!(
            (verdict.allowed, verdict.reason),
            (true, Reason::NoMatchingRule)
        );
    }

    /// The attach draft's example file (§3.4) and its table of paths.
    #[test]
    fn preferences_follow_the_attach_drafts_example() {
        let robots = compile(
            "User-Agent: *\nAllow: /\nDisallow: /never/\nContent-Usage: / train-ai=n\nContent-Usage: /ai-ok/ train-ai=y\n\nUser-Agent: ExampleBot\nAllow: /\nContent-Usage: / train-ai=y\n",
        );
        assert!(robots.problems().is_empty(), "{:?}", robots.problems());
        let train = |agent: &str, path: &str| robots.preference(agent, path).get(Usage::TrainAi);
        assert_eq!(train("AnyBot", "/test").stance, Stance::Disallowed);
        assert_eq!(train("AnyBot", "/ai-ok/test").stance, Stance::Allowed);
        // Not crawlable: no preference at all.
        assert!(robots.preference("AnyBot", "/never/test").is_unknown());
        assert_eq!(train("ExampleBot", "/never/test").stance, Stance::Allowed);
        let line = |stated: Stated| robots.preference_rule(stated.rule.unwrap()).unwrap().line;
        assert_eq!(line(train("AnyBot", "/test")), 4);
        assert_eq!(line(train("ExampleBot", "/test")), 9);
        // Nothing else is stated.
        let any = robots.preference("AnyBot", "/test");
        assert_eq!(any.get(Usage::Search).stance, Stance::Unknown);
        assert_eq!(any.header_value(), Some("train-ai=n"));
    }

    /// contentsignals.org's example file: a comment block, then the signal under `*`, before
    /// the group's `Allow`.
    #[test]
    fn preferences_follow_the_content_signals_example() {
        let robots = compile(
            "# As a condition of accessing this website, you agree to abide by\n# the following content signals:\n# ai-train: training or fine-tuning AI models.\nUser-Agent: *\nContent-Signal: ai-train=no, search=yes, ai-input=yes\nAllow: /\n",
        );
        assert!(robots.problems().is_empty(), "{:?}", robots.problems());
        let p = robots.preference("AnyBot", "/x");
        assert_eq!(
            Usage::ALL.map(|u| p.get(u).stance),
            [Stance::Disallowed, Stance::Allowed, Stance::Allowed]
        );
        assert_eq!(robots.preference_rule(0).unwrap().line, 5);
        // Cloudflare's managed default: `search=yes, ai-train=no`, AI input unknown.
        let managed = compile("User-Agent: *\nContent-Signal: search=yes,ai-train=no\nAllow: /\n");
        let p = managed.preference("AnyBot", "/");
        assert_eq!(p.get(Usage::AiInput).stance, Stance::Unknown);
        assert_eq!(p.header_value(), Some("train-ai=n, search=y"));
    }

    #[test]
    fn preferences_per_use_longest_then_most_restrictive() {
        let robots = compile(
            "User-Agent: *\nContent-Signal: search=yes, ai-input=no, ai-train=no\nContent-Usage: /open/ train-ai=y\nContent-Usage: /tie/ search=y\nContent-Signal: /tie/ search=no\nContent-Usage: /*.pdf$ train-ai=n\n",
        );
        let pref = |path: &str| robots.preference("x", path);
        let p = pref("/a");
        assert_eq!(
            Usage::ALL.map(|u| p.get(u).stance),
            [Stance::Disallowed, Stance::Allowed, Stance::Disallowed]
        );
        // A longer rule silent on a use leaves it to the shorter one.
        let p = pref("/open/x");
        assert_eq!(p.get(Usage::TrainAi).stance, Stance::Allowed);
        assert_eq!(p.get(Usage::AiInput).stance, Stance::Disallowed);
        // Same path, conflicting: the most restrictive wins, whatever the order.
        assert_eq!(pref("/tie/x").get(Usage::Search).stance, Stance::Disallowed);
        // Patterns as for allow/disallow: `/*.pdf$` (7 bytes) outranks `/open/` (6).
        assert_eq!(
            pref("/open/x.pdf").get(Usage::TrainAi).stance,
            Stance::Disallowed
        );
        // Asking for some uses looks up those only.
        let some = robots.stated_preference_of(robots.select(&["x"], true), "/a", &[Usage::Search]);
        assert_eq!(some.get(Usage::Search).stance, Stance::Allowed);
        assert_eq!(some.get(Usage::TrainAi).stance, Stance::Unknown);
        // Percent-encoding read as for rules.
        assert_eq!(
            pref("/%6Fpen/x").get(Usage::TrainAi).stance,
            Stance::Allowed
        );
    }

    #[test]
    fn preference_lines_do_not_change_groups() {
        let plain = "User-agent: a\nUser-agent: b\nDisallow: /x\n\nUser-agent: *\nDisallow: /y\n";
        let with = "User-agent: a\nContent-Usage: train-ai=n\nUser-agent: b\nContent-Signal: ai-train=no\nDisallow: /x\n\nUser-agent: *\nContent-Usage: /y search=n\nDisallow: /y\n";
        let (plain, with) = (compile(plain), compile(with));
        for agent in ["a", "b", "c"] {
            for path in ["/x", "/y", "/z"] {
                assert_eq!(
                    plain.is_allowed(agent, path),
                    with.is_allowed(agent, path),
                    "{agent} {path}"
                );
            }
        }
        // `a` and `b` still share one group, and its preferences.
        assert_eq!(
            with.preference("b", "/z").get(Usage::TrainAi).stance,
            Stance::Disallowed
        );
        // A preference before any group is a listed problem.
        let outside = compile("Content-Usage: train-ai=n\nUser-agent: *\n");
        assert_eq!(outside.problems()[0].kind, ProblemKind::RuleOutsideGroup);
        assert!(outside.preference("x", "/").is_unknown());
    }

    #[test]
    fn agent_is_reduced_to_its_product_token() {
        let robots = compile("user-agent: gptbot\ndisallow: /\n");
        assert!(!robots.is_allowed("GPTBot/1.2", "/x"));
        assert!(!robots.is_allowed("  GPTBot", "/x"));
        assert!(robots.is_allowed("GPTBotX/1.2", "/x"));
        assert!(robots.is_allowed("", "/x"));
    }

    #[test]
    fn robots_txt_is_always_allowed() {
        let robots = compile("user-agent: *\ndisallow: /\n");
        let verdict = robots.check("x", "https://example.com/robots.txt");
        assert_eq!((verdict.allowed, verdict.reason), (true, Reason::RobotsTxt));
        assert!(robots.is_allowed("x", "/%72obots.txt"));
        assert!(!robots.is_allowed("x", "/robots.txt.bak"));
    }

    #[test]
    fn crawl_delay_and_sitemaps() {
        let robots = compile("user-agent: a\ncrawl-delay: 1.5\ndisallow:\n\nuser-agent: a\ncrawl-delay: 3\ndisallow:\n\nuser-agent: *\ncrawl-delay: 9\nsitemap: https://e.com/s.xml\n");
        assert_eq!(robots.crawl_delay("A"), Some(Duration::from_secs(3)));
        assert_eq!(robots.crawl_delay("b"), Some(Duration::from_secs(9)));
        // Without a rule between them, user-agent lines share one group and its crawl-delay.
        let shared = compile("user-agent: a\ncrawl-delay: 1.5\n\nuser-agent: *\ncrawl-delay: 9\n");
        assert_eq!(shared.crawl_delay("a"), Some(Duration::from_secs(9)));
        assert_eq!(
            robots.sitemaps().collect::<Vec<_>>(),
            vec!["https://e.com/s.xml"]
        );
        assert_eq!(compile("user-agent: a\n").crawl_delay("a"), None);
        let huge = compile("user-agent: a\ncrawl-delay: 1e300\n");
        assert_eq!(huge.crawl_delay("a"), Some(Duration::from_secs(86_400)));
    }

    #[test]
    fn agents_in_the_same_groups_share_one_matcher() {
        let mut text = String::from("user-agent: *\ndisallow: /x\n");
        for i in 0..300 {
            text.push_str(&format!("user-agent: bot{}\n", "a".repeat(i % 26 + 1)));
        }
        text.push_str("disallow: /\n");
        let robots = compile(&text);
        assert_eq!(robots.compiled_selections(), 2);
        assert!(!robots.is_allowed("botaaa", "/y"));
    }

    #[test]
    fn duplicate_rules_compile_once() {
        let robots =
            compile("user-agent: *\ndisallow: /a\ndisallow: /a\ndisallow: /%61\nallow: /a\n");
        assert_eq!(robots.compiled_rules(), 2);
        let verdict = robots.check("x", "/a");
        assert!(verdict.allowed);
        assert_eq!(verdict.rule.unwrap().line, 5);
    }

    #[test]
    fn problems_come_in_line_order() {
        let robots = compile("user-agent: *\nfoo: bar\ndisallow: x\n");
        let lines: Vec<u32> = robots.problems().iter().map(|p| p.line).collect();
        assert_eq!(lines, vec![2, 3]);
    }

    #[test]
    fn requests_are_also_checked_as_the_origin_resolves_them() {
        let robots = compile("user-agent: *\ndisallow: /private/\n");
        assert!(robots.check_exact("x", "/public/../private/x").allowed);
        let verdict = robots.check("x", "/public/../private/x");
        assert!(!verdict.allowed);
        assert_eq!(verdict.rule.unwrap().line, 2);
        assert!(!robots.check("x", "//private/x").allowed);
        assert!(!robots.check("x", "/public/%2e%2e/private/x").allowed);
        // The stricter of the two forms wins: as sent, this path is under /private/.
        assert!(!robots.check("x", "/private/../public/").allowed);
        assert!(robots.check("x", "/public/x").allowed);
    }

    /// A long path's resolved form is judged on its own octets: a rule that needs the `/` that
    /// resolving writes before the query matches it. (The matcher before the work budget judged
    /// it with the octet pairs of the path as sent, and this test kept that honest; it still holds
    /// with the many rules the path lacks.)
    #[test]
    fn resolved_forms_of_long_paths_are_narrowed_down_by_pairs_that_hold_theirs() {
        let mut text = String::from("user-agent: *\ndisallow: /*b/?q\n");
        for i in 0..40 {
            text.push_str(&format!("allow: /*zz{i}\n"));
        }
        let robots = compile(&text);
        for filler in [600, 3000, MAX_JUDGED_PATH - 20] {
            let path = format!("/{}/b/c/..?q", "a".repeat(filler));
            let verdict = robots.check("x", &path);
            assert!(!verdict.allowed, "{filler}");
            assert_eq!(verdict.form, Form::Resolved);
            let path = format!("/{}/b/c/.?q", "a".repeat(filler));
            assert!(robots.check("x", &path).allowed, "{filler}");
        }
    }

    /// A path longer than the longest judged, or one whose judging needs more work than a query
    /// may do, is disallowed by no rule, whatever the rules say; short of both, it is judged.
    #[test]
    fn queries_over_the_work_budget_are_disallowed() {
        let over = |verdict: Verdict<'_>| {
            (verdict.allowed, verdict.reason, verdict.rule.is_none())
                == (false, Reason::OverBudget, true)
        };
        let robots = compile("user-agent: *\nallow: /\n");
        let long = format!("/{}", "a".repeat(MAX_JUDGED_PATH));
        assert!(over(robots.check("x", &long)));
        assert!(over(robots.check_exact("x", &long)));
        assert!(robots.check("x", &long[..MAX_JUDGED_PATH]).allowed);
        // No group: nothing to judge, nothing to pay.
        assert!(
            compile("user-agent: a\ndisallow: /\n")
                .check("x", &long)
                .allowed
        );
        // Each glob is found through a piece the path holds near its start, and reads the
        // rest of the path for a `q` it lacks.
        let pieces: Vec<String> = (0..100).map(|i| format!("piece-{i:03}-")).collect();
        let path = format!("/{}{}", pieces.concat(), "a".repeat(MAX_JUDGED_PATH - 1200));
        assert!(path.len() <= MAX_JUDGED_PATH);
        let mut text = String::from("user-agent: *\nallow: /\n");
        for piece in &pieces {
            text.push_str(&format!("disallow: /*{piece}*q\n"));
        }
        let robots = compile(&text);
        assert!(over(robots.check("x", &path)));
        assert!(robots.preference("x", &path).is_unknown());
        let few = compile("user-agent: *\nallow: /\ndisallow: /*piece-007-*q\n");
        let verdict = few.check("x", &path);
        assert_eq!((verdict.allowed, verdict.reason), (true, Reason::Rule));
    }

    #[test]
    fn robots_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Robots>();
    }
}

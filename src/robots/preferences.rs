//! Content-use preferences in robots.txt: the IETF aipref `Content-Usage` rule
//! (draft-ietf-aipref-attach, with the vocabulary of draft-ietf-aipref-vocab) and Cloudflare's
//! `Content-Signal` (contentsignals.org), read into one model and matched per path.
//!
//! ```text
//! User-Agent: *
//! Allow: /
//! Content-Usage: train-ai=n
//! Content-Usage: /ai-ok/ train-ai=y
//! Content-Signal: search=yes, ai-input=no, ai-train=no
//! ```
//!
//! How the two are read, and why:
//!
//! - **Both are rules of the group they stand in** (attach draft §3 adds `content-usage` to
//!   RFC 9309's `rule`; contentsignals.org puts `Content-Signal` under `User-Agent: *`), so a
//!   crawler gets the preferences of the groups it obeys, as for `Allow`/`Disallow`. A line
//!   before any `User-agent` belongs to no group: it is a listed problem and ignored. Unlike an
//!   `Allow`, neither ends a run of `User-agent` lines ([`super::parse`]): reading them must not
//!   change what any existing file allows, and RFC 9309 §2.2.4 says other records must not
//!   interfere with groups.
//! - **A value is `[path] statement`**: a value that starts with `/` has a path up to the first
//!   space or tab (with RFC 9309's `*` and `$`, compared after the same normalisation as rule
//!   patterns); without one the rule applies to every path. The statement is a structured-field
//!   dictionary (RFC 9651), parsed by the `sfv` crate: a value that does not parse states
//!   nothing (aipref vocab §6.5, "Processing Algorithm"; section numbers are those of
//!   the vocab draft of 2026-08-19), duplicate keys keep the last value, parameters and unknown
//!   keys are ignored. `Content-Usage` takes the tokens `y`/`n` for `train-ai` and `search`;
//!   `Content-Signal` takes `yes`/`no` for `ai-train`, `search` and `ai-input` (and Cloudflare's
//!   `use=immediate|reference|full`, recognised and not enforced).
//! - **One model, three uses** ([`Usage`]): `train-ai` (`Content-Signal`'s `ai-train`),
//!   `search`, and `ai-input`, which only `Content-Signal` names (aipref has no label for it).
//! - **Per use, the longest matching rule that states it decides**, over both spellings
//!   together; a rule silent on a use leaves it to shorter rules; on a tie of lengths the most
//!   restrictive wins (`n` over `y`), as the attach draft says for identical paths and the vocab
//!   draft's §5.1 ("Combining Preferences") says for combining statements. A site's `Content-Signal: ai-train=no` and its
//!   own `Content-Usage: /open-data/ train-ai=y` so mean what they say: training is refused
//!   everywhere but under `/open-data/`. (The attach draft can also be read as "the longest
//!   rule decides every use at once"; that reading would let `Content-Usage: /blog/ search=y`
//!   silently drop a file-wide `ai-input=no`, which only `Content-Signal` can state.)
//! - **Preferences apply to crawlable paths only**: a path the crawler may not fetch has none
//!   (attach draft §3.1); [`super::Robots::preference_selected`] checks that first.
//!
//! Matching (`preference_matcher.rs`) reuses the compiled group matcher (`matcher::GroupMatcher`),
//! one per use over the rules that state it, ranked by length and then `n` before `y`, so that a file of thousands of
//! preference lines costs a query what a group of thousands of rules does.

use super::problem::ProblemKind;
use serde::Serialize;
use std::convert::Infallible;

/// Which of the two spellings a preference line uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PreferenceForm {
    /// `Content-Usage: [path] train-ai=n, search=y` (IETF aipref).
    ContentUsage,
    /// `Content-Signal: [path] search=yes, ai-input=no, ai-train=no` (contentsignals.org).
    ContentSignal,
}

impl PreferenceForm {
    /// The directive as it is written in a file.
    pub fn directive(self) -> &'static str {
        match self {
            PreferenceForm::ContentUsage => "Content-Usage",
            PreferenceForm::ContentSignal => "Content-Signal",
        }
    }

    /// The tokens that say "allowed" and "disallowed".
    fn yes_no(self) -> (&'static str, &'static str) {
        match self {
            PreferenceForm::ContentUsage => ("y", "n"),
            PreferenceForm::ContentSignal => ("yes", "no"),
        }
    }
}

/// A use of content that a site states a preference about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Usage {
    /// Training AI models (aipref `train-ai`, Content-Signal `ai-train`).
    #[serde(rename = "train-ai")]
    TrainAi,
    /// Search: an index that directs people to the content (`search` in both).
    #[serde(rename = "search")]
    Search,
    /// Input into AI models at answer time: RAG, grounding, AI answers (Content-Signal
    /// `ai-input`; aipref has no label for it).
    #[serde(rename = "ai-input")]
    AiInput,
}

impl Usage {
    /// Every use, in a fixed order.
    pub const ALL: [Usage; 3] = [Usage::TrainAi, Usage::Search, Usage::AiInput];

    /// Its label: aipref's where aipref has one (`train-ai`, `search`), else `ai-input`.
    pub fn label(self) -> &'static str {
        match self {
            Usage::TrainAi => "train-ai",
            Usage::Search => "search",
            Usage::AiInput => "ai-input",
        }
    }

    /// The dictionary key that states it in `form`, if that spelling has one.
    pub fn key(self, form: PreferenceForm) -> Option<&'static str> {
        match (form, self) {
            (PreferenceForm::ContentUsage, Usage::TrainAi) => Some("train-ai"),
            (PreferenceForm::ContentUsage, Usage::Search) => Some("search"),
            (PreferenceForm::ContentUsage, Usage::AiInput) => None,
            (PreferenceForm::ContentSignal, Usage::TrainAi) => Some("ai-train"),
            (PreferenceForm::ContentSignal, Usage::Search) => Some("search"),
            (PreferenceForm::ContentSignal, Usage::AiInput) => Some("ai-input"),
        }
    }

    /// Its place in per-use arrays.
    pub(super) fn index(self) -> usize {
        match self {
            Usage::TrainAi => 0,
            Usage::Search => 1,
            Usage::AiInput => 2,
        }
    }
}

/// What a site says about one use (aipref vocab §3 and §5: allowed, disallowed, or unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stance {
    /// Nothing is stated.
    #[default]
    Unknown,
    /// The use is allowed (`y`, `yes`).
    Allowed,
    /// The use is refused (`n`, `no`).
    Disallowed,
}

impl Stance {
    /// `unknown`, `allowed` or `disallowed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Stance::Unknown => "unknown",
            Stance::Allowed => "allowed",
            Stance::Disallowed => "disallowed",
        }
    }

    /// How restrictive it is, for combining (vocab §5.1: `n` over `y` over unknown).
    fn rank(self) -> u8 {
        match self {
            Stance::Unknown => 0,
            Stance::Allowed => 1,
            Stance::Disallowed => 2,
        }
    }
}

/// One `Content-Usage` or `Content-Signal` line of a group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PreferenceRule {
    /// Which spelling.
    pub form: PreferenceForm,
    /// The path as written; empty when the line gives none (every path).
    pub path: String,
    /// The statement as written (`train-ai=n, search=y`).
    pub statement: String,
    /// The 1-based line number.
    pub line: u32,
    /// Per [`Usage`], in [`Usage::ALL`] order.
    #[serde(skip)]
    stances: [Stance; 3],
}

impl PreferenceRule {
    /// What the line states about `usage`.
    pub fn stance(&self, usage: Usage) -> Stance {
        self.stances[usage.index()]
    }

    /// The line as crawlgate reads it: `Content-Usage: /ai-ok/ train-ai=y`.
    pub fn text(&self) -> String {
        if self.path.is_empty() {
            format!("{}: {}", self.form.directive(), self.statement)
        } else {
            format!(
                "{}: {} {}",
                self.form.directive(),
                self.path,
                self.statement
            )
        }
    }
}

/// The preference for one use on one path, and which rule stated it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Stated {
    /// Allowed, disallowed or unknown.
    pub stance: Stance,
    /// The deciding rule's index in [`super::ParsedFile::preferences`]; `None` when unknown.
    pub rule: Option<usize>,
}

impl Stated {
    /// The more restrictive of two (the first on a tie).
    fn stricter(self, other: Stated) -> Stated {
        if other.stance.rank() > self.stance.rank() {
            other
        } else {
            self
        }
    }
}

/// What robots.txt's preferences say about one path, for each [`Usage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Preference {
    stated: [Stated; 3],
}

impl Preference {
    /// Nothing stated about any use.
    pub const UNKNOWN: Preference = Preference {
        stated: [Stated {
            stance: Stance::Unknown,
            rule: None,
        }; 3],
    };

    /// What is stated about `usage`.
    pub fn get(&self, usage: Usage) -> Stated {
        self.stated[usage.index()]
    }

    /// Records what is stated about `usage`.
    pub(crate) fn set(&mut self, usage: Usage, stated: Stated) {
        self.stated[usage.index()] = stated;
    }

    /// Whether nothing is stated about any use.
    pub fn is_unknown(&self) -> bool {
        self.stated.iter().all(|s| s.stance == Stance::Unknown)
    }

    /// The more restrictive of two preferences, use by use (vocab §5.1).
    pub fn stricter(self, other: Preference) -> Preference {
        let mut stated = self.stated;
        for (mine, theirs) in stated.iter_mut().zip(other.stated) {
            *mine = mine.stricter(theirs);
        }
        Preference { stated }
    }

    /// The first of `uses` that is refused, with what refused it: a crawler whose purpose is
    /// one of `uses` goes against the site's stated preference.
    pub fn refused(&self, uses: &[Usage]) -> Option<(Usage, Stated)> {
        uses.iter()
            .map(|&usage| (usage, self.get(usage)))
            .find(|(_, stated)| stated.stance == Stance::Disallowed)
    }

    /// The `Content-Usage` HTTP header field (attach draft §2) that says the same in aipref's
    /// vocabulary: `train-ai=n, search=y`; `None` when it states nothing aipref can say
    /// (`ai-input` has no aipref label, so it is not announced).
    pub fn header_value(&self) -> Option<&'static str> {
        let train = self.get(Usage::TrainAi).stance;
        let search = self.get(Usage::Search).stance;
        match (train, search) {
            (Stance::Unknown, Stance::Unknown) => None,
            (Stance::Unknown, Stance::Allowed) => Some("search=y"),
            (Stance::Unknown, Stance::Disallowed) => Some("search=n"),
            (Stance::Allowed, Stance::Unknown) => Some("train-ai=y"),
            (Stance::Disallowed, Stance::Unknown) => Some("train-ai=n"),
            (Stance::Allowed, Stance::Allowed) => Some("train-ai=y, search=y"),
            (Stance::Allowed, Stance::Disallowed) => Some("train-ai=y, search=n"),
            (Stance::Disallowed, Stance::Allowed) => Some("train-ai=n, search=y"),
            (Stance::Disallowed, Stance::Disallowed) => Some("train-ai=n, search=n"),
        }
    }

    /// The `Content-Usage` header a response should carry, given the one the origin sent
    /// (`origin`, its field lines joined with `, `): `None` leaves the response as it is.
    ///
    /// Both are statements by the same site, combined as vocab §5.1 says (the most restrictive
    /// wins). The origin's field is kept as written, with its unknown keys and parameters, and
    /// only the entries where robots.txt says more are appended: a dictionary keeps the last of
    /// duplicate keys, so an appended `train-ai=n` overrides the origin's `train-ai=y`. An
    /// origin's field that does not parse states nothing, and is replaced.
    pub fn response_header(&self, origin: Option<&str>) -> Option<String> {
        let Some(origin) = origin else {
            return self.header_value().map(str::to_owned);
        };
        let Ok(theirs) = parse_statement(PreferenceForm::ContentUsage, origin) else {
            return self.header_value().map(str::to_owned);
        };
        let mut value = origin.trim().to_owned();
        let mut changed = false;
        for usage in [Usage::TrainAi, Usage::Search] {
            let ours = self.get(usage).stance;
            if ours.rank() > theirs.stances[usage.index()].rank() {
                let key = usage.key(PreferenceForm::ContentUsage).unwrap_or_default();
                let token = if ours == Stance::Disallowed { "n" } else { "y" };
                if !value.is_empty() {
                    value.push_str(", ");
                }
                value.push_str(key);
                value.push('=');
                value.push_str(token);
                changed = true;
            }
        }
        changed.then_some(value)
    }

    /// The stated uses with their rules, for JSON output (`check --json`, `explain --json`).
    pub fn view<'a>(&self, rules: &'a [PreferenceRule]) -> Vec<StatedView<'a>> {
        Usage::ALL
            .into_iter()
            .filter_map(|usage| {
                let stated = self.get(usage);
                (stated.stance != Stance::Unknown).then(|| StatedView {
                    usage,
                    stance: stated.stance,
                    rule: stated.rule.and_then(|i| rules.get(i)),
                })
            })
            .collect()
    }

    /// For people: `train-ai=n (line 4: Content-Usage: train-ai=n); search, ai-input unknown`,
    /// or `none stated`. `rules` are the file's preference rules.
    pub fn describe(&self, rules: &[PreferenceRule]) -> String {
        let mut stated = Vec::new();
        let mut unknown = Vec::new();
        for usage in Usage::ALL {
            let s = self.get(usage);
            let token = match s.stance {
                Stance::Unknown => {
                    unknown.push(usage.label());
                    continue;
                }
                Stance::Allowed => "y",
                Stance::Disallowed => "n",
            };
            let rule = s
                .rule
                .and_then(|i| rules.get(i))
                .map(|rule| format!(" (line {}: {})", rule.line, rule.text()))
                .unwrap_or_default();
            stated.push(format!("{}={token}{rule}", usage.label()));
        }
        if stated.is_empty() {
            return "none stated".to_owned();
        }
        if !unknown.is_empty() {
            stated.push(format!("{} unknown", unknown.join(", ")));
        }
        stated.join("; ")
    }
}

/// What is stated about one use, and the rule that states it (see [`Preference::view`]).
#[derive(Debug, Clone, Serialize)]
pub struct StatedView<'a> {
    /// The use.
    pub usage: Usage,
    /// Allowed or disallowed.
    pub stance: Stance,
    /// The deciding rule.
    pub rule: Option<&'a PreferenceRule>,
}

/// A statement, parsed: what it says about each use, and what was wrong with it.
#[derive(Debug, Clone, PartialEq)]
struct Statement {
    stances: [Stance; 3],
    /// Keys nobody defined, values that are not the form's tokens, duplicates.
    warnings: Vec<ProblemKind>,
}

/// A dictionary member's value, as far as preferences care.
#[derive(Debug, Clone, Copy)]
enum Value<'de> {
    Token(&'de str),
    /// Anything else, described for a problem: `no value`, `a string`, `an inner list`, ...
    Other(&'static str),
}

/// The members of a dictionary in order, duplicates included (the last one counts).
#[derive(Debug, Default)]
struct Members<'de> {
    members: Vec<(&'de str, Value<'de>)>,
}

/// Where one member's value is written.
struct Slot<'a, 'de>(&'a mut Value<'de>);

impl<'de> sfv::visitor::DictionaryVisitor<'de> for Members<'de> {
    type Error = Infallible;

    fn entry(
        &mut self,
        key: &'de sfv::KeyRef,
    ) -> Result<impl sfv::visitor::EntryVisitor<'de>, Infallible> {
        // An inner list never reaches `bare_item`: this is its description.
        self.members
            .push((key.as_str(), Value::Other("an inner list")));
        Ok(self.members.last_mut().map(|member| Slot(&mut member.1)))
    }
}

impl<'de> sfv::visitor::ItemVisitor<'de> for Slot<'_, 'de> {
    type Error = Infallible;

    fn bare_item(
        self,
        item: sfv::BareItemFromInput<'de>,
    ) -> Result<impl sfv::visitor::ParameterVisitor<'de>, Infallible> {
        *self.0 = match item {
            sfv::BareItemFromInput::Token(token) => Value::Token(token.as_str()),
            // `key` alone, without `=`, is the boolean true (RFC 9651 §4.2.2).
            sfv::BareItemFromInput::Boolean(true) => Value::Other("no value"),
            sfv::BareItemFromInput::Boolean(false) => Value::Other("a boolean"),
            sfv::BareItemFromInput::String(_) | sfv::BareItemFromInput::DisplayString(_) => {
                Value::Other("a string")
            }
            sfv::BareItemFromInput::Integer(_) | sfv::BareItemFromInput::Decimal(_) => {
                Value::Other("a number")
            }
            sfv::BareItemFromInput::ByteSequence(_) => Value::Other("a byte sequence"),
            sfv::BareItemFromInput::Date(_) => Value::Other("a date"),
        };
        // Parameters carry no preference (vocab §6.4 and §6.5.2): validated, then ignored.
        Ok(sfv::visitor::Ignored)
    }
}

impl<'de> sfv::visitor::EntryVisitor<'de> for Slot<'_, 'de> {
    fn inner_list(self) -> Result<impl sfv::visitor::InnerListVisitor<'de>, Infallible> {
        Ok(sfv::visitor::Ignored)
    }
}

/// Keys people write that are not the form's, with what they probably meant.
fn hint(form: PreferenceForm, key: &str) -> Option<&'static str> {
    match (form, key) {
        (PreferenceForm::ContentUsage, "ai-train") => {
            Some("`ai-train` is Content-Signal's key; Content-Usage's is `train-ai`")
        }
        (PreferenceForm::ContentUsage, "ai-input") => {
            Some("`ai-input` is Content-Signal's; aipref has no such key")
        }
        (PreferenceForm::ContentUsage, "ai" | "bots" | "train-genai" | "genai" | "ai-use") => {
            Some("from an earlier aipref draft; the current keys are `train-ai` and `search`")
        }
        (PreferenceForm::ContentSignal, "train-ai") => {
            Some("`train-ai` is Content-Usage's key; Content-Signal's is `ai-train`")
        }
        _ => None,
    }
}

/// Parses a statement (vocab §6.5) in `form`. `Err` carries the structured-field error: the
/// statement then states nothing.
fn parse_statement(form: PreferenceForm, text: &str) -> Result<Statement, String> {
    let mut members = Members::default();
    sfv::Parser::new(text)
        .parse_dictionary_with_visitor(&mut members)
        .map_err(|e| e.to_string())?;
    let mut statement = Statement {
        stances: [Stance::Unknown; 3],
        warnings: Vec::new(),
    };
    let directive = form.directive();
    let (yes, no) = form.yes_no();
    for (position, &(key, value)) in members.members.iter().enumerate() {
        // A key given again later: this one does not count (RFC 9651 §4.2.2).
        if members.members[position + 1..].iter().any(|m| m.0 == key) {
            statement
                .warnings
                .push(ProblemKind::PreferenceDuplicateKey {
                    directive,
                    key: key.to_owned(),
                });
            continue;
        }
        let usage = Usage::ALL.into_iter().find(|u| u.key(form) == Some(key));
        let Some(usage) = usage else {
            let known = form == PreferenceForm::ContentSignal && key == "use";
            let valid_use = matches!(value, Value::Token("immediate" | "reference" | "full"));
            if known && !valid_use {
                statement.warnings.push(ProblemKind::PreferenceBadValue {
                    directive,
                    key: key.to_owned(),
                    value: describe_value(value),
                    expected: "`immediate`, `reference` or `full`",
                });
            } else if !known {
                statement.warnings.push(ProblemKind::PreferenceUnknownKey {
                    directive,
                    key: key.to_owned(),
                    hint: hint(form, key),
                });
            }
            continue;
        };
        let stance = match value {
            Value::Token(token) if token == yes => Stance::Allowed,
            Value::Token(token) if token == no => Stance::Disallowed,
            other => {
                let expected = match form {
                    PreferenceForm::ContentUsage => "`y` or `n`",
                    PreferenceForm::ContentSignal => "`yes` or `no`",
                };
                statement.warnings.push(ProblemKind::PreferenceBadValue {
                    directive,
                    key: key.to_owned(),
                    value: describe_value(other),
                    expected,
                });
                Stance::Unknown
            }
        };
        statement.stances[usage.index()] = stance;
    }
    Ok(statement)
}

fn describe_value(value: Value<'_>) -> String {
    match value {
        Value::Token(token) => format!("`{token}`"),
        Value::Other(what) => what.to_owned(),
    }
}

/// Reads one `Content-Usage` or `Content-Signal` value (`[path] statement`, comment and outer
/// white space already removed): the rule, if the line states anything, and the problems of the
/// line.
pub(crate) fn parse_rule(
    form: PreferenceForm,
    value: &str,
    line: u32,
) -> (Option<PreferenceRule>, Vec<ProblemKind>) {
    let directive = form.directive();
    // Attach draft §3.2: a value that starts with `/` has a path, up to the first SP or HTAB.
    let (path, statement) = if value.starts_with('/') {
        match value.find([' ', '\t']) {
            Some(end) => (&value[..end], value[end..].trim_matches([' ', '\t'])),
            None => (value, ""),
        }
    } else {
        ("", value)
    };
    if statement.is_empty() {
        return (None, vec![ProblemKind::PreferenceEmpty(directive)]);
    }
    let parsed = match parse_statement(form, statement) {
        Ok(parsed) => parsed,
        Err(error) => {
            let first = statement.split([' ', '\t']).next().unwrap_or_default();
            let hint = if !first.contains('=') && first.len() < statement.len() {
                "; a path must start with `/`"
            } else if statement.bytes().any(|b| b.is_ascii_uppercase()) {
                "; keys and values are lower-case"
            } else {
                ""
            };
            let kind = ProblemKind::PreferenceSyntax {
                directive,
                error: format!("{error}{hint}"),
            };
            return (None, vec![kind]);
        }
    };
    let rule = PreferenceRule {
        form,
        path: path.to_owned(),
        statement: statement.to_owned(),
        line,
        stances: parsed.stances,
    };
    let states_something = rule.stances.iter().any(|s| *s != Stance::Unknown);
    (states_something.then_some(rule), parsed.warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(form: PreferenceForm, value: &str) -> (Option<PreferenceRule>, Vec<String>) {
        let (rule, problems) = parse_rule(form, value, 7);
        (rule, problems.iter().map(ToString::to_string).collect())
    }

    fn stances(rule: &PreferenceRule) -> [Stance; 3] {
        Usage::ALL.map(|u| rule.stance(u))
    }

    use PreferenceForm::{ContentSignal, ContentUsage};
    use Stance::{Allowed as Y, Disallowed as N, Unknown as U};

    /// The vocab draft's own examples (§6 and §6.5).
    #[test]
    fn the_vocabulary_drafts_examples() {
        let (r, p) = rule(ContentUsage, "train-ai=y, search=n");
        assert_eq!(stances(&r.unwrap()), [Y, N, U]);
        assert!(p.is_empty());
        // "the following results in all preferences being unknown": a boolean and a string.
        let (r, p) = rule(ContentUsage, "train-ai=y, train-ai, search=n, search=\"n\"");
        assert!(r.is_none());
        assert_eq!(
            p,
            vec![
                "`train-ai` is given twice in `Content-Usage`; the last one counts",
                "`Content-Usage` `train-ai` has no value: it takes `y` or `n`; read as no preference",
                "`search` is given twice in `Content-Usage`; the last one counts",
                "`Content-Usage` `search` has a string: it takes `y` or `n`; read as no preference",
            ]
        );
        // "carries no parameters, and a preference to allow the usage".
        let (r, p) = rule(ContentUsage, "train-ai;allow=n, train-ai=y");
        assert_eq!(stances(&r.unwrap()), [Y, U, U]);
        assert_eq!(p.len(), 1);
        // Parameters, and an unknown preference: nothing stated, nothing wrong but the value.
        let (r, _) = rule(ContentUsage, "train-ai;has;parameters=\"?\"");
        assert!(r.is_none());
        // Upper case fails to parse: the statement is unknown.
        let (r, p) = rule(ContentUsage, "Train-AI=n");
        assert!(r.is_none());
        assert!(p[0].contains("not a structured-field dictionary"), "{p:?}");
        assert!(p[0].contains("lower-case"), "{p:?}");
    }

    /// The attach draft's example values, and contentsignals.org's.
    #[test]
    fn both_spellings_and_paths() {
        let (r, p) = rule(ContentUsage, "/ai-ok/ train-ai=y");
        let r = r.unwrap();
        assert_eq!(
            (r.path.as_str(), r.statement.as_str()),
            ("/ai-ok/", "train-ai=y")
        );
        assert_eq!(stances(&r), [Y, U, U]);
        assert!(p.is_empty());
        let (r, p) = rule(ContentSignal, "ai-train=no, search=yes, ai-input=yes");
        assert_eq!(stances(&r.unwrap()), [N, Y, Y]);
        assert!(p.is_empty());
        let (r, _) = rule(ContentSignal, "search=yes,ai-train=no");
        assert_eq!(stances(&r.unwrap()), [N, Y, U]);
        let (r, p) = rule(ContentSignal, "/blog/\tai-train=no, use=reference");
        assert_eq!(r.unwrap().path, "/blog/");
        assert!(p.is_empty(), "{p:?}");
    }

    #[test]
    fn mistakes_are_named_with_what_was_meant() {
        let (r, p) = rule(ContentUsage, "ai-train=n, train-ai=yes, ai=n");
        assert!(r.is_none());
        assert_eq!(
            p,
            vec![
                "`Content-Usage` key `ai-train` is not known; ignored (`ai-train` is Content-Signal's key; Content-Usage's is `train-ai`)",
                "`Content-Usage` `train-ai` has `yes`: it takes `y` or `n`; read as no preference",
                "`Content-Usage` key `ai` is not known; ignored (from an earlier aipref draft; the current keys are `train-ai` and `search`)",
            ]
        );
        let (r, p) = rule(ContentSignal, "ai-train=n, use=everything");
        assert!(r.is_none());
        assert_eq!(p.len(), 2);
        assert!(p[1].contains("`immediate`, `reference` or `full`"), "{p:?}");
        let (r, p) = rule(ContentUsage, "*.pdf train-ai=n");
        assert!(r.is_none());
        assert!(p[0].contains("a path must start with `/`"), "{p:?}");
        let (r, p) = rule(ContentUsage, "/only-a-path/");
        assert!(r.is_none());
        assert_eq!(p, vec!["`Content-Usage` gives no preference"]);
    }

    #[test]
    fn combining_is_most_restrictive_per_use() {
        let said = |stance, rule| Stated {
            stance,
            rule: Some(rule),
        };
        let a = Preference {
            stated: [said(Y, 1), said(N, 1), Stated::default()],
        };
        let b = Preference {
            stated: [said(N, 2), said(Y, 2), said(Y, 2)],
        };
        let both = a.stricter(b);
        assert_eq!(both.get(Usage::TrainAi), said(N, 2));
        assert_eq!(both.get(Usage::Search), said(N, 1));
        assert_eq!(both.get(Usage::AiInput), said(Y, 2));
        assert_eq!(
            both.refused(&[Usage::AiInput, Usage::Search]),
            Some((Usage::Search, said(N, 1)))
        );
        assert_eq!(both.header_value(), Some("train-ai=n, search=n"));
        assert_eq!(Preference::UNKNOWN.header_value(), None);
        assert!(Preference::UNKNOWN.is_unknown());
    }

    #[test]
    fn a_response_header_combines_with_the_origins() {
        let pref = Preference {
            stated: [
                Stated {
                    stance: N,
                    rule: Some(0),
                },
                Stated {
                    stance: Y,
                    rule: Some(0),
                },
                Stated::default(),
            ],
        };
        assert_eq!(
            pref.response_header(None).as_deref(),
            Some("train-ai=n, search=y")
        );
        // The origin already says as much: left as it is.
        assert_eq!(
            pref.response_header(Some("train-ai=n, search=y, x=1")),
            None
        );
        // It says less: robots.txt's stricter entries are appended, and win.
        assert_eq!(
            pref.response_header(Some("train-ai=y;src=cms")).as_deref(),
            Some("train-ai=y;src=cms, train-ai=n, search=y")
        );
        // Unreadable: replaced.
        assert_eq!(
            pref.response_header(Some("Train-AI=yes")).as_deref(),
            Some("train-ai=n, search=y")
        );
        assert_eq!(Preference::UNKNOWN.response_header(Some("search=n")), None);
    }
}

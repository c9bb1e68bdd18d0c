//! Content-use preference rules compiled for matching: per use, one group matcher over the
//! rules of a group that state it (the rules and their parsing are in [`super::preferences`]).

use super::matcher::{Budget, Found, GroupMatcher};
use super::parse::{Rule, RuleKind};
use super::pattern::{Key, Prepared};
use super::preferences::{PreferenceRule, Stance, Usage};
use super::problem::Problem;

/// The preference rules of one group (or of several merged groups), compiled: per use, one
/// matcher over the rules that state it.
#[derive(Debug, Default)]
pub(crate) struct PreferenceMatcher {
    by_usage: [Option<GroupMatcher>; 3],
}

impl PreferenceMatcher {
    /// Compiles the rules `indices` of `rules`; `None` when none states anything.
    ///
    /// Each use's matcher ranks its rules as a group's are ranked (longest pattern first), with
    /// `n` in the place of `allow` so that it wins a tie of lengths; the rule index stands for
    /// the preference rule.
    pub fn build(
        rules: &[PreferenceRule],
        indices: &[usize],
        problems: &mut Vec<Problem>,
    ) -> Option<PreferenceMatcher> {
        let mut matcher = PreferenceMatcher::default();
        let mut any = false;
        for usage in Usage::ALL {
            let prepared: Vec<Prepared> = indices
                .iter()
                .filter_map(|&index| rules.get(index).map(|rule| (index, rule)))
                .filter_map(|(index, rule)| {
                    let kind = match rule.stance(usage) {
                        Stance::Unknown => return None,
                        Stance::Disallowed => RuleKind::Allow,
                        Stance::Allowed => RuleKind::Disallow,
                    };
                    let as_rule = Rule {
                        kind,
                        pattern: rule.path.clone(),
                        line: rule.line,
                    };
                    Some(Prepared::new(index, &as_rule))
                })
                .collect();
            if prepared.is_empty() {
                continue;
            }
            any = true;
            matcher.by_usage[usage.index()] = Some(GroupMatcher::build(prepared, problems));
        }
        any.then_some(matcher)
    }

    /// The best rule stating `usage` for `path` (normalised) that ranks above `floor`, its work
    /// paid from `budget`.
    pub fn decide(
        &self,
        usage: Usage,
        path: &[u8],
        floor: Option<Key>,
        budget: &mut Budget,
    ) -> Option<Found> {
        self.by_usage[usage.index()]
            .as_ref()
            .and_then(|matcher| matcher.decide(path, floor, budget))
    }
}

//! Verdicts already decided, so that a path asked for again is not matched again.
//!
//! A verdict depends only on the groups a crawler follows and on the path, and logs repeat
//! both: crawlers fetch the same pages again and again, and most crawlers follow the same `*`
//! groups. On a large robots.txt a first match walks trees and automata spread over megabytes
//! (a few hundred nanoseconds a path, mostly cache misses); a remembered one is a hash lookup.
//! The memo is bounded: when full it starts over.

use crate::robots::{path, Robots, Selected};
use std::collections::HashMap;

/// How many verdicts are remembered, over all selections, before starting over.
const MAX_ENTRIES: usize = 1 << 17;

/// Paths longer than this are matched every time rather than remembered.
const MAX_PATH_BYTES: usize = 256;

/// A verdict without borrows: allowed or not, the deciding rule's index, and whether the query
/// ran out of its work budget.
pub use crate::judge::Matched as Decided;

/// Remembered verdicts, per selection of groups.
#[derive(Debug, Default)]
pub struct Memo {
    /// The groups a selection stands for → its number.
    selections: HashMap<Vec<usize>, usize>,
    /// By selection number: path → verdict.
    verdicts: Vec<foldhash::HashMap<Box<[u8]>, Decided>>,
    entries: usize,
}

impl Memo {
    /// The number of the selection of groups `selected` stands for in `robots`: crawlers that
    /// follow the same groups share remembered verdicts.
    pub fn selection(&mut self, robots: &Robots, selected: Selected) -> usize {
        let groups = robots.groups_of(selected);
        if let Some(&number) = self.selections.get(groups) {
            return number;
        }
        let number = self.verdicts.len();
        self.selections.insert(groups.to_vec(), number);
        self.verdicts.push(foldhash::HashMap::default());
        number
    }

    /// The verdict of [`Robots::check_selected`] for `selected`, numbered `selection`.
    pub fn check(
        &mut self,
        robots: &Robots,
        selection: usize,
        selected: Selected,
        path: &str,
    ) -> Decided {
        let normal = path::normalize(path::path_and_query(path).as_bytes()).into_owned();
        self.check_normalized(robots, selection, selected, &normal)
    }

    /// The verdict of [`Robots::check_normalized`] for `selected`, numbered `selection`, of a
    /// path already reduced and normalised (the replay normalises each line's path once).
    pub fn check_normalized(
        &mut self,
        robots: &Robots,
        selection: usize,
        selected: Selected,
        path: &[u8],
    ) -> Decided {
        let Some(verdicts) = self.verdicts.get_mut(selection) else {
            return decide(robots, selected, path);
        };
        if let Some(decided) = verdicts.get(path) {
            return *decided;
        }
        let decided = decide(robots, selected, path);
        if path.len() <= MAX_PATH_BYTES {
            if self.entries >= MAX_ENTRIES {
                self.verdicts.iter_mut().for_each(HashMap::clear);
                self.entries = 0;
            }
            if let Some(verdicts) = self.verdicts.get_mut(selection) {
                verdicts.insert(path.into(), decided);
                self.entries += 1;
            }
        }
        decided
    }
}

fn decide(robots: &Robots, selected: Selected, path: &[u8]) -> Decided {
    Decided::of(&robots.check_normalized(selected, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembered_verdicts_are_the_robots_verdicts() {
        let robots = Robots::parse(
            b"User-agent: GPTBot\nDisallow: /a\n\nUser-agent: CCBot\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\nAllow: /b/ok\n",
        );
        let mut memo = Memo::default();
        let select = |token: &str| robots.select(&[token], true);
        let gpt = memo.selection(&robots, select("GPTBot"));
        let cc = memo.selection(&robots, select("CCBot"));
        let star = memo.selection(&robots, select(""));
        let other = memo.selection(&robots, select("Googlebot"));
        assert_ne!(gpt, cc, "different groups, even with the same rules");
        assert_eq!(star, other);
        for _ in 0..2 {
            for (token, selection) in [("GPTBot", gpt), ("CCBot", cc), ("", star)] {
                for path in ["/a", "/b/x", "/b/ok", "/c", "/public/../b"] {
                    let verdict = robots.check(token, path);
                    let decided = memo.check(&robots, selection, select(token), path);
                    assert_eq!(
                        (decided.allowed, decided.rule),
                        (verdict.allowed, verdict.rule_index),
                        "{token} {path}"
                    );
                }
            }
        }
        assert_eq!(memo.entries, 15);
    }
}

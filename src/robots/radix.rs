//! A set of byte strings as a radix tree (a trie whose chains of single children are merged
//! into one edge), for one question: which of the strings start a haystack (or, walked from the
//! end, end it)?
//!
//! A walk compares whole edge labels at once and branches only where the strings differ, so it
//! costs a few comparisons per branching point rather than an automaton transition per octet:
//! thousands of rules that share `/$27889F02-6142-4F12-BC72-D12A82659500$/` are passed in one
//! comparison. The tree is built without recursion (a file can nest thousands of strings) and
//! in time linear in the strings' length plus a logarithm per node.

/// No value: the node is a branching point, not the end of a string.
const NONE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Node {
    /// The edge label that leads to this node: a range of [`Radix::labels`].
    label: (u32, u32),
    /// The children: a range of [`Radix::child_bytes`] and [`Radix::children`].
    children: (u32, u32),
    /// The value of the string that ends here, or [`NONE`].
    value: u32,
}

/// Byte strings, each with a value, searchable by prefix (or suffix) of a haystack.
#[derive(Debug, Clone, Default)]
pub(crate) struct Radix {
    nodes: Vec<Node>,
    labels: Vec<u8>,
    /// Per child, the first byte of its label; each node's children sorted by it.
    child_bytes: Vec<u8>,
    children: Vec<u32>,
}

/// The radix tree cannot index more than `u32::MAX` octets or nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooLarge;

fn index(n: usize) -> Result<u32, TooLarge> {
    u32::try_from(n).map_err(|_| TooLarge)
}

impl Radix {
    /// Builds the tree over `strings`, which must be sorted and free of duplicates; each string
    /// gets its value. Reading a string backwards (see [`Radix::walk_back`]) needs the strings
    /// reversed here.
    pub fn build(strings: &[(&[u8], u32)]) -> Result<Radix, TooLarge> {
        let mut radix = Radix::default();
        radix.nodes.push(Node {
            label: (0, 0),
            children: (0, 0),
            value: NONE,
        });
        // Children are found node by node, then laid out contiguously per node.
        let mut kids: Vec<Vec<(u8, u32)>> = vec![Vec::new()];
        // (strings range, depth already matched, node): the node's value and children.
        let mut work = vec![(0usize, strings.len(), 0usize, 0u32)];
        while let Some((mut low, high, depth, node)) = work.pop() {
            if low < high && strings[low].0.len() == depth {
                if let Some(n) = radix.nodes.get_mut(node as usize) {
                    n.value = strings[low].1;
                }
                low += 1;
            }
            while low < high {
                let first = strings[low].0;
                let byte = first[depth];
                // Sorted, and sharing `depth` octets: the strings with this byte come together.
                let end =
                    low + strings[low..high].partition_point(|(string, _)| string[depth] <= byte);
                let last = strings[end - 1].0;
                let common = depth
                    + first[depth..]
                        .iter()
                        .zip(&last[depth..])
                        .take_while(|(a, b)| a == b)
                        .count();
                let start = index(radix.labels.len())?;
                radix.labels.extend_from_slice(&first[depth..common]);
                let child = index(radix.nodes.len())?;
                radix.nodes.push(Node {
                    label: (start, index(radix.labels.len())?),
                    children: (0, 0),
                    value: NONE,
                });
                kids.push(Vec::new());
                if let Some(list) = kids.get_mut(node as usize) {
                    list.push((byte, child));
                }
                work.push((low, end, common, child));
                low = end;
            }
        }
        for (node, list) in radix.nodes.iter_mut().zip(kids) {
            let start = index(radix.children.len())?;
            for (byte, child) in list {
                radix.child_bytes.push(byte);
                radix.children.push(child);
            }
            node.children = (start, index(radix.children.len())?);
        }
        Ok(radix)
    }

    fn label(&self, node: &Node) -> &[u8] {
        self.labels
            .get(node.label.0 as usize..node.label.1 as usize)
            .unwrap_or_default()
    }

    /// The child of `node` whose label starts with `byte`.
    fn child(&self, node: &Node, byte: u8) -> Option<&Node> {
        let (start, end) = (node.children.0 as usize, node.children.1 as usize);
        let bytes = self.child_bytes.get(start..end)?;
        let at = bytes.binary_search(&byte).ok()?;
        let id = *self.children.get(start + at)?;
        self.nodes.get(id as usize)
    }

    /// Calls `visit(value, length)` for every string that starts `haystack`, shortest first, and
    /// returns how many octets of it the walk read.
    pub fn walk(&self, haystack: &[u8], visit: impl FnMut(u32, usize)) -> usize {
        self.walk_by(
            haystack.len(),
            |depth| haystack[depth],
            |label, depth| {
                haystack
                    .get(depth..depth + label.len())
                    .is_some_and(|part| same(part, label))
            },
            visit,
        )
    }

    /// Calls `visit(value, length)` for every string whose reverse ends `haystack` (the tree
    /// was built over reversed strings), shortest first, and returns how many octets of it the
    /// walk read.
    pub fn walk_back(&self, haystack: &[u8], visit: impl FnMut(u32, usize)) -> usize {
        let len = haystack.len();
        self.walk_by(
            len,
            |depth| haystack[len - 1 - depth],
            |label, depth| {
                let rest = &haystack[..len - depth];
                label.len() <= rest.len() && label.iter().eq(rest.iter().rev().take(label.len()))
            },
            visit,
        )
    }

    /// The walk of [`Radix::walk`] and [`Radix::walk_back`], over a haystack of `len` octets
    /// read in walk order: `byte_at(depth)` is the octet at `depth`, and `label_at(label,
    /// depth)` says whether the octets from `depth` on are `label`.
    fn walk_by(
        &self,
        len: usize,
        byte_at: impl Fn(usize) -> u8,
        label_at: impl Fn(&[u8], usize) -> bool,
        mut visit: impl FnMut(u32, usize),
    ) -> usize {
        let Some(mut node) = self.nodes.first() else {
            return 0;
        };
        let mut depth = 0;
        loop {
            if node.value != NONE {
                visit(node.value, depth);
            }
            if depth >= len {
                return depth;
            }
            let Some(child) = self.child(node, byte_at(depth)) else {
                return depth;
            };
            let label = self.label(child);
            if !label_at(label, depth) {
                return depth + label.len().min(len - depth);
            }
            depth += label.len();
            node = child;
        }
    }

    /// Bytes of memory held.
    #[cfg(test)]
    pub fn heap_bytes(&self) -> usize {
        self.nodes.len() * std::mem::size_of::<Node>()
            + self.labels.len()
            + self.child_bytes.len()
            + self.children.len() * 4
    }
}

/// Whether two short byte strings are equal, without a call to `memcmp`: the labels and pieces
/// compared here are a few octets long, and the call costs more than the comparison.
#[inline]
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tree(strings: &[&str]) -> Radix {
        let mut sorted: Vec<&[u8]> = strings.iter().map(|s| s.as_bytes()).collect();
        sorted.sort();
        sorted.dedup();
        let valued: Vec<(&[u8], u32)> = sorted
            .iter()
            .map(|s| {
                (
                    *s,
                    strings.iter().position(|x| x.as_bytes() == *s).unwrap() as u32,
                )
            })
            .collect();
        Radix::build(&valued).unwrap()
    }

    fn starting(radix: &Radix, haystack: &str) -> Vec<(u32, usize)> {
        let mut found = Vec::new();
        radix.walk(haystack.as_bytes(), |value, length| {
            found.push((value, length))
        });
        found
    }

    #[test]
    fn every_string_that_starts_the_haystack_shortest_first() {
        let radix = tree(&["/a", "/ab", "/abc/d", "/b", "", "/abx"]);
        assert_eq!(
            starting(&radix, "/abc/de"),
            vec![(4, 0), (0, 2), (1, 3), (2, 6)]
        );
        assert_eq!(starting(&radix, "/ab"), vec![(4, 0), (0, 2), (1, 3)]);
        assert_eq!(starting(&radix, "/c"), vec![(4, 0)]);
        assert_eq!(starting(&tree(&[]), "/x"), vec![]);
    }

    #[test]
    fn walking_back_finds_suffixes() {
        let reversed = |s: &str| s.chars().rev().collect::<String>();
        let strings: Vec<String> = [".pdf", "f", "x.pdf"].iter().map(|s| reversed(s)).collect();
        let radix = tree(&strings.iter().map(String::as_str).collect::<Vec<_>>());
        let mut found = Vec::new();
        radix.walk_back(b"/a/x.pdf", |value, length| found.push((value, length)));
        assert_eq!(found, vec![(1, 1), (0, 4), (2, 5)]);
    }

    #[test]
    fn deep_nesting_builds_without_recursion() {
        let strings: Vec<String> = (1..20_000).map(|n| "a".repeat(n)).collect();
        let radix = tree(&strings.iter().map(String::as_str).collect::<Vec<_>>());
        let mut count = 0;
        radix.walk("a".repeat(30_000).as_bytes(), |_, _| count += 1);
        assert_eq!(count, 19_999);
        assert!(radix.heap_bytes() < 2 << 20);
    }

    proptest! {
        #[test]
        fn walks_agree_with_starts_with(
            strings in prop::collection::vec("[ab/]{0,6}", 0..20),
            haystack in "[ab/]{0,10}",
        ) {
            let refs: Vec<&str> = strings.iter().map(String::as_str).collect();
            let radix = tree(&refs);
            let mut want: Vec<(u32, usize)> = refs
                .iter()
                .enumerate()
                .filter(|(i, s)| haystack.starts_with(**s) && refs.iter().position(|x| x == *s) == Some(*i))
                .map(|(i, s)| (i as u32, s.len()))
                .collect();
            want.sort_by_key(|&(_, length)| length);
            prop_assert_eq!(starting(&radix, &haystack), want);
        }
    }
}

//! One pass over a header's bytes before it is read: the runs of token bytes (`[A-Za-z_-]`)
//! that are known tokens, the crawler words inside runs, and whether the header holds anything
//! at all that could name a crawler.
//!
//! A known token matches only a whole run, so a run is looked up whole in a table of the tokens
//! (and of the words browsers and platforms write, which are looked up only to know that they
//! hold no crawler word); a crawler word is letters only, so it lies inside one run, and only a
//! run the table does not know is searched for one. The marks every crawler signal needs are
//! looked at on the way (`KHTML` that opens more than `KHTML, like Gecko)`, `compatible`,
//! `subscriber`, `://`, `@` or `[at]`, a `+` before a letter or digit, a `.` before a letter).
//!
//! Measured against the Aho-Corasick automaton of every token and mark this replaced (one
//! leftmost-longest DFA scan, which also had to rescan where its matches could hide a crawler
//! word): see `docs/decisions/classifier-grammar.md`, decision 12.

use super::vocabulary::{self, CRAWLER_WORDS};
use foldhash::fast::FixedState;
use smallvec::SmallVec;
use std::collections::HashMap;

/// What the table knows of a run.
#[derive(Debug, Clone, Default)]
struct Known {
    /// The token the run is (its index among the classifier's tokens) and whether that token
    /// may count (one that never does is a browser's word or a person's app).
    token: Option<(usize, bool)>,
    /// The crawler words in the run (offset, length), overlapping ones too.
    words: SmallVec<[(u8, u8); 2]>,
    /// Whether the run is a mark (`compatible`, `subscriber`, `subscribers`) or is `khtml`.
    mark: Mark,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Mark {
    #[default]
    None,
    /// A word a signal needs.
    Word,
    /// `KHTML`: a mark unless it opens exactly `KHTML, like Gecko)`.
    Khtml,
}

/// What the pass found in a header.
#[derive(Debug, Clone, Default)]
pub(super) struct Scan {
    /// Nothing in the header could name a crawler: every token in it never counts, and it holds
    /// no crawler word and no mark.
    pub plain: bool,
    /// Every whole-run token (index, start, end), in order.
    pub tokens: SmallVec<[(usize, usize, usize); 8]>,
    /// Every crawler word (start, end), in order of where it starts.
    pub words: SmallVec<[(usize, usize); 4]>,
}

/// The runs a scan knows, built once per classifier.
#[derive(Debug, Clone)]
pub(super) struct Runs {
    /// The runs, lower-cased, and what each is.
    entries: Vec<(Box<[u8]>, Known)>,
    /// An open-addressed index of `entries` by [`fold`] and length (`u32::MAX`: empty).
    slots: Vec<(u64, u32, u32)>,
    /// The shortest and the longest run the table holds: no other length is looked up.
    lengths: (usize, usize),
    /// For each three letters folded to five bits each, whether a crawler word starts so.
    starts: Box<[u64; 512]>,
}

/// The first eight bytes of `run` (fewer when it is shorter), lower-cased, as one word: what a
/// run is looked up by, with its length. Token bytes fold without collision (`A`-`Z` to
/// `a`-`z`, `-` stays, `_` becomes 0x7F).
///
/// `bytes` starts with the run, which is `len` long, and may run on past it: eight bytes are
/// then read at once (a copy of fewer into a buffer stalls the load that follows it).
fn fold(bytes: &[u8], len: usize) -> u64 {
    let n = len.min(8);
    let word = match bytes
        .get(..8)
        .and_then(|eight| <[u8; 8]>::try_from(eight).ok())
    {
        Some(eight) => u64::from_le_bytes(eight),
        None => bytes[..n]
            .iter()
            .rev()
            .fold(0, |word, &b| word << 8 | u64::from(b)),
    };
    let mask = if n == 8 {
        u64::MAX
    } else {
        (1u64 << (n * 8)) - 1
    };
    (word | 0x2020_2020_2020_2020) & mask
}

fn slot_of(key: u64, len: usize, slots: usize) -> usize {
    let hash = (key ^ len as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    // The high bits, which the multiply mixes best.
    (hash >> 32) as usize & (slots - 1)
}

fn trigram(a: u8, b: u8, c: u8) -> usize {
    usize::from(a & 31) << 10 | usize::from(b & 31) << 5 | usize::from(c & 31)
}

impl Runs {
    /// The table for `tokens` (lower-cased, each with whether it may count), in index order.
    pub fn new<'a>(tokens: impl IntoIterator<Item = (&'a str, bool)>) -> Runs {
        let mut starts = Box::new([0u64; 512]);
        for word in CRAWLER_WORDS {
            let w = word.as_bytes();
            let code = trigram(w[0], w[1], w[2]);
            starts[code >> 6] |= 1 << (code & 63);
        }
        let mut known = HashMap::with_hasher(FixedState::with_seed(0x7275_6e73_5f73_6361));
        for (index, (token, counts)) in tokens.into_iter().enumerate() {
            let known = entry(&mut known, &starts, token);
            if known.token.is_none() {
                known.token = Some((index, counts));
            }
        }
        for word in super::BROWSER_VOCABULARY.iter().chain(
            vocabulary::PEOPLES_WORDS
                .iter()
                .flat_map(|list| list.iter()),
        ) {
            entry(&mut known, &starts, &word.to_ascii_lowercase());
        }
        for word in ["compatible", "subscriber", "subscribers"] {
            entry(&mut known, &starts, word).mark = Mark::Word;
        }
        entry(&mut known, &starts, "khtml").mark = Mark::Khtml;
        let mut runs = Runs {
            entries: known.into_iter().collect(),
            slots: Vec::new(),
            lengths: (usize::MAX, 0),
            starts,
        };
        let size = (runs.entries.len() * 2).next_power_of_two().max(16);
        runs.slots = vec![(0, 0, u32::MAX); size];
        for (at, (run, _)) in runs.entries.iter().enumerate() {
            runs.lengths = (runs.lengths.0.min(run.len()), runs.lengths.1.max(run.len()));
            let key = fold(run, run.len());
            let mut slot = slot_of(key, run.len(), size);
            while runs.slots[slot].2 != u32::MAX {
                slot = (slot + 1) & (size - 1);
            }
            // A few thousand entries of a few dozen bytes: both fit in 32 bits.
            runs.slots[slot] = (key, run.len() as u32, at as u32);
        }
        runs
    }

    /// What the table knows of the run that is the first `len` bytes of `bytes`, if anything.
    fn find(&self, bytes: &[u8], len: usize) -> Option<&Known> {
        if len < self.lengths.0 || len > self.lengths.1 {
            return None;
        }
        let run = &bytes[..len];
        let key = fold(bytes, len);
        let mut slot = slot_of(key, run.len(), self.slots.len());
        loop {
            let &(k, len, at) = self.slots.get(slot)?;
            if at == u32::MAX {
                return None;
            }
            if k == key && len as usize == run.len() {
                let (entry, known) = self.entries.get(at as usize)?;
                if entry
                    .get(8..)
                    .unwrap_or_default()
                    .eq_ignore_ascii_case(run.get(8..).unwrap_or_default())
                {
                    return Some(known);
                }
            }
            slot = (slot + 1) & (self.slots.len() - 1);
        }
    }

    /// One pass over `header`.
    pub fn scan(&self, header: &[u8]) -> Scan {
        let mut scan = Scan {
            plain: true,
            ..Scan::default()
        };
        let mut i = 0;
        while let Some(&byte) = header.get(i) {
            match CLASS[usize::from(byte)] {
                Class::Other => {
                    i += 1;
                    continue;
                }
                Class::Mark => {
                    scan.plain &= !byte_mark(header, i);
                    i += 1;
                    continue;
                }
                Class::Token => {}
            }
            let start = i;
            while header
                .get(i)
                .is_some_and(|&b| CLASS[usize::from(b)] == Class::Token)
            {
                i += 1;
            }
            let run = &header[start..i];
            match self.find(&header[start..], run.len()) {
                Some(known) => {
                    for &(at, len) in &known.words {
                        let at = start + usize::from(at);
                        scan.words.push((at, at + usize::from(len)));
                    }
                    if let Some((index, counts)) = known.token {
                        scan.tokens.push((index, start, i));
                        scan.plain &= !counts;
                    }
                    scan.plain &= known.words.is_empty()
                        && match known.mark {
                            Mark::None => true,
                            Mark::Word => false,
                            Mark::Khtml => super::plain_engine_comment(header, start),
                        };
                }
                None => {
                    let before = scan.words.len();
                    words_in(&self.starts, run, |s, e| {
                        scan.words.push((start + s, start + e))
                    });
                    // A run the table does not know but that starts `khtml` may open an engine
                    // comment with a name in it.
                    let khtml = run
                        .get(..5)
                        .is_some_and(|head| head.eq_ignore_ascii_case(b"khtml"));
                    scan.plain &= scan.words.len() == before && !khtml;
                }
            }
        }
        scan
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    /// `[A-Za-z_-]`.
    Token,
    /// A byte a mark may start with ([`byte_mark`]).
    Mark,
    Other,
}

/// What each byte is to the scan: one load a byte instead of a few comparisons.
static CLASS: [Class; 256] = {
    let mut table = [Class::Other; 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        table[b] = if byte.is_ascii_alphabetic() || byte == b'-' || byte == b'_' {
            Class::Token
        } else if matches!(byte, b':' | b'@' | b'+' | b'.' | b'[') {
            Class::Mark
        } else {
            Class::Other
        };
        b += 1;
    }
    table
};

/// The entry of `lower` in the table being built, made with the crawler words it holds.
fn entry<'a>(
    known: &'a mut HashMap<Box<[u8]>, Known, FixedState>,
    starts: &[u64; 512],
    lower: &str,
) -> &'a mut Known {
    known.entry(lower.as_bytes().into()).or_insert_with(|| {
        let mut words = SmallVec::new();
        words_in(starts, lower.as_bytes(), |start, end| {
            if let (Ok(at), Ok(len)) = (u8::try_from(start), u8::try_from(end - start)) {
                words.push((at, len));
            }
        });
        Known {
            words,
            ..Known::default()
        }
    })
}

/// Calls `found(start, end)` for every crawler word in `run` (overlapping ones too), where
/// `starts` has a bit for each three letters a word starts with ([`trigram`]).
fn words_in(starts: &[u64; 512], run: &[u8], mut found: impl FnMut(usize, usize)) {
    for at in 0..run.len().saturating_sub(2) {
        let code = trigram(run[at], run[at + 1], run[at + 2]);
        if starts[code >> 6] & (1 << (code & 63)) == 0 {
            continue;
        }
        for word in CRAWLER_WORDS {
            let end = at + word.len();
            if run
                .get(at..end)
                .is_some_and(|piece| piece.eq_ignore_ascii_case(word.as_bytes()))
            {
                found(at, end);
            }
        }
    }
}

/// Whether the byte at `at` (not a token byte) starts a mark: `://`, `@`, `[at]`, a `+` before a
/// letter or digit, a `.` before a letter.
fn byte_mark(header: &[u8], at: usize) -> bool {
    let next = header.get(at + 1);
    match header[at] {
        b':' => header.get(at + 1..at + 3) == Some(b"//"),
        b'@' => true,
        b'+' => next.is_some_and(u8::is_ascii_alphanumeric),
        b'.' => next.is_some_and(u8::is_ascii_alphabetic),
        b'[' => super::grammar::opens_bracketed_at(header, at),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs() -> Runs {
        Runs::new([("googlebot", true), ("mozilla", false), ("mj", true)])
    }

    #[test]
    fn tokens_are_whole_runs_and_words_lie_inside_runs() {
        let runs = runs();
        let h = b"Mozilla/5.0 (compatible; Googlebot/2.1; MJ12bot; Googlebotx)";
        let scan = runs.scan(h);
        assert!(!scan.plain);
        let tokens: Vec<_> = scan.tokens.iter().map(|&(t, s, e)| (t, &h[s..e])).collect();
        assert_eq!(
            tokens,
            [(1, &b"Mozilla"[..]), (0, b"Googlebot"), (2, b"MJ")]
        );
        let words: Vec<_> = scan.words.iter().map(|&(s, e)| &h[s..e]).collect();
        assert_eq!(words, [&b"bot"[..], b"bot", b"bot"]);
        // Overlapping words are all found (`robot` and `bot`, `crawler` and `crawl`).
        let scan = runs.scan(b"webcrawler-robot");
        let words: Vec<_> = scan
            .words
            .iter()
            .map(|&(s, e)| &b"webcrawler-robot"[s..e])
            .collect();
        assert_eq!(words, [&b"crawler"[..], b"crawl", b"robot", b"bot"]);
    }

    #[test]
    fn what_keeps_a_header_plain() {
        let runs = runs();
        let plain = |h: &str| runs.scan(h.as_bytes()).plain;
        assert!(plain("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"));
        assert!(!plain(
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; GPTBot)"
        ));
        assert!(!plain("Mozilla/5.0 (KHTMLx)"));
        for marked in [
            "x (compatible; y)",
            "x 12 subscribers",
            "x http://y",
            "x a@b",
            "x a[at]b",
            "x +y",
            "x y.com",
            "Googlebot/2.1",
        ] {
            assert!(!plain(marked), "{marked}");
        }
        for quiet in [
            "x 1.5",
            "x 1+ 2",
            "x: y",
            "x [y]",
            "Mozilla",
            "x (incompatible)",
        ] {
            assert!(plain(quiet), "{quiet}");
        }
    }
}

//! The passes over a header's bytes before it is read: whether the header holds anything at all
//! that could name a crawler, and for a header that does, the runs of token bytes
//! (`[A-Za-z_-]`) that are known tokens and the crawler words inside runs.
//!
//! A known token matches only a whole run, so a run is looked up whole in a table of the tokens
//! (and of the words browsers and platforms write, which are looked up only to know that they
//! hold no crawler word); a crawler word is letters only, so it lies inside one run, and only a
//! run the table does not know is searched for one. The marks every crawler signal needs are
//! looked at on the way (`KHTML` that opens more than `KHTML, like Gecko)`, `compatible`,
//! `subscriber`, `://`, `@` or `[at]`, a `+` before a letter or digit, a `.` before a letter).
//!
//! Most headers are people's and hold none of it, so the first pass ([`Runs::plain_until`])
//! records nothing and answers a run from the table's slot alone; it stops at the first thing
//! that could name a crawler, and the second ([`Runs::scan_from`]) records tokens and words
//! from there on.
//!
//! Measured against the Aho-Corasick automaton of every token and mark this replaced (one
//! leftmost-longest DFA scan, which also had to rescan where its matches could hide a crawler
//! word), and against one pass that recorded as it went: see
//! `docs/decisions/classifier-grammar.md`, decisions 12 and 14.

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

impl Known {
    /// What the run means to a scan ([`Look`]), worked out once when the table is built so
    /// that a scan reads the entry only when there is something to record.
    fn look(&self) -> Look {
        let counts = self.token.is_some_and(|(_, counts)| counts);
        let mut look = Look(0);
        if counts || !self.words.is_empty() || self.mark == Mark::Word {
            look.0 |= Look::NAMED;
        }
        if self.mark == Mark::Khtml {
            look.0 |= Look::KHTML;
        }
        if self.token.is_some() || !self.words.is_empty() {
            look.0 |= Look::RECORD;
        }
        look
    }
}

/// What a known run means to a scan, as bits; none for a browser's or a platform's word, which
/// most runs of people's headers are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Look(u8);

impl Look {
    /// The header is not plain: a token that may count, a crawler word or a mark.
    const NAMED: u8 = 1;
    /// `KHTML`: the header stays plain only where it opens exactly `KHTML, like Gecko)`.
    const KHTML: u8 = 2;
    /// The entry's token (one that counts, or a person's app, which makes the header's URLs
    /// its own) or its crawler words are recorded for the reading.
    const RECORD: u8 = 4;
}

/// What a scan found in a header, for its reading.
#[derive(Debug, Clone, Default)]
pub(super) struct Scan {
    /// Every whole-run token (index, start, end) that may count or is a person's app, in order
    /// (a token that never counts and is no app decides nothing).
    pub tokens: SmallVec<[(usize, usize, usize); 8]>,
    /// Every crawler word (start, end), in order of where it starts.
    pub words: SmallVec<[(usize, usize); 4]>,
}

/// A slot of the index beside its key: what the plain pass needs of an entry, so that it reads
/// nothing else (16 bytes).
#[derive(Debug, Clone, Copy, Default)]
struct Meta {
    /// Bytes 8 to 16 of the run, folded ([`fold_at`]); 0 for a run of eight bytes or fewer.
    tail: u64,
    /// The entry in `entries`.
    at: u32,
    /// The run's length (a run longer than `u16::MAX` is never looked up).
    len: u16,
    /// What the run makes of a header that may be plain.
    look: Look,
}

/// The runs a scan knows, built once per classifier.
#[derive(Debug, Clone)]
pub(super) struct Runs {
    /// The runs, lower-cased, and what each is.
    entries: Vec<(Box<[u8]>, Known)>,
    /// An open-addressed index of `entries`: the first eight bytes of each run, folded
    /// ([`fold_at`]), hashed with its length ([`slot_of`]); 0 is an empty slot (no run folds to
    /// 0). Probing reads these eight bytes a slot and nothing else.
    keys: Box<[u64]>,
    /// Beside each key, the rest of what a match needs ([`Meta`]).
    metas: Box<[Meta]>,
    /// The shortest and the longest run the table holds: no other length is looked up.
    lengths: (usize, usize),
    /// For each three letters folded to five bits each, whether a crawler word starts so.
    starts: Box<[u64; 512]>,
}

/// The first eight bytes of the run of `len` bytes at `header[start..]` (fewer when it is
/// shorter), lower-cased, as one word: what a run is looked up by, with its length. Token bytes
/// fold without collision (`A`-`Z` to `a`-`z`, `-` stays, `_` becomes 0x7F) and never to 0, so a
/// run's key is never 0.
///
/// The header may run on past the run: eight bytes are then read at once (a copy of fewer into
/// a buffer stalls the load that follows it), and masked.
#[inline(always)]
fn fold_at(header: &[u8], start: usize, len: usize) -> u64 {
    let n = len.min(8);
    let word = match header
        .get(start..start + 8)
        .and_then(|eight| <[u8; 8]>::try_from(eight).ok())
    {
        Some(eight) => u64::from_le_bytes(eight),
        None => fold_short(header.get(start..).unwrap_or_default(), n),
    };
    // `n` is 1 to 8 for a run (0 only for an empty one, which folds to 0 too).
    let mask = u64::MAX.checked_shr(64 - 8 * n as u32).unwrap_or(0);
    (word | 0x2020_2020_2020_2020) & mask
}

/// The first `n` bytes of `bytes` as a little-endian word, for a run that ends less than eight
/// bytes before the end of its header.
#[cold]
fn fold_short(bytes: &[u8], n: usize) -> u64 {
    bytes
        .iter()
        .take(n)
        .rev()
        .fold(0, |word, &b| word << 8 | u64::from(b))
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
        // A run longer than a `u16` is never looked up (no token is that long).
        let entries: Vec<(Box<[u8]>, Known)> = known
            .into_iter()
            .filter(|(run, _)| !run.is_empty() && run.len() <= usize::from(u16::MAX))
            .collect();
        let size = (entries.len() * 2).next_power_of_two().max(16);
        let mut keys = vec![0u64; size].into_boxed_slice();
        let mut metas = vec![Meta::default(); size].into_boxed_slice();
        let mut lengths = (usize::MAX, 0);
        for (at, (run, known)) in entries.iter().enumerate() {
            lengths = (lengths.0.min(run.len()), lengths.1.max(run.len()));
            let key = fold_at(run, 0, run.len());
            let mut slot = slot_of(key, run.len(), size);
            while keys[slot] != 0 {
                slot = (slot + 1) & (size - 1);
            }
            keys[slot] = key;
            metas[slot] = Meta {
                tail: run.get(8..).map_or(0, |rest| fold_at(rest, 0, rest.len())),
                // A few thousand entries: an index fits in 32 bits; lengths were bounded above.
                at: at as u32,
                len: run.len() as u16,
                look: known.look(),
            };
        }
        Runs {
            entries,
            keys,
            metas,
            lengths,
            starts,
        }
    }

    /// What the table knows of the run that is `header[start..end]`, if anything. Inlined into
    /// both passes, and short: most runs are eight bytes or fewer, and their first eight bytes
    /// folded are the whole run, so that a slot's key says all but the length.
    #[inline(always)]
    fn find(&self, header: &[u8], start: usize, end: usize) -> Option<&Meta> {
        let len = end - start;
        if len.wrapping_sub(self.lengths.0) > self.lengths.1.wrapping_sub(self.lengths.0) {
            return None;
        }
        let key = fold_at(header, start, len);
        let mask = self.keys.len().wrapping_sub(1);
        let mut slot = slot_of(key, len, self.keys.len());
        loop {
            let k = *self.keys.get(slot)?;
            if k == key {
                let meta = self.metas.get(slot)?;
                if usize::from(meta.len) == len
                    && (len <= 8 || self.long_run_matches(meta, header, start, len))
                {
                    return Some(meta);
                }
            } else if k == 0 {
                return None;
            }
            slot = (slot + 1) & mask;
        }
    }

    /// Whether the entry of `meta`, whose first eight bytes and length are the run's, is the
    /// run of `len` bytes (more than eight) at `header[start..]`: out of the way of the short
    /// runs' path.
    #[inline(never)]
    fn long_run_matches(&self, meta: &Meta, header: &[u8], start: usize, len: usize) -> bool {
        if fold_at(header, start + 8, len - 8) != meta.tail {
            return false;
        }
        len <= 16
            || self
                .entries
                .get(meta.at as usize)
                .is_some_and(|(entry, _)| {
                    entry.get(16..).unwrap_or_default().eq_ignore_ascii_case(
                        header.get(start + 16..start + len).unwrap_or_default(),
                    )
                })
    }

    /// Whether nothing in `header` could name a crawler: every known token in it never counts,
    /// and it holds no crawler word and no mark. Such a header is a person's without being
    /// read ([`super::Classifier::classify`]).
    pub fn plain(&self, header: &[u8]) -> bool {
        self.plain_until(header).is_none()
    }

    /// `None` when `header` is plain ([`Runs::plain`]); else where a scan for its reading must
    /// start ([`Runs::scan_from`]). Most people's headers are plain, and their runs are
    /// browsers' and platforms' words, which the index answers from a slot alone; so this pass
    /// records nothing, and stops at the first run or mark that could name a crawler, or at a
    /// token that never counts but that the reading needs (a person's app, whose URLs are its
    /// own; rare in people's headers, which are then read to the same answer). What it passed
    /// over holds nothing a scan records, so it is not scanned again.
    pub fn plain_until(&self, header: &[u8]) -> Option<usize> {
        let n = header.len();
        let mut i = 0;
        loop {
            // Spaces, digits and punctuation, a third of a header, in a loop of their own.
            while i < n && CLASS[usize::from(header[i])] == OTHER {
                i += 1;
            }
            if i >= n {
                return None;
            }
            if CLASS[usize::from(header[i])] == MARK {
                if byte_mark(header, i) {
                    return Some(i);
                }
                i += 1;
                continue;
            }
            let start = i;
            i += 1;
            while i < n && CLASS[usize::from(header[i])] == TOKEN {
                i += 1;
            }
            let plain = match self.find(header, start, i) {
                Some(&Meta { look, .. }) => {
                    look == Look::default()
                        || (look == Look(Look::KHTML) && super::plain_engine_comment(header, start))
                }
                None => self.unknown_run_is_plain(header, start, i),
            };
            if !plain {
                return Some(start);
            }
        }
    }

    /// Whether the run `header[start..end]`, which ends with a hyphen, leaves a header plain
    /// when that hyphen starts a version ([`before_version_hyphen`]): the name before it holds
    /// the run's words, so only its token can make the header other than plain. Out of the
    /// plain pass's loop: few runs end with a hyphen.
    #[cold]
    #[inline(never)]
    fn name_before_hyphen_is_plain(&self, header: &[u8], start: usize, end: usize) -> bool {
        before_version_hyphen(header, start, end).is_none_or(|name_end| {
            self.find(header, start, name_end)
                .is_none_or(|meta| meta.look.0 & Look::RECORD == 0)
        })
    }

    /// Whether the run `header[start..end]`, which the table does not know, leaves a header
    /// plain: it holds no crawler word, it does not start `khtml` (an engine comment with a
    /// name in it), and it is no known name before a version's hyphen. (A run the table knows
    /// never ends with a hyphen unless it is a site's token, which is not plain anyway.)
    fn unknown_run_is_plain(&self, header: &[u8], start: usize, end: usize) -> bool {
        let run = &header[start..end];
        let mut word = false;
        words_in(&self.starts, run, |_, _| word = true);
        !word
            && !run
                .get(..5)
                .is_some_and(|head| head.eq_ignore_ascii_case(b"khtml"))
            && (run.last() != Some(&b'-') || self.name_before_hyphen_is_plain(header, start, end))
    }

    /// One pass over `header` from `from` (0, or where [`Runs::plain_until`] stopped): adds its
    /// whole-run tokens and its crawler words to `scan`.
    pub fn scan_from(&self, header: &[u8], from: usize, scan: &mut Scan) {
        let n = header.len();
        let mut i = from;
        while i < n {
            if CLASS[usize::from(header[i])] != TOKEN {
                i += 1;
                continue;
            }
            let start = i;
            i += 1;
            while i < n && CLASS[usize::from(header[i])] == TOKEN {
                i += 1;
            }
            match self.find(header, start, i) {
                Some(&Meta { look, at, .. }) => {
                    if look.0 & Look::RECORD != 0 {
                        if let Some((_, known)) = self.entries.get(at as usize) {
                            for &(offset, len) in &known.words {
                                let from = start + usize::from(offset);
                                scan.words.push((from, from + usize::from(len)));
                            }
                            if let Some((index, _)) = known.token {
                                scan.tokens.push((index, start, i));
                            }
                        }
                    }
                }
                None => words_in(&self.starts, &header[start..i], |s, e| {
                    scan.words.push((start + s, start + e))
                }),
            }
            if let Some(end) = before_version_hyphen(header, start, i) {
                let token = self
                    .find(header, start, end)
                    .and_then(|meta| self.entries.get(meta.at as usize))
                    .and_then(|(_, known)| known.token);
                if let Some((index, _)) = token {
                    scan.tokens.push((index, start, end));
                }
            }
        }
    }
}

/// Where the run `header[start..end]` ends without its last byte, when that byte is a hyphen
/// before a digit: the hyphen separates a name from its version (`Nutch-1.7`,
/// `Mnogosearch-3.1.21`), as `/` does, though RFC 9309 counts it in the run.
#[inline(always)]
pub(super) fn before_version_hyphen(header: &[u8], start: usize, end: usize) -> Option<usize> {
    (end > start + 1
        && header.get(end - 1) == Some(&b'-')
        && header.get(end).is_some_and(u8::is_ascii_digit))
    .then(|| end - 1)
}

/// `[A-Za-z_-]`.
const TOKEN: u8 = 1;
/// A byte a mark may start with ([`byte_mark`]).
const MARK: u8 = 2;
/// Any other byte.
const OTHER: u8 = 0;

/// What each byte is to the scan ([`TOKEN`], [`MARK`], [`OTHER`]): one load a byte instead of a
/// few comparisons.
static CLASS: [u8; 256] = {
    let mut table = [OTHER; 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        table[b] = if byte.is_ascii_alphabetic() || byte == b'-' || byte == b'_' {
            TOKEN
        } else if matches!(byte, b':' | b'@' | b'+' | b'.' | b'[') {
            MARK
        } else {
            OTHER
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
        assert!(!runs.plain(h));
        let mut scan = Scan::default();
        runs.scan_from(h, 0, &mut scan);
        let tokens: Vec<_> = scan.tokens.iter().map(|&(t, s, e)| (t, &h[s..e])).collect();
        assert_eq!(
            tokens,
            [(1, &b"Mozilla"[..]), (0, b"Googlebot"), (2, b"MJ")]
        );
        let words: Vec<_> = scan.words.iter().map(|&(s, e)| &h[s..e]).collect();
        assert_eq!(words, [&b"bot"[..], b"bot", b"bot"]);
        // Overlapping words are all found (`robot` and `bot`, `crawler` and `crawl`).
        let mut scan = Scan::default();
        runs.scan_from(b"webcrawler-robot", 0, &mut scan);
        let words: Vec<_> = scan
            .words
            .iter()
            .map(|&(s, e)| &b"webcrawler-robot"[s..e])
            .collect();
        assert_eq!(words, [&b"crawler"[..], b"crawl", b"robot", b"bot"]);
    }

    #[test]
    fn what_keeps_a_header_plain() {
        // A token that never counts (`mozilla` in `runs()`) is recorded for the reading, which
        // then reads the header: plain headers hold none.
        assert!(!runs().plain(b"Mozilla/5.0"));
        let runs = Runs::new([("googlebot", true), ("mj", true)]);
        let plain = |h: &str| runs.plain(h.as_bytes());
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

    proptest::proptest! {
        /// The plain pass stops where a scan must start: scanning from there finds what
        /// scanning the whole header finds, and a plain header has nothing to find.
        #[test]
        fn the_plain_pass_passes_over_nothing_a_scan_records(
            tokens in proptest::collection::vec(("[abotkhmlAB_-]{1,10}", proptest::bool::ANY), 1..6),
            pieces in proptest::collection::vec(proptest::sample::select(
                vec!["a", "b", "o", "t", "A", "_", "-", " ", "/", ";", "(", ")", "[", "1", "bot", "BoT",
                     "crawler", "robot", "khtml", "KHTML, like Gecko)", "KHTML; x)", "compatible",
                     "subscribers", "Mozilla", "Chrome", "iPhone", "http", "://", "@", ".", ".com",
                     "+x", "abcdefghijk", "abcdefghijklmnopqr", "abotabotabot"]
            ), 0..24),
        ) {
            let header = pieces.concat().into_bytes();
            let runs = Runs::new(tokens.iter().map(|(t, counts)| (t.as_str(), *counts)));
            let mut whole = Scan::default();
            runs.scan_from(&header, 0, &mut whole);
            match runs.plain_until(&header) {
                Some(from) => {
                    let mut rest = Scan::default();
                    runs.scan_from(&header, from, &mut rest);
                    proptest::prop_assert_eq!(&rest.tokens, &whole.tokens);
                    proptest::prop_assert_eq!(&rest.words, &whole.words);
                }
                None => {
                    proptest::prop_assert!(whole.words.is_empty());
                    proptest::prop_assert!(whole.tokens.is_empty());
                }
            }
        }
    }
}

//! Which segments of a path survive resolving: `.` and `..` segments removed (RFC 3986 §5.2.4)
//! and runs of separators merged.
//!
//! One pass over the segments with a stack of the kept ones, a `..` taking back the last: linear
//! in the path, whatever it holds. A path an attacker fills with `/a/..` costs a look at each
//! separator, and only what is kept is copied.

/// What separates segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Separators {
    /// `/` alone, as RFC 3986 reads a path.
    Slashes,
    /// `/`, and the encoded `%2F` and `%5C` (a normalised path writes a raw `\` as `%5C`), as an
    /// origin that decodes separators before it resolves reads one.
    SlashesAndEncoded,
}

impl Separators {
    /// The length of the separator `rest` starts with, if it starts with one.
    pub(super) fn at_start(self, rest: &[u8]) -> Option<usize> {
        match rest {
            [b'/', ..] => Some(1),
            [b'%', b'2', b'F', ..] | [b'%', b'5', b'C', ..]
                if self == Separators::SlashesAndEncoded =>
            {
                Some(3)
            }
            _ => None,
        }
    }

    /// Where the first separator of `path` from `from` on starts, and its length. An empty
    /// segment is answered without a search: `/` repeated would pay a search's set-up per octet.
    pub(super) fn next(self, path: &[u8], from: usize) -> Option<(usize, usize)> {
        let rest = path.get(from..)?;
        let found = match (self.at_start(rest), self) {
            (Some(_), _) => Some(0),
            (None, Separators::Slashes) => memchr::memchr(b'/', rest),
            (None, Separators::SlashesAndEncoded) => memchr::memchr2_iter(b'/', b'%', rest)
                .find(|&at| self.at_start(&rest[at..]).is_some()),
        }?;
        Some((from + found, self.at_start(&rest[found..])?))
    }
}

/// The segments of a path that starts with a separator: the range of each one's octets, after
/// its separator.
fn segments(path: &[u8], separators: Separators) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut next = separators.next(path, 0);
    std::iter::from_fn(move || {
        let (at, len) = next?;
        let start = at + len;
        next = separators.next(path, start);
        Some((start, next.map_or(path.len(), |(end, _)| end)))
    })
}

/// Whether resolving drops `segment`: a `.` or `..`, or an empty one that is not the last.
fn drops(segment: &[u8], last: bool) -> bool {
    matches!(segment, b"." | b"..") || (segment.is_empty() && !last)
}

/// Whether resolving drops any segment of `path` (which starts with `/`), in one search: one
/// per segment ([`segments`]), set up again each time, cost real paths up to a third.
pub(super) fn drops_any(path: &[u8]) -> bool {
    let mut start = 1;
    for end in memchr::memchr_iter(b'/', path).skip(1) {
        if drops(path.get(start..end).unwrap_or_default(), false) {
            return true;
        }
        start = end + 1;
    }
    drops(path.get(start..).unwrap_or_default(), true)
}

/// What resolving keeps of a path that starts with a separator.
pub(super) struct Kept {
    /// The octets of each kept segment, in order (a last empty one included: the path names a
    /// directory).
    segments: Vec<(usize, usize)>,
    /// Whether the last segment is dropped (`.` or `..`): what is kept then names a directory,
    /// and is written with a `/` at its end.
    dropped_last: bool,
}

impl Kept {
    /// What resolving keeps of `path` (which starts with a separator), or `None` when it keeps
    /// every segment.
    pub(super) fn of(path: &[u8], separators: Separators) -> Option<Kept> {
        let mut kept = Kept {
            segments: Vec::new(),
            dropped_last: false,
        };
        let mut dropped_any = false;
        let mut all = segments(path, separators).peekable();
        while let Some((start, end)) = all.next() {
            let segment = &path[start..end];
            if segment == b".." {
                kept.segments.pop();
            }
            kept.dropped_last = drops(segment, all.peek().is_none());
            dropped_any |= kept.dropped_last;
            if !kept.dropped_last {
                kept.segments.push((start, end));
            }
        }
        dropped_any.then_some(kept)
    }

    /// Appends the kept segments to `out`, each after a `/`, and a `/` at the end when the last
    /// was dropped or none is kept.
    pub(super) fn write(&self, path: &[u8], out: &mut Vec<u8>) {
        for &(start, end) in &self.segments {
            out.push(b'/');
            out.extend_from_slice(path.get(start..end).unwrap_or_default());
        }
        if self.segments.is_empty() || self.dropped_last {
            out.push(b'/');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `Kept` keeps of `path`, with its separators (of either spelling) written `/`.
    fn resolved_with(path: &str, separators: Separators) -> (bool, String) {
        let Some(kept) = Kept::of(path.as_bytes(), separators) else {
            return (false, path.replace("%2F", "/").replace("%5C", "/"));
        };
        let plain = path.replace("%2F", "/").replace("%5C", "/");
        assert!(drops_any(plain.as_bytes()), "{path}");
        let mut out = Vec::new();
        kept.write(path.as_bytes(), &mut out);
        (true, String::from_utf8(out).unwrap())
    }

    fn resolved(path: &str) -> (bool, String) {
        resolved_with(path, Separators::Slashes)
    }

    #[test]
    fn segments_taken_back_by_later_dot_dots_are_dropped() {
        assert_eq!(resolved("/a/b/../../c"), (true, "/c".into()));
        assert_eq!(resolved("/a/b/c/../d/.."), (true, "/a/b/".into()));
        assert_eq!(resolved("/../a"), (true, "/a".into()));
        assert_eq!(resolved("/a/..".repeat(500).as_str()), (true, "/".into()));
    }

    /// Segments taken back by `..`s far after them, blocks away, in runs of every length.
    #[test]
    fn nested_segments_are_taken_back_across_blocks() {
        for (segments, ups) in [
            (1, 1),
            (40, 39),
            (100, 30),
            (100, 100),
            (100, 150),
            (700, 333),
        ] {
            let path = format!("{}{}", "/ab".repeat(segments), "/..".repeat(ups));
            let left = "/ab".repeat(segments.saturating_sub(ups));
            let expected = if left.is_empty() {
                "/".to_owned()
            } else {
                left + "/"
            };
            assert_eq!(resolved(&path), (true, expected), "{segments} {ups}");
        }
        let path = format!(
            "/x{}/y{}",
            "/ab/..".repeat(50),
            "/cd".repeat(30) + &"/..".repeat(31)
        );
        assert_eq!(resolved(&path), (true, "/x/".into()));
    }

    #[test]
    fn empty_and_dot_segments_are_dropped_but_a_last_empty_one_stays() {
        assert_eq!(resolved("/a//b/./c/"), (true, "/a/b/c/".into()));
        assert_eq!(resolved("/a/b/"), (false, "/a/b/".into()));
        assert_eq!(resolved("/a/."), (true, "/a/".into()));
        assert_eq!(resolved("/"), (false, "/".into()));
    }

    #[test]
    fn encoded_separators_separate() {
        let path = "/a%2Fb%5C..%2Fc%25%2F.";
        let separators = Separators::SlashesAndEncoded;
        assert_eq!(resolved_with(path, separators), (true, "/a/c%25/".into()));
        assert!(separators.at_start(b"%2Fa%2F").is_some());
        assert!(separators.at_start(b"a%2F").is_none());
        assert!(Separators::Slashes.at_start(b"%2Fa").is_none());
    }
}

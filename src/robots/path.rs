//! The octets that are compared: a request's path and query, normalised as RFC 9309 §2.2.2 asks.
//!
//! Both sides of a comparison go through [`normalize`] (paths) or [`normalize_pattern`]
//! (patterns), so that equal paths are equal byte strings and every byte is ASCII:
//!
//! - escapes of unreserved characters are decoded (`/%62%61%7A` is `/baz`), and so are escapes
//!   of the reserved characters that structure nothing (`:@!'(),;[]`, and in the query `/` and
//!   `?`): RFC 9309 says raw reserved characters are percent-encoded before comparison and
//!   encoded ones are not decoded, so the two spellings compare equal, as the RFC's own table
//!   shows (`?baz=https://foo.bar` is matched as `?baz=https%3A%2F%2Ffoo.bar`); we write both
//!   raw;
//! - escapes of the characters that do structure a path or a query stay encoded, with
//!   upper-case hex digits: `%2F` and `%3F` in the path, `%23`, `%25`, `%26`, `%3D`, `%2B`;
//!   decoding them would change where a segment, the path or a parameter ends (an origin that
//!   decodes `%2F` anyway is covered by [`forms`]);
//! - `*` and `$` are special in patterns, so in a path both are always written `%2A` and `%24`,
//!   and in a pattern `%2A` and `%24` stand for the literal octets (RFC 9309 §2.2.3): the pattern
//!   `/a-%2A.html` matches the path `/a-*.html`;
//! - octets that may not appear raw in a URI (outside ASCII, controls, space, `"<>\^`{|}`) are
//!   percent-encoded; an invalid escape (`%zz`, a trailing `%`) is kept as it is.
//!
//! [`forms`] gives the other readings an origin server may make of a request path: with
//! `.`/`..` segments and doubled slashes resolved, and with encoded separators decoded.

use super::segments::{self, Kept, Separators};
use super::MAX_JUDGED_PATH;
use std::borrow::Cow;

/// Reduces a URL, or a path, to what robots.txt rules are matched against: the path and the query,
/// without the fragment. A full URL (`https://host/x?y`) loses its scheme and authority; an empty
/// path becomes `/`. A path that starts with `//` is a path, as an origin server would read the
/// request target `//x`: reading `x` as a host would let `GET //private/x` past `Disallow: /private/`.
pub fn path_and_query(url: &str) -> Cow<'_, str> {
    let without_fragment = match url.find('#') {
        Some(end) => &url[..end],
        None => url,
    };
    let after_authority = strip_scheme_and_authority(without_fragment);
    if after_authority.starts_with('/') {
        Cow::Borrowed(after_authority)
    } else {
        // "" or "?q=1" (from "https://host?q=1") or a relative "page": paths start at the root.
        Cow::Owned(format!("/{after_authority}"))
    }
}

/// Returns what follows `scheme://authority`, or the input when it has none.
fn strip_scheme_and_authority(url: &str) -> &str {
    // A request target starts with `/` (no scheme can): the common case skips the search.
    if url.starts_with('/') {
        return url;
    }
    let rest = match url.find("://") {
        Some(colon) if is_scheme(&url[..colon]) => &url[colon + 3..],
        _ => return url,
    };
    match rest.find(['/', '?']) {
        Some(start) => &rest[start..],
        None => "",
    }
}

/// RFC 3986 §3.1: `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
fn is_scheme(candidate: &str) -> bool {
    let mut bytes = candidate.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

/// RFC 3986 §2.3 unreserved characters: escapes of these are decoded before comparison.
const fn is_unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~')
}

/// Reserved characters whose escapes are decoded too: they structure nothing (unlike `/`, `?`,
/// `#`, `%`, and a query's `&`, `=`, `+`) and mean nothing in a pattern (unlike `*` and `$`). In
/// the query, `/` and `?` are data too.
const fn is_plain_reserved(byte: u8, in_query: bool) -> bool {
    matches!(
        byte,
        b':' | b'@' | b'!' | b'\'' | b'(' | b')' | b',' | b';' | b'[' | b']'
    ) || (in_query && matches!(byte, b'/' | b'?'))
}

const fn hex_value(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

const UPPER_HEX: &[u8; 16] = b"0123456789ABCDEF";

/// What is being normalised: a request's path, or a rule's pattern (where raw `*` and a final
/// raw `$` are operators and stay as they are).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Path,
    Pattern,
}

/// Per octet: whether it needs more than copying: `%`; an octet that never appears raw in a URI
/// (outside ASCII, controls, space, `"<>\\^`{|}`), encoded so that a rule written with a raw
/// `é` matches the request that carries `%C3%A9`; `$`; and in a path `*`.
const fn special_octets(side: Side) -> [bool; 256] {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        table[byte] = b == b'%'
            || !b.is_ascii()
            || b.is_ascii_control()
            || matches!(
                b,
                b' ' | b'"' | b'<' | b'>' | b'\\' | b'^' | b'`' | b'{' | b'|' | b'}'
            )
            || b == b'$'
            || b == b'?'
            || (b == b'*' && matches!(side, Side::Path));
        byte += 1;
    }
    table
}

const PATH_SPECIAL: [bool; 256] = special_octets(Side::Path);
const PATTERN_SPECIAL: [bool; 256] = special_octets(Side::Pattern);

/// [`normalize`] or [`normalize_pattern`]: nothing is written until an octet changes, so a
/// path already normal is borrowed; from there on each octet is written as what it becomes
/// ([`translation`]), runs of plain octets copied whole.
fn normalize_side(bytes: &[u8], side: Side) -> Cow<'_, [u8]> {
    let (special, cap) = match side {
        Side::Path => (&PATH_SPECIAL, MAX_JUDGED_PATH + 1),
        // A pattern is bounded by the file's size limit, and is written whole.
        Side::Pattern => (&PATTERN_SPECIAL, usize::MAX),
    };
    if bytes.len() >= cap {
        // Over the longest path judged as sent: the rest is not read.
        return Cow::Borrowed(&bytes[..cap]);
    }
    // An escape after the query's `?` is read as the query's.
    let query = memchr::memchr(b'?', bytes).unwrap_or(bytes.len());
    // A pattern's final `$` is its anchor: written as it is, after the rest.
    let anchored = side == Side::Pattern && bytes.last() == Some(&b'$');
    let end = bytes.len() - usize::from(anchored);
    let mut out: Option<Vec<u8>> = None;
    let mut at = 0;
    while at < end {
        let plain = bytes[at..end]
            .iter()
            .position(|&octet| special[usize::from(octet)])
            .unwrap_or(end - at);
        if let Some(out) = out.as_mut() {
            out.extend_from_slice(&bytes[at..at + plain]);
        }
        at += plain;
        if at >= end {
            break;
        }
        let (octets, written, len) = translation(bytes, at, at > query);
        let written = &octets[..written];
        match out.as_mut() {
            // It comes out longer than any path judged: the rest is not read.
            Some(out) if out.len() >= cap => break,
            Some(out) => out.extend_from_slice(written),
            None if bytes.get(at..at + len) == Some(written) => {}
            None => {
                // No octet comes out longer than three.
                let mut changed =
                    Vec::with_capacity((at + 3 * (bytes.len() - at)).min(cap.saturating_add(3)));
                changed.extend_from_slice(&bytes[..at]);
                changed.extend_from_slice(written);
                out = Some(changed);
            }
        }
        at += len;
    }
    match out {
        None => Cow::Borrowed(bytes),
        Some(mut out) => {
            out.truncate(cap);
            if anchored {
                out.push(b'$');
            }
            Cow::Owned(out)
        }
    }
}

/// What the special octet at `at` is written as (up to three octets: the array, and how many
/// of it), and how many octets it stands for. An escape is decoded when it stands for an
/// unreserved or plain reserved octet, else written with upper-case hex digits; a `%` with no
/// two hex digits after it is kept as it is; `?` stays; every other special octet is escaped.
fn translation(bytes: &[u8], at: usize, in_query: bool) -> ([u8; 3], usize, usize) {
    let escape = |octet: u8| {
        let hex = |digit: u8| UPPER_HEX[usize::from(digit & 0x0F)];
        [b'%', hex(octet >> 4), hex(octet)]
    };
    match bytes.get(at..at + 3) {
        _ if bytes.get(at) == Some(&b'?') => ([b'?', 0, 0], 1, 1),
        Some(&[b'%', high, low]) => match hex_value(high).zip(hex_value(low)) {
            Some((high, low)) => {
                let value = high << 4 | low;
                if is_unreserved(value) || is_plain_reserved(value, in_query) {
                    ([value, 0, 0], 1, 3)
                } else {
                    (escape(value), 3, 3)
                }
            }
            None => ([b'%', 0, 0], 1, 1),
        },
        _ => match bytes.get(at) {
            Some(&b'%') | None => ([b'%', 0, 0], 1, 1),
            Some(&octet) => (escape(octet), 3, 1),
        },
    }
}

/// Normalises a request's path (and query) for comparison (see the module documentation).
///
/// A path and query longer than [`MAX_JUDGED_PATH`], as sent or once normalised, comes back cut
/// one octet past it, the rest unread: such a path is over the work budget wherever it is
/// judged, and a 64 KiB request target costs no more to read than an 8 KiB one.
pub fn normalize(bytes: &[u8]) -> Cow<'_, [u8]> {
    normalize_side(bytes, Side::Path)
}

/// Normalises a rule's pattern for comparison: as [`normalize`], except that a raw `*` stays the
/// wildcard and a final raw `$` stays the end anchor; every literal `*` or `$` comes out as
/// `%2A` or `%24`, as it does in a normalised path.
pub fn normalize_pattern(bytes: &[u8]) -> Cow<'_, [u8]> {
    normalize_side(bytes, Side::Pattern)
}

/// Whether a normalised path is `/robots.txt` itself, which RFC 9309 §2.2.2 always allows (the
/// query does not change that: `/robots.txt?x` is the same file).
pub fn is_robots_txt(normalised_path_and_query: &[u8]) -> bool {
    match normalised_path_and_query.strip_prefix(b"/robots.txt") {
        Some(rest) => rest.is_empty() || rest[0] == b'?',
        None => false,
    }
}

/// How an origin server may read a request path, besides as it was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Form {
    /// The path as sent (normalised).
    AsSent,
    /// With `.`/`..` segments removed and runs of `/` merged ([`canonical`]).
    Resolved,
    /// With `%2F` and `%5C` (an encoded `\`, and a raw one) in the path read as `/`, then
    /// resolved: what an origin that decodes separators before it resolves dot segments serves.
    Decoded,
}

/// The other forms of a normalised path that an origin may serve, in the order they are judged
/// (each at most once, and only when it differs from the forms before it).
pub fn forms(normal: &[u8]) -> impl Iterator<Item = (Form, Vec<u8>)> + '_ {
    let resolved = canonical(normal);
    let decoded = decoded_form(normal);
    let decoded = decoded.filter(|d| Some(d) != resolved.as_ref() && d.as_slice() != normal);
    resolved
        .map(|r| (Form::Resolved, r))
        .into_iter()
        .chain(decoded.map(|d| (Form::Decoded, d)))
}

/// Whether `path` has an encoded separator (a normalised path writes both with upper-case hex
/// digits).
fn has_encoded_separator(path: &[u8]) -> bool {
    memchr::memchr_iter(b'%', path).any(|at| {
        Separators::SlashesAndEncoded
            .at_start(&path[at..])
            .is_some()
    })
}

/// `path` with a `/` before it: a first segment without its separator resolves as if it had
/// one (`a/../b` is `/b`).
fn rooted(path: &[u8]) -> Cow<'_, [u8]> {
    match path.first() {
        Some(b'/') => Cow::Borrowed(path),
        _ => Cow::Owned([&b"/"[..], path].concat()),
    }
}

/// [`Form::Decoded`] of a normalised path: `%2F` and `%5C` in the path read as `/`, then
/// resolved as [`canonical`] resolves. `None` when the path has no encoded separator.
fn decoded_form(normal: &[u8]) -> Option<Vec<u8>> {
    let end = memchr::memchr(b'?', normal).unwrap_or(normal.len());
    let (path, query) = normal.split_at(end);
    if !has_encoded_separator(path) {
        return None;
    }
    let separators = Separators::SlashesAndEncoded;
    // Resolved as if rooted (`a%2F..%2Fb` is `/b`); unresolved, it stays as it is.
    let rooted = match separators.at_start(path) {
        Some(_) => Cow::Borrowed(path),
        None => rooted(path),
    };
    let mut out = Vec::with_capacity(normal.len() + 1);
    match Kept::of(&rooted, separators) {
        Some(kept) => kept.write(&rooted, &mut out),
        None => {
            // Every separator written `/`.
            let mut copied = 0;
            while let Some((at, len)) = separators.next(path, copied) {
                out.extend_from_slice(&path[copied..at]);
                out.push(b'/');
                copied = at + len;
            }
            out.extend_from_slice(&path[copied..]);
        }
    }
    out.extend_from_slice(query);
    Some(out)
}

/// The path as most origin servers resolve it: `.` and `..` segments removed (RFC 3986 §5.2.4)
/// and runs of `/` merged, the query kept as it is. Apply it to a normalised path (so that `%2e`
/// is already `.`). Returns `None` when the path is already canonical.
///
/// robots.txt rules are written for the paths an origin serves; a crawler that asks for
/// `/public/../private/x` or `//private/x` gets `/private/x` from most servers, so an enforcing
/// proxy checks that form too.
pub fn canonical(path_and_query: &[u8]) -> Option<Vec<u8>> {
    let end = memchr::memchr(b'?', path_and_query).unwrap_or(path_and_query.len());
    let (path, query) = path_and_query.split_at(end);
    let rooted = rooted(path);
    if !segments::drops_any(&rooted) {
        return None;
    }
    let kept = Kept::of(&rooted, Separators::Slashes)?;
    let mut resolved = Vec::with_capacity(path_and_query.len() + 1);
    kept.write(&rooted, &mut resolved);
    resolved.extend_from_slice(query);
    Some(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(s: &str) -> String {
        String::from_utf8(normalize(s.as_bytes()).into_owned()).unwrap()
    }

    /// A path longer than the longest judged, as sent or once normalised, comes back one octet
    /// past it (over the budget wherever it is judged); up to it, it is normalised whole.
    #[test]
    fn paths_past_the_longest_judged_are_cut_one_octet_past_it() {
        let cut = MAX_JUDGED_PATH + 1;
        let sent = format!("/{}", "a".repeat(1 << 16));
        assert_eq!(normalize(sent.as_bytes()).len(), cut);
        // Each space is written as three octets: a third of the limit grows past it.
        let grows = format!("/{}", " ".repeat(MAX_JUDGED_PATH / 3 + 1));
        let grown = normalize(grows.as_bytes());
        assert_eq!((grown.len(), &grown[..4]), (cut, &b"/%20"[..]));
        let fits = format!("/{}", " ".repeat(MAX_JUDGED_PATH / 3 - 1));
        assert_eq!(
            normalize(fits.as_bytes()).len(),
            3 * (MAX_JUDGED_PATH / 3 - 1) + 1
        );
        // Shorter once normalised is still too long as sent.
        let shrinks = format!("/{}", "%61".repeat(MAX_JUDGED_PATH / 3 + 1));
        assert_eq!(normalize(shrinks.as_bytes()).len(), cut);
        let anchored = format!("/{}$", " ".repeat(MAX_JUDGED_PATH));
        assert!(normalize_pattern(anchored.as_bytes()).ends_with(b"%20$"));
    }

    #[test]
    fn unreserved_escapes_are_decoded() {
        assert_eq!(norm("/foo/bar/%62%61%7A"), "/foo/bar/baz");
        assert_eq!(norm("/%7e%2D%2e%5F"), "/~-._");
    }

    #[test]
    fn structural_escapes_stay_encoded_with_upper_hex() {
        assert_eq!(norm("/a%2fb"), "/a%2Fb");
        assert_eq!(norm("/a%3Fb%23%25"), "/a%3Fb%23%25");
        assert_eq!(norm("/%c3%a9"), "/%C3%A9");
    }

    #[test]
    fn plain_reserved_escapes_are_decoded() {
        // RFC 9309 §2.2.2's table: `https://foo.bar` in a query is matched as
        // `https%3A%2F%2Ffoo.bar`; both spellings of `:` compare equal.
        assert_eq!(norm("/a?u=https%3A%2F%2Fx%3F"), "/a?u=https://x?");
        assert_eq!(norm("/%40%21%27%28%29%2C%3B%5B%5D"), "/@!'(),;[]");
        // Separators stay encoded: `/` and `?` in the path, `&`, `=`, `+` everywhere.
        assert_eq!(norm("/a%2Fb%3F?x=%26%3D%2B"), "/a%2Fb%3F?x=%26%3D%2B");
    }

    #[test]
    fn star_and_dollar_are_literal_in_paths_and_escaped_in_patterns() {
        assert_eq!(norm("/a-*.html$"), "/a-%2A.html%24");
        assert_eq!(norm("/a-%2a.html%24"), "/a-%2A.html%24");
        let pattern =
            |s: &str| String::from_utf8(normalize_pattern(s.as_bytes()).into_owned()).unwrap();
        assert_eq!(pattern("/a-%2A.html"), "/a-%2A.html");
        assert_eq!(pattern("/*.php$"), "/*.php$");
        assert_eq!(pattern("/a$b$"), "/a%24b$");
        assert_eq!(pattern("/%24$"), "/%24$");
        assert!(matches!(normalize_pattern(b"/*.php$"), Cow::Borrowed(_)));
    }

    fn all_forms(s: &str) -> Vec<(Form, String)> {
        forms(s.as_bytes())
            .map(|(form, bytes)| (form, String::from_utf8(bytes).unwrap()))
            .collect()
    }

    #[test]
    fn forms_resolve_and_decode_separators_in_the_path_only() {
        assert_eq!(all_forms("/a/b?c"), vec![]);
        assert_eq!(
            all_forms("/public%2F..%2Fprivate/x"),
            vec![(Form::Decoded, "/private/x".into())]
        );
        assert_eq!(
            all_forms("/a/../b%5C..%5Cc"),
            vec![
                (Form::Resolved, "/b%5C..%5Cc".into()),
                (Form::Decoded, "/c".into())
            ]
        );
        assert_eq!(all_forms("/a?next=%2Fb"), vec![]);
        assert_eq!(all_forms("/a%2Fb"), vec![(Form::Decoded, "/a/b".into())]);
        assert_eq!(all_forms("//x"), vec![(Form::Resolved, "/x".into())]);
    }

    #[test]
    fn non_ascii_and_unsafe_octets_are_encoded() {
        assert_eq!(norm("/café"), "/caf%C3%A9");
        assert_eq!(norm("/a b"), "/a%20b");
        assert_eq!(norm("/a|b"), "/a%7Cb");
        assert_eq!(norm("/a\\b"), "/a%5Cb");
        assert_eq!(
            String::from_utf8(normalize(b"/\xff").into_owned()).unwrap(),
            "/%FF"
        );
    }

    #[test]
    fn invalid_escapes_are_kept() {
        assert_eq!(norm("/%zz"), "/%zz");
        assert_eq!(norm("/%"), "/%");
        assert_eq!(norm("/%4"), "/%4");
    }

    fn canon(s: &str) -> Option<String> {
        canonical(s.as_bytes()).map(|c| String::from_utf8(c).unwrap())
    }

    #[test]
    fn dot_segments_and_double_slashes_are_resolved() {
        assert_eq!(canon("/a/b?c"), None);
        assert_eq!(canon("/public/../private/x"), Some("/private/x".into()));
        assert_eq!(canon("//private/x"), Some("/private/x".into()));
        assert_eq!(canon("/a/./b/"), Some("/a/b/".into()));
        assert_eq!(canon("/a/b/.."), Some("/a/".into()));
        assert_eq!(canon("/../../x"), Some("/x".into()));
        assert_eq!(canon("/a//b//"), Some("/a/b/".into()));
        assert_eq!(canon("/.."), Some("/".into()));
        assert_eq!(canon("/a/..?q=/../"), Some("/?q=/../".into()));
        assert_eq!(canon("/a..b/.c"), None);
    }

    #[test]
    fn normal_input_is_borrowed() {
        assert!(matches!(normalize(b"/a/b?c=d&e=:"), Cow::Borrowed(_)));
        assert!(matches!(normalize(b"/a*"), Cow::Owned(_)));
    }

    #[test]
    fn urls_reduce_to_path_and_query() {
        assert_eq!(path_and_query("https://example.com/x?y=1#f"), "/x?y=1");
        assert_eq!(path_and_query("https://example.com"), "/");
        assert_eq!(path_and_query("https://example.com?q"), "/?q");
        assert_eq!(path_and_query("//private/a"), "//private/a");
        assert_eq!(path_and_query("/a/b#frag"), "/a/b");
        assert_eq!(path_and_query(""), "/");
        assert_eq!(path_and_query("page.html"), "/page.html");
        // A colon later in the path is not a scheme.
        assert_eq!(path_and_query("/a://b"), "/a://b");
    }

    /// RFC 3986 §5.2.4 read the plain way: split at every `/`, keep a stack of segments.
    fn naive_canonical(path_and_query: &[u8]) -> Option<Vec<u8>> {
        let q = path_and_query.iter().position(|&b| b == b'?');
        let (path, query) = path_and_query.split_at(q.unwrap_or(path_and_query.len()));
        let parts: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
        let dot = parts.iter().any(|s| *s == b"." || *s == b"..");
        if !dot && !path.windows(2).any(|w| w == b"//") {
            return None;
        }
        let (mut stack, mut trailing) = (Vec::new(), false);
        for (i, segment) in parts.iter().enumerate() {
            let last = i + 1 == parts.len();
            match *segment {
                b"" => trailing = last && i > 0,
                b"." => trailing = last,
                b".." => {
                    stack.pop();
                    trailing = last;
                }
                other => {
                    stack.push(other);
                    trailing = false;
                }
            }
        }
        let mut out: Vec<u8> = stack.iter().flat_map(|s| [&b"/"[..], s].concat()).collect();
        if stack.is_empty() || trailing {
            out.push(b'/');
        }
        out.extend_from_slice(query);
        Some(out)
    }

    /// [`Form::Decoded`] the plain way: separators decoded, then the result resolved.
    fn naive_decoded_form(normal: &[u8]) -> Option<Vec<u8>> {
        naive_decode(normal).map(|decoded| naive_canonical(&decoded).unwrap_or(decoded))
    }

    /// Separators decoded the plain way: every window of three octets looked at.
    fn naive_decode(normal: &[u8]) -> Option<Vec<u8>> {
        let q = normal
            .iter()
            .position(|&b| b == b'?')
            .unwrap_or(normal.len());
        let (path, query) = normal.split_at(q);
        let sep = |w: &[u8]| w == b"%2F" || w == b"%5C";
        if !path.windows(3).any(sep) {
            return None;
        }
        let (mut out, mut i) = (Vec::new(), 0);
        while i < path.len() {
            if path.get(i..i + 3).is_some_and(sep) {
                out.push(b'/');
                i += 3;
            } else {
                out.push(path[i]);
                i += 1;
            }
        }
        out.extend_from_slice(query);
        Some(out)
    }

    /// Normalisation read the plain way: octet by octet, every escape rewritten.
    fn naive_normalize(bytes: &[u8], pattern: bool) -> Vec<u8> {
        let (mut out, mut in_query, mut i) = (Vec::new(), false, 0);
        let hex = |b: Option<&u8>| b.and_then(|&b| hex_value(b));
        while i < bytes.len() {
            let byte = bytes[i];
            let escape = |out: &mut Vec<u8>, b: u8| out.extend(format!("%{b:02X}").bytes());
            if byte == b'?' {
                in_query = true;
                out.push(byte);
            } else if byte == b'%' {
                if let (Some(h), Some(l)) = (hex(bytes.get(i + 1)), hex(bytes.get(i + 2))) {
                    let decoded = h * 16 + l;
                    if is_unreserved(decoded) || is_plain_reserved(decoded, in_query) {
                        out.push(decoded);
                    } else {
                        escape(&mut out, decoded);
                    }
                    i += 3;
                    continue;
                }
                out.push(b'%');
            } else if pattern && (byte == b'*' || (byte == b'$' && i + 1 == bytes.len())) {
                out.push(byte);
            } else if byte == b'*' || byte == b'$' || PATH_SPECIAL[usize::from(byte)] {
                escape(&mut out, byte);
            } else {
                out.push(byte);
            }
            i += 1;
        }
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 4000, ..Default::default() })]
        #[test]
        fn normalizing_agrees_with_the_plain_reading(
            path in proptest::collection::vec(proptest::sample::select(
                &[b'/', b'%', b'%', b'2', b'f', b'F', b'4', b'1', b'a', b'?', b'$', b'*', 0xC3,
                  b' ', b'3', b'A', b'\\', b'5', b'c', b'C', b'7', b'e', b'E', b'a', b'\\'][..]), 0..120)
        ) {
            proptest::prop_assert_eq!(normalize(&path).into_owned(), naive_normalize(&path, false));
            proptest::prop_assert_eq!(
                normalize_pattern(&path).into_owned(),
                naive_normalize(&path, true)
            );
        }

        #[test]
        fn resolving_and_decoding_agree_with_the_plain_reading(
            path in proptest::collection::vec(proptest::sample::select(
                &[b'/', b'.', b'a', b'%', b'2', b'F', b'5', b'C', b'?'][..]), 0..40)
        ) {
            proptest::prop_assert_eq!(canonical(&path), naive_canonical(&path));
            proptest::prop_assert_eq!(decoded_form(&path), naive_decoded_form(&path));
        }

        /// Paths longer than the 512 octets past which resolving once took another way, with a
        /// segment that changes something (or none) anywhere in them, the last one included.
        #[test]
        fn paths_past_the_short_ones_resolve_as_the_plain_reading_does(
            head in proptest::collection::vec(proptest::sample::select(
                &[b'/', b'.', b'a', b'%', b'2', b'F'][..]), 0..8),
            fill in proptest::sample::select(vec![&b"/a."[..], b"/.a", b"/ab", b"/a%2F"]),
            middle in proptest::collection::vec(proptest::sample::select(
                &[b'/', b'.', b'a'][..]), 0..6),
            tail in proptest::collection::vec(proptest::sample::select(
                &[b'/', b'.', b'a'][..]), 0..5),
            at in 0..512usize,
        ) {
            let mut path = head;
            while path.len() < 512 + 64 {
                path.extend_from_slice(fill);
                if path.len() == at {
                    path.extend_from_slice(&middle);
                }
            }
            path.extend_from_slice(&tail);
            proptest::prop_assert_eq!(canonical(&path), naive_canonical(&path));
            proptest::prop_assert_eq!(decoded_form(&path), naive_decoded_form(&path));
        }

        /// Paths of whole segments, `.`s and `..`s between separators of both spellings, long
        /// enough to cross several blocks, rooted or not, with a query or none.
        #[test]
        fn segment_paths_resolve_as_the_plain_reading_does(
            parts in proptest::collection::vec(proptest::sample::select(vec![
                &b"/"[..], b"/", b"%2F", b"%5C", b".", b"..", b"a", b"bc", b"%25", b"%2"]),
                0..200),
            query in proptest::sample::select(vec![&b""[..], b"?/../%2F"]),
        ) {
            let mut path = parts.concat();
            path.extend_from_slice(query);
            proptest::prop_assert_eq!(canonical(&path), naive_canonical(&path));
            proptest::prop_assert_eq!(decoded_form(&path), naive_decoded_form(&path));
        }

        /// Paths across several of [`resolve`]'s 64-octet blocks, with segments that change
        /// something on both sides of every block boundary.
        #[test]
        fn long_paths_resolve_as_the_plain_reading_does(
            path in proptest::collection::vec(proptest::sample::select(
                &[b'/', b'/', b'.', b'.', b'a', b'b', b'%', b'2', b'F', b'5', b'C'][..]), 0..400),
            rooted in proptest::bool::ANY,
        ) {
            let mut path = path;
            if rooted {
                path.insert(0, b'/');
            }
            proptest::prop_assert_eq!(canonical(&path), naive_canonical(&path));
            proptest::prop_assert_eq!(decoded_form(&path), naive_decoded_form(&path));
        }
    }
}

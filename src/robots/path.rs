//! The octets that are compared: a request's path and query, normalised as RFC 9309 §2.2.2 asks.
//!
//! Both sides of a comparison go through [`normalize`]: percent-encoded unreserved characters are
//! decoded (`/%62%61%7A` is `/baz`), other escapes stay encoded with upper-case hex digits, and
//! octets that may not appear raw in a URI (outside ASCII, controls, space, `"<>\^`{|}`) are
//! percent-encoded. After this, equal paths are equal byte strings, and every byte is ASCII.

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
fn is_unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~')
}

/// Octets that never appear raw in a URI: they are percent-encoded before comparison, so that a
/// rule written with a raw `é` or space matches the request that carries `%C3%A9` or `%20`.
fn must_encode(byte: u8) -> bool {
    !byte.is_ascii()
        || byte.is_ascii_control()
        || matches!(
            byte,
            b' ' | b'"' | b'<' | b'>' | b'\\' | b'^' | b'`' | b'{' | b'|' | b'}'
        )
}

fn hex_value(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

const UPPER_HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Whether `bytes` is already in normal form, so that the common case costs no allocation.
fn is_normal(bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| b != b'%' && !must_encode(b))
}

/// Normalises a path or a pattern for comparison (see the module documentation). An invalid
/// escape (`%zz`, a trailing `%`) is kept as it is: it can only match itself.
pub fn normalize(bytes: &[u8]) -> Cow<'_, [u8]> {
    if is_normal(bytes) {
        return Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len() + 8);
    let mut i = 0;
    while i < bytes.len() {
        let byte = bytes[i];
        if byte == b'%' {
            let escape = bytes
                .get(i + 1)
                .and_then(|&h| hex_value(h))
                .zip(bytes.get(i + 2).and_then(|&l| hex_value(l)));
            if let Some((high, low)) = escape {
                let decoded = high << 4 | low;
                if is_unreserved(decoded) {
                    out.push(decoded);
                } else {
                    out.extend_from_slice(&[
                        b'%',
                        UPPER_HEX[usize::from(high)],
                        UPPER_HEX[usize::from(low)],
                    ]);
                }
                i += 3;
                continue;
            }
            out.push(b'%');
        } else if must_encode(byte) {
            out.extend_from_slice(&[
                b'%',
                UPPER_HEX[usize::from(byte >> 4)],
                UPPER_HEX[usize::from(byte & 0x0F)],
            ]);
        } else {
            out.push(byte);
        }
        i += 1;
    }
    Cow::Owned(out)
}

/// Whether a normalised path is `/robots.txt` itself, which RFC 9309 §2.2.2 always allows (the
/// query does not change that: `/robots.txt?x` is the same file).
pub fn is_robots_txt(normalised_path_and_query: &[u8]) -> bool {
    let path = match normalised_path_and_query.iter().position(|&b| b == b'?') {
        Some(query) => &normalised_path_and_query[..query],
        None => normalised_path_and_query,
    };
    path == b"/robots.txt"
}

/// The path as most origin servers resolve it: `.` and `..` segments removed (RFC 3986 §5.2.4)
/// and runs of `/` merged, the query kept as it is. Apply it to a normalised path (so that `%2e`
/// is already `.`). Returns `None` when the path is already canonical.
///
/// robots.txt rules are written for the paths an origin serves; a crawler that asks for
/// `/public/../private/x` or `//private/x` gets `/private/x` from most servers, so an enforcing
/// proxy checks that form too.
pub fn canonical(path_and_query: &[u8]) -> Option<Vec<u8>> {
    let (path, query) = match path_and_query.iter().position(|&b| b == b'?') {
        Some(q) => path_and_query.split_at(q),
        None => (path_and_query, &b""[..]),
    };
    let has_dot_segment = path
        .split(|&b| b == b'/')
        .any(|segment| segment == b"." || segment == b"..");
    let has_double_slash = path.windows(2).any(|w| w == b"//");
    if !has_dot_segment && !has_double_slash {
        return None;
    }
    let mut segments: Vec<&[u8]> = Vec::new();
    let parts: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
    let last = parts.len().saturating_sub(1);
    let mut trailing_slash = false;
    for (index, segment) in parts.iter().enumerate() {
        match *segment {
            b"" => trailing_slash = index == last && index > 0,
            b"." => trailing_slash = index == last,
            b".." => {
                segments.pop();
                trailing_slash = index == last;
            }
            other => {
                segments.push(other);
                trailing_slash = false;
            }
        }
    }
    let mut out = Vec::with_capacity(path_and_query.len());
    for segment in &segments {
        out.push(b'/');
        out.extend_from_slice(segment);
    }
    if segments.is_empty() || trailing_slash {
        out.push(b'/');
    }
    out.extend_from_slice(query);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(s: &str) -> String {
        String::from_utf8(normalize(s.as_bytes()).into_owned()).unwrap()
    }

    #[test]
    fn unreserved_escapes_are_decoded() {
        assert_eq!(norm("/foo/bar/%62%61%7A"), "/foo/bar/baz");
        assert_eq!(norm("/%7e%2D%2e%5F"), "/~-._");
    }

    #[test]
    fn reserved_escapes_stay_encoded_with_upper_hex() {
        assert_eq!(norm("/a%2fb"), "/a%2Fb");
        assert_eq!(norm("/a%3Fb%3d"), "/a%3Fb%3D");
        assert_eq!(norm("/%c3%a9"), "/%C3%A9");
    }

    #[test]
    fn non_ascii_and_unsafe_octets_are_encoded() {
        assert_eq!(norm("/café"), "/caf%C3%A9");
        assert_eq!(norm("/a b"), "/a%20b");
        assert_eq!(norm("/a|b"), "/a%7Cb");
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
        assert!(matches!(normalize(b"/a/b?c=d*$"), Cow::Borrowed(_)));
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
}

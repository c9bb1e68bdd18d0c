//! What a signed request's headers may hold before any of them is parsed: a size for each of
//! `Signature-Input`, `Signature` and `Signature-Agent` (all their lines together) and a number
//! of labels (dictionary members), and afterwards a size for the nonce.
//!
//! The parsers read every label of a dictionary, and the request path parses `Signature-Input`
//! more than once: a 1 MB header of 10,000 labels cost 35 ms of CPU per request (issue 22).
//! A real signer sends one or two labels of a few hundred bytes. The size is checked first,
//! from the lengths the header map already knows; the labels are counted by one pass over at
//! most that many bytes, which only needs to know where strings and inner lists are, so that
//! a comma inside them is not taken for a separator.

use http::HeaderMap;

/// The limits, from `verification.signatures`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most bytes of each signature header, all its lines together.
    pub header_bytes: usize,
    /// The most labels (dictionary members) of each signature header.
    pub labels: usize,
    /// The most bytes of a `nonce`.
    pub nonce_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_bytes: 4096,
            labels: 8,
            nonce_bytes: 256,
        }
    }
}

/// The headers the limits apply to.
const HEADERS: [&str; 3] = ["signature-input", "signature", "signature-agent"];

/// Checks the signature headers against `limits`; `Err` says which one is over and how.
pub fn check(headers: &HeaderMap, limits: &Limits) -> Result<(), String> {
    for name in HEADERS {
        let values = headers.get_all(name);
        let bytes: usize = values.iter().map(|v| v.len()).sum();
        if bytes > limits.header_bytes {
            return Err(format!(
                "{name} is {bytes} bytes, more than the {} allowed (verification.signatures.max_header_bytes)",
                limits.header_bytes
            ));
        }
        let labels: usize = values.iter().map(|v| members(v.as_bytes())).sum();
        if labels > limits.labels {
            return Err(format!(
                "{name} has {labels} labels, more than the {} allowed (verification.signatures.max_labels)",
                limits.labels
            ));
        }
    }
    Ok(())
}

/// How many members a structured-field dictionary (RFC 9651) has: its commas outside strings
/// and inner lists, plus one when it is not empty. A malformed value is counted as well as it
/// can be; the parser refuses it later.
pub fn members(value: &[u8]) -> usize {
    let (mut count, mut in_string, mut escaped, mut depth) = (0usize, false, false, 0usize);
    let mut any = false;
    for &octet in value {
        if in_string {
            match (escaped, octet) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match octet {
            b'"' => in_string = true,
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => count += 1,
            b' ' | b'\t' => continue,
            _ => {}
        }
        any = true;
    }
    if any || in_string {
        count + 1
    } else {
        count
    }
}

/// Checks a nonce's size.
pub fn check_nonce(nonce: &str, limits: &Limits) -> Result<(), String> {
    if nonce.len() > limits.nonce_bytes {
        return Err(format!(
            "its nonce is {} bytes, more than the {} allowed (verification.signatures.max_nonce_bytes)",
            nonce.len(),
            limits.nonce_bytes
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn members_are_counted_outside_strings_and_inner_lists() {
        for (value, expected) in [
            ("", 0),
            ("  ", 0),
            ("sig1=:AAAA:", 1),
            (
                r#"sig1=("@authority" "signature-agent";key="a,b");tag="x, y""#,
                1,
            ),
            (r#"a=1, b=(1 2), c="\"q,\"""#, 3),
            (r#"a="https://x.example", b="https://y.example""#, 2),
            ("a, b, c", 3),
            ("a=\"unterminated, b", 1),
        ] {
            assert_eq!(members(value.as_bytes()), expected, "{value}");
        }
    }

    #[test]
    fn headers_over_a_limit_are_refused_before_parsing() {
        let limits = Limits::default();
        let mut headers = HeaderMap::new();
        headers.insert(
            "signature-input",
            HeaderValue::from_static(
                r#"sig1=("@authority");created=1;expires=2;keyid="k";tag="web-bot-auth""#,
            ),
        );
        headers.insert("signature", HeaderValue::from_static("sig1=:AAAA:"));
        assert_eq!(check(&headers, &limits), Ok(()));
        let many: Vec<String> = (0..9).map(|i| format!("l{i}=()")).collect();
        headers.insert(
            "signature-input",
            HeaderValue::from_str(&many.join(", ")).unwrap(),
        );
        let error = check(&headers, &limits).unwrap_err();
        assert!(
            error.contains("9 labels") && error.contains("max_labels"),
            "{error}"
        );
        // Lines add up: two lines of 4 labels and one of 1 are 9.
        headers.remove("signature-input");
        for line in [&many[..4], &many[4..8], &many[8..]] {
            headers.append(
                "signature-input",
                HeaderValue::from_str(&line.join(", ")).unwrap(),
            );
        }
        assert!(check(&headers, &limits).unwrap_err().contains("9 labels"));
        headers.remove("signature-input");
        headers.insert(
            "signature-agent",
            HeaderValue::from_str(&format!("sig1=\"https://{}.example\"", "a".repeat(5000)))
                .unwrap(),
        );
        let error = check(&headers, &limits).unwrap_err();
        assert!(
            error.contains("signature-agent is 5") && error.contains("max_header_bytes"),
            "{error}"
        );
        assert!(check_nonce(&"n".repeat(256), &limits).is_ok());
        assert!(check_nonce(&"n".repeat(257), &limits)
            .unwrap_err()
            .contains("257 bytes"));
    }
}

//! RFC 9309's product token: the one definition every part of crawlgate uses.
//!
//! §2.2.1: a crawler's product token "MUST contain only uppercase and lowercase letters
//! ("a-z" and "A-Z"), underscores ("_"), and hyphens ("-")". A robots.txt user-agent value, a
//! User-Agent header and a configured crawler name are all read through these functions.

/// Whether `byte` may appear in a product token: `[A-Za-z_-]`.
pub fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'-' || byte == b'_'
}

/// Whether `text` is a whole product token: non-empty, and every byte a token byte.
pub fn is_product_token(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(is_token_byte)
}

/// The product token at the start of `value`: its leading run of `[A-Za-z_-]` (possibly empty).
/// `Googlebot/2.1` is `Googlebot`.
pub fn leading_token(value: &str) -> &str {
    let end = value
        .bytes()
        .position(|b| !is_token_byte(b))
        .unwrap_or(value.len());
    &value[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_runs_of_letters_hyphens_and_underscores() {
        assert_eq!(leading_token("Googlebot/2.1"), "Googlebot");
        assert_eq!(leading_token("Googlebot-Image/1.0"), "Googlebot-Image");
        assert_eq!(leading_token("MJ12bot"), "MJ");
        assert_eq!(leading_token("123bot"), "");
        assert!(is_product_token("Google_Extended-x"));
        assert!(!is_product_token(""));
        assert!(!is_product_token("MJ12bot"));
    }
}

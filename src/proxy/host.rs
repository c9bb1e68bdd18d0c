//! Which host a request names: a Host header (or an authority) is `host[:port]` as RFC 9110 §7.2
//! and RFC 3986 §3.2 write it, or it is refused. A Host that is not one must never fall through to
//! a catch-all site: the origin behind it may read the value its own way (`a.test:abc` as
//! `a.test`) and serve a site whose robots.txt was never asked.

/// Why a Host value names no host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvalidHost {
    /// Not UTF-8, or a byte a host name cannot hold.
    Character,
    /// What follows the last `:` is not a port (digits).
    Port,
    /// A `[` without a valid IPv6 address and `]`.
    Literal,
}

impl InvalidHost {
    /// Why, for the 400 answer.
    pub fn message(self) -> &'static str {
        match self {
            InvalidHost::Character => "crawlgate: the Host header holds a byte no host name has\n",
            InvalidHost::Port => "crawlgate: the Host header's port is not a number\n",
            InvalidHost::Literal => "crawlgate: the Host header's [IPv6 address] is not one\n",
        }
    }
}

/// RFC 3986's reg-name bytes (unreserved, pct-encoded's `%` and hex, sub-delims), as a table:
/// every request's Host is checked.
const REG_NAME: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        table[byte] = b.is_ascii_alphanumeric();
        byte += 1;
    }
    let others = b"-._~%!$&'()*+,;=";
    let mut i = 0;
    while i < others.len() {
        table[others[i] as usize] = true;
        i += 1;
    }
    table
};

fn reg_name_byte(byte: u8) -> bool {
    REG_NAME[usize::from(byte)]
}

/// A port as a Host header carries it: up to five digits (RFC 3986 allows none).
fn is_port(text: &str) -> bool {
    text.len() <= 5 && text.bytes().all(|b| b.is_ascii_digit())
}

/// The host of a Host value, without its port: `A.Test:8080` is `A.Test`, `[2001:db8::1]:443` is
/// `[2001:db8::1]`. An empty value names no host (RFC 9110 §7.2 lets a client send one).
pub fn host_name(value: &[u8]) -> Result<&str, InvalidHost> {
    if value.first() != Some(&b'[') {
        // A name or an IPv4 address: ASCII, so UTF-8, checked a byte at a time.
        let (name, port) = match value.iter().position(|&b| b == b':') {
            Some(colon) => (&value[..colon], Some(&value[colon + 1..])),
            None => (value, None),
        };
        if !name.iter().all(|&b| reg_name_byte(b)) {
            return Err(InvalidHost::Character);
        }
        if port.is_some_and(|p| p.len() > 5 || !p.iter().all(u8::is_ascii_digit)) {
            return Err(InvalidHost::Port);
        }
        return std::str::from_utf8(name).map_err(|_| InvalidHost::Character);
    }
    // An IP literal: `[` IPv6 `]`, then perhaps a port.
    let text = std::str::from_utf8(value).map_err(|_| InvalidHost::Character)?;
    let rest = &text[1..];
    let (inside, after) = rest.split_once(']').ok_or(InvalidHost::Literal)?;
    inside
        .parse::<std::net::Ipv6Addr>()
        .map_err(|_| InvalidHost::Literal)?;
    match after {
        "" => Ok(text),
        _ => match after.strip_prefix(':') {
            Some(port) if is_port(port) => Ok(&text[..inside.len() + 2]),
            _ => Err(InvalidHost::Port),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_is_a_name_or_address_with_an_optional_port() {
        for (value, name) in [
            ("a.test", "a.test"),
            ("A.Test:8080", "A.Test"),
            ("a.test:", "a.test"),
            ("a.test.", "a.test."),
            ("192.0.2.1:80", "192.0.2.1"),
            ("[2001:db8::1]", "[2001:db8::1]"),
            ("[2001:db8::1]:443", "[2001:db8::1]"),
            ("xn--bcher-kva.example", "xn--bcher-kva.example"),
            ("my_host", "my_host"),
            ("", ""),
        ] {
            assert_eq!(host_name(value.as_bytes()), Ok(name), "{value}");
        }
    }

    #[test]
    fn anything_else_is_refused() {
        for (value, why) in [
            ("a.test:abc", InvalidHost::Port),
            ("a.test:80:80", InvalidHost::Port),
            ("a.test:+80", InvalidHost::Port),
            ("a.test:-1", InvalidHost::Port),
            ("a.test:123456", InvalidHost::Port),
            ("a.test/x", InvalidHost::Character),
            ("a test", InvalidHost::Character),
            ("a.test@b.test", InvalidHost::Character),
            ("a\\b", InvalidHost::Character),
            ("[2001:db8::1", InvalidHost::Literal),
            ("[not-v6]", InvalidHost::Literal),
            ("[::1]x", InvalidHost::Port),
            ("[::1]:x", InvalidHost::Port),
        ] {
            assert_eq!(host_name(value.as_bytes()), Err(why), "{value}");
        }
        assert_eq!(host_name(b"\xff"), Err(InvalidHost::Character));
    }
}

//! One access-log line → the few fields a replay needs: the request target, the User-Agent and
//! the time, borrowed from the line whenever the line does not escape them.
//!
//! Two families are read. nginx/Apache *combined* (`%h %l %u %t "%r" %>s %b "%{Referer}i"
//! "%{User-agent}i"`) and its relatives: the common log format (no referer, no User-Agent), and
//! any prefix before the client address (`$host`, Apache's `vhost_combined`), because only what
//! follows the `[time]` is read. And *JSON lines*, one object per line, with configurable field
//! names.

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

/// Why a line is not a log line of its format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    /// No `[time]` field (combined).
    #[error("no [time] field")]
    NoTime,
    /// A time that is not a date (either format).
    #[error("unreadable time `{0}`")]
    BadTime(String),
    /// No quoted request after the time (combined).
    #[error("no quoted request after the time")]
    NoRequest,
    /// A quoted field with no closing quote (combined).
    #[error("unclosed quote")]
    Unclosed,
    /// No numeric status after the request (combined).
    #[error("no status code after the request")]
    NoStatus,
    /// Not one JSON object (JSON lines).
    #[error("not a JSON object: {0}")]
    Json(String),
    /// A JSON object with neither the path nor the request field.
    #[error("no `{0}` or `{1}` field")]
    NoPath(String, String),
    /// Longer than the longest line read.
    #[error("longer than {0} bytes")]
    TooLong(usize),
}

/// A timestamp as found in a line, not parsed yet (a replay caches the last one parsed).
#[derive(Debug, Clone, PartialEq)]
pub enum Stamp<'a> {
    /// The line has no time.
    Missing,
    /// A textual timestamp (common log format, RFC 3339 or epoch digits).
    Text(Cow<'a, [u8]>),
    /// A JSON number: seconds (or milliseconds) since the epoch.
    Number(f64),
}

/// What a replay needs from one line.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry<'a> {
    /// The request target (path and query, or an absolute URL); `None` when the logged request
    /// has none that can be replayed (`"-"`, a TLS handshake sent to a plain-text port, ...).
    pub target: Option<Cow<'a, [u8]>>,
    /// A query logged apart from the path (JSON `query` field), without its `?`.
    pub query: Option<Cow<'a, [u8]>>,
    /// The User-Agent header; `None` when the line does not carry one.
    pub user_agent: Option<Cow<'a, [u8]>>,
    /// The Referer header; `None` when the line does not carry one (or logs `-`).
    pub referer: Option<Cow<'a, [u8]>>,
    /// When.
    pub time: Stamp<'a>,
}

/// The target of a request line `METHOD TARGET [PROTOCOL]`, if it has one that a crawler could
/// have asked for: an origin-form path or an absolute URL.
pub fn request_target(request: &[u8]) -> Option<&[u8]> {
    let space = memchr::memchr(b' ', request)?;
    let method = &request[..space];
    if method.is_empty() || !method.iter().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    let rest = &request[space + 1..];
    let target = match memchr::memchr(b' ', rest) {
        Some(end) => &rest[..end],
        None => rest,
    };
    let absolute = target.len() > 8
        && (target[..7].eq_ignore_ascii_case(b"http://")
            || target[..8].eq_ignore_ascii_case(b"https://"));
    (target.first() == Some(&b'/') || absolute).then_some(target)
}

/// The end of a quoted field whose opening quote was just before `from`: the index of the
/// closing `"`, skipping quotes escaped with a backslash (Apache writes `\"`; nginx writes
/// `\x22` and needs no care).
fn closing_quote(line: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    loop {
        let quote = at + memchr::memchr(b'"', line.get(at..)?)?;
        let backslashes = line[from..quote]
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count();
        if backslashes % 2 == 0 {
            return Some(quote);
        }
        at = quote + 1;
    }
}

/// Reads a combined (or common) log line. Anything before the `[time]` is ignored, so that
/// virtual-host prefixes need no option; anything after the User-Agent is ignored too.
pub fn parse_combined(line: &[u8]) -> Result<Entry<'_>, Malformed> {
    // The time is the first `[` followed by a digit: an IPv6 client is written without brackets.
    let mut search = 0;
    let open = loop {
        let at = search + memchr::memchr(b'[', &line[search..]).ok_or(Malformed::NoTime)?;
        if line.get(at + 1).is_some_and(u8::is_ascii_digit) {
            break at;
        }
        search = at + 1;
    };
    let close = open + memchr::memchr(b']', &line[open..]).ok_or(Malformed::NoTime)?;
    let time = &line[open + 1..close];
    let rest = line.get(close + 1..).unwrap_or_default();
    let request_start = close + 3;
    if !rest.starts_with(b" \"") {
        return Err(Malformed::NoRequest);
    }
    let request_end = closing_quote(line, request_start).ok_or(Malformed::Unclosed)?;
    let request = &line[request_start..request_end];
    // ` 200 512` (`-` for no body); the status decides that this is a log line at all.
    let after = &line[request_end + 1..];
    let after = after.strip_prefix(b" ").ok_or(Malformed::NoStatus)?;
    let status_end = after.iter().position(|&b| b == b' ').unwrap_or(after.len());
    let status = &after[..status_end];
    if status.len() != 3 || !status.iter().all(u8::is_ascii_digit) {
        return Err(Malformed::NoStatus);
    }
    let (referer, user_agent) = combined_tail(line, request_end + 1 + 1 + status_end)?;
    Ok(Entry {
        target: request_target(request).map(Cow::Borrowed),
        query: None,
        user_agent,
        referer,
        time: Stamp::Text(Cow::Borrowed(time)),
    })
}

/// A quoted field as it is, or `None` when the log wrote `-` (or nothing) for it.
type Quoted<'a> = Option<Cow<'a, [u8]>>;

/// After the status: ` bytes "referer" "user-agent"` in combined, ` bytes` in common: the
/// referer and the User-Agent.
fn combined_tail(line: &[u8], from: usize) -> Result<(Quoted<'_>, Quoted<'_>), Malformed> {
    let rest = line.get(from..).unwrap_or_default();
    let Some(referer_quote) = memchr::memchr(b'"', rest) else {
        return Ok((None, None));
    };
    let referer_start = from + referer_quote + 1;
    let referer_end = closing_quote(line, referer_start).ok_or(Malformed::Unclosed)?;
    let referer = &line[referer_start..referer_end];
    let referer = (!referer.is_empty() && referer != b"-").then_some(Cow::Borrowed(referer));
    let tail = &line[referer_end + 1..];
    if !tail.starts_with(b" \"") {
        return Ok((referer, None));
    }
    let ua_start = referer_end + 3;
    let ua_end = closing_quote(line, ua_start).ok_or(Malformed::Unclosed)?;
    Ok((referer, Some(Cow::Borrowed(&line[ua_start..ua_end]))))
}

/// What a field of a JSON line stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The path, with or without its query (`/a/b?c=1`), or an absolute URL.
    Path,
    /// The query, when the path is logged without it.
    Query,
    /// The whole request line, `GET /a/b?c=1 HTTP/1.1`: used when there is no path field.
    Request,
    /// The User-Agent header.
    UserAgent,
    /// The time: RFC 3339, common log format, or a number of (milli)seconds since the epoch.
    Time,
    /// The Referer header: which page (or product) sent the visitor.
    Referer,
}

impl Role {
    /// Every role, in the order of [`JsonFields`].
    pub const ALL: [Role; 6] = [
        Role::Path,
        Role::Query,
        Role::Request,
        Role::UserAgent,
        Role::Time,
        Role::Referer,
    ];

    /// The role's name on the command line (`--field ua=http_user_agent`).
    pub fn name(self) -> &'static str {
        match self {
            Role::Path => "path",
            Role::Query => "query",
            Role::Request => "request",
            Role::UserAgent => "ua",
            Role::Time => "time",
            Role::Referer => "referer",
        }
    }

    /// The role of a command-line name.
    pub fn from_name(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|role| role.name() == name)
    }

    /// The field names tried when none is configured, most specific first. They cover nginx's
    /// variable names (`escape=json` log formats), crawlgate-like logs and common loggers.
    pub fn default_names(self) -> &'static [&'static str] {
        match self {
            Role::Path => &["path", "request_uri", "uri", "url"],
            Role::Query => &["query", "query_string", "args"],
            Role::Request => &["request"],
            Role::UserAgent => &[
                "user_agent",
                "http_user_agent",
                "userAgent",
                "useragent",
                "ua",
                "agent",
            ],
            Role::Time => &[
                "time",
                "timestamp",
                "ts",
                "@timestamp",
                "time_iso8601",
                "time_local",
                "date",
            ],
            Role::Referer => &["referer", "http_referer", "referrer"],
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The names of the JSON fields that hold each [`Role`].
#[derive(Debug, Clone)]
pub struct JsonFields {
    names: [Vec<String>; Role::ALL.len()],
    /// Every name → its role and rank: each key of each line is looked up here.
    lookup: foldhash::HashMap<Box<str>, (Role, usize)>,
}

impl Default for JsonFields {
    fn default() -> Self {
        let mut fields = JsonFields {
            names: Role::ALL.map(|role| {
                role.default_names()
                    .iter()
                    .map(|name| (*name).to_owned())
                    .collect()
            }),
            lookup: HashMap::default(),
        };
        fields.index();
        fields
    }
}

impl JsonFields {
    /// Reads the role of the field named `name` from now on (and only that field).
    pub fn set(&mut self, role: Role, name: &str) {
        self.names[role.index()] = vec![name.to_owned()];
        self.index();
    }

    /// Rebuilds the lookup; a name given to two roles holds the first of them.
    fn index(&mut self) {
        self.lookup.clear();
        for role in Role::ALL {
            for (rank, name) in self.names[role.index()].iter().enumerate() {
                self.lookup
                    .entry(name.as_str().into())
                    .or_insert((role, rank));
            }
        }
    }

    /// The names read for `role`, most preferred first.
    pub fn names(&self, role: Role) -> &[String] {
        &self.names[role.index()]
    }

    /// Which role a key holds, and how preferred that name is (0 is the most).
    fn role_of(&self, key: &str) -> Option<(Role, usize)> {
        self.lookup.get(key).copied()
    }
}

/// A JSON value as a role wants it: text (borrowed when unescaped), a number, or nothing usable.
#[derive(Debug)]
enum Value<'de> {
    Text(Cow<'de, [u8]>),
    Number(f64),
    Other,
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Value<'de>, E> {
        Ok(Value::Text(Cow::Borrowed(v.as_bytes())))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value<'de>, E> {
        Ok(Value::Text(Cow::Owned(v.as_bytes().to_vec())))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value<'de>, E> {
        Ok(Value::Number(v))
    }
    #[allow(clippy::cast_precision_loss)] // timestamps fit an f64's 53 bits
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value<'de>, E> {
        Ok(Value::Number(v as f64))
    }
    #[allow(clippy::cast_precision_loss)]
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value<'de>, E> {
        Ok(Value::Number(v as f64))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Value<'de>, E> {
        Ok(Value::Other)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value<'de>, E> {
        Ok(Value::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Value::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value<'de>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Value::Other)
    }
}

/// A key, borrowed when it has no escapes (nearly always).
struct Key<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// Reads one JSON object, keeping only the fields of the configured roles.
struct EntrySeed<'f> {
    fields: &'f JsonFields,
}

/// The best-ranked value found so far for each role.
type Found<'de> = [Option<(usize, Value<'de>)>; Role::ALL.len()];

impl<'de> DeserializeSeed<'de> for EntrySeed<'_> {
    type Value = Found<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Found<'de>, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EntrySeed<'_> {
    type Value = Found<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Found<'de>, A::Error> {
        let mut found: Found<'de> = Default::default();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            match self.fields.role_of(&key) {
                Some((role, rank)) => {
                    let value = map.next_value_seed(ValueSeed)?;
                    let slot = &mut found[role.index()];
                    let better = slot.as_ref().is_none_or(|(best, _)| rank < *best);
                    if better && !matches!(value, Value::Other) {
                        *slot = Some((rank, value));
                    }
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(found)
    }
}

struct ValueSeed;

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = Value<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value<'de>, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

fn text(slot: Option<(usize, Value<'_>)>) -> Option<Cow<'_, [u8]>> {
    match slot {
        Some((_, Value::Text(text))) => Some(text),
        _ => None,
    }
}

/// Reads a JSON line: one object whose fields are named by `fields`. The path comes from the
/// path field, else from the request field (`GET /x HTTP/1.1`); a line with neither is
/// malformed, and so is one with a `"-"` or empty path is a request that cannot be replayed.
pub fn parse_json<'a>(line: &'a [u8], fields: &JsonFields) -> Result<Entry<'a>, Malformed> {
    let mut deserializer = serde_json::Deserializer::from_slice(line);
    let found = EntrySeed { fields }
        .deserialize(&mut deserializer)
        .and_then(|found| deserializer.end().map(|()| found))
        .map_err(|e| Malformed::Json(e.to_string()))?;
    let [path, query, request, user_agent, time, referer] = found;
    let target = match (text(path), text(request)) {
        (Some(path), _) => Some(path),
        (None, Some(Cow::Borrowed(request))) => request_target(request).map(Cow::Borrowed),
        (None, Some(Cow::Owned(request))) => {
            request_target(&request).map(|target| Cow::Owned(target.to_vec()))
        }
        (None, None) => {
            let first = |role: Role| fields.names(role).first().cloned().unwrap_or_default();
            return Err(Malformed::NoPath(first(Role::Path), first(Role::Request)));
        }
    };
    // A logged `-` or empty path is a request that reached no path.
    let target = target.filter(|t| !t.is_empty() && **t != *b"-");
    let time = match time {
        Some((_, Value::Text(text))) => Stamp::Text(text),
        Some((_, Value::Number(number))) => Stamp::Number(number),
        _ => Stamp::Missing,
    };
    Ok(Entry {
        target,
        query: text(query).filter(|q| !q.is_empty() && **q != *b"-"),
        user_agent: text(user_agent),
        referer: text(referer).filter(|r| !r.is_empty() && **r != *b"-"),
        time,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMBINED: &[u8] = b"203.0.113.9 - frank [10/Oct/2000:13:55:36 -0700] \"GET /private/a.html?x=1 HTTP/1.1\" 200 2326 \"http://example.com/start.html\" \"Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)\"";

    fn s(bytes: &Option<Cow<'_, [u8]>>) -> Option<String> {
        bytes
            .as_ref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
    }

    #[test]
    fn combined_and_json_lines_give_the_referer_unless_it_is_a_dash() {
        let entry = parse_combined(COMBINED).unwrap();
        assert_eq!(
            s(&entry.referer).as_deref(),
            Some("http://example.com/start.html")
        );
        let dash = b"203.0.113.9 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.1\" 200 1 \"-\" \"curl/8\"";
        assert_eq!(parse_combined(dash).unwrap().referer, None);
        let common = b"203.0.113.9 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.1\" 200 1";
        assert_eq!(parse_combined(common).unwrap().referer, None);
        let json = br#"{"path":"/","http_referer":"https://chatgpt.com/","ua":"x"}"#;
        let entry = parse_json(json, &JsonFields::default()).unwrap();
        assert_eq!(s(&entry.referer).as_deref(), Some("https://chatgpt.com/"));
    }

    #[test]
    fn combined_lines_give_target_agent_and_time() {
        let entry = parse_combined(COMBINED).unwrap();
        assert_eq!(s(&entry.target).as_deref(), Some("/private/a.html?x=1"));
        assert_eq!(
            s(&entry.user_agent).as_deref(),
            Some("Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)")
        );
        assert_eq!(
            entry.time,
            Stamp::Text(Cow::Borrowed(&b"10/Oct/2000:13:55:36 -0700"[..]))
        );
        assert!(matches!(entry.target, Some(Cow::Borrowed(_))));
    }

    #[test]
    fn prefixes_and_suffixes_are_ignored() {
        let vhost = [b"example.com:443 ".as_slice(), COMBINED, b" 0.003 \"-\""].concat();
        let entry = parse_combined(&vhost).unwrap();
        assert_eq!(s(&entry.target).as_deref(), Some("/private/a.html?x=1"));
        assert!(s(&entry.user_agent).unwrap().contains("GPTBot"));
        let ipv6 = b"2001:db8::1 - - [10/Oct/2000:13:55:36 -0700] \"HEAD / HTTP/1.0\" 200 - \"-\" \"curl/8.0\"";
        let entry = parse_combined(ipv6).unwrap();
        assert_eq!(s(&entry.target).as_deref(), Some("/"));
    }

    #[test]
    fn common_log_format_has_no_user_agent() {
        let entry = parse_combined(
            b"127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET /a.gif HTTP/1.0\" 200 2326",
        )
        .unwrap();
        assert_eq!(s(&entry.target).as_deref(), Some("/a.gif"));
        assert_eq!(entry.user_agent, None);
    }

    #[test]
    fn escaped_quotes_do_not_end_a_field() {
        let line = br#"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /q?a=\"b\" HTTP/1.1" 404 0 "-" "Evil \"Bot\" <script>""#;
        let entry = parse_combined(line).unwrap();
        assert_eq!(s(&entry.target).as_deref(), Some(r#"/q?a=\"b\""#));
        assert_eq!(
            s(&entry.user_agent).as_deref(),
            Some(r#"Evil \"Bot\" <script>"#)
        );
    }

    #[test]
    fn requests_without_a_target_are_lines_but_not_replayed() {
        for request in [
            &b"-"[..],
            b"\\x16\\x03\\x01",
            b"CONNECT example.com:443 HTTP/1.1",
        ] {
            let line = [
                &b"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \""[..],
                request,
                b"\" 400 0 \"-\" \"-\"",
            ]
            .concat();
            assert_eq!(parse_combined(&line).unwrap().target, None);
        }
        assert_eq!(
            request_target(b"GET http://example.com/x HTTP/1.1"),
            Some(&b"http://example.com/x"[..])
        );
        assert_eq!(request_target(b"GET /x"), Some(&b"/x"[..]));
    }

    #[test]
    fn malformed_combined_lines_say_why() {
        let cases: [(&[u8], Malformed); 5] = [
            (b"hello world", Malformed::NoTime),
            (b"x [10/Oct/2000:13:55:36 -0700]", Malformed::NoRequest),
            (
                b"x [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.1",
                Malformed::Unclosed,
            ),
            (
                b"x [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.1\" OK",
                Malformed::NoStatus,
            ),
            (
                b"x [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.1\" 200 1 \"-\" \"open",
                Malformed::Unclosed,
            ),
        ];
        for (line, why) in cases {
            assert_eq!(parse_combined(line), Err(why));
        }
    }

    #[test]
    fn json_lines_use_default_or_configured_names() {
        let fields = JsonFields::default();
        let line = br#"{"time":"2000-10-10T20:55:36Z","status":200,"request_uri":"/a?b=1","http_user_agent":"GPTBot/1.2","nested":{"path":"/no"},"list":[1,"x"]}"#;
        let entry = parse_json(line, &fields).unwrap();
        assert_eq!(s(&entry.target).as_deref(), Some("/a?b=1"));
        assert_eq!(s(&entry.user_agent).as_deref(), Some("GPTBot/1.2"));
        assert_eq!(
            entry.time,
            Stamp::Text(Cow::Borrowed(&b"2000-10-10T20:55:36Z"[..]))
        );
        assert!(matches!(entry.target, Some(Cow::Borrowed(_))));

        let mut custom = JsonFields::default();
        custom.set(Role::Path, "p");
        custom.set(Role::UserAgent, "who");
        custom.set(Role::Time, "when");
        let line = br#"{"path":"/ignored","p":"/x\/y","who":"a\"b","when":971211336}"#;
        let entry = parse_json(line, &custom).unwrap();
        assert_eq!(s(&entry.target).as_deref(), Some("/x/y"));
        assert_eq!(s(&entry.user_agent).as_deref(), Some("a\"b"));
        assert_eq!(entry.time, Stamp::Number(971_211_336.0));
    }

    #[test]
    fn json_request_lines_and_queries() {
        let fields = JsonFields::default();
        let entry = parse_json(br#"{"request":"GET /x?y HTTP/1.1"}"#, &fields).unwrap();
        assert_eq!(s(&entry.target).as_deref(), Some("/x?y"));
        assert_eq!(entry.user_agent, None);
        assert_eq!(entry.time, Stamp::Missing);
        let entry = parse_json(br#"{"uri":"/x","args":"a=1","path":"/p"}"#, &fields).unwrap();
        assert_eq!(s(&entry.target).as_deref(), Some("/p"));
        assert_eq!(s(&entry.query).as_deref(), Some("a=1"));
        let entry = parse_json(br#"{"request":"-"}"#, &fields).unwrap();
        assert_eq!(entry.target, None);
    }

    #[test]
    fn malformed_json_lines_say_why() {
        let fields = JsonFields::default();
        assert!(matches!(
            parse_json(b"{\"path\": ", &fields),
            Err(Malformed::Json(_))
        ));
        assert!(matches!(
            parse_json(b"[1, 2]", &fields),
            Err(Malformed::Json(_))
        ));
        assert!(matches!(
            parse_json(b"{\"a\": 1} trailing", &fields),
            Err(Malformed::Json(_))
        ));
        assert_eq!(
            parse_json(b"{\"a\": 1}", &fields),
            Err(Malformed::NoPath("path".into(), "request".into()))
        );
    }
}

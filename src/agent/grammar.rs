//! A User-Agent header read as RFC 9110 §10.1.5 writes it: products (`name/version`) and
//! comments (`(…)`, here also `[…]`), and within a comment its `;`-separated entries.
//!
//! The reader says where in a header a client names itself, so that a word counts by where it
//! stands, not because it is there: the [`Place`]s that name the client (a product, the name in
//! a `compatible` comment, ...) and the crawler [`Signal`]s that the header's form gives
//! (a URL in a comment of a header that is not a browser's, ...). What it leaves out never
//! names a crawler, whatever it says:
//! - the platform comment of a browser (`Mozilla/5.0 (…)` with an engine after it, such as
//!   `AppleWebKit/…`, `Gecko/…`, `Trident/…`), and any comment whose first entry is a platform
//!   (`(Linux; U; Android 11; CUBOT_X30 Build/RP1A)` in an app's header), except the entries
//!   written `Name/version` there, which are products (`(X11; Linux x86_64;
//!   Storebot-Google/1.0)`); a `Build/…` value is never one;
//! - the device and app-information comments of app shells (`Instagram … Android (…; HTC;
//!   htc_botdugls; …)`, `[FBAN/FBIOS;…]`, `HbbTV/1.5.1 (+DRM;BOTECH;…)`), and their own product
//!   in a browser's header;
//! - URLs and e-mail addresses in an app's platform comment (`MyApp/2.3 (Windows NT 10.0;
//!   support@myapp.com)` is an app with its support address) and in an app shell's comments.
//!
//! A header that starts `Mozilla/x (…)` says it is a browser, and a browser writes its device in
//! that comment, never a site: there an entry that holds a URL, or that *is* an e-mail address or
//! a site's name (`(Windows NT 6.1; WOW64; https://top.mail.ru/passremind)`, `(X11; Linux
//! x86_64; GTmetrix https://gtmetrix.com/)`) is a crawler signal (an address or a site only when
//! no phone is named), and so is a site's name between that comment and the engine, where a
//! browser writes nothing (`… like Mac OS X) adbeat.com/policy AppleWebKit/…`).
//!
//! The reader is one pass over the bytes to split the header and one over its parts; it holds
//! up to a few dozen places on the stack and spills to the heap only for longer headers.

use super::vocabulary::{is_compatible_browser, is_platform_word, kinds, Kinds};
use super::Signal;
use crate::robots::token::is_token_byte;
use smallvec::SmallVec;

/// Where in a header a name stands, among the places that name the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// The header's first product (`GPTBot/1.2`, `curl/8.4.0`).
    FirstProduct,
    /// A product of a header that is not a browser's, neither its first nor its last
    /// (`ShopApp/5.1 … okhttp/4.12.0`).
    Product,
    /// The header's last part, when it is a product (`… Safari/537.36 DareBoost`).
    LastProduct,
    /// A product of a browser's header after its platform comment, neither its first nor its
    /// last (`Notion/3.4.2` in `… AppleWebKit/537.36 (KHTML, like Gecko) Notion/3.4.2
    /// Chrome/122.0 …`): a browser's or an app's component more often than a crawler.
    BrowserProduct,
    /// The name a `compatible` comment gives after `compatible` (`(compatible; Googlebot/2.1;
    /// …)`), or a product written inside it (`(compatible; MSIE 6.0; …; MSIECrawler)`).
    Compatible,
    /// What is written into a browser engine's comment beyond `KHTML, like Gecko`
    /// (`(KHTML, like Gecko; Google Web Preview)`).
    EngineComment,
    /// The name a comment that is not a platform's starts with (`(Applebot/0.1; +http://…)`,
    /// `(HeadOnlyScraper)`).
    CommentName,
    /// A `Name/version` entry of a platform comment (`(X11; Linux x86_64;
    /// Storebot-Google/1.0)`).
    PlatformProduct,
}

impl Place {
    /// Where the name stood, for explanations.
    pub fn describe(self) -> &'static str {
        match self {
            Place::FirstProduct => "the header's first product",
            Place::Product => "a product of the header",
            Place::LastProduct => "the header's last product",
            Place::BrowserProduct => "a product after a browser's engine",
            Place::Compatible => "a `compatible` comment",
            Place::EngineComment => "the browser engine's comment",
            Place::CommentName => "the name a comment starts with",
            Place::PlatformProduct => "a product in the platform comment",
        }
    }

    /// Whether the place is a product of the header itself (not inside a comment).
    pub fn is_product(self) -> bool {
        matches!(
            self,
            Place::FirstProduct | Place::Product | Place::LastProduct | Place::BrowserProduct
        )
    }
}

/// A stretch of the header that names the client, and where it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Where it starts.
    pub start: usize,
    /// Where it ends (exclusive).
    pub end: usize,
    /// What place it is.
    pub place: Place,
}

/// What kind of header it is, for explanations and for the words that depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Shape {
    /// A browser's: `Mozilla/x` or `Opera/x`, a comment, and an engine product after it.
    pub browser: bool,
    /// It carries an app shell's product (`Instagram`, `FBAN`, `HbbTV`, ...).
    pub app_shell: bool,
    /// It has a platform comment.
    pub platform: bool,
    /// It carries a product that only apps on a person's phone or computer write: Apple's
    /// URL-loading `CFNetwork/…`, which every app on an iPhone, iPad or Mac writes after its
    /// own name (`Reeder/3.2 CFNetwork/672.1.12 Darwin/14.0.0`), or Android's media player
    /// `ExoPlayerLib/…` (`radio.de/5.10.5.3 (Linux; 13) ExoPlayerLib/2.18.2`): an app on a
    /// person's device, whatever its name says.
    pub device_app: bool,
}

/// The signals a header's form gives, as a set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Signals(u8);

impl Signals {
    fn bit(signal: Signal) -> u8 {
        1 << (signal as u8)
    }

    /// Adds a signal.
    pub fn add(&mut self, signal: Signal) {
        self.0 |= Self::bit(signal);
    }

    /// Removes a signal.
    pub fn remove(&mut self, signal: Signal) {
        self.0 &= !Self::bit(signal);
    }

    /// Whether the set holds `signal`.
    pub fn has(self, signal: Signal) -> bool {
        self.0 & Self::bit(signal) != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The first signal of the set, in [`Signal::ALL`]'s order (the strongest first).
    pub fn first(self) -> Option<Signal> {
        Signal::ALL.into_iter().find(|&s| self.has(s))
    }
}

/// A header, read.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    /// The stretches that name the client, in the header's order (disjoint).
    pub spans: SmallVec<[Span; 16]>,
    /// The signals the header's form gives (never [`Signal::Word`], which needs the scan).
    pub signals: Signals,
    /// What kind of header it is.
    pub shape: Shape,
    /// Whether it names a phone platform (a whole `android`, `iphone`, `ipad` or `ios`): an
    /// e-mail address or a site name in it is its user's, not a crawler operator's.
    pub phone: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Product,
    /// `(…)`
    Comment,
    /// `[…]`
    Bracket,
}

/// One part of the header: a product, or the inside of a comment.
#[derive(Debug, Clone, Copy)]
struct Part {
    kind: Kind,
    start: usize,
    end: usize,
    /// For a product, what its name is among the listed words (looked up once).
    name: Kinds,
    /// For a comment, whether it holds another (its entries are then split by depth).
    nested: bool,
}

/// Splits the header into products and comments. Outside comments, white space, `;` and `,`
/// separate products; a comment runs to its matching close (comments nest), or to the end.
fn parts(h: &[u8]) -> SmallVec<[Part; 16]> {
    let mut out = SmallVec::new();
    let mut i = 0;
    while let Some(&c) = h.get(i) {
        match c {
            b' ' | b'\t' | b';' | b',' => i += 1,
            b'(' | b'[' => {
                let close = if c == b'(' { b')' } else { b']' };
                // The matching close, found a bracket at a time.
                let mut depth = 0usize;
                let mut j = i;
                while let Some(at) = memchr::memchr2(c, close, &h[j..]).map(|n| j + n) {
                    if h[at] == c {
                        depth += 1;
                    } else {
                        depth -= 1;
                        if depth == 0 {
                            j = at;
                            break;
                        }
                    }
                    j = at + 1;
                }
                if depth > 0 {
                    j = h.len();
                }
                let kind = if c == b'(' {
                    Kind::Comment
                } else {
                    Kind::Bracket
                };
                out.push(Part {
                    kind,
                    start: i + 1,
                    end: j.min(h.len()),
                    name: Kinds::default(),
                    nested: memchr::memchr2(b'(', b'[', &h[i + 1..j.min(h.len())]).is_some(),
                });
                i = j + 1;
            }
            _ => {
                let end = h[i..]
                    .iter()
                    .position(|b| matches!(b, b' ' | b'\t' | b'(' | b'[' | b';' | b','))
                    .map_or(h.len(), |n| i + n);
                out.push(Part {
                    kind: Kind::Product,
                    start: i,
                    end,
                    name: kinds(name_of(&h[i..end])),
                    nested: false,
                });
                i = end;
            }
        }
    }
    out
}

/// The `;`-separated entries of the comment `h[start..end]`, each trimmed of white space and
/// commas (empty entries stay, so that positions count).
fn entries(h: &[u8], start: usize, end: usize, nested: bool) -> SmallVec<[(usize, usize); 16]> {
    let mut out = SmallVec::new();
    if !nested {
        let mut from = start;
        for at in memchr::memchr_iter(b';', &h[start..end]) {
            out.push(trim(h, from, start + at));
            from = start + at + 1;
        }
        out.push(trim(h, from, end));
        return out;
    }
    let mut depth = 0usize;
    let mut from = start;
    for (k, &b) in h[start..end].iter().enumerate() {
        match b {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth = depth.saturating_sub(1),
            b';' if depth == 0 => {
                out.push(trim(h, from, start + k));
                from = start + k + 1;
            }
            _ => {}
        }
    }
    out.push(trim(h, from, end));
    out
}

fn trim(h: &[u8], mut s: usize, mut e: usize) -> (usize, usize) {
    while s < e && matches!(h[s], b' ' | b'\t' | b',') {
        s += 1;
    }
    while e > s && matches!(h[e - 1], b' ' | b'\t' | b',') {
        e -= 1;
    }
    (s, e)
}

/// A product's name: what comes before its `/`.
fn name_of(product: &[u8]) -> &[u8] {
    match product.iter().position(|&b| b == b'/') {
        Some(slash) => &product[..slash],
        None => product,
    }
}

/// The word an entry starts with: a letter, then letters, digits, `_` and `-`.
fn lead_word(text: &[u8]) -> &[u8] {
    if !text.first().is_some_and(u8::is_ascii_alphabetic) {
        return &[];
    }
    let end = text
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || b == b'_' || b == b'-'))
        .unwrap_or(text.len());
    &text[..end]
}

/// Whether an entry says what platform a device runs: a platform word first (or before a `-`:
/// `Windows-NT`, `SMART-TV`), the old security token `U`/`I`/`N`, or a locale (`en`, `de-de`).
fn is_platform_entry(text: &[u8]) -> bool {
    let word = lead_word(text);
    if is_platform_word(word) {
        return true;
    }
    // `Win-x64`, and `Linux2.6.18-7.1/7405d0-smp` (a TV's kernel, written on to its name).
    if let Some(end) = word.iter().position(|&b| b == b'-' || b.is_ascii_digit()) {
        if is_platform_word(&word[..end]) {
            return true;
        }
    }
    if text.len() == 1 && matches!(text[0].to_ascii_lowercase(), b'u' | b'i' | b'n') {
        return true;
    }
    is_locale(text)
}

/// `xx`, `xx-yy` or `xx_yy`, letters.
fn is_locale(text: &[u8]) -> bool {
    let letters = |s: &[u8]| s.len() == 2 && s.iter().all(u8::is_ascii_alphabetic);
    match text.len() {
        2 => letters(text),
        5 => letters(&text[..2]) && matches!(text[2], b'-' | b'_') && letters(&text[3..]),
        _ => false,
    }
}

/// Whether an entry is a product with a version (`Elaine/1.0`; a URL or a site's path,
/// `rb.gy/oupwis`, is none): a second client named in the same `compatible` comment, which is
/// then a device's list, not a crawler's name.
fn is_versioned_product(text: &[u8]) -> bool {
    text.first().is_some_and(u8::is_ascii_alphabetic)
        && text
            .iter()
            .position(|&b| matches!(b, b'/' | b' ' | b'.' | b':'))
            .is_some_and(|at| text[at] == b'/')
}

/// Whether the name a `compatible` comment gives is one name: a word, or a few words without a
/// product among them (`Google-Youtube-Links`, `Yahoo! Slurp`, `Impact.com Agent`), not a
/// device's list (`SonyEricssonJ20/R7BA Browser/NetFront/3.5 …`, `YOSPACE SmartPhone Emulator
/// Website Edition 1.11`).
fn is_one_name(text: &[u8]) -> bool {
    let words = text.split(|&b| b == b' ').filter(|w| !w.is_empty());
    text.first().is_some_and(u8::is_ascii_alphabetic)
        && words.clone().count() <= 3
        && words.skip(1).all(|w| !w.contains(&b'/'))
}

/// The name an entry starts with and the words that follow it up to a URL, an address or a
/// `+site` (`WordSurfer Spider 2.2`, `Crayon Crawler`, `CrawlDaddy v0.3.0 abot` before its
/// `http://…`): where the entry is `(start, end)`, the stretch of it to read. A client names
/// itself in a phrase as often as in a word, and what follows the phrase is its operator's.
fn leading_phrase(h: &[u8], entry: (usize, usize)) -> Option<(usize, usize)> {
    let (start, mut end) = leading_name(h, entry)?;
    while let Some(&b' ') = h.get(end).filter(|_| end < entry.1) {
        let from = end + 1;
        let word_end = h[from..entry.1]
            .iter()
            .position(|&b| b == b' ')
            .map_or(entry.1, |n| from + n);
        let word = &h[from..word_end];
        if word.first() == Some(&b'+') || word.iter().any(|&b| b == b':' || b == b'@') {
            break;
        }
        end = word_end;
    }
    Some((start, end))
}

/// The name an entry starts with, and its version if it is written `Name/version`: where the
/// entry is `(start, end)`, the stretch of it to read.
fn leading_name(h: &[u8], (start, end): (usize, usize)) -> Option<(usize, usize)> {
    let text = &h[start..end];
    if !text.first().is_some_and(u8::is_ascii_alphabetic) {
        return None;
    }
    let name = text
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'!' | b'-')))
        .unwrap_or(text.len());
    let len = if text.get(name) == Some(&b'/') {
        text[name..]
            .iter()
            .position(|&b| b == b' ')
            .map_or(text.len(), |n| name + n)
    } else {
        name
    };
    Some((start, start + len))
}

fn eq_ignore_case(a: &[u8], b: &[u8]) -> bool {
    a.eq_ignore_ascii_case(b)
}

fn starts_with_ignore_case(text: &[u8], prefix: &[u8]) -> bool {
    text.get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

fn find_ignore_case(text: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || text.len() < needle.len() {
        return None;
    }
    (0..=text.len() - needle.len())
        .find(|&at| text[at..at + needle.len()].eq_ignore_ascii_case(needle))
}

/// Whether a product's name is a site's (`Salesforce.com`, `search.marginalia.nu`): dotted
/// labels of letters, digits and `-`, the last a known top-level domain; not a reversed package
/// name (`com.example.app`).
fn is_domain(name: &[u8]) -> bool {
    let mut labels = name.split(|&b| b == b'.');
    let Some(first) = labels.next() else {
        return false;
    };
    let valid = |label: &[u8]| {
        !label.is_empty()
            && label
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || b == b'-')
    };
    if !valid(first) || !first[0].is_ascii_alphanumeric() || kinds(first).reversed() {
        return false;
    }
    let mut last = None;
    for label in labels {
        if !valid(label) {
            return false;
        }
        last = Some(label);
    }
    last.is_some_and(|tld| {
        tld.len() >= 2 && tld.iter().all(u8::is_ascii_alphabetic) && kinds(tld).tld()
    })
}

/// A URL in an entry: `http://` or `https://` that does not continue a word, or an entry that
/// starts with `+` and a site or an address (`+https://…`, `+www.example.com`, `+bot@x.com`),
/// as crawlers give their operator's page.
fn has_url(text: &[u8]) -> bool {
    let mut from = 0;
    while let Some(at) = memchr::memchr(b':', &text[from..]).map(|n| from + n) {
        if text.get(at + 1..at + 3) != Some(b"//") {
            from = at + 1;
            continue;
        }
        let before = &text[..at];
        let scheme = if before.len() >= 5
            && before[before.len() - 5..].eq_ignore_ascii_case(b"https")
        {
            5
        } else if before.len() >= 4 && before[before.len() - 4..].eq_ignore_ascii_case(b"http") {
            4
        } else {
            0
        };
        if scheme > 0 {
            let start = at - scheme;
            if start == 0 || !text[start - 1].is_ascii_alphanumeric() {
                return true;
            }
        }
        from = at + 3;
    }
    plus_site(text)
}

/// `+` and a site or an address: `+www.…`, `+name.tld…`, or `+…@…`.
fn plus_site(text: &[u8]) -> bool {
    let Some(rest) = text.strip_prefix(b"+") else {
        return false;
    };
    if starts_with_ignore_case(rest, b"www.") || starts_with_ignore_case(rest, b"http") {
        return true;
    }
    let word = rest.split(|&b| b == b' ').next().unwrap_or_default();
    if word.contains(&b'@') {
        return true;
    }
    let label = rest
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || b == b'-'))
        .unwrap_or(rest.len());
    label > 0
        && rest.get(label) == Some(&b'.')
        && rest[label + 1..]
            .iter()
            .take_while(|b| b.is_ascii_alphabetic())
            .count()
            >= 2
}

/// An e-mail address: a letter or digit, `@` (or `[at]`), a label, a dot and a letter.
fn has_email(text: &[u8]) -> bool {
    let mut from = 0;
    while let Some(at) = memchr::memchr2(b'@', b'[', &text[from..]).map(|n| from + n) {
        let skip = if text[at] == b'@' {
            1
        } else if opens_bracketed_at(text, at) {
            4
        } else {
            from = at + 1;
            continue;
        };
        if at > 0 && text[at - 1].is_ascii_alphanumeric() {
            let domain = &text[at + skip..];
            let label = domain
                .iter()
                .position(|&b| !(b.is_ascii_alphanumeric() || b == b'-'))
                .unwrap_or(domain.len());
            if label > 0
                && domain.get(label) == Some(&b'.')
                && domain.get(label + 1).is_some_and(u8::is_ascii_alphabetic)
            {
                return true;
            }
        }
        from = at + 1;
    }
    false
}

/// `12 subscribers`, `1 subscriber`: feed fetchers give the count of the readers they fetch
/// for (Feedly, Feedbin, NewsBlur, Overcast's podcast sync).
fn is_subscriber_count(number: &[u8], word: &[u8]) -> bool {
    !number.is_empty()
        && number.iter().all(u8::is_ascii_digit)
        && (eq_ignore_case(word, b"subscriber") || eq_ignore_case(word, b"subscribers"))
}

/// An entry `12 subscribers`.
fn is_subscriber_entry(text: &[u8]) -> bool {
    let mut words = text.split(|&b| b == b' ');
    match (words.next(), words.next(), words.next()) {
        (Some(number), Some(word), None) => is_subscriber_count(number, word),
        _ => false,
    }
}

/// Whether the header holds one of `words` (lower-case) as a whole run, in any case.
fn has_run(h: &[u8], words: &[&[u8]]) -> bool {
    h.split(|&b| !is_token_byte(b))
        .any(|run| words.iter().any(|word| run.eq_ignore_ascii_case(word)))
}

/// Whether the header names a phone platform: a whole run `android`, `iphone`, `ipad` or `ios`.
fn names_a_phone(h: &[u8]) -> bool {
    has_run(h, &[b"android", b"iphone", b"ipad", b"ios"])
}

/// Whether the header names a desktop system: a whole run `windows`, `winnt`, `macos` or
/// `macintosh`.
fn names_a_desktop(h: &[u8]) -> bool {
    has_run(h, &[b"windows", b"winnt", b"macos", b"macintosh"])
}

/// What a comment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Platform,
    AppInfo,
    Compatible,
    BrowserCompatible,
    Engine,
    Other,
}

/// Reads a header: where it names its client, and the signals its form gives.
pub fn read(h: &[u8]) -> Reading {
    let parts = parts(h);
    let mut reading = Reading::default();
    let first_product = parts.first().filter(|p| p.kind == Kind::Product);
    let mozilla = first_product.is_some_and(|p| {
        let text = &h[p.start..p.end];
        let rest = if starts_with_ignore_case(text, b"mozilla/") {
            &text[8..]
        } else if starts_with_ignore_case(text, b"opera/") {
            &text[6..]
        } else {
            return false;
        };
        rest.first().is_some_and(u8::is_ascii_digit)
    });
    let second_is_comment = parts.get(1).is_some_and(|p| p.kind == Kind::Comment);
    let browser = mozilla
        && second_is_comment
        && (parts
            .iter()
            .skip(2)
            .any(|p| p.kind == Kind::Product && p.name.engine())
            || parts
                .get(1)
                .is_some_and(|p| find_ignore_case(&h[p.start..p.end], b"trident/").is_some()));
    reading.shape.browser = browser;

    // What the header holds at all, so that no entry is searched for what it cannot have.
    let at_sign = memchr::memchr(b'@', h).is_some() || has_bracketed_at(h);
    let colon = memchr::memchr(b':', h).is_some();
    let mut app = false;
    let mut after_engine = false;
    let mut domain = false;
    // A site's name where a browser writes nothing, between its platform comment and its
    // engine (`… like Mac OS X) adbeat.com/policy AppleWebKit/…`): the header's sender's, even
    // on a phone.
    let mut site_before_engine = false;
    let mut engine_seen = false;
    let mut previous_product: Option<&[u8]> = None;
    let last = parts.len().saturating_sub(1);
    for (index, part) in parts.iter().enumerate() {
        let text = &h[part.start..part.end];
        if part.kind == Kind::Product {
            let name = name_of(text);
            after_engine = part.name.engine_comment();
            if let Some(number) = previous_product {
                if is_subscriber_count(number, text) {
                    reading.signals.add(Signal::Subscribers);
                }
            }
            previous_product = Some(text);
            if text.first() == Some(&b'+')
                && (starts_with_ignore_case(text, b"+http")
                    || starts_with_ignore_case(text, b"+www."))
            {
                reading.signals.add(Signal::Url);
            }
            if at_sign && has_email(text) {
                reading.signals.add(Signal::Email);
            }
            if part.name.app_shell() {
                app = true;
                reading.shape.app_shell = true;
                if browser {
                    continue;
                }
            }
            if eq_ignore_case(name, b"build") {
                continue;
            }
            reading.shape.device_app |=
                eq_ignore_case(name, b"cfnetwork") || eq_ignore_case(name, b"exoplayerlib");
            let place = match (index, browser) {
                (0, _) => Place::FirstProduct,
                (i, _) if i == last => Place::LastProduct,
                (_, true) => Place::BrowserProduct,
                (_, false) => Place::Product,
            };
            let site = name.contains(&b'.') && is_domain(name);
            domain |= site;
            site_before_engine |= site && browser && index >= 2 && !engine_seen;
            engine_seen |= part.name.engine();
            reading.spans.push(Span {
                start: part.start,
                end: part.end,
                place,
            });
            continue;
        }
        previous_product = None;
        let engine_comment = std::mem::take(&mut after_engine);
        let list = entries(h, part.start, part.end, part.nested);
        let role = comment(h, &list, &mut reading, engine_comment, part.kind);
        let role = match role {
            Some(role) => role,
            None if index == 1 && browser => Role::Platform,
            None if list
                .first()
                .is_some_and(|&(s, e)| is_platform_entry(&h[s..e])) =>
            {
                Role::Platform
            }
            None if app || part.kind == Kind::Bracket => Role::AppInfo,
            None => {
                if let Some((start, end)) = list.first().and_then(|&e| leading_phrase(h, e)) {
                    reading.spans.push(Span {
                        start,
                        end,
                        place: Place::CommentName,
                    });
                }
                Role::Other
            }
        };
        if role == Role::Platform {
            reading.shape.platform = true;
            platform_products(h, &list, &mut reading);
            if index == 1 && mozilla {
                domain |= posing_platform(h, &list, &mut reading.signals);
            }
        }
        if matches!(role, Role::Platform | Role::AppInfo) {
            continue;
        }
        for &(s, e) in &list {
            let entry = &h[s..e];
            if (colon || entry.first() == Some(&b'+')) && has_url(entry) {
                reading.signals.add(Signal::Url);
            }
            if at_sign && has_email(entry) {
                reading.signals.add(Signal::Email);
            }
            // A comment's name that is a site's (`(postrank.com)`, `(WhatsMyIP.org …)`).
            let word = entry.split(|&b| b == b' ').next().unwrap_or_default();
            domain |= word.contains(&b'.') && is_domain(word);
            if entry.first().is_some_and(u8::is_ascii_digit) && is_subscriber_entry(entry) {
                reading.signals.add(Signal::Subscribers);
            }
        }
    }
    if domain {
        reading.signals.add(Signal::Domain);
    }
    // An app that names the phone it runs on writes its own page and address beside it
    // (`Turtlecast/0.7.7; (Android 13); +https://www.turtlecast.app`): no crawler signal.
    let app_signal =
        !mozilla && (reading.signals.has(Signal::Url) || reading.signals.has(Signal::Compatible));
    if reading.signals.has(Signal::Email) || reading.signals.has(Signal::Domain) || app_signal {
        reading.phone = names_a_phone(h);
        if reading.phone {
            reading.signals.remove(Signal::Email);
            reading.signals.remove(Signal::Domain);
            if !mozilla {
                reading.signals.remove(Signal::Url);
                reading.signals.remove(Signal::Compatible);
            }
        } else if !mozilla && names_a_desktop(h) {
            reading.signals.remove(Signal::Url);
        }
    }
    if site_before_engine {
        reading.signals.add(Signal::Domain);
    }
    reading
}

/// The crawler signals of the platform comment of a header that starts `Mozilla/x (…)`: an
/// entry that holds a URL (`(Windows NT 6.1; WOW64; https://top.mail.ru/passremind)`, `(X11;
/// Linux x86_64; GTmetrix https://gtmetrix.com/)`), or that is an e-mail address or a site's
/// name (`(X11; Linux x86_64; HubSpot …; web-crawlers+links@hubspot.com)`, `(Windows NT 10.0;
/// cludo.com bot)`). Such a header says it is a browser, and a browser writes its device there,
/// never a site: none of the 124,364 people's headers of the vendored corpora does (the one
/// that holds a URL there, `GT-S5830 - Forum: http://… Build/GRWK74`, is a phone's entry with
/// its `Build/`, left out below). Words there still never count. An app that
/// names itself first (`Liferea/1.10 (Linux; en_US.UTF-8; http://liferea.sf.net/)`) owns the
/// page in its platform comment and is not read here. Returns whether an entry is a site's
/// name (a signal the caller weighs with the rest: a phone's header keeps none).
fn posing_platform(h: &[u8], list: &[(usize, usize)], signals: &mut Signals) -> bool {
    let mut site = false;
    for &(s, e) in list {
        let entry = &h[s..e];
        if find_ignore_case(entry, b"build/").is_some() {
            continue;
        }
        if has_url(entry) {
            signals.add(Signal::Url);
        }
        if !entry.contains(&b' ') && has_email(entry) {
            signals.add(Signal::Email);
        }
        // A site's name in small letters (a device's model is written in capitals:
        // `LG-P500.RU`).
        let word = entry.split(|&b| b == b' ').next().unwrap_or_default();
        site |= word.contains(&b'.') && !word.iter().any(u8::is_ascii_uppercase) && is_domain(word);
    }
    site
}

/// Whether the header writes an e-mail address's `@` as `[at]`, as some crawlers do to keep
/// their address from harvesters (`+centuryb.o.t9[at]gmail.com`).
fn has_bracketed_at(h: &[u8]) -> bool {
    memchr::memchr_iter(b'[', h).any(|at| opens_bracketed_at(h, at))
}

/// Whether `text[at..]` starts `[at]` (any case).
pub(super) fn opens_bracketed_at(text: &[u8], at: usize) -> bool {
    text.get(at..at + 4)
        .is_some_and(|four| four.eq_ignore_ascii_case(b"[at]"))
}

/// Reads a `compatible` comment or an engine's, adding what names the client; `None` for any
/// other comment, whose role its place decides.
fn comment(
    h: &[u8],
    list: &[(usize, usize)],
    reading: &mut Reading,
    engine_comment: bool,
    kind: Kind,
) -> Option<Role> {
    let text = |(s, e): (usize, usize)| &h[s..e];
    if let Some(at) = list
        .iter()
        .position(|&entry| eq_ignore_case(text(entry), b"compatible"))
    {
        let rest = &list[at + 1..];
        let mut named = rest.iter().position(|&entry| !text(entry).is_empty());
        // `(compatible; U; Name …)`: the old security token before the name.
        if let Some(n) = named {
            let security = matches!(text(rest[n]), [b'U' | b'u' | b'I' | b'i' | b'N' | b'n']);
            if security {
                if let Some(next) = rest[n + 1..].iter().position(|&e| !text(e).is_empty()) {
                    named = Some(n + 1 + next);
                }
            }
        }
        let browser = named.is_some_and(|n| is_compatible_browser(lead_word(text(rest[n]))));
        let mut platform = false;
        let mut products = false;
        for (k, &entry) in rest.iter().enumerate() {
            let t = text(entry);
            let is_named = Some(k) == named;
            platform |= is_platform_entry(t);
            products |= !is_named && is_versioned_product(t);
            // The name it gives, whole; in any other entry, the name it starts with
            // (`AGAKIDSBOT/3.1 +agakids.ru/project`), when that is no platform.
            let span = if is_named && !browser {
                Some(entry)
            } else if !is_platform_entry(t) {
                leading_phrase(h, entry)
            } else {
                None
            };
            if let Some((start, end)) = span {
                reading.spans.push(Span {
                    start,
                    end,
                    place: Place::Compatible,
                });
            }
        }
        // A crawler writes its one name there (`(compatible; Google-Youtube-Links)`); a device
        // writes its platform and more products (`(compatible; Teleca Q7; Brew 3.1.5; U; en)`).
        let single = named.is_some_and(|n| is_one_name(text(rest[n])));
        if !browser && single && !platform && !products {
            reading.signals.add(Signal::Compatible);
        }
        return Some(if browser {
            Role::BrowserCompatible
        } else {
            Role::Compatible
        });
    }
    if !engine_comment || kind != Kind::Comment {
        return None;
    }
    let &(fs, fe) = list.first()?;
    let first = &h[fs..fe];
    if !starts_with_ignore_case(first, b"khtml") {
        // Not `KHTML, like Gecko` at all: an engine comment nobody reads a name from.
        return Some(Role::Engine);
    }
    let before = reading.spans.len();
    // `KHTML, like Gecko, Mediapartners-Google` or `KHTML, like Gecko GomezAgent 3.0`: after
    // the word `Gecko` and a separator, a letter that does not start `Safari`.
    if let Some(at) = find_ignore_case(first, b"gecko") {
        let after = &first[at + 5..];
        let gap = after
            .iter()
            .take_while(|&&b| b == b',' || b == b' ')
            .count();
        let name = &after[gap..];
        if gap > 0
            && name.first().is_some_and(u8::is_ascii_alphabetic)
            && !starts_with_ignore_case(name, b"safari")
            && !only_video_formats(name)
        {
            let start = fs + at + 5 + gap;
            reading.spans.push(Span {
                start,
                end: fe,
                place: Place::EngineComment,
            });
        }
    }
    for &(s, e) in &list[1..] {
        if e > s {
            reading.spans.push(Span {
                start: s,
                end: e,
                place: Place::EngineComment,
            });
        }
    }
    if reading.spans.len() > before {
        reading.signals.add(Signal::EngineComment);
    }
    Some(Role::Engine)
}

/// Whether an engine comment's rest is a list of the video formats a television's or a
/// console's browser says it plays (`KHTML, like Gecko, HEVC, HDR, UHD`): no name.
fn only_video_formats(text: &[u8]) -> bool {
    text.split(|&b| b == b',')
        .map(|word| word.trim_ascii())
        .all(|word| {
            [
                &b"HEVC"[..],
                b"HDR",
                b"UHD",
                b"4K",
                b"DRM",
                b"AV1",
                b"VP9",
                b"H264",
                b"H265",
            ]
            .iter()
            .any(|format| word.eq_ignore_ascii_case(format))
        })
}

/// The `Name/version` entries of a platform comment, which are products (a device or a
/// platform is never written so, but `Storebot-Google/1.0` is); a `Build/…` value never is.
fn platform_products(h: &[u8], list: &[(usize, usize)], reading: &mut Reading) {
    for &(s, e) in list {
        let text = &h[s..e];
        if !text.first().is_some_and(u8::is_ascii_alphabetic) {
            continue;
        }
        let name = text
            .iter()
            .position(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'!' | b'-')))
            .unwrap_or(text.len());
        let versioned = text.get(name) == Some(&b'/')
            && text
                .get(name + 1)
                .is_some_and(|&b| b.is_ascii_digit() || b == b'v');
        if versioned && !eq_ignore_case(&text[..name], b"build") {
            reading.spans.push(Span {
                start: s,
                end: s + name,
                place: Place::PlatformProduct,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(h: &str) -> Vec<(&str, Place)> {
        let reading = read(h.as_bytes());
        reading
            .spans
            .iter()
            .map(|s| (&h[s.start..s.end], s.place))
            .collect()
    }

    #[test]
    fn a_browsers_platform_comment_names_nothing() {
        let h = "Mozilla/5.0 (Linux; Android 10; CUBOT_X30) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36";
        let reading = read(h.as_bytes());
        assert!(reading.shape.browser && reading.shape.platform);
        assert!(reading.signals.is_empty());
        assert_eq!(
            places(h),
            [
                ("Mozilla/5.0", Place::FirstProduct),
                ("AppleWebKit/537.36", Place::BrowserProduct),
                ("Chrome/120.0", Place::BrowserProduct),
                ("Mobile", Place::BrowserProduct),
                ("Safari/537.36", Place::LastProduct),
            ]
        );
    }

    #[test]
    fn products_in_a_platform_comment_and_build_values() {
        let h = "Mozilla/5.0 (X11; Linux x86_64; Storebot-Google/1.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/79.0 Safari/537.36";
        assert!(places(h).contains(&("Storebot-Google", Place::PlatformProduct)));
        let h = "Mozilla/5.0 (Linux; Android 9; S222 Build/CUBOT) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36";
        assert!(!places(h).iter().any(|(t, _)| t.contains("CUBOT")));
    }

    #[test]
    fn compatible_comments_name_their_client() {
        let h = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; MistralAI-Index/1.0; +https://docs.mistral.ai/robots)";
        let reading = read(h.as_bytes());
        assert!(!reading.shape.browser);
        assert!(places(h).contains(&("MistralAI-Index/1.0", Place::Compatible)));
        assert!(reading.signals.has(Signal::Compatible) && reading.signals.has(Signal::Url));
        // Internet Explorer's is a browser's and gives no signal by its form, but a URL there is
        // a client's (no person's Internet Explorer of the 124,367 writes one).
        let h = "Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1; SV1)";
        let reading = read(h.as_bytes());
        assert!(reading.signals.is_empty(), "{:?}", reading.signals);
        let h = "Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1; SV1;  http://www.changedetection.com/bot.html )";
        assert!(read(h.as_bytes()).signals.has(Signal::Url));
        let h = "Mozilla/4.0 (compatible; MSIE 5.0; Windows 98; DigExt; Crayon Crawler)";
        assert!(places(h).contains(&("Crayon Crawler", Place::Compatible)));
        // A device's list of products and platforms.
        let h = "Mozilla/5.0 (compatible; Teleca Q7; Brew 3.1.5; U; en) 240X400 LGE AX840";
        assert!(!read(h.as_bytes()).signals.has(Signal::Compatible));
    }

    #[test]
    fn a_comments_name_may_be_a_phrase_or_a_site() {
        let h = "EricssonR320/R1A (Fast Wireless Crawler)";
        assert!(places(h).contains(&("Fast Wireless Crawler", Place::CommentName)));
        // The phrase stops where the operator's URL or address starts.
        let h = "Mozilla/5.0 (compatible; MSIE 9.0; Windows NT 6.1; CrawlDaddy v0.3.0 abot v1.1.1.0 http://code.google.com/p/abot)";
        assert!(places(h).contains(&("CrawlDaddy v0.3.0 abot v1.1.1.0", Place::Compatible)));
        assert!(read(b"PostRank/2.0 (postrank.com)")
            .signals
            .has(Signal::Domain));
        assert!(read(
            b"Mozilla/5.0 (WhatsMyIP.org Text_to_Code_Ratio_Tool) http://whatsmyip.org/ua"
        )
        .signals
        .has(Signal::Domain));
        // A site in a browser's platform comment is its sender's, unless the device is a
        // phone (its user's); a device's model in capitals is none.
        let site = |h: &str| read(h.as_bytes()).signals.has(Signal::Domain);
        assert!(site("Mozilla/5.0 (Windows NT 10.0; example.com) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"));
        assert!(!site("Mozilla/5.0 (Linux; Android 10; example.com) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36"));
        assert!(!site("Mozilla/5.0 (Linux; U; Android 2.2; en-us; LG-P500.RU Build/FRF91) AppleWebKit/533.1 (KHTML, like Gecko) Version/4.0 Mobile Safari/533.1"));
        // Between the platform comment and the engine, where a browser writes nothing, a site
        // is its sender's on any device.
        assert!(site("Mozilla/5.0 (iPad; CPU OS 15_3_1 like Mac OS X) adbeat.com/policy AppleWebKit/605.1.15 (KHTML, like Gecko) Version/15.3.1 Mobile/15E148 Safari/604.1"));
    }

    #[test]
    fn urls_count_outside_platform_and_app_comments() {
        let url = |h: &str| read(h.as_bytes()).signals.has(Signal::Url);
        assert!(url("PunkMap (https://github.com/openeasm/punkmap)"));
        assert!(url("BoardReader Blog Indexer(http://boardreader.com)"));
        assert!(url("Foo/1.0 +http://foo.example/bot"));
        assert!(!url(
            "Liferea/1.10 (Linux; en_US.UTF-8; http://liferea.sf.net/)"
        ));
        assert!(!url("Mozilla/5.0 (Unknown; Linux armv7l) AppleWebKit/537.1+ (KHTML, like Gecko) Safari/537.1+ LG Browser/6.00.00(+mouse+3D+SCREEN+TUNER; LGE; 42LA6208-ZA)"));
        assert!(!url("Mozilla/5.0 (Linux; Android 9; ATV R1) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/87.0 Safari/537.36 HbbTV/1.5.1 (+DRM;BOTECH;ATV R1;Demo 1.0;;) FVC/5.0 (BOTECH;TVs;)"));
        // A header that starts `Mozilla/x (…)` says it is a browser, whose platform comment
        // holds a device: a URL or an address written there as an entry is its sender's.
        assert!(url("Mozilla/5.0 (Windows NT 6.1; WOW64; https://top.mail.ru/passremind) AppleWebKit/537.22 (KHTML, like Gecko)"));
        assert!(url(
            "Mozilla/5.0 (iPhone; Y!J-BRY/YATSH crawler; http://help.yahoo.co.jp/help/)"
        ));
        // A name and its page in one entry (GTmetrix's test browser).
        assert!(url("Mozilla/5.0 (X11; Linux x86_64; GTmetrix https://gtmetrix.com/) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/75.0.3770.100 Safari/537.36"));
        assert!(!url("Mozilla/5.0 (Linux; U; Android 2.3.3; GT-S5830 - Forum: http://example.org/ Build/GRWK74) AppleWebKit/533.1 (KHTML, like Gecko) Version/4.0 Mobile Safari/533.1"));
        let email = |h: &str| read(h.as_bytes()).signals.has(Signal::Email);
        assert!(email("Mozilla/5.0 (X11; Linux x86_64; HubSpot link check; web-crawlers+links@hubspot.com) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/51.0 Safari/537.36"));
        assert!(!email("Mozilla/5.0 (Linux; Android 10; someone@example.com) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36"));
        assert!(email(
            "Mozilla/5.0 (compatible; +centuryb.o.t9[at]gmail.com)"
        ));
        assert!(!email(
            "Mozilla/5.0 [at] (compatible; MSIE 9.0; Windows NT 6.1)"
        ));
        assert!(email("ichiro/2.0 (ichiro@nttr.co.jp)"));
        assert!(!email("MyApp/2.3 (Windows NT 10.0; support@myapp.com)"));
        assert!(!email(
            "(Android)(15)(someone@gmail.com)(HTC Desire C)(com.example.app)"
        ));
    }

    #[test]
    fn app_shells_describe_the_device() {
        let h = "Mozilla/5.0 (Linux; Android 12; HTC Desire 22 pro Build/SKQ1.211006.001; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/110.0 Mobile Safari/537.36 Instagram 267.0.0.18.93 Android (31/12; 480dpi; 1080x2132; HTC; HTC Desire 22 pro; htc_botdugls; qcom; de_DE; 440638617)";
        let reading = read(h.as_bytes());
        assert!(reading.shape.app_shell);
        assert!(!places(h).iter().any(|(t, _)| t.contains("bot")));
    }

    #[test]
    fn engine_comments_sites_and_subscribers() {
        let h = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko; Google Web Preview) Chrome/27.0 Safari/537.36";
        assert!(places(h).contains(&("Google Web Preview", Place::EngineComment)));
        assert!(read(h.as_bytes()).signals.has(Signal::EngineComment));
        let typo = "Mozilla/5.0 (X11;CrOS aarch64 13099.85.0) AppleWebKit/537.36 (KHTML,Likea Gecko) Chrome/134.0 Safari/537.36";
        assert!(read(typo.as_bytes()).signals.is_empty());
        assert!(read(b"2ip.ru CMS Detector (https://2ip.ru/cms/)")
            .signals
            .has(Signal::Domain));
        assert!(
            !read(b"com.google.android.youtube/17.36.4 (Linux; U; Android 12)")
                .signals
                .has(Signal::Domain)
        );
        let sync =
            b"Overcast/1.0 Podcast Sync (123 subscribers; feed-id=456789; +http://overcast.fm/)";
        assert!(read(sync).signals.has(Signal::Subscribers));
        assert!(read(b"Feedbin feed-id:1 - 2 subscribers")
            .signals
            .has(Signal::Subscribers));
    }

    #[test]
    fn apps_on_a_persons_device_own_their_page() {
        let shape = |h: &str| read(h.as_bytes()).shape;
        assert!(shape("Tweetbot/53300 CFNetwork/1335.0.3 Darwin/21.6.0").device_app);
        assert!(shape("radio.de/5.10.5.3 (Linux; 13) ExoPlayerLib/2.18.2").device_app);
        assert!(
            !shape("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)")
                .device_app
        );
        let signals = |h: &str| read(h.as_bytes()).signals;
        // An app that names the phone or the computer it runs on writes its own page.
        assert!(signals("Turtlecast/0.7.7; (Android 13); +https://www.turtlecast.app").is_empty());
        assert!(signals("Upcast/1.0 (+https://getupcast.app/; iOS podcast app)").is_empty());
        assert!(
            signals("FeedDemon/4.5 (http://www.feeddemon.com/; Microsoft Windows XP)").is_empty()
        );
        assert!(signals("iPad (compatible; Tablet2.0) NRC Digitale Editie, nl.nrc.nrcapp 10.0.7 (197) / iPadOS 16.6").is_empty());
        // Not in a header that starts `Mozilla/x (…)`, where a crawler poses as a phone.
        assert!(signals(
            "Mozilla/5.0 (Android 3.0; YRSpider; +http://www.yunrang.com/yrspider.html)"
        )
        .has(Signal::Url));
        // And not without a device.
        assert!(signals("PunkMap (https://github.com/openeasm/punkmap)").has(Signal::Url));
        // A television's kernel written on to its platform's name; `compatible; Gecko/…`;
        // the video formats a console's browser plays.
        assert!(signals("HbbTV/1.1.1 (;;;;) Mozilla/5.0 (compatible; ANTGalio/3.0.2.1.22.43.08; Linux2.6.18-7.1/7405d0-smp)").is_empty());
        assert!(signals("Mozilla/4.0 (compatible; Gecko/20041115) Maple 5.0.0 Navi").is_empty());
        assert!(signals("Mozilla/5.0 (PlayStation 4 PRO) AppleWebKit/531.3 (KHTML, like Gecko, HEVC, HDR, UHD) SCEE/1.0 Nuanti/2.0").is_empty());
        assert!(
            signals("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko, HDR; Preview-Bot)")
                .has(Signal::EngineComment)
        );
    }

    #[test]
    fn unterminated_and_empty_headers() {
        for h in [
            "",
            "(",
            "((((",
            "Mozilla/5.0 (",
            "[[",
            "a (b; (c; d)",
            ";;;,,,",
        ] {
            let _ = read(h.as_bytes());
        }
        assert!(read(b"").spans.is_empty());
    }
}

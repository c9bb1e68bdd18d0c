//! The words the header reader ([`super::grammar`]) knows: what browsers, platforms and app
//! shells write, and what crawlers write about themselves. Each list says why a word is on it;
//! every lookup is case-insensitive and looks at one word, never at the header.

use foldhash::fast::FixedState;
use std::collections::HashMap;

/// The words that betray a crawler where they stand in a place that names a client (a product
/// name, the name in a `compatible` comment, ...; see [`super::grammar::Place`]), at the
/// beginning or the end of a word (`FooBot`, `web-crawler`, `A6-Indexer`; not
/// `OrangeBotswana`, `Abbott`). Where a device names itself (a platform comment, an app's
/// device comment) they never count, so `CUBOT_X30` or `htc_botdugls` is nobody's crawler.
/// `crawl` and `robot` count only where they end a word (`sitecrawl`, `crawl4ai`, `nomore404.com
/// robot/1.1`): words that start with them are too often something else (`Crawley`, a town;
/// `Robotics`).
///
/// Then the words automated tools name themselves with: what they do to a site (`favicon`,
/// `uptime`, `monitor`, `synthetic`, `checker`, `archive`), found in the crawler corpora in
/// products such as `Google Favicon`, `YottaaMonitor`, `RuxitSynthetic/1.0`,
/// `W3C_I18n-Checker/1.0`, `InternetArchive-1.0` and in no person's header. `preview`, `check`,
/// `scanner` and `audit` count only as words of their own, with no letter on either side
/// (`Google Web Preview`, `Uptime Check`, `Cloudflare-Radar-Scanner`, `Feed Image Audit`;
/// [`only_as_word`]): people's apps end their names with them (`CamScanner`, Firefox's
/// `MozillaDeveloperPreview`) or start them so (`checkout`, `AuditBoard`).
pub const CRAWLER_WORDS: [&str; 22] = [
    "bot",
    "crawler",
    "crawl",
    "spider",
    "scraper",
    "robot",
    "indexer",
    "fetcher",
    "validator",
    "archiver",
    "archive",
    "archiving",
    "favicon",
    "uptime",
    "monitor",
    "synthetic",
    "synthetics",
    "checker",
    "preview",
    "check",
    "scanner",
    "audit",
];

/// Whether the crawler word `word` counts only where it ends a word (any case).
pub fn only_at_word_end(word: &[u8]) -> bool {
    word.eq_ignore_ascii_case(b"crawl") || word.eq_ignore_ascii_case(b"robot")
}

/// Whether the crawler word `word` counts only as a word of its own (any case): no letter before
/// it or after it, not even a capital (`AuditBoard` is an app's name, not the word).
pub fn only_as_word(word: &[u8]) -> bool {
    [&b"preview"[..], b"check", b"scanner", b"audit"]
        .iter()
        .any(|w| word.eq_ignore_ascii_case(w))
}

/// How a platform comment's first entry starts: an operating system, a device class, a
/// windowing system or CPU, or a phone maker that old phones write there first (`(Linux;
/// Android 14; …)`, `(X11; …)`, `(iPhone; CPU iPhone OS …)`, `(Series40; Nokia…)`,
/// `(SymbianOS/9.4; …)`, `(Web0S; Linux/SmartTV)`, `(hp-tablet; …)`). Such a comment names the
/// device a person holds, in a browser's header or an app's, never a crawler.
/// The lists of words people's browsers and apps write (platforms, engines, app shells,
/// `compatible` browsers), which name no crawler.
pub(super) const PEOPLES_WORDS: [&[&str]; 4] =
    [PLATFORM_WORDS, ENGINES, APP_SHELLS, COMPATIBLE_BROWSERS];

const PLATFORM_WORDS: &[&str] = &[
    "linux",
    "android",
    "windows",
    "win32",
    "win64",
    "winnt",
    "win9x",
    "win95",
    "win98",
    "win16",
    "x11",
    "macintosh",
    "mac",
    "iphone",
    "ipad",
    "ipod",
    "ios",
    "cpu",
    "blackberry",
    "bb10",
    "playbook",
    "symbian",
    "symbianos",
    "series40",
    "series60",
    "s60",
    "j2me",
    "midp",
    "nintendo",
    "playstation",
    "xbox",
    "smart",
    "smarttv",
    "web0s",
    "webos",
    "tizen",
    "kaios",
    "cros",
    "darwin",
    "freebsd",
    "openbsd",
    "netbsd",
    "sunos",
    "ubuntu",
    "fedora",
    "debian",
    "watchos",
    "tvos",
    "ipados",
    "macos",
    "harmonyos",
    "openharmony",
    "maemo",
    "meego",
    "sailfish",
    "bada",
    "palmos",
    "hpwos",
    "hp",
    "amigaos",
    "amiga",
    "morphos",
    "beos",
    "haiku",
    "x86_64",
    "i686",
    "arm64",
    "aarch64",
    "wow64",
    "brew",
    "mobile",
    "tablet",
    "unknown",
    "fuchsia",
    "wayland",
    "gnu",
    "os",
    "profile",
    "qnx",
    "rim",
    "nokia",
    "sonyericsson",
    "samsung",
    "lg",
    "htc",
    "motorola",
    "mot",
    "tv",
    "opera",
    "windowsce",
    "wince",
    "googletv",
    "risc",
    "riscos",
    "os2",
    "irix",
    "aix",
    "solaris",
    "unix",
    "dragonfly",
    "mint",
];

/// Rendering engines' products (`AppleWebKit/537.36`, `Gecko/20100101`, `Presto/2.12`, ...): a
/// header that starts `Mozilla/5.0 (…)` and carries one is a browser's, and its first comment
/// is the platform the browser runs on.
const ENGINES: &[&str] = &[
    "applewebkit",
    "gecko",
    "presto",
    "trident",
    "goanna",
    "khtml",
    "webkit",
    "edgehtml",
    "servo",
];

/// The engines whose product is followed by their own comment (`AppleWebKit/537.36 (KHTML, like
/// Gecko)`): anything beyond `KHTML, like Gecko` written into it is a client's name (`(KHTML,
/// like Gecko; Google Web Preview)`, `(KHTML, like Gecko, Mediapartners-Google)`).
const ENGINES_WITH_COMMENT: &[&str] = &["applewebkit", "webkit", "khtml"];

/// App shells: apps that embed a browser and write their own product and device comments after
/// the browser's (`Instagram 267.0 Android (31/12; 480dpi; …; HTC; htc_botdugls; …)`,
/// `[FBAN/FBIOS;FBCR/OrangeBotswana;…]`, `HbbTV/1.5.1 (+DRM;BOTECH;…)`, `FVC/5.0
/// (BOTECH;TVs;)`). The comments after one describe the device, never a crawler; in a
/// browser's header the product itself names no crawler either.
const APP_SHELLS: &[&str] = &[
    "instagram",
    "fban",
    "fbav",
    "fb_iab",
    "fbios",
    "fb4a",
    "line",
    "snapchat",
    "musical_ly",
    "tiktok",
    "bytedancewebview",
    "micromessenger",
    "linkedinapp",
    "gsa",
    "kakaotalk",
    "kakaostory",
    "naver",
    "daumapps",
    "whatsapp",
    "zalo",
    "weibo",
    "__weibo__",
    "qq",
    "mqqbrowser",
    "aliapp",
    "dingtalk",
    "alipay",
    "hbbtv",
    "fvc",
    "ce-html",
];

/// What a `compatible` comment's first entry is when it is a browser or a person's app rather
/// than a crawler (`(compatible; Konqueror/4.5)`, `Mozilla/6.0 (compatible; Amiga-AWeb)`,
/// Outlook's `(compatible; ms-office; MSOffice 16)`; and any `MSIE…`).
const COMPATIBLE_BROWSERS: &[&str] = &[
    "konqueror",
    "gecko",
    "icab",
    "ibrowse",
    "abrowse",
    "aweb",
    "amiga-aweb",
    "lynx",
    "links",
    "elinks",
    "dillo",
    "netfront",
    "opera",
    "netscape",
    "voyager",
    "omniweb",
    "netpositive",
    "galeon",
    "webtv",
    "ms-office",
];

/// The top-level domains a crawler's name ends in when it names itself by its site
/// (`Salesforce.com`, `search.marginalia.nu`, `2ip.ru`, `Criticalcss.com/2.0.0`): country codes
/// and the old generic ones. The new generic ones that are also words (`.app`, `.link`,
/// `.news`, `.page`) are left out: `UP.Link/6.3` and `Go.Web/6.5` are phones' browsers.
const TLDS: &[&str] = &[
    "com", "net", "org", "io", "ai", "ru", "de", "uk", "fr", "nl", "ch", "fm", "co", "info", "biz",
    "eu", "pl", "cz", "jp", "cn", "br", "es", "se", "fi", "dk", "au", "ca", "nu", "ua", "kr", "tv",
    "xyz", "gov", "edu", "ly", "gy", "ws", "cc", "ie", "ro", "hu", "gr", "pt", "sk", "hr", "bg",
    "lt", "lv", "ee", "kz", "tr", "il", "za", "mx", "ar", "cl", "nz", "sg", "hk", "tw", "vn", "th",
    "ph", "pk", "ir", "sa", "ae",
];

/// A domain's first label that makes a name a reversed package name
/// (`com.google.android.youtube/17.36`), as Android apps write theirs, not a site.
const REVERSED_DOMAIN_STARTS: &[&str] = &[
    "com", "org", "net", "io", "de", "uk", "fr", "nl", "cn", "jp", "ru", "br", "in", "it", "es",
    "tv", "me", "co",
];

/// What a word is, among the lists above: a set of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Kinds(u8);

impl Kinds {
    const PLATFORM: u8 = 1;
    const ENGINE: u8 = 2;
    const ENGINE_COMMENT: u8 = 4;
    const APP_SHELL: u8 = 8;
    const COMPATIBLE_BROWSER: u8 = 16;
    const TLD: u8 = 32;
    const REVERSED: u8 = 64;

    /// In [`PLATFORM_WORDS`].
    pub fn platform(self) -> bool {
        self.0 & Self::PLATFORM != 0
    }
    /// In [`ENGINES`].
    pub fn engine(self) -> bool {
        self.0 & Self::ENGINE != 0
    }
    /// In [`ENGINES_WITH_COMMENT`].
    pub fn engine_comment(self) -> bool {
        self.0 & Self::ENGINE_COMMENT != 0
    }
    /// In [`APP_SHELLS`].
    pub fn app_shell(self) -> bool {
        self.0 & Self::APP_SHELL != 0
    }
    /// In [`COMPATIBLE_BROWSERS`].
    pub fn compatible_browser(self) -> bool {
        self.0 & Self::COMPATIBLE_BROWSER != 0
    }
    /// In [`TLDS`].
    pub fn tld(self) -> bool {
        self.0 & Self::TLD != 0
    }
    /// In [`REVERSED_DOMAIN_STARTS`].
    pub fn reversed(self) -> bool {
        self.0 & Self::REVERSED != 0
    }
}

/// The longest listed word: a longer one is looked up no further.
const MAX_WORD: usize = 24;

/// Every listed word, lower-cased, with its kinds: one hash lookup tells all (headers are read
/// on every request a worker's memo has not seen, and a product is looked up once); and a bit
/// per (length, first letter) of the listed words, which answers most words that are on no
/// list (`Mozilla`, `Chrome`, `Safari`) without hashing them.
struct Table {
    kinds: HashMap<&'static [u8], Kinds, FixedState>,
    filter: [u32; MAX_WORD + 1],
}

fn first_letter_bit(byte: u8) -> u32 {
    1 << (byte.to_ascii_lowercase() & 31)
}

static TABLE: std::sync::LazyLock<Table> = std::sync::LazyLock::new(|| {
    let mut table = Table {
        kinds: HashMap::with_hasher(FixedState::with_seed(0x766f_6361_6275_6c61)),
        filter: [0; MAX_WORD + 1],
    };
    for (list, kind) in [
        (PLATFORM_WORDS, Kinds::PLATFORM),
        (ENGINES, Kinds::ENGINE),
        (ENGINES_WITH_COMMENT, Kinds::ENGINE_COMMENT),
        (APP_SHELLS, Kinds::APP_SHELL),
        (COMPATIBLE_BROWSERS, Kinds::COMPATIBLE_BROWSER),
        (TLDS, Kinds::TLD),
        (REVERSED_DOMAIN_STARTS, Kinds::REVERSED),
    ] {
        for word in list {
            let kinds: &mut Kinds = table.kinds.entry(word.as_bytes()).or_default();
            kinds.0 |= kind;
            if let Some(bits) = table.filter.get_mut(word.len()) {
                *bits |= first_letter_bit(word.as_bytes()[0]);
            }
        }
    }
    table
});

/// What `word` is (case-insensitively), among the lists.
pub fn kinds(word: &[u8]) -> Kinds {
    let table = &*TABLE;
    let listed = match (word.first(), table.filter.get(word.len())) {
        (Some(&first), Some(bits)) => bits & first_letter_bit(first) != 0,
        _ => false,
    };
    if !listed {
        return Kinds::default();
    }
    let mut buf = [0u8; MAX_WORD];
    let lower = &mut buf[..word.len()];
    for (o, b) in lower.iter_mut().zip(word) {
        *o = b.to_ascii_lowercase();
    }
    table.kinds.get(&*lower).copied().unwrap_or_default()
}

/// Whether `word` starts a platform comment ([`PLATFORM_WORDS`]).
pub fn is_platform_word(word: &[u8]) -> bool {
    kinds(word).platform()
}

/// Whether `name` is a `compatible` comment's browser ([`COMPATIBLE_BROWSERS`], or `MSIE…`).
pub fn is_compatible_browser(name: &[u8]) -> bool {
    name.get(..4)
        .is_some_and(|head| head.eq_ignore_ascii_case(b"msie"))
        || kinds(name).compatible_browser()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_ignore_case_and_never_match_a_longer_word() {
        assert!(is_platform_word(b"Linux") && is_platform_word(b"X11"));
        assert!(!is_platform_word(b"Linuxbot") && !is_platform_word(b"CUBOT_X30"));
        assert!(kinds(b"AppleWebKit").engine() && kinds(b"AppleWebKit").engine_comment());
        assert!(kinds(b"Gecko").engine() && !kinds(b"Gecko").engine_comment());
        assert!(!kinds(b"Chrome").engine());
        assert!(kinds(b"Instagram").app_shell() && kinds(b"FBAN").app_shell());
        assert!(is_compatible_browser(b"MSIE") && is_compatible_browser(b"msie8"));
        assert!(!is_compatible_browser(b"Googlebot"));
        assert!(kinds(b"COM").tld() && !kinds(b"link").tld() && !kinds(b"").tld());
        assert!(kinds(b"com").reversed() && !kinds(b"search").reversed());
        // A word on two lists has both kinds.
        assert!(kinds(b"ios").platform());
        // Longer than any listed word: no lookup at all.
        assert!(!is_platform_word(&[b'a'; 40]));
    }
}

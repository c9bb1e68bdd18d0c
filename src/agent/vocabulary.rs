//! The words the header reader ([`super::grammar`]) knows: what browsers, platforms and app
//! shells write, and what crawlers write about themselves. Each list says why a word is on it;
//! every lookup is case-insensitive and looks at one word, never at the header.

/// The words that betray a crawler where they stand in a place that names a client (a product
/// name, the name in a `compatible` comment, ...; see [`super::grammar::Place`]), at the
/// beginning or the end of a word (`FooBot`, `web-crawler`, `A6-Indexer`; not
/// `OrangeBotswana`, `Abbott`). Where a device names itself (a platform comment, an app's
/// device comment) they never count, so `CUBOT_X30` or `htc_botdugls` is nobody's crawler.
/// `crawl` and `robot` count only where they end a word (`sitecrawl`, `crawl4ai`, `nomore404.com
/// robot/1.1`): words that start with them are too often something else (`Crawley`, a town;
/// `Robotics`). Words people's apps are often named with (`scan`, `monitor`, `check`, `proxy`,
/// `preview`) are left out: in the measured corpora they found a crawler or two each, and
/// `CamScanner` or `Baby Monitor` is an app.
pub const CRAWLER_WORDS: [&str; 10] = [
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
];

/// Whether the crawler word `word` counts only where it ends a word (any case).
pub fn only_at_word_end(word: &[u8]) -> bool {
    word.eq_ignore_ascii_case(b"crawl") || word.eq_ignore_ascii_case(b"robot")
}

/// Lower-cases `word` into `buf`, or `None` when it is longer than any listed word.
fn lower<'b>(word: &[u8], buf: &'b mut [u8; 24]) -> Option<&'b [u8]> {
    let out = buf.get_mut(..word.len())?;
    for (o, b) in out.iter_mut().zip(word) {
        *o = b.to_ascii_lowercase();
    }
    Some(out)
}

/// Whether `word` is how a platform comment's first entry starts: an operating system, a
/// device class, a windowing system or CPU, or a phone maker that old phones write there first
/// (`(Linux; Android 14; …)`, `(X11; …)`, `(iPhone; CPU iPhone OS …)`, `(Series40; Nokia…)`,
/// `(SymbianOS/9.4; …)`, `(Web0S; Linux/SmartTV)`, `(hp-tablet; …)`). Such a comment names the
/// device a person holds, in a browser's header or an app's, never a crawler.
pub fn is_platform_word(word: &[u8]) -> bool {
    let mut buf = [0; 24];
    let Some(w) = lower(word, &mut buf) else {
        return false;
    };
    matches!(
        w,
        b"linux"
            | b"android"
            | b"windows"
            | b"win32"
            | b"win64"
            | b"winnt"
            | b"win9x"
            | b"win95"
            | b"win98"
            | b"win16"
            | b"x11"
            | b"macintosh"
            | b"mac"
            | b"iphone"
            | b"ipad"
            | b"ipod"
            | b"ios"
            | b"cpu"
            | b"blackberry"
            | b"bb10"
            | b"playbook"
            | b"symbian"
            | b"symbianos"
            | b"series40"
            | b"series60"
            | b"s60"
            | b"j2me"
            | b"midp"
            | b"nintendo"
            | b"playstation"
            | b"xbox"
            | b"smart"
            | b"smarttv"
            | b"web0s"
            | b"webos"
            | b"tizen"
            | b"kaios"
            | b"cros"
            | b"darwin"
            | b"freebsd"
            | b"openbsd"
            | b"netbsd"
            | b"sunos"
            | b"ubuntu"
            | b"fedora"
            | b"debian"
            | b"watchos"
            | b"tvos"
            | b"ipados"
            | b"macos"
            | b"harmonyos"
            | b"openharmony"
            | b"maemo"
            | b"meego"
            | b"sailfish"
            | b"bada"
            | b"palmos"
            | b"hpwos"
            | b"hp"
            | b"amigaos"
            | b"amiga"
            | b"morphos"
            | b"beos"
            | b"haiku"
            | b"x86_64"
            | b"i686"
            | b"arm64"
            | b"aarch64"
            | b"wow64"
            | b"brew"
            | b"mobile"
            | b"tablet"
            | b"unknown"
            | b"fuchsia"
            | b"wayland"
            | b"gnu"
            | b"os"
            | b"profile"
            | b"qnx"
            | b"rim"
            | b"nokia"
            | b"sonyericsson"
            | b"samsung"
            | b"lg"
            | b"htc"
            | b"motorola"
            | b"mot"
            | b"tv"
            | b"opera"
            | b"windowsce"
            | b"wince"
            | b"googletv"
            | b"risc"
            | b"riscos"
            | b"os2"
            | b"irix"
            | b"aix"
            | b"solaris"
            | b"unix"
            | b"dragonfly"
            | b"mint"
    )
}

/// Whether `name` is a rendering engine's product (`AppleWebKit/537.36`, `Gecko/20100101`,
/// `Presto/2.12`, ...): a header that starts `Mozilla/5.0 (…)` and carries one is a browser's,
/// and its first comment is the platform the browser runs on.
pub fn is_engine(name: &[u8]) -> bool {
    let mut buf = [0; 24];
    let Some(w) = lower(name, &mut buf) else {
        return false;
    };
    matches!(
        w,
        b"applewebkit"
            | b"gecko"
            | b"presto"
            | b"trident"
            | b"goanna"
            | b"khtml"
            | b"webkit"
            | b"edgehtml"
            | b"servo"
    )
}

/// Whether the comment after a product `name` is its engine's (`AppleWebKit/537.36 (KHTML,
/// like Gecko)`): anything beyond `KHTML, like Gecko` written into it is a client's name
/// (`(KHTML, like Gecko; Google Web Preview)`, `(KHTML, like Gecko, Mediapartners-Google)`).
pub fn has_engine_comment(name: &[u8]) -> bool {
    let mut buf = [0; 24];
    let Some(w) = lower(name, &mut buf) else {
        return false;
    };
    matches!(w, b"applewebkit" | b"webkit" | b"khtml")
}

/// Whether `name` is an app shell: an app that embeds a browser and writes its own product and
/// device comments after the browser's (`Instagram 267.0 Android (31/12; 480dpi; …; HTC;
/// htc_botdugls; …)`, `[FBAN/FBIOS;FBCR/OrangeBotswana;…]`, `HbbTV/1.5.1 (+DRM;BOTECH;…)`,
/// `FVC/5.0 (BOTECH;TVs;)`). The comments after it describe the device, never a crawler; in a
/// browser's header the product itself names no crawler either.
pub fn is_app_shell(name: &[u8]) -> bool {
    let mut buf = [0; 24];
    let Some(w) = lower(name, &mut buf) else {
        return false;
    };
    matches!(
        w,
        b"instagram"
            | b"fban"
            | b"fbav"
            | b"fb_iab"
            | b"fbios"
            | b"fb4a"
            | b"line"
            | b"snapchat"
            | b"musical_ly"
            | b"tiktok"
            | b"bytedancewebview"
            | b"micromessenger"
            | b"linkedinapp"
            | b"gsa"
            | b"kakaotalk"
            | b"kakaostory"
            | b"naver"
            | b"daumapps"
            | b"whatsapp"
            | b"zalo"
            | b"weibo"
            | b"__weibo__"
            | b"qq"
            | b"mqqbrowser"
            | b"aliapp"
            | b"dingtalk"
            | b"alipay"
            | b"hbbtv"
            | b"fvc"
            | b"ce-html"
    )
}

/// Whether `name`, as the first entry of a `compatible` comment, is a browser or a person's
/// app rather than a crawler (`(compatible; MSIE 9.0; …)`, `(compatible; Konqueror/4.5)`,
/// `Mozilla/6.0 (compatible; Amiga-AWeb)`, Outlook's `(compatible; ms-office; MSOffice 16)`).
pub fn is_compatible_browser(name: &[u8]) -> bool {
    let mut buf = [0; 24];
    let Some(w) = lower(name, &mut buf) else {
        return false;
    };
    w.starts_with(b"msie")
        || matches!(
            w,
            b"konqueror"
                | b"icab"
                | b"ibrowse"
                | b"abrowse"
                | b"aweb"
                | b"amiga-aweb"
                | b"lynx"
                | b"links"
                | b"elinks"
                | b"dillo"
                | b"netfront"
                | b"opera"
                | b"netscape"
                | b"voyager"
                | b"omniweb"
                | b"netpositive"
                | b"galeon"
                | b"webtv"
                | b"ms-office"
        )
}

/// Whether `tld` is a top-level domain a crawler's name ends in when it names itself by its site
/// (`Salesforce.com`, `search.marginalia.nu`, `2ip.ru`, `Criticalcss.com/2.0.0`): country codes
/// and the old generic ones. The new generic ones that are also words (`.app`, `.link`,
/// `.news`, `.page`) are left out: `UP.Link/6.3` and `Go.Web/6.5` are phones' browsers.
pub fn is_tld(tld: &[u8]) -> bool {
    let mut buf = [0; 24];
    let Some(w) = lower(tld, &mut buf) else {
        return false;
    };
    matches!(
        w,
        b"com"
            | b"net"
            | b"org"
            | b"io"
            | b"ai"
            | b"ru"
            | b"de"
            | b"uk"
            | b"fr"
            | b"nl"
            | b"ch"
            | b"fm"
            | b"co"
            | b"info"
            | b"biz"
            | b"eu"
            | b"pl"
            | b"cz"
            | b"jp"
            | b"cn"
            | b"br"
            | b"es"
            | b"se"
            | b"fi"
            | b"dk"
            | b"au"
            | b"ca"
            | b"nu"
            | b"ua"
            | b"kr"
            | b"tv"
            | b"xyz"
            | b"gov"
            | b"edu"
            | b"ly"
            | b"gy"
            | b"ws"
            | b"cc"
            | b"ie"
            | b"ro"
            | b"hu"
            | b"gr"
            | b"pt"
            | b"sk"
            | b"hr"
            | b"bg"
            | b"lt"
            | b"lv"
            | b"ee"
            | b"kz"
            | b"tr"
            | b"il"
            | b"za"
            | b"mx"
            | b"ar"
            | b"cl"
            | b"nz"
            | b"sg"
            | b"hk"
            | b"tw"
            | b"vn"
            | b"th"
            | b"ph"
            | b"pk"
            | b"ir"
            | b"sa"
            | b"ae"
    )
}

/// Whether `label`, as a domain's first label, is a top-level domain: the name is a reversed
/// package name (`com.google.android.youtube/17.36`), as Android apps write theirs, not a site.
pub fn is_reversed_domain_start(label: &[u8]) -> bool {
    let mut buf = [0; 24];
    let Some(w) = lower(label, &mut buf) else {
        return false;
    };
    matches!(
        w,
        b"com"
            | b"org"
            | b"net"
            | b"io"
            | b"de"
            | b"uk"
            | b"fr"
            | b"nl"
            | b"cn"
            | b"jp"
            | b"ru"
            | b"br"
            | b"in"
            | b"it"
            | b"es"
            | b"tv"
            | b"me"
            | b"co"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_ignore_case_and_never_match_a_longer_word() {
        assert!(is_platform_word(b"Linux") && is_platform_word(b"X11"));
        assert!(!is_platform_word(b"Linuxbot") && !is_platform_word(b"CUBOT_X30"));
        assert!(is_engine(b"AppleWebKit") && !is_engine(b"Chrome"));
        assert!(is_app_shell(b"Instagram") && is_app_shell(b"FBAN"));
        assert!(is_compatible_browser(b"MSIE") && is_compatible_browser(b"msie8"));
        assert!(!is_compatible_browser(b"Googlebot"));
        assert!(is_tld(b"COM") && !is_tld(b"link") && !is_tld(b""));
        assert!(is_reversed_domain_start(b"com") && !is_reversed_domain_start(b"search"));
        // Longer than any listed word: no lookup at all.
        assert!(!is_platform_word(&[b'a'; 40]));
    }
}

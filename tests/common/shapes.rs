//! robots.txt files shaped to hurt, and the paths to ask them about: the synthetic and
//! adversarial shapes of `benches/matcher.rs`, which the tests also compile and query (for
//! correctness and bounded work; the benchmark measures their time).
//!
//! Every shape is generated deterministically and stays within the default parse limit
//! (512 KiB), so that it is what a proxy would compile.

/// A generated file, the crawlers to ask for, and paths to ask about.
pub struct Shape {
    pub name: &'static str,
    pub text: Vec<u8>,
    pub agents: Vec<String>,
    pub paths: Vec<String>,
}

/// The parse limit the shapes are made to fit.
const LIMIT: usize = 512 * 1024 - 256;

use super::rng::Rng;
use crawlgate::robots::MAX_JUDGED_PATH;

/// `botaa`, `botab`, …: distinct product tokens.
fn crawler_name(i: usize) -> String {
    let mut name = String::from("bot");
    let mut n = i;
    loop {
        name.push(char::from(b'a' + (n % 26) as u8));
        n /= 26;
        if n == 0 {
            break;
        }
    }
    name
}

/// Paths made from a file's own rules: each rule's pattern with its `*` filled in and its `$`
/// dropped, some extended, some given a query; and a few no rule mentions.
pub fn paths_from_rules(text: &[u8], count: usize) -> Vec<String> {
    let text = String::from_utf8_lossy(text);
    let patterns: Vec<&str> = text
        .lines()
        .filter_map(|line| line.split_once(':'))
        .filter(|(key, _)| {
            let key = key.trim();
            key.eq_ignore_ascii_case("disallow") || key.eq_ignore_ascii_case("allow")
        })
        .map(|(_, value)| value.split('#').next().unwrap_or("").trim())
        .filter(|value| value.starts_with('/') || value.starts_with('*'))
        .collect();
    let mut mix = Rng::new(text.len() as u64);
    let mut paths = Vec::with_capacity(count);
    for i in 0..count {
        if patterns.is_empty() || i % 10 == 9 {
            paths.push(format!(
                "/blog/{}/post-{i}/index.html?ref=home",
                2000 + i % 25
            ));
            continue;
        }
        let pattern = patterns[(i * 7919) % patterns.len()];
        let mut path: String = pattern
            .trim_end_matches('$')
            .split('*')
            .collect::<Vec<_>>()
            .join(["", "x", "/a/b", "-2024"][i % 4]);
        if !path.starts_with('/') {
            path.insert(0, '/');
        }
        match mix.below(4) {
            0 => path.push_str("page.html"),
            1 => path.push_str("?id=7"),
            2 if !pattern.ends_with('$') => path.push_str("/x"),
            _ => {}
        }
        paths.push(path);
    }
    paths
}

/// One `User-agent: *` group of about 500 KiB and ~9,000 rules, a third of them wildcards in
/// the shapes real files use (`/dir/*.pdf$`, `/*?sessionid=`, `/shop/*/item`, `*.gif$`,
/// `/dir*/print`), the rest plain paths.
pub fn single_group_third_wildcards() -> Shape {
    let mut mix = Rng::new(1);
    let mut text = String::from("User-agent: *\n");
    let mut i = 0;
    while text.len() < 500 * 1024 {
        let word = mix.word(b"abcdefghijklmnopqrstuvwxyz", 12 + (i % 13));
        let rule = match i % 12 {
            0 => format!("Disallow: /{word}/*.pdf$"),
            1 => format!("Disallow: /*?{word}="),
            2 => format!("Allow: /shop/*/{word}-{i}"),
            3 if i % 24 == 3 => format!("Disallow: *.{}$", &word[..3]),
            3 => format!("Disallow: /catalog/{word}*/print"),
            4 | 7 => format!("Allow: /section/{word}/public-{i}/"),
            _ => format!("Disallow: /section/{word}/item-{i}/page"),
        };
        text.push_str(&rule);
        text.push('\n');
        i += 1;
    }
    let text = text.into_bytes();
    Shape {
        name: "synthetic/single-group-third-wildcards",
        paths: paths_from_rules(&text, 4000),
        agents: vec!["crawlgate-test".into()],
        text,
    }
}

/// The exhaustion shape: one group naming 2,000 crawlers over 10,000 rules, then 2,000
/// small groups for the same crawlers, so that every crawler follows a different pair of groups.
/// With `wildcards`, the large group's rules are `/pN/*.pdf`.
pub fn two_thousand_crawlers(wildcards: bool) -> Shape {
    let mut text = String::new();
    for i in 0..2000 {
        text.push_str(&format!("User-agent: {}\n", crawler_name(i)));
    }
    for n in 0..10_000 {
        if wildcards {
            text.push_str(&format!("Disallow: /p{n}/*.pdf\n"));
        } else {
            text.push_str(&format!("Disallow: /p{n}/\n"));
        }
    }
    for i in 0..2000 {
        text.push_str(&format!(
            "\nUser-agent: {}\nAllow: /p{}/\n",
            crawler_name(i),
            i * 5
        ));
    }
    let text = text.into_bytes();
    Shape {
        name: if wildcards {
            "adversarial/2000-crawlers-wildcards"
        } else {
            "adversarial/2000-crawlers-literal"
        },
        paths: paths_from_rules(&text, 4000),
        agents: vec![crawler_name(0), crawler_name(1999), "crawlgate-test".into()],
        text,
    }
}

/// 512 KiB of globs only, each with several wildcards and short pieces over a small alphabet,
/// so that pieces occur everywhere and few are selective.
pub fn many_wildcards() -> Shape {
    let mut mix = Rng::new(2);
    let mut text = String::from("User-agent: *\n");
    while text.len() < LIMIT - 64 {
        let stars = 2 + mix.below(4);
        let mut rule = String::from(if mix.below(3) == 0 {
            "Allow: /"
        } else {
            "Disallow: /"
        });
        for piece in 0..stars {
            let len = 1 + mix.below(3);
            rule.push_str(&mix.word(b"abc/.", len));
            if piece + 1 < stars {
                rule.push('*');
            }
        }
        if mix.below(2) == 0 {
            rule.push('$');
        }
        text.push_str(&rule);
        text.push('\n');
    }
    let text = text.into_bytes();
    let mut paths = paths_from_rules(&text, 1000);
    paths.push(long_path(2));
    Shape {
        name: "adversarial/many-wildcards",
        paths,
        agents: vec!["crawlgate-test".into()],
        text,
    }
}

/// Long patterns: a few hundred rules of ~1.5 KiB each, made of many short pieces between
/// wildcards (`/a*b*a*b*…`), the shape that makes backtracking matchers explode.
pub fn long_patterns() -> Shape {
    let mut mix = Rng::new(3);
    let mut text = String::from("User-agent: *\n");
    while text.len() < LIMIT - 2048 {
        let mut rule = String::from("Disallow: /");
        for _ in 0..500 {
            let len = 1 + mix.below(2);
            rule.push_str(&mix.word(b"ab", len));
            rule.push('*');
        }
        rule.push_str(&mix.word(b"abc", 4));
        rule.push_str(if mix.below(2) == 0 { "$\n" } else { "\n" });
        text.push_str(&rule);
    }
    let text = text.into_bytes();
    let mut paths = paths_from_rules(&text, 200);
    paths.push(long_path(3));
    Shape {
        name: "adversarial/long-patterns",
        paths,
        agents: vec!["crawlgate-test".into()],
        text,
    }
}

/// Globs whose inner pieces are suffixes of each other (`a`, `aa`, `aaa`, …): without care, one
/// octet of a path like `/aaaa…` matches all of them at once.
pub fn nested_pieces() -> Shape {
    let mut text = String::from("User-agent: *\n");
    let mut k = 1;
    while text.len() + k + 24 < LIMIT {
        let run = "a".repeat(k);
        if k % 2 == 0 {
            text.push_str(&format!("Disallow: /*{run}*z\n"));
        } else {
            text.push_str(&format!("Allow: /*{run}$\n"));
        }
        k += 1;
    }
    let text = text.into_bytes();
    let mut paths = paths_from_rules(&text, 200);
    paths.push(format!("/{}", "a".repeat(MAX_JUDGED_PATH - 1)));
    Shape {
        name: "adversarial/nested-pieces",
        paths,
        agents: vec!["crawlgate-test".into()],
        text,
    }
}

/// Thousands of groups: 12,000 crawlers with a group each, one crawler also named by 3,000 of
/// them, and the `*` group last.
pub fn thousands_of_groups() -> Shape {
    let mut text = String::new();
    let mut i = 0;
    while text.len() < LIMIT - 64 {
        text.push_str(&format!("User-agent: {}\n", crawler_name(i)));
        if i % 4 == 0 {
            text.push_str("User-agent: everywhere\n");
        }
        text.push_str(&format!("Disallow: /g{i}/\nAllow: /g{i}/*.css$\n\n"));
        i += 1;
    }
    text.push_str("User-agent: *\nDisallow: /private/\n");
    let text = text.into_bytes();
    Shape {
        name: "adversarial/thousands-of-groups",
        paths: paths_from_rules(&text, 4000),
        agents: vec![
            "everywhere".into(),
            crawler_name(7),
            "crawlgate-test".into(),
        ],
        text,
    }
}

/// A path as long as any judged ([`MAX_JUDGED_PATH`]) over a small alphabet, with slashes, for
/// the adversarial shapes.
pub fn long_path(seed: u64) -> String {
    let mut mix = Rng::new(seed);
    format!("/{}", mix.word(b"abc/.", MAX_JUDGED_PATH - 1))
}

/// Paths as long as any judged, shaped against the path's own handling rather than against a file: each makes
/// one part of the work as dense as it can be (dot segments to resolve, `..` to take back,
/// escapes to rewrite or decode, one state the piece scan stays in, octets that come out three
/// times longer, a mix that gives every form a long path of its own). With [`long_path`]'s random
/// one, they are the paths the adversarial shapes' long-path figures are measured on.
pub fn crafted_long_paths() -> Vec<(&'static str, String)> {
    const LEN: usize = MAX_JUDGED_PATH;
    let fill = |unit: &str| unit.repeat(LEN / unit.len());
    let rooted = |unit: &str| format!("/{}", unit.repeat((LEN - 1) / unit.len()));
    // Units that resolve, decode or stay, in an order no period gives away.
    let mut mix = Rng::new(7);
    let units = ["/a/..", "/b/..", "/a\\..", "/%2F..", "/./", "//", "/c"];
    let mut mixed = String::new();
    while mixed.len() < LEN - 8 {
        mixed.push_str(units[mix.below(units.len())]);
    }
    vec![
        ("up-and-down", fill("/a/..")),
        ("slashes", fill("/")),
        ("dot-segments", fill("/.")),
        ("one-octet", rooted("a")),
        ("short-segments", fill("/ab")),
        ("encoded-slashes", fill("/%2F..")),
        ("backslashes", fill("/a\\\\..")),
        ("mixed-units", mixed),
        (
            "nested",
            format!("{}{}", "/a".repeat(LEN / 4), "/..".repeat(LEN / 6)),
        ),
        ("all-backslashes", rooted("\\")),
        ("lower-case-escapes", fill("%5c")),
        ("non-ascii", rooted("é")),
        ("spaces", rooted(" ")),
        ("encoded-dots", fill("/%2e%2e")),
        ("stars", rooted("*")),
        (
            "query-escapes",
            format!("/?{}", "a=%2F&".repeat((LEN - 2) / 6)),
        ),
    ]
}

/// Every synthetic and adversarial shape.
pub fn all() -> Vec<Shape> {
    vec![
        single_group_third_wildcards(),
        two_thousand_crawlers(false),
        two_thousand_crawlers(true),
        many_wildcards(),
        long_patterns(),
        nested_pieces(),
        thousands_of_groups(),
    ]
}

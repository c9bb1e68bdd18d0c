//! Every example in the text of RFC 9309, as a test, and the regressions of the cases the RFC
//! settles that crawlgate once got wrong.
//!
//! Section numbers and figure numbers are the RFC's. Each example is checked with
//! [`Robots::check_exact`] (the protocol's own one-form answer) and, where it matters, with
//! [`Robots::check`] (what the proxy and `crawlgate check` enforce).

use crawlgate::{GroupKind, Reason, Robots};

fn exact(robots: &Robots, agent: &str, url: &str) -> bool {
    robots.check_exact(agent, url).allowed
}

/// §2.2.1: "the product token is ExampleBot" in a User-Agent header; a crawler matches its
/// group case-insensitively.
#[test]
fn section_2_2_1_product_token_and_case() {
    let robots = Robots::parse(b"user-agent: ExampleBot\ndisallow: /\n");
    assert_eq!(
        crawlgate::robots::token::leading_token("ExampleBot/0.1"),
        "ExampleBot"
    );
    assert!(!exact(&robots, "examplebot", "/x"));
    assert!(!exact(&robots, "EXAMPLEBOT/0.1", "/x"));
}

/// §2.2.1, figure 1: groups `a`, `b`, `e`+`f` and an empty `h`.
#[test]
fn section_2_2_1_figure_1_groups() {
    let robots = Robots::parse(
        b"user-agent: a\ndisallow: /c\n\nuser-agent: b\ndisallow: /d\n\nuser-agent: e\n\
          user-agent: f\ndisallow: /g\n\nuser-agent: h\n",
    );
    assert!(!exact(&robots, "a", "/c"));
    assert!(exact(&robots, "a", "/d"));
    assert!(!exact(&robots, "b", "/d"));
    assert!(!exact(&robots, "e", "/g"));
    assert!(!exact(&robots, "f", "/g"));
    assert!(exact(&robots, "f", "/c"));
    let h = robots.check_exact("h", "/c");
    assert_eq!(
        (h.allowed, h.group, h.reason),
        (true, GroupKind::Agent, Reason::NoMatchingRule)
    );
}

/// §2.2.1, figure 2: two groups for one crawler are merged into one.
#[test]
fn section_2_2_1_figure_2_groups_are_merged() {
    let robots = Robots::parse(
        b"user-agent: ExampleBot\ndisallow: /foo\ndisallow: /bar\n\n\
          user-agent: ExampleBot\ndisallow: /baz\n",
    );
    for path in ["/foo", "/bar", "/baz"] {
        assert!(!exact(&robots, "ExampleBot", path), "{path}");
    }
    assert_eq!(
        robots.check_exact("ExampleBot", "/baz").group_lines,
        &[1, 5]
    );
}

/// §2.2.1: with no group of its own, a crawler obeys `*`; with neither, everything is allowed.
#[test]
fn section_2_2_1_star_and_no_group() {
    let robots =
        Robots::parse(b"user-agent: *\ndisallow: /private\n\nuser-agent: foo\ndisallow:\n");
    assert!(!exact(&robots, "AnyBot", "/private"));
    assert!(exact(&robots, "foo", "/private"));
    let none = Robots::parse(b"user-agent: foo\ndisallow: /\n");
    let verdict = none.check_exact("bar", "/");
    assert_eq!((verdict.allowed, verdict.reason), (true, Reason::NoGroup));
}

/// §2.2.2, figure 3 (the longest match wins, allow on a tie) and the implicit allow of
/// `/robots.txt`.
#[test]
fn section_2_2_2_longest_match_and_robots_txt() {
    let robots = Robots::parse(
        b"user-agent: *\nallow: /example/page/\ndisallow: /example/page/disallowed.gif\n\
          allow: /tie\ndisallow: /tie\ndisallow: /\n",
    );
    assert!(exact(&robots, "x", "/example/page/"));
    assert!(exact(&robots, "x", "/example/page/index.html"));
    assert!(!exact(&robots, "x", "/example/page/disallowed.gif"));
    assert!(exact(&robots, "x", "/tie"));
    assert!(!exact(&robots, "x", "/other"));
    let verdict = robots.check_exact("x", "/robots.txt");
    assert_eq!((verdict.allowed, verdict.reason), (true, Reason::RobotsTxt));
}

/// §2.2.2, figure 4: the percent-encoding table. Each row's path and its encoded form match the
/// same rule, whichever of the two the rule is written in.
#[test]
fn section_2_2_2_figure_4_percent_encoding() {
    let rows = [
        ("/foo/bar?baz=quz", "/foo/bar?baz=quz"),
        (
            "/foo/bar?baz=https://foo.bar",
            "/foo/bar?baz=https%3A%2F%2Ffoo.bar",
        ),
        ("/foo/bar/\u{30C4}", "/foo/bar/%E3%83%84"),
        ("/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84"),
        ("/foo/bar/%62%61%7A", "/foo/bar/baz"),
    ];
    for (path, encoded) in rows {
        for rule in [path, encoded] {
            let robots = Robots::parse(format!("user-agent: *\ndisallow: {rule}\n").as_bytes());
            for url in [path, encoded] {
                assert!(!exact(&robots, "x", url), "rule {rule} against {url}");
                assert!(!robots.check("x", url).allowed, "rule {rule} against {url}");
            }
        }
    }
    // Lower-case hex digits are the same escape.
    let robots = Robots::parse(b"user-agent: *\ndisallow: /foo/bar/%e3%83%84\n");
    assert!(!exact(&robots, "x", "/foo/bar/%E3%83%84"));
}

/// §2.2.3, figure 5: `#`, `$` and `*`.
#[test]
fn section_2_2_3_figure_5_special_characters() {
    let robots = Robots::parse(
        b"user-agent: *\ndisallow: / # comment in line\n# comment at the end\n\
          allow: /this/path/exactly$\nallow: /this/*/exactly\n",
    );
    assert!(!exact(&robots, "x", "/"));
    assert!(exact(&robots, "x", "/this/path/exactly"));
    assert!(!exact(&robots, "x", "/this/path/other"));
    assert!(exact(&robots, "x", "/this/a/b/exactly"));
    assert!(exact(&robots, "x", "/this/x/exactly-and-more"));
    assert!(!exact(&robots, "x", "/this/exactly"));
    assert_eq!(robots.file().rules[0].pattern, "/");
}

/// §2.2.3, figure 6: `%2A` and `%24` are the literal `*` and `$`. (crawlgate once read
/// `/path/file-with-a-%2A.html` as never matching `/path/file-with-a-*.html`.)
#[test]
fn section_2_2_3_figure_6_escaped_special_characters() {
    let robots = Robots::parse(
        b"user-agent: *\ndisallow: /path/file-with-a-%2A.html\ndisallow: /path/foo-%24\n",
    );
    for url in [
        "https://www.example.com/path/file-with-a-*.html",
        "/path/file-with-a-%2A.html",
        "/path/file-with-a-%2a.html",
        "https://www.example.com/path/foo-$",
        "/path/foo-%24",
        "/path/foo-$/more",
    ] {
        assert!(!exact(&robots, "x", url), "{url}");
        assert!(!robots.check("x", url).allowed, "{url}");
    }
    // Literal, not a wildcard nor an anchor.
    assert!(exact(&robots, "x", "/path/file-with-a-x.html"));
    assert!(exact(&robots, "x", "/path/foo-"));
}

/// §2.2.4: other records must not interfere with groups: a sitemap or a crawl-delay does not
/// end a group, and the rules after it still belong to it. (crawlgate once let a crawl-delay
/// end the agent run: `BarBot` got a group of its own with no rules.)
#[test]
fn section_2_2_4_other_records_do_not_end_a_group() {
    let robots =
        Robots::parse(b"User-agent: BarBot\nCrawl-delay: 5\nUser-agent: FooBot\nDisallow: /\n");
    for agent in ["BarBot", "FooBot"] {
        let verdict = robots.check_exact(agent, "/x");
        assert!(!verdict.allowed, "{agent}");
        assert_eq!(verdict.group_lines, &[1]);
    }
    assert_eq!(
        robots.crawl_delay("FooBot"),
        Some(std::time::Duration::from_secs(5))
    );
    let robots = Robots::parse(
        b"user-agent: a\nsitemap: https://example.com/sitemap.xml\nuser-agent: b\ndisallow: /x\n",
    );
    assert!(!exact(&robots, "a", "/x"));
    assert_eq!(robots.sitemaps().count(), 1);
}

/// §5.1: the simple example.
#[test]
fn section_5_1_simple_example() {
    let robots = Robots::parse(
        b"User-Agent: *\nDisallow: *.gif$\nDisallow: /example/\nAllow: /publications/\n\n\
          User-Agent: foobot\nDisallow:/\nAllow:/example/page.html\nAllow:/example/allowed.gif\n\n\
          User-Agent: barbot\nUser-Agent: bazbot\nDisallow: /example/page.html\n\n\
          User-Agent: quxbot\n\nEOF\n",
    );
    // `*`: /publications/ allowed, /example/ and any .gif disallowed.
    assert!(exact(&robots, "other", "/publications/x"));
    assert!(!exact(&robots, "other", "/example/x"));
    assert!(!exact(&robots, "other", "/images/x.gif"));
    assert!(!exact(&robots, "other", "x.gif"));
    assert!(exact(&robots, "other", "/images/x.gif?v=1"));
    // foobot: only the two allowed URLs.
    assert!(exact(&robots, "foobot", "/example/page.html"));
    assert!(exact(&robots, "foobot", "/example/allowed.gif"));
    assert!(!exact(&robots, "foobot", "/example/other.html"));
    assert!(!exact(&robots, "foobot", "/"));
    // barbot and bazbot: everything but /example/page.html.
    for agent in ["barbot", "bazbot"] {
        assert!(!exact(&robots, agent, "/example/page.html"), "{agent}");
        assert!(exact(&robots, agent, "/example/other.html"), "{agent}");
        assert!(exact(&robots, agent, "/images/x.gif"), "{agent}");
    }
    // quxbot: an empty group: everything. `EOF` is no rule.
    assert!(exact(&robots, "quxbot", "/example/page.html"));
    assert!(exact(&robots, "quxbot", "/images/x.gif"));
}

/// §5.2: the longest match.
#[test]
fn section_5_2_longest_match() {
    let robots = Robots::parse(
        b"User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n",
    );
    assert!(exact(&robots, "foobot", "/example/page/"));
    assert!(exact(&robots, "foobot", "/example/page/allowed.gif"));
    assert!(!exact(&robots, "foobot", "/example/page/disallowed.gif"));
}

/// §2.5: a parse limit of at least 500 KiB; a file past it is read up to it.
#[test]
fn section_2_5_parse_limit() {
    let mut text = String::from("user-agent: *\n");
    while text.len() < 500 * 1024 {
        text.push_str("disallow: /padding/0123456789/0123456789/0123456789\n");
    }
    text.push_str("disallow: /last\n");
    assert!(!exact(&Robots::parse(text.as_bytes()), "x", "/last"));
}

/// No encoding bypass: a path is judged as sent, as resolved, and with `%2F`, `%5C` and `\`
/// read as separators; the strictest verdict holds. (`/public%2F..%2Fprivate/x` once passed
/// `Disallow: /private/`.)
#[test]
fn encoded_separators_cannot_bypass_a_rule() {
    let robots = Robots::parse(b"user-agent: *\ndisallow: /private/\n");
    for url in [
        "/public%2F..%2Fprivate/x",
        "/public%2f..%2fprivate/x",
        "/public%5C..%5Cprivate%5Cx",
        "/public\\..\\private\\x",
        "/private%2Fx",
        "/public/..%2Fprivate/x",
        "/public/../private/x",
        "//private/x",
    ] {
        let verdict = robots.check("x", url);
        assert!(!verdict.allowed, "{url}");
        assert_eq!(verdict.rule.map(|rule| rule.line), Some(2), "{url}");
    }
    // As sent, RFC 9309 compares `%2F` as the octets it is: the protocol's own answer differs.
    assert!(exact(&robots, "x", "/public%2F..%2Fprivate/x"));
    // In the query, `%2F` is data: nothing to bypass.
    assert!(robots.check("x", "/public?next=%2Fprivate%2Fx").allowed);
}

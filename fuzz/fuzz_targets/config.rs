//! The configuration loader on arbitrary text, offline.
//!
//! `Settings::from_yaml_offline` never resolves a name (no network) and never panics. An error
//! has a message, its `Display` starts with the origin, and its line, when it has one, is within
//! the text. A configuration that loads is valid: at least one site and one listener, site names
//! unique and well formed, hosts unique and at most one catch-all site, block statuses 4xx/5xx,
//! tag prefixes of letters, digits and `-`, parse limits and worker counts above zero, refresh
//! periods of at least a second, and relative paths resolved under the base folder.
#![no_main]

use crawlgate::proxy::config::{RobotsSource, Settings};
use libfuzzer_sys::fuzz_target;
use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

const BASE: &str = "/nonexistent";

/// How many lines libyaml sees in `text`: LF, CR, CRLF, U+0085, U+2028 and U+2029 break lines.
fn yaml_lines(text: &str) -> usize {
    let mut lines = 1;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                chars.next_if_eq(&'\n');
                lines += 1;
            }
            '\n' | '\u{85}' | '\u{2028}' | '\u{2029}' => lines += 1,
            _ => {}
        }
    }
    lines
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Settings::from_yaml_offline(text, "fuzz", Path::new(BASE)) {
        Err(error) => {
            assert!(!error.message.is_empty(), "an error without a message");
            assert_eq!(error.origin, "fuzz");
            let shown = error.to_string();
            assert!(shown.starts_with("fuzz"), "{shown}");
            if let Some(line) = error.line {
                // Lines as YAML (libyaml) counts them, which is how serde_yaml places syntax
                // errors: a lone CR, NEL, LS and PS end a line too, not only LF. It may point
                // just past the last line (an unexpected end).
                let lines = yaml_lines(text);
                assert!(
                    line >= 1 && line <= lines + 1,
                    "error line {line} of {lines}: {error}"
                );
            }
        }
        Ok(settings) => {
            assert!(!settings.sites.is_empty());
            assert!(!settings.listen.is_empty() || !settings.tls_listen.is_empty());
            assert!(settings.pingora.threads >= 1);
            assert!(settings.pingora.listener_tasks_per_fd >= 1);
            assert!(settings.politeness.max_tracked >= 1);
            assert!(settings.verification.dns.cache_size >= 1);
            let mut names = HashSet::new();
            let mut hosts = HashSet::new();
            let mut catch_all = 0;
            for site in &settings.sites {
                assert!(names.insert(site.name.clone()), "duplicate {}", site.name);
                assert!(
                    !site.name.is_empty()
                        && site.name.len() <= 64
                        && site
                            .name
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)),
                    "bad name {:?}",
                    site.name
                );
                if site.hosts.is_empty() {
                    catch_all += 1;
                }
                for host in &site.hosts {
                    assert!(hosts.insert(host.clone()), "duplicate host {host}");
                    assert!(!host.is_empty());
                    assert_eq!(*host, host.to_ascii_lowercase());
                }
                assert!((400..=599).contains(&site.block_status));
                assert!(
                    !site.tag_prefix.is_empty()
                        && site
                            .tag_prefix
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'-'),
                    "bad prefix {:?}",
                    site.tag_prefix
                );
                assert!(site.robots.max_bytes > 0);
                assert!(site.robots.refresh >= Duration::from_secs(1));
                if let RobotsSource::File(path) = &site.robots.source {
                    assert!(path.is_absolute(), "{} is relative", path.display());
                }
                for token in site.bot_actions.keys() {
                    assert_eq!(*token, token.to_ascii_lowercase());
                }
            }
            assert!(catch_all <= 1, "{catch_all} catch-all sites");
            if let Some(catalog) = &settings.catalog {
                assert!(catalog.is_absolute());
            }
            for (_, spec) in &settings.verification.ranges {
                assert!(spec.file.is_absolute());
            }
        }
    }
});

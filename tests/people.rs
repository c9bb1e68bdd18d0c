//! People are never refused: the User-Agents of people's browsers and apps (every people's
//! corpus of `tests/common/people.rs`: uap-core's fixtures, real traffic from the npm package
//! `user-agents`, isbot's browser fixtures) replayed against every robots.txt of the shared
//! corpus of real files (`CRAWLGATE_CORPUS`, else `../shared/corpus/real`, read where it lies;
//! skipped with a note when absent), through the decision the proxy runs: what the proxy
//! gathers (`proxy::decide::gather`, recording politeness state as the proxy does; reverse DNS
//! off, so that no lookup leaves the machine), judged by `judge::judge`, whose answer the proxy
//! writes. One site per file, with the file's own tokens, the default configuration
//! (`action: block`), and the paths each file disallows to some crawler.
//!
//! Each person's header is decided on every site for the first of those paths; when the
//! decision reads it as a crawler, on all of them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use bytes::Bytes;
use crawlgate::judge;
use crawlgate::policy::Outcome;
use crawlgate::proxy::client::Forwarding;
use crawlgate::proxy::config::Settings;
use crawlgate::proxy::decide::{gather, Mode, RequestFacts};
use crawlgate::proxy::metrics::Metrics;
use crawlgate::proxy::site::{Snapshot, SourceState};
use crawlgate::proxy::state::Shared;
use crawlgate::{Robots, RuleKind};
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Paths per file: enough to reach every kind of rule, few enough for a debug build.
const PATHS_PER_FILE: usize = 40;

fn corpus_dir() -> PathBuf {
    match std::env::var_os("CRAWLGATE_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/real"),
    }
}

/// A concrete path a disallow pattern matches: `*` as one letter, without a final `$`.
fn path_of(pattern: &str) -> String {
    let pattern = pattern.strip_suffix('$').unwrap_or(pattern);
    let path = pattern.replace('*', "x");
    if path.starts_with('/') {
        path
    } else {
        format!("/{path}")
    }
}

/// Paths that `robots` disallows to the crawlers of some group: each disallow rule's path, kept
/// when the group's own crawlers are refused it.
fn disallowed_paths(robots: &Robots) -> Vec<String> {
    let file = robots.file();
    let mut paths = BTreeSet::new();
    for group in &file.groups {
        let agent = group.agents.first().map(String::as_str);
        let selected = match agent {
            Some(token) => robots.select(&[token], true),
            None if group.star => robots.select(&[], true),
            None => continue,
        };
        for &rule in &group.rules {
            let Some(rule) = file.rules.get(rule) else {
                continue;
            };
            if rule.kind != RuleKind::Disallow {
                continue;
            }
            let path = path_of(&rule.pattern);
            if !robots.check_selected(selected, &path).allowed {
                paths.insert(path);
            }
        }
    }
    paths.into_iter().take(PATHS_PER_FILE).collect()
}

/// One site per file, each the default configuration with its host, and every category of
/// crawler priced (pay per crawl: a person is never offered a price), its ledger in `state`.
fn config(files: usize, state: &Path) -> String {
    let mut yaml = format!(
        "listen: [\"127.0.0.1:1\"]\nstate_dir: \"{}\"\nsites:\n",
        state.display()
    );
    let prices: Vec<String> = crawlgate::agent::Category::ALL
        .iter()
        .filter(|c| !matches!(c.as_str(), "unlisted" | "unnamed"))
        .map(|c| format!("{c}: \"USD 0.01\""))
        .collect();
    for i in 0..files {
        yaml.push_str(&format!(
            "  - name: f{i}\n    hosts: [\"f{i}.test\"]\n    upstream: \"127.0.0.1:2\"\n    robots: {{inline: \"\"}}\n    pay_per_crawl: {{{}}}\n",
            prices.join(", ")
        ));
    }
    yaml
}

#[test]
fn people_are_never_refused_by_real_robots_txt_files() {
    let dir = corpus_dir();
    if !dir.is_dir() {
        println!(
            "people_are_never_refused_by_real_robots_txt_files: skipped, no corpus folder at {} (set CRAWLGATE_CORPUS)",
            dir.display()
        );
        return;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    let state = tempfile::tempdir().unwrap();
    let settings =
        Settings::from_yaml(&config(files.len(), state.path()), "people", Path::new("/")).unwrap();
    let shared = Shared::new(&settings, Metrics::new().unwrap(), None).unwrap();
    let catalog = shared.catalog.load();
    let mut sites = Vec::new();
    let mut paths_total = 0;
    for (i, file) in files.iter().enumerate() {
        let bytes = std::fs::read(file).unwrap();
        let paths = disallowed_paths(&Robots::parse(&bytes));
        paths_total += paths.len();
        let all = shared.sites.load();
        let site = all.by_name(&format!("f{i}")).unwrap();
        let snapshot = Snapshot::build(
            &site.settings,
            &catalog,
            Bytes::from(bytes),
            SourceState::Loaded,
        )
        .unwrap();
        site.replace(snapshot);
        if !paths.is_empty() {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            sites.push((format!("f{i}.test"), name, paths));
        }
    }
    let people = common::people::people();
    let peer: IpAddr = "198.51.100.7".parse().unwrap();
    // Every person offers to pay, as a crawler would: nobody reads it.
    let mut payment = http::HeaderMap::new();
    payment.insert("crawler-max-price", http::HeaderValue::from_static("USD 1"));
    let refused = Mutex::new(Vec::new());
    // (requests covered, decisions run, decided as a crawler's)
    let tally = Mutex::new((0u64, 0u64, 0u64));
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    let chunk = people.len().div_ceil(workers);
    std::thread::scope(|scope| {
        for part in people.chunks(chunk) {
            let (shared, sites, refused, tally, payment) =
                (&shared, &sites, &refused, &tally, &payment);
            scope.spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let (mut requests, mut decisions, mut judged) = (0u64, 0u64, 0u64);
                let mut found = Vec::new();
                for user_agent in part {
                    for (host, name, paths) in sites {
                        for (n, path) in paths.iter().enumerate() {
                            let facts = RequestFacts {
                                host: Some(host.as_bytes()),
                                path,
                                user_agent: user_agent.as_bytes(),
                                peer: Some(peer),
                                forwarding: Forwarding::Lines(&[]),
                                signature: None,
                                method: "GET",
                                payment_headers: Some(payment),
                            };
                            let mode = Mode {
                                record: true,
                                use_dns: false,
                            };
                            let gathered = runtime.block_on(gather(shared, &facts, mode)).unwrap();
                            let is_crawler = gathered.who.is_crawler();
                            let judgement = judge::judge(
                                &gathered.observed(),
                                &gathered.law(),
                                &gathered.reading,
                                gathered.visit,
                            );
                            requests += 1;
                            decisions += 1;
                            let refused = matches!(
                                judgement.outcome,
                                Outcome::Blocked | Outcome::Throttled | Outcome::PaymentRequired
                            ) || judgement.payment.is_some()
                                || judgement.response.as_ref().is_some_and(|r| r.status >= 400);
                            if refused {
                                found.push(format!(
                                    "{name}: {path} refused to {user_agent} (read as {})",
                                    gathered.judge().bot()
                                ));
                            }
                            if !is_crawler {
                                // A person's decision never looks at the path: the other paths
                                // of this file are decided alike.
                                assert_eq!(n, 0);
                                requests += paths.len() as u64 - 1;
                                break;
                            }
                            judged += 1;
                        }
                    }
                }
                refused.lock().unwrap().extend(found);
                let mut tally = tally.lock().unwrap();
                tally.0 += requests;
                tally.1 += decisions;
                tally.2 += judged;
            });
        }
    });
    let refused = refused.into_inner().unwrap();
    let (requests, decisions, judged) = tally.into_inner().unwrap();
    println!(
        "{} people's User-Agents x {} real robots.txt files, {} disallowed paths: {requests} requests, {decisions} decisions run, {judged} of them decided as crawlers' (HTTP libraries, counted), {} refused",
        people.len(),
        files.len(),
        paths_total,
        refused.len()
    );
    for line in refused.iter().take(20) {
        println!("    {line}");
    }
    assert!(paths_total > 0);
    assert!(refused.is_empty(), "{} people refused", refused.len());
}

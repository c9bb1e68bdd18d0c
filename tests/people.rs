//! People are never refused: the User-Agents of people's browsers and apps (uap-core's fixtures,
//! `tests/fixtures/ua`) replayed against every robots.txt of the shared corpus of real files
//! (`CRAWLGATE_CORPUS`, else `../shared/corpus/real`; skipped with a note when absent), on paths
//! each file disallows to some crawler, with the decision code the proxy runs: the site's
//! crawler table (catalog and the file's own tokens), the groups a crawler obeys, the verdict,
//! and the action under the default configuration.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use crawlgate::agent::Identity;
use crawlgate::catalog::Catalog;
use crawlgate::crawlers::{CatalogIndex, Crawlers};
use crawlgate::policy::{self, Action, Actions, Outcome, Requester, VerdictLabel};
use crawlgate::{Robots, RuleKind};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

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
    let people = common::people::people();
    let index = CatalogIndex::new(Catalog::embedded().unwrap()).unwrap();
    let actions = Actions::for_site(Action::Block);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    let (mut requests, mut refused, mut judged, mut paths_total) = (0u64, Vec::new(), 0u64, 0);
    for file in &files {
        let robots = Robots::parse(&std::fs::read(file).unwrap());
        let crawlers = Crawlers::build(&index, &robots, &actions, &[]).unwrap();
        let paths = disallowed_paths(&robots);
        paths_total += paths.len();
        for user_agent in &people {
            let identity = crawlers.classify(user_agent.as_bytes());
            let Some(crawler) = crawlers.row(&identity) else {
                requests += paths.len() as u64;
                continue;
            };
            for path in &paths {
                requests += 1;
                judged += 1;
                let verdict = robots.check_selected(crawler.selected, path);
                let label = if verdict.allowed {
                    VerdictLabel::Allowed
                } else {
                    VerdictLabel::Disallowed
                };
                if policy::decide(Requester::Crawler, label, crawler.action) == Outcome::Blocked {
                    refused.push(format!(
                        "{}: {path} refused to {user_agent} (read as {})",
                        file.file_name().unwrap().to_string_lossy(),
                        crawler.name
                    ));
                }
            }
            assert!(
                !matches!(identity, Identity::Crawler { agent, .. } if agent.category == crawlgate::agent::Category::Unlisted),
                "{user_agent} read as the site's own token in {}",
                file.display()
            );
        }
    }
    println!(
        "{} people's User-Agents x {} real robots.txt files, {} disallowed paths: {requests} requests, {judged} judged as crawlers' (HTTP libraries, counted), {} refused",
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

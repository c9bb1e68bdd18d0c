//! Classification measured on real, labelled User-Agents nobody working on crawlgate wrote
//! (`tests/fixtures/ua/SOURCE.md`): people's browsers and apps from ua-parser/uap-core's test
//! fixtures, labelled by uap-core itself, and crawlers from monperrus/crawler-user-agents.
//!
//! Prints the rates (`cargo test --test classification -- --nocapture`) and holds the targets:
//! browsers read as crawlers at most 1 in 10,000, apps never refused under the default
//! configuration, at least 90% of crawlers recognised as crawlers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::people::{crawler_instances, is_browser, not_a_person, uap_core, Labelled};
use crawlgate::agent::Identity;
use crawlgate::catalog::{Catalog, EMBEDDED_CATALOG};
use crawlgate::crawlers::{CatalogIndex, Crawlers};
use crawlgate::policy::{Action, Actions};
use crawlgate::Robots;

/// The default configuration's table: the embedded catalog, no site tokens, the site's action
/// `block`, the default per category.
fn table(catalog: Catalog) -> Crawlers {
    let index = CatalogIndex::new(catalog).unwrap();
    let robots = Robots::parse(b"User-agent: *\nDisallow: /\n");
    Crawlers::build(&index, &robots, &Actions::for_site(Action::Block), &[]).unwrap()
}

fn per_10k(part: usize, whole: usize) -> f64 {
    part as f64 * 10_000.0 / whole.max(1) as f64
}

fn percent(part: usize, whole: usize) -> f64 {
    part as f64 * 100.0 / whole.max(1) as f64
}

#[test]
fn classification_rates_on_real_labelled_user_agents() {
    let crawlers = table(Catalog::embedded().unwrap());
    let people = uap_core();
    let relabelled: Vec<(&Labelled, &str)> = people
        .iter()
        .filter(|p| p.label == "person")
        .filter_map(|p| not_a_person(&p.user_agent).map(|why| (p, why)))
        .collect();
    let (browsers, apps): (Vec<&Labelled>, Vec<&Labelled>) = people
        .iter()
        .filter(|p| p.label == "person" && not_a_person(&p.user_agent).is_none())
        .partition(|p| is_browser(&p.user_agent));
    let misread = |list: &[&Labelled]| -> Vec<(String, String)> {
        list.iter()
            .filter_map(|p| {
                let row = crawlers.row(&crawlers.classify(p.user_agent.as_bytes()))?;
                Some((
                    format!("{} ({}, {:?})", row.name, row.category, row.action),
                    format!("[uap-core: {}] {}", p.family, p.user_agent),
                ))
            })
            .collect()
    };
    let browsers_misread = misread(&browsers);
    let apps_misread = misread(&apps);
    let apps_refused: Vec<&(String, String)> = apps_misread
        .iter()
        .filter(|(row, _)| row.ends_with("Block)"))
        .collect();

    let instances = crawler_instances();
    let recognised = |table: &Crawlers, list: &[&str]| {
        list.iter()
            .filter(|ua| table.classify(ua.as_bytes()) != Identity::Person)
            .count()
    };
    let monperrus: Vec<&str> = instances.iter().map(String::as_str).collect();
    let spiders: Vec<&str> = people
        .iter()
        .filter(|p| p.label == "spider")
        .map(|p| p.user_agent.as_str())
        .collect();
    let curated = table(Catalog::from_yaml(EMBEDDED_CATALOG, "curated").unwrap());
    let downloaders = people.iter().filter(|p| p.label == "downloader").count();

    println!("classification on real, labelled User-Agents (tests/fixtures/ua/SOURCE.md)");
    println!(
        "  uap-core people whose own header names a crawler, left out of the people ({}):",
        relabelled.len()
    );
    for (p, why) in &relabelled {
        let row = crawlers
            .row(&crawlers.classify(p.user_agent.as_bytes()))
            .map_or("person".to_owned(), |c| {
                format!("{} ({})", c.name, c.category)
            });
        println!("      {row:<40} {}: {why}", p.user_agent);
    }
    println!(
        "  browsers read as crawlers: {} of {} ({:.2} per 10,000)",
        browsers_misread.len(),
        browsers.len(),
        per_10k(browsers_misread.len(), browsers.len())
    );
    for (row, ua) in &browsers_misread {
        println!("      {row:<40} {ua}");
    }
    println!(
        "  apps read as crawlers: {} of {}; refused under the default configuration: {}",
        apps_misread.len(),
        apps.len(),
        apps_refused.len()
    );
    for (row, ua) in &apps_misread {
        println!("      {row:<40} {ua}");
    }
    let mut rates = Vec::new();
    for (what, list) in [
        ("crawler-user-agents instances", &monperrus),
        ("uap-core spiders", &spiders),
    ] {
        let found = recognised(&crawlers, list);
        println!(
            "  {what} recognised: {found} of {} ({:.1}%); curated catalog and signals alone: {:.1}%",
            list.len(),
            percent(found, list.len()),
            percent(recognised(&curated, list), list.len())
        );
        rates.push(percent(found, list.len()));
    }
    println!("  (uap-core downloaders, HTTP libraries, not counted as people: {downloaders})");
    // `CRAWLGATE_LIST_MISSED=1` lists the crawler headers read as people.
    if std::env::var_os("CRAWLGATE_LIST_MISSED").is_some() {
        for ua in monperrus.iter().chain(&spiders) {
            if crawlers.classify(ua.as_bytes()) == Identity::Person {
                println!("      missed: {ua}");
            }
        }
    }

    assert!(
        per_10k(browsers_misread.len(), browsers.len()) <= 1.0,
        "{} browsers read as crawlers",
        browsers_misread.len()
    );
    assert!(apps_refused.is_empty(), "apps refused: {apps_refused:?}");
    assert!(rates.iter().all(|&rate| rate >= 90.0), "{rates:?}");
}

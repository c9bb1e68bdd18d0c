//! robots.txt files shaped to hurt (`tests/common/shapes.rs`): each compiles with bounded work
//! and memory, and answers as the naive reference does. Their time is measured by
//! `benches/matcher.rs`, not here.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::counting::{self, Counting};
use common::reference::{self, RefFile};
use common::shapes;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The most memory compiling any file within the parse limit may take.
const MEMORY_LIMIT: usize = 256 << 20;

#[test]
fn every_shape_compiles_with_bounded_work_and_memory() {
    for shape in shapes::all() {
        let (robots, peak, retained) = counting::measure(|| crawlgate::Robots::parse(&shape.text));
        let rules = robots.file().rules.len();
        println!(
            "{}: {} KiB, {rules} rules, {} groups, {} compiled rules, peak {:.1} MiB, retained {:.1} MiB",
            shape.name,
            shape.text.len() / 1024,
            robots.file().groups.len(),
            robots.compiled_rules(),
            peak as f64 / 1048576.0,
            retained as f64 / 1048576.0,
        );
        assert!(
            shape.text.len() <= crawlgate::robots::DEFAULT_MAX_BYTES,
            "{}",
            shape.name
        );
        assert!(robots
            .problems()
            .iter()
            .all(|p| p.kind.code() != "past_limit"));
        assert!(peak <= MEMORY_LIMIT, "{}: peak {peak} bytes", shape.name);
        // Each group is compiled once; merged selections are bounded by twice the rules.
        assert!(
            robots.compiled_rules() <= 3 * rules.max(1024),
            "{}: {} rules compiled for {rules}",
            shape.name,
            robots.compiled_rules()
        );
    }
}

#[test]
fn every_shape_answers_as_the_reference_does() {
    for shape in shapes::all() {
        let robots = crawlgate::Robots::parse(&shape.text);
        let reference = RefFile::from_parsed(robots.file());
        // The reference tries every rule with a dynamic programme: a sample of short paths,
        // and the long one with the crawler whose group is cheapest to try.
        let paths: Vec<&String> = shape
            .paths
            .iter()
            .filter(|p| p.len() <= 256)
            .step_by(7)
            .take(40)
            .collect();
        // An adversarial file may make a short path cost more than the work budget (nested
        // pieces: a path of `a`s matches hundreds of pieces at each octet); it is then
        // disallowed by no rule. Any other answer is the reference's.
        let crafted = shape.name.starts_with("adversarial/");
        let mut over = 0;
        for agent in &shape.agents {
            for path in &paths {
                let verdict = robots.check_exact(agent, path);
                if crafted && verdict.reason == crawlgate::Reason::OverBudget {
                    assert!(!verdict.allowed && verdict.rule.is_none());
                    over += 1;
                    continue;
                }
                if let Err(difference) = reference::compare(&robots, &reference, agent, path, path)
                {
                    panic!("{}: {difference}", shape.name);
                }
            }
        }
        let asked = paths.len() * shape.agents.len();
        println!(
            "{}: {over} of {asked} short paths over the budget",
            shape.name
        );
        let long = shape
            .paths
            .iter()
            .max_by_key(|p| p.len())
            .map(String::as_str)
            .unwrap_or("/");
        // Its verdict is its rule's, or, over the work budget, disallowed by none.
        let verdict = robots.check(&shape.agents[0], long);
        let by_rule = verdict
            .rule
            .is_none_or(|r| r.kind == crawlgate::RuleKind::Allow);
        let over = verdict.reason == crawlgate::Reason::OverBudget;
        assert_eq!(
            verdict.allowed,
            by_rule && !over,
            "{}: {:?}",
            shape.name,
            verdict.reason
        );
    }
}

/// The exhaustion shape, named: one group naming 2,000 crawlers over 10,000 rules, then
/// 2,000 small groups for the same crawlers. It once compiled the large group 2,000 times (11 s,
/// 1.1 GB; with wildcards, killed at 2 GiB).
#[test]
fn two_thousand_crawlers_compile_each_group_once() {
    for wildcards in [false, true] {
        let shape = shapes::two_thousand_crawlers(wildcards);
        let robots = crawlgate::Robots::parse(&shape.text);
        assert_eq!(robots.file().groups.len(), 2001);
        assert_eq!(robots.compiled_rules(), 12_000);
        // Each crawler follows its pair of groups: the large one and its own (`Allow: /p0/` for
        // the first crawler, which wins the tie with `Disallow: /p0/`).
        let first = &shape.agents[0];
        let verdict = robots.check_exact(first, "/p10/x.pdf");
        assert!(!verdict.allowed);
        assert_eq!(verdict.group_lines.len(), 2);
        let own = if wildcards { "/p0/x.html" } else { "/p0/x" };
        assert!(robots.check_exact(first, own).allowed);
        assert!(robots.check_exact("crawlgate-test", "/p10/x.pdf").allowed);
    }
}

//! The operators' view in `conf/`: the Prometheus rules pass `promtool check rules` and their
//! unit tests, which cover every rule and alert; every metric the rules and the Grafana
//! dashboard query is one crawlgate exports (or a recording rule); and a real Prometheus,
//! scraping a real crawlgate and loading the rules, answers the expected series.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use crawlgate::proxy::metrics::METRIC_NAMES;
use harness::{client, free_port, get, wait_for, Origin, ProxyBuilder, FIREFOX, GOOGLEBOT, GPTBOT};
use serde_json::Value as Json;
use serde_yaml::Value as Yaml;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const RULES: &str = "conf/prometheus/crawlgate.rules.yml";
const DASHBOARD: &str = "conf/grafana/crawlgate-dashboard.json";

fn crate_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// A program on the PATH (Debian's `prometheus` package installs both in /usr/bin), if any.
fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// Says why a test skips, on the real standard error (not captured by the test harness), so
/// that a skip shows in every `cargo test` run.
fn skip(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
}

fn read_yaml(path: &Path) -> Yaml {
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn seq(value: &Yaml) -> &[Yaml] {
    value.as_sequence().map_or(&[], Vec::as_slice)
}

/// A recording rule or an alert of the rules file.
#[derive(Debug)]
struct Rule {
    name: String,
    expr: String,
    alert: bool,
}

fn rules() -> Vec<Rule> {
    let doc = read_yaml(&crate_path(RULES));
    let mut rules = Vec::new();
    for group in seq(&doc["groups"]) {
        for rule in seq(&group["rules"]) {
            let (name, alert) = match (rule["record"].as_str(), rule["alert"].as_str()) {
                (Some(record), None) => (record, false),
                (None, Some(alert)) => (alert, true),
                _ => panic!("a rule is a record or an alert: {rule:?}"),
            };
            let expr = rule["expr"]
                .as_str()
                .unwrap_or_else(|| panic!("{name}: no expr"));
            rules.push(Rule {
                name: name.to_owned(),
                expr: expr.to_owned(),
                alert,
            });
        }
    }
    assert!(!rules.is_empty(), "{RULES} has no rules");
    rules
}

fn recording_rule_names() -> BTreeSet<String> {
    rules()
        .into_iter()
        .filter(|r| !r.alert)
        .map(|r| r.name)
        .collect()
}

/// `conf/prometheus/*.test.yml`, sorted.
fn rule_test_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(crate_path("conf/prometheus"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(".test.yml"))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no conf/prometheus/*.test.yml");
    files
}

// ---------------------------------------------------------------------------------------------
// Metric names in PromQL.

/// Keywords that are not metric names when not followed by a parenthesis.
const KEYWORDS: &[&str] = &[
    "and",
    "or",
    "unless",
    "offset",
    "bool",
    "inf",
    "nan",
    "atan2",
    "group_left",
    "group_right",
];

/// Keywords followed by a parenthesised list of label names.
const GROUPING: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];

/// The index just past the string literal that starts at `start`.
fn skip_string(chars: &[char], start: usize) -> usize {
    let quote = chars[start];
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' if quote != '`' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    panic!(
        "unterminated string in {:?}",
        chars.iter().collect::<String>()
    )
}

/// The index just past the bracket closing the one at `start` (strings inside skipped).
fn skip_bracket(chars: &[char], start: usize, close: char) -> usize {
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '"' | '\'' | '`' => i = skip_string(chars, i),
            c if c == close => return i + 1,
            _ => i += 1,
        }
    }
    panic!(
        "unbalanced {close:?} in {:?}",
        chars.iter().collect::<String>()
    )
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// The metric names a PromQL expression reads: identifiers that are not functions, keywords,
/// label names (in matchers and grouping lists), strings, numbers, durations or Grafana
/// variables.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut names = BTreeSet::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' || c == '`' {
            i = skip_string(&chars, i);
        } else if c == '{' {
            i = skip_bracket(&chars, i, '}');
        } else if c == '[' {
            i = skip_bracket(&chars, i, ']');
        } else if c == '#' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '$' {
            i += 1;
            if chars.get(i) == Some(&'{') {
                i = skip_bracket(&chars, i, '}');
            } else {
                while i < chars.len() && is_ident(chars[i]) {
                    i += 1;
                }
            }
        } else if c.is_ascii_digit() || c == '.' {
            // A number or a duration (`30m`, `6h30m`, `1e3`).
            while i < chars.len() && (is_ident(chars[i]) || chars[i] == '.') {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len() && is_ident(chars[i]) {
                i += 1;
            }
            let ident: String = chars[start..i].iter().collect();
            let mut next = i;
            while next < chars.len() && chars[next].is_whitespace() {
                next += 1;
            }
            let lower = ident.to_ascii_lowercase();
            let word: String = chars[next..]
                .iter()
                .take_while(|c| is_ident(**c))
                .collect::<String>()
                .to_ascii_lowercase();
            if word == "by" || word == "without" {
                // An aggregation with its grouping first: `sum by (site) (...)`.
            } else if chars.get(next) == Some(&'(') {
                if GROUPING.contains(&lower.as_str()) {
                    i = skip_bracket(&chars, next, ')');
                }
                // Otherwise a function call: its arguments are read next.
            } else if !KEYWORDS.contains(&lower.as_str()) {
                names.insert(ident);
            }
        } else {
            i += 1;
        }
    }
    names
}

/// The metric names a Grafana template variable's query reads: `label_values(SELECTOR,
/// LABEL)` reads SELECTOR's; `label_values(LABEL)` none; anything else is PromQL.
fn variable_metric_names(query: &str) -> BTreeSet<String> {
    let query = query.trim();
    let Some(inner) = query
        .strip_prefix("label_values(")
        .and_then(|rest| rest.strip_suffix(')'))
    else {
        return metric_names(query);
    };
    match inner.rfind(',') {
        Some(comma) => metric_names(&inner[..comma]),
        None => BTreeSet::new(),
    }
}

#[test]
fn metric_names_are_told_from_functions_labels_and_keywords() {
    let expr = r#"sum by (site, bot) (
          rate(crawlgate_requests_total{site=~"$site", verdict="x}"}[$__range] offset 30m)
        )
        / on (site) group_left (bot) site:crawlgate_compliance:ratio5m > 0.1
        and on () count(crawlgate_unknown_host_requests_total offset 6h30m)
        or vector(0) # crawlgate_comment
        unless time() - crawlgate_robots_rules > bool 1e3"#;
    let found: Vec<String> = metric_names(expr).into_iter().collect();
    assert_eq!(
        found,
        [
            "crawlgate_requests_total",
            "crawlgate_robots_rules",
            "crawlgate_unknown_host_requests_total",
            "site:crawlgate_compliance:ratio5m",
        ]
    );
    let found: Vec<String> = variable_metric_names(
        r#"label_values(crawlgate_requests_total{site=~"$site", category!="person"}, bot)"#,
    )
    .into_iter()
    .collect();
    assert_eq!(found, ["crawlgate_requests_total"]);
    assert!(variable_metric_names("label_values(site)").is_empty());
}

// ---------------------------------------------------------------------------------------------
// The rules and their unit tests.

#[test]
fn promtool_checks_the_rules_and_runs_their_unit_tests() {
    let Some(promtool) = find_program("promtool") else {
        skip(
            "promtool is not installed (Debian package `prometheus`): \
             the Prometheus rules were not checked",
        );
        return;
    };
    let output = Command::new(&promtool)
        .args(["check", "rules"])
        .arg(crate_path(RULES))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "promtool check rules:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let output = Command::new(&promtool)
        .args(["test", "rules"])
        .args(rule_test_files())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "promtool test rules:\n{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("SUCCESS"), "{stdout}");
}

#[test]
fn the_unit_tests_cover_every_rule_and_every_alert_firing_and_not() {
    let mut tested_exprs = Vec::new();
    // alert name -> (a test where it does not fire, a test where it fires)
    let mut alert_tests: BTreeMap<String, (bool, bool)> = BTreeMap::new();
    for file in rule_test_files() {
        let doc = read_yaml(&file);
        for test in seq(&doc["tests"]) {
            for case in seq(&test["promql_expr_test"]) {
                tested_exprs.push(case["expr"].as_str().unwrap().to_owned());
            }
            for case in seq(&test["alert_rule_test"]) {
                let name = case["alertname"].as_str().unwrap().to_owned();
                let fires = !seq(&case["exp_alerts"]).is_empty();
                let entry = alert_tests.entry(name).or_default();
                if fires {
                    entry.1 = true;
                } else {
                    entry.0 = true;
                }
            }
        }
    }
    let tested: BTreeSet<String> = tested_exprs.iter().flat_map(|e| metric_names(e)).collect();
    for rule in rules() {
        if rule.alert {
            let (silent, fires) = alert_tests.get(&rule.name).copied().unwrap_or_default();
            assert!(fires, "no unit test where {} fires", rule.name);
            assert!(silent, "no unit test where {} does not fire", rule.name);
        } else {
            assert!(
                tested.contains(&rule.name),
                "no promql_expr_test reads {}",
                rule.name
            );
        }
    }
    let alerts: BTreeSet<String> = rules()
        .into_iter()
        .filter(|r| r.alert)
        .map(|r| r.name)
        .collect();
    for name in alert_tests.keys() {
        assert!(alerts.contains(name), "the unit tests test no alert {name}");
    }
}

#[test]
fn rules_follow_the_naming_convention_and_read_only_exported_metrics() {
    let known: BTreeSet<&str> = METRIC_NAMES.iter().copied().collect();
    let records = recording_rule_names();
    let mut used = BTreeSet::new();
    for rule in rules() {
        if rule.alert {
            assert!(
                rule.name.starts_with("Crawlgate"),
                "alert {} is not named Crawlgate…",
                rule.name
            );
        } else {
            // level:metric:operations, the metric being crawlgate's.
            let parts: Vec<&str> = rule.name.split(':').collect();
            assert!(
                parts.len() == 3
                    && parts.iter().all(|p| !p.is_empty())
                    && parts[1].starts_with("crawlgate_"),
                "recording rule {} is not level:crawlgate_metric:operations",
                rule.name
            );
        }
        let names = metric_names(&rule.expr);
        assert!(!names.is_empty(), "{} reads no metric", rule.name);
        for name in names {
            assert!(
                known.contains(name.as_str()) || records.contains(&name),
                "{} reads {name}, which crawlgate does not export",
                rule.name
            );
            used.insert(name);
        }
    }
    for (name, _) in dashboard_queries() {
        used.extend(metric_names(&name));
    }
    for record in &records {
        assert!(
            used.contains(record),
            "recording rule {record} is used by no alert, rule or dashboard panel"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The dashboard.

fn dashboard() -> Json {
    let text = std::fs::read_to_string(crate_path(DASHBOARD)).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{DASHBOARD}: {e}"))
}

/// Every panel, rows' nested panels included.
fn panels(dashboard: &Json) -> Vec<Json> {
    let mut all = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        all.push(panel.clone());
        if let Some(nested) = panel["panels"].as_array() {
            all.extend(nested.iter().cloned());
        }
    }
    all
}

/// Every PromQL query of the dashboard's panels, with its panel's title.
fn dashboard_queries() -> Vec<(String, String)> {
    let mut queries = Vec::new();
    for panel in panels(&dashboard()) {
        let title = panel["title"].as_str().unwrap_or_default().to_owned();
        for target in panel["targets"].as_array().into_iter().flatten() {
            if let Some(expr) = target["expr"].as_str() {
                queries.push((expr.to_owned(), title.clone()));
            }
        }
    }
    queries
}

/// The query texts of the dashboard's query variables (`query`, string or object, and
/// `definition`).
fn variable_queries(dashboard: &Json) -> Vec<(String, String)> {
    let mut queries = Vec::new();
    for variable in dashboard["templating"]["list"].as_array().unwrap() {
        if variable["type"] != "query" {
            continue;
        }
        let name = variable["name"].as_str().unwrap().to_owned();
        let query = &variable["query"];
        for text in [
            query.as_str(),
            query["query"].as_str(),
            variable["definition"].as_str(),
        ]
        .into_iter()
        .flatten()
        {
            queries.push((text.to_owned(), name.clone()));
        }
    }
    queries
}

fn is_datasource_variable(value: &Json) -> bool {
    match value {
        Json::String(s) => s == "$datasource" || s == "${datasource}",
        Json::Object(_) => value["uid"] == "${datasource}" || value["uid"] == "$datasource",
        _ => false,
    }
}

/// Every string in a JSON document.
fn strings(value: &Json, out: &mut Vec<String>) {
    match value {
        Json::String(s) => out.push(s.clone()),
        Json::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Json::Object(map) => map.iter().for_each(|(k, v)| {
            out.push(k.clone());
            strings(v, out);
        }),
        _ => {}
    }
}

#[test]
fn the_dashboard_queries_only_exported_metrics_and_recording_rules() {
    let dashboard = dashboard();
    let known: BTreeSet<&str> = METRIC_NAMES.iter().copied().collect();
    let records = recording_rule_names();
    let check = |name: &str, source: &str| {
        assert!(
            known.contains(name) || records.contains(name),
            "{source} reads {name}, which is neither a metric crawlgate exports nor a \
             recording rule of {RULES}"
        );
    };
    let queries = dashboard_queries();
    assert!(queries.len() >= 20, "{} queries", queries.len());
    let mut read = BTreeSet::new();
    for (expr, title) in &queries {
        let names = metric_names(expr);
        assert!(!names.is_empty(), "panel {title:?}: {expr} reads no metric");
        for name in names {
            check(&name, &format!("panel {title:?}"));
            read.insert(name);
        }
    }
    let variables = variable_queries(&dashboard);
    assert!(!variables.is_empty());
    for (query, variable) in &variables {
        for name in variable_metric_names(query) {
            check(&name, &format!("variable {variable:?}"));
        }
    }
    // The panels the issue asks for read what they show.
    for wanted in [
        "site_bot:crawlgate_compliance:ratio5m",
        "site_action:crawlgate_requests_disallowed:rate5m",
        "site_verified:crawlgate_requests:rate5m",
        "crawlgate_robots_reloads_total",
        "crawlgate_robots_last_reload_timestamp_seconds",
        "crawlgate_robots_rules",
        "crawlgate_robots_problems",
        "crawlgate_robots_info",
        "site_kind:crawlgate_upstream_errors:rate5m",
        "site_bot_action:crawlgate_crawl_delay_exceeded:rate5m",
        "site_bot:crawlgate_requests_without_robots_fetch:rate5m",
    ] {
        assert!(read.contains(wanted), "no panel reads {wanted}");
    }
}

#[test]
fn every_dashboard_panel_has_a_title_and_the_datasource_variable() {
    let dashboard = dashboard();
    assert_eq!(dashboard["uid"], "crawlgate-compliance");
    assert!(dashboard["title"].as_str().is_some_and(|t| !t.is_empty()));
    let schema = dashboard["schemaVersion"].as_u64().unwrap();
    assert!((36..=41).contains(&schema), "schemaVersion {schema}");
    assert!(dashboard["id"].is_null(), "an exported dashboard has no id");

    let variables = dashboard["templating"]["list"].as_array().unwrap();
    let variable = |name: &str| {
        variables
            .iter()
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("no {name} variable"))
    };
    let datasource = variable("datasource");
    assert_eq!(datasource["type"], "datasource");
    assert_eq!(datasource["query"], "prometheus");
    let site = variable("site");
    assert_eq!(site["type"], "query");
    assert_eq!(
        site["definition"],
        "label_values(crawlgate_requests_total, site)"
    );
    assert!(is_datasource_variable(&site["datasource"]));

    let mut ids = BTreeSet::new();
    let all = panels(&dashboard);
    assert!(all.len() >= 20, "{} panels", all.len());
    for panel in &all {
        let title = panel["title"].as_str().unwrap_or_default();
        assert!(!title.trim().is_empty(), "a panel has no title: {panel}");
        assert!(
            is_datasource_variable(&panel["datasource"]),
            "panel {title:?} does not use the $datasource variable"
        );
        for target in panel["targets"].as_array().into_iter().flatten() {
            assert!(
                is_datasource_variable(&target["datasource"]),
                "a query of panel {title:?} does not use the $datasource variable"
            );
        }
        let id = panel["id"].as_u64().unwrap();
        assert!(ids.insert(id), "panel id {id} is used twice");
        let grid = &panel["gridPos"];
        let (x, w) = (grid["x"].as_u64().unwrap(), grid["w"].as_u64().unwrap());
        assert!(w > 0 && x + w <= 24, "panel {title:?} is outside the grid");
        assert!(grid["h"].as_u64().unwrap() > 0);
    }

    // Nothing links out of the dashboard.
    assert!(dashboard["links"].as_array().is_none_or(Vec::is_empty));
    let mut texts = Vec::new();
    strings(&dashboard, &mut texts);
    for text in texts {
        assert!(
            !text.contains("http://") && !text.contains("https://"),
            "external link in the dashboard: {text}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// End to end: a real Prometheus scraping a real crawlgate.

/// One series of an instant query's answer: its labels and value.
type Sample = (BTreeMap<String, String>, f64);

/// A Prometheus server on loopback, killed on drop.
struct Prometheus {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(binary: &Path, target: u16) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        let rules = crate_path(RULES);
        std::fs::write(
            &config,
            format!(
                "global: {{scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}}\n\
                 rule_files: [{:?}]\n\
                 scrape_configs:\n\
                 \x20 - job_name: crawlgate\n\
                 \x20   static_configs: [{{targets: [\"127.0.0.1:{target}\"]}}]\n",
                rules.display().to_string()
            ),
        )
        .unwrap();
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut prometheus = Prometheus { child, port, dir };
        wait_for("Prometheus to be ready", || {
            if let Ok(Some(status)) = prometheus.child.try_wait() {
                panic!("prometheus exited with {status}:\n{}", prometheus.log());
            }
            let url = format!("http://127.0.0.1:{}/-/ready", prometheus.port);
            let ready = client()
                .get(url)
                .send()
                .is_ok_and(|r| r.status().is_success());
            ready.then_some(())
        });
        prometheus
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// GET an API path; the `data` of a successful answer, else the error text.
    fn api(&self, path_and_query: &str) -> Result<Json, String> {
        let url = format!("http://127.0.0.1:{}{path_and_query}", self.port);
        let response = client().get(url).send().map_err(|e| e.to_string())?;
        let text = response.text().map_err(|e| e.to_string())?;
        let body: Json = serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))?;
        if body["status"] == "success" {
            Ok(body["data"].clone())
        } else {
            Err(format!("{}: {}", body["errorType"], body["error"]))
        }
    }

    /// An instant query: each series' labels and value.
    fn query(&self, promql: &str) -> Result<Vec<Sample>, String> {
        let data = self.api(&format!("/api/v1/query?query={}", encode(promql)))?;
        let mut series = Vec::new();
        for item in data["result"].as_array().into_iter().flatten() {
            let labels = item["metric"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                .collect();
            let value = item["value"][1].as_str().unwrap().parse().unwrap();
            series.push((labels, value));
        }
        Ok(series)
    }

    /// An instant query's values keyed by one label; panics on an error.
    fn values_by(&self, promql: &str, label: &str) -> BTreeMap<String, f64> {
        let series = self
            .query(promql)
            .unwrap_or_else(|e| panic!("{promql}: {e}"));
        series
            .into_iter()
            .map(|(labels, value)| (labels.get(label).cloned().unwrap_or_default(), value))
            .collect()
    }

    /// Polls `promql` until `done` holds for its values by `label`, and returns them.
    fn wait_values(
        &self,
        what: &str,
        promql: &str,
        label: &str,
        done: impl Fn(&BTreeMap<String, f64>) -> bool,
    ) -> BTreeMap<String, f64> {
        let mut last = None;
        wait_for(what, || {
            let values = self.values_by(promql, label);
            if last.as_ref() != Some(&values) {
                // What Prometheus answered, in the test's output should the wait time out.
                eprintln!("{what}: {promql} -> {values:?}");
                last = Some(values.clone());
            }
            done(&values).then_some(values)
        })
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- prometheus log\n{}", self.log());
        }
    }
}

/// Percent-encodes a query parameter.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

const ROBOTS: &str = "User-agent: GPTBot\nDisallow: /\n\nUser-agent: *\nDisallow: /private/\n";

#[test]
fn prometheus_scrapes_crawlgate_and_evaluates_the_rules() {
    let Some(binary) = find_program("prometheus") else {
        skip(
            "prometheus is not installed (Debian package `prometheus`): \
             the end-to-end test with a real Prometheus did not run",
        );
        return;
    };
    let origin = Origin::start();
    origin.set_robots(200, ROBOTS, Duration::ZERO);
    let template = format!(
        r#"listen: ["{{listen}}"]
metrics: {{listen: "{{metrics}}"}}
pingora: {{threads: 1, grace_period_seconds: 1}}
sites:
  - name: files
    hosts: [files.test]
    upstream: "{origin}"
    robots: {{file: robots.txt}}
    action: block
  - name: fetched
    hosts: [fetched.test]
    upstream: "{origin}"
    robots: {{origin: true, refresh: 1s, timeout: 2s}}
    action: count
"#,
        origin = origin.addr
    );
    let proxy = ProxyBuilder::new(&template)
        .file("robots.txt", ROBOTS)
        .start();
    let prometheus = Prometheus::start(&binary, proxy.metrics_port);
    wait_for("the origin's robots.txt", || {
        proxy.metric(r#"crawlgate_robots_reloads_total{result="ok",site="fetched"}"#)
    });

    // Each request twice, Prometheus scraping in between, so that rates are not zero.
    let traffic = || {
        let files = Some("files.test");
        assert_eq!(get(&proxy.url("/"), GPTBOT, files).0, 403);
        assert_eq!(get(&proxy.url("/robots.txt"), GPTBOT, files).0, 200);
        assert_eq!(get(&proxy.url("/blog"), GOOGLEBOT, files).0, 200);
        assert_eq!(get(&proxy.url("/private/x"), FIREFOX, files).0, 200);
        assert_eq!(
            get(&proxy.url("/blog"), GPTBOT, Some("fetched.test")).0,
            200
        );
    };
    // One value per site/bot/verdict/action, whatever `verified` says.
    let by_request = r#"sum by (request) (label_join(
        crawlgate_requests_total, "request", "/", "site", "bot", "verdict", "action"
    ))"#;
    let expected = |n: f64| -> BTreeMap<String, f64> {
        [
            "files/GPTBot/disallowed/blocked",
            "files/GPTBot/exempt/forwarded",
            "files/Googlebot/allowed/forwarded",
            "files/person/exempt/forwarded",
            "fetched/GPTBot/disallowed/counted",
        ]
        .into_iter()
        .map(|k| (k.to_owned(), n))
        .collect()
    };
    traffic();
    prometheus.wait_values("the first requests", by_request, "request", |v| {
        *v == expected(1.0)
    });
    traffic();
    prometheus.wait_values("the second requests", by_request, "request", |v| {
        *v == expected(2.0)
    });
    let fetches = prometheus.values_by(r#"crawlgate_robots_fetches_total{site="files"}"#, "bot");
    assert_eq!(fetches, BTreeMap::from([("GPTBot".to_owned(), 2.0)]));
    let refresh = prometheus.values_by("crawlgate_robots_refresh_seconds", "site");
    assert_eq!(refresh, BTreeMap::from([("fetched".to_owned(), 1.0)]));
    let states = prometheus.values_by(
        r#"sum by (state) (crawlgate_robots_info{site=~"files|fetched"})"#,
        "state",
    );
    assert_eq!(states, BTreeMap::from([("loaded".to_owned(), 2.0)]));

    // The recording rules, evaluated by Prometheus from the rules file: GPTBot made only
    // disallowed requests (its robots.txt fetches are exempt), Googlebot only allowed ones.
    let compliance = prometheus.wait_values(
        "the compliance recording rule",
        r#"site_bot:crawlgate_compliance:ratio5m{site="files"}"#,
        "bot",
        |v| v.len() == 2,
    );
    assert_eq!(
        compliance,
        BTreeMap::from([("GPTBot".to_owned(), 0.0), ("Googlebot".to_owned(), 1.0)])
    );
    let site = prometheus.wait_values(
        "the per-site compliance",
        "site:crawlgate_compliance:ratio5m",
        "site",
        |v| v.len() == 2,
    );
    assert!(site["files"] > 0.0 && site["files"] < 1.0, "{site:?}");
    assert_eq!(site["fetched"], 0.0, "{site:?}");
    let actions = prometheus.wait_values(
        "the disallowed requests by action",
        "site_action:crawlgate_requests_disallowed:rate5m",
        "action",
        |v| v.len() == 2,
    );
    assert!(
        actions["blocked"] > 0.0 && actions["counted"] > 0.0,
        "{actions:?}"
    );
    let blocked = prometheus.wait_values(
        "the blocked rate",
        "site_bot:crawlgate_requests_blocked:rate5m",
        "bot",
        |v| !v.is_empty(),
    );
    assert_eq!(blocked.keys().collect::<Vec<_>>(), ["GPTBot"]);
    assert!(blocked["GPTBot"] > 0.0);

    // Every rule Prometheus loaded evaluates without error.
    let names: BTreeSet<String> = rules().into_iter().map(|r| r.name).collect();
    let mut loaded = BTreeSet::new();
    wait_for("every rule to be evaluated", || {
        let data = prometheus.api("/api/v1/rules").unwrap();
        loaded.clear();
        let mut unevaluated = 0;
        for group in data["groups"].as_array().unwrap() {
            for rule in group["rules"].as_array().unwrap() {
                let name = rule["name"].as_str().unwrap();
                loaded.insert(name.to_owned());
                match rule["health"].as_str().unwrap() {
                    "ok" => {}
                    "unknown" => unevaluated += 1,
                    other => panic!("rule {name} is {other}: {}", rule["lastError"]),
                }
            }
        }
        (unevaluated == 0).then_some(())
    });
    assert_eq!(loaded, names);

    // Every dashboard query is valid PromQL for this Prometheus, and the site variable lists
    // the sites.
    for (expr, title) in dashboard_queries() {
        let expr = expr
            .replace("$site", ".*")
            .replace("$bot", ".*")
            .replace("$__range", "1h")
            .replace("$__rate_interval", "1m")
            .replace("$__interval", "15s");
        if let Err(e) = prometheus.query(&expr) {
            panic!("panel {title:?}: {expr}: {e}");
        }
    }
    let sites = prometheus
        .api(&format!(
            "/api/v1/label/site/values?{}={}",
            encode("match[]"),
            encode("crawlgate_requests_total")
        ))
        .unwrap();
    assert_eq!(sites, serde_json::json!(["fetched", "files"]));
    let (violators, _) = dashboard_queries()
        .into_iter()
        .find(|(_, title)| title == "Top violators")
        .unwrap();
    let violators = violators
        .replace("$site", "files")
        .replace("$bot", ".*")
        .replace("$__range", "1h");
    let top = prometheus.values_by(&violators, "bot");
    assert_eq!(top.keys().collect::<Vec<_>>(), ["GPTBot"], "{top:?}");
    assert!(top["GPTBot"] > 0.0, "{top:?}");
}

/// `CrawlgateRobotsTxtStale` reads `crawlgate_robots_last_reload_timestamp_seconds` as the
/// last successful load, changed or not: a robots.txt that the origin serves unchanged must
/// move it forward at every refresh, or the alert fires for every healthy site.
#[test]
fn an_unchanged_robots_txt_moves_the_last_reload_timestamp() {
    let origin = Origin::start();
    origin.set_robots(200, ROBOTS, Duration::ZERO);
    let template = format!(
        r#"listen: ["{{listen}}"]
metrics: {{listen: "{{metrics}}"}}
pingora: {{threads: 1, grace_period_seconds: 1}}
sites:
  - name: fetched
    upstream: "{}"
    robots: {{origin: true, refresh: 1s, timeout: 2s}}
"#,
        origin.addr
    );
    let proxy = ProxyBuilder::new(&template).start();
    let unchanged = r#"crawlgate_robots_reloads_total{result="unchanged",site="fetched"}"#;
    let last = r#"crawlgate_robots_last_reload_timestamp_seconds{site="fetched"}"#;
    // Once the file is in force and has been found unchanged, note the time...
    let seen = wait_for("an unchanged reload", || proxy.metric(unchanged));
    let after = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    // ...then two more unchanged reloads later, the timestamp must be past it.
    wait_for("two more unchanged reloads", || {
        proxy.metric(unchanged).filter(|n| *n >= seen + 2.0)
    });
    let loaded = proxy.metric(last).unwrap();
    assert!(
        loaded >= after,
        "{last} is {loaded}, from before unchanged reloads at {after} and later: \
         CrawlgateRobotsTxtStale would fire for a healthy site\n{}",
        proxy.metrics()
    );
}

//! Reload under load, at a small scale: while clients keep requesting, robots.txt is rewritten
//! every 20 ms, by rename and in place, in bursts. No request fails, none gets a verdict from a
//! half-written file, reloads happen while the load runs, and replaced snapshots are freed.
//!
//! Every complete version of the file ends with `Disallow: /private/` after a long padding, so a
//! half-written file is one without that rule: a `/private/` request that is not refused would
//! prove that one was read.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use harness::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A complete version: `Disallow: /a/` or `/b/` on top, padding, `Disallow: /private/` last.
fn version(top: &str) -> String {
    let mut text = format!("User-agent: *\nDisallow: /{top}/\n");
    for i in 0..3000 {
        text.push_str(&format!(
            "# padding line {i:05} so that writes take a while\n"
        ));
    }
    text.push_str("Disallow: /private/\n");
    text
}

#[test]
fn rewrites_under_load_never_serve_a_half_written_file() {
    let origin = Origin::start();
    let template = format!(
        r#"listen: ["{{listen}}"]
metrics: {{listen: "{{metrics}}"}}
pingora: {{threads: 2}}
sites:
  - name: site
    upstream: "{}"
    robots: {{file: robots.txt}}
"#,
        origin.addr
    );
    let proxy = ProxyBuilder::new(&template)
        .file("robots.txt", version("a"))
        .start();
    let stop = Arc::new(AtomicBool::new(false));
    let outcomes: Arc<Mutex<HashMap<(String, u16), u64>>> = Arc::default();
    let failures: Arc<Mutex<Vec<String>>> = Arc::default();

    let clients: Vec<_> = (0..3)
        .map(|n| {
            let (stop, outcomes, failures) = (stop.clone(), outcomes.clone(), failures.clone());
            let base = proxy.url("");
            std::thread::spawn(move || {
                let http = client();
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let path = ["/private/x", "/a/x", "/b/x", "/c/x"][((i + n) % 4) as usize];
                    match http
                        .get(format!("{base}{path}"))
                        .header("user-agent", GOOGLEBOT)
                        .send()
                    {
                        Ok(response) => {
                            let status = response.status().as_u16();
                            *outcomes
                                .lock()
                                .unwrap()
                                .entry((path.to_owned(), status))
                                .or_default() += 1;
                        }
                        Err(e) => failures.lock().unwrap().push(format!("{path}: {e}")),
                    }
                }
            })
        })
        .collect();

    // Bursts of rewrites every 20 ms, alternating rename and in-place writes and the two
    // versions, with pauses in which the file holds still long enough to be reloaded.
    let file = proxy.path("robots.txt");
    let (a, b) = (version("a"), version("b"));
    let start = Instant::now();
    let mut writes = 0u32;
    for burst in 0..4 {
        for step in 0..10u32 {
            // Bursts end on `a`, `b`, `a`, `b`: each pause has a new version to load.
            let text = if (burst + step) % 2 == 0 { &b } else { &a };
            if step % 2 == 0 {
                write_atomically(&file, text.as_bytes());
            } else {
                std::fs::write(&file, text).unwrap();
            }
            writes += 1;
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(700));
    }
    // After the storm, a final version is in force within the usual delay.
    write_atomically(&file, b.as_bytes());
    wait_for("the last version", || {
        let blocked_b = get(&proxy.url("/b/x"), GOOGLEBOT, None).0 == 403;
        let allowed_a = get(&proxy.url("/a/x"), GOOGLEBOT, None).0 == 200;
        (blocked_b && allowed_a).then_some(())
    });
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.join().unwrap();
    }
    let elapsed = start.elapsed();

    let failures = failures.lock().unwrap();
    assert!(failures.is_empty(), "requests failed: {failures:?}");
    let outcomes = outcomes.lock().unwrap();
    let total: u64 = outcomes.values().sum();
    assert!(
        total > 100,
        "too little load to mean anything: {outcomes:?}"
    );
    for ((path, status), count) in outcomes.iter() {
        match (path.as_str(), status) {
            ("/private/x", 403) | ("/c/x", 200) | ("/a/x" | "/b/x", 200 | 403) => {}
            _ => panic!(
                "{count} × {path} → {status}: a verdict no complete file gives ({outcomes:?})"
            ),
        }
    }
    let metrics = proxy.metrics();
    let reloads = metric_value(
        &metrics,
        r#"crawlgate_robots_reloads_total{result="ok",site="site"}"#,
    )
    .unwrap_or(0.0);
    assert!(
        reloads >= 2.0,
        "{writes} writes in {elapsed:?}, {reloads} reloads:\n{metrics}"
    );
    // In force, previous (for grace verdicts), and perhaps one held by a request in flight.
    let live = metric_value(&metrics, "crawlgate_robots_snapshots").unwrap();
    assert!(
        live <= 3.0,
        "{live} snapshots alive after {reloads} reloads: old ones are not freed"
    );
}

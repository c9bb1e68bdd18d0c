//! `docs/architecture.md` is the map of `src/`: it names every source file, and every file it
//! names exists, so that the map a newcomer reads first stays true.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::Path;

fn source_files(dir: &Path, found: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            source_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path
                .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            found.insert(relative);
        }
    }
}

/// Every `src/….rs` the page names, in backticks.
fn named_files(page: &str) -> BTreeSet<String> {
    page.split('`')
        .skip(1)
        .step_by(2)
        .filter(|name| name.starts_with("src/") && name.ends_with(".rs"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_architecture_page_names_every_source_file_and_no_other() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let mut files = BTreeSet::new();
    source_files(&root.join("src"), &mut files);
    let named = named_files(&page);
    let unnamed: Vec<_> = files.difference(&named).collect();
    let gone: Vec<_> = named.difference(&files).collect();
    assert!(
        unnamed.is_empty(),
        "docs/architecture.md does not name {unnamed:?}"
    );
    assert!(
        gone.is_empty(),
        "docs/architecture.md names files that do not exist: {gone:?}"
    );
    assert!(files.len() > 50, "only {} source files found", files.len());
}

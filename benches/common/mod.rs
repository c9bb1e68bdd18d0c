//! What the benchmarks share: the real robots.txt files of the corpus, and stand-ins when the
//! corpus is absent.

// Each benchmark uses part of this module.
#![allow(dead_code)]

use std::path::PathBuf;

/// The corpus folder: `CRAWLGATE_CORPUS`, else `../shared/corpus/real` beside the crate.
pub fn corpus_dir() -> PathBuf {
    std::env::var_os("CRAWLGATE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/real"))
}

/// Reads a corpus file, cut at the last line end before `max` bytes.
pub fn corpus_file(name: &str, max: usize) -> Option<Vec<u8>> {
    let mut bytes = std::fs::read(corpus_dir().join(name)).ok()?;
    if bytes.len() > max {
        let end = bytes[..max].iter().rposition(|&b| b == b'\n')?;
        bytes.truncate(end + 1);
    }
    Some(bytes)
}

/// A deterministic stand-in of about `size` bytes after `head`: many literal prefixes, some
/// wildcards, in the group `head` opens.
pub fn generated(head: &str, size: usize) -> Vec<u8> {
    let mut text = String::from(head);
    let mut i = 0u64;
    while text.len() < size {
        let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
        match i % 10 {
            0 => text.push_str(&format!("Disallow: /*.x{h:x}$\n")),
            1 => text.push_str(&format!("Allow: /section-{}/public-{h:x}/\n", i % 97)),
            _ => text.push_str(&format!("Disallow: /section-{}/item-{h:x}/\n", i % 97)),
        }
        i += 1;
    }
    text.into_bytes()
}

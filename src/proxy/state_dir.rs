//! The state directory (`state_dir`): the last good robots.txt answer of every site whose file
//! comes from its origin, kept on disk so that after a restart the site enforces it from the
//! first request, instead of "disallow all" until the first fetch succeeds.
//!
//! One file per site, `robots/site.NAME.txt` (the name escaped, so that no site name can point
//! outside the folder), written atomically by the reload service after a fetch that changed the
//! answer, and at least hourly while it stays the same so that the fetch time on disk is never
//! more than an hour behind. A file is a short header and the bytes as fetched:
//!
//! ```text
//! crawlgate kept robots.txt 1
//! site: shop
//! url: http://127.0.0.1:8001/robots.txt
//! fetched: 2026-05-01T10:00:00Z
//! answer: 200
//! length: 40
//! sha256: 9f86d081884c7d65...
//!
//! User-agent: *
//! Disallow: /checkout/
//! ```
//!
//! A 4xx answer is kept too (`answer: unavailable 404 Not Found`, no body): it is the origin's
//! last word ("no restrictions"), and a stale file must not come back after the origin removed it.
//!
//! **Age.** RFC 9309 §2.4 says a crawler should not use a cached copy for more than 24 hours,
//! unless the file is unreachable. A kept copy is restored whatever its age: it is in force only
//! until the first fetch after the restart answers (a reachable origin replaces it at once), and
//! while the origin is unreachable an old copy is better than nothing, which is what the RFC
//! allows. Its fetch time is logged at restore and shown by `crawlgate explain`.
//!
//! A file that cannot be read, or whose header, length or SHA-256 does not check out, is
//! reported and ignored: the site starts as it would with no state directory.

use super::atomic::write_atomically;
use super::site::{CatalogIndex, Site, Snapshot, SourceState};
use bytes::Bytes;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The first line of every kept file: what it is, and the format's version.
const MAGIC: &str = "crawlgate kept robots.txt 1";

/// How stale the fetch time on disk may get while the answer does not change.
pub const KEEP_REFRESH: Duration = Duration::from_secs(3600);

/// What the origin last answered for robots.txt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeptAnswer {
    /// A 2xx answer: the bytes (as fetched, up to one byte past the parse limit).
    Body(Bytes),
    /// A 4xx answer (RFC 9309 "unavailable": no restrictions), with the status or reason.
    Unavailable(String),
}

/// A site's kept answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// The answer.
    pub answer: KeptAnswer,
    /// Where it was fetched from (for people; a changed upstream does not invalidate it).
    pub url: String,
    /// When the origin last gave this answer.
    pub fetched_at: SystemTime,
}

/// A kept file that cannot be used. Never fatal: the site starts without it.
#[derive(Debug, thiserror::Error)]
pub enum KeptError {
    /// The folder or the file cannot be read or written.
    #[error("state directory: {path}: {source}")]
    Io {
        /// The folder or file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not what crawlgate writes, or was damaged.
    #[error("state directory: {path}:{line}: {message}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The 1-based line of the header that is wrong (the header's end for the body).
        line: usize,
        /// What is wrong, with the offending text.
        message: String,
    },
}

/// The file name of a site's kept answer: `site.` and the name, with every byte other than a
/// lower-case letter, a digit, `.`, `_` or `-` written `%XX`. The prefix makes `.` and `..`
/// ordinary names, escaping leaves no `/`, and escaping capitals keeps `Shop` and `shop` apart
/// on file systems that ignore case.
pub fn file_name(site: &str) -> String {
    let mut name = String::with_capacity(site.len() + 9);
    name.push_str("site.");
    for byte in site.bytes() {
        if byte.is_ascii_lowercase() || byte.is_ascii_digit() || matches!(byte, b'.' | b'_' | b'-')
        {
            name.push(char::from(byte));
        } else {
            name.push_str(&format!("%{byte:02X}"));
        }
    }
    name.push_str(".txt");
    name
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One line of the header, made safe to write (a reason or URL never breaks the format).
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

impl Kept {
    /// The file's bytes.
    pub fn encode(&self, site: &str) -> Vec<u8> {
        let (answer, body): (String, &[u8]) = match &self.answer {
            KeptAnswer::Body(bytes) => ("200".into(), bytes),
            KeptAnswer::Unavailable(why) => (format!("unavailable {}", one_line(why)), &[]),
        };
        let header = format!(
            "{MAGIC}\nsite: {}\nurl: {}\nfetched: {}\nanswer: {answer}\nlength: {}\nsha256: {}\n\n",
            one_line(site),
            one_line(&self.url),
            humantime::format_rfc3339_millis(self.fetched_at),
            body.len(),
            hex(&Sha256::digest(body)),
        );
        let mut out = header.into_bytes();
        out.extend_from_slice(body);
        out
    }

    /// Reads a kept file back, checking that it is the site's and that its body is whole.
    /// The error is the 1-based line that is wrong and why.
    pub fn decode(site: &str, bytes: &[u8]) -> Result<Kept, (usize, String)> {
        let end = bytes
            .windows(2)
            .position(|w| w == b"\n\n")
            .ok_or((1, "no header: not a file crawlgate wrote".to_owned()))?;
        let header = std::str::from_utf8(&bytes[..end])
            .map_err(|_| (1, "the header is not UTF-8".to_owned()))?;
        let body = &bytes[end + 2..];
        let mut lines = header.split('\n').enumerate().map(|(i, l)| (i + 1, l));
        match lines.next() {
            Some((_, MAGIC)) => {}
            Some((line, other)) => {
                return Err((line, format!("`{other}` is not `{MAGIC}`")));
            }
            None => return Err((1, "empty".into())),
        }
        let last = header.split('\n').count();
        let mut field = |key: &str| next_field(&mut lines, key, last);
        let (line, kept_site) = field("site")?;
        if kept_site != one_line(site) {
            return Err((line, format!("kept for site `{kept_site}`, not `{site}`")));
        }
        let (_, url) = field("url")?;
        let (line, fetched) = field("fetched")?;
        let fetched_at = humantime::parse_rfc3339(fetched)
            .map_err(|e| (line, format!("`{fetched}` is not a time: {e}")))?;
        let (line, answer) = field("answer")?;
        let answer = match answer {
            "200" => KeptAnswer::Body(Bytes::copy_from_slice(body)),
            other => match other.strip_prefix("unavailable ") {
                Some(why) if body.is_empty() => KeptAnswer::Unavailable(why.to_owned()),
                Some(_) => return Err((line, "an unavailable answer has no body".into())),
                None => return Err((line, format!("`{other}` is not `200` or `unavailable`"))),
            },
        };
        let (line, length) = field("length")?;
        if length.parse::<usize>().ok() != Some(body.len()) {
            return Err((
                line,
                format!(
                    "length {length}, but {} bytes follow: the file was cut or changed",
                    body.len()
                ),
            ));
        }
        let (line, sha256) = field("sha256")?;
        let actual = hex(&Sha256::digest(body));
        if sha256 != actual {
            return Err((
                line,
                format!("sha256 {sha256}, but the body's is {actual}: the file was changed"),
            ));
        }
        Ok(Kept {
            answer,
            url: url.to_owned(),
            fetched_at,
        })
    }

    /// How old the answer is.
    pub fn age(&self) -> Duration {
        self.fetched_at.elapsed().unwrap_or_default()
    }
}

/// The next header line, which must be `key: value`.
fn next_field<'h>(
    lines: &mut impl Iterator<Item = (usize, &'h str)>,
    key: &str,
    last: usize,
) -> Result<(usize, &'h str), (usize, String)> {
    match lines.next() {
        Some((line, text)) => text
            .strip_prefix(key)
            .and_then(|rest| rest.strip_prefix(": "))
            .map(|value| (line, value))
            .ok_or((line, format!("`{text}`: expected `{key}: ...`"))),
        None => Err((last, format!("the header ends before `{key}:`"))),
    }
}

/// Where a site's answer is kept in the state directory `dir`.
pub fn kept_path(dir: &Path, site: &str) -> PathBuf {
    dir.join("robots").join(file_name(site))
}

/// The folder of kept answers.
#[derive(Debug, Clone)]
pub struct StateDir {
    root: PathBuf,
}

impl StateDir {
    /// The state directory `dir`. Nothing is created until an answer is kept, so that reading
    /// (`crawlgate explain`) leaves no trace.
    pub fn new(dir: &Path) -> StateDir {
        StateDir {
            root: dir.to_owned(),
        }
    }

    /// Whether answers could be kept: the folder (or, when it does not exist yet, the nearest
    /// folder above it, where it would be created) takes a new file. The probe file is removed,
    /// so checking leaves no trace.
    pub fn check_writable(&self) -> std::io::Result<()> {
        let mut folder = self.root.as_path();
        while !folder.exists() {
            match folder.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => folder = parent,
                _ => {
                    folder = Path::new(".");
                    break;
                }
            }
        }
        let probe = folder.join(format!(".crawlgate-write-check-{}", std::process::id()));
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&probe)
            .map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("cannot create files in {}: {e}", folder.display()),
                )
            })?;
        std::fs::remove_file(&probe)
    }

    /// Where a site's answer is kept.
    pub fn file_of(&self, site: &str) -> PathBuf {
        kept_path(&self.root, site)
    }

    /// A site's kept answer; `None` when nothing is kept for it.
    pub fn read(&self, site: &str) -> Result<Option<Kept>, KeptError> {
        let path = self.file_of(site);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(KeptError::Io { path, source }),
        };
        Kept::decode(site, &bytes)
            .map(Some)
            .map_err(|(line, message)| KeptError::Corrupt {
                path,
                line,
                message,
            })
    }

    /// Keeps a site's answer, replacing the file whole.
    pub fn write(&self, site: &str, kept: &Kept) -> Result<(), KeptError> {
        let path = self.file_of(site);
        write_atomically(&path, &kept.encode(site)).map_err(|source| KeptError::Io { path, source })
    }
}

/// Puts a site's kept answer in force, if one is kept and it can be used; the snapshot is
/// marked `restored` with the answer's fetch time. Problems are logged, never fatal.
pub fn restore(site: &Site, catalog: &CatalogIndex, dir: &StateDir) -> bool {
    let name = site.settings.name.as_str();
    let kept = match dir.read(name) {
        Ok(Some(kept)) => kept,
        Ok(None) => return false,
        Err(e) => {
            log::warn!("site {name}: kept robots.txt ignored: {e}");
            return false;
        }
    };
    let (bytes, state) = match &kept.answer {
        KeptAnswer::Body(bytes) => (bytes.clone(), SourceState::Loaded),
        KeptAnswer::Unavailable(_) => (Bytes::new(), SourceState::Unavailable),
    };
    match Snapshot::build(&site.settings, catalog, bytes, state) {
        Ok(mut snapshot) => {
            snapshot.fetched_at = Some(kept.fetched_at);
            snapshot.restored = true;
            log::info!(
                "site {name}: enforcing the robots.txt kept in {} (fetched {}, {} ago) until the origin answers",
                dir.file_of(name).display(),
                humantime::format_rfc3339_seconds(kept.fetched_at),
                humantime::format_duration(Duration::from_secs(kept.age().as_secs()))
            );
            site.snapshot.store(Arc::new(snapshot));
            true
        }
        Err(e) => {
            log::warn!("site {name}: kept robots.txt ignored: {e}");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(answer: KeptAnswer) -> Kept {
        Kept {
            answer,
            url: "http://127.0.0.1:8000/robots.txt".into(),
            fetched_at: humantime::parse_rfc3339("2026-05-01T10:00:00.250Z").unwrap(),
        }
    }

    #[test]
    fn a_state_dir_is_writable_where_a_file_can_be_created_and_the_check_leaves_nothing() {
        let scratch = tempfile::tempdir().unwrap();
        assert!(StateDir::new(scratch.path()).check_writable().is_ok());
        // Not there yet: it would be created in a folder that takes files.
        let later = scratch.path().join("later").join("state");
        assert!(StateDir::new(&later).check_writable().is_ok());
        assert!(!later.exists());
        assert_eq!(std::fs::read_dir(scratch.path()).unwrap().count(), 0);
        // Under a file, nothing can be created, whoever runs it (root included).
        let file = scratch.path().join("plain");
        std::fs::write(&file, b"").unwrap();
        let error = StateDir::new(&file.join("state"))
            .check_writable()
            .unwrap_err();
        assert!(
            error.to_string().contains("cannot create files in"),
            "{error}"
        );
    }

    #[test]
    fn answers_read_back_as_written() {
        for answer in [
            KeptAnswer::Body(Bytes::from_static(
                b"User-agent: *\nDisallow: /x\n\n\xff\x00",
            )),
            KeptAnswer::Body(Bytes::new()),
            KeptAnswer::Unavailable("404 Not Found".into()),
        ] {
            let original = kept(answer);
            let bytes = original.encode("shop");
            assert_eq!(Kept::decode("shop", &bytes), Ok(original));
        }
    }

    #[test]
    fn damage_is_found_with_its_line() {
        let bytes = kept(KeptAnswer::Body(Bytes::from_static(b"User-agent: *\n"))).encode("shop");
        let cut = &bytes[..bytes.len() - 3];
        let (line, why) = Kept::decode("shop", cut).unwrap_err();
        assert_eq!(line, 6, "{why}");
        assert!(why.contains("length 14, but 11 bytes follow"), "{why}");
        let mut changed = bytes.clone();
        let last = changed.len() - 2;
        changed[last] = b'X';
        let (line, why) = Kept::decode("shop", &changed).unwrap_err();
        assert_eq!(line, 7, "{why}");
        assert!(why.contains("sha256"), "{why}");
        let (line, why) = Kept::decode("other", &bytes).unwrap_err();
        assert_eq!(line, 2, "{why}");
        assert!(why.contains("not `other`"), "{why}");
        let (line, _) = Kept::decode("shop", b"User-agent: *\n\nDisallow: /\n").unwrap_err();
        assert_eq!(line, 1);
        assert!(Kept::decode("shop", b"").is_err());
        let text = String::from_utf8(bytes).unwrap();
        let bad_time = text.replace("2026-05-01T10:00:00.250Z", "yesterday");
        let (line, why) = Kept::decode("shop", bad_time.as_bytes()).unwrap_err();
        assert_eq!(line, 4, "{why}");
    }

    #[test]
    fn no_site_name_leaves_the_folder_or_meets_another() {
        assert_eq!(file_name("shop"), "site.shop.txt");
        assert_eq!(file_name(".."), "site....txt");
        assert_eq!(
            file_name("a/../../etc/passwd"),
            "site.a%2F..%2F..%2Fetc%2Fpasswd.txt"
        );
        assert_ne!(file_name("Shop"), file_name("shop"));
        for name in ["..", ".", "/", "a/b", "\0", "C:\\x", "Shop"] {
            let file = file_name(name);
            assert!(!file.contains(['/', '\\', '\0']), "{file}");
            assert!(file.starts_with("site."), "{file}");
        }
    }

    #[test]
    fn the_folder_keeps_one_file_per_site() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::new(&dir.path().join("state"));
        assert_eq!(state.read("shop").unwrap(), None);
        assert!(
            !dir.path().join("state").exists(),
            "reading creates nothing"
        );
        let one = kept(KeptAnswer::Body(Bytes::from_static(b"User-agent: *\n")));
        state.write("shop", &one).unwrap();
        state.write("..", &one).unwrap();
        assert_eq!(state.read("shop").unwrap(), Some(one.clone()));
        assert_eq!(state.read("..").unwrap(), Some(one));
        assert_eq!(
            std::fs::read_dir(dir.path().join("state").join("robots"))
                .unwrap()
                .count(),
            2
        );
        std::fs::write(state.file_of("shop"), b"garbage\n\n").unwrap();
        let error = state.read("shop").unwrap_err().to_string();
        assert!(error.contains("site.shop.txt:1: `garbage`"), "{error}");
    }
}

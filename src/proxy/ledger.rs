//! The ledger of pay per crawl: every charge, recorded before the crawler is told it was
//! charged, in an append-only JSON-lines file in the state directory (`ledger/ledger.jsonl`),
//! and through the state store when a fleet shares one.
//!
//! - **Durable.** A charge's line is written and `fsync`ed before the response that says
//!   `crawler-charged` leaves: a line is never lost on a crash or a restart. Lines are written
//!   by one thread, in batches (one `fsync` for every charge that waited), so that concurrent
//!   charges do not queue behind each other's syncs. A write that fails is cut back off the
//!   file, so that no half line joins the next one, and the crawler is told nothing was
//!   charged.
//! - **Once.** A charge is keyed by the signed request it pays for: the signature's use (its
//!   nonce, or the signature itself without one) with the site, method and target. The same
//!   signed request again (a retry, or a nonce-less signature used again on the same page) is
//!   forwarded and not charged again. The keys are remembered until the signature expires,
//!   read back from the files at start, and claimed in the shared store, so that two instances
//!   of a fleet cannot both charge one request.
//! - **Rotated on SIGHUP.** The file is renamed `ledger-YYYYMMDDTHHMMSSZ.jsonl` and a new one
//!   started: a rotated file is complete and never written again, which is what an operator
//!   bills from.
//!
//! There are no payment rails: the ledger is what an operator bills from.

use super::store::StateStore;
use super::verify::signature::reuse::{hex, Digest};
use crate::pricing::Price;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::oneshot;

/// The folder of the state directory the ledger lives in.
pub const FOLDER: &str = "ledger";

/// The file being written.
pub const CURRENT: &str = "ledger.jsonl";

/// The most charges remembered at once (each until its signature expires, at most a day): past
/// it, a charge that cannot be told apart from one before is refused (`InternalError`, try
/// again), never made twice. About 80 bytes each.
pub const MAX_REMEMBERED: usize = 1_000_000;

/// How far back rotated files are read at start: a signature is valid for a day at most, and a
/// clock may be off by a little.
const RESTORE_WINDOW: Duration = Duration::from_secs(26 * 3600);

/// One charge: the signed request it pays for, until when that request could come again, and
/// the price and signer recorded with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charge {
    /// The signed request's key: its signature's use with the site, method and target.
    pub id: Digest,
    /// Seconds since the epoch after which the signature no longer verifies (its `expires` and
    /// the skew allowed): the key need not be remembered past it.
    pub until: i64,
    /// The price.
    pub price: Price,
    /// The signer's key directory.
    pub directory: Arc<str>,
    /// The signer's key.
    pub keyid: String,
}

impl Charge {
    /// The charge for a verified signed request of `site`.
    pub fn new(
        site: &str,
        method: &str,
        target: &str,
        price: Price,
        signed: &super::decide::Signed,
    ) -> Charge {
        let mut hasher = Sha256::new();
        hasher.update(b"charge");
        for part in [
            &signed.reuse.key[..],
            site.as_bytes(),
            method.as_bytes(),
            target.as_bytes(),
        ] {
            // Each part's length first, so that no two sequences of parts hash alike.
            hasher.update((part.len() as u64).to_be_bytes());
            hasher.update(part);
        }
        Charge {
            id: hasher.finalize().into(),
            until: signed.reuse.until,
            price,
            directory: signed.directory.clone(),
            keyid: signed.keyid.clone(),
        }
    }
}

/// A charge's line in the ledger.
#[derive(Debug, Serialize)]
pub struct ChargeLine<'a> {
    /// `charge`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// RFC 3339, UTC, milliseconds.
    pub time: String,
    /// The charge's key, hex: the same signed request has the same id.
    pub id: String,
    /// The site's name.
    pub site: &'a str,
    /// The Host the request named.
    pub host: &'a str,
    /// The method.
    pub method: &'a str,
    /// The path and query (cut at 2048 bytes).
    pub path: &'a str,
    /// The crawler's name.
    pub bot: &'a str,
    /// Who runs it, when the catalog says.
    pub operator: Option<&'a str>,
    /// The key directory of the signature that paid.
    pub directory: &'a str,
    /// The key that signed.
    pub keyid: &'a str,
    /// The client address.
    pub client: String,
    /// The price, as `crawler-charged` says it.
    pub price: String,
    /// Its currency.
    pub currency: &'a str,
    /// Its amount, in the currency's unit, as a decimal string (exact).
    pub amount: String,
    /// The origin's status.
    pub status: u16,
    /// Seconds since the epoch until which the same signed request is recognised.
    pub until: i64,
}

/// A charge taken back: the origin broke its response off after the crawler was told it was
/// charged, so it did not get what it paid for. The key stays remembered: a retry of the same
/// signed request is forwarded without a second charge.
#[derive(Debug, Serialize)]
pub struct VoidLine<'a> {
    /// `void`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// RFC 3339, UTC, milliseconds.
    pub time: String,
    /// The charge's id.
    pub id: String,
    /// The site's name.
    pub site: &'a str,
    /// Why.
    pub reason: &'a str,
}

/// What charging came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charged {
    /// Charged now, and recorded.
    Now,
    /// This signed request was charged before (here, or by another instance of the fleet): not
    /// charged again.
    Before,
}

/// A charge that cannot be recorded now: nothing is charged, and the crawler is told to try
/// again.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// As many charges are remembered as may be ([`MAX_REMEMBERED`]), none expired yet.
    #[error("{MAX_REMEMBERED} charges are remembered, none of them expired yet")]
    Full,
    /// The shared store could not say whether another instance charged it.
    #[error("the shared store cannot claim the charge: {0}")]
    Store(String),
    /// The ledger file cannot be written.
    #[error("cannot write the ledger {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

/// What the writer thread is asked to do.
enum Job {
    /// Append these bytes (whole lines), sync, and say how it went.
    Append(Vec<u8>, oneshot::Sender<std::io::Result<()>>),
    /// Rename the current file aside and start a new one.
    Rotate,
}

/// The ledger of one process.
#[derive(Debug)]
pub struct Ledger {
    folder: PathBuf,
    /// The charges remembered: id → until (seconds since the epoch).
    charged: Mutex<HashMap<Digest, i64>>,
    /// The writer thread's queue, started at the first line (no thread for a process that
    /// charges nothing).
    writer: OnceLock<mpsc::Sender<Job>>,
}

fn now_unix() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// RFC 3339, UTC, milliseconds: the time of a line.
pub fn line_time() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// A line as read back at start: only what remembering needs.
#[derive(Deserialize)]
struct ReadBack {
    #[serde(rename = "type")]
    kind: String,
    id: String,
    until: Option<i64>,
}

fn unhex(text: &str) -> Option<Digest> {
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (slot, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        let pair = std::str::from_utf8(pair).ok()?;
        *slot = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(out)
}

impl Ledger {
    /// The ledger in `state_dir`, with the charges of its files that still matter remembered
    /// (a line that cannot be read is reported and skipped: it could only be a half line a
    /// crash cut, which was never confirmed to anyone).
    pub fn open(state_dir: &Path) -> Ledger {
        let folder = state_dir.join(FOLDER);
        let ledger = Ledger {
            folder,
            charged: Mutex::new(HashMap::new()),
            writer: OnceLock::new(),
        };
        ledger.restore();
        ledger
    }

    /// The folder its files are in.
    pub fn folder(&self) -> &Path {
        &self.folder
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Digest, i64>> {
        self.charged
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn restore(&self) {
        let Ok(entries) = std::fs::read_dir(&self.folder) else {
            return;
        };
        let now = now_unix();
        let oldest = SystemTime::now()
            .checked_sub(RESTORE_WINDOW)
            .unwrap_or(UNIX_EPOCH);
        let mut charged = self.lock();
        let mut unreadable = 0usize;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let ours = name == CURRENT || (name.starts_with("ledger-") && name.ends_with(".jsonl"));
            let recent = entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|at| at >= oldest);
            if !ours || !recent {
                continue;
            }
            let Ok(file) = File::open(entry.path()) else {
                continue;
            };
            for line in BufReader::new(file).split(b'\n').map_while(Result::ok) {
                let Ok(read) = serde_json::from_slice::<ReadBack>(&line) else {
                    unreadable += usize::from(!line.is_empty());
                    continue;
                };
                if read.kind != "charge" {
                    continue;
                }
                match (unhex(&read.id), read.until) {
                    (Some(id), Some(until)) if until > now && charged.len() < MAX_REMEMBERED => {
                        charged.insert(id, until);
                    }
                    _ => {}
                }
            }
        }
        if unreadable > 0 {
            log::warn!(
                "ledger {}: {unreadable} line(s) cannot be read and were skipped",
                self.folder.display()
            );
        }
        if !charged.is_empty() {
            log::info!(
                "ledger {}: {} charge(s) of signed requests still valid remembered",
                self.folder.display(),
                charged.len()
            );
        }
    }

    /// How many charges are remembered.
    pub fn remembered(&self) -> usize {
        self.lock().len()
    }

    fn forget(&self, id: &Digest) {
        self.lock().remove(id);
    }

    fn writer(&self) -> &mpsc::Sender<Job> {
        self.writer.get_or_init(|| {
            let (sender, jobs) = mpsc::channel();
            let folder = self.folder.clone();
            let spawned = std::thread::Builder::new()
                .name("crawlgate ledger".into())
                .spawn(move || write_lines(&folder, &jobs));
            if let Err(e) = spawned {
                log::error!("ledger: cannot start its writer thread: {e}");
            }
            sender
        })
    }

    /// Appends whole lines, synced, and waits until they are on disk.
    async fn append(&self, line: Vec<u8>) -> Result<(), LedgerError> {
        let error = |source| LedgerError::Write {
            path: self.folder.join(CURRENT).display().to_string(),
            source,
        };
        let (ack, done) = oneshot::channel();
        if self.writer().send(Job::Append(line, ack)).is_err() {
            return Err(error(std::io::Error::other("the writer thread is gone")));
        }
        match done.await {
            Ok(result) => result.map_err(error),
            Err(_) => Err(error(std::io::Error::other("the writer thread is gone"))),
        }
    }

    /// Charges once for a signed request: remembers its key (unless it was charged before,
    /// here or, through a shared `store`, by another instance), writes `line` (one JSON line,
    /// ending in a line break) and syncs it, then hands it to the store for the fleet. On an
    /// error nothing is charged and nothing remembered.
    pub async fn charge(
        &self,
        charge: &Charge,
        line: Vec<u8>,
        store: &dyn StateStore,
    ) -> Result<Charged, LedgerError> {
        let now = now_unix();
        {
            let mut charged = self.lock();
            if charged.get(&charge.id).is_some_and(|&until| until > now) {
                return Ok(Charged::Before);
            }
            if charged.len() >= MAX_REMEMBERED {
                charged.retain(|_, until| *until > now);
            }
            if charged.len() >= MAX_REMEMBERED {
                return Err(LedgerError::Full);
            }
            charged.insert(charge.id, charge.until);
        }
        match store.claim_charge(&charge.id, charge.until).await {
            Ok(true) => {}
            // Charged by another instance: remembered here too, not charged again.
            Ok(false) => return Ok(Charged::Before),
            Err(why) => {
                self.forget(&charge.id);
                return Err(LedgerError::Store(why));
            }
        }
        if let Err(e) = self.append(line.clone()).await {
            self.forget(&charge.id);
            store.release_charge(&charge.id).await;
            return Err(e);
        }
        store.record_charge(&line).await;
        Ok(Charged::Now)
    }

    /// Records that a charge was taken back (see [`VoidLine`]).
    pub async fn void(&self, line: Vec<u8>, store: &dyn StateStore) -> Result<(), LedgerError> {
        self.append(line.clone()).await?;
        store.record_charge(&line).await;
        Ok(())
    }

    /// Asks for the file to be rotated (SIGHUP), after the lines already queued.
    pub fn rotate(&self) {
        if self.writer.get().is_some() || self.folder.join(CURRENT).exists() {
            let _ = self.writer().send(Job::Rotate);
        }
    }
}

/// Serialises a line of the ledger, with its line break.
pub fn to_line(line: &impl Serialize) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(line).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// Hex of a charge's id, as lines write it.
pub fn id_hex(id: &Digest) -> String {
    hex(id)
}

/// The writer thread: takes every job that waits, in order, and appends the lines between two
/// rotations in one write and one sync, answering each; a rotation comes after the lines asked
/// for before it, and before those asked for after it.
fn write_lines(folder: &Path, jobs: &mpsc::Receiver<Job>) {
    let mut file: Option<File> = None;
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while let Ok(more) = jobs.try_recv() {
            batch.push(more);
        }
        let mut bytes = Vec::new();
        let mut acks = Vec::new();
        for job in batch {
            match job {
                Job::Append(line, ack) => {
                    bytes.extend_from_slice(&line);
                    acks.push(ack);
                }
                Job::Rotate => {
                    flush(folder, &mut file, &mut bytes, &mut acks);
                    file = None;
                    match rotate_file(folder) {
                        Ok(Some(to)) => log::info!("ledger: rotated to {}", to.display()),
                        Ok(None) => {}
                        Err(e) => log::error!("ledger: cannot rotate {}: {e}", folder.display()),
                    }
                }
            }
        }
        flush(folder, &mut file, &mut bytes, &mut acks);
    }
}

/// Appends the lines waiting and answers each of their requests with how it went.
fn flush(
    folder: &Path,
    file: &mut Option<File>,
    bytes: &mut Vec<u8>,
    acks: &mut Vec<oneshot::Sender<std::io::Result<()>>>,
) {
    if acks.is_empty() {
        return;
    }
    let result = append_synced(folder, file, bytes);
    if result.is_err() {
        *file = None;
    }
    for ack in acks.drain(..) {
        let answer = match &result {
            Ok(()) => Ok(()),
            Err(e) => Err(std::io::Error::new(e.kind(), e.to_string())),
        };
        let _ = ack.send(answer);
    }
    bytes.clear();
}

fn sync_folder(folder: &Path) {
    // Not every file system lets a folder be opened for syncing; the lines are safe either way.
    if let Ok(dir) = File::open(folder) {
        let _ = dir.sync_all();
    }
}

/// Appends `bytes` to the current file (opened, and created with its folder, when needed) and
/// syncs it; a write that fails is cut back off, so that the file ends with a whole line.
fn append_synced(folder: &Path, file: &mut Option<File>, bytes: &[u8]) -> std::io::Result<()> {
    let open = match file {
        Some(open) => open,
        None => {
            std::fs::create_dir_all(folder)?;
            let path = folder.join(CURRENT);
            let created = !path.exists();
            if !created {
                cut_half_line(&path)?;
            }
            let opened = OpenOptions::new().create(true).append(true).open(&path)?;
            if created {
                sync_folder(folder);
            }
            file.insert(opened)
        }
    };
    let before = open.metadata()?.len();
    let written = open.write_all(bytes).and_then(|()| open.sync_data());
    if written.is_err() {
        let _ = open.set_len(before);
    }
    written
}

/// The longest line the ledger writes, with room to spare: a path is cut at 2048 characters.
const LONGEST_LINE: u64 = 64 * 1024;

/// Cuts a half line off the end of a file (a process killed in the middle of a write leaves
/// one; it was never confirmed to anyone), so that the next line does not join it.
fn cut_half_line(path: &Path) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = OpenOptions::new().read(true).write(true).open(path)?;
    let len = file.metadata()?.len();
    let from = len.saturating_sub(LONGEST_LINE);
    file.seek(SeekFrom::Start(from))?;
    let mut tail = Vec::new();
    file.take(len - from).read_to_end(&mut tail)?;
    if tail.last().is_none_or(|&b| b == b'\n') {
        return Ok(());
    }
    let keep = tail
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(from, |at| from + at as u64 + 1);
    log::warn!(
        "ledger {}: a half line at its end (a write cut short) is cut off",
        path.display()
    );
    let file = OpenOptions::new().write(true).open(path)?;
    file.set_len(keep)?;
    file.sync_data()
}

/// Renames a current file that holds lines to `ledger-YYYYMMDDTHHMMSSZ.jsonl` (with `.N`
/// before `.jsonl` if that name is taken); the next line starts a new one.
fn rotate_file(folder: &Path) -> std::io::Result<Option<PathBuf>> {
    let current = folder.join(CURRENT);
    match std::fs::metadata(&current) {
        Ok(meta) if meta.len() > 0 => {}
        Ok(_) => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    }
    let stamp: String = humantime::format_rfc3339_seconds(SystemTime::now())
        .to_string()
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    let mut to = folder.join(format!("ledger-{stamp}.jsonl"));
    let mut n = 1;
    while to.exists() {
        to = folder.join(format!("ledger-{stamp}.{n}.jsonl"));
        n += 1;
    }
    std::fs::rename(&current, &to)?;
    sync_folder(folder);
    Ok(Some(to))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::store::memory::MemoryStore;
    use crate::proxy::store::MemoryLimits;

    fn store() -> MemoryStore {
        MemoryStore::new(MemoryLimits {
            max_tracked: 10,
            remember_fetches: Duration::from_secs(60),
            dns_entries: 10,
            signature_uses: 10,
            unlisted_signature_uses: 10,
        })
    }

    fn charge(id: u8, until: i64) -> Charge {
        Charge {
            id: [id; 32],
            until,
            price: Price::parse("USD 0.01").unwrap(),
            directory: Arc::from("https://signer.example"),
            keyid: "k".into(),
        }
    }

    fn line(charge: &Charge) -> Vec<u8> {
        to_line(&ChargeLine {
            kind: "charge",
            time: line_time(),
            id: id_hex(&charge.id),
            site: "s",
            host: "example.com",
            method: "GET",
            path: "/p",
            bot: "GPTBot",
            operator: Some("OpenAI"),
            directory: &charge.directory,
            keyid: &charge.keyid,
            client: "192.0.2.1".into(),
            price: charge.price.to_string(),
            currency: charge.price.currency(),
            amount: "0.01".into(),
            status: 200,
            until: charge.until,
        })
    }

    fn lines(folder: &Path, name: &str) -> Vec<String> {
        std::fs::read_to_string(folder.join(name))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    #[tokio::test]
    async fn a_signed_request_is_charged_once_across_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let store = store();
        let later = now_unix() + 600;
        let ledger = Ledger::open(dir.path());
        let first = charge(1, later);
        assert_eq!(
            ledger.charge(&first, line(&first), &store).await.unwrap(),
            Charged::Now
        );
        assert_eq!(
            ledger.charge(&first, line(&first), &store).await.unwrap(),
            Charged::Before
        );
        // An expired one is not read back; a valid one is.
        let expired = charge(2, now_unix() - 1);
        ledger
            .charge(&expired, line(&expired), &store)
            .await
            .unwrap();
        let folder = dir.path().join(FOLDER);
        assert_eq!(lines(&folder, CURRENT).len(), 2);
        drop(ledger);
        let reopened = Ledger::open(dir.path());
        assert_eq!(reopened.remembered(), 1);
        assert_eq!(
            reopened.charge(&first, line(&first), &store).await.unwrap(),
            Charged::Before
        );
        let other = charge(3, later);
        assert_eq!(
            reopened.charge(&other, line(&other), &store).await.unwrap(),
            Charged::Now
        );
        assert_eq!(lines(&folder, CURRENT).len(), 3);
    }

    #[tokio::test]
    async fn rotation_starts_a_new_file_and_keeps_every_line() {
        let dir = tempfile::tempdir().unwrap();
        let store = store();
        let ledger = Ledger::open(dir.path());
        let later = now_unix() + 600;
        for id in 0..3 {
            let c = charge(id, later);
            ledger.charge(&c, line(&c), &store).await.unwrap();
        }
        ledger.rotate();
        ledger.rotate();
        let c = charge(9, later);
        ledger.charge(&c, line(&c), &store).await.unwrap();
        let folder = dir.path().join(FOLDER);
        let mut names: Vec<String> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names.len(), 2, "{names:?}");
        assert_eq!(names[1], CURRENT);
        assert!(names[0].starts_with("ledger-2") && names[0].ends_with("Z.jsonl"));
        assert_eq!(lines(&folder, &names[0]).len(), 3);
        assert_eq!(lines(&folder, CURRENT).len(), 1);
        // Every charge of both files is remembered after a restart.
        drop(ledger);
        assert_eq!(Ledger::open(dir.path()).remembered(), 4);
    }

    #[tokio::test]
    async fn a_ledger_that_cannot_be_written_charges_nothing() {
        let dir = tempfile::tempdir().unwrap();
        // A file where the folder should be.
        std::fs::write(dir.path().join(FOLDER), b"").unwrap();
        let ledger = Ledger::open(dir.path());
        let c = charge(1, now_unix() + 600);
        let store = store();
        assert!(matches!(
            ledger.charge(&c, line(&c), &store).await,
            Err(LedgerError::Write { .. })
        ));
        assert_eq!(ledger.remembered(), 0);
    }

    #[test]
    fn a_cut_line_is_skipped_when_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join(FOLDER);
        std::fs::create_dir_all(&folder).unwrap();
        let good = line(&charge(1, now_unix() + 600));
        let mut text = good.clone();
        text.extend_from_slice(&good[..good.len() / 2]);
        std::fs::write(folder.join(CURRENT), text).unwrap();
        assert_eq!(Ledger::open(dir.path()).remembered(), 1);
        // The next line starts on a line of its own: the half line is cut off first.
        let ledger = Ledger::open(dir.path());
        let next = charge(2, now_unix() + 600);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime
            .block_on(ledger.charge(&next, line(&next), &store()))
            .unwrap();
        let written = std::fs::read(folder.join(CURRENT)).unwrap();
        let rest = written.strip_prefix(&good[..]).unwrap();
        let read: ReadBack = serde_json::from_slice(rest.strip_suffix(b"\n").unwrap()).unwrap();
        assert_eq!(read.id, id_hex(&next.id));
        assert_eq!(unhex(&"ab".repeat(32)), Some([0xab; 32]));
        assert_eq!(unhex("xyz"), None);
    }
}

//! The access log: one JSON line per crawler request, written off the request path.
//!
//! Requests hand their line to a bounded channel and never wait: when the writer cannot keep up,
//! lines are dropped and counted (`crawlgate_access_log_dropped_total`) rather than slowing the
//! proxy down. The writer runs as a background service and reopens its file after SIGHUP, for
//! log rotation.

use super::config::AccessLogTarget;
use async_trait::async_trait;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use serde::Serialize;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Lines that may wait for the writer before new ones are dropped.
const QUEUE: usize = 16 * 1024;

/// One crawler request, as the access log records it.
#[derive(Debug, Serialize)]
pub struct Entry<'a> {
    /// RFC 3339, UTC, milliseconds.
    pub time: String,
    /// The site's name.
    pub site: &'a str,
    /// The client's address.
    pub client: String,
    /// The request method.
    pub method: &'a str,
    /// The path and query, as requested (cut at 2048 bytes).
    pub path: &'a str,
    /// The crawler's label (`GPTBot`, `unnamed`).
    pub bot: &'a str,
    /// The crawler's category.
    pub category: &'a str,
    /// verified, spoofed or unverifiable.
    pub verified: &'a str,
    /// How: ranges, reverse-dns, signature or none.
    pub verified_by: &'a str,
    /// allowed, disallowed, grace or exempt.
    pub verdict: &'a str,
    /// The deciding robots.txt line, if a rule decided.
    pub rule_line: Option<u32>,
    /// forwarded, blocked, tagged, counted or throttled.
    pub action: &'a str,
    /// The status sent to the client (0 when none was).
    pub status: u16,
    /// The crawler had not fetched robots.txt within the read window.
    pub robots_unread: bool,
    /// The crawler came sooner than robots.txt's crawl-delay allows.
    pub crawl_delay_exceeded: bool,
    /// Judged by the previous robots.txt, which it read within the grace period.
    pub grace: bool,
    /// Pay per crawl: what a priced request came to (`quoted`, `charged`, `charged_before`,
    /// `not_charged`, or the payment error), absent when the page was not priced for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payment: Option<&'a str>,
}

/// The request side of the access log: cheap to clone, never blocks.
#[derive(Debug, Clone)]
pub struct AccessLog {
    sender: mpsc::Sender<Vec<u8>>,
    reopen: Arc<AtomicBool>,
}

/// The writer side: a background service.
#[derive(Debug)]
pub struct AccessLogWriter {
    target: AccessLogTarget,
    receiver: Mutex<Option<mpsc::Receiver<Vec<u8>>>>,
    reopen: Arc<AtomicBool>,
}

/// The access log file cannot be opened.
#[derive(Debug, thiserror::Error)]
#[error("cannot open the access log {path}: {source}")]
pub struct AccessLogError {
    path: String,
    source: std::io::Error,
}

fn open(target: &AccessLogTarget) -> Result<Box<dyn Write + Send>, AccessLogError> {
    match target {
        AccessLogTarget::Stdout => Ok(Box::new(std::io::stdout())),
        AccessLogTarget::File(path) => {
            let file: File = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|source| AccessLogError {
                    path: path.display().to_string(),
                    source,
                })?;
            Ok(Box::new(file))
        }
    }
}

/// Creates both sides. The file is opened once here, so that a bad path fails at startup.
pub fn access_log(target: AccessLogTarget) -> Result<(AccessLog, AccessLogWriter), AccessLogError> {
    drop(open(&target)?);
    let (sender, receiver) = mpsc::channel(QUEUE);
    let reopen = Arc::new(AtomicBool::new(false));
    Ok((
        AccessLog {
            sender,
            reopen: reopen.clone(),
        },
        AccessLogWriter {
            target,
            receiver: Mutex::new(Some(receiver)),
            reopen,
        },
    ))
}

impl AccessLog {
    /// Queues one entry; `false` when it had to be dropped.
    pub fn record(&self, entry: &Entry<'_>) -> bool {
        let Ok(mut line) = serde_json::to_vec(entry) else {
            return false;
        };
        line.push(b'\n');
        self.sender.try_send(line).is_ok()
    }

    /// Lines queued for the writer.
    pub fn queued(&self) -> usize {
        self.sender.max_capacity() - self.sender.capacity()
    }

    /// Asks the writer to reopen its file before the next line (after log rotation).
    pub fn reopen(&self) {
        self.reopen.store(true, Ordering::Relaxed);
    }
}

#[async_trait]
impl BackgroundService for AccessLogWriter {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let receiver = match self.receiver.lock() {
            Ok(mut slot) => slot.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        let Some(mut receiver) = receiver else {
            return;
        };
        let mut out = match open(&self.target) {
            Ok(out) => BufWriter::new(out),
            Err(e) => return log::error!("{e}"),
        };
        loop {
            let line = tokio::select! {
                line = receiver.recv() => line,
                _ = shutdown.changed() => None,
            };
            let Some(line) = line else { break };
            if self.reopen.swap(false, Ordering::Relaxed) {
                let _ = out.flush();
                match open(&self.target) {
                    Ok(reopened) => out = BufWriter::new(reopened),
                    Err(e) => log::error!("{e}; still writing to the old file"),
                }
            }
            let mut failed = out.write_all(&line).is_err();
            // Write what is queued, then flush: one syscall per burst, not per line.
            while let Ok(line) = receiver.try_recv() {
                failed |= out.write_all(&line).is_err();
            }
            if failed || out.flush().is_err() {
                log::error!("cannot write the access log");
            }
        }
        let _ = out.flush();
    }
}

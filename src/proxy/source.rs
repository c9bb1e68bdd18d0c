//! Getting robots.txt: from a file (watched by metadata), or from the origin with RFC 9309 §2.3
//! semantics (2xx parsed, up to 5 redirects, 4xx unavailable, 5xx, 429 and errors unreachable),
//! and what a fetch puts in force ([`after_fetch`]).

use super::config::{OnUnreachable, SiteSettings, UpstreamAddr};
use super::site::SourceState;
use bytes::Bytes;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// What a fetch from the origin found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched {
    /// A 2xx answer: the bytes (cut after the parse limit).
    Body(Bytes),
    /// A 4xx answer other than 429, or more than 5 redirects: RFC 9309 says no restrictions.
    Unavailable(String),
    /// A 5xx or 429 answer, a timeout or a network error: RFC 9309 says assume complete disallow.
    Unreachable(String),
}

/// What an answer's status means, before its body is read: `None` for a success.
///
/// `429 Too Many Requests` is a 4xx, but it says "come back later", not "there is no file":
/// Google reads it as a server error ("How Google interprets the robots.txt specification",
/// <https://developers.google.com/search/docs/crawling-indexing/robots/robots_txt>), and so
/// does crawlgate. Read as "unavailable", an origin that is shedding load would lift every
/// restriction.
pub fn classify_status(status: http::StatusCode) -> Option<Fetched> {
    if status == http::StatusCode::TOO_MANY_REQUESTS {
        return Some(Fetched::Unreachable(status.to_string()));
    }
    if status.is_client_error() {
        return Some(Fetched::Unavailable(status.to_string()));
    }
    if !status.is_success() {
        return Some(Fetched::Unreachable(status.to_string()));
    }
    None
}

/// What a fetch puts in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterFetch {
    /// This answer, in this state (a stand-in's bytes are empty).
    Install(Bytes, SourceState),
    /// The answer in force stays: the origin is unreachable and a good file is at hand
    /// (`on_unreachable: keep-last`).
    Keep,
}

/// RFC 9309 §2.3.1: a 2xx is parsed, a 4xx lifts every restriction, and an unreachable origin
/// keeps the last good file when there is one and `on_unreachable` is `keep-last`; else the
/// stand-in `on_unreachable` names. The proxy's reload service and `crawlgate explain` share it.
pub fn after_fetch(
    fetched: &Fetched,
    current: SourceState,
    on_unreachable: OnUnreachable,
) -> AfterFetch {
    match fetched {
        Fetched::Body(bytes) => AfterFetch::Install(bytes.clone(), SourceState::Loaded),
        Fetched::Unavailable(_) => AfterFetch::Install(Bytes::new(), SourceState::Unavailable),
        Fetched::Unreachable(_)
            if on_unreachable == OnUnreachable::KeepLast && current == SourceState::Loaded =>
        {
            AfterFetch::Keep
        }
        Fetched::Unreachable(_) => AfterFetch::Install(Bytes::new(), SourceState::Unreachable),
    }
}

impl Fetched {
    /// A short description for logs: `200 (1234 bytes)`, `404`, `connection refused`.
    pub fn describe(&self) -> String {
        match self {
            Fetched::Body(bytes) => format!("fetched ({} bytes)", bytes.len()),
            Fetched::Unavailable(why) => format!("unavailable: {why}"),
            Fetched::Unreachable(why) => format!("unreachable: {why}"),
        }
    }
}

/// RFC 9309 §2.3.1.2: "crawlers SHOULD follow at least five consecutive redirects".
const MAX_REDIRECTS: usize = 5;

/// An HTTP client for one site's origin.
#[derive(Debug, Clone)]
pub struct OriginClient {
    client: reqwest::Client,
    url: String,
    host: Option<String>,
    max_bytes: usize,
}

/// The origin's client cannot be built.
#[derive(Debug, thiserror::Error)]
#[error("site {site}: cannot build the robots.txt client: {message}")]
pub struct ClientError {
    site: String,
    message: String,
}

impl OriginClient {
    /// A client that fetches `/robots.txt` from the site's upstream, presenting the site's first
    /// host name (origins are often virtual hosts).
    pub fn new(site: &SiteSettings) -> Result<Option<OriginClient>, ClientError> {
        let UpstreamAddr::Tcp(address) = &site.upstream.addr else {
            return Ok(None);
        };
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::limited(MAX_REDIRECTS))
            .timeout(site.robots.timeout)
            .no_proxy()
            .user_agent(concat!("crawlgate/", env!("CARGO_PKG_VERSION")));
        if let Some(file) = &site.upstream.ca {
            // The origin's own CAs, as the proxy's connections to it trust them.
            let pem = std::fs::read(file).map_err(|e| ClientError {
                site: site.name.clone(),
                message: format!("upstream_ca {}: {e}", file.display()),
            })?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| ClientError {
                site: site.name.clone(),
                message: format!("upstream_ca {}: {e}", file.display()),
            })?;
            builder = builder.tls_certs_only(certs);
        }
        let url = if site.upstream.tls {
            // Connect to the resolved address while the URL (and SNI) carry the origin's name.
            if let Some(addr) = site.upstream.resolved {
                builder = builder.resolve(&site.upstream.sni, addr);
            }
            let port = site.upstream.resolved.map_or(443, |a| a.port());
            format!("https://{}:{port}/robots.txt", site.upstream.sni)
        } else {
            format!("http://{address}/robots.txt")
        };
        let client = builder.build().map_err(|e| ClientError {
            site: site.name.clone(),
            message: e.to_string(),
        })?;
        Ok(Some(OriginClient {
            client,
            url,
            host: site.hosts.first().cloned(),
            max_bytes: site.robots.max_bytes,
        }))
    }

    /// The URL fetched.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Fetches robots.txt once.
    pub async fn fetch(&self) -> Fetched {
        let mut request = self.client.get(&self.url);
        if let Some(host) = &self.host {
            request = request.header(http::header::HOST, host);
        }
        let mut response = match request.send().await {
            Ok(response) => response,
            Err(e) if e.is_redirect() => {
                return Fetched::Unavailable(format!("more than {MAX_REDIRECTS} redirects"))
            }
            Err(e) => return Fetched::Unreachable(error_chain(&e)),
        };
        if let Some(fetched) = classify_status(response.status()) {
            return fetched;
        }
        // Read one byte past the limit, so that the parser reports the cut; no further.
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    let room = (self.max_bytes + 1).saturating_sub(body.len());
                    body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                    if body.len() > self.max_bytes {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => return Fetched::Unreachable(error_chain(&e)),
            }
        }
        Fetched::Body(Bytes::from(body))
    }
}

/// An error with its causes, which reqwest keeps apart (`error sending request: connection refused`).
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// What a poll of a watched file found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilePoll {
    /// Nothing to do (no change, or a change still settling).
    Unchanged,
    /// A new version has held still: load it.
    Ready,
    /// The file can no longer be read (reported once).
    Gone,
}

/// What identifies a version of a file without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

impl FileStamp {
    /// The file's current stamp, or `None` when it cannot be read.
    pub fn of(path: &Path) -> Option<FileStamp> {
        let meta = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let inode = 0;
        Some(FileStamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            inode,
        })
    }
}

/// Watches a file, or files that are read together (a certificate and its key), by polling
/// their stamps. A change is reported once it has held still for one poll, so that a file
/// written in place is not read half-written, and files replaced one after the other are read
/// once both are in place.
#[derive(Debug, Clone, Default)]
pub struct FileWatch {
    /// The stamps of the version in force.
    current: Option<Stamps>,
    /// New stamps seen on the last poll, waiting to hold still.
    settling: Option<Stamps>,
}

/// The stamps of a set of files; `None` when any of them cannot be read.
type Stamps = smallvec::SmallVec<[FileStamp; 2]>;

fn stamps(paths: &[&Path]) -> Option<Stamps> {
    paths.iter().map(|path| FileStamp::of(path)).collect()
}

impl FileWatch {
    /// A watch that considers the file's present version loaded.
    pub fn loaded(path: &Path) -> FileWatch {
        FileWatch::loaded_all(&[path])
    }

    /// A watch over files read together that considers their present versions loaded.
    pub fn loaded_all(paths: &[&Path]) -> FileWatch {
        FileWatch {
            current: stamps(paths),
            settling: None,
        }
    }

    /// Polls the file: [`FilePoll::Ready`] when a changed version has held still and should be
    /// loaded, [`FilePoll::Gone`] once when the file can no longer be read.
    pub fn poll(&mut self, path: &Path) -> FilePoll {
        self.poll_all(&[path])
    }

    /// Polls files read together, as [`FileWatch::poll`] does one: a change to any of them is a
    /// change, and any of them unreadable is [`FilePoll::Gone`].
    pub fn poll_all(&mut self, paths: &[&Path]) -> FilePoll {
        let now = stamps(paths);
        if now == self.current {
            self.settling = None;
            return FilePoll::Unchanged;
        }
        if now.is_none() {
            // Reported once; the stamp in force becomes "gone" so that the file's return is a
            // change like any other.
            self.current = None;
            self.settling = None;
            return FilePoll::Gone;
        }
        if now == self.settling {
            self.settling = None;
            return FilePoll::Ready;
        }
        self.settling = now;
        FilePoll::Unchanged
    }

    /// Records the version that was loaded.
    pub fn mark_loaded(&mut self, path: &Path) {
        self.mark_loaded_all(&[path]);
    }

    /// Records the versions of files read together that were loaded.
    pub fn mark_loaded_all(&mut self, paths: &[&Path]) {
        self.current = stamps(paths);
    }
}

/// How often files are polled: a change is in force within two polls (< 2 s).
pub const FILE_POLL: Duration = Duration::from_millis(250);

#[cfg(test)]
mod tests {
    use super::*;
    use http::StatusCode;
    use std::io::Write;

    #[test]
    fn statuses_mean_what_rfc_9309_and_google_say() {
        let unreachable =
            |s: StatusCode| matches!(classify_status(s), Some(Fetched::Unreachable(_)));
        let unavailable =
            |s: StatusCode| matches!(classify_status(s), Some(Fetched::Unavailable(_)));
        assert_eq!(classify_status(StatusCode::OK), None);
        assert_eq!(classify_status(StatusCode::NO_CONTENT), None);
        for status in [404, 403, 401, 410, 400, 451] {
            assert!(
                unavailable(StatusCode::from_u16(status).unwrap()),
                "{status}"
            );
        }
        // 429 is the one 4xx that is not "no file": it is "come back later".
        assert!(unreachable(StatusCode::TOO_MANY_REQUESTS));
        assert_eq!(
            classify_status(StatusCode::TOO_MANY_REQUESTS),
            Some(Fetched::Unreachable("429 Too Many Requests".into()))
        );
        for status in [500, 502, 503, 504] {
            assert!(
                unreachable(StatusCode::from_u16(status).unwrap()),
                "{status}"
            );
        }
    }

    #[test]
    fn an_unreachable_origin_keeps_only_a_good_file() {
        let down = Fetched::Unreachable("503".into());
        let keep_last = OnUnreachable::KeepLast;
        assert_eq!(
            after_fetch(&down, SourceState::Loaded, keep_last),
            AfterFetch::Keep
        );
        for current in [
            SourceState::Pending,
            SourceState::Unavailable,
            SourceState::Unreachable,
        ] {
            assert_eq!(
                after_fetch(&down, current, keep_last),
                AfterFetch::Install(Bytes::new(), SourceState::Unreachable)
            );
        }
        assert_eq!(
            after_fetch(&down, SourceState::Loaded, OnUnreachable::DisallowAll),
            AfterFetch::Install(Bytes::new(), SourceState::Unreachable)
        );
        let gone = Fetched::Unavailable("404".into());
        assert_eq!(
            after_fetch(&gone, SourceState::Loaded, keep_last),
            AfterFetch::Install(Bytes::new(), SourceState::Unavailable)
        );
        let body = Fetched::Body(Bytes::from_static(b"x"));
        assert_eq!(
            after_fetch(&body, SourceState::Unreachable, keep_last),
            AfterFetch::Install(Bytes::from_static(b"x"), SourceState::Loaded)
        );
    }

    #[test]
    fn a_change_is_reported_once_it_holds_still() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("robots.txt");
        std::fs::write(&path, "User-agent: *\n").unwrap();
        let mut watch = FileWatch::loaded(&path);
        assert_eq!(watch.poll(&path), FilePoll::Unchanged);
        // Appending changes length (and maybe mtime): seen once, then reported when still.
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(b"Disallow: /\n").unwrap();
        assert_eq!(watch.poll(&path), FilePoll::Unchanged);
        assert_eq!(watch.poll(&path), FilePoll::Ready);
        watch.mark_loaded(&path);
        assert_eq!(watch.poll(&path), FilePoll::Unchanged);
        // Replacing by rename gives a new inode.
        let other = dir.path().join("new.txt");
        std::fs::write(&other, "User-agent: *\nDisallow: /x\n").unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert_eq!(watch.poll(&path), FilePoll::Unchanged);
        assert_eq!(watch.poll(&path), FilePoll::Ready);
    }

    #[test]
    fn files_read_together_are_ready_once_both_hold_still() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
        std::fs::write(&cert, "cert 1").unwrap();
        std::fs::write(&key, "key 1").unwrap();
        let both = [cert.as_path(), key.as_path()];
        let mut watch = FileWatch::loaded_all(&both);
        assert_eq!(watch.poll_all(&both), FilePoll::Unchanged);
        // The key is replaced first, the certificate a poll later: nothing is ready until the
        // pair holds still.
        let aside = dir.path().join("new.pem");
        std::fs::write(&aside, "key 2").unwrap();
        std::fs::rename(&aside, &key).unwrap();
        assert_eq!(watch.poll_all(&both), FilePoll::Unchanged);
        std::fs::write(&aside, "cert 2").unwrap();
        std::fs::rename(&aside, &cert).unwrap();
        assert_eq!(watch.poll_all(&both), FilePoll::Unchanged);
        assert_eq!(watch.poll_all(&both), FilePoll::Ready);
        watch.mark_loaded_all(&both);
        assert_eq!(watch.poll_all(&both), FilePoll::Unchanged);
        // Either one gone is the pair gone.
        std::fs::remove_file(&key).unwrap();
        assert_eq!(watch.poll_all(&both), FilePoll::Gone);
        assert_eq!(watch.poll_all(&both), FilePoll::Unchanged);
    }

    #[test]
    fn a_missing_file_is_reported_once_and_its_return_is_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("robots.txt");
        std::fs::write(&path, "x").unwrap();
        let mut watch = FileWatch::loaded(&path);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(watch.poll(&path), FilePoll::Gone);
        assert_eq!(watch.poll(&path), FilePoll::Unchanged);
        std::fs::write(&path, "x").unwrap();
        assert_eq!(watch.poll(&path), FilePoll::Unchanged);
        assert_eq!(watch.poll(&path), FilePoll::Ready);
    }
}

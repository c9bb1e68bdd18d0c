//! `crawlgate audit`: replays access logs against a robots.txt, with the proxy's classification
//! and matcher, and reports what each crawler did.
//!
//! The data flows one way: [`input`] (files, stdin, gzip → lines) → [`logline`] (a line → target,
//! User-Agent, time) → [`replay`] (classify, check — remembered in [`memo`] — and tally) → [`report`] (the numbers; a table)
//! and [`html`] (a self-contained page). [`topk`] and [`timeline`] keep memory bounded by the
//! number of crawlers and of paths kept, whatever the size of the logs.
//!
//! ```
//! use crawlgate::audit::{replay_bytes, Audit, Format};
//! let catalog = crawlgate::catalog::Catalog::embedded().unwrap();
//! let robots = crawlgate::Robots::parse(b"User-agent: GPTBot\nDisallow: /private/\n");
//! let audit = Audit::new(robots, &catalog).unwrap();
//! let log = b"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"GET /private/x HTTP/1.1\" 200 5 \"-\" \"GPTBot/1.2\"\n";
//! let report = replay_bytes(&audit, log, Format::Auto, 10).unwrap();
//! assert_eq!((report.crawlers[0].bot.as_str(), report.crawlers[0].disallowed), ("GPTBot", 1));
//! ```

pub mod html;
pub mod input;
pub mod logline;
pub mod memo;
pub mod replay;
pub mod report;
pub mod time;
pub mod timeline;
pub mod topk;

pub use logline::{JsonFields, Malformed, Role};
pub use replay::{replay_bytes, robots_options, Audit, Format, Progress, Replay};
pub use report::Report;

/// Why an audit could not be done.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// An input could not be opened or read (a missing file, a corrupt gzip stream).
    #[error("cannot read {input}: {source}")]
    Read {
        /// The input (`-` for standard input).
        input: String,
        /// Why.
        source: std::io::Error,
    },
    /// A report could not be written.
    #[error("cannot write {output}: {source}")]
    Write {
        /// The file.
        output: String,
        /// Why.
        source: std::io::Error,
    },
    /// A malformed line, with `--strict`.
    #[error("{input}:{line}: {reason}: {text}")]
    Malformed {
        /// The input.
        input: String,
        /// The 1-based line number.
        line: u64,
        /// What is wrong with it.
        reason: Malformed,
        /// The beginning of the line.
        text: String,
    },
    /// The crawler catalog cannot be used.
    #[error(transparent)]
    Catalog(#[from] crate::catalog::CatalogError),
    /// The classifier cannot be built from the catalog and the file's tokens.
    #[error(transparent)]
    Classifier(#[from] crate::agent::ClassifierError),
}

//! The process's logger: env_logger, with pingora's client-caused errors at the level their cause
//! deserves. pingora logs every failed TLS handshake (an old scanner offering TLS 1.0), every
//! client that hangs up mid-request and every response it could not finish sending at ERROR; an
//! operator paged by those would learn to ignore ERROR. They are logged at INFO here (hidden by
//! the default filter, as nginx keeps them out of its default `error` level), and crawlgate logs
//! origin failures itself, at WARN, through [`crate::proxy::service`].

use log::{Level, Log, Metadata, Record};

/// pingora's messages caused by a client, not by crawlgate or the origin: (target prefix,
/// message prefix).
const CLIENT_CAUSED: &[(&str, &str)] = &[
    (
        "pingora_core::services::listening",
        "Downstream handshake error",
    ),
    (
        "pingora_core::services::listening",
        "Downstream handshake timeout",
    ),
    ("pingora_core::apps", "H2 handshake error"),
    (
        "pingora_core::apps",
        "HTTP server fails to read from downstream",
    ),
    (
        "pingora_core::apps",
        "HTTP server fails to finish the request",
    ),
    (
        "pingora_proxy",
        "failed to send error response to downstream",
    ),
    ("pingora_proxy", "Error finish sending body to downstream"),
    // A request header pingora could not read because the client stopped sending it (the
    // refusals it answers with 400 are logged by crawlgate's connection guard).
    ("pingora_proxy", "Fail to proxy: Downstream"),
];

/// The level a record is logged at: INFO for pingora's client-caused errors.
fn level_of(record: &Record<'_>) -> (Level, Option<String>) {
    if record.level() != Level::Error || !record.target().starts_with("pingora") {
        return (record.level(), None);
    }
    let text = record.args().to_string();
    let client_caused = CLIENT_CAUSED
        .iter()
        .any(|(target, prefix)| record.target().starts_with(target) && text.starts_with(prefix));
    if client_caused {
        (Level::Info, Some(text))
    } else {
        (Level::Error, Some(text))
    }
}

/// env_logger with pingora's client-caused errors demoted.
struct Demoting(env_logger::Logger);

impl Log for Demoting {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.0.enabled(metadata)
    }

    fn log(&self, record: &Record<'_>) {
        match level_of(record) {
            (level, Some(text)) if level != record.level() => {
                let metadata = Metadata::builder()
                    .level(level)
                    .target(record.target())
                    .build();
                if self.0.enabled(&metadata) {
                    self.0.log(
                        &Record::builder()
                            .metadata(metadata)
                            .args(format_args!("{text}"))
                            .module_path(record.module_path())
                            .file(record.file())
                            .line(record.line())
                            .build(),
                    );
                }
            }
            _ => self.0.log(record),
        }
    }

    fn flush(&self) {
        self.0.flush()
    }
}

/// Installs the logger: `RUST_LOG` as env_logger reads it, by default `info` for crawlgate and
/// `warn` for pingora.
pub fn init() {
    let logger = env_logger::Builder::from_env(
        env_logger::Env::default()
            .default_filter_or("info,pingora_core=warn,pingora_proxy=warn,pingora=warn"),
    )
    .build();
    let max = logger.filter();
    if log::set_boxed_logger(Box::new(Demoting(logger))).is_ok() {
        log::set_max_level(max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(target: &str, level: Level, message: &str) -> Level {
        let args = format_args!("{message}");
        let record = Record::builder()
            .target(target)
            .level(level)
            .args(args)
            .build();
        level_of(&record).0
    }

    #[test]
    fn client_caused_errors_are_info_and_the_rest_keep_their_level() {
        let handshake = "Downstream handshake error from 192.0.2.1:5555: unsupported protocol";
        assert_eq!(
            level("pingora_core::services::listening", Level::Error, handshake),
            Level::Info
        );
        assert_eq!(
            level(
                "pingora_proxy",
                Level::Error,
                "Fail to proxy: Downstream ReadError context: while reading request headers"
            ),
            Level::Info
        );
        // An origin's failure, the accept loop's, and anything of crawlgate's stay.
        assert_eq!(
            level(
                "pingora_proxy",
                Level::Error,
                "Fail to proxy: Upstream ConnectRefused"
            ),
            Level::Error
        );
        assert_eq!(
            level(
                "pingora_core::services::listening",
                Level::Error,
                "Accept() failed"
            ),
            Level::Error
        );
        assert_eq!(
            level("crawlgate::proxy", Level::Error, handshake),
            Level::Error
        );
        assert_eq!(level("pingora_proxy", Level::Warn, "anything"), Level::Warn);
    }
}

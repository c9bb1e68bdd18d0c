//! Which key directories are believed, and for whom: the catalog's `signature_agent` URLs and the
//! configuration's `verification.signatures.directories`, each the crawler its keys speak for.
//!
//! A directory is named by the value a signer sends in `Signature-Agent` (`https://chatgpt.com`):
//! its origin, whose keys are at `/.well-known/http-message-signatures-directory`, or a full
//! `https` URL of the directory itself. Both are compared in one normal form ([`normalise`]), so
//! that `HTTPS://ChatGPT.com:443/` and `https://chatgpt.com` are the same directory, and keys are
//! always looked up by (directory, key id), never by key id alone.

use super::SignatureSettings;
use crate::catalog::Catalog;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// The path of a key directory under its origin (draft-ietf-webbotauth-httpsig-protocol).
pub const WELL_KNOWN: &str = "/.well-known/http-message-signatures-directory";

/// The media type a key directory is served with.
pub const MEDIA_TYPE: &str = "application/http-message-signatures-directory+json";

/// A `Signature-Agent` URL that cannot name a directory.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{url}` is not a key directory URL: {why} (write it like https://chatgpt.com)")]
pub struct UrlError {
    /// The URL as given.
    pub url: String,
    /// What is wrong with it.
    pub why: &'static str,
}

/// The normal form of a directory URL: `https://host[:port]` (scheme and host lower-cased, the
/// default port and a trailing `/` dropped), with the path kept when it names more than the
/// origin. Only `https` names a directory: a key fetched over plain HTTP proves nothing.
pub fn normalise(url: &str) -> Result<String, UrlError> {
    let fail = |why| UrlError {
        url: url.to_owned(),
        why,
    };
    let parsed = reqwest::Url::parse(url.trim()).map_err(|_| fail("not a URL"))?;
    if parsed.scheme() != "https" {
        return Err(fail("only https directories are fetched"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(fail("no user name or password"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(fail("no query or fragment"));
    }
    let host = parsed.host_str().ok_or_else(|| fail("no host"))?;
    let mut out = format!("https://{}", host.to_ascii_lowercase());
    if let Some(port) = parsed.port() {
        out.push_str(&format!(":{port}"));
    }
    let path = parsed.path().trim_end_matches('/');
    out.push_str(path);
    Ok(out)
}

/// Where a directory named by its normal form is fetched from.
pub fn fetch_url(normal: &str) -> String {
    if normal.ends_with(WELL_KNOWN) {
        normal.to_owned()
    } else if let Some(rest) = normal.strip_prefix("https://") {
        if rest.contains('/') {
            // A full URL of the directory itself.
            normal.to_owned()
        } else {
            format!("{normal}{WELL_KNOWN}")
        }
    } else {
        normal.to_owned()
    }
}

/// The host (and port) of a directory in its normal form: its metric label.
fn host_of(normal: &str) -> &str {
    let rest = normal.strip_prefix("https://").unwrap_or(normal);
    rest.split('/').next().unwrap_or(rest)
}

/// A key directory crawlgate believes (or, with `fetch_unlisted`, one nobody named).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directory {
    /// Its normal form: what `Signature-Agent` values are compared with.
    pub url: Arc<str>,
    /// Where its keys are fetched from.
    pub fetch_url: String,
    /// The product token of the crawler its keys speak for (`ChatGPT-User`); `None` when no one
    /// says (an unlisted directory): a signature it verifies proves no crawler's identity.
    pub bot: Option<Arc<str>>,
    /// A JWKS file to read its keys from instead of fetching them.
    pub jwks: Option<PathBuf>,
    /// Its metric label: the host (and port), or `unlisted`.
    pub label: Arc<str>,
    /// Named by the catalog or the configuration.
    pub listed: bool,
    /// Named by the configuration: fetched from the start, not only once a request names it.
    pub eager: bool,
}

impl Directory {
    /// A directory named by `url` (in its normal form).
    pub fn new(url: &str, bot: Option<Arc<str>>, listed: bool) -> Directory {
        Directory {
            url: Arc::from(url),
            fetch_url: fetch_url(url),
            bot,
            jwks: None,
            label: Arc::from(if listed { host_of(url) } else { "unlisted" }),
            listed,
            eager: false,
        }
    }
}

/// The directories crawlgate believes, by URL and by the crawler they speak for, and how
/// signatures are checked: one configuration's worth, replaced whole on a reload.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    by_url: HashMap<Arc<str>, Arc<Directory>>,
    /// By lower-cased token.
    by_bot: HashMap<String, Arc<Directory>>,
    /// How signatures are checked and directories fetched.
    pub settings: SignatureSettings,
}

impl Trust {
    /// The directories of the catalog (unless `settings.catalog` is off) and of the
    /// configuration, which wins for a URL both name. A catalog URL that is not a directory URL
    /// is logged and left out.
    pub fn new(settings: &SignatureSettings, catalog: &Catalog) -> Trust {
        let mut trust = Trust {
            settings: settings.clone(),
            ..Trust::default()
        };
        let mut catalog_bots: HashMap<String, Arc<str>> = HashMap::new();
        for entry in &catalog.bots {
            let Some(url) = entry
                .verify
                .as_ref()
                .and_then(|v| v.signature_agent.as_ref())
            else {
                continue;
            };
            match normalise(url) {
                Ok(normal) => {
                    let bot: Arc<str> = Arc::from(entry.token.as_str());
                    catalog_bots.insert(normal.clone(), bot.clone());
                    if settings.catalog {
                        trust.insert(Directory::new(&normal, Some(bot), true));
                    }
                }
                Err(e) => log::warn!("catalog: {}: signature_agent: {e}", entry.token),
            }
        }
        for configured in &settings.directories {
            let bot = configured
                .bot
                .as_deref()
                .map(Arc::from)
                .or_else(|| catalog_bots.get(&configured.url).cloned());
            if bot.is_none() {
                log::warn!(
                    "verification.signatures: {} names no crawler (`bot`) and the catalog does not know it: its signatures are checked but prove no crawler's identity",
                    configured.url
                );
            }
            let mut directory = Directory::new(&configured.url, bot, true);
            directory.jwks.clone_from(&configured.jwks);
            directory.eager = true;
            trust.insert(directory);
        }
        trust
    }

    fn insert(&mut self, directory: Directory) {
        let directory = Arc::new(directory);
        if let Some(old) = self.by_url.insert(directory.url.clone(), directory.clone()) {
            if let Some(bot) = &old.bot {
                self.by_bot.remove(&bot.to_ascii_lowercase());
            }
        }
        if let Some(bot) = &directory.bot {
            self.by_bot
                .insert(bot.to_ascii_lowercase(), directory.clone());
        }
    }

    /// The directory named by a URL in its normal form.
    pub fn get(&self, url: &str) -> Option<&Arc<Directory>> {
        self.by_url.get(url)
    }

    /// The directory whose keys speak for the crawler `token_lower`.
    pub fn of_bot(&self, token_lower: &str) -> Option<&Arc<Directory>> {
        self.by_bot.get(token_lower)
    }

    /// Every directory believed.
    pub fn directories(&self) -> impl Iterator<Item = &Arc<Directory>> {
        self.by_url.values()
    }

    /// Whether no directory is believed and none would be fetched: signatures are only
    /// reported, never checked.
    pub fn is_empty(&self) -> bool {
        self.by_url.is_empty() && !self.settings.fetch_unlisted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::verify::signature::DirectorySettings;

    #[test]
    fn directory_urls_compare_in_one_normal_form() {
        for (given, normal) in [
            ("https://chatgpt.com", "https://chatgpt.com"),
            ("HTTPS://ChatGPT.com:443/", "https://chatgpt.com"),
            ("https://agent.bot.goog", "https://agent.bot.goog"),
            ("https://localhost:8443", "https://localhost:8443"),
            (
                "https://keys.example/.well-known/http-message-signatures-directory",
                "https://keys.example/.well-known/http-message-signatures-directory",
            ),
        ] {
            assert_eq!(normalise(given).as_deref(), Ok(normal), "{given}");
        }
        for bad in [
            "http://chatgpt.com",
            "chatgpt.com",
            "https://u:p@chatgpt.com",
            "https://chatgpt.com/?x=1",
            "data:application/json,{}",
        ] {
            assert!(normalise(bad).is_err(), "{bad}");
        }
        assert_eq!(
            fetch_url("https://chatgpt.com"),
            "https://chatgpt.com/.well-known/http-message-signatures-directory"
        );
        assert_eq!(
            fetch_url("https://keys.example/dir.json"),
            "https://keys.example/dir.json"
        );
        assert_eq!(host_of("https://localhost:8443/x"), "localhost:8443");
    }

    #[test]
    fn the_catalog_and_the_configuration_name_directories_and_their_crawlers() {
        let catalog = Catalog::embedded().unwrap();
        let trust = Trust::new(&SignatureSettings::default(), &catalog);
        let chatgpt = trust.get("https://chatgpt.com").unwrap();
        assert_eq!(chatgpt.bot.as_deref(), Some("ChatGPT-User"));
        assert!(!chatgpt.eager);
        assert_eq!(&*chatgpt.label, "chatgpt.com");
        assert_eq!(
            trust.of_bot("chatgpt-user").map(|d| &*d.url),
            Some("https://chatgpt.com")
        );
        // The configuration adds a directory, and may give keys from a file.
        let settings = SignatureSettings {
            directories: vec![
                DirectorySettings {
                    url: "https://signer.example".into(),
                    bot: Some("ExampleAgent".into()),
                    jwks: None,
                },
                DirectorySettings {
                    url: "https://chatgpt.com".into(),
                    bot: None,
                    jwks: Some("chatgpt.json".into()),
                },
            ],
            catalog: true,
            ..SignatureSettings::default()
        };
        let trust = Trust::new(&settings, &catalog);
        let signer = trust.of_bot("exampleagent").unwrap();
        assert!(signer.eager && signer.listed);
        let chatgpt = trust.get("https://chatgpt.com").unwrap();
        assert_eq!(
            chatgpt.bot.as_deref(),
            Some("ChatGPT-User"),
            "from the catalog"
        );
        assert_eq!(chatgpt.jwks.as_deref(), Some("chatgpt.json".as_ref()));
        // Without the catalog's, only the configuration's.
        let only_configured = Trust::new(
            &SignatureSettings {
                catalog: false,
                ..settings
            },
            &catalog,
        );
        assert!(only_configured
            .get("https://chatgpt.com")
            .is_some_and(|d| d.jwks.is_some()));
        assert_eq!(only_configured.directories().count(), 2);
        assert!(only_configured.get("https://signer.example").is_some());
    }
}

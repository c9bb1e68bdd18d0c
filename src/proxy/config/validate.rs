//! From the file as written to the settings the proxy runs on: every semantic check, each
//! error with its line (found in the text, since parsed values keep no positions).

use super::*;
use crate::agent::Category;
use crate::managed::Managed;
use crate::policy::{Action, Enforcement};
use crate::robots::token::is_product_token;
use crate::robots::DEFAULT_MAX_BYTES;
use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

const DEFAULT_REFRESH: Duration = Duration::from_secs(60);
const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_UPSTREAM_TIMEOUT: Duration = Duration::from_secs(60);

/// `text` with every YAML line break (CR LF, CR, NEL, LS, PS) written as LF.
pub(super) fn normalise_line_breaks(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\r', '\u{85}', '\u{2028}', '\u{2029}']) {
        return std::borrow::Cow::Borrowed(text);
    }
    let unified = text
        .replace("\r\n", "\n")
        .replace(['\r', '\u{85}', '\u{2028}', '\u{2029}'], "\n");
    std::borrow::Cow::Owned(unified)
}

/// Finds the line of the `nth` (0-based) line of `text` that contains `needle`, for errors found
/// after parsing (serde_yaml keeps no positions in parsed values).
fn line_of(text: &str, needle: &str, nth: usize) -> Option<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| line.contains(needle))
        .nth(nth)
        .map(|(index, _)| index + 1)
}

/// Finds the line of the first line containing `needle` at or after the top-level key `section`
/// (`state:`), for keys whose names other sections use too (`budget:`).
fn line_in_section(text: &str, section: &str, needle: &str) -> Option<usize> {
    let start = text.lines().position(|l| l.starts_with(section))?;
    text.lines()
        .enumerate()
        .skip(start)
        .find(|(_, line)| line.contains(needle))
        .map(|(index, _)| index + 1)
}

/// Finds the line of `needle` within the `site`-th item of the block-style `sites:` list (or the
/// item's first line when the needle is not in it).
fn site_line(text: &str, site: usize, needle: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| l.starts_with("sites:"))?;
    let mut items = Vec::new();
    let mut item_indent = None;
    let mut end = lines.len();
    for (number, line) in lines.iter().enumerate().skip(start + 1) {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = line.len() - trimmed.len();
        if indent == 0 && !trimmed.starts_with('-') {
            end = number;
            break;
        }
        if trimmed.starts_with('-') && *item_indent.get_or_insert(indent) == indent {
            items.push(number);
        }
    }
    let from = *items.get(site)?;
    let to = items.get(site + 1).copied().unwrap_or(end);
    let offset = lines[from..to]
        .iter()
        .position(|l| l.contains(needle))
        .unwrap_or(0);
    Some(from + offset + 1)
}

/// Builds validated settings from a file's parsed content and text.
pub(super) struct Validator<'a> {
    pub(super) origin: &'a str,
    pub(super) text: &'a str,
    pub(super) base: &'a Path,
    /// Whether upstream host names are resolved (the proxy and `validate`), or only checked
    /// for their form (fuzzing, tools that must not touch the network).
    pub(super) resolve: bool,
}

impl Validator<'_> {
    fn error(&self, needle: Option<(&str, usize)>, message: String) -> ConfigError {
        ConfigError {
            origin: self.origin.to_owned(),
            line: needle.and_then(|(needle, nth)| line_of(self.text, needle, nth)),
            message,
        }
    }

    /// An error about the `site`-th site, placed at the line of `needle` within it.
    fn site_error(&self, site: usize, needle: &str, message: String) -> ConfigError {
        ConfigError {
            origin: self.origin.to_owned(),
            line: site_line(self.text, site, needle),
            message,
        }
    }

    /// Relative paths in a configuration file are relative to the file's folder.
    fn path(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_owned()
        } else {
            self.base.join(path)
        }
    }

    pub(super) fn settings(&self, file: ConfigFile) -> Result<Settings, ConfigError> {
        if file.sites.is_empty() {
            return Err(self.error(
                Some(("sites", 0)),
                "sites: at least one site is needed (name, upstream, robots)".into(),
            ));
        }
        let forward_auth_listen: Vec<SocketAddr> = file
            .forward_auth
            .iter()
            .flat_map(|auth| auth.listen.iter().map(|a| a.0))
            .collect();
        if file.listen.is_empty() && file.tls_listen.is_empty() && forward_auth_listen.is_empty() {
            return Err(self.error(
                None,
                "listen: give at least one address in `listen`, `tls_listen` or `forward_auth.listen`, such as listen: [\"0.0.0.0:8080\"]".into(),
            ));
        }
        let behind_proxy_protocol = file.listen.iter().any(|l| l.proxy_protocol)
            || file.tls_listen.iter().any(|l| l.proxy_protocol);
        if behind_proxy_protocol && file.trusted_proxies.networks.is_empty() {
            return Err(self.error(
                Some(("proxy_protocol", 0)),
                "proxy_protocol: only trusted_proxies may send it, and none are listed: add the load balancer's address (trusted_proxies: [10.0.0.0/8])".into(),
            ));
        }
        if !forward_auth_listen.is_empty() && file.trusted_proxies.networks.is_empty() {
            return Err(self.error(
                Some(("forward_auth", 0)),
                "forward_auth: only trusted_proxies may ask, and none are listed: add the edge's address (trusted_proxies: [127.0.0.1/32])".into(),
            ));
        }
        let tls_listen = (file.tls_listen.iter().enumerate())
            .map(|(i, tls)| self.tls_listen(i, tls))
            .collect::<Result<Vec<_>, _>>()?;
        let access_log = file.access_log.as_deref().map(|target| match target {
            "-" => AccessLogTarget::Stdout,
            path => AccessLogTarget::File(self.path(Path::new(path))),
        });
        let mut sites = Vec::new();
        let mut names: HashMap<String, usize> = HashMap::new();
        let mut hosts: HashMap<String, usize> = HashMap::new();
        let mut catch_all: Option<usize> = None;
        for (i, site) in file.sites.into_iter().enumerate() {
            let site = self.site(i, site, file.mode)?;
            if let Some(first) = names.insert(site.name.clone(), i) {
                return Err(self.site_error(
                    i,
                    "name:",
                    format!("sites[{i}].name: `{}` is already the name of sites[{first}]; names label metrics and must differ", site.name),
                ));
            }
            if site.hosts.is_empty() {
                if let Some(first) = catch_all.replace(i) {
                    return Err(self.site_error(
                        i,
                        "name:",
                        format!("sites[{i}].hosts: sites[{first}] already serves any host; give this site `hosts`"),
                    ));
                }
            }
            for host in &site.hosts {
                if let Some(first) = hosts.insert(host.clone(), i) {
                    return Err(self.site_error(
                        i,
                        host,
                        format!("sites[{i}].hosts: `{host}` is already a host of sites[{first}]"),
                    ));
                }
            }
            sites.push(site);
        }
        let pingora = &file.pingora;
        let threads = pingora.threads.map_or_else(
            || std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
            Bounded::get,
        );
        let verification = self.verification(file.verification.unwrap_or_default())?;
        let politeness = file.politeness.unwrap_or_default();
        let defaults = PolitenessSettings::default();
        let politeness = PolitenessSettings {
            max_tracked: politeness.max_tracked.map_or(defaults.max_tracked, |n| n.0),
            robots_read_window: politeness
                .robots_read_window
                .map_or(defaults.robots_read_window, |d| d.0),
            grace: politeness.grace.map_or(defaults.grace, |d| d.0),
        };
        let trusted_proxies = self.trusted_proxies(&file.trusted_proxies)?;
        let state = file.state.as_ref().map(|s| self.state(s)).transpose()?;
        // systemd's StateDirectory= sets STATE_DIRECTORY (colon-separated when it names several).
        let state_dir = match &file.state_dir {
            Some(dir) => Some(self.path(dir)),
            None => std::env::var_os("STATE_DIRECTORY")
                .and_then(|dirs| std::env::split_paths(&dirs).next())
                .filter(|dir| dir.is_absolute()),
        };
        if let Some(i) = sites.iter().position(|site| site.pay_per_crawl.is_some()) {
            if state_dir.is_none() {
                return Err(self.site_error(
                    i,
                    "pay_per_crawl:",
                    format!("sites[{i}].pay_per_crawl: charges are recorded in a ledger in the state directory, and none is set: add state_dir (/var/lib/crawlgate)"),
                ));
            }
        }
        if let Some(dir) = &state_dir {
            if dir.exists() && !dir.is_dir() {
                return Err(self.error(
                    Some(("state_dir", 0)),
                    format!("state_dir: `{}` exists and is not a folder", dir.display()),
                ));
            }
        }
        let clients = &file.clients;
        let defaults = ClientSettings::default();
        let timeout =
            |value: Option<HumanDuration>, default: Duration, key: &str| match value.map(|d| d.0) {
                Some(d) if d < Duration::from_secs(1) => Err(self.error(
                    Some((key, 0)),
                    format!("clients.{key}: at least 1s (nginx's default is 60s)"),
                )),
                Some(d) => Ok(d),
                None => Ok(default),
            };
        let clients = ClientSettings {
            header_timeout: timeout(
                clients.header_timeout,
                defaults.header_timeout,
                "header_timeout",
            )?,
            body_timeout: timeout(clients.body_timeout, defaults.body_timeout, "body_timeout")?,
            idle_timeout: timeout(clients.idle_timeout, defaults.idle_timeout, "idle_timeout")?,
            send_timeout: timeout(clients.send_timeout, defaults.send_timeout, "send_timeout")?,
            max_connections: clients.max_connections.map(Bounded::get),
            max_connections_per_address: clients
                .max_connections_per_address
                .map_or(defaults.max_connections_per_address, Bounded::get),
        };
        Ok(Settings {
            clients,
            trusted_proxies,
            state_dir,
            verification,
            politeness,
            state,
            listen: (file.listen.iter())
                .filter(|l| !l.proxy_protocol)
                .map(|l| l.addr)
                .collect(),
            proxy_protocol_listen: (file.listen.iter())
                .filter(|l| l.proxy_protocol)
                .map(|l| l.addr)
                .collect(),
            forward_auth_listen,
            tls_listen,
            h2c: file.h2c,
            metrics_listen: file.metrics.map(|m| m.listen.0),
            access_log,
            catalog: file.catalog.as_deref().map(|p| self.path(p)),
            sites,
            pingora: PingoraSettings {
                threads,
                grace_period_seconds: pingora.grace_period_seconds.map_or(5, |n| n.0),
                // One thread has no one to steal from: pingora's single-threaded runtime then
                // spends less CPU per request and has a lower p99 (benches/RESULTS.md, "Settings").
                work_stealing: pingora.work_stealing.unwrap_or(threads > 1),
                upstream_keepalive_pool_size: pingora
                    .upstream_keepalive_pool_size
                    .map_or(128, Bounded::get),
                listener_tasks_per_fd: pingora.listener_tasks_per_fd.map_or(1, Bounded::get),
                read_buffer_bytes: pingora
                    .read_buffer_bytes
                    .map_or(DEFAULT_READ_BUFFER_BYTES, Bounded::get),
                tls_read_buffer_bytes: pingora
                    .tls_read_buffer_bytes
                    .map_or(DEFAULT_TLS_READ_BUFFER_BYTES, Bounded::get),
            },
        })
    }

    /// A TLS listener in either form, with its files' existence checked (their content is
    /// checked when they are loaded, by `serve` and `validate`).
    fn tls_listen(&self, i: usize, tls: &TlsListenFile) -> Result<TlsListen, ConfigError> {
        let addr = tls.addr.0.to_string();
        let listener_error = |message: String| self.error(Some((&addr, 0)), message);
        let pairs: Vec<(String, &Path, &Path)> = match (&tls.cert, &tls.key) {
            (Some(cert), Some(key)) if tls.certs.is_empty() => {
                vec![(format!("tls_listen[{i}]"), cert, key)]
            }
            (None, None) if !tls.certs.is_empty() => (tls.certs.iter().enumerate())
                .map(|(j, pair)| {
                    let at = format!("tls_listen[{i}].certs[{j}]");
                    (at, pair.cert.as_path(), pair.key.as_path())
                })
                .collect(),
            (None, None) => {
                return Err(listener_error(format!(
                    "tls_listen[{i}]: no certificate: give `cert` and `key`, or `certs: [{{cert, key}}, ...]`"
                )))
            }
            (Some(_), None) | (None, Some(_)) => {
                return Err(listener_error(format!(
                    "tls_listen[{i}]: `cert` and `key` go together: give both"
                )))
            }
            (Some(_), Some(_)) => {
                return Err(listener_error(format!(
                    "tls_listen[{i}]: `cert`/`key` and `certs` both name certificates: use `certs` alone for several"
                )))
            }
        };
        let mut certs = Vec::new();
        for (at, cert, key) in pairs {
            for (what, path) in [("cert", cert), ("key", key)] {
                let resolved = self.path(path);
                if let Err(e) = std::fs::metadata(&resolved) {
                    let shown = path.display().to_string();
                    return Err(self.error(
                        Some((&shown, 0)),
                        format!("{at}.{what}: cannot read `{}`: {e}", resolved.display()),
                    ));
                }
            }
            certs.push(CertPair {
                cert: self.path(cert),
                key: self.path(key),
            });
        }
        Ok(TlsListen {
            addr: tls.addr.0,
            certs,
            proxy_protocol: tls.proxy_protocol,
        })
    }

    fn trusted_proxies(
        &self,
        file: &TrustedProxiesFile,
    ) -> Result<crate::proxy::client::TrustedProxies, ConfigError> {
        let header = match &file.header {
            None => crate::proxy::client::ForwardingHeader::default(),
            Some(name) => crate::proxy::client::ForwardingHeader::named(name).ok_or_else(|| {
                self.error(
                    Some(("header:", 0)),
                    format!("trusted_proxies.header: `{name}` is not a header name: write the one your proxies set, such as x-forwarded-for, forwarded or x-real-ip"),
                )
            })?,
        };
        Ok(crate::proxy::client::TrustedProxies::new(
            file.networks.iter().map(|n| n.0).collect(),
            header,
        ))
    }

    fn state(&self, file: &StateFile) -> Result<StateSettings, ConfigError> {
        let at = |needle: &str, message: String| ConfigError {
            origin: self.origin.to_owned(),
            line: line_in_section(self.text, "state:", needle),
            message,
        };
        crate::proxy::store::redis::check_url(&file.redis)
            .map_err(|why| at("redis", format!("state.redis: {why}")))?;
        let budget = file.budget.map_or(DEFAULT_STATE_BUDGET, |d| d.0);
        if budget.is_zero() || budget > MAX_STATE_BUDGET {
            return Err(at(
                "budget",
                format!(
                    "state.budget: {} is not between 1ms and {}s",
                    humantime::format_duration(budget),
                    MAX_STATE_BUDGET.as_secs()
                ),
            ));
        }
        Ok(StateSettings {
            redis: file.redis.clone(),
            budget,
        })
    }

    fn verification(&self, file: VerificationFile) -> Result<VerificationSettings, ConfigError> {
        let defaults = crate::proxy::verify::dns::DnsSettings::default();
        let dns = crate::proxy::verify::dns::DnsSettings {
            budget: file.dns.budget.map_or(defaults.budget, |d| d.0),
            lookup_timeout: file.dns.timeout.map_or(defaults.lookup_timeout, |d| d.0),
            positive_ttl: file.dns.positive_ttl.map_or(defaults.positive_ttl, |d| d.0),
            negative_ttl: file.dns.negative_ttl.map_or(defaults.negative_ttl, |d| d.0),
            error_ttl: defaults.error_ttl,
            cache_size: file.dns.cache_size.map_or(defaults.cache_size, |n| n.0),
            server: file.dns.server.map(|a| a.0),
            max_lookups: file
                .dns
                .max_lookups
                .map_or(defaults.max_lookups, |n| n.get()),
            max_lookups_per_client: file
                .dns
                .max_lookups_per_client
                .map_or(defaults.max_lookups_per_client, |n| n.get()),
        };
        for (token, domains) in &file.reverse_dns {
            // An empty list is allowed: it turns the catalog's domains off for that crawler.
            if domains
                .iter()
                .any(|d| d.trim_matches('.').is_empty() || d.contains(['/', ' ', ':']))
            {
                return Err(self.error(
                    Some((&token.0, 0)),
                    format!("verification.reverse_dns.{}: give domain names, such as [googlebot.com, google.com] ([] turns the catalog's off)", token.0),
                ));
            }
        }
        let signatures = self.signatures(file.signatures)?;
        Ok(VerificationSettings {
            ranges: file
                .ranges
                .into_iter()
                .map(|(token, spec)| {
                    let file = self.path(&spec.file);
                    (
                        token.0,
                        RangesSpec {
                            file,
                            url: spec.url,
                        },
                    )
                })
                .collect(),
            reverse_dns: file
                .reverse_dns
                .into_iter()
                .map(|(t, d)| (t.0, d))
                .collect(),
            on_spoofed: file.on_spoofed.unwrap_or(Action::Block),
            dns,
            signatures,
        })
    }

    fn signatures(
        &self,
        file: SignaturesFile,
    ) -> Result<crate::proxy::verify::signature::SignatureSettings, ConfigError> {
        use crate::proxy::verify::signature::{directory, DirectorySettings, SignatureSettings};
        let defaults = SignatureSettings::default();
        let mut directories = Vec::new();
        for (i, entry) in file.directories.into_iter().enumerate() {
            let url = directory::normalise(&entry.url).map_err(|e| {
                self.error(
                    Some((&entry.url, 0)),
                    format!("verification.signatures.directories[{i}].url: {e}"),
                )
            })?;
            directories.push(DirectorySettings {
                url,
                bot: entry.bot.map(|t| t.0),
                jwks: entry.jwks.map(|p| self.path(&p)),
            });
        }
        let refresh = file.refresh.map_or(defaults.refresh, |d| d.0);
        if refresh < MIN_REFRESH {
            return Err(self.error(
                Some(("refresh:", 0)),
                "verification.signatures.refresh: at least 1s".into(),
            ));
        }
        Ok(SignatureSettings {
            catalog: file.catalog.unwrap_or(defaults.catalog),
            directories,
            fetch_unlisted: file.fetch_unlisted.unwrap_or(defaults.fetch_unlisted),
            allow_private: file.allow_private.unwrap_or(defaults.allow_private),
            ca_file: file.ca_file.map(|p| self.path(&p)),
            refresh,
            timeout: file.timeout.map_or(defaults.timeout, |d| d.0),
            max_bytes: file.max_bytes.map_or(defaults.max_bytes, |n| n.get()),
            max_keys: file.max_keys.map_or(defaults.max_keys, |n| n.get()),
            skew: file.clock_skew.map_or(defaults.skew, |d| d.0),
            nonces: file.nonces.map_or(defaults.nonces, |n| n.0),
            unlisted_nonces: file
                .unlisted_nonces
                .map_or(defaults.unlisted_nonces, |n| n.0),
            limits: crate::proxy::verify::signature::limits::Limits {
                header_bytes: file
                    .max_header_bytes
                    .map_or(defaults.limits.header_bytes, |n| n.get()),
                labels: file.max_labels.map_or(defaults.limits.labels, |n| n.get()),
                nonce_bytes: file
                    .max_nonce_bytes
                    .map_or(defaults.limits.nonce_bytes, |n| n.get()),
            },
            max_fetches: file.max_fetches.map_or(defaults.max_fetches, |n| n.get()),
        })
    }

    /// The `i`-th site; `mode` is the file's, which the site's own overrides.
    fn site(
        &self,
        i: usize,
        site: SiteFile,
        mode: Option<Enforcement>,
    ) -> Result<SiteSettings, ConfigError> {
        if site.name.is_empty()
            || site.name.len() > 64
            || !site
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        {
            return Err(self.site_error(
                i,
                "name:",
                format!(
                    "sites[{i}].name: `{}` must be 1 to 64 letters, digits, `.`, `_` or `-`",
                    site.name
                ),
            ));
        }
        let mut hosts = Vec::new();
        for host in &site.hosts {
            let lower = host.trim().to_ascii_lowercase();
            if lower.is_empty() || lower.contains(['/', ' ', ':']) && !lower.starts_with('[') {
                return Err(self.site_error(
                    i,
                    host,
                    format!("sites[{i}].hosts: `{host}` is not a host name (no scheme, port or path: example.com)"),
                ));
            }
            hosts.push(lower);
        }
        let upstream = self.upstream(i, &site)?;
        let robots = self.robots(i, &site)?;
        if !(400..=599).contains(&site.block.status) {
            return Err(self.site_error(
                i,
                "status:",
                format!("sites[{i}].block.status: {} is not an error status: use 400 to 599 (403 by default)", site.block.status),
            ));
        }
        let prefix = &site.tag.prefix;
        if prefix.is_empty()
            || !prefix
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err(self.site_error(
                i,
                "prefix:",
                format!("sites[{i}].tag.prefix: `{prefix}` must be letters, digits and `-`, such as X-Crawlgate-"),
            ));
        }
        Ok(SiteSettings {
            name: site.name.clone(),
            hosts,
            upstream,
            robots,
            action: site.action,
            enforcement: site.mode.or(mode).unwrap_or_default(),
            category_actions: site.categories.clone(),
            bot_actions: site
                .bots
                .iter()
                .map(|(token, action)| (token.0.to_ascii_lowercase(), *action))
                .collect(),
            bot_tokens: site
                .bots
                .keys()
                .filter(|token| token.is_product_token())
                .map(|t| t.0.clone())
                .collect(),
            bot_names: site
                .bots
                .keys()
                .filter(|token| !token.is_product_token())
                .map(|t| (t.0.clone(), site_line(self.text, i, &t.0)))
                .collect(),
            block_status: site.block.status,
            tag_prefix: prefix.clone(),
            crawl_delay: site.crawl_delay.unwrap_or(CrawlDelayMode::Count),
            upstream_timeout: site
                .upstream_timeout
                .map_or(DEFAULT_UPSTREAM_TIMEOUT, |d| d.0),
            content_usage: site.content_usage,
            forwarding: site.forwarding,
            pay_per_crawl: self.pay_per_crawl(i, &site.pay_per_crawl)?,
        })
    }

    /// `pay_per_crawl`: each key a category of the catalog's or a product token (a key that
    /// is a category's name is the category), each value a price that is not zero.
    fn pay_per_crawl(
        &self,
        i: usize,
        prices: &std::collections::BTreeMap<String, String>,
    ) -> Result<Option<crate::pricing::Prices>, ConfigError> {
        if prices.is_empty() {
            return Ok(None);
        }
        let mut crawlers = Vec::new();
        let mut categories = Vec::new();
        for (key, text) in prices {
            let error = |message: String| {
                self.site_error(i, key, format!("sites[{i}].pay_per_crawl.{key}: {message}"))
            };
            let price = crate::pricing::Price::parse(text).map_err(|e| error(e.to_string()))?;
            if price.is_zero() {
                return Err(error(format!(
                    "`{text}` charges nothing: leave the crawler out to let it crawl for free"
                )));
            }
            let category = Category::ALL.into_iter().find(|c| c.as_str() == key);
            match category {
                Some(Category::Unlisted | Category::Unnamed) => {
                    return Err(error(
                        "not a category of the catalog's crawlers: only a verified crawler is priced, and these cannot be verified".into(),
                    ))
                }
                Some(category) => categories.push((category, price)),
                None if is_product_token(key) => crawlers.push((key.clone(), price)),
                None => {
                    return Err(error(
                        "neither a category (ai-training, ai-search, ...) nor a product token (letters, `-` and `_`, such as GPTBot)".into(),
                    ))
                }
            }
        }
        Ok(Some(crate::pricing::Prices::new(crawlers, categories)))
    }

    fn upstream(&self, i: usize, site: &SiteFile) -> Result<Upstream, ConfigError> {
        let host = match site.upstream.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                host.trim_start_matches('[').trim_end_matches(']')
            }
            _ => {
                return Err(self.site_error(
                    i,
                    "upstream:",
                    format!("sites[{i}].upstream: `{}` must be HOST:PORT, such as 127.0.0.1:8000 or origin.internal:443", site.upstream),
                ))
            }
        };
        let ca = self.upstream_ca(i, site)?;
        if !self.resolve {
            return Ok(Upstream {
                addr: UpstreamAddr::Tcp(site.upstream.clone()),
                resolved: site.upstream.parse().ok(),
                tls: site.tls,
                sni: site.sni.clone().unwrap_or_else(|| host.to_owned()),
                ca,
            });
        }
        let resolved = site
            .upstream
            .to_socket_addrs()
            .ok()
            .and_then(|mut addrs| addrs.next())
            .ok_or_else(|| {
                self.site_error(
                    i,
                    "upstream:",
                    format!(
                        "sites[{i}].upstream: `{}` does not resolve to an address",
                        site.upstream
                    ),
                )
            })?;
        Ok(Upstream {
            addr: UpstreamAddr::Tcp(site.upstream.clone()),
            resolved: Some(resolved),
            tls: site.tls,
            sni: site.sni.clone().unwrap_or_else(|| host.to_owned()),
            ca,
        })
    }

    /// A TLS origin's CA file: readable, with at least one PEM certificate.
    fn upstream_ca(&self, i: usize, site: &SiteFile) -> Result<Option<PathBuf>, ConfigError> {
        let Some(file) = &site.upstream_ca else {
            return Ok(None);
        };
        if !site.tls {
            return Err(self.site_error(
                i,
                "upstream_ca:",
                format!("sites[{i}].upstream_ca: the origin does not speak TLS: add `tls: true`, or remove upstream_ca"),
            ));
        }
        let path = self.path(file);
        let certs = std::fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|pem| {
                crate::proxy::tls::certs::pem_certificates(&pem).map_err(|e| e.to_string())
            });
        match certs {
            Ok(certs) if !certs.is_empty() => Ok(Some(path)),
            Ok(_) => Err(self.site_error(
                i,
                "upstream_ca:",
                format!(
                    "sites[{i}].upstream_ca: `{}` holds no PEM certificate",
                    path.display()
                ),
            )),
            Err(e) => Err(self.site_error(
                i,
                "upstream_ca:",
                format!(
                    "sites[{i}].upstream_ca: cannot read `{}`: {e}",
                    path.display()
                ),
            )),
        }
    }

    fn robots(&self, i: usize, site: &SiteFile) -> Result<RobotsSettings, ConfigError> {
        let robots = &site.robots;
        let source = match (&robots.file, robots.origin, &robots.inline) {
            (Some(file), None | Some(false), None) => RobotsSource::File(self.path(file)),
            (None, Some(true), None) => RobotsSource::Origin,
            (None, None | Some(false), Some(text)) => RobotsSource::Inline(text.clone()),
            _ => {
                return Err(self.site_error(
                    i,
                    "robots:",
                    format!("sites[{i}].robots: give exactly one of `file: PATH`, `origin: true` or `inline: TEXT`"),
                ));
            }
        };
        let max_bytes = robots.max_bytes.map_or(DEFAULT_MAX_BYTES, Bounded::get);
        let refresh = robots.refresh.map_or(DEFAULT_REFRESH, |d| d.0);
        if !(MIN_REFRESH..=MAX_REFRESH).contains(&refresh) {
            return Err(self.site_error(
                i,
                "refresh:",
                format!(
                    "sites[{i}].robots.refresh: use 1s to 24h (RFC 9309: a copy SHOULD NOT be \
                     used for more than 24 hours)"
                ),
            ));
        }
        let managed = match &robots.managed {
            Some(managed) => Some(self.managed(i, managed)?),
            None => None,
        };
        Ok(RobotsSettings {
            source,
            refresh,
            timeout: robots.timeout.map_or(DEFAULT_FETCH_TIMEOUT, |d| d.0),
            max_bytes,
            on_unreachable: robots.on_unreachable.unwrap_or(OnUnreachable::KeepLast),
            managed,
        })
    }

    /// `robots.managed`: crawlers named by product token, categories of the catalog's, and a
    /// `Content-Signal` value that is one line the preference parser reads without a problem
    /// (a line break in it would write lines of the operator's own into the file).
    fn managed(&self, i: usize, managed: &ManagedFile) -> Result<Managed, ConfigError> {
        let error = |what: String| {
            self.site_error(i, "managed:", format!("sites[{i}].robots.managed.{what}"))
        };
        if let Some(token) = managed
            .crawlers
            .keys()
            .find(|token| !is_product_token(token))
        {
            return Err(error(format!(
                "crawlers: `{token}` is not a product token (letters, `-` and `_`)"
            )));
        }
        if let Some(category) = managed
            .categories
            .keys()
            .find(|c| matches!(c, Category::Unlisted | Category::Unnamed))
        {
            return Err(error(format!(
                "categories: `{category}` is not a category of the catalog's crawlers"
            )));
        }
        if let Some(signal) = &managed.content_signal {
            let line = format!("User-agent: *\nContent-Signal: {signal}\n");
            let robots = crate::Robots::parse(line.as_bytes());
            let one_line = !signal.contains(['\r', '\n', '#']);
            if !one_line || !robots.problems().is_empty() || robots.file().preferences.len() != 1 {
                return Err(error(format!(
                    "content_signal: `{signal}` is not a Content-Signal value (`search=yes, ai-train=no`)"
                )));
            }
        }
        Ok(Managed {
            categories: managed
                .categories
                .iter()
                .map(|(c, choice)| (*c, *choice))
                .collect(),
            crawlers: managed
                .crawlers
                .iter()
                .map(|(token, choice)| (token.clone(), *choice))
                .collect(),
            content_signal: managed.content_signal.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Category;

    fn parse(text: &str) -> Result<Settings, ConfigError> {
        Settings::from_yaml(text, "test.yaml", Path::new("/etc/crawlgate"))
    }

    const MINIMAL: &str = "listen: [\"127.0.0.1:8080\"]\nsites:\n  - name: example\n    upstream: \"127.0.0.1:8000\"\n    robots:\n      file: robots.txt\n";

    #[test]
    fn a_minimal_file_gets_the_defaults() {
        let settings = parse(MINIMAL).unwrap();
        let site = &settings.sites[0];
        assert_eq!(site.action, Action::Block);
        assert_eq!(site.block_status, 403);
        assert_eq!(site.tag_prefix, "X-Crawlgate-");
        assert_eq!(
            site.robots.source,
            RobotsSource::File("/etc/crawlgate/robots.txt".into())
        );
        assert_eq!(site.robots.max_bytes, 512 * 1024);
        assert_eq!(site.robots.on_unreachable, OnUnreachable::KeepLast);
        assert_eq!(site.upstream.sni, "127.0.0.1");
        assert_eq!(settings.pingora.grace_period_seconds, 5);
        assert!(settings.metrics_listen.is_none());
    }

    #[test]
    fn work_stealing_is_on_by_default_only_with_more_than_one_thread() {
        let with = |pingora: &str| {
            let text = format!("{MINIMAL}pingora: {pingora}\n");
            parse(&text).unwrap().pingora.work_stealing
        };
        assert!(!with("{threads: 1}"));
        assert!(with("{threads: 2}"));
        assert!(with("{threads: 1, work_stealing: true}"));
        assert!(!with("{threads: 4, work_stealing: false}"));
    }

    #[test]
    fn unknown_keys_name_the_key_and_line() {
        let text = format!("{MINIMAL}    colour: red\n");
        let error = parse(&text).unwrap_err();
        assert_eq!(error.line, Some(7));
        assert!(error.message.contains("colour"), "{error}");
        assert!(error.message.contains("expected one of"), "{error}");
        assert!(error.to_string().starts_with("test.yaml:7: "), "{error}");
    }

    #[test]
    fn content_usage_is_off_unless_asked_for() {
        let off = parse(MINIMAL).unwrap();
        assert_eq!(off.sites[0].content_usage, ContentUsage::default());
        let on = parse(&format!(
            "{MINIMAL}    content_usage: {{enforce: true, announce: true}}\n"
        ))
        .unwrap();
        assert!(on.sites[0].content_usage.enforce && on.sites[0].content_usage.announce);
        let typo =
            format!("{MINIMAL}    content_usage:\n      enforce: true\n      anounce: true\n");
        let error = parse(&typo).unwrap_err();
        assert_eq!(error.line, Some(9), "{error}");
        assert!(error.message.contains("anounce"), "{error}");
        let not_bool = format!("{MINIMAL}    content_usage: {{enforce: sometimes}}\n");
        assert_eq!(parse(&not_bool).unwrap_err().line, Some(7));
    }

    #[test]
    fn pay_per_crawl_names_categories_or_crawlers_and_needs_a_ledger() {
        let priced = |prices: &str| {
            format!("state_dir: /var/lib/crawlgate\n{MINIMAL}    pay_per_crawl:\n{prices}")
        };
        let settings = parse(&priced(
            "      ai-training: \"USD 0.01\"\n      GPTBot: \"USD 0.05\"\n",
        ))
        .unwrap();
        let prices = settings.sites[0].pay_per_crawl.as_ref().unwrap();
        let price = |text| crate::pricing::Price::parse(text).ok();
        assert_eq!(
            prices.for_crawler("CCBot", "CCBot", Category::AiTraining),
            price("USD 0.01")
        );
        assert_eq!(
            prices.for_crawler("gptbot", "GPTBot", Category::AiTraining),
            price("USD 0.05")
        );
        assert_eq!(
            prices.for_crawler("Googlebot", "Googlebot", Category::Search),
            None
        );
        assert_eq!(parse(MINIMAL).unwrap().sites[0].pay_per_crawl, None);
        // Each error names the key, its line and what would be valid.
        for (prices, line, says) in [
            ("      ai-training: \"0.01\"\n", 9, "currency code"),
            ("      ai-training: \"USD 0\"\n", 9, "charges nothing"),
            (
                "      seo: \"USD 1\"\n      unnamed: \"USD 1\"\n",
                10,
                "cannot be verified",
            ),
            ("      \"MJ12bot\": \"USD 1\"\n", 9, "neither a category"),
        ] {
            let error = parse(&priced(prices)).unwrap_err();
            assert_eq!(error.line, Some(line), "{error}");
            assert!(error.message.contains(says), "{error}");
        }
        // Charges are recorded in the state directory: none, no prices.
        let error = parse(&format!(
            "{MINIMAL}    pay_per_crawl: {{ai-training: \"USD 0.01\"}}\n"
        ))
        .unwrap_err();
        assert_eq!(error.line, Some(7), "{error}");
        assert!(error.message.contains("add state_dir"), "{error}");
    }

    #[test]
    fn bad_values_say_what_would_be_valid() {
        let bad_action = MINIMAL.replace("    robots:", "    action: blok\n    robots:");
        let error = parse(&bad_action).unwrap_err();
        assert_eq!(error.line, Some(5));
        assert!(error.message.contains("`block`, `tag`, `count`"), "{error}");
        let bad_addr = MINIMAL.replace("127.0.0.1:8080", "localhost");
        let error = parse(&bad_addr).unwrap_err();
        assert!(error.message.contains("expected IP:PORT"), "{error}");
        assert_eq!(error.line, Some(1));
        let bad_duration = MINIMAL.replace("file: robots.txt", "origin: true\n      refresh: soon");
        let error = parse(&bad_duration).unwrap_err();
        assert!(error.message.contains("60s"), "{error}");
        let bad_token = MINIMAL.replace(
            "    robots:",
            "    bots: {\"GPTBot/1.0\": block}\n    robots:",
        );
        assert!(parse(&bad_token)
            .unwrap_err()
            .message
            .contains("product token"));
    }

    #[test]
    fn semantic_errors_have_lines_too() {
        let two_sources =
            MINIMAL.replace("file: robots.txt", "file: robots.txt\n      origin: true");
        let error = parse(&two_sources).unwrap_err();
        assert!(error.message.contains("exactly one of"), "{error}");
        assert_eq!(error.line, Some(5));
        let bad_upstream = MINIMAL.replace("127.0.0.1:8000", "127.0.0.1");
        let error = parse(&bad_upstream).unwrap_err();
        assert!(error.message.contains("HOST:PORT"), "{error}");
        assert_eq!(error.line, Some(4));
        let bad_status = MINIMAL.replace("    robots:", "    block: {status: 200}\n    robots:");
        assert!(parse(&bad_status)
            .unwrap_err()
            .message
            .contains("400 to 599"));
    }

    /// No number in a configuration can exhaust memory or overflow arithmetic: each is checked
    /// against its documented range where it is written.
    #[test]
    fn numbers_out_of_range_are_errors_with_their_line() {
        let cases = [
            (
                "file: robots.txt",
                "origin: true\n      refresh: 25h",
                "use 1s to 24h",
                7,
            ),
            (
                "file: robots.txt",
                "origin: true\n      refresh: 0s",
                "use 1s to 24h",
                7,
            ),
            (
                "file: robots.txt",
                "file: robots.txt\n      max_bytes: 0",
                "use 1 to",
                7,
            ),
            (
                "file: robots.txt",
                "file: robots.txt\n      max_bytes: 1000000000000",
                "out of range",
                7,
            ),
            (
                "    robots:",
                "    upstream_timeout: 400d\n    robots:",
                "longer than a year",
                5,
            ),
        ];
        for (from, to, message, line) in cases {
            let error = parse(&MINIMAL.replace(from, to)).unwrap_err();
            assert!(error.message.contains(message), "{to}: {error}");
            assert_eq!(error.line, Some(line), "{to}: {error}");
        }
        for pingora in [
            "threads: 0",
            "threads: 100000",
            "read_buffer_bytes: 99999999",
            "grace_period_seconds: 1e30",
        ] {
            let text = format!("{MINIMAL}pingora:\n  {pingora}\n");
            let error = parse(&text).unwrap_err();
            assert!(error.line.is_some(), "{pingora}: {error}");
        }
        let text = format!("{MINIMAL}politeness:\n  max_tracked: 18446744073709551615\n");
        assert!(parse(&text).unwrap_err().message.contains("out of range"));
    }

    #[test]
    fn tls_listeners_take_one_pair_or_a_list_and_name_the_line_of_a_mistake() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a.crt", "a.key", "b.crt", "b.key"] {
            std::fs::write(dir.path().join(name), "pem").unwrap();
        }
        let parse_in = |tls: &str| {
            let text = format!("{MINIMAL}h2c: true\ntls_listen:\n{tls}");
            Settings::from_yaml(&text, "test.yaml", dir.path())
        };
        let one = parse_in("  - {addr: \"127.0.0.1:8443\", cert: a.crt, key: a.key}\n").unwrap();
        let pair = |name: &str| CertPair {
            cert: dir.path().join(format!("{name}.crt")),
            key: dir.path().join(format!("{name}.key")),
        };
        assert_eq!(one.tls_listen[0].certs, vec![pair("a")]);
        assert!(one.h2c);
        let list = "  - addr: \"127.0.0.1:8443\"\n    certs:\n      - {cert: a.crt, key: a.key}\n      - {cert: b.crt, key: b.key}\n";
        let list = parse_in(list).unwrap();
        assert_eq!(list.tls_listen[0].certs, vec![pair("a"), pair("b")]);
        assert!(!parse(MINIMAL).unwrap().h2c);
        // Line 7 is `h2c`, 8 `tls_listen:`, 9 the listener.
        let cases = [
            ("  - {addr: \"127.0.0.1:8443\"}\n", "no certificate", 9),
            (
                "  - {addr: \"127.0.0.1:8443\", cert: a.crt}\n",
                "go together",
                9,
            ),
            (
                "  - {addr: \"127.0.0.1:8443\", cert: a.crt, key: a.key, certs: [{cert: b.crt, key: b.key}]}\n",
                "use `certs` alone",
                9,
            ),
            (
                "  - addr: \"127.0.0.1:8443\"\n    certs:\n      - {cert: a.crt, key: a.key}\n      - {cert: c.crt, key: b.key}\n",
                "tls_listen[0].certs[1].cert: cannot read",
                12,
            ),
            (
                "  - addr: \"127.0.0.1:8443\"\n    certs: [{cert: a.crt}]\n",
                "missing field `key`",
                10,
            ),
        ];
        for (tls, message, line) in cases {
            let error = parse_in(tls).unwrap_err();
            assert!(error.message.contains(message), "{tls}: {error}");
            assert_eq!(error.line, Some(line), "{tls}: {error}");
        }
    }

    #[test]
    fn sites_must_not_overlap() {
        let two = "listen: [\"127.0.0.1:8080\"]\nsites:\n  - name: a\n    hosts: [a.com]\n    upstream: \"127.0.0.1:1\"\n    robots: {origin: true}\n  - name: b\n    hosts: [b.com, A.com]\n    upstream: \"127.0.0.1:2\"\n    robots: {origin: true}\n";
        let error = parse(&two.replace("A.com", "c.com")).map(|s| s.sites.len());
        assert_eq!(error, Ok(2));
        let error = parse(&two.replace("A.com", "a.com")).unwrap_err();
        assert!(
            error.message.contains("already a host of sites[0]"),
            "{error}"
        );
        assert_eq!(error.line, Some(8));
        let error =
            parse(&two.replace("name: b", "name: a").replace("A.com", "c.com")).unwrap_err();
        assert!(error.message.contains("already the name"), "{error}");
        assert_eq!(error.line, Some(7));
        let catch_alls = two
            .replace("    hosts: [a.com]\n", "")
            .replace("    hosts: [b.com, A.com]\n", "");
        assert!(parse(&catch_alls).unwrap_err().message.contains("any host"));
    }

    #[test]
    fn no_sites_or_listeners_is_an_error() {
        assert!(parse("listen: [\"127.0.0.1:1\"]\n")
            .unwrap_err()
            .message
            .contains("at least one site"));
        let no_listen = MINIMAL.replace("listen: [\"127.0.0.1:8080\"]\n", "");
        assert!(parse(&no_listen).unwrap_err().message.contains("listen"));
    }

    #[test]
    fn flags_alone_make_a_site_and_override_a_file() {
        let flags = SiteFlags {
            upstream: Some("127.0.0.1:9000".into()),
            action: Some(Action::Tag),
            ..SiteFlags::default()
        };
        let settings = Settings::from_flags(&flags).unwrap();
        assert_eq!(settings.sites[0].robots.source, RobotsSource::Origin);
        assert_eq!(settings.sites[0].action, Action::Tag);
        let mut from_file = parse(MINIMAL).unwrap();
        let overrides = SiteFlags {
            listen: vec!["127.0.0.1:9999".into()],
            robots: Some("/srv/robots.txt".into()),
            ..flags
        };
        overrides.apply(&mut from_file).unwrap();
        assert_eq!(from_file.listen, vec!["127.0.0.1:9999".parse().unwrap()]);
        assert_eq!(
            from_file.sites[0].robots.source,
            RobotsSource::File("/srv/robots.txt".into())
        );
        assert_eq!(
            from_file.sites[0].upstream.resolved,
            Some("127.0.0.1:9000".parse().unwrap())
        );
        assert!(Settings::from_flags(&SiteFlags::default()).is_err());
    }

    #[test]
    fn signature_keys_are_validated_with_their_lines() {
        let text = format!(
            "{MINIMAL}verification:\n  signatures:\n    allow_private: true\n    ca_file: ca.pem\n    refresh: 10m\n    max_keys: 4\n    clock_skew: 5s\n    directories:\n      - url: \"HTTPS://Agent.Example/\"\n        bot: ExampleAgent\n      - url: \"https://chatgpt.com\"\n        jwks: keys/chatgpt.json\n"
        );
        let settings = parse(&text).unwrap();
        let s = &settings.verification.signatures;
        assert!(s.allow_private && s.catalog && !s.fetch_unlisted);
        assert_eq!(s.ca_file, Some(PathBuf::from("/etc/crawlgate/ca.pem")));
        assert_eq!(
            (s.refresh, s.skew, s.max_keys),
            (Duration::from_secs(600), Duration::from_secs(5), 4)
        );
        assert_eq!(s.directories[0].url, "https://agent.example");
        assert_eq!(s.directories[0].bot.as_deref(), Some("ExampleAgent"));
        assert_eq!(
            s.directories[1].jwks,
            Some(PathBuf::from("/etc/crawlgate/keys/chatgpt.json"))
        );
        let error =
            parse(&text.replace("\"https://chatgpt.com\"", "\"http://chatgpt.com\"")).unwrap_err();
        assert!(error.message.contains("only https"), "{error}");
        assert_eq!(error.line, Some(17));
        let error = parse(&text.replace("max_keys: 4", "max_keys: 0")).unwrap_err();
        assert_eq!(error.line, Some(12), "{error}");
        let error = parse(&text.replace("clock_skew", "skew")).unwrap_err();
        assert!(error.message.contains("unknown field"), "{error}");
        assert_eq!(error.line, Some(13));
        assert_eq!(
            parse(MINIMAL).unwrap().verification.signatures,
            Default::default()
        );
    }

    #[test]
    fn verification_and_politeness() {
        let text = format!(
            "{MINIMAL}    crawl_delay: enforce\ntrusted_proxies: [10.0.0.0/8, \"192.0.2.1\"]\nverification:\n  ranges:\n    Googlebot: ranges/googlebot.json\n    Bingbot: {{file: /r/bing.json, url: \"https://www.bing.com/toolbox/bingbot.json\"}}\n  reverse_dns: {{Googlebot: [googlebot.com, google.com]}}\n  on_spoofed: tag\n  dns: {{budget: 20ms, server: \"127.0.0.1:5353\"}}\npoliteness: {{grace: 1h}}\n"
        );
        let settings = parse(&text).unwrap();
        assert_eq!(settings.sites[0].crawl_delay, CrawlDelayMode::Enforce);
        assert_eq!(settings.trusted_proxies.networks().len(), 2);
        assert_eq!(settings.trusted_proxies.header().name(), "x-forwarded-for");
        let v = &settings.verification;
        assert_eq!(v.on_spoofed, Action::Tag);
        assert_eq!(v.dns.budget, Duration::from_millis(20));
        assert_eq!(v.dns.server, Some("127.0.0.1:5353".parse().unwrap()));
        let google = &v.ranges.iter().find(|(t, _)| t == "Googlebot").unwrap().1;
        assert_eq!(
            google.file,
            PathBuf::from("/etc/crawlgate/ranges/googlebot.json")
        );
        let bing = &v.ranges.iter().find(|(t, _)| t == "Bingbot").unwrap().1;
        assert_eq!(
            bing.url.as_deref(),
            Some("https://www.bing.com/toolbox/bingbot.json")
        );
        assert_eq!(settings.politeness.grace, Duration::from_secs(3600));
        assert_eq!(
            settings.politeness.robots_read_window,
            Duration::from_secs(86400)
        );
        let bad = text.replace("10.0.0.0/8", "10.0.0.0/99");
        assert!(parse(&bad)
            .unwrap_err()
            .message
            .contains("is not a network"));
        let bad = text.replace("on_spoofed: tag", "on_spoofed: ignore");
        assert!(parse(&bad)
            .unwrap_err()
            .message
            .contains("`block`, `tag`, `count`"));
        assert_eq!(
            parse(MINIMAL).unwrap().sites[0].crawl_delay,
            CrawlDelayMode::Count
        );
    }

    /// Checks the actions the only site of `text` takes on crawlers (token, name, category);
    /// returns the site.
    fn assert_actions(text: &str, cases: &[(&str, &str, Category, Action)]) -> SiteSettings {
        let site = parse(text).unwrap().sites.remove(0);
        let actions = site.actions();
        for &(token, name, category, want) in cases {
            assert_eq!(actions.for_crawler(token, name, category), want, "{name}");
        }
        site
    }

    #[test]
    fn trusted_proxies_name_the_one_header_they_write() {
        let text =
            format!("{MINIMAL}trusted_proxies:\n  networks: [10.0.0.0/8]\n  header: Forwarded\n");
        let trusted = parse(&text).unwrap().trusted_proxies;
        assert_eq!(trusted.header().name(), "forwarded");
        assert!(trusted.contains("10.1.2.3".parse().unwrap()));
        let real_ip = text.replace("Forwarded", "X-Real-IP");
        assert_eq!(
            parse(&real_ip).unwrap().trusted_proxies.header().name(),
            "x-real-ip"
        );
        let bad = text.replace("header: Forwarded", "header: \"x forwarded\"");
        let error = parse(&bad).unwrap_err();
        assert_eq!(error.line, Some(9), "{error}");
        assert!(error.message.contains("is not a header name"), "{error}");
        let unknown = text.replace("header: Forwarded", "headers: Forwarded");
        let error = parse(&unknown).unwrap_err();
        assert_eq!(error.line, Some(9), "{error}");
        assert!(error.message.contains("headers"), "{error}");
        let bad_net = text.replace("10.0.0.0/8", "10.0.0.0/99");
        let error = parse(&bad_net).unwrap_err();
        assert_eq!(error.line, Some(8), "{error}");
        assert!(error.message.contains("is not a network"), "{error}");
        assert!(parse(MINIMAL).unwrap().trusted_proxies.is_empty());
    }

    #[test]
    fn a_listener_behind_a_load_balancer_says_so_and_needs_it_trusted() {
        let sites = MINIMAL.replace("listen: [\"127.0.0.1:8080\"]\n", "");
        let both = format!("listen: [\"127.0.0.1:8080\", {{addr: \"127.0.0.1:8081\", proxy_protocol: true}}]\ntrusted_proxies: [10.0.0.0/8]\n{sites}");
        let settings = parse(&both).unwrap();
        assert_eq!(settings.listen, ["127.0.0.1:8080".parse().unwrap()]);
        assert_eq!(
            settings.proxy_protocol_listen,
            ["127.0.0.1:8081".parse().unwrap()]
        );
        let untrusted =
            format!("listen: [{{addr: \"127.0.0.1:8081\", proxy_protocol: true}}]\n{sites}");
        let error = parse(&untrusted).unwrap_err();
        assert!(
            error.message.contains("only trusted_proxies may send it"),
            "{error}"
        );
        let typo = format!("listen: [{{addr: \"127.0.0.1:8081\", proxy: true}}]\n{sites}");
        let error = parse(&typo).unwrap_err();
        assert_eq!(error.line, Some(1), "{error}");
        assert!(error.message.contains("proxy_protocol: true"), "{error}");
    }

    #[test]
    fn forward_auth_alone_is_a_listener_and_needs_a_trusted_edge() {
        let sites = MINIMAL.replace("listen: [\"127.0.0.1:8080\"]\n", "");
        let alone = format!("forward_auth: {{listen: [\"127.0.0.1:9200\"]}}\ntrusted_proxies: [127.0.0.1/32]\n{sites}");
        let settings = parse(&alone).unwrap();
        assert!(settings.listen.is_empty());
        assert_eq!(
            settings.forward_auth_listen,
            ["127.0.0.1:9200".parse().unwrap()]
        );
        let untrusted = format!("forward_auth: {{listen: [\"127.0.0.1:9200\"]}}\n{sites}");
        let error = parse(&untrusted).unwrap_err();
        assert_eq!(error.line, Some(1), "{error}");
        assert!(
            error.message.contains("only trusted_proxies may ask"),
            "{error}"
        );
        assert!(parse(&sites)
            .unwrap_err()
            .message
            .contains("forward_auth.listen"));
    }

    #[test]
    fn the_mode_is_the_files_unless_the_site_says_otherwise() {
        let mode = |text: &str| parse(text).unwrap().sites[0].enforcement;
        assert_eq!(mode(MINIMAL), Enforcement::Enforce);
        assert_eq!(
            mode(&format!("mode: observe\n{MINIMAL}")),
            Enforcement::Observe
        );
        let own = format!("mode: observe\n{MINIMAL}    mode: enforce\n");
        assert_eq!(mode(&own), Enforcement::Enforce);
        let error = parse(&format!("{MINIMAL}    mode: dry-run\n")).unwrap_err();
        assert_eq!(error.line, Some(7), "{error}");
    }

    #[test]
    fn the_state_dir_is_relative_to_the_file_and_must_be_a_folder() {
        let text = format!("{MINIMAL}state_dir: state\n");
        assert_eq!(
            parse(&text).unwrap().state_dir,
            Some(PathBuf::from("/etc/crawlgate/state"))
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        let text = format!("{MINIMAL}state_dir: {}\n", file.display());
        let error = parse(&text).unwrap_err();
        assert_eq!(error.line, Some(7), "{error}");
        assert!(error.message.contains("not a folder"), "{error}");
    }

    #[test]
    fn the_state_store_is_optional_and_checked_where_it_is_written() {
        assert_eq!(parse(MINIMAL).unwrap().state, None);
        let text = format!("{MINIMAL}state:\n  redis: \"redis://10.0.0.5:6379/0\"\n");
        let state = parse(&text).unwrap().state.unwrap();
        assert_eq!(state.redis, "redis://10.0.0.5:6379/0");
        assert_eq!(state.budget, DEFAULT_STATE_BUDGET);
        let budget = format!("{text}  budget: 20ms\n");
        assert_eq!(
            parse(&budget).unwrap().state.unwrap().budget,
            Duration::from_millis(20)
        );
        // The DNS budget above is not the store's: the error names the store's own line.
        let slow = format!(
            "{MINIMAL}verification:\n  dns: {{budget: 20ms}}\nstate:\n  redis: \"redis://10.0.0.5\"\n  budget: 10s\n"
        );
        let error = parse(&slow).unwrap_err();
        assert_eq!(error.line, Some(11), "{error}");
        assert!(error.message.contains("state.budget"), "{error}");
        let zero = format!("{text}  budget: 0s\n");
        assert_eq!(parse(&zero).unwrap_err().line, Some(9));
        let tls = format!("{MINIMAL}state: {{redis: \"rediss://:secret@cache:6380\"}}\n");
        let error = parse(&tls).unwrap_err();
        assert_eq!(error.line, Some(7), "{error}");
        assert!(!error.message.contains("secret"), "{error}");
        let url = format!("{MINIMAL}state: {{redis: \"http://cache\"}}\n");
        assert!(parse(&url).unwrap_err().message.contains("redis://"));
        let unknown = format!("{text}  password: x\n");
        let error = parse(&unknown).unwrap_err();
        assert_eq!(error.line, Some(9), "{error}");
        assert!(error.message.contains("password"), "{error}");
    }

    #[test]
    fn an_empty_reverse_dns_list_turns_the_catalogs_off() {
        let text = format!("{MINIMAL}verification:\n  reverse_dns: {{Googlebot: []}}\n");
        let settings = parse(&text).unwrap();
        assert_eq!(
            settings.verification.reverse_dns,
            vec![("Googlebot".to_owned(), Vec::new())]
        );
        let bad = text.replace("[]", "[\"..\"]");
        assert_eq!(parse(&bad).unwrap_err().line, Some(8));
    }

    #[test]
    fn per_bot_actions_are_case_insensitive() {
        let text = MINIMAL.replace(
            "    robots:",
            "    action: count\n    bots: {GPTBot: block, MJ12bot: tag}\n    robots:",
        );
        let site = assert_actions(
            &text,
            &[
                ("gptbot", "GPTBot", Category::AiTraining, Action::Block),
                ("CCBot", "CCBot", Category::AiTraining, Action::Count),
                ("MJ", "MJ12bot", Category::Seo, Action::Tag),
            ],
        );
        // A catalog name is a key, but only product tokens name crawlers of the site's own.
        assert_eq!(site.bot_tokens, ["GPTBot"]);
    }

    #[test]
    fn actions_per_category() {
        let text = MINIMAL.replace(
            "    robots:",
            "    categories: {ai-training: block, seo: tag, http-library: count}\n    robots:",
        );
        assert_actions(
            &text,
            &[
                ("SemrushBot", "SemrushBot", Category::Seo, Action::Tag),
                ("curl", "curl", Category::HttpLibrary, Action::Count),
            ],
        );
        // The default: http-library, site-service and proxy are counted, everything else gets
        // the site's action.
        let site = assert_actions(
            MINIMAL,
            &[
                ("okhttp", "okhttp", Category::HttpLibrary, Action::Count),
                ("DCV", "DCV", Category::SiteService, Action::Count),
                (
                    "Amazon",
                    "Amazon CloudFront",
                    Category::Proxy,
                    Action::Count,
                ),
                ("GPTBot", "GPTBot", Category::AiTraining, Action::Block),
            ],
        );
        assert!(site.category_actions.is_empty());
        let bad = MINIMAL.replace(
            "    robots:",
            "    categories: {robots: block}\n    robots:",
        );
        let error = parse(&bad).unwrap_err();
        assert!(error.message.contains("ai-training"), "{error}");
        assert_eq!(error.line, Some(5));
    }

    #[test]
    fn reverse_dns_lookups_are_bounded_within_ranges() {
        let defaults = parse(MINIMAL).unwrap().verification.dns;
        assert_eq!(
            (defaults.max_lookups, defaults.max_lookups_per_client),
            (256, 4)
        );
        let text = format!(
            "{MINIMAL}verification:\n  dns:\n    max_lookups: 64\n    max_lookups_per_client: 2\n"
        );
        let dns = parse(&text).unwrap().verification.dns;
        assert_eq!((dns.max_lookups, dns.max_lookups_per_client), (64, 2));
        let error = parse(&text.replace("max_lookups: 64", "max_lookups: 0")).unwrap_err();
        assert!(error.message.contains("1 to 65536"), "{error}");
        assert_eq!(error.line, Some(9), "{error}");
        let error = parse(&text.replace("client: 2", "client: 5000")).unwrap_err();
        assert!(error.message.contains("1 to 1024"), "{error}");
    }

    #[test]
    fn signature_limits_have_defaults_and_ranges() {
        let defaults = parse(MINIMAL).unwrap().verification.signatures;
        assert_eq!(
            (
                defaults.limits.header_bytes,
                defaults.limits.labels,
                defaults.limits.nonce_bytes
            ),
            (4096, 8, 256)
        );
        assert_eq!(
            (defaults.unlisted_nonces, defaults.max_fetches),
            (10_000, 4)
        );
        let text = format!(
            "{MINIMAL}verification:\n  signatures:\n    max_header_bytes: 1024\n    max_labels: 2\n    max_nonce_bytes: 64\n    unlisted_nonces: 50\n    max_fetches: 8\n"
        );
        let s = parse(&text).unwrap().verification.signatures;
        assert_eq!(
            (s.limits.header_bytes, s.limits.labels, s.limits.nonce_bytes),
            (1024, 2, 64)
        );
        assert_eq!((s.unlisted_nonces, s.max_fetches), (50, 8));
        for (from, to, range) in [
            (
                "max_header_bytes: 1024",
                "max_header_bytes: 100",
                "256 to 65536",
            ),
            ("max_labels: 2", "max_labels: 65", "1 to 64"),
            ("max_nonce_bytes: 64", "max_nonce_bytes: 5000", "16 to 4096"),
            ("max_fetches: 8", "max_fetches: 0", "1 to 64"),
        ] {
            let error = parse(&text.replace(from, to)).unwrap_err();
            assert!(error.message.contains(range), "{to}: {error}");
            assert!(error.line.is_some(), "{error}");
        }
    }
}

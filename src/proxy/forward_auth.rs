//! Forward-auth: crawlgate beside an edge proxy instead of in its path. The edge (nginx
//! `auth_request`, Caddy `forward_auth`, Traefik `ForwardAuth`) asks about each request in a
//! subrequest that carries the original's User-Agent and names its method, host and target in
//! headers; crawlgate judges it as it would judge the request itself and answers `200` (let it
//! through, with the tag headers for the edge to pass on) or its own refusal. This module reads
//! the subrequest and writes the answer; the judgement is the proxy's ([`super::decide`]).

use super::decide::Decision;
use http::HeaderMap;

/// The original request, as the edge describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Original<'a> {
    /// Its method (`GET` unless the edge says).
    pub method: &'a str,
    /// Its host, as the edge names it (without it, the subrequest's `Host`).
    pub host: Option<&'a [u8]>,
    /// Its path and query.
    pub target: &'a str,
    /// The edge is nginx (`X-Original-URI`), whose `auth_request` passes only 401 and 403 on to
    /// the client and turns every other status into a 500.
    pub nginx: bool,
    /// `https` unless the edge says `http` (as a signature's `@scheme` reads it).
    pub scheme: &'static str,
}

/// Why a subrequest cannot be judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    /// Neither `X-Original-URI` nor `X-Forwarded-Uri`, or one that is not a path.
    #[error("crawlgate forward-auth: the subrequest names no original target (X-Original-URI or X-Forwarded-Uri, starting with `/`)")]
    NoTarget,
}

fn header<'a>(headers: &'a HeaderMap, names: &[&str]) -> Option<&'a [u8]> {
    names
        .iter()
        .find_map(|name| headers.get(*name))
        .map(|value| value.as_bytes())
        .filter(|value| !value.is_empty())
}

/// Reads the original request from a subrequest's headers: nginx's conventional `X-Original-*`
/// first (its `auth_request` sends nothing by itself: the edge's configuration sets them),
/// then the `X-Forwarded-*` that Caddy and Traefik send.
pub fn original(headers: &HeaderMap) -> Result<Original<'_>, AskError> {
    let nginx = headers.contains_key("x-original-uri");
    let target = header(headers, &["x-original-uri", "x-forwarded-uri"])
        .and_then(|value| std::str::from_utf8(value).ok())
        .filter(|target| target.starts_with('/'))
        .ok_or(AskError::NoTarget)?;
    let method = header(headers, &["x-original-method", "x-forwarded-method"])
        .and_then(|value| std::str::from_utf8(value).ok())
        .unwrap_or("GET");
    let host = header(headers, &["x-original-host", "x-forwarded-host"])
        .or_else(|| header(headers, &["host"]));
    let scheme = match header(headers, &["x-forwarded-proto"]) {
        Some(b"http") => "http",
        _ => "https",
    };
    Ok(Original {
        method,
        host,
        target,
        nginx,
        scheme,
    })
}

/// What crawlgate answers the edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthAnswer {
    /// `200` to let the request through, else the refusal's status (`403` for nginx, which
    /// passes no other; the real one is in `X-Crawlgate-Status`).
    pub status: u16,
    /// Headers: the tag headers of a tagged request, or `X-Crawlgate-Status` and `Retry-After`
    /// of a refusal.
    pub headers: Vec<(String, String)>,
    /// Whether it is a refusal (its body is the judgement's response's).
    pub refused: bool,
}

/// The header naming the status crawlgate chose, for an edge that cannot pass it on.
pub const STATUS_HEADER: &str = "X-Crawlgate-Status";

/// The answer to the edge for a decision: the judgement's own response when crawlgate would
/// answer the request itself, else `200` with the tag headers (those the proxy would send the
/// origin) when the request is tagged.
pub fn answer(decision: &Decision, nginx: bool) -> AuthAnswer {
    match &decision.judgement.response {
        Some(response) => {
            let passed = !nginx || matches!(response.status, 401 | 403);
            let mut headers = vec![(STATUS_HEADER.to_owned(), response.status.to_string())];
            if let Some(seconds) = response.retry_after {
                headers.push(("Retry-After".to_owned(), seconds.to_string()));
            }
            AuthAnswer {
                status: if passed { response.status } else { 403 },
                headers,
                refused: true,
            }
        }
        None => AuthAnswer {
            status: 200,
            headers: decision.tag_headers(),
            refused: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn nginx_caddy_and_traefik_subrequests_are_read() {
        let nginx = headers(&[
            ("host", "127.0.0.1:9200"),
            ("x-original-uri", "/private/x?a=1"),
            ("x-original-method", "POST"),
            ("x-forwarded-host", "shop.example"),
            ("x-forwarded-proto", "http"),
        ]);
        assert_eq!(
            original(&nginx),
            Ok(Original {
                method: "POST",
                host: Some(&b"shop.example"[..]),
                target: "/private/x?a=1",
                nginx: true,
                scheme: "http",
            })
        );
        let traefik = headers(&[
            ("host", "shop.example"),
            ("x-forwarded-uri", "/a"),
            ("x-forwarded-method", "GET"),
        ]);
        let read = original(&traefik).unwrap();
        assert_eq!(
            (read.target, read.host, read.nginx, read.scheme),
            ("/a", Some(&b"shop.example"[..]), false, "https")
        );
    }

    #[test]
    fn a_subrequest_without_its_target_cannot_be_judged() {
        assert_eq!(
            original(&headers(&[("host", "x")])),
            Err(AskError::NoTarget)
        );
        let absolute = headers(&[("x-forwarded-uri", "http://x/a")]);
        assert_eq!(original(&absolute), Err(AskError::NoTarget));
    }
}

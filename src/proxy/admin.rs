//! The metrics listener: `/metrics` (Prometheus text) and `/healthz` (ok, degraded and why, or
//! failing and why).

use super::state::Shared;
use async_trait::async_trait;
use http::{header, Response, StatusCode};
use pingora::apps::http_app::{HttpServer, ServeHttp};
use pingora::protocols::http::ServerSession;
use std::sync::Arc;

/// Serves the metrics and the health of one crawlgate process.
pub struct AdminApp {
    shared: Arc<Shared>,
}

/// The pingora app of the metrics listener.
pub type AdminServer = HttpServer<AdminApp>;

impl AdminApp {
    /// The app, ready to be given a listener.
    pub fn server(shared: Arc<Shared>) -> AdminServer {
        HttpServer::new_app(AdminApp { shared })
    }

    fn answer(&self, path: &str) -> (StatusCode, &'static str, Vec<u8>) {
        match path {
            "/metrics" => {
                self.shared.refresh_gauges();
                (
                    StatusCode::OK,
                    "text/plain; version=0.0.4; charset=utf-8",
                    self.shared.metrics.render(),
                )
            }
            "/healthz" => {
                let health = self.shared.health();
                let degraded = health.degraded_lines();
                let (status, body) = if health.stopping {
                    // Draining: a load balancer must send nothing new.
                    (StatusCode::SERVICE_UNAVAILABLE, "stopping".to_owned())
                } else if degraded.is_empty() {
                    (StatusCode::OK, "ok".to_owned())
                } else {
                    // Still serving every request (a site's stand-in is enforced, the shared
                    // store's answers come from memory): one site's origin must not take the
                    // instance out for every site.
                    (StatusCode::OK, format!("degraded\n{}", degraded.join("\n")))
                };
                text(status, body)
            }
            _ if path.starts_with("/healthz/") => self.site_health(&path["/healthz/".len()..]),
            _ => (
                StatusCode::NOT_FOUND,
                "text/plain; charset=utf-8",
                b"crawlgate: try /metrics, /healthz, /healthz/site/NAME or /healthz/host/HOST\n"
                    .to_vec(),
            ),
        }
    }

    /// One site's readiness, for load balancers that route by host: `/healthz/site/NAME` or
    /// `/healthz/host/HOST`; 200 `ok`, or 503 with why (its robots.txt cannot be fetched, and
    /// a stand-in is enforced; or the process is stopping).
    fn site_health(&self, which: &str) -> (StatusCode, &'static str, Vec<u8>) {
        let health = self.shared.health();
        let site = match which.split_once('/') {
            Some(("site", name)) => health.site(Some(name), None),
            Some(("host", host)) => health.site(None, Some(host)),
            _ => None,
        };
        let Some(site) = site else {
            return text(
                StatusCode::NOT_FOUND,
                format!("no site {}", super::service::sanitize(which)),
            );
        };
        match (&site.problem, health.stopping) {
            (_, true) => text(StatusCode::SERVICE_UNAVAILABLE, "stopping".to_owned()),
            (Some(problem), _) => text(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("site {}: {problem}", site.name),
            ),
            (None, _) => text(StatusCode::OK, "ok".to_owned()),
        }
    }
}

/// A text answer.
fn text(status: StatusCode, body: String) -> (StatusCode, &'static str, Vec<u8>) {
    (
        status,
        "text/plain; charset=utf-8",
        format!("{body}\n").into_bytes(),
    )
}

#[async_trait]
impl ServeHttp for AdminApp {
    async fn response(&self, session: &mut ServerSession) -> Response<Vec<u8>> {
        let (status, content_type, body) = self.answer(session.req_header().uri.path());
        let mut response = Response::new(body);
        *response.status_mut() = status;
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static(content_type),
        );
        headers.insert(
            header::CACHE_CONTROL,
            header::HeaderValue::from_static("no-store"),
        );
        response
    }
}

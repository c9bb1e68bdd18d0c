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
                let (status, body) = if !health.failing.is_empty() {
                    let mut lines = health.failing;
                    lines.extend(health.degraded);
                    (StatusCode::SERVICE_UNAVAILABLE, lines.join("\n"))
                } else if !health.degraded.is_empty() {
                    // Still serving every request: a load balancer must not take it out.
                    (
                        StatusCode::OK,
                        format!("degraded\n{}", health.degraded.join("\n")),
                    )
                } else {
                    (StatusCode::OK, "ok".to_owned())
                };
                (
                    status,
                    "text/plain; charset=utf-8",
                    format!("{body}\n").into_bytes(),
                )
            }
            _ => (
                StatusCode::NOT_FOUND,
                "text/plain; charset=utf-8",
                b"crawlgate: try /metrics or /healthz\n".to_vec(),
            ),
        }
    }
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

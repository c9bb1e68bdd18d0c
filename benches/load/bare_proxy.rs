//! The engine's floor: a pingora reverse proxy that forwards every request to one origin and
//! does nothing else. `benches/load.sh` measures crawlgate against it (and against nginx), with
//! the same pingora settings, to put a number on what enforcement costs.
//!
//! `cargo run --release --example bare_proxy -- LISTEN UPSTREAM THREADS [TIMEOUT_SECONDS]`
//!
//! With `TIMEOUT_SECONDS`, the origin's reads and writes get the timeouts crawlgate sets
//! (`upstream_timeout`), so that their cost can be told apart from enforcement's. With
//! `BARE_FORWARDING=1` in the environment it also tells the origin who the visitor is, as any
//! deployment in front of an application must (`X-Forwarded-For`, `-Proto`, `-Host`, written the
//! plain way), so that enforcement is compared with the same work done.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use async_trait::async_trait;
use pingora::http::RequestHeader;
use pingora::prelude::*;
use pingora::proxy::{ProxyHttp, Session};
use pingora::server::configuration::ServerConf;

struct Bare {
    peer: HttpPeer,
    forwarding: bool,
}

#[async_trait]
impl ProxyHttp for Bare {
    type CTX = ();

    fn new_ctx(&self) {}

    async fn upstream_peer(&self, _session: &mut Session, _ctx: &mut ()) -> Result<Box<HttpPeer>> {
        Ok(Box::new(self.peer.clone()))
    }

    async fn upstream_request_filter(
        &self,
        session: &mut Session,
        upstream: &mut RequestHeader,
        _ctx: &mut (),
    ) -> Result<()> {
        if !self.forwarding {
            return Ok(());
        }
        if let Some(peer) = session.client_addr().and_then(|a| a.as_inet()) {
            upstream.insert_header("x-forwarded-for", peer.ip().to_string())?;
        }
        upstream.insert_header("x-forwarded-proto", "http")?;
        if let Some(host) = session.req_header().headers.get("host").cloned() {
            upstream.insert_header("x-forwarded-host", host)?;
        }
        Ok(())
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let listen = args.get(1).map_or("127.0.0.1:6190", String::as_str);
    let upstream: std::net::SocketAddr = args
        .get(2)
        .map_or("127.0.0.1:8000", String::as_str)
        .parse()
        .unwrap();
    let threads: usize = args.get(3).map_or(Ok(1), |t| t.parse()).unwrap();
    let timeout: Option<u64> = args.get(4).map(|t| t.parse().unwrap());
    let conf = ServerConf {
        threads,
        grace_period_seconds: Some(0),
        graceful_shutdown_timeout_seconds: Some(1),
        ..ServerConf::default()
    };
    let mut server = Server::new_with_opt_and_conf(None, conf);
    server.bootstrap();
    let mut peer = HttpPeer::new(upstream, false, String::new());
    if let Some(seconds) = timeout {
        peer.options.read_timeout = Some(std::time::Duration::from_secs(seconds));
        peer.options.write_timeout = Some(std::time::Duration::from_secs(seconds));
    }
    let forwarding = std::env::var_os("BARE_FORWARDING").is_some_and(|v| v == "1");
    let mut proxy =
        pingora::proxy::http_proxy_service(&server.configuration, Bare { peer, forwarding });
    proxy.add_tcp(listen);
    server.add_service(proxy);
    server.run_forever();
}

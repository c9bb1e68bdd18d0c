//! The embedded demo site: a few pages and its own robots.txt, served on a Unix socket in front
//! of which `crawlgate serve` runs when it is given no configuration at all.

use async_trait::async_trait;
use http::{header, Response, StatusCode};
use pingora::apps::http_app::{HttpServer, ServeHttp};
use pingora::protocols::http::ServerSession;

/// Where the demo listens unless told otherwise (`serve --listen`).
pub const DEFAULT_ADDRESS: &str = "127.0.0.1:8080";

/// The demo site's robots.txt: GPTBot may fetch nothing, nobody may fetch /private/.
pub fn demo_robots(address: &str) -> String {
    format!(
        "# The crawlgate demo site\n\
         User-agent: GPTBot\n\
         Disallow: /\n\
         \n\
         User-agent: *\n\
         Disallow: /private/\n\
         Allow: /private/press/\n\
         \n\
         Sitemap: http://{address}/sitemap.xml\n"
    )
}

/// The demo site.
pub struct DemoApp;

/// The pingora app of the demo site.
pub type DemoServer = HttpServer<DemoApp>;

impl DemoApp {
    /// The app, ready to be given a listener.
    pub fn server() -> DemoServer {
        HttpServer::new_app(DemoApp)
    }
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head>\n\
         <body><h1>{title}</h1>\n{body}\n\
         <p><a href=\"/\">home</a> · <a href=\"/blog/\">blog</a> · <a href=\"/private/\">private</a> · \
         <a href=\"/robots.txt\">robots.txt</a></p></body></html>\n"
    )
}

/// The demo site's answer for a path asked for on `address` (the Host it was asked on, which
/// its absolute links name): status, content type, body.
pub fn demo_page(path: &str, address: &str) -> (StatusCode, &'static str, String) {
    let html = "text/html; charset=utf-8";
    match path {
        "/" => (StatusCode::OK, html, page("crawlgate demo", &format!("<p>This page is served by the demo origin, through crawlgate. Try <code>curl -A 'GPTBot/1.2' http://{address}/</code>.</p>"))),
        "/blog/" => (StatusCode::OK, html, page("Blog", "<ul><li><a href=\"/blog/hello\">Hello, crawlers</a></li></ul>")),
        "/blog/hello" => (StatusCode::OK, html, page("Hello, crawlers", "<p>Read /robots.txt before you fetch.</p>")),
        "/private/" | "/private/report" => (StatusCode::OK, html, page("Private", "<p>robots.txt asks every crawler to stay out of here.</p>")),
        "/private/press/" => (StatusCode::OK, html, page("Press kit", "<p>Crawlers may fetch this one.</p>")),
        "/robots.txt" => (StatusCode::OK, "text/plain; charset=utf-8", demo_robots(address)),
        "/sitemap.xml" => (
            StatusCode::OK,
            "application/xml",
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\
                 <url><loc>http://{address}/</loc></url><url><loc>http://{address}/blog/</loc></url></urlset>\n"
            ),
        ),
        _ => (StatusCode::NOT_FOUND, html, page("Not found", "<p>No such page on the demo site.</p>")),
    }
}

#[async_trait]
impl ServeHttp for DemoApp {
    async fn response(&self, session: &mut ServerSession) -> Response<Vec<u8>> {
        let request = session.req_header();
        // Only a host name and port are written into the page: anything else is not echoed.
        let address = request
            .headers
            .get(header::HOST)
            .and_then(|host| host.to_str().ok())
            .filter(|host| {
                host.bytes().all(|b| {
                    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']')
                })
            })
            .unwrap_or(DEFAULT_ADDRESS);
        let (status, content_type, body) = demo_page(request.uri.path(), address);
        let mut response = Response::new(body.into_bytes());
        *response.status_mut() = status;
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static(content_type),
        );
        response
    }
}

//! nginx as the reference reverse proxy: configured as operators configure it in front of an
//! application (`proxy_pass`, `proxy_http_version 1.1`, the usual `X-Forwarded-*` lines and the
//! WebSocket upgrade map), on a plain and a TLS (HTTP/2) listener, so that a test can run each
//! case through crawlgate and through nginx and compare. `.ci/run` installs nginx; a machine
//! without it fails these tests rather than skipping them.

use super::{free_port, wait_for, TestCa};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};

/// A running nginx in front of `upstream`.
pub struct Nginx {
    pub port: u16,
    pub tls_port: u16,
    /// The CA that signed the TLS listener's certificate (for `localhost`), PEM.
    pub ca: String,
    child: Child,
    dir: tempfile::TempDir,
}

/// The nginx binary: on PATH, or where Debian puts it.
fn binary() -> String {
    for candidate in [
        "/usr/sbin/nginx",
        "/usr/local/sbin/nginx",
        "/usr/local/nginx/sbin/nginx",
    ] {
        if std::path::Path::new(candidate).exists() {
            return candidate.to_owned();
        }
    }
    "nginx".to_owned()
}

impl Nginx {
    /// Starts nginx in front of `upstream`, reading the origin's response for at most
    /// `read_timeout_seconds` of silence (`proxy_read_timeout`).
    pub fn start(upstream: SocketAddr, read_timeout_seconds: u64) -> Nginx {
        let location = format!(
            "location / {{\n\
               proxy_pass http://{upstream};\n\
               proxy_http_version 1.1;\n\
               proxy_read_timeout {read_timeout_seconds}s;\n\
               proxy_set_header Host $host;\n\
               proxy_set_header X-Real-IP $remote_addr;\n\
               proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n\
               proxy_set_header X-Forwarded-Proto $scheme;\n\
               proxy_set_header X-Forwarded-Host $host;\n\
               proxy_set_header Upgrade $http_upgrade;\n\
               proxy_set_header Connection $connection_upgrade;\n\
             }}\n"
        );
        Nginx::with_locations(&location)
    }

    /// Starts nginx with `locations` (nginx configuration text) in its one `server` block.
    pub fn with_locations(locations: &str) -> Nginx {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let tls_port = free_port();
        let ca = TestCa::new();
        let (cert, key) = ca.issue(&["localhost"], 1);
        std::fs::write(dir.path().join("cert.pem"), cert).unwrap();
        std::fs::write(dir.path().join("key.pem"), key).unwrap();
        let d = dir.path().display();
        let config = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log info;\n\
             events {{ worker_connections 1024; }}\n\
             http {{\n\
               access_log off;\n\
               client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fcgi;\n\
               uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;\n\
               map $http_upgrade $connection_upgrade {{ default upgrade; '' close; }}\n\
               server {{\n\
                 listen 127.0.0.1:{port};\n\
                 listen 127.0.0.1:{tls_port} ssl http2;\n\
                 ssl_certificate {d}/cert.pem; ssl_certificate_key {d}/key.pem;\n\
                 {locations}\n\
               }}\n\
             }}\n"
        );
        let file = dir.path().join("nginx.conf");
        std::fs::write(&file, config).unwrap();
        let child = Command::new(binary())
            .arg("-c")
            .arg(&file)
            .arg("-p")
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect(
                "nginx is the reference proxy of these tests: install it (apt-get install nginx)",
            );
        let nginx = Nginx {
            port,
            tls_port,
            ca: ca.pem(),
            child,
            dir,
        };
        wait_for("nginx to listen", || {
            (TcpStream::connect(("127.0.0.1", port)).is_ok()
                && TcpStream::connect(("127.0.0.1", tls_port)).is_ok())
            .then_some(())
        });
        nginx
    }

    /// nginx's error log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

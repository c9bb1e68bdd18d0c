//! A Redis-compatible store server (`redis-server` or `valkey-server`) on a loopback port, with
//! no persistence, in a temporary folder of its own: the shared state store of the fleet tests.

use super::{free_port, wait_for};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A Redis-compatible server on a loopback port, with no persistence, in a temporary folder.
pub struct StoreServer {
    binary: &'static str,
    pub port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl StoreServer {
    /// Starts `redis-server` or `valkey-server`; `None` (with a note) when neither is installed.
    pub fn start() -> Option<StoreServer> {
        let binary = ["redis-server", "valkey-server"].into_iter().find(|b| {
            Command::new(b)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        });
        let Some(binary) = binary else {
            eprintln!(
                "note: neither redis-server nor valkey-server is installed; the fleet test is skipped (.ci/run installs redis-server)"
            );
            return None;
        };
        let mut server = StoreServer {
            binary,
            port: free_port(),
            dir: tempfile::tempdir().unwrap(),
            child: None,
        };
        server.spawn();
        Some(server)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Starts the server (again) on its port and waits until it answers.
    pub fn spawn(&mut self) {
        let log = std::fs::File::create(self.dir.path().join("server.log")).unwrap();
        let child = Command::new(self.binary)
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        wait_for("the store to answer", || {
            (self.command("PING").as_deref() == Some("+PONG")).then_some(())
        });
    }

    /// Stops (`STOP`) or resumes (`CONT`) the server: a store that accepts connections and
    /// answers nothing, as an overloaded or swapping one does.
    pub fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().unwrap().id().to_string();
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Kills the server, as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    /// Sends one inline command and returns the first line of the reply.
    pub fn command(&self, command: &str) -> Option<String> {
        self.reply(command)?.lines().next().map(str::to_owned)
    }

    /// Sends one inline command and returns its whole reply, as the server wrote it (read once:
    /// replies of a few KiB).
    pub fn reply(&self, command: &str) -> Option<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        stream.write_all(format!("{command}\r\n").as_bytes()).ok()?;
        let mut reply = vec![0u8; 64 * 1024];
        let n = stream.read(&mut reply).ok()?;
        Some(String::from_utf8_lossy(&reply[..n]).into_owned())
    }
}

impl Drop for StoreServer {
    fn drop(&mut self) {
        self.kill();
    }
}

//! A real HTTP proxy for a test: tinyproxy (Debian's `tinyproxy` package;
//! `.ci/run` installs it) on a free loopback port, asking for Basic
//! credentials, logging each request. Stopped when dropped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct Tinyproxy {
    child: Child,
    dir: tempfile::TempDir,
    pub port: u16,
}

impl Tinyproxy {
    /// Starts a proxy that takes `user:password`; `None` (the test skips,
    /// saying so) when tinyproxy is not installed, except under `CI=true`,
    /// where that fails the test. Returns once it accepts connections.
    pub async fn start(user: &str, password: &str) -> Option<Tinyproxy> {
        let Some(bin) = ["/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
        else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "tinyproxy is not installed (apt-get install -y tinyproxy; .ci/run does it)"
            );
            eprintln!("SKIPPED: tinyproxy is not installed (apt-get install -y tinyproxy)");
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("toolscore-proxy")
            .tempdir()
            .unwrap();
        // A port that was free a moment ago; tinyproxy cannot take port 0.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = dir.path().join("tinyproxy.log");
        // No ConnectPort line: CONNECT to any port (the test servers' are
        // ephemeral).
        let conf = format!(
            "Port {port}\nListen 127.0.0.1\nTimeout 30\nMaxClients 16\nAllow 127.0.0.1\n\
             LogLevel Info\nLogFile \"{}\"\nBasicAuth {user} {password}\n",
            log.display()
        );
        let conf_path = dir.path().join("tinyproxy.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let child = Command::new(bin)
            .arg("-d")
            .arg("-c")
            .arg(&conf_path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut proxy = Tinyproxy { child, dir, port };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return Some(proxy);
            }
            if let Ok(Some(status)) = proxy.child.try_wait() {
                panic!("tinyproxy exited ({status}): {}", proxy.log());
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "tinyproxy did not listen within 10 s: {}",
                proxy.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// `http://user:password@127.0.0.1:<port>`.
    pub fn url(&self, user: &str, password: &str) -> String {
        format!("http://{user}:{password}@127.0.0.1:{}", self.port)
    }

    /// What tinyproxy logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("tinyproxy.log")).unwrap_or_default()
    }
}

impl Drop for Tinyproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

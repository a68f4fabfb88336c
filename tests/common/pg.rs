//! A real PostgreSQL server for a test: `initdb` and `pg_ctl` from the
//! machine's PostgreSQL (Debian's `postgresql` package; `.ci/run` installs
//! it), a data directory and socket in a temp dir, a free port on loopback,
//! trust authentication. PostgreSQL refuses to run as root, so as root it
//! runs as the `postgres` user. Stopped (immediately) when dropped.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Pg {
    dir: tempfile::TempDir,
    bin: PathBuf,
    pub port: u16,
    /// Run the server's commands as `postgres` (we are root).
    as_postgres: bool,
}

/// The newest `/usr/lib/postgresql/<version>/bin`, or `TOOLSCORE_PG_BIN`.
fn bin_dir() -> Option<PathBuf> {
    if let Ok(dir) = std::env::var("TOOLSCORE_PG_BIN") {
        return Some(dir.into());
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let v = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, b)| b)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

impl Pg {
    /// Starts a server; `None` (the test skips, saying so) when PostgreSQL
    /// is not installed, except under `CI=true`, where that fails the test.
    pub fn start() -> Option<Pg> {
        let Some(bin) = bin_dir() else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "PostgreSQL is not installed (apt-get install -y postgresql; .ci/run does it)"
            );
            eprintln!("SKIPPED: PostgreSQL is not installed (apt-get install -y postgresql)");
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("toolscore-pg")
            .tempdir()
            .unwrap();
        let as_postgres = is_root();
        let pg = Pg {
            port: free_port(),
            dir,
            bin,
            as_postgres,
        };
        if as_postgres {
            let ok = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(pg.dir.path())
                .status()
                .unwrap()
                .success();
            assert!(ok, "chown of the data directory failed");
        }
        let data = pg.data();
        pg.run(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                "toolscore",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
        );
        pg.start_again();
        Some(pg)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// One of the server's tools, as the user the server runs as.
    fn command(&self, tool: &str) -> Command {
        let exe = self.bin.join(tool);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        cmd.current_dir(self.dir.path());
        cmd
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let out = self.command(tool).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{tool} {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Starts the server (again, after [`stop`](Self::stop)) on the same
    /// port and data; returns once it accepts connections.
    pub fn start_again(&self) {
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("server.log");
        self.run(
            "pg_ctl",
            &[
                "-D",
                self.data().to_str().unwrap(),
                "-o",
                &opts,
                "-l",
                log.to_str().unwrap(),
                "-w",
                "-t",
                "60",
                "start",
            ],
        );
    }

    /// Restarts the server with TLS on (`ssl = on`), serving this
    /// certificate and key (PEM). `only`: TCP clients must use TLS
    /// (`hostssl` in pg_hba.conf); else plaintext is taken too.
    pub fn enable_ssl(&self, cert_pem: &str, key_pem: &str, only: bool) {
        let (cert, key) = (
            self.dir.path().join("server.crt"),
            self.dir.path().join("server.key"),
        );
        std::fs::write(&cert, cert_pem).unwrap();
        std::fs::write(&key, key_pem).unwrap();
        // The server refuses a key others can read.
        let ok = Command::new("chmod")
            .arg("600")
            .arg(&key)
            .status()
            .unwrap()
            .success();
        assert!(ok, "chmod of the key failed");
        if self.as_postgres {
            let ok = Command::new("chown")
                .arg("postgres:postgres")
                .args([&cert, &key])
                .status()
                .unwrap()
                .success();
            assert!(ok, "chown of the certificate failed");
        }
        let conf = format!(
            "\nssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\n",
            cert.display(),
            key.display()
        );
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(self.data().join("postgresql.conf"))
            .unwrap();
        std::io::Write::write_all(&mut file, conf.as_bytes()).unwrap();
        if only {
            let hba = self.data().join("pg_hba.conf");
            let text = std::fs::read_to_string(&hba).unwrap();
            let text: Vec<String> = text
                .lines()
                .map(|l| match l.strip_prefix("host ") {
                    Some(rest) => format!("hostssl {rest}"),
                    None => l.to_owned(),
                })
                .collect();
            std::fs::write(&hba, text.join("\n") + "\n").unwrap();
        }
        self.stop();
        self.start_again();
    }

    /// Stops the server at once (connections are cut, as in an outage).
    pub fn stop(&self) {
        self.run(
            "pg_ctl",
            &[
                "-D",
                self.data().to_str().unwrap(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        );
    }

    /// A new, empty database; its URL.
    pub fn database(&self, name: &str) -> String {
        self.sql("postgres", &format!("CREATE DATABASE {name}"));
        self.url(name)
    }

    /// Runs SQL in database `db` (on a thread of its own: the client blocks,
    /// and may be called from async tests).
    pub fn sql(&self, db: &str, sql: &str) {
        let (url, sql) = (self.url(db), sql.to_owned());
        std::thread::spawn(move || {
            let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
            c.batch_execute(&sql).unwrap();
        })
        .join()
        .unwrap();
    }

    /// The number one query gives on database `db` (on a thread of its own,
    /// as [`sql`](Pg::sql)).
    pub fn number(&self, db: &str, query: &str) -> i64 {
        let (url, query) = (self.url(db), query.to_owned());
        std::thread::spawn(move || {
            let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
            c.query_one(&query, &[]).unwrap().get(0)
        })
        .join()
        .unwrap()
    }

    /// Runs `sql` (with trace ID `id` as `$1`) in a transaction on database
    /// `db` that stays open, holding its locks, until the returned
    /// [`Held`] is released; then it is rolled back.
    pub fn hold(&self, db: &str, sql: &'static str, id: [u8; 16]) -> Held {
        let url = self.url(db);
        let (held_tx, held) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
            let mut tx = c.transaction().unwrap();
            tx.execute(sql, &[&&id[..]]).unwrap();
            held_tx.send(()).unwrap();
            let _ = released.recv();
            tx.rollback().unwrap();
        });
        held.recv().unwrap();
        Held { release, thread }
    }

    pub fn url(&self, db: &str) -> String {
        format!("postgres://toolscore@127.0.0.1:{}/{db}", self.port)
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        let data = self.data();
        let _ = self
            .command("pg_ctl")
            .args(["-D", data.to_str().unwrap_or(""), "-m", "immediate", "stop"])
            .output();
    }
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// A transaction left open by [`Pg::hold`].
pub struct Held {
    release: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Held {
    /// Rolls the transaction back, and waits for it.
    pub fn release(self) {
        let _ = self.release.send(());
        self.thread.join().unwrap();
    }
}

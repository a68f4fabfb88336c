//! `toolscore validate-config` and `toolscore serve` start-up failures, as a user meets them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

fn toolscore(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_toolscore"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn validate_config_accepts_the_default_and_names_the_broken_key() {
    let default = concat!(env!("CARGO_MANIFEST_DIR"), "/config/default.yaml");
    let out = toolscore(&["validate-config", default]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "assembler:\n  grace_after_root_ms: 100\n  max_tracez: 5\n",
    )
    .unwrap();
    let out = toolscore(&["validate-config", bad.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("bad.yaml") && stderr.contains("assembler.max_tracez"),
        "{stderr}"
    );

    // `--config FILE` (and `--config=FILE`) as `serve` takes it, and as
    // the Collector's `otelcol validate --config=…`.
    for args in [
        vec!["validate-config", "--config", default],
        vec!["validate-config", &format!("--config={default}")],
    ] {
        let args: Vec<&str> = args.iter().map(|a| a.as_ref()).collect();
        let out = toolscore(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = toolscore(&["validate-config", "--config", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let out = toolscore(&["validate-config", default, "--config", default]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a file given twice is a usage error"
    );
    let out = toolscore(&["validate-config"]);
    assert_eq!(out.status.code(), Some(2), "no file is a usage error");

    // A rule naming an evaluator that does not exist is caught too.
    std::fs::write(&bad, "rules:\n  - name: r\n    evaluators: [nope]\n").unwrap();
    let out = toolscore(&["validate-config", bad.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("rules[0].evaluators[0]") && stderr.contains("nope"),
        "{stderr}"
    );
}

#[test]
fn serve_fails_at_once_on_a_taken_port_naming_the_address() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.yaml");
    std::fs::write(
        &cfg,
        format!(
            "receivers:\n  grpc:\n    endpoint: 127.0.0.1:0\n  http:\n    endpoint: {addr}\n\
             api:\n  http:\n    endpoint: 127.0.0.1:0\n  grpc:\n    endpoint: 127.0.0.1:0\n"
        ),
    )
    .unwrap();
    let started = Instant::now();
    let out = toolscore(&["serve", "--config", cfg.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains(&addr.to_string()), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// The README's `cargo run --release -- serve` needs one default binary now
/// that the crate also builds `toolscore-loadgen`.
#[test]
fn cargo_run_picks_the_service_binary() {
    let manifest =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap();
    assert!(
        manifest.contains("default-run = \"toolscore\""),
        "Cargo.toml lost default-run"
    );
}

#[test]
fn serve_warns_of_each_listener_beyond_loopback_without_tls_or_tokens() {
    let dir = tempfile::tempdir().unwrap();
    // The log's directory is a file, so the service stops right after its
    // start-up checks, and the warnings are what it wrote before.
    let not_a_dir = dir.path().join("file");
    std::fs::write(&not_a_dir, "").unwrap();
    let cfg = dir.path().join("c.yaml");
    std::fs::write(
        &cfg,
        format!(
            "receivers:\n  grpc:\n    endpoint: 0.0.0.0:0\n  http:\n    endpoint: 127.0.0.1:0\n\
             api:\n  http:\n    endpoint: 127.0.0.1:0\n  grpc:\n    endpoint: 127.0.0.1:0\n\
             store:\n  backend: memory\n\
             wal:\n  dir: {}\n",
            not_a_dir.display()
        ),
    )
    .unwrap();
    let out = toolscore(&["serve", "--config", cfg.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("WARN")
            && stderr
                .contains("receivers.grpc listens beyond this host without TLS or authentication"),
        "{stderr}"
    );
    for loopback in ["receivers.http", "api.http", "api.grpc"] {
        assert!(!stderr.contains(&format!("{loopback} listens")), "{stderr}");
    }
}

/// A PostgreSQL address that accepts the TCP connection and then never
/// answers (a half-open load balancer, a firewall dropping packets after
/// the handshake): `serve` exits 1 within the connect timeout, naming the
/// database and why, instead of hanging without a listener or a log line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_exits_1_on_a_database_that_accepts_and_never_answers() {
    let silent = common::silent::SilentProxy::start(None).await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.yaml");
    let url = format!("postgres://toolscore@{}/results", silent.addr);
    std::fs::write(
        &cfg,
        format!(
            "receivers:\n  grpc:\n    endpoint: 127.0.0.1:0\n  http:\n    endpoint: 127.0.0.1:0\n\
             api:\n  http:\n    endpoint: 127.0.0.1:0\n  grpc:\n    endpoint: 127.0.0.1:0\n\
             wal:\n  dir: {}\n\
             store:\n  backend: postgres\n  postgres:\n    url: {url}\n    connect_timeout_ms: 1000\n",
            dir.path().join("wal").display()
        ),
    )
    .unwrap();
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolscore"))
        .args(["serve", "--config", cfg.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = started + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("serve still runs 20 s on, without an answer from its database");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&silent.addr.to_string()) && stderr.contains("did not answer"),
        "{stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

/// SIGHUP (a closed terminal, a supervisor's reload signal) drains as
/// SIGTERM does: a trace still in its grace period is evaluated and stored
/// before the process exits 0, instead of the process ending at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_drains_as_sigterm_does() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::service::test_config();
    config.store.backend = toolscore::config::StoreBackend::Sqlite;
    config.store.sqlite.path = dir.path().join("results.db");
    config.assembler.grace_after_root_ms = 60_000;
    config.evaluators.inline = vec![common::service::count_evaluator(
        serde_json::json!({"get_weather": [">=", 1]}),
    )];
    let mut s = common::process::serve(&config, dir.path());
    common::process::ready(&common::http(), s.api).await;
    let exporter = common::process::grpc_exporter(s.otlp_grpc);
    common::service::export(&exporter, &common::service::weather_trace(9)).await;
    let hup = Command::new("kill")
        .args(["-HUP", &s.child.id().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = s.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "still running after SIGHUP");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status.code(), Some(0), "{status:?}");
    let db = rusqlite::Connection::open(dir.path().join("results.db")).unwrap();
    let stored: i64 = db
        .query_row(
            "SELECT count(*) FROM traces WHERE status = 'evaluated'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(stored, 1, "the trace in its grace period was drained");
}

/// Exit codes as docs/operations.md gives them: a configuration that does
/// not load (an evaluator or eval-set file included) exits 2, as
/// `validate-config` does; a port that is taken exits 1.
#[test]
fn serve_exits_2_on_an_evaluator_file_that_does_not_load() {
    let dir = tempfile::tempdir().unwrap();
    let evaluator = dir.path().join("broken.json");
    std::fs::write(&evaluator, r#"{"version": "1.0", "id": "x"}"#).unwrap();
    let cfg = dir.path().join("c.yaml");
    std::fs::write(
        &cfg,
        format!(
            "receivers:\n  grpc:\n    endpoint: 127.0.0.1:0\n  http:\n    endpoint: 127.0.0.1:0\n\
             api:\n  http:\n    endpoint: 127.0.0.1:0\n  grpc:\n    endpoint: 127.0.0.1:0\n\
             store:\n  backend: memory\nwal:\n  enabled: false\n\
             evaluators:\n  files: [{}]\n",
            evaluator.display()
        ),
    )
    .unwrap();
    let out = toolscore(&["serve", "--config", cfg.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("broken.json"), "{stderr}");
}

//! The write-ahead log: a span acknowledged over OTLP survives `kill -9` of
//! `toolscore serve` at any moment, is evaluated exactly once after the
//! restart, and scores as it would have without the crash.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::conformance::{self, Case};
use common::live::{case_spans, trace_of};
use common::process::{body, conformance_config, grpc_exporter, ready, serve};
use common::service::span_data;
use opentelemetry_sdk::trace::SpanExporter as _;
use toolscore::config::{StoreBackend, WalSync};

const ITERATIONS: usize = 20;

/// 20 rounds of: start on the same database and log, read what the earlier
/// rounds stored (a result once seen never changes: not evaluated or stored
/// twice), send a share of the conformance cases one trace a request, and
/// `kill -9` at a moment that moves from round to round (mid-send, right
/// after the acknowledgements while the traces wait out their grace period,
/// or later). Then one last start: every trace whose request was
/// acknowledged has exactly one evaluated result, revision 1, and the
/// reference's score.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_traces_survive_a_crash_loop() {
    let dir = tempfile::tempdir().unwrap();
    let (mut config, cases) = conformance_config();
    config.store.backend = StoreBackend::Sqlite;
    config.store.sqlite.path = dir.path().join("results.db");
    config.wal.enabled = true;
    config.wal.dir = dir.path().join("wal");
    config.wal.sync = WalSync::None;
    // Small segments, so rounds rotate and delete them.
    config.wal.segment_bytes = 16 << 10;
    // Long enough that most kills find traces acknowledged and not evaluated.
    config.assembler.grace_after_root_ms = 400;
    let http = reqwest::Client::new();
    let mut acked: Vec<&Case> = Vec::new();
    // Per acknowledged trace, the first `evaluated_at` seen.
    let mut seen: HashMap<String, String> = HashMap::new();
    let per_round = cases.len().div_ceil(ITERATIONS);
    for (round, chunk) in cases.chunks(per_round).enumerate() {
        let mut s = serve(&config, dir.path());
        ready(&http, s.api).await;
        check_unchanged(&http, s.api, &acked, &mut seen).await;
        let pid = s.child.id();
        // The crash: mid-send for a third of the rounds, else after the
        // acknowledgements, at a delay that varies by round.
        let delay = Duration::from_millis((round as u64 * 37) % 250);
        let mid_send = round % 3 == 0;
        let killer = mid_send.then(|| {
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                kill_9(pid);
            })
        });
        let exporter = grpc_exporter(s.otlp_grpc);
        for case in chunk {
            let spans: Vec<_> = case_spans(case).iter().map(span_data).collect();
            match exporter.export(spans).await {
                Ok(()) => acked.push(case),
                Err(_) => break,
            }
        }
        match killer {
            Some(k) => k.await.unwrap(),
            None => {
                tokio::time::sleep(delay * 2).await;
                kill_9(pid);
            }
        }
        s.kill();
    }
    assert!(
        acked.len() * 2 > cases.len(),
        "too few requests acknowledged ({} of {}) for the test to mean much",
        acked.len(),
        cases.len()
    );
    let s = serve(&config, dir.path());
    ready(&http, s.api).await;
    check_unchanged(&http, s.api, &acked, &mut seen).await;
    for case in &acked {
        let id = trace_of(case).to_hex();
        let (status, text) = body(
            &http,
            format!("http://{}/traces/{id}/scores?wait_ms=15000", s.api),
        )
        .await;
        assert_eq!(status, 200, "{}: {text}", case.id);
        let got: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(got["status"], "evaluated", "{}: {text}", case.id);
        assert_eq!(got["revision"], 1, "{}: evaluated twice: {text}", case.id);
        conformance::judge_json(case, &got["scores"][0])
            .unwrap_or_else(|e| panic!("{}: {e}", case.id));
    }
    check_unchanged(&http, s.api, &acked, &mut seen).await;
    println!(
        "{} of {} traces acknowledged over {ITERATIONS} crashes; all evaluated once",
        acked.len(),
        cases.len()
    );
}

/// A result once seen keeps its `evaluated_at`: no trace is evaluated and
/// stored again after a restart.
async fn check_unchanged(
    http: &reqwest::Client,
    api: std::net::SocketAddr,
    acked: &[&Case],
    seen: &mut HashMap<String, String>,
) {
    for case in acked {
        let id = trace_of(case).to_hex();
        let (status, text) = body(http, format!("http://{api}/traces/{id}/scores")).await;
        if status != 200 {
            continue;
        }
        let got: serde_json::Value = serde_json::from_str(&text).unwrap();
        if got["status"] != "evaluated" {
            continue;
        }
        let at = got["evaluated_at"].as_str().unwrap_or_default().to_owned();
        let first = seen.entry(id.clone()).or_insert_with(|| at.clone());
        assert_eq!(*first, at, "{id}: evaluated again after a restart");
    }
}

fn kill_9(pid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status();
}

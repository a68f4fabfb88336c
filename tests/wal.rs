//! The write-ahead log: a span acknowledged over OTLP survives `kill -9` of
//! `toolscore serve` at any moment, is evaluated exactly once after the
//! restart, and scores as it would have without the crash.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::collections::HashMap;
use std::num::NonZero;
use std::time::Duration;
use toolscore::listener::Listener;

use common::conformance::{self, Case};
use common::live::{case_spans, trace_of};
use common::process::{body, conformance_config, grpc_exporter, read_case, ready, serve};
use common::service::span_data;
use opentelemetry_sdk::trace::SpanExporter as _;
use toolscore::config::{StoreBackend, WalSync};

const ITERATIONS: usize = 20;

/// The conformance cases' config with results in SQLite and the log on,
/// both in `dir`.
fn durable_config(dir: &std::path::Path) -> (toolscore::config::Config, Vec<Case>) {
    let (mut config, cases) = conformance_config();
    config.store.backend = StoreBackend::Sqlite;
    config.store.sqlite.path = dir.join("results.db");
    config.wal.enabled = true;
    config.wal.dir = dir.join("wal");
    (config, cases)
}

/// 20 rounds of: start on the same database and log, read what the earlier
/// rounds stored (a result once seen never changes: not evaluated or stored
/// twice), send a share of the conformance cases (a trace a request, or
/// every other one in two, its root last) with the SDK's exporter, and
/// `kill -9` at a moment that moves from round to round (mid-send, right
/// after the acknowledgements while the traces wait out their grace period,
/// or later). Then one last start: every trace whose request was
/// acknowledged has exactly one evaluated result, revision 1, and the
/// reference's score.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_traces_survive_a_crash_loop() {
    let dir = tempfile::tempdir().unwrap();
    let (mut config, cases) = durable_config(dir.path());
    config.wal.sync = WalSync::None;
    // Small segments, so rounds rotate and delete them.
    config.wal.segment_bytes = NonZero::new(16 << 10).unwrap();
    // Long enough that most kills find traces acknowledged and not evaluated.
    config.assembler.grace_after_root_ms = 400;
    let http = common::http();
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
        'send: for (i, case) in chunk.iter().enumerate() {
            // Every other trace in two requests, its root in the second: a
            // kill between them leaves a trace half acknowledged (not
            // required to have a result), and a restart assembles the rest
            // onto what the log kept.
            let spans = case_spans(case);
            let (first, second): (Vec<_>, Vec<_>) = if i % 2 == 1 {
                spans.iter().partition(|s| s.parent.is_some())
            } else {
                (spans.iter().collect(), Vec::new())
            };
            for part in [first, second] {
                if part.is_empty() {
                    continue;
                }
                let data = part.into_iter().map(span_data).collect();
                if exporter.export(data).await.is_err() {
                    break 'send;
                }
            }
            acked.push(case);
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

/// A late span acknowledged after its trace's result was stored, then
/// `kill -9` before the next revision is: after the restart the trace is
/// evaluated again with every span (revision 2, the reference's score),
/// from the log, which kept the trace's earlier spans while it could still
/// take late ones. Traces without late spans keep their revision 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_span_cut_off_by_a_crash_makes_its_revision_after_the_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (mut config, cases) = durable_config(dir.path());
    // Long enough for the kill to come before the late span's revision.
    config.assembler.grace_after_root_ms = 1_500;
    let case = cases
        .iter()
        .find(|c| case_spans(c).iter().filter(|s| s.parent.is_some()).count() >= 2)
        .expect("a case with two child spans");
    let other = cases.iter().find(|c| c.id != case.id).unwrap();
    let mut spans = case_spans(case);
    let at = spans.iter().rposition(|s| s.parent.is_some()).unwrap();
    let late = spans.remove(at);
    let http = common::http();
    let mut s = serve(&config, dir.path());
    ready(&http, s.api).await;
    let exporter = grpc_exporter(s.otlp_grpc);
    exporter
        .export(spans.iter().map(span_data).collect())
        .await
        .unwrap();
    exporter
        .export(case_spans(other).iter().map(span_data).collect())
        .await
        .unwrap();
    let id = trace_of(case).to_hex();
    let url = |api| format!("http://{api}/traces/{id}/scores?wait_ms=15000");
    let first: serde_json::Value = serde_json::from_str(&body(&http, url(s.api)).await.1).unwrap();
    assert_eq!(first["revision"], 1, "{first}");
    let (_, other_before) = read_case(&http, s.api, other).await;
    exporter.export(vec![span_data(&late)]).await.unwrap();
    s.kill();

    let again = serve(&config, dir.path());
    ready(&http, again.api).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let got = loop {
        let got: serde_json::Value =
            serde_json::from_str(&body(&http, url(again.api)).await.1).unwrap();
        if got["revision"] == 2 {
            break got;
        }
        assert!(std::time::Instant::now() < deadline, "no revision 2: {got}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    conformance::judge_json(case, &got["scores"][0]).unwrap_or_else(|e| panic!("{}: {e}", case.id));
    let (_, trace) = body(&http, format!("http://{}/traces/{id}", again.api)).await;
    let trace: serde_json::Value = serde_json::from_str(&trace).unwrap();
    assert_eq!(trace["span_count"], spans.len() + 1, "{trace}");
    let (_, other_after) = read_case(&http, again.api, other).await;
    assert_eq!(
        other_after, other_before,
        "a trace without late spans is unchanged"
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

/// An OTLP/HTTP protobuf request of one rootless trace (`trace`) with
/// `spans` tool spans whose arguments take `pad` bytes each: it stays
/// buffered (and its log segment held) until its idle timeout.
fn rootless(trace: u8, spans: u8, pad: usize) -> Vec<u8> {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
    use prost::Message;
    let attr = |k: &str, v: String| KeyValue {
        key: k.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(v)),
        }),
        ..KeyValue::default()
    };
    let spans = (1..=spans)
        .map(|id| Span {
            trace_id: vec![trace; 16],
            span_id: vec![0, 0, 0, 0, 0, 0, trace, id],
            parent_span_id: vec![0, 0, 0, 0, 0, 0, trace, 0xff],
            name: format!("tool-{id}"),
            start_time_unix_nano: 1_000 + u64::from(id),
            end_time_unix_nano: 2_000,
            attributes: vec![
                attr("gen_ai.tool.name", "search".into()),
                attr("gen_ai.tool.call.arguments", "x".repeat(pad)),
            ],
            ..Span::default()
        })
        .collect();
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            scope_spans: vec![ScopeSpans {
                spans,
                ..ScopeSpans::default()
            }],
            ..ResourceSpans::default()
        }],
    }
    .encode_to_vec()
}

async fn post(
    http: &reqwest::Client,
    addr: std::net::SocketAddr,
    body: Vec<u8>,
) -> reqwest::Response {
    http.post(format!("http://{addr}/v1/traces"))
        .header("content-type", "application/x-protobuf")
        .body(body)
        .send()
        .await
        .unwrap()
}

fn metric(running: &toolscore::app::Running, name: &str, labels: &[(&str, &str)]) -> f64 {
    series(&running.metrics.encode(), name, labels)
}

/// At `wal.max_bytes` the receivers refuse, retryably (503 + Retry-After,
/// UNAVAILABLE + RetryInfo), counted as `wal_full`; nothing is acknowledged
/// that the log cannot hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_log_refuses_retryably() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::service::test_config();
    config.wal.enabled = true;
    config.wal.dir = dir.path().join("wal");
    config.wal.max_bytes = NonZero::new(64 << 10).unwrap();
    config.wal.segment_bytes = NonZero::new(16 << 10).unwrap();
    let running = common::service::start(config).await;
    let http = common::http();
    let addr = running.addr(Listener::OtlpHttp).unwrap();
    let mut accepted = 0;
    let refused = loop {
        let r = post(&http, addr, rootless(accepted + 1, 4, 1_000)).await;
        if r.status() != 200 {
            break r;
        }
        accepted += 1;
        assert!(accepted < 100, "never refused");
    };
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "1");
    // 64 KiB of ~4 KiB requests: about 15 taken, none past the bound.
    assert!((10..=16).contains(&accepted), "{accepted} requests taken");
    assert_eq!(
        metric(
            &running,
            "toolscore_requests_refused_total",
            &[("reason", "wal_full")]
        ),
        1.0
    );
    assert!(metric(&running, "toolscore_wal_bytes", &[]) <= f64::from(64 << 10));
    running.stop().await.unwrap();
}

/// A full disk (a 1 MiB tmpfs the test mounts, nearly filled beforehand):
/// the requests whose writes fail are refused (503), the service stays up,
/// and once space returns the next requests are taken; after `kill -9`
/// every acknowledged request is replayed, nothing quarantined.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_and_recovers_when_space_returns() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "cannot mount a tmpfs (the test needs root): required under CI=true"
        );
        println!("skipped: cannot mount a tmpfs (not root)");
        return;
    }
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount")
                .arg("-l")
                .arg(&self.0)
                .status();
        }
    }
    let _unmount = Unmount(mnt.clone());
    // Leave about 140 KiB free.
    let filler = mnt.join("filler");
    std::fs::write(&filler, vec![0u8; 900 << 10]).unwrap();

    let mut config = common::service::test_config();
    config.wal.enabled = true;
    config.wal.dir = mnt.join("wal");
    config.wal.max_bytes = NonZero::new(64 << 20).unwrap(); // the disk fills first
    config.wal.segment_bytes = NonZero::new(32 << 10).unwrap();
    config.assembler.idle_timeout_secs = NonZero::new(600).unwrap();
    config.assembler.max_trace_age_secs = NonZero::new(600).unwrap();
    let http = common::http();
    let mut s = serve(&config, dir.path());
    ready(&http, s.api).await;
    let mut acked = 0u32;
    let mut trace = 0u8;
    let refused = loop {
        trace += 1;
        assert!(trace < 200, "never refused");
        let r = post(&http, s.otlp_http, rootless(trace, 4, 1_000)).await;
        if r.status() != 200 {
            break r;
        }
        acked += 1;
    };
    assert_eq!(refused.status(), 503, "{}", refused.text().await.unwrap());
    let metrics = body(&http, format!("http://{}/metrics", s.api)).await.1;
    assert!(series(&metrics, "toolscore_wal_write_errors_total", &[]) >= 1.0);
    assert!(
        series(
            &metrics,
            "toolscore_requests_refused_total",
            &[("reason", "wal_error")]
        ) >= 1.0
    );
    let (health, _) = body(&http, format!("http://{}/healthz", s.api)).await;
    assert_eq!(health, 200, "the service is still up");

    // Space returns: the next requests are taken.
    std::fs::remove_file(&filler).unwrap();
    for _ in 0..3 {
        trace += 1;
        let r = post(&http, s.otlp_http, rootless(trace, 4, 1_000)).await;
        assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
        acked += 1;
    }
    s.kill();

    let again = serve(&config, dir.path());
    ready(&http, again.api).await;
    let metrics = body(&http, format!("http://{}/metrics", again.api)).await.1;
    let replayed = series(
        &metrics,
        "toolscore_wal_replayed_traces_total",
        &[("outcome", "reassembled")],
    );
    assert!(
        replayed >= f64::from(acked),
        "{replayed} traces replayed, {acked} acknowledged"
    );
    assert_eq!(
        series(&metrics, "toolscore_wal_quarantined_bytes_total", &[]),
        0.0
    );
}

/// The series `name` with exactly `labels` in a `/metrics` text (read strictly).
fn series(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    common::metrics::parse(text)
        .unwrap_or_else(|e| panic!("/metrics: {e}"))
        .value(name, labels)
        .unwrap_or_else(|| panic!("no {name}{labels:?} in\n{text}"))
}

//! A flood of one-span rootless traces against `toolscore serve` with the
//! default stores (SQLite and the write-ahead log), whose evaluation is
//! slower than intake: memory stays inside the configured bounds all
//! along, what is refused is refused retryably, and once the flood stops
//! every acknowledged trace is evaluated and stored within seconds, with
//! no further traffic.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::collections::HashSet;
use std::num::NonZero;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::process::{body, ready, serve};
use common::service::{count_evaluator, test_config};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use tonic_types::StatusExt as _;
use toolscore::config::StoreBackend;

/// Spans (one-span traces) a request; two clients send them back to back.
const PER_REQUEST: u64 = 2_000;
const CLIENTS: usize = 2;
const FLOOD: Duration = Duration::from_secs(12);
/// After the flood, every acknowledged trace is stored within this.
const SETTLE: Duration = Duration::from_secs(20);
/// What RSS may exceed the configured bounds by.
const SLACK: u64 = 30 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rootless_flood_stays_in_bounds_and_every_acknowledged_trace_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config();
    config.store.backend = StoreBackend::Sqlite;
    config.store.sqlite.path = dir.path().join("results.db");
    config.store.max_traces = NonZero::new(10_000_000).unwrap();
    config.store.max_bytes = NonZero::new(8 << 20).unwrap();
    config.store.writer.queue_capacity = NonZero::new(256).unwrap();
    config.store.writer.max_batch = NonZero::new(128).unwrap();
    config.wal.enabled = true;
    config.wal.dir = dir.path().join("wal");
    config.assembler.max_traces = NonZero::new(20_000).unwrap();
    config.assembler.max_buffered_bytes = NonZero::new(16 << 20).unwrap();
    config.assembler.grace_after_root_ms = 100;
    // Traces not timed out early to make room time out soon after the flood.
    config.assembler.idle_timeout_secs = NonZero::new(2).unwrap();
    config.evaluators.inline = vec![count_evaluator(serde_json::json!({"search": [">=", 1]}))];
    // What the configuration lets the process hold beyond its idle size,
    // as the chart counts it (`toolscore.memoryNeedBytes`): buffered spans and
    // results in memory at 1.5 × their bytes (the peak RSS a byte,
    // measured), results queued for their commit at 16 KiB each; and the
    // evaluation queue's traces (one span each, about 1 KiB with their
    // record). Counted at 1 × a byte, this flood's peak came within 1–3
    // MiB of the bound and once, under CI, past it.
    let bounds = (config.assembler.max_buffered_bytes.get() * 3 / 2
        + config.store.max_bytes.get() * 3 / 2
        + (config.store.writer.queue_capacity.get() + config.store.writer.max_batch.get())
            * (16 << 10)
        + config.evaluation.queue_capacity.get() * (1 << 10)) as u64;

    let s = serve(&config, dir.path());
    let http = common::http();
    ready(&http, s.api).await;
    let pid = s.child.id();
    let idle = rss(pid);

    // RSS, sampled every 20 ms until the end of the test.
    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(idle));
    let sampler = std::thread::spawn({
        let (done, peak) = (done.clone(), peak.clone());
        move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(rss(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    });

    let next = Arc::new(AtomicU64::new(1));
    let end = Instant::now() + FLOOD;
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let (next, endpoint) = (next.clone(), format!("http://{}", s.otlp_grpc));
        clients.push(tokio::spawn(async move {
            let mut c = TraceServiceClient::connect(endpoint).await.unwrap();
            let (mut acked, mut refused) = (Vec::new(), 0u64);
            // Like an exporter that retries at once: the same request until
            // it is taken (its spans taken earlier are de-duplicated).
            let mut first = next.fetch_add(PER_REQUEST, Ordering::Relaxed);
            while Instant::now() < end {
                match c.export(flood_request(first)).await {
                    Ok(r) => {
                        let rejected = r.into_inner().partial_success.map(|p| p.rejected_spans);
                        assert_eq!(rejected.unwrap_or(0), 0, "no span is invalid or late");
                        acked.push(first);
                        first = next.fetch_add(PER_REQUEST, Ordering::Relaxed);
                    }
                    Err(e) => {
                        assert_eq!(e.code(), tonic::Code::Unavailable, "{e:?}");
                        assert!(
                            e.get_details_retry_info()
                                .and_then(|r| r.retry_delay)
                                .is_some(),
                            "a refusal says when to retry: {e:?}"
                        );
                        refused += 1;
                    }
                }
            }
            (acked, refused)
        }));
    }
    let (mut acked, mut refused) = (Vec::new(), 0);
    for c in clients {
        let (a, r) = c.await.unwrap();
        acked.extend(a);
        refused += r;
    }
    let flood_peak = peak.load(Ordering::Relaxed);
    let acked_traces: HashSet<[u8; 16]> = acked
        .iter()
        .flat_map(|&first| (first..first + PER_REQUEST).map(trace_id))
        .collect();
    println!(
        "flood: {} requests acknowledged ({} traces), {refused} refused; RSS {} MiB idle, \
         {} MiB peak, bound {} MiB + {} MiB",
        acked.len(),
        acked_traces.len(),
        idle >> 20,
        flood_peak >> 20,
        (idle + bounds) >> 20,
        SLACK >> 20
    );
    assert!(
        acked_traces.len() as u64 > 2 * config.assembler.max_traces.get() as u64,
        "the flood overflowed the buffer"
    );
    assert!(
        refused > 0,
        "evaluation fell behind, and intake was refused"
    );

    // With no further traffic, every acknowledged trace is stored: read
    // from the database itself, which the API reads too.
    let db = dir.path().join("results.db");
    let settling = Instant::now();
    let deadline = settling + SETTLE;
    let missing = loop {
        let stored = stored_traces(&db);
        let missing = acked_traces.difference(&stored).count();
        if missing == 0 || Instant::now() > deadline {
            break missing;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    println!("stored {:?} after the flood", settling.elapsed());
    done.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    let peak = peak.load(Ordering::Relaxed);
    assert_eq!(
        missing,
        0,
        "{missing} of {} acknowledged traces not stored {SETTLE:?} after the flood",
        acked_traces.len()
    );
    assert!(
        peak <= idle + bounds + SLACK,
        "RSS peaked at {} MiB, over the bounds ({} MiB idle + {} MiB configured + {} MiB)",
        peak >> 20,
        idle >> 20,
        bounds >> 20,
        SLACK >> 20
    );
    // And the API answers for them (a sample): evaluated as timed out.
    for id in acked_traces.iter().take(20) {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let (status, text) = body(&http, format!("http://{}/traces/{hex}/scores", s.api)).await;
        assert_eq!(status, 200, "{hex}: {text}");
        let got: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(got["status"], "timed_out", "{hex}: {text}");
        assert_eq!(got["complete"], false, "{hex}: {text}");
    }
}

/// Trace `n`'s ID: a fixed prefix, then `n`, so traces spread over shards.
fn trace_id(n: u64) -> [u8; 16] {
    let mut id = [0x5au8; 16];
    id[8..].copy_from_slice(&n.to_le_bytes());
    id
}

/// `PER_REQUEST` one-span traces from `first` on, each a child of a root
/// that never comes.
fn flood_request(first: u64) -> ExportTraceServiceRequest {
    use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
    let spans = (first..first + PER_REQUEST)
        .map(|n| Span {
            trace_id: trace_id(n).to_vec(),
            span_id: vec![1, 2, 3, 4, 5, 6, 7, 8],
            parent_span_id: vec![9, 9, 9, 9, 9, 9, 9, 9],
            name: "search".into(),
            start_time_unix_nano: 1_000,
            end_time_unix_nano: 2_000,
            attributes: vec![KeyValue {
                key: "tool.name".into(),
                value: Some(AnyValue {
                    value: Some(any_value::Value::StringValue("search".into())),
                }),
                ..KeyValue::default()
            }],
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
}

/// The trace IDs in the results database (read-only, beside the writer).
fn stored_traces(db: &std::path::Path) -> HashSet<[u8; 16]> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    let mut stmt = conn
        .prepare("SELECT trace_id FROM traces WHERE status != 'pending'")
        .unwrap();
    stmt.query_map([], |row| row.get::<_, Vec<u8>>(0))
        .unwrap()
        .filter_map(|id| id.ok()?.try_into().ok())
        .collect()
}

/// The process's resident set, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

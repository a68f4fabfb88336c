//! SIGTERM to the real binary under load, with hostile clients holding
//! connections open (issue 15): a drain that cannot be held hostage. Every
//! trace whose spans were acknowledged complete has its result, read through
//! the gRPC query API's `WatchScores`, before the process exits 0, and the
//! stuck requests are cut off, never acknowledged.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;
use tokio::io::AsyncWriteExt;
use tokio::sync::Mutex;
use toolscore::api::grpc::pb;

const SHUTDOWN_TIMEOUT_MS: u64 = 10_000;

/// A port the OS just handed out and took back.
fn free_addr() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

struct Service {
    child: Child,
    otlp_grpc: SocketAddr,
    otlp_http: SocketAddr,
    api_grpc: SocketAddr,
    _dir: tempfile::TempDir,
}

/// `toolscore serve` with the sample rule (every trace scored), a 1.5 s
/// grace after the root, on free ports; the watch buffer holds every
/// result of the run, so that the test's watcher, starved of CPU when the
/// suite runs in parallel, is not ended for falling behind.
fn start() -> Service {
    let (otlp_grpc, otlp_http, api_http, api_grpc) =
        (free_addr(), free_addr(), free_addr(), free_addr());
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    let default =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/default.yaml"))
            .unwrap();
    let yaml = format!(
        "{default}\nshutdown_timeout_ms: {SHUTDOWN_TIMEOUT_MS}\n\
         api:\n  watch_buffer: 100000\n  http:\n    endpoint: {api_http}\n  grpc:\n    endpoint: {api_grpc}\n"
    )
    .replace(
        "endpoint: 127.0.0.1:4317",
        &format!("endpoint: {otlp_grpc}"),
    )
    .replace(
        "endpoint: 127.0.0.1:4318",
        &format!("endpoint: {otlp_http}"),
    )
    .replace("grace_after_root_ms: 1000", "grace_after_root_ms: 1500");
    std::fs::write(&config, yaml).unwrap();
    // The default config's SQLite file goes in the temp dir: the drain
    // commits every result to it before the process exits.
    let child = Command::new(env!("CARGO_BIN_EXE_toolscore"))
        .args(["serve", "--config"])
        .arg(&config)
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    Service {
        child,
        otlp_grpc,
        otlp_http,
        api_grpc,
        _dir: dir,
    }
}

fn trace_id(client: u8, n: u32) -> Vec<u8> {
    let mut id = vec![client; 16];
    id[12..].copy_from_slice(&n.to_be_bytes());
    id
}

/// 20 complete traces: a root and one tool span each.
fn request(client: u8, first: u32) -> (ExportTraceServiceRequest, Vec<String>) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut spans = Vec::new();
    let mut ids = Vec::new();
    for n in first..first + 20 {
        let trace = trace_id(client, n);
        ids.push(const_hex::encode(&trace));
        let root_id = vec![1, 0, 0, 0, 0, 0, 0, client];
        spans.push(Span {
            trace_id: trace.clone(),
            span_id: root_id.clone(),
            name: "invoke_agent weather-agent".into(),
            start_time_unix_nano: now,
            end_time_unix_nano: now + 2000,
            ..Span::default()
        });
        spans.push(Span {
            trace_id: trace,
            span_id: vec![2, 0, 0, 0, 0, 0, 0, client],
            parent_span_id: root_id,
            name: "execute_tool get_weather".into(),
            start_time_unix_nano: now + 1,
            end_time_unix_nano: now + 1000,
            ..Span::default()
        });
    }
    let req = ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            scope_spans: vec![ScopeSpans {
                spans,
                ..ScopeSpans::default()
            }],
            ..ResourceSpans::default()
        }],
    };
    (req, ids)
}

type Acked = Arc<Mutex<BTreeSet<String>>>;

/// Sends requests until one is refused (the service is draining) or `stop`.
async fn grpc_client(addr: SocketAddr, client: u8, acked: Acked, stop: Arc<AtomicBool>) {
    let mut c = TraceServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        let (req, ids) = request(client, n);
        n += 20;
        match c.export(req).await {
            Ok(r) if r.get_ref().partial_success.is_none() => acked.lock().await.extend(ids),
            _ => return,
        }
    }
}

async fn http_client(addr: SocketAddr, client: u8, acked: Acked, stop: Arc<AtomicBool>) {
    toolscore::tls::install_default_provider();
    let http = reqwest::Client::new();
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        let (req, ids) = request(client, n);
        n += 20;
        let sent = http
            .post(format!("http://{addr}/v1/traces"))
            .header("content-type", "application/x-protobuf")
            .body(req.encode_to_vec())
            .send()
            .await;
        let Ok(r) = sent else { return };
        // 200 with an empty ExportTraceServiceResponse: nothing refused.
        let ok = r.status() == 200;
        if !(ok && r.bytes().await.is_ok_and(|b| b.is_empty())) {
            return;
        }
        acked.lock().await.extend(ids);
    }
}

/// Every result the watch stream delivers until the service stops it.
async fn watch(addr: SocketAddr) -> tokio::task::JoinHandle<BTreeMap<String, pb::TraceStatus>> {
    let mut client =
        pb::scores_service_client::ScoresServiceClient::connect(format!("http://{addr}"))
            .await
            .unwrap();
    let mut stream = client
        .watch_scores(pb::WatchScoresRequest::default())
        .await
        .unwrap()
        .into_inner();
    tokio::spawn(async move {
        let mut seen = BTreeMap::new();
        while let Ok(Some(t)) = stream.message().await {
            seen.insert(t.trace_id.clone(), t.status());
        }
        seen
    })
}

/// Waits for `f` to hold, polling, up to `limit`.
async fn eventually<F: AsyncFnMut() -> bool>(limit: Duration, mut f: F) {
    let deadline = Instant::now() + limit;
    while !f().await {
        assert!(Instant::now() < deadline, "not within {limit:?}");
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_under_load_with_stuck_clients_loses_no_acknowledged_trace() {
    let mut svc = start();
    // Up when the query API answers.
    let api = svc.api_grpc;
    eventually(Duration::from_secs(20), async || {
        tokio::net::TcpStream::connect(api).await.is_ok()
    })
    .await;
    let results = watch(svc.api_grpc).await;

    // The hostile clients: an OTLP/HTTP body that never finishes, headers
    // that never finish, and a gRPC stream whose message never comes.
    let mut stuck_body = tokio::net::TcpStream::connect(svc.otlp_http).await.unwrap();
    stuck_body
        .write_all(
            b"POST /v1/traces HTTP/1.1\r\nHost: t\r\nContent-Type: application/x-protobuf\r\n\
              Content-Length: 1000\r\n\r\n0123456789",
        )
        .await
        .unwrap();
    let mut stuck_headers = tokio::net::TcpStream::connect(svc.otlp_http).await.unwrap();
    stuck_headers
        .write_all(b"POST /v1/traces HTTP/1.1\r\nHost: t\r\n")
        .await
        .unwrap();
    let tcp = tokio::net::TcpStream::connect(svc.otlp_grpc).await.unwrap();
    let (h2, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    let mut h2 = h2.ready().await.unwrap();
    let stalled = http::Request::post(format!(
        "http://{}/opentelemetry.proto.collector.trace.v1.TraceService/Export",
        svc.otlp_grpc
    ))
    .header("content-type", "application/grpc")
    .header("te", "trailers")
    .body(())
    .unwrap();
    let (stalled_response, mut stalled_body) = h2.send_request(stalled, false).unwrap();
    // A gRPC frame header promising 100 bytes, then nothing.
    stalled_body
        .send_data(Bytes::from_static(&[0, 0, 0, 0, 100]), false)
        .unwrap();

    // Three streaming clients.
    let acked: Acked = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let clients = [
        tokio::spawn(grpc_client(svc.otlp_grpc, 1, acked.clone(), stop.clone())),
        tokio::spawn(grpc_client(svc.otlp_grpc, 2, acked.clone(), stop.clone())),
        tokio::spawn(http_client(svc.otlp_http, 3, acked.clone(), stop.clone())),
    ];
    eventually(Duration::from_secs(30), async || {
        acked.lock().await.len() >= 600
    })
    .await;

    let signalled = Instant::now();
    let killed = Command::new("kill")
        .args(["-TERM", &svc.child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = tokio::task::spawn_blocking(move || svc.child.wait().unwrap())
        .await
        .unwrap();
    let took = signalled.elapsed();
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.await.unwrap();
    }
    assert_eq!(status.code(), Some(0), "exit status");
    assert!(
        took < Duration::from_millis(SHUTDOWN_TIMEOUT_MS),
        "the drain waited for the stuck clients: {took:?}"
    );

    let seen = results.await.unwrap();
    let acked = acked.lock().await.clone();
    let missing: Vec<&String> = acked.iter().filter(|t| !seen.contains_key(*t)).collect();
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged traces have no result, e.g. {:?}",
        missing.len(),
        acked.len(),
        &missing[..missing.len().min(3)]
    );
    for t in &acked {
        assert_eq!(seen[t], pb::TraceStatus::Evaluated, "trace {t}");
    }
    // The stuck requests were never acknowledged: the stalled gRPC call
    // ends without an OK (or its connection went away).
    if let Ok(Ok(response)) = tokio::time::timeout(Duration::from_secs(1), stalled_response).await {
        assert_ne!(
            response.headers().get("grpc-status").map(|v| v.as_bytes()),
            Some(&b"0"[..])
        );
    }
    drop((stuck_body, stuck_headers, stalled_body));
}

//! TLS on the outgoing connections: the exporter against an in-process
//! OTLP/gRPC receiver speaking TLS (tonic's server TLS), and self-telemetry
//! against an OTLP/HTTP receiver speaking TLS (rustls under axum), with
//! certificates from a test CA (`common/pki.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/pki.rs"]
mod pki;
#[path = "common/tls_listener.rs"]
mod tls_listener;

use std::num::NonZero;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use axum::Router;
use axum::body::Bytes;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_stream::wrappers::TcpListenerStream;
use tokio_util::sync::CancellationToken;
use tonic::codec::CompressionEncoding;
use tonic::transport::{Certificate, Identity, ServerTlsConfig};
use tonic::{Request, Response, Status};

use toolscore::config::TelemetryConfig;
use toolscore::evaluator::{EvaluatorType, Outcome};
use toolscore::exporter::{self, ExporterConfig, ExporterHandle, ExporterStats};
use toolscore::span::TraceId;
use toolscore::store::{Score, StoredResult, TraceStatus};
use toolscore::tls::ClientTlsConfig;

use tls_listener::TlsListener;

const WAIT: Duration = Duration::from_secs(10);

// ---- certificates ----------------------------------------------------------

/// A CA, a server certificate it signed, and a client certificate, as
/// files (for the configs under test) and PEM (for the test receivers).
struct Pki {
    dir: tempfile::TempDir,
    ca: pki::Ca,
    server: pki::Leaf,
}

impl Pki {
    fn new() -> Pki {
        let ca = pki::Ca::new("toolscore test CA");
        let server = ca.server();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca.pem()).unwrap();
        let client = ca.client("toolscore");
        std::fs::write(dir.path().join("client.pem"), &client.cert_pem).unwrap();
        std::fs::write(dir.path().join("client-key.pem"), &client.key_pem).unwrap();
        Pki { dir, ca, server }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn trusting_the_ca(&self) -> ClientTlsConfig {
        ClientTlsConfig {
            ca_file: Some(self.file("ca.pem")),
            ..ClientTlsConfig::default()
        }
    }

    /// The server's TLS: its certificate, and with `mutual` a client
    /// certificate signed by the CA is required.
    fn grpc_server(&self, mutual: bool) -> ServerTlsConfig {
        let tls = ServerTlsConfig::new().identity(Identity::from_pem(
            &self.server.cert_pem,
            &self.server.key_pem,
        ));
        match mutual {
            true => tls.client_ca_root(Certificate::from_pem(self.ca.pem())),
            false => tls,
        }
    }
}

// ---- the OTLP/gRPC receiver ------------------------------------------------

#[derive(Clone)]
struct Sink(mpsc::Sender<ExportTraceServiceRequest>);

#[tonic::async_trait]
impl TraceService for Sink {
    async fn export(
        &self,
        request: Request<ExportTraceServiceRequest>,
    ) -> Result<Response<ExportTraceServiceResponse>, Status> {
        self.0.send(request.into_inner()).await.unwrap();
        Ok(Response::new(ExportTraceServiceResponse::default()))
    }
}

struct Receiver {
    traces: mpsc::Receiver<ExportTraceServiceRequest>,
    port: u16,
    stop: CancellationToken,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Serves the trace service over TLS on an ephemeral port until dropped.
async fn serve(tls: ServerTlsConfig) -> Receiver {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, traces) = mpsc::channel(64);
    let stop = CancellationToken::new();
    let server = tonic::transport::Server::builder()
        .tls_config(tls)
        .unwrap()
        .add_service(TraceServiceServer::new(Sink(tx)).accept_compressed(CompressionEncoding::Gzip))
        .serve_with_incoming_shutdown(
            TcpListenerStream::new(listener),
            stop.clone().cancelled_owned(),
        );
    tokio::spawn(server);
    Receiver { traces, port, stop }
}

// ---- the exporter ----------------------------------------------------------

/// Spans only, short timers, few retries.
fn config(endpoint: String, tls: ClientTlsConfig) -> ExporterConfig {
    let cfg = ExporterConfig {
        enabled: true,
        endpoint,
        tls,
        logs: false,
        metrics: false,
        batch_timeout_ms: NonZero::new(20).unwrap(),
        timeout_ms: NonZero::new(2_000).unwrap(),
        max_retries: 1,
        initial_backoff_ms: NonZero::new(10).unwrap(),
        max_backoff_ms: NonZero::new(50).unwrap(),
        flush_timeout_ms: NonZero::new(2_000).unwrap(),
        ..ExporterConfig::default()
    };
    cfg.validate().unwrap();
    cfg
}

fn start(cfg: ExporterConfig) -> (ExporterHandle, CancellationToken) {
    let shutdown = CancellationToken::new();
    let (handle, _join) = exporter::try_spawn(cfg, shutdown.clone()).unwrap();
    (handle, shutdown)
}

/// An evaluated record with one score, so one span.
fn record(n: u8) -> Arc<StoredResult> {
    let mut r = StoredResult::pending(TraceId([n; 16]));
    r.status = TraceStatus::Evaluated;
    r.complete = true;
    r.revision = 1;
    r.evaluated_at = Some(SystemTime::now());
    r.scores = vec![Score {
        evaluator_id: "count".into(),
        evaluator_type: EvaluatorType::Count,
        outcome: Outcome::ok(1.0, serde_json::json!({"expected": 1, "actual": 1})).into(),
    }];
    Arc::new(r)
}

/// Offers record `n` and waits for its span at the receiver.
async fn delivers(handle: &ExporterHandle, rx: &mut Receiver, n: u8) {
    handle.offer(record(n));
    let request = tokio::time::timeout(WAIT, rx.traces.recv())
        .await
        .expect("timed out waiting for the span")
        .expect("receiver stopped");
    let span = &request.resource_spans[0].scope_spans[0].spans[0];
    assert_eq!(span.trace_id, vec![n; 16]);
}

/// Polls the exporter's counters until `f` holds, for at most [`WAIT`].
async fn eventually(handle: &ExporterHandle, what: &str, f: impl Fn(&ExporterStats) -> bool) {
    let deadline = Instant::now() + WAIT;
    loop {
        let s = handle.stats();
        if f(s) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting until {what}: {s:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// What the current thread logs, for the duration of the guard. The tests
/// run on a current-thread runtime, so the exporter task logs here too.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Log {
    fn capture(&self) -> tracing::subscriber::DefaultGuard {
        let log = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || log.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

// ---- exporter tests --------------------------------------------------------

#[tokio::test]
async fn results_reach_a_tls_receiver_whose_ca_is_the_ca_file() {
    let pki = Pki::new();
    let mut rx = serve(pki.grpc_server(false)).await;
    // By name: the certificate is for `localhost`, checked against the CA.
    let endpoint = format!("https://localhost:{}", rx.port);
    let (handle, _stop) = start(config(endpoint, pki.trusting_the_ca()));
    delivers(&handle, &mut rx, 1).await;
    delivers(&handle, &mut rx, 2).await;
    eventually(&handle, "both spans are counted", |s| {
        s.spans_exported.get() == 2
    })
    .await;
}

#[tokio::test]
async fn results_reach_a_receiver_that_requires_a_client_certificate() {
    let pki = Pki::new();
    let mut rx = serve(pki.grpc_server(true)).await;
    // By IP address: the certificate names 127.0.0.1 too.
    let endpoint = format!("https://127.0.0.1:{}", rx.port);
    let mutual = ClientTlsConfig {
        cert_file: Some(pki.file("client.pem")),
        key_file: Some(pki.file("client-key.pem")),
        ..pki.trusting_the_ca()
    };
    let (handle, _stop) = start(config(endpoint.clone(), mutual));
    delivers(&handle, &mut rx, 1).await;

    // Without a client certificate the receiver refuses the connection.
    let (anonymous, _stop) = start(config(endpoint, pki.trusting_the_ca()));
    anonymous.offer(record(2));
    eventually(&anonymous, "the record is dropped", |s| {
        s.records_dropped_export_failed.get() == 1
    })
    .await;
    assert_eq!(anonymous.stats().spans_exported.get(), 0);
    assert!(rx.traces.try_recv().is_err(), "nothing was delivered");
}

#[tokio::test]
async fn system_roots_do_not_trust_a_private_ca_and_insecure_skip_verify_does() {
    let pki = Pki::new();
    let mut rx = serve(pki.grpc_server(false)).await;
    let endpoint = format!("https://localhost:{}", rx.port);

    let log = Log::default();
    let guard = log.capture();
    let (system, _stop) = start(config(endpoint.clone(), ClientTlsConfig::default()));
    system.offer(record(1));
    eventually(&system, "the record is dropped", |s| {
        s.records_dropped_export_failed.get() == 1
    })
    .await;
    drop(guard);
    let s = system.stats();
    assert_eq!(s.spans_exported.get(), 0);
    assert_eq!(
        s.requests_failed.get(),
        2,
        "the first attempt and one retry"
    );
    assert!(rx.traces.try_recv().is_err(), "nothing was delivered");
    let text = log.text();
    assert!(
        text.contains("export failed after retries") && text.contains("certificate"),
        "the log says why: {text}"
    );

    let skip = ClientTlsConfig {
        insecure_skip_verify: true,
        ..ClientTlsConfig::default()
    };
    let (insecure, _stop) = start(config(endpoint, skip));
    delivers(&insecure, &mut rx, 2).await;
}

#[tokio::test]
async fn a_plaintext_endpoint_cannot_reach_a_tls_receiver() {
    let pki = Pki::new();
    let mut rx = serve(pki.grpc_server(false)).await;
    let (handle, _stop) = start(config(
        format!("http://127.0.0.1:{}", rx.port),
        ClientTlsConfig::default(),
    ));
    handle.offer(record(1));
    eventually(&handle, "the record is dropped", |s| {
        s.records_dropped_export_failed.get() == 1
    })
    .await;
    assert!(rx.traces.try_recv().is_err(), "nothing was delivered");
}

// ---- self-telemetry --------------------------------------------------------

/// An OTLP/HTTP receiver over TLS: `(base URL, requests, failed handshakes)`.
async fn https_sink(
    leaf: &pki::Leaf,
) -> (
    String,
    mpsc::Receiver<(String, Bytes)>,
    mpsc::UnboundedReceiver<()>,
) {
    let (tx, rx) = mpsc::channel(64);
    let route = |path: &'static str, tx: mpsc::Sender<(String, Bytes)>| {
        post(move |body: Bytes| async move {
            let _ = tx.send((path.to_owned(), body)).await;
            ""
        })
    };
    let app = Router::new()
        .route("/v1/traces", route("traces", tx.clone()))
        .route("/v1/logs", route("logs", tx));
    let (listener, failures) = TlsListener::bind(leaf).await;
    let port = listener.port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("https://localhost:{port}"), rx, failures)
}

/// Emits one span with an event inside, with the subscriber as a scoped
/// default (no process-wide state), then flushes.
async fn emit(cfg: TelemetryConfig) {
    tokio::task::spawn_blocking(move || {
        let (subscriber, own) = toolscore::telemetry::subscriber(&cfg).unwrap();
        tracing::subscriber::with_default(subscriber, || {
            let _span = tracing::info_span!("evaluate_trace", trace_id = "abc").entered();
            tracing::info!(score = 1.0, "evaluated");
        });
        own.shutdown();
    })
    .await
    .unwrap();
}

fn telemetry(endpoint: &str, tls: ClientTlsConfig) -> TelemetryConfig {
    let mut cfg = TelemetryConfig::default();
    cfg.otlp.enabled = true;
    cfg.otlp.endpoint = endpoint.to_owned();
    cfg.otlp.tls = tls;
    cfg.otlp.validate().unwrap();
    cfg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn own_telemetry_reaches_an_https_endpoint_whose_ca_is_the_ca_file() {
    let pki = Pki::new();
    let (endpoint, mut rx, _failures) = https_sink(&pki.server).await;
    emit(telemetry(&endpoint, pki.trusting_the_ca())).await;
    let mut got = std::collections::BTreeSet::new();
    while got.len() < 2 {
        let (path, _) = tokio::time::timeout(WAIT, rx.recv())
            .await
            .expect("timed out waiting for self-telemetry")
            .unwrap();
        got.insert(path);
    }
    assert_eq!(got, ["logs".to_owned(), "traces".to_owned()].into());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn own_telemetry_does_not_trust_a_private_ca_through_the_system_roots() {
    let pki = Pki::new();
    let (endpoint, mut rx, mut failures) = https_sink(&pki.server).await;
    emit(telemetry(&endpoint, ClientTlsConfig::default())).await;
    // `shutdown` flushed synchronously: every attempt has been made.
    tokio::time::timeout(WAIT, failures.recv())
        .await
        .expect("no handshake was attempted")
        .unwrap();
    assert!(rx.try_recv().is_err(), "nothing was delivered");
}

#[test]
fn a_missing_ca_file_fails_self_telemetry_naming_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let tls = ClientTlsConfig {
        ca_file: Some(Path::new(dir.path()).join("missing.pem")),
        ..ClientTlsConfig::default()
    };
    let Err(e) = toolscore::telemetry::subscriber(&telemetry("https://localhost:1", tls)) else {
        panic!("started with a missing ca_file");
    };
    assert!(e.starts_with("telemetry.otlp.tls.ca_file"), "{e}");
}

// ---- configuration ---------------------------------------------------------

#[test]
fn the_config_file_accepts_https_and_refuses_tls_keys_on_http() {
    let parse = |yaml: &str| toolscore::config::Config::parse(yaml, "t.yaml");
    let cfg = parse(
        "exporter:\n  enabled: true\n  endpoint: https://collector:4317\n  tls:\n    ca_file: /etc/ca.pem\n    min_version: \"1.3\"\n",
    )
    .unwrap();
    assert_eq!(cfg.exporter.tls.ca_file, Some(PathBuf::from("/etc/ca.pem")));
    let e = parse(
        "exporter:\n  endpoint: http://collector:4317\n  tls:\n    insecure_skip_verify: true\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("exporter.tls") && e.contains("https://"), "{e}");
    let e = parse("exporter:\n  endpoint: https://collector:4317\n  tls:\n    cafile: x\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("exporter.tls") && e.contains("cafile"), "{e}");
}

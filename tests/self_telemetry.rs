//! The service's own traces and logs reach an OTLP/HTTP endpoint when
//! `telemetry.otlp.enabled`, and never when it is off.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;
use tokio::sync::mpsc;
use toolscore::config::TelemetryConfig;

async fn sink() -> (String, mpsc::Receiver<(String, Bytes)>) {
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
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), rx)
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn own_traces_and_logs_are_exported_when_enabled() {
    let (endpoint, mut rx) = sink().await;
    let mut cfg = TelemetryConfig::default();
    cfg.otlp.enabled = true;
    cfg.otlp.endpoint = endpoint;
    cfg.otlp.service_name = "toolscore-test".into();
    emit(cfg).await;
    let mut got = std::collections::BTreeMap::new();
    while got.len() < 2 {
        let (path, body) = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .unwrap()
            .unwrap();
        got.insert(path, body);
    }
    let traces = ExportTraceServiceRequest::decode(got["traces"].clone()).unwrap();
    let span = &traces.resource_spans[0].scope_spans[0].spans[0];
    assert_eq!(span.name, "evaluate_trace");
    let service = &traces.resource_spans[0]
        .resource
        .as_ref()
        .unwrap()
        .attributes[0];
    assert_eq!(service.key, "service.name");
    let logs = ExportLogsServiceRequest::decode(got["logs"].clone()).unwrap();
    let log = &logs.resource_logs[0].scope_logs[0].log_records[0];
    assert_eq!(
        log.trace_id, span.trace_id,
        "the log event is inside the span"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_exported_when_disabled() {
    let (endpoint, mut rx) = sink().await;
    let mut cfg = TelemetryConfig::default();
    cfg.otlp.endpoint = endpoint;
    emit(cfg).await;
    // Everything was flushed synchronously by `shutdown`: nothing can still arrive.
    assert!(rx.try_recv().is_err());
}

#[test]
fn an_endpoint_pointing_at_the_own_receivers_is_refused() {
    let e = toolscore::config::Config::parse(
        "telemetry:\n  otlp:\n    enabled: true\n    endpoint: http://localhost:4318\n",
        "t.yaml",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("telemetry.otlp.endpoint") && e.contains("feed back"),
        "{e}"
    );
}

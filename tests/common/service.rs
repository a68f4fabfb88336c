//! Starting the real service on ephemeral ports, sending spans with real
//! clients, and waiting for results without sleeping.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use toolscore::listener::Listener;

use opentelemetry::trace::{SpanContext, SpanKind, Status, TraceFlags, TraceState};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanExporter as _, SpanLinks};
use toolscore::app::{Listeners, Running};
use toolscore::config::Config;
use toolscore::span::TraceId;
use toolscore::store::StoredResult;

/// A config for tests: ephemeral loopback ports, a short grace period.
pub fn test_config() -> Config {
    let mut c = Config::default();
    c.receivers.grpc.endpoint = "127.0.0.1:0".parse().unwrap();
    c.receivers.http.endpoint = "127.0.0.1:0".parse().unwrap();
    c.api.http.endpoint = "127.0.0.1:0".parse().unwrap();
    c.api.grpc.endpoint = "127.0.0.1:0".parse().unwrap();
    c.assembler.grace_after_root_ms = 20;
    c.assembler.shards = 2;
    c.evaluation.workers = 2;
    c.shutdown_timeout_ms = 5_000;
    // Each test's results in its own process memory; the database backends
    // have their own tests (tests/store.rs).
    c.store.backend = toolscore::config::StoreBackend::Memory;
    // Likewise the write-ahead log (tests/wal.rs).
    c.wal.enabled = false;
    c
}

/// A tool-call-count evaluator with these `toolCallsCount` criteria as its
/// default, applied to every trace nothing else binds.
pub fn count_evaluator(counts: serde_json::Value) -> toolscore::config::InlineEvaluator {
    let cfg = serde_json::json!({"defaultEvaluationCriteria": {"toolCallsCount": counts}});
    toolscore::config::InlineEvaluator {
        id: "count".into(),
        kind: "tool-call-count".into(),
        config: cfg.as_object().cloned().unwrap(),
        apply_to_all_traces: true,
    }
}

pub async fn start(config: Config) -> Running {
    let listeners = Listeners::bind(&config).await.unwrap();
    toolscore::app::start(config, None, listeners).unwrap()
}

/// Waits (on the store's update stream, with a deadline) until the record of
/// `trace` satisfies `done`.
pub async fn wait_for(
    running: &Running,
    trace: TraceId,
    timeout: Duration,
    done: impl Fn(&StoredResult) -> bool,
) -> Arc<StoredResult> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut updates = running.store.subscribe();
    loop {
        if let Ok(Some(r)) = toolscore::store::get(&running.store, trace).await
            && done(&r)
        {
            return r;
        }
        match tokio::time::timeout_at(deadline, updates.recv()).await {
            Ok(_) => {}
            Err(_) => panic!(
                "timed out waiting for trace {trace}; last record: {:?}",
                toolscore::store::get(&running.store, trace).await
            ),
        }
    }
}

pub fn evaluated(revision: u32) -> impl Fn(&StoredResult) -> bool {
    move |r| r.revision >= revision && r.status != toolscore::store::TraceStatus::Pending
}

/// One span for the SDK exporter.
pub struct SpanSpec {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub parent: Option<[u8; 8]>,
    pub name: String,
    pub start_ns: u64,
    pub end_ns: u64,
    pub attributes: Vec<KeyValue>,
}

pub fn span_data(s: &SpanSpec) -> SpanData {
    SpanData {
        span_context: SpanContext::new(
            opentelemetry::trace::TraceId::from_bytes(s.trace_id),
            opentelemetry::trace::SpanId::from_bytes(s.span_id),
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        ),
        parent_span_id: s.parent.map_or(
            opentelemetry::trace::SpanId::INVALID,
            opentelemetry::trace::SpanId::from_bytes,
        ),
        parent_span_is_remote: false,
        span_kind: SpanKind::Internal,
        name: s.name.clone().into(),
        start_time: UNIX_EPOCH + Duration::from_nanos(s.start_ns),
        end_time: UNIX_EPOCH + Duration::from_nanos(s.end_ns),
        attributes: s.attributes.clone(),
        dropped_attributes_count: 0,
        events: SpanEvents::default(),
        links: SpanLinks::default(),
        status: Status::Unset,
        instrumentation_scope: InstrumentationScope::builder("toolscore-tests").build(),
    }
}

pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

fn resource() -> opentelemetry_sdk::Resource {
    opentelemetry_sdk::Resource::builder_empty()
        .with_attribute(KeyValue::new("service.name", "test-agent"))
        .build()
}

/// The real OTLP/gRPC exporter of the OpenTelemetry Rust SDK.
pub fn grpc_exporter(running: &Running) -> opentelemetry_otlp::SpanExporter {
    use opentelemetry_otlp::WithExportConfig;
    let mut e = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_endpoint(format!(
            "http://{}",
            running.addr(Listener::OtlpGrpc).unwrap()
        ))
        .with_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    e.set_resource(&resource());
    e
}

/// The real OTLP/HTTP (protobuf) exporter.
pub fn http_exporter(running: &Running) -> opentelemetry_otlp::SpanExporter {
    http_exporter_with(running, opentelemetry_otlp::Protocol::HttpBinary)
}

/// The real OTLP/HTTP exporter sending JSON.
pub fn http_json_exporter(running: &Running) -> opentelemetry_otlp::SpanExporter {
    http_exporter_with(running, opentelemetry_otlp::Protocol::HttpJson)
}

fn http_exporter_with(
    running: &Running,
    protocol: opentelemetry_otlp::Protocol,
) -> opentelemetry_otlp::SpanExporter {
    use opentelemetry_otlp::WithExportConfig;
    // Its reqwest client needs a crypto provider (see `super::http`).
    toolscore::tls::install_default_provider();
    let mut e = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(protocol)
        .with_endpoint(format!(
            "http://{}/v1/traces",
            running.addr(Listener::OtlpHttp).unwrap()
        ))
        .with_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    e.set_resource(&resource());
    e
}

pub async fn export(exporter: &opentelemetry_otlp::SpanExporter, spans: &[SpanSpec]) {
    exporter
        .export(spans.iter().map(span_data).collect())
        .await
        .unwrap();
}

/// The service's `/metrics` text.
pub async fn metrics_text(running: &Running) -> String {
    super::http()
        .get(format!(
            "http://{}/metrics",
            running.addr(Listener::ApiHttp).unwrap()
        ))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// A one-tool-call trace `[n; 16]` (`get_weather`) with the root's input
/// and output, for the LLM judges.
pub fn weather_trace(n: u8) -> Vec<SpanSpec> {
    let now = now_ns();
    let trace_id = [n; 16];
    let root = SpanSpec {
        trace_id,
        span_id: [n, 0, 0, 0, 0, 0, 0, 1],
        parent: None,
        name: "agent".into(),
        start_ns: now,
        end_ns: now + 1_000_000,
        attributes: vec![
            KeyValue::new("input.value", "weather in Paris?"),
            KeyValue::new("output.value", "sunny"),
        ],
    };
    let tool = SpanSpec {
        trace_id,
        span_id: [n, 0, 0, 0, 0, 0, 0, 2],
        parent: Some(root.span_id),
        name: "get_weather".into(),
        start_ns: now + 10,
        end_ns: now + 20,
        attributes: vec![
            KeyValue::new("openinference.span.kind", "TOOL"),
            KeyValue::new("tool.name", "get_weather"),
            KeyValue::new("input.value", r#"{"city": "Paris"}"#),
            KeyValue::new("output.value", "sunny"),
        ],
    };
    vec![root, tool]
}

/// Every score of the record settled: evaluated, no LLM judge `pending`.
pub fn judged(r: &StoredResult) -> bool {
    r.status != toolscore::store::TraceStatus::Pending
        && r.scores
            .iter()
            .all(|s| s.outcome.status != toolscore::evaluator::Status::Pending)
}

/// [`grpc_exporter`] for an agent whose resource says `service.name`.
pub fn grpc_exporter_for_service(
    running: &Running,
    service: &str,
) -> opentelemetry_otlp::SpanExporter {
    let mut e = grpc_exporter(running);
    e.set_resource(
        &opentelemetry_sdk::Resource::builder_empty()
            .with_attribute(KeyValue::new("service.name", service.to_owned()))
            .build(),
    );
    e
}

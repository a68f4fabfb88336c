//! The service's own telemetry, defined in one place: every pipeline metric
//! (name, unit, help) and the logging set-up. `/metrics` (the API issue)
//! encodes [`Metrics::registry`] as Prometheus text.

use std::sync::Arc;
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};
use tracing_subscriber::filter::{LevelFilter, Targets};

use crate::listener::Listener;

mod config;
mod otlp;
mod reasons;

pub use config::{LogFormat, TelemetryConfig};

pub use otlp::{SelfTelemetry, SelfTelemetryConfig, points_at};
pub use reasons::{
    Refusal, RefusalLabel, Rejection, RejectionLabel, ReplayOutcome, ReplayOutcomeLabel,
    TraceOutcome, TraceOutcomeLabel,
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReceiverLabel {
    pub receiver: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StageLabel {
    pub stage: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ListenerLabel {
    pub listener: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AuthFailureLabel {
    pub listener: &'static str,
    pub reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ShardLabel {
    pub shard: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabel {
    pub evaluator: Arc<str>,
    pub status: &'static str,
}

/// The stages in `toolscore_stage_panics_total`: the pipeline's, and the
/// background tasks it cannot do without.
pub const STAGES: [&str; 10] = [
    Listener::OtlpGrpc.name(),
    Listener::OtlpHttp.name(),
    "assembler",
    "evaluation",
    Listener::ApiHttp.name(),
    Listener::ApiGrpc.name(),
    "admission",
    "retention",
    "tls_reload",
    "token_reload",
];

/// The listeners' names in the connection metrics.
pub const LISTENERS: [&str; 4] = [
    Listener::ALL[0].name(),
    Listener::ALL[1].name(),
    Listener::ALL[2].name(),
    Listener::ALL[3].name(),
];

/// Every pipeline metric. Cheap to update from any thread.
pub struct Metrics {
    pub registry: Registry,
    /// Spans decoded from requests, by receiver.
    pub spans_received: Family<ReceiverLabel, Counter>,
    /// Log records decoded from requests, by receiver.
    pub log_records_received: Family<ReceiverLabel, Counter>,
    /// Log records acknowledged and dropped: they belong to no span, or
    /// carry nothing extraction reads. (Those kept go on as spans do.)
    pub log_records_ignored: Counter,
    /// Spans taken into the assembler (duplicates included: they are acknowledged).
    pub spans_accepted: Counter,
    /// Spans refused one by one, by reason.
    pub spans_rejected: Family<RejectionLabel, Counter>,
    /// Requests refused whole, by reason (`full`, `too_large`, `malformed`, …).
    pub requests_refused: Family<RefusalLabel, Counter>,
    /// Duplicate spans (exporter retries) acknowledged without storing.
    pub spans_duplicate: Counter,
    /// Traces leaving the assembler, by outcome.
    pub traces: Family<TraceOutcomeLabel, Counter>,
    pub buffered_traces: Family<ShardLabel, Gauge>,
    pub buffered_bytes: Family<ShardLabel, Gauge>,
    pub buffered_spans: Family<ShardLabel, Gauge>,
    /// What the buffered spans took on the wire (their protobuf encoding).
    pub buffered_encoded_bytes: Family<ShardLabel, Gauge>,
    pub assembler_queue_depth: Family<ShardLabel, Gauge>,
    pub evaluation_queue_depth: Gauge,
    pub evaluation_seconds: Histogram,
    /// From a trace's root span being accepted to its scores being stored.
    pub root_to_scores_seconds: Histogram,
    /// From a complete trace being due (root + grace) to its scores being
    /// stored: what toolscore adds on top of the configured grace period.
    pub due_to_scores_seconds: Histogram,
    pub results: Family<ResultLabel, Counter>,
    pub store_evicted: Counter,
    pub store_traces: Gauge,
    /// `WatchScores` subscribers dropped for falling behind.
    pub watch_subscribers_dropped: Counter,
    /// Open connections, by listener.
    pub connections_open: Family<ListenerLabel, Gauge>,
    /// Connections closed at once because the listener's `max_connections`
    /// were open, by listener.
    pub connections_refused: Family<ListenerLabel, Counter>,
    /// TLS handshakes that failed or timed out, by listener.
    pub tls_handshake_failures: Family<ListenerLabel, Counter>,
    /// Certificate files re-read and taken, by listener.
    pub tls_reloads: Family<ListenerLabel, Counter>,
    /// Certificate files changed but unusable (the previous kept), by listener.
    pub tls_reload_failures: Family<ListenerLabel, Counter>,
    /// The served certificate's `notAfter` (Unix seconds), by listener.
    pub tls_certificate_expiry: Family<ListenerLabel, Gauge>,
    /// Requests refused for their token, by listener and reason.
    pub auth_failures: Family<AuthFailureLabel, Counter>,
    /// The web UI's signed-in sessions held (at most `api.ui.max_sessions`).
    pub ui_sessions: Gauge,
    /// Panics caught in a stage, by stage. Any is a bug; `/readyz` and
    /// `/healthz` then fail.
    pub stage_panics: Family<StageLabel, Counter>,
    /// The write-ahead log's size on disk (segments, and appends not yet written).
    pub wal_bytes: Gauge,
    pub wal_segments: Gauge,
    /// From an append to its being written (and synced, per `wal.sync`).
    pub wal_append_seconds: Histogram,
    pub wal_fsync_seconds: Histogram,
    /// Appends or fsyncs that failed (a full disk): their requests were refused.
    pub wal_write_errors: Counter,
    /// Spans read back from the log at start and handed to the assembler.
    pub wal_replayed_spans: Counter,
    /// Traces in the log at start, by what replay did with them.
    pub wal_replayed_traces: Family<ReplayOutcomeLabel, Counter>,
    /// Damaged log bytes (a torn or corrupt tail) set aside at start.
    pub wal_quarantined_bytes: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("toolscore");
        let m = Metrics {
            registry: Registry::default(),
            spans_received: Family::default(),
            log_records_received: Family::default(),
            log_records_ignored: Counter::default(),
            spans_accepted: Counter::default(),
            spans_rejected: Family::default(),
            requests_refused: Family::default(),
            spans_duplicate: Counter::default(),
            traces: Family::default(),
            buffered_traces: Family::default(),
            buffered_bytes: Family::default(),
            buffered_spans: Family::default(),
            buffered_encoded_bytes: Family::default(),
            assembler_queue_depth: Family::default(),
            evaluation_queue_depth: Gauge::default(),
            evaluation_seconds: Histogram::new(exponential_buckets(0.000_01, 2.0, 20)),
            root_to_scores_seconds: Histogram::new(exponential_buckets(0.001, 2.0, 16)),
            // Fine around the ≤ 10 ms that toolscore aims to add to the grace period.
            due_to_scores_seconds: Histogram::new([
                0.000_5, 0.001, 0.002, 0.003, 0.004, 0.005, 0.007_5, 0.01, 0.012_5, 0.015, 0.02,
                0.03, 0.05, 0.075, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0,
            ]),
            results: Family::default(),
            store_evicted: Counter::default(),
            store_traces: Gauge::default(),
            watch_subscribers_dropped: Counter::default(),
            connections_open: Family::default(),
            connections_refused: Family::default(),
            tls_handshake_failures: Family::default(),
            tls_reloads: Family::default(),
            tls_reload_failures: Family::default(),
            tls_certificate_expiry: Family::default(),
            auth_failures: Family::default(),
            ui_sessions: Gauge::default(),
            stage_panics: Family::default(),
            wal_bytes: Gauge::default(),
            wal_segments: Gauge::default(),
            wal_append_seconds: Histogram::new(exponential_buckets(0.000_01, 2.0, 20)),
            wal_fsync_seconds: Histogram::new(exponential_buckets(0.000_01, 2.0, 20)),
            wal_write_errors: Counter::default(),
            wal_replayed_spans: Counter::default(),
            wal_replayed_traces: Family::default(),
            wal_quarantined_bytes: Counter::default(),
        };
        registry.register(
            "spans_received",
            "Spans decoded from OTLP requests",
            m.spans_received.clone(),
        );
        registry.register(
            "log_records_received",
            "Log records decoded from OTLP requests",
            m.log_records_received.clone(),
        );
        registry.register(
            "log_records_ignored",
            "Log records acknowledged and dropped: no span to belong to, or nothing toolscore reads",
            m.log_records_ignored.clone(),
        );
        registry.register(
            "spans_accepted",
            "Spans taken into the assembler",
            m.spans_accepted.clone(),
        );
        registry.register(
            "spans_rejected",
            "Spans refused one by one (reported in partial_success)",
            m.spans_rejected.clone(),
        );
        registry.register(
            "requests_refused",
            "OTLP requests refused whole",
            m.requests_refused.clone(),
        );
        registry.register(
            "spans_duplicate",
            "Duplicate spans acknowledged without storing",
            m.spans_duplicate.clone(),
        );
        registry.register(
            "traces",
            "Traces leaving the assembler, by outcome",
            m.traces.clone(),
        );
        registry.register(
            "assembler_buffered_traces",
            "Traces buffered per shard",
            m.buffered_traces.clone(),
        );
        registry.register_with_unit(
            "assembler_buffered",
            "Span memory buffered per shard",
            Unit::Bytes,
            m.buffered_bytes.clone(),
        );
        registry.register(
            "assembler_buffered_spans",
            "Spans buffered per shard (open traces and those kept for late spans)",
            m.buffered_spans.clone(),
        );
        registry.register_with_unit(
            "assembler_buffered_encoded",
            "Protobuf-encoded size of the spans buffered per shard, as received",
            Unit::Bytes,
            m.buffered_encoded_bytes.clone(),
        );
        registry.register(
            "assembler_queue_depth",
            "Span batches queued per shard",
            m.assembler_queue_depth.clone(),
        );
        registry.register(
            "evaluation_queue_depth",
            "Complete traces queued for evaluation",
            m.evaluation_queue_depth.clone(),
        );
        registry.register_with_unit(
            "evaluation",
            "Time to evaluate one trace",
            Unit::Seconds,
            m.evaluation_seconds.clone(),
        );
        registry.register_with_unit(
            "root_to_scores",
            "Time from a trace's root span being accepted to its scores being queryable",
            Unit::Seconds,
            m.root_to_scores_seconds.clone(),
        );
        registry.register_with_unit(
            "due_to_scores",
            "Time from a complete trace being due for evaluation (root span + grace) to its scores being queryable",
            Unit::Seconds,
            m.due_to_scores_seconds.clone(),
        );
        registry.register(
            "evaluation_results",
            "Evaluation results by evaluator and status",
            m.results.clone(),
        );
        registry.register(
            "store_evicted",
            "Results evicted from the store (count or age bound)",
            m.store_evicted.clone(),
        );
        registry.register(
            "store_traces",
            "Traces held by the results store",
            m.store_traces.clone(),
        );
        registry.register(
            "watch_subscribers_dropped",
            "WatchScores and /v1/watch subscribers dropped for falling behind",
            m.watch_subscribers_dropped.clone(),
        );
        registry.register(
            "connections_open",
            "Open connections, by listener",
            m.connections_open.clone(),
        );
        registry.register(
            "connections_refused",
            "Connections closed at once because the listener's max_connections were open",
            m.connections_refused.clone(),
        );
        registry.register(
            "tls_handshake_failures",
            "TLS handshakes that failed or timed out, by listener",
            m.tls_handshake_failures.clone(),
        );
        registry.register(
            "tls_reloads",
            "Certificate files read again and served from then on, by listener",
            m.tls_reloads.clone(),
        );
        registry.register(
            "tls_reload_failures",
            "Certificate files changed but unusable (the previous are still served), by listener",
            m.tls_reload_failures.clone(),
        );
        registry.register(
            "tls_certificate_expiry_timestamp_seconds",
            "When the certificate each TLS listener serves expires (its notAfter, Unix seconds)",
            m.tls_certificate_expiry.clone(),
        );
        registry.register(
            "auth_failures",
            "Requests refused for their bearer token, by listener and reason",
            m.auth_failures.clone(),
        );
        registry.register(
            "ui_sessions",
            "Signed-in web UI sessions held (at most api.ui.max_sessions; the oldest ends past it)",
            m.ui_sessions.clone(),
        );
        registry.register(
            "stage_panics",
            "Panics caught in a pipeline stage (a bug: /readyz and /healthz then fail)",
            m.stage_panics.clone(),
        );
        registry.register_with_unit(
            "wal",
            "Size of the write-ahead log on disk",
            Unit::Bytes,
            m.wal_bytes.clone(),
        );
        registry.register(
            "wal_segments",
            "Segment files of the write-ahead log",
            m.wal_segments.clone(),
        );
        registry.register_with_unit(
            "wal_append",
            "Time from an append to the write-ahead log to its being written (and synced, per wal.sync)",
            Unit::Seconds,
            m.wal_append_seconds.clone(),
        );
        registry.register_with_unit(
            "wal_fsync",
            "Time one fsync of the write-ahead log took",
            Unit::Seconds,
            m.wal_fsync_seconds.clone(),
        );
        registry.register(
            "wal_write_errors",
            "Writes or fsyncs of the write-ahead log that failed (their requests were refused)",
            m.wal_write_errors.clone(),
        );
        registry.register(
            "wal_replayed_spans",
            "Spans read back from the write-ahead log at start",
            m.wal_replayed_spans.clone(),
        );
        registry.register(
            "wal_replayed_traces",
            "Traces found in the write-ahead log at start, by what replay did with them",
            m.wal_replayed_traces.clone(),
        );
        registry.register_with_unit(
            "wal_quarantined",
            "Damaged write-ahead log bytes set aside at start",
            Unit::Bytes,
            m.wal_quarantined_bytes.clone(),
        );
        for &outcome in ReplayOutcome::ALL {
            let _ = m
                .wal_replayed_traces
                .get_or_create(&ReplayOutcomeLabel { outcome });
        }
        for stage in STAGES {
            let _ = m.stage_panics.get_or_create(&StageLabel { stage });
        }
        // Every known series exists from the start, at zero, so dashboards
        // and alerts see it before the first event.
        for listener in LISTENERS {
            let _ = m
                .connections_open
                .get_or_create(&ListenerLabel { listener });
            let _ = m
                .connections_refused
                .get_or_create(&ListenerLabel { listener });
        }
        for receiver in ["grpc", "http"] {
            let _ = m.spans_received.get_or_create(&ReceiverLabel { receiver });
            let _ = m
                .log_records_received
                .get_or_create(&ReceiverLabel { receiver });
        }
        for &reason in Rejection::ALL {
            let _ = m.spans_rejected.get_or_create(&RejectionLabel { reason });
        }
        for &reason in Refusal::ALL {
            let _ = m.requests_refused.get_or_create(&RefusalLabel { reason });
        }
        for &outcome in TraceOutcome::ALL {
            let _ = m.traces.get_or_create(&TraceOutcomeLabel { outcome });
        }
        Metrics { registry, ..m }
    }

    pub fn reject(&self, reason: Rejection, n: u64) {
        self.spans_rejected
            .get_or_create(&RejectionLabel { reason })
            .inc_by(n);
    }

    /// A listener's connection bounds, counted in its connection metrics.
    pub fn connection_limits(
        &self,
        listener: &'static str,
        max_connections: usize,
        read_header_timeout: std::time::Duration,
    ) -> crate::net::Limits {
        let label = ListenerLabel { listener };
        crate::net::Limits {
            max_connections,
            read_header_timeout,
            refused: self.connections_refused.get_or_create(&label).clone(),
            open: self.connections_open.get_or_create(&label).clone(),
            tls: None,
        }
    }

    /// A listener's TLS counters.
    pub fn tls_metrics(&self, listener: &'static str) -> crate::tls::TlsMetrics {
        let label = ListenerLabel { listener };
        crate::tls::TlsMetrics {
            handshake_failures: self.tls_handshake_failures.get_or_create(&label).clone(),
            reloads: self.tls_reloads.get_or_create(&label).clone(),
            reload_failures: self.tls_reload_failures.get_or_create(&label).clone(),
            not_after: self.tls_certificate_expiry.get_or_create(&label).clone(),
        }
    }

    /// A listener's token failure counters, in [`crate::auth::Failure::ALL`]'s order.
    pub fn auth_failures(&self, listener: &'static str) -> [Counter; 4] {
        crate::auth::Failure::ALL.map(|f| {
            self.auth_failures
                .get_or_create(&AuthFailureLabel {
                    listener,
                    reason: f.reason(),
                })
                .clone()
        })
    }

    pub fn stage_panicked(&self, stage: &'static str) {
        self.stage_panics.get_or_create(&StageLabel { stage }).inc();
    }

    pub fn refuse(&self, reason: Refusal) {
        self.requests_refused
            .get_or_create(&RefusalLabel { reason })
            .inc();
    }

    pub fn trace_outcome(&self, outcome: TraceOutcome, n: u64) {
        if n > 0 {
            self.traces
                .get_or_create(&TraceOutcomeLabel { outcome })
                .inc_by(n);
        }
    }

    /// Root → scores and due → scores latencies of one stored result (the
    /// caller asks for complete traces on their first evaluation only).
    pub fn observe_scores_latency(&self, root_arrived: Option<Instant>, due: Instant) {
        if let Some(root) = root_arrived {
            self.root_to_scores_seconds
                .observe(root.elapsed().as_secs_f64());
        }
        self.due_to_scores_seconds
            .observe(due.elapsed().as_secs_f64());
    }

    /// One evaluation's time, and its scores as `(evaluator id, status)`.
    pub fn record_evaluation<'a>(
        &self,
        scores: impl IntoIterator<Item = (&'a Arc<str>, &'static str)>,
        took: Duration,
    ) {
        self.evaluation_seconds.observe(took.as_secs_f64());
        for (evaluator, status) in scores {
            self.results
                .get_or_create(&ResultLabel {
                    evaluator: evaluator.clone(),
                    status,
                })
                .inc();
        }
    }

    /// Adds a collector's metrics (the results writer's) under the `toolscore_` prefix.
    pub fn register_collector(
        &mut self,
        collector: Box<dyn prometheus_client::collector::Collector>,
    ) {
        self.registry.register_collector(collector);
    }

    /// The Prometheus text exposition of every metric.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// A log filter: comma-separated `level` and `target=level` directives
/// (`info`, `toolscore=debug,h2=warn`), as `RUST_LOG` takes them, read by
/// tracing-subscriber's `Targets` (no regex engine). `Targets` reads an
/// empty directive as the level ERROR and has no span filters, so this
/// skips empty directives (as `EnvFilter` did) and refuses
/// `[span{field}]` rather than ignoring it.
pub fn log_filter(text: &str) -> Result<Targets, String> {
    if !text.is_ascii() {
        return Err("a log filter is ASCII (levels and Rust targets)".into());
    }
    let directives: Vec<&str> = text
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .collect();
    if directives.iter().any(|d| d.contains(['[', ']', '{', '}'])) {
        return Err(
            "span filters (`target[span{field}]=level`) are not supported; \
             use `level` and `target=level` directives"
                .into(),
        );
    }
    directives
        .join(",")
        .parse::<Targets>()
        .map_err(|e| e.to_string())
}

/// `RUST_LOG` when it is set and not blank: its text and what it gives.
fn rust_log() -> Option<(String, Result<Targets, String>)> {
    let text = std::env::var("RUST_LOG").ok()?;
    if text.trim().is_empty() {
        return None;
    }
    let filter = log_filter(&text);
    Some((text, filter))
}

/// The log filter: a valid `RUST_LOG` overrides the configured level.
fn filter(cfg: &TelemetryConfig) -> Targets {
    match rust_log() {
        Some((_, Ok(f))) => f,
        _ => log_filter(&cfg.log_level)
            .unwrap_or_else(|_| Targets::new().with_default(LevelFilter::INFO)),
    }
}

/// Targets (and their modules) whose events the OTLP layers never see: the
/// HTTP client's and the exporter's own, since exporting them would export
/// more of them.
const OTLP_QUIET: [&str; 8] = [
    "hyper",
    "hyper_util",
    "hyper_rustls",
    "h2",
    "opentelemetry",
    "opentelemetry_sdk",
    "opentelemetry_otlp",
    "opentelemetry_http",
];

fn otlp_quiet(target: &str) -> bool {
    OTLP_QUIET.iter().any(|q| {
        target
            .strip_prefix(q)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
    })
}

/// What the OTLP layers see: the log filter, never the targets in
/// [`OTLP_QUIET`] (not even when a directive names one of their modules).
fn otlp_filter(
    logs: &Targets,
) -> impl tracing_subscriber::layer::Filter<tracing_subscriber::Registry> + Send + Sync + 'static {
    use tracing_subscriber::filter::{FilterExt as _, filter_fn};
    logs.clone()
        .and(filter_fn(|meta| !otlp_quiet(meta.target())))
}

type BoxedLayer = Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>;

/// The subscriber: logs on stderr (text or JSON), plus the service's own
/// traces and logs over OTLP when `telemetry.otlp.enabled`.
pub fn subscriber(
    cfg: &TelemetryConfig,
) -> Result<(impl tracing::Subscriber + Send + Sync, SelfTelemetry), String> {
    use opentelemetry::trace::TracerProvider as _;
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    let mut layers: Vec<BoxedLayer> = Vec::new();
    let logs = filter(cfg);
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    layers.push(match cfg.log_format {
        LogFormat::Json => fmt.json().with_filter(logs.clone()).boxed(),
        LogFormat::Text => fmt.with_filter(logs.clone()).boxed(),
    });
    let own = SelfTelemetry::start(&cfg.otlp)?;
    if let Some(provider) = &own.tracer {
        let tracer = provider.tracer("toolscore");
        layers.push(
            tracing_opentelemetry::layer()
                .with_tracer(tracer)
                .with_filter(otlp_filter(&logs))
                .boxed(),
        );
    }
    if let Some(provider) = &own.logger {
        layers.push(
            opentelemetry_appender_tracing::layer::OpenTelemetryTracingBridge::new(provider)
                .with_filter(otlp_filter(&logs))
                .boxed(),
        );
    }
    Ok((tracing_subscriber::registry().with(layers), own))
}

/// Installs the global subscriber (the binary's edge only; tests use
/// [`subscriber`] with a scoped default). Returns the self-telemetry
/// exporters to shut down on exit.
pub fn init_logging(cfg: &TelemetryConfig) -> Result<SelfTelemetry, String> {
    let (subscriber, own) = subscriber(cfg)?;
    // A second initialisation is not an error worth failing for.
    let _ = tracing::subscriber::set_global_default(subscriber);
    if let Some((text, Err(why))) = rust_log() {
        tracing::warn!(
            rust_log = %text,
            error = %why,
            "RUST_LOG is not a log filter this service reads; telemetry.log_level applies"
        );
    }
    Ok(own)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;

    fn filter_of(text: &str) -> Targets {
        match log_filter(text) {
            Ok(f) => f,
            Err(why) => panic!("{text:?} refused: {why}"),
        }
    }

    #[test]
    fn levels_and_targets_filter_as_rust_log_does() {
        let f = filter_of("info");
        assert!(f.would_enable("toolscore::store", &Level::INFO));
        assert!(!f.would_enable("toolscore::store", &Level::DEBUG));

        let f = filter_of("warn,toolscore=debug, h2=error");
        assert!(f.would_enable("toolscore::store", &Level::DEBUG));
        assert!(!f.would_enable("toolscore::store", &Level::TRACE));
        assert!(!f.would_enable("h2::codec", &Level::WARN));
        assert!(f.would_enable("hyper", &Level::WARN));
        assert!(!f.would_enable("hyper", &Level::INFO));
    }

    #[test]
    fn empty_directives_are_skipped() {
        // `Targets` alone would read the last, empty, directive as ERROR.
        let f = filter_of("info,,");
        assert!(!f.would_enable("toolscore", &Level::DEBUG));
        assert!(f.would_enable("toolscore", &Level::INFO));
    }

    #[test]
    fn what_is_not_a_level_or_target_directive_is_refused() {
        for text in [
            "info,,=[",
            "toolscore[span{field=x}]=debug",
            "a=b=c",
            "toolscore=loud",
            "\u{684}=info",
        ] {
            assert!(log_filter(text).is_err(), "{text:?} accepted");
        }
    }

    #[test]
    fn the_otlp_layers_never_see_the_http_clients_events() {
        for target in [
            "hyper",
            "hyper::proto::h1",
            "h2::codec",
            "hyper_util::client",
            "opentelemetry_sdk::trace",
            "opentelemetry_otlp::exporter",
            "opentelemetry_http::hyper",
        ] {
            assert!(otlp_quiet(target), "{target}");
        }
        for target in ["toolscore::exporter", "h2o", "hyperion::x", "tonic"] {
            assert!(!otlp_quiet(target), "{target}");
        }
    }
}

//! The exporter against an in-process OTLP receiver: a tonic server on an
//! ephemeral port implementing the trace, logs and metrics services, which
//! forwards every request into a channel the test awaits.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::num::NonZero;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime};

use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::{
    LogsService, LogsServiceServer,
};
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use opentelemetry_proto::tonic::metrics::v1::{metric, number_data_point};
use opentelemetry_proto::tonic::trace::v1::Span;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_stream::wrappers::TcpListenerStream;
use tokio_util::sync::CancellationToken;
use tonic::codec::CompressionEncoding;
use tonic::{Request, Response, Status};

use toolscore::criteria::Binding;
use toolscore::evaluator::{EvaluatorType, Outcome};
use toolscore::exporter::{self, ExporterConfig, ExporterHandle};
use toolscore::span::{SpanId, TraceId};
use toolscore::store::{RootSummary, Score, StoredResult, TraceStatus};

const WAIT: Duration = Duration::from_secs(10);

// ---- the test receiver -------------------------------------------------

#[derive(Clone)]
struct Sink {
    traces: mpsc::Sender<ExportTraceServiceRequest>,
    logs: mpsc::Sender<ExportLogsServiceRequest>,
    metrics: mpsc::Sender<ExportMetricsServiceRequest>,
    /// Trace requests still to refuse with UNAVAILABLE.
    refuse_traces: Arc<AtomicU32>,
}

#[tonic::async_trait]
impl TraceService for Sink {
    async fn export(
        &self,
        request: Request<ExportTraceServiceRequest>,
    ) -> Result<Response<ExportTraceServiceResponse>, Status> {
        let refuse = self
            .refuse_traces
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        if refuse.is_ok() {
            return Err(Status::unavailable("try again"));
        }
        self.traces.send(request.into_inner()).await.unwrap();
        Ok(Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl LogsService for Sink {
    async fn export(
        &self,
        request: Request<ExportLogsServiceRequest>,
    ) -> Result<Response<ExportLogsServiceResponse>, Status> {
        self.logs.send(request.into_inner()).await.unwrap();
        Ok(Response::new(ExportLogsServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Sink {
    async fn export(
        &self,
        request: Request<ExportMetricsServiceRequest>,
    ) -> Result<Response<ExportMetricsServiceResponse>, Status> {
        self.metrics.send(request.into_inner()).await.unwrap();
        Ok(Response::new(ExportMetricsServiceResponse::default()))
    }
}

struct Receiver {
    traces: mpsc::Receiver<ExportTraceServiceRequest>,
    logs: mpsc::Receiver<ExportLogsServiceRequest>,
    metrics: mpsc::Receiver<ExportMetricsServiceRequest>,
    refuse_traces: Arc<AtomicU32>,
    stop: CancellationToken,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Serves the three OTLP services on `listener` until the receiver is dropped.
fn serve(listener: TcpListener) -> Receiver {
    let (traces_tx, traces) = mpsc::channel(1024);
    let (logs_tx, logs) = mpsc::channel(1024);
    let (metrics_tx, metrics) = mpsc::channel(1024);
    let refuse_traces = Arc::new(AtomicU32::new(0));
    let sink = Sink {
        traces: traces_tx,
        logs: logs_tx,
        metrics: metrics_tx,
        refuse_traces: refuse_traces.clone(),
    };
    let stop = CancellationToken::new();
    let server = tonic::transport::Server::builder()
        .add_service(
            TraceServiceServer::new(sink.clone()).accept_compressed(CompressionEncoding::Gzip),
        )
        .add_service(
            LogsServiceServer::new(sink.clone()).accept_compressed(CompressionEncoding::Gzip),
        )
        .add_service(MetricsServiceServer::new(sink).accept_compressed(CompressionEncoding::Gzip))
        .serve_with_incoming_shutdown(
            TcpListenerStream::new(listener),
            stop.clone().cancelled_owned(),
        );
    tokio::spawn(server);
    Receiver {
        traces,
        logs,
        metrics,
        refuse_traces,
        stop,
    }
}

async fn listener() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    (listener, format!("http://{addr}"))
}

async fn next<T>(rx: &mut mpsc::Receiver<T>) -> T {
    tokio::time::timeout(WAIT, rx.recv())
        .await
        .expect("timed out waiting for an export")
        .expect("receiver stopped")
}

/// Receives span requests until `n` spans have arrived.
async fn spans(rx: &mut mpsc::Receiver<ExportTraceServiceRequest>, n: usize) -> Vec<Span> {
    let mut out = Vec::new();
    while out.len() < n {
        let req = next(rx).await;
        for rs in req.resource_spans {
            assert_eq!(
                service_name(&rs.resource.unwrap().attributes),
                "toolscore-test"
            );
            for ss in rs.scope_spans {
                assert_eq!(ss.scope.unwrap().name, "toolscore");
                out.extend(ss.spans);
            }
        }
    }
    assert_eq!(out.len(), n, "more spans than expected");
    out
}

async fn logs(rx: &mut mpsc::Receiver<ExportLogsServiceRequest>, n: usize) -> Vec<LogRecord> {
    let mut out = Vec::new();
    while out.len() < n {
        let req = next(rx).await;
        for rl in req.resource_logs {
            for sl in rl.scope_logs {
                out.extend(sl.log_records);
            }
        }
    }
    assert_eq!(out.len(), n, "more log records than expected");
    out
}

/// Polls `f` until it holds, for at most [`WAIT`].
async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

// ---- fixtures ------------------------------------------------------------

fn config(endpoint: &str) -> ExporterConfig {
    let cfg = ExporterConfig {
        enabled: true,
        endpoint: endpoint.into(),
        batch_timeout_ms: NonZero::new(20).unwrap(),
        metrics_interval_ms: NonZero::new(50).unwrap(),
        timeout_ms: NonZero::new(500).unwrap(),
        max_retries: 3,
        initial_backoff_ms: NonZero::new(10).unwrap(),
        max_backoff_ms: NonZero::new(50).unwrap(),
        flush_timeout_ms: NonZero::new(2_000).unwrap(),
        service_name: "toolscore-test".into(),
        ..ExporterConfig::default()
    };
    cfg.validate().unwrap();
    cfg
}

fn root_id(n: u8) -> SpanId {
    SpanId([n, 0xa, 0xb, 0xc, 0xd, 0xe, 0xf, 1])
}

fn trace_id(n: u8) -> TraceId {
    TraceId([n; 16])
}

/// An evaluated record with a root span and the given outcomes.
fn record(n: u8, outcomes: Vec<(&str, EvaluatorType, Outcome)>) -> Arc<StoredResult> {
    let mut r = StoredResult::pending(trace_id(n));
    r.status = TraceStatus::Evaluated;
    r.complete = true;
    r.revision = 1;
    r.evaluated_at = Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_750_000_000));
    r.root = Some(RootSummary {
        span_id: root_id(n),
        name: "agent run".into(),
        service: Some("agent".into()),
        start_time_unix_nano: 1,
        end_time_unix_nano: 2,
    });
    r.binding = Some(Binding::EvalSet {
        eval_set: "weather".into(),
        item: format!("case-{n}").into(),
    });
    r.scores = outcomes
        .into_iter()
        .map(|(id, kind, outcome)| Score {
            evaluator_id: id.into(),
            evaluator_type: kind,
            outcome: outcome.into(),
        })
        .collect();
    Arc::new(r)
}

fn passing(n: u8) -> Arc<StoredResult> {
    record(
        n,
        vec![(
            "count",
            EvaluatorType::Count,
            Outcome::ok(1.0, json!({"expected": 2, "actual": 2})),
        )],
    )
}

fn attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a any_value::Value> {
    attrs
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
}

fn str_attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a str> {
    match attr(attrs, key)? {
        any_value::Value::StringValue(s) => Some(s),
        other => panic!("{key} is not a string: {other:?}"),
    }
}

fn service_name(attrs: &[KeyValue]) -> &str {
    str_attr(attrs, "service.name").unwrap()
}

fn start(
    cfg: ExporterConfig,
) -> (
    ExporterHandle,
    tokio::task::JoinHandle<()>,
    CancellationToken,
) {
    let shutdown = CancellationToken::new();
    let (handle, join) = exporter::spawn(cfg, shutdown.clone());
    (handle, join, shutdown)
}

// ---- tests -----------------------------------------------------------------

#[tokio::test]
async fn results_arrive_as_child_spans_of_the_root_log_events_and_metrics() {
    let (l, endpoint) = listener().await;
    let mut rx = serve(l);
    let (handle, _join, _shutdown) = start(config(&endpoint));

    let mut deepeval = Outcome::ok(0.5, json!({"reason": "one tool missing", "success": false}));
    deepeval.passed = Some(false);
    deepeval.threshold = Some(0.7);
    handle.offer(record(
        1,
        vec![
            (
                "count",
                EvaluatorType::Count,
                Outcome::ok(1.0, json!({"expected": 2, "actual": 2})),
            ),
            ("correct", EvaluatorType::ToolCorrectness, deepeval),
        ],
    ));
    handle.offer(record(
        2,
        vec![("count", EvaluatorType::Count, Outcome::error("no criteria"))],
    ));

    let mut got = spans(&mut rx.traces, 3).await;
    got.sort_by(|a, b| (&a.trace_id, &a.name).cmp(&(&b.trace_id, &b.name)));
    for s in &got {
        let n = s.trace_id[0];
        assert_eq!(s.trace_id, trace_id(n).0.to_vec());
        assert_eq!(
            s.parent_span_id,
            root_id(n).0.to_vec(),
            "a child of the root"
        );
        assert_eq!(s.links.len(), 1);
        assert_eq!(s.links[0].trace_id, trace_id(n).0.to_vec());
        assert_eq!(s.links[0].span_id, root_id(n).0.to_vec());
        assert_eq!(s.start_time_unix_nano, 1_750_000_000_000_000_000);
        assert_eq!(s.span_id.len(), 8);
        assert_eq!(
            str_attr(&s.attributes, "openinference.span.kind"),
            Some("EVALUATOR")
        );
        assert_eq!(
            str_attr(&s.attributes, "toolscore.eval_set.item"),
            Some(format!("case-{n}").as_str())
        );
    }
    let [correct, count, errored] = &got[..] else {
        panic!("{got:?}")
    };
    assert_eq!(correct.name, "evaluation correct");
    let a = &correct.attributes;
    assert_eq!(str_attr(a, "gen_ai.evaluation.name"), Some("correct"));
    assert_eq!(
        attr(a, "gen_ai.evaluation.score.value"),
        Some(&any_value::Value::DoubleValue(0.5))
    );
    assert_eq!(str_attr(a, "gen_ai.evaluation.score.label"), Some("fail"));
    assert_eq!(
        str_attr(a, "gen_ai.evaluation.explanation"),
        Some("one tool missing")
    );
    assert_eq!(
        str_attr(a, "toolscore.evaluator.type"),
        Some("deepeval-tool-correctness")
    );
    assert_eq!(
        attr(a, "toolscore.passed"),
        Some(&any_value::Value::BoolValue(false))
    );
    assert_eq!(
        attr(a, "toolscore.revision"),
        Some(&any_value::Value::IntValue(1))
    );
    assert_eq!(
        str_attr(&count.attributes, "gen_ai.evaluation.score.label"),
        Some("pass")
    );
    assert_eq!(
        str_attr(&count.attributes, "gen_ai.evaluation.explanation"),
        Some(r#"{"expected":2,"actual":2}"#)
    );
    assert_ne!(count.span_id, correct.span_id);
    assert_eq!(
        str_attr(&errored.attributes, "gen_ai.evaluation.score.label"),
        Some("error")
    );
    assert_eq!(
        attr(&errored.attributes, "gen_ai.evaluation.score.value"),
        None
    );
    assert_eq!(errored.status.as_ref().unwrap().message, "no criteria");

    let mut events = logs(&mut rx.logs, 3).await;
    events.sort_by(|a, b| a.trace_id.cmp(&b.trace_id));
    for e in &events {
        let n = e.trace_id[0];
        assert_eq!(e.event_name, "gen_ai.evaluation.result");
        assert_eq!(e.trace_id, trace_id(n).0.to_vec());
        assert_eq!(e.span_id, root_id(n).0.to_vec(), "parented to the root");
        assert!(attr(&e.attributes, "gen_ai.evaluation.score.label").is_some());
    }
    assert_eq!(events[2].severity_text, "ERROR");

    // Cumulative metrics arrive every 50 ms; wait for the one counting all three.
    loop {
        let req = next(&mut rx.metrics).await;
        let metrics = &req.resource_metrics[0].scope_metrics[0].metrics;
        let counter = metrics
            .iter()
            .find(|m| m.name == "toolscore.evaluations")
            .unwrap();
        let Some(metric::Data::Sum(sum)) = &counter.data else {
            panic!("{counter:?}")
        };
        let mut counts: Vec<(String, String, i64)> = sum
            .data_points
            .iter()
            .map(|p| {
                let name = str_attr(&p.attributes, "gen_ai.evaluation.name").unwrap();
                let result = str_attr(&p.attributes, "toolscore.evaluation.result").unwrap();
                let Some(number_data_point::Value::AsInt(v)) = p.value else {
                    panic!("{p:?}")
                };
                (name.to_owned(), result.to_owned(), v)
            })
            .collect();
        if counts.iter().map(|c| c.2).sum::<i64>() < 3 {
            continue;
        }
        counts.sort();
        let expected = [
            ("correct", "fail", 1),
            ("count", "error", 1),
            ("count", "pass", 1),
        ]
        .map(|(a, b, c)| (a.to_owned(), b.to_owned(), c));
        assert_eq!(counts, expected);
        assert!(sum.is_monotonic);
        let histogram = metrics
            .iter()
            .find(|m| m.name == "toolscore.evaluation.score")
            .unwrap();
        let Some(metric::Data::Histogram(h)) = &histogram.data else {
            panic!("{histogram:?}")
        };
        assert_eq!(h.data_points.len(), 2, "the error has no score");
        let total: u64 = h.data_points.iter().map(|p| p.count).sum();
        assert_eq!(total, 2);
        for p in &h.data_points {
            assert_eq!(p.explicit_bounds.len(), 10);
            assert_eq!(p.bucket_counts.iter().sum::<u64>(), p.count);
        }
        break;
    }
    let s = handle.stats();
    assert_eq!((s.records_accepted.get(), s.records_dropped()), (2, 0));
    assert_eq!((s.spans_exported.get(), s.logs_exported.get()), (3, 3));
}

/// With one signal off, two batches in turn: the second's arrival on a
/// signal that is on proves the first batch is done, and the disabled one
/// got nothing.
/// On the runtime's clock, paused: it moves only when every task waits, so
/// the metric intervals pass without real sleeping.
#[tokio::test(start_paused = true)]
async fn each_signal_can_be_turned_off() {
    for off in ["spans", "logs", "metrics"] {
        let (l, endpoint) = listener().await;
        let mut rx = serve(l);
        let mut cfg = config(&endpoint);
        match off {
            "spans" => cfg.spans = false,
            "logs" => cfg.logs = false,
            _ => cfg.metrics = false,
        }
        let (handle, _join, _shutdown) = start(cfg);
        for n in 1..=2 {
            handle.offer(passing(n));
            if off == "spans" {
                let got = logs(&mut rx.logs, 1).await;
                assert_eq!(got[0].trace_id, trace_id(n).0.to_vec());
            } else {
                let got = spans(&mut rx.traces, 1).await;
                assert_eq!(got[0].trace_id, trace_id(n).0.to_vec());
            }
        }
        match off {
            "spans" => assert!(rx.traces.try_recv().is_err(), "no spans"),
            "logs" => assert!(rx.logs.try_recv().is_err(), "no logs"),
            _ => {
                // Absence takes time to show: five metric intervals pass.
                tokio::time::sleep(Duration::from_millis(250)).await;
                assert!(rx.metrics.try_recv().is_err(), "no metrics");
            }
        }
        if off != "metrics" {
            next(&mut rx.metrics).await;
        }
    }
}

/// On the paused clock: a partial batch leaves exactly `batch_timeout_ms`
/// after its first result; a full one at once.
#[tokio::test(start_paused = true)]
async fn a_batch_leaves_when_full_or_at_its_timeout() {
    let (l, endpoint) = listener().await;
    let mut rx = serve(l);
    let mut cfg = config(&endpoint);
    cfg.metrics = false;
    cfg.logs = false;
    cfg.max_batch = NonZero::new(2).unwrap();
    let (handle, _join, _shutdown) = start(cfg);

    let started = tokio::time::Instant::now();
    handle.offer(passing(1));
    let got = spans(&mut rx.traces, 1).await;
    assert_eq!(got[0].trace_id, trace_id(1).0.to_vec());
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(20),
        "batch_timeout_ms"
    );

    let started = tokio::time::Instant::now();
    handle.offer(passing(2));
    handle.offer(passing(3));
    let got = spans(&mut rx.traces, 2).await;
    assert_eq!(got.len(), 2);
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "a full batch waits for nothing"
    );
}

/// On the paused clock: a downstream that takes the connection and never
/// answers holds the shutdown flush exactly `flush_timeout_ms`, after which
/// what is left is counted as dropped (`shutdown`), not waited for.
#[tokio::test(start_paused = true)]
async fn the_shutdown_flush_gives_up_at_its_deadline() {
    let (l, endpoint) = listener().await;
    // Accepts connections and holds them, silent.
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((conn, _)) = l.accept().await {
            open.push(conn);
        }
    });
    let mut cfg = config(&endpoint);
    cfg.metrics = false;
    cfg.logs = false;
    cfg.timeout_ms = NonZero::new(600_000).unwrap();
    let (handle, join, shutdown) = start(cfg);
    for n in 1..=3 {
        handle.offer(passing(n));
    }
    shutdown.cancel();
    let stopping = tokio::time::Instant::now();
    join.await.unwrap();
    assert_eq!(
        stopping.elapsed(),
        Duration::from_millis(2_000),
        "flush_timeout_ms"
    );
    let s = handle.stats();
    assert_eq!(s.records_dropped_shutdown.get(), 3);
    held.abort();
}

#[tokio::test]
async fn unavailable_is_retried_until_accepted() {
    let (l, endpoint) = listener().await;
    let mut rx = serve(l);
    rx.refuse_traces.store(2, Ordering::SeqCst);
    let (handle, _join, _shutdown) = start(config(&endpoint));
    handle.offer(passing(1));
    let got = spans(&mut rx.traces, 1).await;
    assert_eq!(got[0].trace_id, trace_id(1).0.to_vec());
    let s = handle.stats();
    assert_eq!((s.retries.get(), s.requests_failed.get()), (2, 2));
    assert_eq!(s.records_dropped(), 0);
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_the_records_counted_as_dropped() {
    // A port that was just free: connecting is refused.
    let (l, endpoint) = listener().await;
    drop(l);
    let mut cfg = config(&endpoint);
    cfg.metrics = false;
    let (handle, _join, _shutdown) = start(cfg);
    handle.offer(passing(1));
    let stats = handle.stats().clone();
    eventually("the record is dropped", || {
        stats.records_dropped_export_failed.get() == 1
    })
    .await;
    let s = stats;
    // Spans and logs: 1 attempt + 3 retries each.
    assert_eq!((s.requests_failed.get(), s.retries.get()), (8, 6));
    assert_eq!((s.spans_exported.get(), s.logs_exported.get()), (0, 0));
}

#[tokio::test]
async fn a_down_endpoint_drops_at_the_queue_without_blocking_then_export_resumes() {
    // Bound but not accepting: the port is ours, nothing answers on it.
    let (l, endpoint) = listener().await;
    let mut cfg = config(&endpoint);
    cfg.queue_capacity = NonZero::new(4).unwrap();
    cfg.max_batch = NonZero::new(2).unwrap();
    cfg.timeout_ms = NonZero::new(100).unwrap();
    cfg.max_retries = 1;
    cfg.metrics = false;
    let (handle, _join, _shutdown) = start(cfg);

    let started = Instant::now();
    for n in 0..100 {
        handle.offer(passing(n));
    }
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "offer never waits"
    );
    let s = handle.stats();
    assert_eq!(
        s.records_accepted.get() + s.records_dropped_queue_full.get(),
        100
    );
    assert!(s.records_dropped_queue_full.get() >= 100 - 4 - 2, "{s:?}");

    let stats = handle.stats().clone();
    eventually("a batch fails for good", || {
        stats.records_dropped_export_failed.get() > 0
    })
    .await;

    let mut rx = serve(l);
    eventually("the queue has room", || handle.queue_len() < 4).await;
    handle.offer(passing(200));
    // Stale records queued during the outage may arrive first.
    let wanted = trace_id(200).0.to_vec();
    loop {
        let req = next(&mut rx.traces).await;
        let mut got = req
            .resource_spans
            .iter()
            .flat_map(|rs| &rs.scope_spans)
            .flat_map(|ss| &ss.spans);
        if got.any(|s| s.trace_id == wanted) {
            break;
        }
    }
    assert!(handle.stats().spans_exported.get() >= 1);
}

#[tokio::test]
async fn shutdown_flushes_the_queue_and_the_last_metrics() {
    let (l, endpoint) = listener().await;
    let mut rx = serve(l);
    let mut cfg = config(&endpoint);
    cfg.batch_timeout_ms = NonZero::new(60_000).unwrap();
    cfg.metrics_interval_ms = NonZero::new(60_000).unwrap();
    let (handle, join, shutdown) = start(cfg);
    for n in 1..=3 {
        handle.offer(passing(n));
    }
    shutdown.cancel();
    tokio::time::timeout(WAIT, join).await.unwrap().unwrap();
    assert_eq!(spans(&mut rx.traces, 3).await.len(), 3);
    assert_eq!(logs(&mut rx.logs, 3).await.len(), 3);
    next(&mut rx.metrics).await;
    handle.offer(passing(4));
    let s = handle.stats();
    assert_eq!(
        (s.records_dropped_shutdown.get(), s.spans_exported.get()),
        (1, 3)
    );
}

#[tokio::test]
async fn shutdown_with_the_endpoint_down_stops_at_the_flush_deadline() {
    let (_l, endpoint) = listener().await;
    let mut cfg = config(&endpoint);
    cfg.batch_timeout_ms = NonZero::new(60_000).unwrap();
    cfg.flush_timeout_ms = NonZero::new(300).unwrap();
    let (handle, join, shutdown) = start(cfg);
    for n in 1..=3 {
        handle.offer(passing(n));
    }
    let stats = handle.stats().clone();
    eventually("the records are taken", || handle.queue_len() == 0).await;
    let started = Instant::now();
    shutdown.cancel();
    tokio::time::timeout(WAIT, join).await.unwrap().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(stats.records_dropped_shutdown.get(), 3);
}

// ---- end to end through the service ----------------------------------------

mod common;

/// The live service exports one result span (child of the agent's root, with
/// a link to it), one `gen_ai.evaluation.result` log event parented to the
/// root, and the score metrics, to a downstream OTLP receiver.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_exports_results_next_to_the_agents_trace() {
    let (listener, endpoint) = listener().await;
    let mut downstream = serve(listener);
    let mut config = common::service::test_config();
    config
        .evaluators
        .inline
        .push(common::service::count_evaluator(
            serde_json::json!({"a": ["=", 1]}),
        ));
    config.exporter = ExporterConfig {
        enabled: true,
        endpoint,
        batch_timeout_ms: NonZero::new(20).unwrap(),
        metrics_interval_ms: NonZero::new(50).unwrap(),
        ..ExporterConfig::default()
    };
    let running = common::service::start(config).await;
    let t = common::service::now_ns();
    let root = common::service::SpanSpec {
        trace_id: [77; 16],
        span_id: [0, 0, 0, 0, 0, 0, 77, 1],
        parent: None,
        name: "invoke_agent".into(),
        start_ns: t,
        end_ns: t + 100,
        attributes: vec![],
    };
    let tool = common::service::SpanSpec {
        trace_id: [77; 16],
        span_id: [0, 0, 0, 0, 0, 0, 77, 2],
        parent: Some([0, 0, 0, 0, 0, 0, 77, 1]),
        name: "a".into(),
        start_ns: t + 1,
        end_ns: t + 2,
        attributes: vec![opentelemetry::KeyValue::new("tool.name", "a")],
    };
    common::service::export(&common::service::grpc_exporter(&running), &[root, tool]).await;

    let traces = next(&mut downstream.traces).await;
    let span: &Span = &traces.resource_spans[0].scope_spans[0].spans[0];
    assert_eq!(span.trace_id, vec![77; 16]);
    assert_eq!(span.parent_span_id, vec![0, 0, 0, 0, 0, 0, 77, 1]);
    assert_eq!(span.links[0].span_id, vec![0, 0, 0, 0, 0, 0, 77, 1]);
    assert_eq!(span.name, "evaluation count");
    let attr = |k: &str| {
        span.attributes
            .iter()
            .find(|kv| kv.key == k)
            .and_then(|kv| kv.value.as_ref())
            .and_then(|v| v.value.clone())
    };
    assert_eq!(
        attr("openinference.span.kind"),
        Some(any_value::Value::StringValue("EVALUATOR".into()))
    );
    assert_eq!(
        attr("gen_ai.evaluation.score.value"),
        Some(any_value::Value::DoubleValue(1.0))
    );
    assert_eq!(
        attr("gen_ai.evaluation.score.label"),
        Some(any_value::Value::StringValue("pass".into()))
    );

    let logs = next(&mut downstream.logs).await;
    let log: &LogRecord = &logs.resource_logs[0].scope_logs[0].log_records[0];
    assert_eq!(log.event_name, "gen_ai.evaluation.result");
    assert_eq!(log.trace_id, vec![77; 16]);
    assert_eq!(log.span_id, vec![0, 0, 0, 0, 0, 0, 77, 1]);

    let metrics = next(&mut downstream.metrics).await;
    let names: Vec<&str> = metrics.resource_metrics[0].scope_metrics[0]
        .metrics
        .iter()
        .map(|m| m.name.as_str())
        .collect();
    assert!(names.contains(&"toolscore.evaluation.score"), "{names:?}");
    assert!(names.contains(&"toolscore.evaluations"), "{names:?}");
    // The exporter's counters are part of /metrics.
    assert!(running.metrics.encode().contains("toolscore_exporter_"));
    running.stop().await.unwrap();
}

/// With the downstream receiver not answering, evaluation and the API go on
/// and the failed export is counted; once the receiver is back, export resumes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_keeps_working_while_downstream_is_down_and_then_resumes() {
    // The port is reserved but nothing answers on it until `serve` below.
    let (listener, endpoint) = listener().await;
    let mut config = common::service::test_config();
    config
        .evaluators
        .inline
        .push(common::service::count_evaluator(
            serde_json::json!({"a": ["=", 1]}),
        ));
    config.exporter = ExporterConfig {
        enabled: true,
        endpoint,
        batch_timeout_ms: NonZero::new(20).unwrap(),
        timeout_ms: NonZero::new(300).unwrap(),
        max_retries: 1,
        initial_backoff_ms: NonZero::new(10).unwrap(),
        max_backoff_ms: NonZero::new(20).unwrap(),
        logs: false,
        metrics: false,
        ..ExporterConfig::default()
    };
    let running = common::service::start(config).await;
    let sdk = common::service::grpc_exporter(&running);
    let trace = |n: u8| {
        let t = common::service::now_ns();
        [
            common::service::SpanSpec {
                trace_id: [n; 16],
                span_id: [0, 0, 0, 0, 0, 0, n, 1],
                parent: None,
                name: "invoke_agent".into(),
                start_ns: t,
                end_ns: t + 100,
                attributes: vec![],
            },
            common::service::SpanSpec {
                trace_id: [n; 16],
                span_id: [0, 0, 0, 0, 0, 0, n, 2],
                parent: Some([0, 0, 0, 0, 0, 0, n, 1]),
                name: "a".into(),
                start_ns: t + 1,
                end_ns: t + 2,
                attributes: vec![opentelemetry::KeyValue::new("tool.name", "a")],
            },
        ]
    };
    common::service::export(&sdk, &trace(81)).await;
    // Evaluation and the API are unaffected.
    let r = common::service::wait_for(
        &running,
        TraceId([81; 16]),
        WAIT,
        common::service::evaluated(1),
    )
    .await;
    assert_eq!(r.scores[0].outcome.score, Some(1.0));
    // The failed export is counted (polling with a deadline).
    let failed = "toolscore_exporter_records_dropped_total{reason=\"export_failed\"} 1";
    let deadline = Instant::now() + WAIT;
    while !running.metrics.encode().contains(failed) {
        assert!(
            Instant::now() < deadline,
            "the failed export was not counted:\n{}",
            running.metrics.encode()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The receiver comes back: the next result is exported.
    let mut downstream = serve(listener);
    common::service::export(&sdk, &trace(82)).await;
    loop {
        let req = next(&mut downstream.traces).await;
        let span = &req.resource_spans[0].scope_spans[0].spans[0];
        if span.trace_id == vec![82; 16] {
            assert_eq!(span.parent_span_id, vec![0, 0, 0, 0, 0, 0, 82, 1]);
            break;
        }
    }
    running.stop().await.unwrap();
}

//! The streaming pipeline end to end: the real service on ephemeral ports,
//! spans sent by the OpenTelemetry SDK's OTLP exporters (gRPC, HTTP/protobuf
//! and HTTP/JSON) and by raw tonic/HTTP clients, results read from the store.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::num::NonZero;
use std::time::Duration;

use common::conformance::{self, Case};
use common::live::{case_rule, case_spans, trace_of};
use common::service::{self, SpanSpec, evaluated, export, test_config, wait_for};
use opentelemetry::KeyValue;
use toolscore::config::Config;
use toolscore::criteria::Binder;
use toolscore::span::TraceId;
use toolscore::store::TraceStatus;

const WAIT: Duration = Duration::from_secs(10);

/// Every conformance case through the live service: exported over OTLP/gRPC
/// by the SDK exporter, assembled, bound by a rule, evaluated, stored.
/// Cases whose criteria the reference refuses must be refused at load time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_cases_through_the_live_pipeline() {
    conformance_through(test_config(), service::grpc_exporter).await;
}

/// The same exported over OTLP/HTTP, as protobuf and as JSON: each
/// receiver's decoder writes the records the evaluators read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_cases_through_the_live_pipeline_over_http() {
    conformance_through(test_config(), service::http_exporter).await;
    conformance_through(test_config(), service::http_json_exporter).await;
}

/// The same with results in SQLite: every case's result read back from the
/// database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_cases_through_the_live_pipeline_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config();
    config.store.backend = toolscore::config::StoreBackend::Sqlite;
    config.store.sqlite.path = dir.path().join("results.db");
    // The local part holds almost nothing: reads go to the database.
    config.store.max_bytes = NonZero::new(1).unwrap();
    conformance_through(config, service::grpc_exporter).await;
}

/// The same with results in PostgreSQL (a real server the test starts).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_cases_through_the_live_pipeline_on_postgres() {
    let Some(pg) = common::pg::Pg::start() else {
        return;
    };
    let mut config = test_config();
    config.store.backend = toolscore::config::StoreBackend::Postgres;
    config.store.postgres.url = pg.database("conformance");
    config.store.max_bytes = NonZero::new(1).unwrap();
    conformance_through(config, service::grpc_exporter).await;
}

async fn conformance_through(
    mut config: Config,
    exporter: fn(&toolscore::app::Running) -> opentelemetry_otlp::SpanExporter,
) {
    let cases = conformance::load_cases();
    let mut live = Vec::new();
    let (mut passed, mut failed) = (0, Vec::new());
    for case in &cases {
        let (ev, rule) = case_rule(case);
        let mut single = Config::default();
        single.evaluators.inline.push(ev.clone());
        single.rules.push(rule.clone());
        let loads = single.validate().is_ok() && Binder::load(single.binder(), None).is_ok();
        let expected_error = case.expected["score"].is_null();
        match (loads, expected_error) {
            (true, _) => {
                config.evaluators.inline.push(ev);
                config.rules.push(rule);
                live.push(case);
            }
            (false, true) => passed += 1,
            (false, false) => failed.push(format!("{}: refused at load time", case.id)),
        }
    }
    let running = service::start(config).await;
    let exporter = exporter(&running);
    for chunk in live.chunks(25) {
        let spans: Vec<SpanSpec> = chunk.iter().flat_map(|c| case_spans(c)).collect();
        export(&exporter, &spans).await;
    }
    for case in &live {
        let record = wait_for(&running, trace_of(case), WAIT, evaluated(1)).await;
        assert!(record.complete, "{}", case.id);
        assert_eq!(record.scores.len(), 1, "{}", case.id);
        match conformance::judge(case, &record.scores[0].outcome.to_outcome()) {
            Ok(()) => passed += 1,
            Err(why) => failed.push(format!("{}: {why}", case.id)),
        }
    }
    println!("{passed} passed, {} failed", failed.len());
    assert!(failed.is_empty(), "{failed:#?}");
    running.stop().await.unwrap();
}

fn case_by_id<'a>(cases: &'a [Case], id: &str) -> &'a Case {
    cases.iter().find(|c| c.id == id).unwrap()
}

fn config_for(cases: &[&Case]) -> Config {
    let mut config = test_config();
    for case in cases {
        let (ev, rule) = case_rule(case);
        config.evaluators.inline.push(ev);
        config.rules.push(rule);
    }
    config
}

/// Spans split over many requests, in reverse order, over OTLP/HTTP: the
/// trace is evaluated once its root arrives (not before), with the same
/// scores as in one request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn split_out_of_order_spans_over_http_give_the_reference_scores() {
    let cases = conformance::load_cases();
    let picked: Vec<&Case> = [
        "s1-00001-tool-call-order",
        "s1-00009-tool-correctness",
        "s1-00003-tool-call-output",
    ]
    .iter()
    .map(|id| case_by_id(&cases, id))
    .collect();
    let running = service::start(config_for(&picked)).await;
    let exporter = service::http_exporter(&running);
    for case in &picked {
        let mut spans = case_spans(case);
        spans.sort_by_key(|s| std::cmp::Reverse(s.start_ns));
        let root_at = spans.iter().position(|s| s.parent.is_none()).unwrap();
        let root = spans.remove(root_at);
        for s in spans {
            export(&exporter, &[s]).await;
        }
        // Everything but the root has arrived: the trace waits.
        let pending = running.store.get(&trace_of(case)).unwrap();
        assert_eq!(pending.status, TraceStatus::Pending, "{}", case.id);
        export(&exporter, &[root]).await;
        let record = wait_for(&running, trace_of(case), WAIT, evaluated(1)).await;
        assert_eq!(record.revision, 1);
        conformance::judge(case, &record.scores[0].outcome.to_outcome()).unwrap();
    }
    running.stop().await.unwrap();
}

fn tool_span(trace: u8, id: u8, name: &str, start: u64) -> SpanSpec {
    SpanSpec {
        trace_id: [trace; 16],
        span_id: [0, 0, 0, 0, 0, 0, trace, id],
        parent: Some([0, 0, 0, 0, 0, 0, trace, 1]),
        name: name.into(),
        start_ns: start,
        end_ns: start + 10,
        attributes: vec![
            KeyValue::new("tool.name", name.to_owned()),
            KeyValue::new("input.value", "{\"city\": \"Paris\"}"),
        ],
    }
}

fn root_span(trace: u8, start: u64) -> SpanSpec {
    SpanSpec {
        trace_id: [trace; 16],
        span_id: [0, 0, 0, 0, 0, 0, trace, 1],
        parent: None,
        name: "invoke_agent".into(),
        start_ns: start,
        end_ns: start + 1_000,
        attributes: vec![],
    }
}

/// A count evaluator on every trace: `a` called exactly twice.
fn counting_config() -> Config {
    let mut config = test_config();
    config
        .evaluators
        .inline
        .push(service::count_evaluator(serde_json::json!({"a": ["=", 2]})));
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicated_export_is_not_double_counted_and_a_late_span_revises() {
    let running = service::start(counting_config()).await;
    let exporter = service::grpc_exporter(&running);
    let t = service::now_ns();
    let batch = [
        root_span(7, t),
        tool_span(7, 2, "a", t + 10),
        tool_span(7, 3, "a", t + 20),
    ];
    export(&exporter, &batch).await;
    export(&exporter, &batch).await; // a client retry
    let r = wait_for(&running, TraceId([7; 16]), WAIT, evaluated(1)).await;
    assert_eq!(r.span_count, 3);
    assert_eq!(
        r.scores[0].outcome.score,
        Some(1.0),
        "two calls to a, not four"
    );
    assert_eq!(r.binding, Some(toolscore::criteria::Binding::Default));

    // A third call arrives late: the trace is re-evaluated as revision 2.
    export(&exporter, &[tool_span(7, 4, "a", t + 30)]).await;
    let r = wait_for(&running, TraceId([7; 16]), WAIT, evaluated(2)).await;
    assert_eq!(r.revision, 2);
    assert_eq!(r.calls().unwrap().len(), 3);
    assert_eq!(r.scores[0].outcome.score, Some(0.0));
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rootless_trace_times_out_as_incomplete() {
    let mut config = counting_config();
    config.assembler.idle_timeout_secs = NonZero::new(1).unwrap();
    let running = service::start(config).await;
    let exporter = service::http_exporter(&running);
    let t = service::now_ns();
    export(
        &exporter,
        &[tool_span(8, 2, "a", t), tool_span(8, 3, "a", t + 1)],
    )
    .await;
    let r = wait_for(&running, TraceId([8; 16]), WAIT, evaluated(1)).await;
    assert_eq!(r.status, TraceStatus::TimedOut);
    assert!(!r.complete);
    assert_eq!(r.scores[0].outcome.score, Some(1.0));
    running.stop().await.unwrap();
}

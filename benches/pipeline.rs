//! Micro benchmarks of the pipeline's stages (`cargo bench --bench pipeline`):
//! OTLP decode + conversion per span, extraction per span, each evaluator per
//! trace (6 and 200 tool calls), Python repr rendering, assembler push +
//! complete per span, and the evaluation stage's whole work per trace with
//! the benchmark's eval set (perf/config.yaml). The trace shape is the load
//! generator's.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, Span};
use prost::Message;
use toolscore::agent_trace::{self, AgentTrace, TOOLS};
use toolscore::assembler::{Limits, Push, Ready, Reason, Shard};
use toolscore::config::{Config, OnTimeout};
use toolscore::criteria::Binder;
use toolscore::evaluator::{Evaluator, EvaluatorType};
use toolscore::pyvalue::json_to_py;
use toolscore::record::{Records, Run, Spans};
use toolscore::scoring::evaluate_ready;

// The service's allocator (src/main.rs), so the figures are the service's.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// One agent trace: 3 LLM spans, `tools` tool spans, the root last.
fn trace_spans(n: u64, tools: usize) -> Vec<Span> {
    let mut trace_id = [7u8; 16];
    trace_id[..8].copy_from_slice(&n.to_be_bytes());
    AgentTrace {
        trace_id,
        llm_spans: 3,
        tools,
        city: "Paris",
        start_ns: 1_000,
        case: Some(("eval.case.id", "bench-weather-1")),
    }
    .spans()
}

fn resource_spans(spans: Vec<Span>) -> ResourceSpans {
    agent_trace::resource_spans("bench-weather-agent", spans)
}

/// A ~512-span request of 10-span traces (6 tools).
fn request(first: u64) -> ExportTraceServiceRequest {
    let spans = (0..51).flat_map(|n| trace_spans(first + n, 6)).collect();
    ExportTraceServiceRequest {
        resource_spans: vec![resource_spans(spans)],
    }
}

/// The attributes `serve` keeps with the embedded configuration.
fn keep() -> std::sync::Arc<toolscore::span::KeepAttributes> {
    std::sync::Arc::new(Config::embedded().unwrap().kept_attributes())
}

/// Spans as the receivers write them.
fn records(spans: Vec<Span>) -> Records {
    let body = ExportTraceServiceRequest {
        resource_spans: vec![resource_spans(spans)],
    }
    .encode_to_vec();
    let decoded = toolscore::receiver::wire::decode_request(&body, &keep()).unwrap();
    assert!(decoded.rejected.is_empty());
    decoded.spans
}

/// One trace's spans as a shard hands them to evaluation.
fn converted(spans: Vec<Span>) -> Spans {
    let mut traces = records(spans).traces(&keep()).unwrap();
    assert_eq!(traces.len(), 1);
    traces.pop().unwrap().1
}

fn bench_decode(c: &mut Criterion) {
    let req = request(1);
    let bytes = req.encode_to_vec();
    let n = req.resource_spans[0].scope_spans[0].spans.len() as u64;
    let keep = Config::embedded().unwrap().kept_attributes();
    let mut g = c.benchmark_group("otlp");
    g.throughput(Throughput::Elements(n));
    g.bench_function("decode_512_span_request", |b| {
        b.iter(|| ExportTraceServiceRequest::decode(black_box(&bytes[..])).unwrap())
    });
    g.bench_function("decode_and_convert_512_span_request", |b| {
        b.iter(|| {
            let r = ExportTraceServiceRequest::decode(black_box(&bytes[..])).unwrap();
            Records::from_otlp(&r.resource_spans, &keep)
        })
    });
    // What the service does: the wire decoder straight into kept spans.
    g.bench_function("wire_decode_512_span_request", |b| {
        b.iter(|| toolscore::receiver::wire::decode_request(black_box(&bytes[..]), &keep).unwrap())
    });
    g.finish();
}

fn bench_extract(c: &mut Criterion) {
    let spans = converted(trace_spans(1, 6));
    let cfg = Config::embedded().unwrap().extract;
    let mut g = c.benchmark_group("extract");
    g.throughput(Throughput::Elements(spans.len() as u64));
    g.bench_function("trace_10_spans", |b| {
        b.iter(|| toolscore::extract::extract(black_box(&spans), &cfg))
    });
    g.finish();
    // The parts of one tool span's extraction: its args and output rules.
    let tool_span = spans
        .iter()
        .find(|s| s.attr("tool.name").is_some())
        .unwrap();
    let (input, output) = (
        tool_span.attr("input.value"),
        tool_span.attr("output.value"),
    );
    let mut g = c.benchmark_group("extract_one_tool_span");
    g.bench_function("parse_args", |b| {
        b.iter(|| toolscore::extract::parse_args(black_box(input), Default::default()))
    });
    g.bench_function("output_text", |b| {
        b.iter(|| toolscore::extract::output_text(black_box(output)))
    });
    g.finish();
}

fn criteria(kind: EvaluatorType, calls: usize) -> serde_json::Value {
    let names: Vec<&str> = (0..calls).map(|i| TOOLS[i % TOOLS.len()]).collect();
    match kind {
        EvaluatorType::Count => {
            serde_json::json!({"toolCallsCount": TOOLS.iter().map(|t| (t.to_string(), serde_json::json!(["=", calls.div_ceil(TOOLS.len())]))).collect::<serde_json::Map<_, _>>()})
        }
        EvaluatorType::Order => serde_json::json!({"toolCallsOrder": names}),
        EvaluatorType::Args => {
            serde_json::json!({"toolCalls": names.iter().enumerate().map(|(i, n)| serde_json::json!({"name": n, "args": {"city": "Paris", "step": i}})).collect::<Vec<_>>()})
        }
        EvaluatorType::Output => {
            serde_json::json!({"toolOutputs": names.iter().map(|n| serde_json::json!({"name": n, "output": "{'tool': 'x'}"})).collect::<Vec<_>>()})
        }
        EvaluatorType::ToolCorrectness => {
            serde_json::json!({"expectedTools": names.iter().map(|n| serde_json::json!({"name": n})).collect::<Vec<_>>()})
        }
        // The LLM judges call a model: not measured here.
        _ => serde_json::Value::Null,
    }
}

fn bench_evaluators(c: &mut Criterion) {
    let cfg = Config::embedded().unwrap().extract;
    for tools in [6usize, 200] {
        let spans = converted(trace_spans(1, tools));
        let calls = toolscore::extract::extract(&spans, &cfg);
        assert_eq!(calls.len(), tools);
        let mut g = c.benchmark_group(format!("evaluate_{tools}_calls"));
        g.throughput(Throughput::Elements(tools as u64));
        for kind in [
            EvaluatorType::Count,
            EvaluatorType::Order,
            EvaluatorType::Args,
            EvaluatorType::Output,
            EvaluatorType::ToolCorrectness,
        ] {
            let ev = Evaluator::with_defaults("bench", kind);
            let crit = ev
                .parse_criteria(&json_to_py(&criteria(kind, tools)))
                .unwrap();
            g.bench_function(kind.id(), |b| {
                b.iter(|| ev.evaluate(black_box(&calls), &crit))
            });
        }
        // The criteria above never match the outputs: the worst case, every
        // expected output tried against every call of its name, each attempt
        // explained in the details. An eval set written from a good run
        // expects the outputs the agent gives: one attempt per call.
        let ev = Evaluator::with_defaults("bench", EvaluatorType::Output);
        let matching = serde_json::json!({"toolOutputs": calls.iter().map(|c| serde_json::json!({"name": c.name, "output": c.output})).collect::<Vec<_>>()});
        let crit = ev.parse_criteria(&json_to_py(&matching)).unwrap();
        assert_eq!(
            ev.evaluate(&calls, &crit).score,
            Some(1.0),
            "every output matches"
        );
        g.bench_function("uipath-tool-call-output/matching", |b| {
            b.iter(|| ev.evaluate(black_box(&calls), &crit))
        });
        g.finish();
    }
}

fn bench_repr(c: &mut Criterion) {
    let v = json_to_py(&serde_json::json!({
        "content": {"tool": "get_temperature", "city": "São Paulo", "value": 21.5,
                    "unit": "metric", "steps": [1, 2, 3], "ok": true, "note": null,
                    "quote": "it's \"fine\"\n"}
    }));
    let mut g = c.benchmark_group("pyvalue");
    g.bench_function("repr_tool_output", |b| b.iter(|| black_box(&v).repr()));
    g.finish();
}

fn bench_assembler(c: &mut Criterion) {
    let traces = 200u64;
    let packed = records((0..traces).flat_map(|n| trace_spans(n + 1, 6)).collect());
    let limits = Limits {
        grace: Duration::from_millis(0),
        idle_timeout: Duration::from_secs(300),
        max_age: Duration::from_secs(3600),
        late_window: Duration::from_secs(0),
        on_timeout: OnTimeout::Evaluate,
        max_traces: usize::MAX / 2,
        max_spans_per_trace: 10_000,
        max_bytes: usize::MAX / 2,
        max_traces_per_service: 0,
        keys: keep(),
    };
    // Each span with the run of its trace's spans that follow (the driver's `runs`).
    let mut runs = vec![Run::default(); packed.len()];
    for i in (0..packed.len().saturating_sub(1)).rev() {
        if packed.spans()[i].trace_id == packed.spans()[i + 1].trace_id {
            runs[i] = Run {
                spans: runs[i + 1].spans + 1,
                bytes: runs[i + 1].bytes + packed.record_size(i + 1),
            };
        }
    }
    let mut g = c.benchmark_group("assembler");
    g.throughput(Throughput::Elements(packed.len() as u64));
    g.bench_function("push_and_complete_2000_spans", |b| {
        b.iter_batched(
            || (),
            |()| {
                let mut shard = Shard::new(limits.clone());
                let now = Instant::now();
                for (i, run) in runs.iter().enumerate() {
                    assert_eq!(shard.push_record(&packed, i, *run, now), Push::Accepted);
                }
                let ready = shard.expire(now + Duration::from_millis(1));
                assert_eq!(ready.len(), traces as usize);
                ready
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

/// Extraction, binding, the five evaluators of perf/config.yaml, the record,
/// and dropping it: what an evaluation thread does per trace.
/// The bench config's binder and the bench trace ready for evaluation
/// (six tool calls, bound to the bench eval set's five evaluators).
fn bench_ready() -> (Config, Binder, Ready) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("perf/config.yaml");
    let config = Config::load(&path).unwrap();
    let binder = Binder::load(config.binder(), Some(&path)).unwrap();
    let ready = Ready {
        trace_id: toolscore::span::TraceId([1; 16]),
        spans: std::sync::Arc::new(converted(trace_spans(1, 6))),
        complete: true,
        revision: 1,
        reason: Reason::Complete,
        root_arrived: None,
        due: Instant::now(),
        pin: Default::default(),
        ticket: Default::default(),
    };
    (config, binder, ready)
}

fn bench_evaluate_ready(c: &mut Criterion) {
    let (config, binder, ready) = bench_ready();
    let record = evaluate_ready(
        &binder,
        &config.extract,
        &ready,
        std::time::SystemTime::now(),
    )
    .record;
    assert_eq!(
        record.scores.len(),
        5,
        "the bench trace binds to the bench eval set"
    );
    // What the memory store counts for it against `store.max_bytes`.
    eprintln!(
        "the bench trace's result: {} B estimated (approx_bytes)",
        record.approx_bytes()
    );
    let mut g = c.benchmark_group("evaluation_stage");
    g.throughput(Throughput::Elements(ready.spans.len() as u64));
    g.bench_function("evaluate_ready_10_span_trace", |b| {
        b.iter(|| {
            evaluate_ready(
                &binder,
                &config.extract,
                black_box(&ready),
                std::time::SystemTime::now(),
            )
        })
    });
    g.finish();
}

/// The SQLite writer thread's cost a result: batches of 512 of the bench
/// trace's record (five evaluators), their rows' text made outside the timed
/// part as the evaluation worker makes it, committed into a database full
/// at the default `max_traces`, as the writer does at steady state; beside `evaluate_ready` above, it tells
/// how much of a trace's CPU the writer thread takes.
fn bench_store(c: &mut Criterion) {
    use toolscore::store::Database;
    let (config, binder, ready) = bench_ready();
    let record = evaluate_ready(
        &binder,
        &config.extract,
        &ready,
        std::time::SystemTime::now(),
    )
    .record;
    let dir = tempfile::tempdir().unwrap();
    let db = toolscore::store::sqlite::Sqlite::open(&toolscore::config::SqliteConfig {
        path: dir.path().join("results.db"),
        ..Default::default()
    })
    .unwrap();
    // Trace IDs as agents make them, random (splitmix64 of a counter): the
    // `trace_id` index takes them anywhere, as in the service.
    let mut next = 0u64;
    let mut batch_of = move || {
        (0..512)
            .map(|_| {
                next += 1;
                let mut r = record.clone();
                let mut z = next.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                r.trace_id.0[..8].copy_from_slice(&(z ^ (z >> 31)).to_be_bytes());
                r.trace_id.0[8..].copy_from_slice(&next.to_be_bytes());
                toolscore::store::Prepared::new(std::sync::Arc::new(r))
            })
            .collect::<Vec<_>>()
    };
    // At the service's default bound, full: each commit deletes as many
    // old results as it adds, as at steady state.
    let max_traces = toolscore::config::StoreConfig::default().max_traces.get();
    let retention = toolscore::store::Retention {
        older_than: std::time::SystemTime::UNIX_EPOCH,
        max_traces,
        chunk: 0,
    };
    for _ in 0..max_traces.div_ceil(512) {
        db.write(&batch_of(), std::time::SystemTime::now(), &retention)
            .unwrap();
    }
    let mut g = c.benchmark_group("store");
    g.throughput(Throughput::Elements(512));
    g.bench_function("sqlite_write_512_results", |b| {
        b.iter_batched(
            &mut batch_of,
            |batch| {
                db.write(&batch, std::time::SystemTime::now(), &retention)
                    .unwrap()
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_decode, bench_extract, bench_evaluators, bench_repr, bench_assembler, bench_evaluate_ready, bench_store
}
criterion_main!(benches);

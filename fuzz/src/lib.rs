//! What several fuzz targets share: reading the decoders' span records back
//! as a shard does, and an in-process HTTP API with some results in its
//! store.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Instant, SystemTime};

use toolscore::assembler::{Ready, Reason};
use toolscore::config::Config;
use toolscore::criteria::Binder;
use toolscore::scoring::evaluate_ready;
use toolscore::receiver::wire::Decoded;
use toolscore::record::{Held, Records, Run, Spans};
use toolscore::span::{KeepAttributes, Span};
use toolscore::store::{MemoryStore, ResultStore};

/// The decoder's spans (and events) as the assembler reads them: each
/// record copied into a trace buffer ([`Held::push`], what a shard does)
/// and read back from there, checked as a due trace is: one span, or one
/// event of a span.
pub fn wire_spans(decoded: &Decoded, keep: &Arc<KeepAttributes>) -> Vec<Span> {
    let records = &decoded.spans;
    let mut out = Vec::with_capacity(records.len());
    for (i, e) in records.spans().iter().enumerate() {
        let mut held = Held::default();
        let record = records.record(i).expect("a record for every entry");
        held.push(record, e.span_id, Run::default());
        let read = held
            .spans(e.trace_id, keep)
            .expect("a record the decoder wrote reads back");
        let (spans, events) = (read.iter().count(), read.events().count());
        let s = if e.event {
            assert_eq!((spans, events), (0, 1), "one event record, one event");
            let s = read.events().next().expect("the event").to_span(e.trace_id);
            assert!(s.parent_span_id.is_some() && !e.root, "an event has its span");
            s
        } else {
            assert_eq!((spans, events), (1, 0), "one record, one span");
            let s = read.to_spans().remove(0);
            assert_eq!(s.parent_span_id.is_none(), e.root, "record's root flag");
            s
        };
        assert_eq!(s.span_id, e.span_id, "record's span ID");
        assert_eq!(records.service_of(i), s.service_name.as_deref(), "record's service");
        out.push(s);
    }
    out
}

/// Whether two requests' records are the same, byte for byte and entry for
/// entry (sizes on the wire aside).
pub fn same_records(a: &Records, b: &Records) -> bool {
    a.len() == b.len()
        && (0..a.len()).all(|i| {
            let (x, y) = (a.spans()[i], b.spans()[i]);
            (x.trace_id, x.span_id, x.root) == (y.trace_id, y.span_id, y.root)
                && a.record(i) == b.record(i)
        })
}

/// Every attribute key a request's spans carry, kept.
pub fn every_key(resource_spans: &[opentelemetry_proto::tonic::trace::v1::ResourceSpans]) -> KeepAttributes {
    KeepAttributes::only(
        resource_spans
            .iter()
            .flat_map(|rs| &rs.scope_spans)
            .flat_map(|ss| &ss.spans)
            .flat_map(|s| &s.attributes)
            .map(|kv| kv.key.clone()),
    )
}

/// The repository root (the fuzz crate is `fuzz/` in it).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A runtime and the HTTP API's router over a store holding the results of
/// the example traces, evaluated with the example evaluators and eval set
/// (`examples/uipath-weather-tools`), as `toolscore serve` would hold them.
pub struct Api {
    pub rt: tokio::runtime::Runtime,
    pub router: axum::Router,
}

pub fn api() -> &'static Api {
    static API: OnceLock<Api> = OnceLock::new();
    API.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let mut config = Config::embedded().expect("the embedded config");
        let example = repo().join("examples/uipath-weather-tools");
        config.evaluators.files = vec![format!(
            "{}/evaluations/evaluators/*.json",
            example.display()
        )];
        config.eval_sets.files = vec![format!(
            "{}/evaluations/eval-sets/*.json",
            example.display()
        )];
        // Long-polls would only make the fuzzer wait.
        config.api.max_wait_ms = 0;
        let binder = Arc::new(Binder::load(config.binder(), None).expect("the example evaluators load"));
        let store = Arc::new(MemoryStore::new(
            1000,
            std::time::Duration::from_secs(86_400),
            16,
        ));
        for (i, spans) in example_traces().iter().enumerate() {
            let ready = Ready {
                trace_id: spans.trace_id(),
                complete: i % 3 != 2 && spans.iter().any(|s| s.is_root()),
                spans: spans.clone(),
                revision: 1,
                reason: Reason::Complete,
                root_arrived: None,
                due: Instant::now(),
                pin: Default::default(),
                ticket: Default::default(),
            };
            let record = evaluate_ready(&binder, &config.extract, &ready, SystemTime::now()).record;
            store.put(record, Instant::now());
        }
        // A pending trace too.
        store.mark_pending(
            toolscore::span::TraceId::parse_hex("0123456789abcdef0123456789abcdef")
                .expect("a trace ID"),
            Instant::now(),
        );
        let state = Arc::new(toolscore::api::http::ApiState {
            store,
            binder,
            extract: Arc::new(config.extract.clone()),
            metrics: Arc::new(toolscore::telemetry::Metrics::new()),
            ready: Arc::new(std::sync::atomic::AtomicBool::new(true)),
            failed: toolscore::supervise::Failed::default(),
            config: config.api.clone(),
            ui_auth: None,
            shutdown: tokio_util::sync::CancellationToken::new(),
            // No model providers: an LLM judge in a fuzzed body is an error score.
            judges: Arc::new(
                toolscore::llm::Judges::build(
                    &config.llm,
                    &toolscore::llm::metrics::LlmMetrics::default(),
                )
                .expect("no provider to build"),
            ),
            watchers: toolscore::api::watch::Watchers::new(
                16,
                16,
                tokio_util::sync::CancellationToken::new(),
            ),
            keep: Arc::new(config.kept_attributes()),
        });
        let router = toolscore::api::router(state);
        Api { rt, router }
    })
}

/// Sends one request to the API and returns its status and body.
pub fn request(req: http::Request<axum::body::Body>) -> (http::StatusCode, Vec<u8>) {
    use tower::ServiceExt;
    let api = api();
    api.rt.block_on(async {
        let resp = api
            .router
            .clone()
            .oneshot(req)
            .await
            .expect("the router is infallible");
        let status = resp.status();
        let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .expect("a response body");
        (status, body.to_vec())
    })
}

use toolscore::pyvalue::Value;

/// Whether no float in `v` (keys included) is a NaN or an infinity, whose
/// reprs (`nan`, `inf`) are not literals.
pub fn all_finite(v: &Value) -> bool {
    match v {
        Value::Float(f) => f.is_finite(),
        Value::Complex(re, im) => re.is_finite() && im.is_finite(),
        Value::List(items) | Value::Tuple(items) | Value::Set(items) => {
            items.iter().all(all_finite)
        }
        Value::Dict(d) => d.iter().all(|(k, v)| all_finite(k) && all_finite(v)),
        _ => true,
    }
}

/// Whether `v` holds a complex number anywhere: Python's own `repr` of a
/// complex does not always read back as the same value (`-0j` is
/// `(-0-0j)`, which evaluates to `0j`), so round trips skip them.
pub fn has_complex(v: &Value) -> bool {
    match v {
        Value::Complex(..) => true,
        Value::List(items) | Value::Tuple(items) | Value::Set(items) => {
            items.iter().any(has_complex)
        }
        Value::Dict(d) => d.iter().any(|(k, v)| has_complex(k) || has_complex(v)),
        _ => false,
    }
}

/// Whether `v` holds a set anywhere: CPython's set `repr` need not read back
/// in the same order (the order depends on the insertion history: `{25, .0,
/// 5, 5.5, 5.0, 0, 5, 4.0, 5, 5.80, 000, 0}` prints as `{0.0, 4.0, 5.5, 5,
/// 5.8, 25}`, which reads back as `{0.0, 4.0, 5.8, 5, 5.5, 25}` in CPython
/// too), so round trips compare sets by `==` only.
pub fn has_set(v: &Value) -> bool {
    match v {
        Value::Set(_) => true,
        Value::List(items) | Value::Tuple(items) => items.iter().any(has_set),
        Value::Dict(d) => d.iter().any(|(k, v)| has_set(k) || has_set(v)),
        _ => false,
    }
}

/// A value `json.loads` made and the one serde_json made of the same text
/// agree: same structure, strings and keys; integers equal (serde_json
/// reads one past 64 bits as a double: then Python's `float(int)`, which is
/// correctly rounded, must be that double); doubles equal bit for bit.
pub fn agrees_with_serde(py: &Value, j: &serde_json::Value) -> bool {
    use serde_json::Value as J;
    use toolscore::pyvalue::Int;
    match (py, j) {
        (Value::None, J::Null) => true,
        (Value::Bool(a), J::Bool(b)) => a == b,
        (Value::Int(i), J::Number(n)) => {
            if n.is_f64() && n.as_f64().is_some_and(|f| f == 0.0 && f.is_sign_negative()) {
                // serde_json reads the integer `-0` as the double -0.0.
                return i.is_zero();
            }
            if let Some(x) = n.as_i64() {
                matches!(i, Int::Small(y) if *y == x)
            } else if let Some(x) = n.as_u64() {
                i.to_bigint() == x.into()
            } else {
                // serde_json's double for a big integer.
                let f = n.as_f64().unwrap_or(f64::NAN);
                i.to_f64().map(f64::to_bits) == Some(f.to_bits())
            }
        }
        (Value::Float(a), J::Number(n)) => {
            n.is_f64() && n.as_f64().map(f64::to_bits) == Some(a.to_bits())
        }
        (Value::Str(a), J::String(b)) => a == b,
        (Value::List(items), J::Array(js)) => {
            items.len() == js.len() && items.iter().zip(js).all(|(a, b)| agrees_with_serde(a, b))
        }
        (Value::Dict(d), J::Object(m)) => {
            d.len() == m.len()
                && d.iter().zip(m).all(|((k, v), (jk, jv))| {
                    k.as_str() == Some(jk.as_str()) && agrees_with_serde(v, jv)
                })
        }
        _ => false,
    }
}

/// The example traces (`examples/uipath-weather-tools/traces.jsonl`), with
/// the attributes `serve` keeps under the embedded configuration.
pub fn example_traces() -> &'static [Arc<Spans>] {
    static TRACES: OnceLock<Vec<Arc<Spans>>> = OnceLock::new();
    TRACES.get_or_init(|| {
        let keep = Arc::new(Config::embedded().expect("the embedded config").kept_attributes());
        let path = repo().join("examples/uipath-weather-tools/traces.jsonl");
        let text = std::fs::read_to_string(path).expect("example traces");
        let parsed =
            toolscore::otlp_json::parse_file_text(&text, &keep).expect("example traces parse");
        let traces = parsed.spans.traces(&keep).expect("example traces read back");
        traces.into_values().map(Arc::new).collect()
    })
}

/// The example traces' tool calls, extracted with the default conventions.
pub fn example_calls() -> &'static [Vec<toolscore::extract::ToolCall>] {
    static CALLS: OnceLock<Vec<Vec<toolscore::extract::ToolCall>>> = OnceLock::new();
    CALLS.get_or_init(|| {
        let config = toolscore::extract::ExtractConfig::default();
        example_traces()
            .iter()
            .map(|spans| toolscore::extract::extract(spans, &config))
            .collect()
    })
}

/// Runs an evaluator on every example trace with `criteria`, and renders
/// each outcome as the store and the API would.
pub fn evaluate_examples(
    ev: &toolscore::evaluator::Evaluator,
    criteria: &toolscore::evaluator::Criteria,
) {
    for calls in example_calls() {
        let outcome = ev.evaluate(calls, criteria);
        let score = toolscore::store::Score {
            evaluator_id: ev.id.clone(),
            evaluator_type: ev.kind,
            outcome: outcome.into(),
        };
        let _ = toolscore::api::http::score_json(&score);
    }
}

/// Whether serde_json holds a double where `json.loads` made an int (the
/// integer `-0`, integers past 64 bits): what `pyvalue::json_to_py`
/// turns into a Python float (a reported finding, README.md).
pub fn serde_double_for_int(py: &Value, j: &serde_json::Value) -> bool {
    use serde_json::Value as J;
    match (py, j) {
        (Value::Int(_), J::Number(n)) => n.is_f64(),
        (Value::List(items), J::Array(js)) => items
            .iter()
            .zip(js)
            .any(|(a, b)| serde_double_for_int(a, b)),
        (Value::Dict(d), J::Object(m)) => d
            .iter()
            .zip(m)
            .any(|((_, v), (_, jv))| serde_double_for_int(v, jv)),
        _ => false,
    }
}

//! Shared helpers for the evaluators' unit tests, which live beside each
//! evaluator (`count/tests.rs`, …, `evaluator_tests.rs` for this module's
//! `Evaluator`): they check the reference behaviour (`reference/SEMANTICS.md`)
//! with one test per row of its §4 edge-case table (`row_NN_…`) and one per
//! worked example of the original documentation (`seed_…`, asserting the true
//! scores where the documentation is wrong).

use super::*;

use serde_json::json;

use crate::extract::{self, ExtractConfig, ToolCall};
use crate::pyvalue::{self, Dict, Value};
use crate::span::{AttrValue, Span, SpanId, TraceId};

// ---------------------------------------------------------------------------
// Building traces
// ---------------------------------------------------------------------------

const TRACE: TraceId = TraceId([7; 16]);

/// A span starting at `start` and ending 1 ns later. Its ID derives from its
/// start time, so the spans of one trace need distinct start times.
pub(crate) fn span(name: &str, start: u64, attrs: &[(&str, AttrValue)]) -> Span {
    Span {
        trace_id: TRACE,
        span_id: SpanId((start + 1).to_be_bytes()),
        parent_span_id: None,
        name: name.to_owned(),
        start_time_unix_nano: start,
        end_time_unix_nano: start + 1,
        attributes: attrs
            .iter()
            .map(|(k, v)| (std::sync::Arc::from(*k), v.clone()))
            .collect(),
        service_name: None,
        scope_name: None,
    }
}

pub(crate) fn text(s: &str) -> AttrValue {
    AttrValue::Str(s.to_owned())
}

/// A `tool.name` span with optional `input.value` / `output.value` strings.
pub(crate) fn tool(name: &str, start: u64, input: Option<&str>, output: Option<&str>) -> Span {
    let mut attrs = vec![("tool.name", text(name))];
    if let Some(i) = input {
        attrs.push(("input.value", text(i)));
    }
    if let Some(o) = output {
        attrs.push(("output.value", text(o)));
    }
    span(name, start, &attrs)
}

pub(crate) fn output_text(v: Option<&AttrValue>) -> String {
    crate::record::with_value(v, extract::output_text)
}

pub(crate) fn parse_args(v: Option<&AttrValue>, format: extract::ArgsFormat) -> extract::Args {
    crate::record::with_value(v, |v| extract::parse_args(v, format))
}

pub(crate) fn calls_of(spans: &[Span]) -> Vec<ToolCall> {
    extract::extract(
        &crate::record::Spans::from_spans(spans),
        &ExtractConfig::default(),
    )
}

/// Start time of the `i`-th call of a sequence.
pub(crate) fn at(i: usize) -> u64 {
    100 * (i as u64 + 1)
}

/// One call per name, in this order, with no arguments or output.
pub(crate) fn named(names: &[&str]) -> Vec<ToolCall> {
    let spans: Vec<Span> = names
        .iter()
        .enumerate()
        .map(|(i, n)| tool(n, at(i), None, None))
        .collect();
    calls_of(&spans)
}

/// One call per `(name, input.value)`, in this order.
pub(crate) fn with_args(calls: &[(&str, &str)]) -> Vec<ToolCall> {
    let spans: Vec<Span> = calls
        .iter()
        .enumerate()
        .map(|(i, (n, input))| tool(n, at(i), Some(input), None))
        .collect();
    calls_of(&spans)
}

/// One call per `(name, output.value)`, in this order.
pub(crate) fn with_outputs(calls: &[(&str, &str)]) -> Vec<ToolCall> {
    let spans: Vec<Span> = calls
        .iter()
        .enumerate()
        .map(|(i, (n, output))| tool(n, at(i), None, Some(output)))
        .collect();
    calls_of(&spans)
}

/// The tool spans the sample agent emits for a city and action: JSON
/// `input.value`, `{"content": …}` `output.value`, as observed in the real run.
pub(crate) fn weather_trace(city: &str, action: &str) -> Vec<ToolCall> {
    let mut tools = vec![
        (
            "get_temperature",
            json!({"temperature": 25.0, "unit": "fahrenheit"}),
        ),
        ("get_weather_condition", json!({"condition": "cloudy"})),
        ("get_humidity", json!({"humidity": 65})),
    ];
    match action {
        "get_forecast" if city == "Tokyo" => tools.push((
            "get_forecast",
            json!({"forecast": "Overcast with mild temperatures"}),
        )),
        "get_forecast" => tools.push((
            "get_forecast",
            json!({"forecast": "Cloudy with a chance of rain in the afternoon"}),
        )),
        "get_alerts" => tools.push((
            "get_weather_alerts",
            json!({"alerts": ["Heavy rain warning until 6 PM"]}),
        )),
        _ => {}
    }
    let spans: Vec<Span> = tools
        .iter()
        .enumerate()
        .map(|(i, (name, output))| {
            span(
                name,
                at(i),
                &[
                    ("tool.name", text(name)),
                    ("openinference.span.kind", text("TOOL")),
                    ("span_type", text("TOOL")),
                    ("input.value", text(&json!({ "city": city }).to_string())),
                    (
                        "output.value",
                        text(&json!({ "content": output }).to_string()),
                    ),
                ],
            )
        })
        .collect();
    calls_of(&spans)
}

/// A Python value from JSON text (criteria, configs).
pub(crate) fn py(json_text: &str) -> Value {
    pyvalue::json::loads(json_text).unwrap_or_else(|e| panic!("bad test JSON {json_text}: {e}"))
}

pub(crate) fn py_dict(json_text: &str) -> Dict {
    py(json_text)
        .as_dict()
        .cloned()
        .unwrap_or_else(|| panic!("not an object: {json_text}"))
}

// ---------------------------------------------------------------------------
// Writing criteria
// ---------------------------------------------------------------------------

/// `{"toolCallsOrder": names}`.
pub(crate) fn order_criteria(names: &[&str]) -> String {
    json!({ "toolCallsOrder": names }).to_string()
}

/// `{"toolCalls": [{"name", "args"}…]}`, each `args` given as JSON text.
pub(crate) fn args_criteria(items: &[(&str, &str)]) -> String {
    let items: Vec<String> = items
        .iter()
        .map(|(name, args)| format!(r#"{{"name": {}, "args": {args}}}"#, json!(name)))
        .collect();
    format!(r#"{{"toolCalls": [{}]}}"#, items.join(", "))
}

/// `{"toolOutputs": [{"name", "output"}…]}`.
pub(crate) fn outputs_criteria(items: &[(&str, &str)]) -> String {
    let items: Vec<Json> = items
        .iter()
        .map(|(name, output)| json!({"name": name, "output": output}))
        .collect();
    json!({ "toolOutputs": items }).to_string()
}

// ---------------------------------------------------------------------------
// Running evaluators
// ---------------------------------------------------------------------------

pub(crate) fn run(
    kind: EvaluatorType,
    config: Config,
    calls: &[ToolCall],
    criteria: &str,
) -> Outcome {
    let mut ev = Evaluator::with_defaults("test", kind);
    ev.config = config;
    ev.evaluate_value(calls, Some(&py(criteria)))
}

pub(crate) fn score_count(calls: &[ToolCall], criteria: &str) -> Outcome {
    run(
        EvaluatorType::Count,
        Config::Count(Strict { strict: false }),
        calls,
        criteria,
    )
}

pub(crate) fn score_count_strict(calls: &[ToolCall], criteria: &str) -> Outcome {
    run(
        EvaluatorType::Count,
        Config::Count(Strict { strict: true }),
        calls,
        criteria,
    )
}

pub(crate) fn score_order(calls: &[ToolCall], expected: &[&str]) -> Outcome {
    let criteria = order_criteria(expected);
    run(
        EvaluatorType::Order,
        Config::Order(Strict { strict: false }),
        calls,
        &criteria,
    )
}

pub(crate) fn score_order_strict(calls: &[ToolCall], expected: &[&str]) -> Outcome {
    let criteria = order_criteria(expected);
    run(
        EvaluatorType::Order,
        Config::Order(Strict { strict: true }),
        calls,
        &criteria,
    )
}

pub(crate) fn score_args_with(
    calls: &[ToolCall],
    strict: bool,
    subset: bool,
    criteria: &str,
) -> Outcome {
    run(
        EvaluatorType::Args,
        Config::Args(ArgsConfig { strict, subset }),
        calls,
        criteria,
    )
}

pub(crate) fn score_args(calls: &[ToolCall], criteria: &str) -> Outcome {
    score_args_with(calls, false, false, criteria)
}

pub(crate) fn score_outputs(calls: &[ToolCall], criteria: &str) -> Outcome {
    run(
        EvaluatorType::Output,
        Config::Output(Strict { strict: false }),
        calls,
        criteria,
    )
}

pub(crate) fn score_outputs_strict(calls: &[ToolCall], criteria: &str) -> Outcome {
    run(
        EvaluatorType::Output,
        Config::Output(Strict { strict: true }),
        calls,
        criteria,
    )
}

// ---------------------------------------------------------------------------
// Checking outcomes
// ---------------------------------------------------------------------------

/// An ok outcome with exactly this (float) score.
#[track_caller]
pub(crate) fn assert_score(o: &Outcome, want: f64) {
    assert_eq!(o.status, Status::Ok, "not an ok outcome: {o:?}");
    assert_eq!(o.score, Some(want), "score; details: {}", o.details);
    assert!(!o.score_is_int, "score should be a float: {o:?}");
    assert_eq!(o.error, None);
}

/// An ok outcome whose score is within 1e-12 of `want` (deepeval sums in
/// set order, so the last bits may differ).
#[track_caller]
pub(crate) fn assert_close(o: &Outcome, want: f64) {
    assert_eq!(o.status, Status::Ok, "not an ok outcome: {o:?}");
    let got = o.score.unwrap_or(f64::NAN);
    assert!(
        (got - want).abs() <= 1e-12,
        "score: expected {want}, got {got}; {o:?}"
    );
}

/// The whole details object, key order included.
#[track_caller]
pub(crate) fn assert_details(o: &Outcome, want: Json) {
    let got = serde_json::to_string_pretty(&*o.details.to_json()).unwrap_or_default();
    let want = serde_json::to_string_pretty(&want).unwrap_or_default();
    assert_eq!(got, want);
}

/// One key of the details object, key order included.
#[track_caller]
pub(crate) fn assert_detail(o: &Outcome, key: &str, want: Json) {
    let got = serde_json::to_string_pretty(&o.details.to_json()[key]).unwrap_or_default();
    let want = serde_json::to_string_pretty(&want).unwrap_or_default();
    assert_eq!(got, want, "details[{key:?}] of {}", o.details);
}

/// uipath's `ErrorEvaluationResult` for an exception raised while scoring.
#[track_caller]
pub(crate) fn assert_thrown(o: &Outcome, exception: &str) {
    let message = format!("Exception thrown by evaluator: {exception}");
    assert_eq!(o.status, Status::Error, "{o:?}");
    assert_eq!(o.score, None);
    assert_eq!(*o.details.to_json(), Json::String(message.clone()));
    assert_eq!(o.error.as_deref(), Some(message.as_str()));
}

/// An error outcome whose message starts with `prefix` (an error code).
#[track_caller]
pub(crate) fn assert_refused(o: &Outcome, prefix: &str) {
    assert_eq!(o.status, Status::Error, "{o:?}");
    assert_eq!(o.score, None);
    let error = o.error.as_deref().unwrap_or_default();
    assert!(
        error.starts_with(prefix),
        "expected an error starting {prefix:?}, got {error:?}"
    );
}

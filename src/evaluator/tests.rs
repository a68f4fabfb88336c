//! The evaluators against the reference behaviour (`reference/SEMANTICS.md`):
//! one test per row of its §4 edge-case table (`row_NN_…`), one per worked
//! example of the original documentation (`seed_…`, asserting the true
//! scores where the documentation is wrong), and the §1.2 argument and output
//! rules through `extract::parse_args` / `extract::output_text` directly.

use super::*;

use serde_json::json;

use crate::extract::{self, Args, ArgsFormat, ExtractConfig, ToolCall};
use crate::pyvalue::{self, Dict, Value};
use crate::span::{AttrValue, Span, SpanId, TraceId};
use tool_correctness::DeepevalConfig;

// ---------------------------------------------------------------------------
// Building traces
// ---------------------------------------------------------------------------

const TRACE: TraceId = TraceId([7; 16]);

/// A span starting at `start` and ending 1 ns later. Its ID derives from its
/// start time, so the spans of one trace need distinct start times.
fn span(name: &str, start: u64, attrs: &[(&str, AttrValue)]) -> Span {
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

fn text(s: &str) -> AttrValue {
    AttrValue::Str(s.to_owned())
}

/// A `tool.name` span with optional `input.value` / `output.value` strings.
fn tool(name: &str, start: u64, input: Option<&str>, output: Option<&str>) -> Span {
    let mut attrs = vec![("tool.name", text(name))];
    if let Some(i) = input {
        attrs.push(("input.value", text(i)));
    }
    if let Some(o) = output {
        attrs.push(("output.value", text(o)));
    }
    span(name, start, &attrs)
}

fn output_text(v: Option<&AttrValue>) -> String {
    crate::record::with_value(v, extract::output_text)
}

fn parse_args(v: Option<&AttrValue>, format: extract::ArgsFormat) -> extract::Args {
    crate::record::with_value(v, |v| extract::parse_args(v, format))
}

fn calls_of(spans: &[Span]) -> Vec<ToolCall> {
    extract::extract(
        &crate::record::Spans::from_spans(spans),
        &ExtractConfig::default(),
    )
}

/// Start time of the `i`-th call of a sequence.
fn at(i: usize) -> u64 {
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
fn with_args(calls: &[(&str, &str)]) -> Vec<ToolCall> {
    let spans: Vec<Span> = calls
        .iter()
        .enumerate()
        .map(|(i, (n, input))| tool(n, at(i), Some(input), None))
        .collect();
    calls_of(&spans)
}

/// One call per `(name, output.value)`, in this order.
fn with_outputs(calls: &[(&str, &str)]) -> Vec<ToolCall> {
    let spans: Vec<Span> = calls
        .iter()
        .enumerate()
        .map(|(i, (n, output))| tool(n, at(i), None, Some(output)))
        .collect();
    calls_of(&spans)
}

/// A Python value from JSON text (criteria, configs).
pub(crate) fn py(json_text: &str) -> Value {
    pyvalue::json::loads(json_text).unwrap_or_else(|e| panic!("bad test JSON {json_text}: {e}"))
}

fn py_dict(json_text: &str) -> Dict {
    py(json_text)
        .as_dict()
        .cloned()
        .unwrap_or_else(|| panic!("not an object: {json_text}"))
}

// ---------------------------------------------------------------------------
// Writing criteria
// ---------------------------------------------------------------------------

/// `{"toolCallsOrder": names}`.
fn order_criteria(names: &[&str]) -> String {
    json!({ "toolCallsOrder": names }).to_string()
}

/// `{"toolCalls": [{"name", "args"}…]}`, each `args` given as JSON text.
fn args_criteria(items: &[(&str, &str)]) -> String {
    let items: Vec<String> = items
        .iter()
        .map(|(name, args)| format!(r#"{{"name": {}, "args": {args}}}"#, json!(name)))
        .collect();
    format!(r#"{{"toolCalls": [{}]}}"#, items.join(", "))
}

/// `{"toolOutputs": [{"name", "output"}…]}`.
fn outputs_criteria(items: &[(&str, &str)]) -> String {
    let items: Vec<Json> = items
        .iter()
        .map(|(name, output)| json!({"name": name, "output": output}))
        .collect();
    json!({ "toolOutputs": items }).to_string()
}

/// `{"expectedTools": [{"name"}…]}`.
fn expected_tools(names: &[&str]) -> String {
    let items: Vec<Json> = names.iter().map(|n| json!({ "name": n })).collect();
    json!({ "expectedTools": items }).to_string()
}

// ---------------------------------------------------------------------------
// Running evaluators
// ---------------------------------------------------------------------------

fn run(kind: EvaluatorType, config: Config, calls: &[ToolCall], criteria: &str) -> Outcome {
    let mut ev = Evaluator::with_defaults("test", kind);
    ev.config = config;
    ev.evaluate_value(calls, Some(&py(criteria)))
}

fn score_count(calls: &[ToolCall], criteria: &str) -> Outcome {
    run(
        EvaluatorType::Count,
        Config::Count { strict: false },
        calls,
        criteria,
    )
}

fn score_count_strict(calls: &[ToolCall], criteria: &str) -> Outcome {
    run(
        EvaluatorType::Count,
        Config::Count { strict: true },
        calls,
        criteria,
    )
}

fn score_order(calls: &[ToolCall], expected: &[&str]) -> Outcome {
    let criteria = order_criteria(expected);
    run(
        EvaluatorType::Order,
        Config::Order { strict: false },
        calls,
        &criteria,
    )
}

fn score_order_strict(calls: &[ToolCall], expected: &[&str]) -> Outcome {
    let criteria = order_criteria(expected);
    run(
        EvaluatorType::Order,
        Config::Order { strict: true },
        calls,
        &criteria,
    )
}

fn score_args_with(calls: &[ToolCall], strict: bool, subset: bool, criteria: &str) -> Outcome {
    run(
        EvaluatorType::Args,
        Config::Args { strict, subset },
        calls,
        criteria,
    )
}

fn score_args(calls: &[ToolCall], criteria: &str) -> Outcome {
    score_args_with(calls, false, false, criteria)
}

fn score_outputs(calls: &[ToolCall], criteria: &str) -> Outcome {
    run(
        EvaluatorType::Output,
        Config::Output { strict: false },
        calls,
        criteria,
    )
}

fn score_outputs_strict(calls: &[ToolCall], criteria: &str) -> Outcome {
    run(
        EvaluatorType::Output,
        Config::Output { strict: true },
        calls,
        criteria,
    )
}

fn score_deepeval(cfg: DeepevalConfig, calls: &[ToolCall], criteria: &str) -> Outcome {
    run(
        EvaluatorType::ToolCorrectness,
        Config::ToolCorrectness(cfg),
        calls,
        criteria,
    )
}

fn deepeval_default() -> DeepevalConfig {
    DeepevalConfig::default()
}

fn deepeval_params() -> DeepevalConfig {
    DeepevalConfig {
        input_parameters: true,
        ..DeepevalConfig::default()
    }
}

fn deepeval_ordering() -> DeepevalConfig {
    DeepevalConfig {
        should_consider_ordering: true,
        ..DeepevalConfig::default()
    }
}

fn deepeval_exact() -> DeepevalConfig {
    DeepevalConfig {
        should_exact_match: true,
        ..DeepevalConfig::default()
    }
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
fn assert_close(o: &Outcome, want: f64) {
    assert_eq!(o.status, Status::Ok, "not an ok outcome: {o:?}");
    let got = o.score.unwrap_or(f64::NAN);
    assert!(
        (got - want).abs() <= 1e-12,
        "score: expected {want}, got {got}; {o:?}"
    );
}

/// The whole details object, key order included.
#[track_caller]
fn assert_details(o: &Outcome, want: Json) {
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
fn assert_thrown(o: &Outcome, exception: &str) {
    let message = format!("Exception thrown by evaluator: {exception}");
    assert_eq!(o.status, Status::Error, "{o:?}");
    assert_eq!(o.score, None);
    assert_eq!(*o.details.to_json(), Json::String(message.clone()));
    assert_eq!(o.error.as_deref(), Some(message.as_str()));
}

/// An error outcome whose message starts with `prefix` (an error code).
#[track_caller]
fn assert_refused(o: &Outcome, prefix: &str) {
    assert_eq!(o.status, Status::Error, "{o:?}");
    assert_eq!(o.score, None);
    let error = o.error.as_deref().unwrap_or_default();
    assert!(
        error.starts_with(prefix),
        "expected an error starting {prefix:?}, got {error:?}"
    );
}

fn reason(o: &Outcome) -> String {
    o.details.to_json()["reason"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// deepeval's two-part reason, with no `available_tools`.
fn full_reason(tool_calling: &str) -> String {
    format!(
        "[\n\t Tool Calling Reason: {tool_calling}\n\t Tool Selection Reason: No available tools \
         were provided to assess tool selection criteria\n]\n"
    )
}

// ---------------------------------------------------------------------------
// SEMANTICS §4, rows 1–12: ToolCallCountEvaluator
// ---------------------------------------------------------------------------

#[test]
fn row_01_count_all_counts_match() {
    let o = score_count(
        &named(&["a", "b", "a"]),
        r#"{"toolCallsCount": {"a": ["=", 2], "b": ["==", 1]}}"#,
    );
    assert_score(&o, 1.0);
    assert_details(
        &o,
        json!({
            "expected": "{'a': ('=', 2), 'b': ('==', 1)}",
            "actual": "{'a': 2, 'b': 1}",
            "explained_tool_calls_count": {
                "a": "Actual: 2, Expected: 2, Score: 1.0",
                "b": "Actual: 1, Expected: 1, Score: 1.0",
            },
        }),
    );
}

#[test]
fn row_02_count_missing_tool_counts_as_int_zero() {
    let o = score_count(
        &named(&["a"]),
        r#"{"toolCallsCount": {"a": ["=", 1], "c": ["=", 1]}}"#,
    );
    assert_score(&o, 0.5);
    assert_details(
        &o,
        json!({
            "expected": "{'a': ('=', 1), 'c': ('=', 1)}",
            "actual": "{'a': 1}",
            "explained_tool_calls_count": {
                "a": "Actual: 1, Expected: 1, Score: 1.0",
                "c": "Actual: 0, Expected: 1, Score: 0.0",
            },
        }),
    );
}

#[test]
fn row_03_count_missing_tool_satisfies_less_than() {
    let o = score_count(&named(&["a"]), r#"{"toolCallsCount": {"c": ["<", 1]}}"#);
    assert_score(&o, 1.0);
    assert_detail(
        &o,
        "explained_tool_calls_count",
        json!({"c": "Actual: 0, Expected: 1, Score: 1.0"}),
    );
}

#[test]
fn row_04_count_empty_trace_with_expected_zero_scores_zero() {
    let o = score_count(&[], r#"{"toolCallsCount": {"a": ["=", 0]}}"#);
    assert_score(&o, 0.0);
    assert_details(
        &o,
        json!({
            "expected": "{'a': ('=', 0)}",
            "actual": "{}",
            "explained_tool_calls_count": {"_result": "Either expected or actual tool calls are empty"},
        }),
    );
}

#[test]
fn row_05_count_empty_trace_and_empty_expectation_scores_one() {
    let o = score_count(&[], r#"{"toolCallsCount": {}}"#);
    assert_score(&o, 1.0);
    assert_details(
        &o,
        json!({
            "expected": "{}",
            "actual": "{}",
            "explained_tool_calls_count": {"_result": "Both expected and actual tool calls are empty"},
        }),
    );
}

#[test]
fn row_06_count_empty_expectation_with_calls_scores_zero() {
    let o = score_count(&named(&["a"]), r#"{"toolCallsCount": {}}"#);
    assert_score(&o, 0.0);
    assert_details(
        &o,
        json!({
            "expected": "{}",
            "actual": "{'a': 1}",
            "explained_tool_calls_count": {"_result": "Either expected or actual tool calls are empty"},
        }),
    );
}

#[test]
fn row_07_count_strict_stops_at_first_failing_entry() {
    let o = score_count_strict(
        &named(&["a", "b"]),
        r#"{"toolCallsCount": {"a": ["=", 1], "b": ["=", 2], "c": ["=", 0]}}"#,
    );
    assert_score(&o, 0.0);
    assert_details(
        &o,
        json!({
            "expected": "{'a': ('=', 1), 'b': ('=', 2), 'c': ('=', 0)}",
            "actual": "{'a': 1, 'b': 1}",
            "explained_tool_calls_count": {"b": "Actual: 1, Expected: 2, Score: 0.0"},
        }),
    );
}

#[test]
fn row_08_count_unknown_operator_is_an_evaluator_exception() {
    let a = named(&["a"]);
    assert_thrown(
        &score_count(&a, r#"{"toolCallsCount": {"a": ["~", 1]}}"#),
        "'~'",
    );
    assert_thrown(
        &score_count(&a, r#"{"toolCallsCount": {"a": ["=>", 1]}}"#),
        "'=>'",
    );
    assert_thrown(
        &score_count(&a, r#"{"toolCallsCount": {"a": [" =", 1]}}"#),
        "' ='",
    );
}

#[test]
fn row_08_count_unknown_operator_not_reached_is_no_error() {
    // One side empty: the entries are never scored.
    assert_score(
        &score_count(&[], r#"{"toolCallsCount": {"a": ["~", 1]}}"#),
        0.0,
    );
    // Strict mode stopped at an earlier failing entry.
    let o = score_count_strict(
        &named(&["a"]),
        r#"{"toolCallsCount": {"a": ["=", 2], "b": ["~", 1]}}"#,
    );
    assert_score(&o, 0.0);
    assert_detail(
        &o,
        "explained_tool_calls_count",
        json!({"a": "Actual: 1, Expected: 2, Score: 0.0"}),
    );
    // Non-strict mode reaches it after a passing entry.
    let o = score_count(
        &named(&["a"]),
        r#"{"toolCallsCount": {"a": ["=", 1], "b": ["~", 1]}}"#,
    );
    assert_thrown(&o, "'~'");
}

#[test]
fn row_09_count_negative_expected_count_is_accepted() {
    let o = score_count(&named(&["a"]), r#"{"toolCallsCount": {"a": [">", -1]}}"#);
    assert_score(&o, 1.0);
    assert_details(
        &o,
        json!({
            "expected": "{'a': ('>', -1)}",
            "actual": "{'a': 1}",
            "explained_tool_calls_count": {"a": "Actual: 1, Expected: -1, Score: 1.0"},
        }),
    );
}

#[test]
fn row_10_count_expected_count_is_coerced_to_int() {
    let a = named(&["a"]);
    for count in [r#""1""#, "1.0", "true"] {
        let o = score_count(
            &a,
            &format!(r#"{{"toolCallsCount": {{"a": ["=", {count}]}}}}"#),
        );
        assert_score(&o, 1.0);
        assert_detail(&o, "expected", json!("{'a': ('=', 1)}"));
        assert_detail(
            &o,
            "explained_tool_calls_count",
            json!({"a": "Actual: 1, Expected: 1, Score: 1.0"}),
        );
    }
}

#[test]
fn row_10_count_invalid_criteria_are_refused() {
    let a = named(&["a"]);
    for criteria in [
        r#"{"toolCallsCount": {"a": ["=", 1.5]}}"#,
        r#"{"toolCallsCount": {"a": ["=", 1, 2]}}"#,
        r#"{"toolCallsCount": {"a": [1, 1]}}"#,
    ] {
        assert_refused(
            &score_count(&a, criteria),
            "Python.CANNOT_VALIDATE_EVALUATION_CRITERIA",
        );
    }
}

#[test]
fn row_11_count_sanitises_the_expected_key_only() {
    let o = score_count(
        &named(&["get_weather"]),
        r#"{"toolCallsCount": {"get weather": ["=", 1]}}"#,
    );
    assert_score(&o, 1.0);
    assert_detail(
        &o,
        "explained_tool_calls_count",
        json!({"get weather": "Actual: 1, Expected: 1, Score: 1.0"}),
    );

    let o = score_count(
        &named(&["get weather"]),
        r#"{"toolCallsCount": {"get_weather": ["=", 1]}}"#,
    );
    assert_score(&o, 0.0);
    assert_detail(&o, "actual", json!("{'get weather': 1}"));
    assert_detail(
        &o,
        "explained_tool_calls_count",
        json!({"get_weather": "Actual: 0, Expected: 1, Score: 0.0"}),
    );
}

#[test]
fn row_12_count_calls_with_an_id_are_counted_under_the_id() {
    let id = [("tool.name", text("a")), ("tool.id", text("ID"))];
    let calls = calls_of(&[span("a", 100, &id), span("a", 200, &id)]);
    let o = score_count(
        &calls,
        r#"{"toolCallsCount": {"ID": ["=", 2], "a": ["=", 0]}}"#,
    );
    assert_score(&o, 1.0);
    assert_details(
        &o,
        json!({
            "expected": "{'ID': ('=', 2), 'a': ('=', 0)}",
            "actual": "{'ID': 2}",
            "explained_tool_calls_count": {
                "ID": "Actual: 2, Expected: 2, Score: 1.0",
                "a": "Actual: 0, Expected: 0, Score: 1.0",
            },
        }),
    );
}

#[test]
fn count_every_operator_compares_actual_to_expected() {
    let two = named(&["a", "a"]);
    for (op, n, want) in [
        ("=", 2, 1.0),
        ("==", 2, 1.0),
        ("=", 1, 0.0),
        ("!=", 3, 1.0),
        ("!=", 2, 0.0),
        (">", 1, 1.0),
        (">", 2, 0.0),
        ("<", 3, 1.0),
        ("<", 2, 0.0),
        (">=", 2, 1.0),
        (">=", 3, 0.0),
        ("<=", 2, 1.0),
        ("<=", 1, 0.0),
    ] {
        let criteria = json!({"toolCallsCount": {"a": [op, n]}}).to_string();
        assert_score(&score_count(&two, &criteria), want);
    }
}

#[test]
fn count_accepts_snake_case_criteria() {
    let o = score_count(&named(&["a"]), r#"{"tool_calls_count": {"a": ["=", 1]}}"#);
    assert_score(&o, 1.0);
}

#[test]
fn count_and_order_do_not_parse_arguments() {
    // An unhashable literal key only breaks evaluators that read arguments.
    let calls = calls_of(&[tool("a", 100, Some("{[1]: 2}"), None)]);
    assert_score(
        &score_count(&calls, r#"{"toolCallsCount": {"a": ["=", 1]}}"#),
        1.0,
    );
    assert_score(&score_order(&calls, &["a"]), 1.0);
    assert_score(&score_outputs(&calls, &outputs_criteria(&[("a", "")])), 1.0);
}

// ---------------------------------------------------------------------------
// Rows 13–22: ToolCallOrderEvaluator
// ---------------------------------------------------------------------------

#[test]
fn row_13_order_lcs_gives_partial_credit() {
    let o = score_order(&named(&["a", "c", "b"]), &["a", "b", "c"]);
    assert_score(&o, 0.6666666666666666);
    assert_details(
        &o,
        json!({
            "expected": "['a', 'b', 'c']",
            "actual": "['a', 'c', 'b']",
            "lcs": ["a", "b"],
        }),
    );
}

#[test]
fn row_14_order_tie_drops_the_expected_key() {
    let o = score_order(&named(&["a", "b"]), &["b", "a"]);
    assert_score(&o, 0.5);
    assert_detail(&o, "lcs", json!(["b"]));

    let o = score_order(&named(&["b", "a"]), &["a", "b"]);
    assert_score(&o, 0.5);
    assert_detail(&o, "lcs", json!(["a"]));
}

#[test]
fn row_15_order_repeated_names() {
    let o = score_order(&named(&["A", "B", "A", "B"]), &["B", "A", "B", "A"]);
    assert_score(&o, 0.75);
    assert_detail(&o, "lcs", json!(["B", "A", "B"]));
}

#[test]
fn row_16_order_extra_calls_are_ignored() {
    let o = score_order(&named(&["x", "a", "y", "b"]), &["a", "b"]);
    assert_score(&o, 1.0);
    assert_detail(&o, "lcs", json!(["a", "b"]));
}

#[test]
fn row_17_order_strict_needs_the_exact_sequence() {
    let o = score_order_strict(&named(&["a", "b", "c"]), &["a", "b"]);
    assert_score(&o, 0.0);
    assert_details(
        &o,
        json!({"expected": "['a', 'b']", "actual": "['a', 'b', 'c']", "lcs": []}),
    );

    let o = score_order_strict(&named(&["a", "b"]), &["a", "b"]);
    assert_score(&o, 1.0);
    assert_detail(&o, "lcs", json!(["a", "b"]));
}

#[test]
fn row_18_order_empty_expected_list_is_accepted() {
    let o = score_order(&named(&["a"]), &[]);
    assert_score(&o, 0.0);
    assert_details(&o, json!({"expected": "[]", "actual": "['a']", "lcs": []}));

    let o = score_order(&[], &[]);
    assert_score(&o, 1.0);
    assert_details(&o, json!({"expected": "[]", "actual": "[]", "lcs": []}));
}

#[test]
fn row_19_order_a_call_with_an_id_matches_by_id_only() {
    let calls = calls_of(&[
        span(
            "a",
            100,
            &[("tool.name", text("a")), ("tool.id", text("id-1"))],
        ),
        tool("b", 200, None, None),
    ]);
    let o = score_order(&calls, &["a", "b"]);
    assert_score(&o, 0.5);
    assert_details(
        &o,
        json!({"expected": "['a', 'b']", "actual": "['id-1', 'b']", "lcs": ["b"]}),
    );

    let o = score_order(&calls, &["id-1", "b"]);
    assert_score(&o, 1.0);
    assert_detail(&o, "lcs", json!(["id-1", "b"]));
}

#[test]
fn row_20_order_synthesized_spans_are_skipped() {
    for synthesized in [AttrValue::Bool(true), text("false")] {
        let calls = calls_of(&[
            span(
                "a",
                100,
                &[("tool.name", text("a")), ("tool.synthesized", synthesized)],
            ),
            tool("b", 200, None, None),
        ]);
        let o = score_order(&calls, &["a", "b"]);
        assert_score(&o, 0.5);
        assert_detail(&o, "actual", json!("['b']"));
        assert_detail(&o, "lcs", json!(["b"]));
    }
}

#[test]
fn row_21_order_names_match_after_sanitising() {
    let o = score_order(&named(&["!!!"]), &["???"]);
    assert_score(&o, 1.0);
    assert_detail(&o, "lcs", json!(["???"]));

    assert_score(&score_order(&named(&["a.b"]), &["ab"]), 1.0);
    assert_score(
        &score_order(&named(&["get-weather"]), &["get_weather"]),
        0.0,
    );
}

#[test]
fn row_22_order_follows_start_time_not_list_order() {
    // The reference keeps the span list's order (row 22 gives 0.5); toolscore
    // deliberately orders tool calls by start time (DESIGN §2), since spans
    // reach a service in no guaranteed order.
    let calls = calls_of(&[tool("b", 200, None, None), tool("a", 100, None, None)]);
    let o = score_order(&calls, &["a", "b"]);
    assert_score(&o, 1.0);
    assert_details(
        &o,
        json!({"expected": "['a', 'b']", "actual": "['a', 'b']", "lcs": ["a", "b"]}),
    );
}

#[test]
fn order_lcs_tie_breaks_match_the_reference() {
    // SEMANTICS §1.4 item 4: actual → expected: score, lcs.
    let cases: [(&[&str], &[&str], f64, Json); 3] = [
        (&["a", "b", "c"], &["c", "b", "a"], 1.0 / 3.0, json!(["c"])),
        (
            &["a", "a", "b"],
            &["a", "b", "a"],
            2.0 / 3.0,
            json!(["a", "b"]),
        ),
        (
            &["a", "b", "c", "a", "b", "c"],
            &["c", "b", "a"],
            2.0 / 3.0,
            json!(["c", "b"]),
        ),
    ];
    for (actual, expected, score, lcs) in cases {
        let o = score_order(&named(actual), expected);
        assert_score(&o, score);
        assert_detail(&o, "lcs", lcs);
    }
}

// ---------------------------------------------------------------------------
// Rows 23–34: ToolCallArgsEvaluator
// ---------------------------------------------------------------------------

#[test]
fn row_23_args_subset_false_still_ignores_extra_keys() {
    let calls = with_args(&[("a", r#"{"x":1,"y":2}"#)]);
    let criteria = args_criteria(&[("a", r#"{"x": 1}"#)]);
    for subset in [false, true] {
        let o = score_args_with(&calls, false, subset, &criteria);
        assert_score(&o, 1.0);
        assert_details(
            &o,
            json!({
                "expected": "[ToolCall(name='a', args={'x': 1}, id=None)]",
                "actual": "[ToolCall(name='a', args={'x': 1, 'y': 2}, id=None)]",
                "explained_tool_calls_args": {
                    "a_0": "Actual: {'x': 1, 'y': 2}, Expected: {'x': 1}, Score: 1.0",
                },
            }),
        );
    }
}

#[test]
fn row_24_args_nested_values_must_be_fully_equal() {
    let calls = with_args(&[("a", r#"{"x":{"p":1,"q":2}}"#)]);
    let o = score_args_with(
        &calls,
        false,
        true,
        &args_criteria(&[("a", r#"{"x": {"p": 1}}"#)]),
    );
    assert_score(&o, 0.0);
    assert_detail(
        &o,
        "explained_tool_calls_args",
        json!({"a_0": "Actual: {'x': {'p': 1, 'q': 2}}, Expected: {'x': {'p': 1}}, Score: 0.0"}),
    );
}

#[test]
fn row_25_args_values_use_python_equality() {
    let expected = args_criteria(&[("a", r#"{"x": 1}"#)]);
    for (input, want) in [
        (r#"{"x":true}"#, 1.0),
        (r#"{"x":1.0}"#, 1.0),
        (r#"{"x":"1"}"#, 0.0),
    ] {
        assert_score(&score_args(&with_args(&[("a", input)]), &expected), want);
    }
}

#[test]
fn row_26_args_json_true_and_null_parse() {
    let calls = with_args(&[("a", r#"{"x": true, "y": null}"#)]);
    let o = score_args(
        &calls,
        &args_criteria(&[("a", r#"{"x": true, "y": null}"#)]),
    );
    assert_score(&o, 1.0);
    assert_detail(
        &o,
        "explained_tool_calls_args",
        json!({"a_0": "Actual: {'x': True, 'y': None}, Expected: {'x': True, 'y': None}, Score: 1.0"}),
    );
}

#[test]
fn row_27_args_python_literal_is_parsed() {
    let calls = with_args(&[("a", "{'x': 1, 'y': True, 'z': None}")]);
    let o = score_args(
        &calls,
        &args_criteria(&[("a", r#"{"x": 1, "y": true, "z": null}"#)]),
    );
    assert_score(&o, 1.0);
    assert_detail(
        &o,
        "actual",
        json!("[ToolCall(name='a', args={'x': 1, 'y': True, 'z': None}, id=None)]"),
    );
}

#[test]
fn row_28_args_unusable_input_is_an_empty_dict() {
    let double_encoded = r#""{\"x\": 1}""#;
    for input in [Some("not json"), Some("[1,2]"), None, Some(double_encoded)] {
        let calls = calls_of(&[tool("a", 100, input, None)]);
        let o = score_args(&calls, &args_criteria(&[("a", "{}")]));
        assert_score(&o, 1.0);
        assert_detail(
            &o,
            "actual",
            json!("[ToolCall(name='a', args={}, id=None)]"),
        );
        assert_score(
            &score_args(&calls, &args_criteria(&[("a", r#"{"x": 1}"#)])),
            0.0,
        );
    }
}

#[test]
fn row_29_args_attempt_counter_goes_up_on_every_attempt() {
    let calls = with_args(&[("a", r#"{"x":1}"#), ("a", r#"{"x":2}"#)]);
    let o = score_args(
        &calls,
        &args_criteria(&[("a", r#"{"x": 2}"#), ("a", r#"{"x": 1}"#)]),
    );
    assert_score(&o, 1.0);
    assert_details(
        &o,
        json!({
            "expected": "[ToolCall(name='a', args={'x': 2}, id=None), ToolCall(name='a', args={'x': 1}, id=None)]",
            "actual": "[ToolCall(name='a', args={'x': 1}, id=None), ToolCall(name='a', args={'x': 2}, id=None)]",
            "explained_tool_calls_args": {
                "a_0": "Actual: {'x': 1}, Expected: {'x': 2}, Score: 0.0",
                "a_1": "Actual: {'x': 2}, Expected: {'x': 2}, Score: 1.0",
                "a_2": "Actual: {'x': 1}, Expected: {'x': 1}, Score: 1.0",
            },
        }),
    );
}

#[test]
fn row_30_args_an_actual_call_is_consumed_once() {
    let calls = with_args(&[("a", r#"{"x":1}"#)]);
    let o = score_args(
        &calls,
        &args_criteria(&[("a", r#"{"x": 1}"#), ("a", r#"{"x": 1}"#)]),
    );
    assert_score(&o, 0.5);
    assert_detail(
        &o,
        "explained_tool_calls_args",
        json!({"a_0": "Actual: {'x': 1}, Expected: {'x': 1}, Score: 1.0"}),
    );
}

#[test]
fn row_31_args_strict_lists_every_attempt() {
    let calls = with_args(&[("a", r#"{"x":1}"#), ("b", r#"{"y":1}"#)]);
    let criteria = args_criteria(&[("a", r#"{"x": 1}"#), ("b", r#"{"y": 2}"#)]);
    let o = score_args_with(&calls, true, false, &criteria);
    assert_score(&o, 0.0);
    assert_detail(
        &o,
        "explained_tool_calls_args",
        json!({
            "a_0": "Actual: {'x': 1}, Expected: {'x': 1}, Score: 1.0",
            "b_0": "Actual: {'y': 1}, Expected: {'y': 2}, Score: 0.0",
        }),
    );
    // Non-strict, the same attempts give 1 of 2.
    assert_score(&score_args(&calls, &criteria), 0.5);
}

#[test]
fn row_32_args_uncalled_tool_records_nothing() {
    let calls = with_args(&[("a", r#"{"x":1}"#)]);
    let o = score_args(&calls, &args_criteria(&[("z", r#"{"x": 1}"#)]));
    assert_score(&o, 0.0);
    assert_detail(&o, "explained_tool_calls_args", json!({}));
}

#[test]
fn row_33_args_unhashable_literal_key_is_an_evaluator_exception() {
    let calls = with_args(&[("a", "{[1]: 2}")]);
    let o = score_args(&calls, &args_criteria(&[("a", "{}")]));
    assert_thrown(&o, "unhashable type: 'list'");
}

#[test]
fn args_non_string_literal_key_is_an_evaluator_exception() {
    // SEMANTICS §1.2: `{1: 2}` fails pydantic's `dict[str, Any]`.
    let calls = with_args(&[("a", "{1: 2}")]);
    let o = score_args(&calls, &args_criteria(&[("a", "{}")]));
    assert_eq!(o.status, Status::Error, "{o:?}");
    assert_eq!(o.score, None);
    let details = o.details.to_json();
    let details = details.as_str().unwrap_or_default();
    assert!(
        details.starts_with("Exception thrown by evaluator: 1 validation error for ToolCall"),
        "{details:?}"
    );
}

#[test]
fn row_34_args_a_call_with_an_id_matches_by_id_only() {
    let calls = calls_of(&[span(
        "a",
        100,
        &[("tool.name", text("a")), ("tool.id", text("T1"))],
    )]);

    let o = score_args(&calls, &args_criteria(&[("a", "{}")]));
    assert_score(&o, 0.0);
    assert_details(
        &o,
        json!({
            "expected": "[ToolCall(name='a', args={}, id=None)]",
            "actual": "[ToolCall(name='a', args={}, id='T1')]",
            "explained_tool_calls_args": {},
        }),
    );

    let o = score_args(&calls, &args_criteria(&[("T1", "{}")]));
    assert_score(&o, 1.0);
    assert_detail(
        &o,
        "explained_tool_calls_args",
        json!({"a_0": "Actual: {}, Expected: {}, Score: 1.0"}),
    );

    let by_id = r#"{"toolCalls": [{"name": "x", "id": "T1", "args": {}}]}"#;
    let o = score_args(&calls, by_id);
    assert_score(&o, 1.0);
    assert_detail(
        &o,
        "expected",
        json!("[ToolCall(name='x', args={}, id='T1')]"),
    );
}

#[test]
fn args_expected_id_is_ignored_for_a_call_without_id() {
    let calls = with_args(&[("a", r#"{"x":1}"#)]);
    let o = score_args(
        &calls,
        r#"{"toolCalls": [{"name": "a", "id": "T9", "args": {"x": 1}}]}"#,
    );
    assert_score(&o, 1.0);
}

#[test]
fn args_wrappers_are_not_unwrapped_and_tuples_never_equal_lists() {
    let calls = with_args(&[("a", r#"{"args": [1], "kwargs": {"city": "Paris"}}"#)]);
    assert_score(
        &score_args(&calls, &args_criteria(&[("a", r#"{"city": "Paris"}"#)])),
        0.0,
    );

    let calls = with_args(&[("a", "{'x': (1, 2)}")]);
    let o = score_args(&calls, &args_criteria(&[("a", r#"{"x": [1, 2]}"#)]));
    assert_score(&o, 0.0);
    assert_detail(
        &o,
        "explained_tool_calls_args",
        json!({"a_0": "Actual: {'x': (1, 2)}, Expected: {'x': [1, 2]}, Score: 0.0"}),
    );
}

#[test]
fn args_empty_expected_args_match_any_call_of_that_name() {
    let calls = with_args(&[("a", r#"{"x":1}"#)]);
    assert_score(&score_args(&calls, &args_criteria(&[("a", "{}")])), 1.0);
}

#[test]
fn args_invalid_criteria_are_refused() {
    let calls = with_args(&[("a", r#"{"x":1}"#)]);
    for criteria in [
        r#"{"toolCalls": [{"name": "a"}]}"#,
        r#"{"toolCalls": [{"name": "a", "args": [1]}]}"#,
        r#"{"toolCalls": [{"args": {}}]}"#,
    ] {
        assert_refused(
            &score_args(&calls, criteria),
            "Python.CANNOT_VALIDATE_EVALUATION_CRITERIA",
        );
    }
}

// ---------------------------------------------------------------------------
// Rows 35–46: ToolCallOutputEvaluator (and the §1.2 output rule directly)
// ---------------------------------------------------------------------------

/// The output rule gives `want` for `output.value = raw`, both through
/// `extract::output_text` and through the evaluator.
#[track_caller]
fn assert_output_rule(raw: &str, want: &str) {
    assert_eq!(output_text(Some(&text(raw))), want, "output.value {raw:?}");
    let calls = with_outputs(&[("a", raw)]);
    assert_eq!(calls[0].output, want);
    let o = score_outputs(&calls, &outputs_criteria(&[("a", want)]));
    assert_score(&o, 1.0);
    assert_detail(
        &o,
        "explained_tool_calls_outputs",
        json!({ "a_0": format!("Actual: {want}, Expected: {want}, Score: 1.0") }),
    );
}

#[test]
fn row_35_output_content_is_rendered_as_a_python_repr() {
    assert_output_rule(
        r#"{"content":{"temperature":25.0,"unit":"fahrenheit"}}"#,
        "{'temperature': 25.0, 'unit': 'fahrenheit'}",
    );
}

#[test]
fn row_36_output_json_object_without_content_is_empty() {
    assert_output_rule(r#"{"result":"hello"}"#, "");
    let calls = with_outputs(&[("a", r#"{"result":"hello"}"#)]);
    let o = score_outputs(&calls, &outputs_criteria(&[("a", r#"{"result":"hello"}"#)]));
    assert_score(&o, 0.0);
}

#[test]
fn row_37_output_falsy_content_is_empty() {
    for raw in [
        r#"{"content":0}"#,
        r#"{"content":false}"#,
        r#"{"content":null}"#,
        r#"{"content":{}}"#,
        r#"{"content":[]}"#,
        r#"{"content":""}"#,
        r#"{"content":0.0}"#,
    ] {
        assert_output_rule(raw, "");
    }
}

#[test]
fn row_38_output_scalars_render_as_python_str() {
    assert_output_rule(r#"{"content":true}"#, "True");
    assert_output_rule(r#"{"content":1e20}"#, "1e+20");
    assert_output_rule(r#"{"content":0.00001}"#, "1e-05");
    assert_output_rule(r#"{"content":[Infinity]}"#, "[inf]");
}

#[test]
fn row_39_output_non_object_json_keeps_the_raw_string() {
    assert_output_rule(r#""hi""#, r#""hi""#);
    assert_output_rule("[1,2]", "[1,2]");
    assert_output_rule("42", "42");
    assert_output_rule("hello world", "hello world");
}

#[test]
fn row_40_output_unwraps_one_level_of_content() {
    assert_output_rule(r#"{"content":{"content":"x"}}"#, "{'content': 'x'}");
}

#[test]
fn row_41_output_string_reprs_escape_like_python() {
    assert_output_rule(r#"{"content":["it's \"q\""]}"#, r#"['it\'s "q"']"#);
    assert_output_rule(r#"{"content":["a\u0001b\tc"]}"#, r"['a\x01b\tc']");
    assert_output_rule(r#"{"content":["a\u00a0b"]}"#, r"['a\xa0b']");
}

#[test]
fn row_42_output_big_integers_keep_every_digit() {
    assert_output_rule(
        r#"{"content":12345678901234567890123}"#,
        "12345678901234567890123",
    );
}

#[test]
fn row_43_output_strict_stops_at_the_first_mismatch() {
    let calls = with_outputs(&[("a", "1"), ("a", "2")]);
    let criteria = outputs_criteria(&[("a", "2")]);
    let o = score_outputs_strict(&calls, &criteria);
    assert_score(&o, 0.0);
    assert_details(
        &o,
        json!({
            "expected": "[ToolOutput(name='a', output='2', id=None)]",
            "actual": "[ToolOutput(name='a', output='1', id=None), ToolOutput(name='a', output='2', id=None)]",
            "explained_tool_calls_outputs": {"a_0": "Actual: 1, Expected: 2, Score: 0.0"},
        }),
    );
    // Non-strict keeps scanning and finds the second call.
    let o = score_outputs(&calls, &criteria);
    assert_score(&o, 1.0);
    assert_detail(
        &o,
        "explained_tool_calls_outputs",
        json!({
            "a_0": "Actual: 1, Expected: 2, Score: 0.0",
            "a_1": "Actual: 2, Expected: 2, Score: 1.0",
        }),
    );
}

#[test]
fn row_44_output_strict_with_no_matching_call() {
    let o = score_outputs_strict(
        &with_outputs(&[("a", "1")]),
        &outputs_criteria(&[("b", "1")]),
    );
    assert_score(&o, 0.0);
    assert_detail(
        &o,
        "explained_tool_calls_outputs",
        json!({"_result": "No matching actual tool call found for expected b"}),
    );
}

#[test]
fn row_45_output_is_not_trimmed() {
    assert_eq!(output_text(Some(&text("hi "))), "hi ");
    let o = score_outputs(
        &with_outputs(&[("a", "hi ")]),
        &outputs_criteria(&[("a", "hi")]),
    );
    assert_score(&o, 0.0);
    assert_detail(
        &o,
        "explained_tool_calls_outputs",
        json!({"a_0": "Actual: hi , Expected: hi, Score: 0.0"}),
    );
}

#[test]
fn row_46_output_criteria_must_be_a_string() {
    let calls = with_outputs(&[("a", "5")]);
    for criteria in [
        r#"{"toolOutputs": [{"name": "a", "output": 5}]}"#,
        r#"{"toolOutputs": [{"name": "a", "output": {"x": 1}}]}"#,
    ] {
        assert_refused(
            &score_outputs(&calls, criteria),
            "Python.CANNOT_VALIDATE_EVALUATION_CRITERIA",
        );
    }
}

#[test]
fn output_repr_of_expected_and_actual_lists() {
    let calls = calls_of(&[span(
        "a",
        100,
        &[
            ("tool.name", text("a")),
            ("tool.id", text("c1")),
            ("output.value", text("it's")),
        ],
    )]);
    let o = score_outputs(
        &calls,
        r#"{"toolOutputs": [{"name": "a", "output": "it's", "id": "c1"}]}"#,
    );
    assert_score(&o, 1.0);
    assert_details(
        &o,
        json!({
            "expected": "[ToolOutput(name='a', output=\"it's\", id='c1')]",
            "actual": "[ToolOutput(name='a', output=\"it's\", id='c1')]",
            "explained_tool_calls_outputs": {"a_0": "Actual: it's, Expected: it's, Score: 1.0"},
        }),
    );
}

// ---------------------------------------------------------------------------
// Rows 47–48: criteria resolution
// ---------------------------------------------------------------------------

#[test]
fn row_47_no_criteria_uses_the_default_or_is_refused() {
    let calls = named(&["a"]);
    let mut ev = Evaluator::with_defaults("order", EvaluatorType::Order);
    assert_refused(
        &ev.evaluate_value(&calls, None),
        "Python.NO_EVALUATION_CRITERIA_PROVIDED",
    );

    let default = ev.parse_criteria(&py(r#"{"toolCallsOrder": ["a", "b"]}"#));
    ev.default_criteria = Some(default.unwrap_or_else(|e| panic!("{e}")));
    assert_score(&ev.evaluate_value(&calls, None), 0.5);
    // Explicit criteria replace the default entirely.
    assert_score(
        &ev.evaluate_value(&calls, Some(&py(r#"{"toolCallsOrder": ["a"]}"#))),
        1.0,
    );
}

#[test]
fn empty_trace_summary_for_every_uipath_evaluator() {
    // SEMANTICS §1.7 "Empty trace".
    let o = score_order(&[], &["a"]);
    assert_score(&o, 0.0);
    assert_detail(&o, "lcs", json!([]));

    let o = score_args(&[], &args_criteria(&[("a", "{}")]));
    assert_score(&o, 0.0);
    assert_detail(
        &o,
        "explained_tool_calls_args",
        json!({"_result": "Either expected or actual tool calls are empty"}),
    );
    let o = score_args(&[], r#"{"toolCalls": []}"#);
    assert_score(&o, 1.0);
    assert_detail(
        &o,
        "explained_tool_calls_args",
        json!({"_result": "Both expected and actual tool calls are empty"}),
    );

    let o = score_outputs(&[], &outputs_criteria(&[("a", "x")]));
    assert_score(&o, 0.0);
    assert_detail(
        &o,
        "explained_tool_calls_outputs",
        json!({"_result": "Either expected or actual tool calls outputs are empty"}),
    );
    let o = score_outputs(&[], r#"{"toolOutputs": []}"#);
    assert_score(&o, 1.0);
    assert_detail(
        &o,
        "explained_tool_calls_outputs",
        json!({"_result": "Both expected and actual tool calls outputs are empty"}),
    );
}

#[test]
fn uipath_outcomes_have_no_threshold_unless_configured() {
    let mut ev = Evaluator::with_defaults("count", EvaluatorType::Count);
    let criteria = py(r#"{"toolCallsCount": {"a": ["=", 1], "b": ["=", 1]}}"#);
    let o = ev.evaluate_value(&named(&["a"]), Some(&criteria));
    assert_eq!((o.passed, o.threshold), (None, None));

    ev.threshold = Some(0.5);
    let o = ev.evaluate_value(&named(&["a"]), Some(&criteria));
    assert_eq!(
        (o.score, o.passed, o.threshold),
        (Some(0.5), Some(true), Some(0.5))
    );
}

// ---------------------------------------------------------------------------
// Rows 49–64: deepeval ToolCorrectnessMetric
// ---------------------------------------------------------------------------

#[test]
fn row_49_deepeval_extra_calls_do_not_lower_the_score() {
    let o = score_deepeval(
        deepeval_default(),
        &named(&["WebSearch", "ToolQuery"]),
        &expected_tools(&["WebSearch"]),
    );
    assert_close(&o, 1.0);
    assert_eq!(
        reason(&o),
        full_reason("All expected tools ['WebSearch'] were called (order not considered).")
    );
}

#[test]
fn row_50_deepeval_divides_by_expected_tools_and_passes_at_threshold() {
    let o = score_deepeval(
        deepeval_default(),
        &named(&["WebSearch"]),
        &expected_tools(&["WebSearch", "ToolQuery"]),
    );
    assert_close(&o, 0.5);
    assert_eq!((o.passed, o.threshold), (Some(true), Some(0.5)));
    assert_eq!(o.details.to_json()["success"], json!(true));
    assert_eq!(o.details.to_json()["threshold"], json!(0.5));
}

#[test]
fn row_51_deepeval_empty_lists() {
    assert_close(
        &score_deepeval(deepeval_default(), &[], &expected_tools(&[])),
        1.0,
    );
    assert_close(
        &score_deepeval(deepeval_default(), &named(&["a"]), &expected_tools(&[])),
        0.0,
    );
    assert_close(
        &score_deepeval(deepeval_default(), &[], &expected_tools(&["a"])),
        0.0,
    );
    for cfg in [deepeval_ordering(), deepeval_exact()] {
        assert_close(&score_deepeval(cfg.clone(), &[], &expected_tools(&[])), 1.0);
        assert_close(
            &score_deepeval(cfg, &named(&["a"]), &expected_tools(&[])),
            0.0,
        );
    }
}

#[test]
fn row_52_deepeval_identical_duplicates_score_half() {
    // Expected params `{}` make the expected tools value-equal to the called
    // ones (a trace's calls carry their parsed args, `{}` here).
    let o = score_deepeval(
        deepeval_default(),
        &named(&["a", "a"]),
        r#"{"expectedTools": [{"name": "a", "inputParameters": {}}, {"name": "a", "inputParameters": {}}]}"#,
    );
    assert_close(&o, 0.5);
    assert_eq!(
        reason(&o),
        full_reason(
            "Incomplete tool usage: missing tools []; expected ['a', 'a'], called ['a', 'a']. \
             See more details above."
        )
    );
}

#[test]
fn row_53_deepeval_input_parameters_give_partial_credit() {
    let o = score_deepeval(
        deepeval_params(),
        &with_args(&[("a", r#"{"x":1,"y":2}"#)]),
        r#"{"expectedTools": [{"name": "a", "inputParameters": {"x": 1, "y": 3}}]}"#,
    );
    assert_close(&o, 0.5);

    let o = score_deepeval(
        deepeval_params(),
        &with_args(&[("a", r#"{"x":1,"y":2,"z":3}"#)]),
        r#"{"expectedTools": [{"name": "a", "inputParameters": {"x": 1}}]}"#,
    );
    assert_close(&o, 0.3333333333333333);
}

#[test]
fn row_54_deepeval_nested_dicts_are_compared_recursively() {
    let o = score_deepeval(
        deepeval_params(),
        &with_args(&[("a", r#"{"x":{"p":1,"q":2},"y":1}"#)]),
        r#"{"expectedTools": [{"name": "a", "input_parameters": {"x": {"p": 1, "q": 3}, "y": 1}}]}"#,
    );
    assert_close(&o, 0.75);
}

#[test]
fn row_55_deepeval_expected_params_none_is_an_error() {
    let o = score_deepeval(
        deepeval_params(),
        &with_args(&[("a", r#"{"x":1}"#)]),
        &expected_tools(&["a"]),
    );
    assert_eq!(o.status, Status::Error, "{o:?}");
    assert_eq!(o.score, None);
    assert_eq!(
        o.error.as_deref(),
        Some("AttributeError: 'NoneType' object has no attribute 'keys'")
    );
    // A call without arguments has params `{}`, not None: still one side None.
    let o = score_deepeval(deepeval_params(), &named(&["a"]), &expected_tools(&["a"]));
    assert_eq!(o.status, Status::Error, "{o:?}");
}

#[test]
fn deepeval_params_ignored_unless_requested_and_equal_empty_params_score_one() {
    // Without INPUT_PARAMETERS, missing expected params are never compared.
    let calls = with_args(&[("a", r#"{"x":1}"#)]);
    assert_close(
        &score_deepeval(deepeval_default(), &calls, &expected_tools(&["a"])),
        1.0,
    );
    // Equal params (here both `{}`) short-circuit to 1.0. (Both None, the
    // reference's other equal case, cannot arise: a trace's calls always
    // carry a params dict.)
    let o = score_deepeval(
        deepeval_params(),
        &named(&["a"]),
        r#"{"expectedTools": [{"name": "a", "inputParameters": {}}]}"#,
    );
    assert_close(&o, 1.0);
    // Expected `{}` against actual arguments: no shared key, 0 weight.
    let o = score_deepeval(
        deepeval_params(),
        &calls,
        r#"{"expectedTools": [{"name": "a", "inputParameters": {}}]}"#,
    );
    assert_close(&o, 0.0);
}

#[test]
fn row_56_deepeval_matching_is_greedy() {
    let o = score_deepeval(
        deepeval_params(),
        &with_args(&[("a", r#"{"x":1,"y":2}"#)]),
        r#"{"expectedTools": [{"name": "a", "inputParameters": {"x": 1, "y": 3}},
                              {"name": "a", "inputParameters": {"x": 1, "y": 2}}]}"#,
    );
    assert_close(&o, 0.25);
}

#[test]
fn row_57_deepeval_ordering_weighted_lcs() {
    let o = score_deepeval(
        deepeval_ordering(),
        &named(&["WebSearch", "WebSearch", "ToolQuery"]),
        &expected_tools(&["WebSearch", "ToolQuery", "WebSearch"]),
    );
    assert_close(&o, 0.6666666666666666);
    assert_eq!(
        reason(&o),
        full_reason(
            "Incorrect tool usage: ; expected ['WebSearch', 'ToolQuery', 'WebSearch'], called \
             ['WebSearch', 'WebSearch', 'ToolQuery']. See more details above."
        )
    );
}

#[test]
fn row_58_deepeval_ordering_reports_out_of_order_tools() {
    let o = score_deepeval(
        deepeval_ordering(),
        &named(&["b", "a"]),
        &expected_tools(&["a", "b"]),
    );
    assert_close(&o, 0.5);
    assert_eq!(
        reason(&o),
        full_reason(
            "Incorrect tool usage: out-of-order tools ['b']; expected ['a', 'b'], called ['b', 'a']. \
             See more details above."
        )
    );
}

#[test]
fn deepeval_ordering_correct_and_missing_reasons() {
    let o = score_deepeval(
        deepeval_ordering(),
        &named(&["a", "b"]),
        &expected_tools(&["a", "b"]),
    );
    assert_close(&o, 1.0);
    assert_eq!(
        reason(&o),
        full_reason(
            "Correct ordering: all expected tools ['a', 'b'] were called in the correct order."
        )
    );

    let o = score_deepeval(
        deepeval_ordering(),
        &named(&["a"]),
        &expected_tools(&["a", "b"]),
    );
    assert_close(&o, 0.5);
    assert_eq!(
        reason(&o),
        full_reason(
            "Incorrect tool usage: missing tools ['b'] and out-of-order tools ['b']; expected \
             ['a', 'b'], called ['a']. See more details above."
        )
    );
}

#[test]
fn row_59_deepeval_ordering_with_input_parameters() {
    let cfg = DeepevalConfig {
        should_consider_ordering: true,
        input_parameters: true,
        ..DeepevalConfig::default()
    };
    let o = score_deepeval(
        cfg,
        &with_args(&[("a", r#"{"x":1,"y":2}"#), ("b", r#"{"z":1}"#)]),
        r#"{"expectedTools": [{"name": "a", "inputParameters": {"x": 1, "y": 3}},
                              {"name": "b", "inputParameters": {"z": 1}}]}"#,
    );
    assert_close(&o, 0.75);
}

#[test]
fn row_60_deepeval_exact_match() {
    let expected = expected_tools(&["a", "b"]);
    let o = score_deepeval(deepeval_exact(), &named(&["b", "a"]), &expected);
    assert_close(&o, 0.0);
    assert_eq!(
        reason(&o),
        full_reason(
            "Not an exact match: expected ['a', 'b'], called ['b', 'a']. See details above."
        )
    );

    let o = score_deepeval(deepeval_exact(), &named(&["a", "b"]), &expected);
    assert_close(&o, 1.0);
    assert_eq!(
        reason(&o),
        full_reason("Exact match: expected ['a', 'b'], called ['a', 'b']. See details above.")
    );

    // Exact wins over ordering (ordering alone would give 0.5).
    let both = DeepevalConfig {
        should_consider_ordering: true,
        should_exact_match: true,
        ..DeepevalConfig::default()
    };
    assert_close(&score_deepeval(both, &named(&["b", "a"]), &expected), 0.0);
}

#[test]
fn deepeval_exact_match_with_params_has_no_partial_credit() {
    let cfg = DeepevalConfig {
        should_exact_match: true,
        input_parameters: true,
        ..DeepevalConfig::default()
    };
    let calls = with_args(&[("a", r#"{"x":1,"y":2}"#)]);
    let partial = r#"{"expectedTools": [{"name": "a", "inputParameters": {"x": 1, "y": 3}}]}"#;
    assert_close(&score_deepeval(cfg.clone(), &calls, partial), 0.0);
    let equal = r#"{"expectedTools": [{"name": "a", "inputParameters": {"x": 1.0, "y": 2}}]}"#;
    assert_close(&score_deepeval(cfg, &calls, equal), 1.0);
}

#[test]
fn row_61_deepeval_strict_mode_turns_a_failure_into_int_zero() {
    let strict = DeepevalConfig {
        strict_mode: true,
        ..DeepevalConfig::default()
    };
    let o = score_deepeval(strict.clone(), &named(&["a"]), &expected_tools(&["a", "b"]));
    assert_eq!(o.status, Status::Ok);
    assert_eq!(o.score, Some(0.0));
    assert!(o.score_is_int, "strict failure is the int 0");
    assert_eq!((o.passed, o.threshold), (Some(false), Some(1.0)));
    assert_eq!(o.details.to_json()["success"], json!(false));
    assert_eq!(o.details.to_json()["threshold"], json!(1));

    let o = score_deepeval(strict, &named(&["a", "b"]), &expected_tools(&["a", "b"]));
    assert_eq!(o.score, Some(1.0));
    assert!(!o.score_is_int);
    assert_eq!(o.passed, Some(true));
}

#[test]
fn row_62_deepeval_outputs_use_python_equality() {
    let cfg = DeepevalConfig {
        output: true,
        ..DeepevalConfig::default()
    };
    let dict_output = |n: i64| {
        let kv = AttrValue::KvList(vec![("k".to_owned(), AttrValue::Int(n))]);
        calls_of(&[span(
            "a",
            100,
            &[("tool.name", text("a")), ("output.value", kv)],
        )])
    };
    let expected = r#"{"expectedTools": [{"name": "a", "output": {"k": 1.0}}]}"#;
    assert_close(&score_deepeval(cfg.clone(), &dict_output(1), expected), 1.0);
    // A different output zeroes the pair's weight.
    assert_close(&score_deepeval(cfg, &dict_output(2), expected), 0.0);
}

#[test]
fn row_63_deepeval_available_tools_need_a_model() {
    // Row 63: a non-empty `available_tools` asks an LLM (src/judge/deepeval.rs);
    // an empty or null one means no LLM call.
    let result = parse_config(
        EvaluatorType::ToolCorrectness,
        &py_dict(r#"{"available_tools": [{"name": "a"}]}"#),
        "config",
    );
    match result {
        Ok(Config::ToolCorrectness(cfg)) => {
            assert!(crate::evaluator::llm::deepeval::needs_model(&cfg))
        }
        other => panic!("{other:?}"),
    }
    for config in [r#"{"available_tools": []}"#, r#"{"available_tools": null}"#] {
        match parse_config(EvaluatorType::ToolCorrectness, &py_dict(config), "config") {
            Ok(Config::ToolCorrectness(cfg)) => {
                assert!(
                    !crate::evaluator::llm::deepeval::needs_model(&cfg),
                    "{config}"
                )
            }
            other => panic!("{config}: {other:?}"),
        }
    }
}

#[test]
fn row_64_deepeval_missing_expected_tools_is_an_error() {
    // The reference refuses a None list (`tools_called=None` in row 64); a
    // trace always yields a list of calls, so the None that can occur here is
    // `expected_tools`, refused with the same error.
    let message = "MissingTestCaseParamsError: 'expected_tools' cannot be None for the 'Tool Correctness' metric";
    for criteria in [r#"{"expectedTools": null}"#, "{}"] {
        let o = score_deepeval(deepeval_default(), &named(&["a"]), criteria);
        assert_refused(&o, message);
    }
    let ev = Evaluator::with_defaults("tc", EvaluatorType::ToolCorrectness);
    assert_refused(&ev.evaluate_value(&named(&["a"]), None), message);
}

#[test]
fn deepeval_config_parses_evaluation_params_and_threshold() {
    let parsed = parse_config(
        EvaluatorType::ToolCorrectness,
        &py_dict(
            r#"{"evaluationParams": ["INPUT_PARAMETERS", "ToolCallParams.OUTPUT"],
                "shouldConsiderOrdering": true, "threshold": 0.7}"#,
        ),
        "config",
    );
    let cfg = match parsed {
        Ok(Config::ToolCorrectness(cfg)) => cfg,
        other => panic!("{other:?}"),
    };
    assert!(cfg.input_parameters && cfg.output && cfg.should_consider_ordering);
    assert!(!cfg.should_exact_match && !cfg.strict_mode);
    assert_eq!(cfg.threshold, 0.7);

    let o = score_deepeval(cfg, &[], &expected_tools(&["a"]));
    assert_eq!((o.passed, o.threshold), (Some(false), Some(0.7)));
}

// ---------------------------------------------------------------------------
// §1.2 argument rule, through extract::parse_args
// ---------------------------------------------------------------------------

/// The repr of parsed arguments, or `Invalid(message)`.
fn parsed(attr: Option<&AttrValue>) -> String {
    match parse_args(attr, ArgsFormat::Value) {
        Args::Dict(d) => Value::Dict(d).repr(),
        Args::Invalid(e) => format!("Invalid({e})"),
    }
}

#[test]
fn parse_args_missing_is_empty() {
    assert_eq!(parsed(None), "{}");
}

#[test]
fn parse_args_mapping_is_used_as_is() {
    let kv = AttrValue::KvList(vec![
        ("city".to_owned(), text("Paris")),
        ("days".to_owned(), AttrValue::Int(3)),
    ]);
    assert_eq!(parsed(Some(&kv)), "{'city': 'Paris', 'days': 3}");
}

#[test]
fn parse_args_non_string_attribute_is_empty() {
    assert_eq!(parsed(Some(&AttrValue::Int(5))), "{}");
    assert_eq!(parsed(Some(&AttrValue::Bool(true))), "{}");
    assert_eq!(parsed(Some(&AttrValue::Array(vec![text("x")]))), "{}");
}

#[test]
fn parse_args_json_object() {
    assert_eq!(
        parsed(Some(&text(
            r#" {"x": true, "y": null, "z": 1e3, "n": NaN} "#
        ))),
        "{'x': True, 'y': None, 'z': 1000.0, 'n': nan}"
    );
    // Duplicate keys: the last value at the first key's position.
    assert_eq!(
        parsed(Some(&text(r#"{"x": 1, "y": 2, "x": 3}"#))),
        "{'x': 3, 'y': 2}"
    );
}

#[test]
fn parse_args_python_literal() {
    assert_eq!(
        parsed(Some(&text("{'x': 1, 'y': True, 'z': None, 't': (1, 2),}"))),
        "{'x': 1, 'y': True, 'z': None, 't': (1, 2)}"
    );
}

#[test]
fn parse_args_unparseable_is_empty() {
    assert_eq!(parsed(Some(&text("not json"))), "{}");
    assert_eq!(parsed(Some(&text("{'x': "))), "{}");
}

#[test]
fn parse_args_json_non_object_is_empty() {
    for input in ["[1, 2]", "42", r#""x""#, "true", "null"] {
        assert_eq!(parsed(Some(&text(input))), "{}", "{input}");
    }
}

#[test]
fn parse_args_double_encoded_json_is_empty() {
    assert_eq!(parsed(Some(&text(r#""{\"x\": 1}""#))), "{}");
}

#[test]
fn parse_args_unhashable_literal_key_is_invalid() {
    assert_eq!(
        parsed(Some(&text("{[1]: 2}"))),
        "Invalid(unhashable type: 'list')"
    );
}

#[test]
fn parse_args_non_string_key_is_invalid() {
    let args = parse_args(Some(&text("{1: 2}")), ArgsFormat::Value);
    assert!(matches!(args, Args::Invalid(_)), "{args:?}");
}

// ---------------------------------------------------------------------------
// §1.2 output rule, through extract::output_text
// ---------------------------------------------------------------------------

#[test]
fn output_text_missing_is_empty() {
    assert_eq!(output_text(None), "");
}

#[test]
fn output_text_unparseable_strings_are_kept_verbatim() {
    assert_eq!(
        output_text(Some(&text("{'content': 'x'}"))),
        "{'content': 'x'}"
    );
    assert_eq!(output_text(Some(&text(""))), "");
}

#[test]
fn output_text_content_holding_json_text_is_not_reparsed() {
    assert_eq!(
        output_text(Some(&text(r#"{"content": "{\"a\": 1}"}"#))),
        r#"{"a": 1}"#
    );
}

#[test]
fn output_text_non_string_attributes_render_as_python_str() {
    // SEMANTICS §1.2: anything not a string or a mapping becomes its Python
    // `str()` first (`False` → "False", a non-empty string, so it stays).
    assert_eq!(output_text(Some(&AttrValue::Int(5))), "5");
    assert_eq!(output_text(Some(&AttrValue::Bool(false))), "False");
    assert_eq!(output_text(Some(&AttrValue::Int(0))), "0");
    assert_eq!(
        output_text(Some(&AttrValue::Array(vec![text("x"), text("y")]))),
        "('x', 'y')"
    );
}

#[test]
fn output_text_mappings_take_their_content() {
    let with_content = AttrValue::KvList(vec![("content".to_owned(), text("x"))]);
    assert_eq!(output_text(Some(&with_content)), "x");
    let without = AttrValue::KvList(vec![("result".to_owned(), text("x"))]);
    assert_eq!(output_text(Some(&without)), "");
}

// ---------------------------------------------------------------------------
// Seeds: the count evaluator's documentation
// ---------------------------------------------------------------------------

#[test]
fn seed_count_doc_basic_count_validation() {
    let mut names = vec!["fetch_data"];
    names.extend(["process_item"; 5]);
    names.push("send_notification");
    let o = score_count(
        &named(&names),
        r#"{"tool_calls_count": {"fetch_data": ["=", 1], "process_item": ["=", 5],
                                  "send_notification": ["=", 1]}}"#,
    );
    assert_score(&o, 1.0);
}

#[test]
fn seed_count_doc_proportional_scoring_is_two_thirds_not_0_66() {
    let o = score_count(
        &named(&[
            "fetch_data",
            "process_item",
            "process_item",
            "process_item",
            "send_notification",
        ]),
        r#"{"tool_calls_count": {"fetch_data": ["=", 1], "process_item": ["=", 5],
                                  "send_notification": ["=", 1]}}"#,
    );
    assert_score(&o, 0.6666666666666666);
    // The documentation's "Justification Details" example.
    assert_detail(
        &o,
        "explained_tool_calls_count",
        json!({
            "fetch_data": "Actual: 1, Expected: 1, Score: 1.0",
            "process_item": "Actual: 3, Expected: 5, Score: 0.0",
            "send_notification": "Actual: 1, Expected: 1, Score: 1.0",
        }),
    );
}

#[test]
fn seed_count_doc_strict_all_or_nothing() {
    let o = score_count_strict(
        &named(&[
            "authenticate",
            "fetch_records",
            "fetch_records",
            "close_connection",
        ]),
        r#"{"tool_calls_count": {"authenticate": ["=", 1], "fetch_records": ["=", 1],
                                  "close_connection": ["=", 1]}}"#,
    );
    assert_score(&o, 0.0);
    assert_detail(
        &o,
        "explained_tool_calls_count",
        json!({"fetch_records": "Actual: 2, Expected: 1, Score: 0.0"}),
    );
}

#[test]
fn seed_count_doc_preventing_redundant_calls() {
    let o = score_count(
        &named(&[
            "expensive_api_call",
            "database_query",
            "database_query",
            "llm_call",
        ]),
        r#"{"tool_calls_count": {"expensive_api_call": ["<=", 1], "database_query": ["<=", 3],
                                  "llm_call": ["<=", 2]}}"#,
    );
    assert_score(&o, 1.0);
}

#[test]
fn seed_count_doc_loop_validation() {
    let names: Vec<&str> = (0..10)
        .flat_map(|_| ["process_item", "validate_item", "save_result"])
        .collect();
    let o = score_count(
        &named(&names),
        r#"{"tool_calls_count": {"process_item": ["=", 10], "validate_item": ["=", 10],
                                  "save_result": ["=", 10]}}"#,
    );
    assert_score(&o, 1.0);
}

#[test]
fn seed_count_doc_retry_logic() {
    let o = score_count(
        &named(&[
            "attempt_operation",
            "log_retry",
            "attempt_operation",
            "final_result",
        ]),
        r#"{"tool_calls_count": {"attempt_operation": ["<=", 3], "log_retry": [">=", 1],
                                  "final_result": ["=", 1]}}"#,
    );
    assert_score(&o, 1.0);
}

#[test]
fn seed_count_doc_minimum_calls() {
    let o = score_count(
        &named(&["validate_input", "check_security", "audit_log"]),
        r#"{"tool_calls_count": {"validate_input": [">=", 1], "check_security": [">=", 1],
                                  "audit_log": [">", 0]}}"#,
    );
    assert_score(&o, 1.0);
}

#[test]
fn seed_count_doc_error_claims_are_wrong() {
    // "Negative counts: Raises validation error" — they are accepted (row 9).
    assert_score(
        &score_count(&named(&["a"]), r#"{"toolCallsCount": {"a": [">", -1]}}"#),
        1.0,
    );
    // "Invalid operators: Raises validation error" — the criteria validate;
    // scoring raises (row 8).
    let o = score_count(&named(&["a"]), r#"{"toolCallsCount": {"a": ["~", 1]}}"#);
    assert_thrown(&o, "'~'");
}

// ---------------------------------------------------------------------------
// Seeds: the order evaluator's documentation
// ---------------------------------------------------------------------------

#[test]
fn seed_order_doc_lcs_formula_example() {
    let o = score_order(&named(&["A", "X", "B", "D"]), &["A", "B", "C", "D"]);
    assert_score(&o, 0.75);
    assert_detail(&o, "lcs", json!(["A", "B", "D"]));
}

#[test]
fn seed_order_doc_basic_order_validation() {
    let names = ["validate_user", "check_inventory", "create_order"];
    let o = score_order(&named(&names), &names);
    assert_score(&o, 1.0);
    assert_details(
        &o,
        json!({
            "expected": "['validate_user', 'check_inventory', 'create_order']",
            "actual": "['validate_user', 'check_inventory', 'create_order']",
            "lcs": ["validate_user", "check_inventory", "create_order"],
        }),
    );
}

#[test]
fn seed_order_doc_strict_order_validation() {
    let names = ["authenticate_user", "verify_permissions", "access_resource"];
    assert_score(&score_order_strict(&named(&names), &names), 1.0);
}

#[test]
fn seed_order_doc_partial_credit_with_lcs() {
    let o = score_order(
        &named(&["search", "filter", "display"]),
        &["search", "filter", "sort", "display"],
    );
    assert_score(&o, 0.75);
    assert_detail(&o, "lcs", json!(["search", "filter", "display"]));
}

#[test]
fn seed_order_doc_database_transaction_sequence() {
    let names = [
        "begin_transaction",
        "validate_data",
        "update_records",
        "commit_transaction",
    ];
    assert_score(&score_order_strict(&named(&names), &names), 1.0);
}

#[test]
fn seed_order_doc_api_integration_workflow() {
    let names = [
        "get_api_token",
        "fetch_user_data",
        "enrich_data",
        "post_to_webhook",
        "log_result",
    ];
    assert_score(&score_order(&named(&names), &names), 1.0);
}

#[test]
fn seed_order_doc_using_default_criteria() {
    let mut ev = Evaluator::with_defaults("order-default", EvaluatorType::Order);
    let default = ev.parse_criteria(&py(
        r#"{"tool_calls_order": ["init", "process", "cleanup"]}"#,
    ));
    ev.default_criteria = Some(default.unwrap_or_else(|e| panic!("{e}")));
    let o = ev.evaluate_value(&named(&["init", "process", "cleanup"]), None);
    assert_score(&o, 1.0);
}

#[test]
fn seed_order_doc_empty_expected_is_not_an_error() {
    // The doc says "Empty expected calls: Error (invalid criteria)"; the
    // reference accepts `[]` and scores 0.0 against any call (row 18).
    assert_score(&score_order(&named(&["a"]), &[]), 0.0);
    // "Empty actual calls: Score 0.0" holds.
    assert_score(&score_order(&[], &["a"]), 0.0);
}

// ---------------------------------------------------------------------------
// Seeds: the args evaluator's documentation
// ---------------------------------------------------------------------------

#[test]
fn seed_args_doc_basic_argument_validation() {
    let calls = with_args(&[(
        "update_user",
        "{'user_id': 123, 'fields': {'email': 'user@example.com'}, 'notify': True}",
    )]);
    let o = score_args(
        &calls,
        &args_criteria(&[(
            "update_user",
            r#"{"user_id": 123, "fields": {"email": "user@example.com"}, "notify": true}"#,
        )]),
    );
    assert_score(&o, 1.0);
}

#[test]
fn seed_args_doc_strict_mode_exact_matching() {
    let calls = with_args(&[(
        "api_request",
        "{'endpoint': '/api/users', 'method': 'GET', 'headers': {'Authorization': 'Bearer token123'}}",
    )]);
    let criteria = args_criteria(&[(
        "api_request",
        r#"{"endpoint": "/api/users", "method": "GET", "headers": {"Authorization": "Bearer token123"}}"#,
    )]);
    assert_score(&score_args_with(&calls, true, false, &criteria), 1.0);
}

#[test]
fn seed_args_doc_proportional_scoring_is_two_thirds_not_0_66() {
    let calls = with_args(&[
        ("validate_input", "{'data': {'user_id': 123}}"),
        ("fetch_user", "{'user_id': 999}"),
        (
            "update_profile",
            "{'user_id': 123, 'updates': {'name': 'John Doe'}}",
        ),
    ]);
    let o = score_args(
        &calls,
        &args_criteria(&[
            ("validate_input", r#"{"data": {"user_id": 123}}"#),
            ("fetch_user", r#"{"user_id": 123}"#),
            (
                "update_profile",
                r#"{"user_id": 123, "updates": {"name": "John Doe"}}"#,
            ),
        ]),
    );
    assert_score(&o, 0.6666666666666666);
    assert_detail(
        &o,
        "explained_tool_calls_args",
        json!({
            "validate_input_0": "Actual: {'data': {'user_id': 123}}, Expected: {'data': {'user_id': 123}}, Score: 1.0",
            "fetch_user_0": "Actual: {'user_id': 999}, Expected: {'user_id': 123}, Score: 0.0",
            "update_profile_0": "Actual: {'user_id': 123, 'updates': {'name': 'John Doe'}}, Expected: {'user_id': 123, 'updates': {'name': 'John Doe'}}, Score: 1.0",
        }),
    );
}

#[test]
fn seed_args_doc_subset_mode_partial_validation() {
    let calls = with_args(&[(
        "send_email",
        "{'to': 'user@example.com', 'subject': 'Welcome', 'cc': 'admin@example.com', 'body': 'Welcome to our platform!'}",
    )]);
    let criteria = args_criteria(&[(
        "send_email",
        r#"{"to": "user@example.com", "subject": "Welcome"}"#,
    )]);
    assert_score(&score_args_with(&calls, false, true, &criteria), 1.0);
    // The doc's "subset=False: exact arg matching required" does not hold.
    assert_score(&score_args_with(&calls, false, false, &criteria), 1.0);
}

#[test]
fn seed_args_doc_multiple_tool_calls() {
    let calls = with_args(&[
        ("validate_input", "{'data': {'user_id': 123}}"),
        ("fetch_user", "{'user_id': 123}"),
        (
            "update_profile",
            "{'user_id': 123, 'updates': {'name': 'John Doe'}}",
        ),
    ]);
    let o = score_args(
        &calls,
        &args_criteria(&[
            ("validate_input", r#"{"data": {"user_id": 123}}"#),
            ("fetch_user", r#"{"user_id": 123}"#),
            (
                "update_profile",
                r#"{"user_id": 123, "updates": {"name": "John Doe"}}"#,
            ),
        ]),
    );
    assert_score(&o, 1.0);
}

#[test]
fn seed_args_doc_nested_arguments() {
    let calls = with_args(&[(
        "create_order",
        "{'customer': {'id': 123, 'name': 'John Doe', 'address': {'street': '123 Main St', \
         'city': 'New York', 'zip': '10001'}}, 'items': [{'product_id': 1, 'quantity': 2}, \
         {'product_id': 2, 'quantity': 1}], 'total': 99.99}",
    )]);
    let o = score_args(
        &calls,
        &args_criteria(&[(
            "create_order",
            r#"{"customer": {"id": 123, "name": "John Doe", "address": {"street": "123 Main St",
                "city": "New York", "zip": "10001"}}, "items": [{"product_id": 1, "quantity": 2},
                {"product_id": 2, "quantity": 1}], "total": 99.99}"#,
        )]),
    );
    assert_score(&o, 1.0);
}

#[test]
fn seed_args_doc_justification_details() {
    let calls = with_args(&[
        ("update_user", "{'user_id': 123, 'status': 'active'}"),
        (
            "send_email",
            "{'to': 'user@example.com', 'subject': 'Hello'}",
        ),
        ("log_event", "{'type': 'info', 'message': 'Success'}"),
    ]);
    let o = score_args(
        &calls,
        &args_criteria(&[
            ("update_user", r#"{"user_id": 123, "status": "active"}"#),
            ("send_email", r#"{"to": "user@example.com"}"#),
            ("log_event", r#"{"type": "info"}"#),
        ]),
    );
    assert_score(&o, 1.0);
    assert_detail(
        &o,
        "explained_tool_calls_args",
        json!({
            "update_user_0": "Actual: {'user_id': 123, 'status': 'active'}, Expected: {'user_id': 123, 'status': 'active'}, Score: 1.0",
            "send_email_0": "Actual: {'to': 'user@example.com', 'subject': 'Hello'}, Expected: {'to': 'user@example.com'}, Score: 1.0",
            "log_event_0": "Actual: {'type': 'info', 'message': 'Success'}, Expected: {'type': 'info'}, Score: 1.0",
        }),
    );
}

// ---------------------------------------------------------------------------
// Seeds: the weather_tools sample (tool-call evaluators document, §1.7–1.8)
// ---------------------------------------------------------------------------

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

const TOKYO_OUTPUTS: &str = r#"{"toolOutputs": [
    {"name": "get_temperature", "output": "{'temperature': 25.0, 'unit': 'fahrenheit'}"},
    {"name": "get_weather_condition", "output": "{'condition': 'cloudy'}"},
    {"name": "get_humidity", "output": "{'humidity': 65}"},
    {"name": "get_forecast", "output": "{'forecast': 'Overcast with mild temperatures'}"}
]}"#;

#[test]
fn seed_sample_tokyo_forecast_scores_one_on_every_evaluator() {
    let calls = weather_trace("Tokyo", "get_forecast");
    let count = score_count(
        &calls,
        r#"{"toolCallsCount": {"get_temperature": ["=", 1], "get_weather_condition": ["=", 1],
                               "get_humidity": ["=", 1], "get_forecast": ["=", 1]}}"#,
    );
    assert_score(&count, 1.0);
    let args = score_args(
        &calls,
        &args_criteria(&[
            ("get_temperature", r#"{"city": "Tokyo"}"#),
            ("get_weather_condition", r#"{"city": "Tokyo"}"#),
            ("get_humidity", r#"{"city": "Tokyo"}"#),
            ("get_forecast", r#"{"city": "Tokyo"}"#),
        ]),
    );
    assert_score(&args, 1.0);

    // The details of the real `uipath eval --output-file` run (§1.7).
    let names = [
        "get_temperature",
        "get_weather_condition",
        "get_humidity",
        "get_forecast",
    ];
    let order = score_order(&calls, &names);
    assert_score(&order, 1.0);
    assert_details(
        &order,
        json!({
            "expected": "['get_temperature', 'get_weather_condition', 'get_humidity', 'get_forecast']",
            "actual": "['get_temperature', 'get_weather_condition', 'get_humidity', 'get_forecast']",
            "lcs": ["get_temperature", "get_weather_condition", "get_humidity", "get_forecast"],
        }),
    );
    let outputs = score_outputs(&calls, TOKYO_OUTPUTS);
    assert_score(&outputs, 1.0);
    let list = "[ToolOutput(name='get_temperature', output=\"{'temperature': 25.0, 'unit': 'fahrenheit'}\", id=None), \
                ToolOutput(name='get_weather_condition', output=\"{'condition': 'cloudy'}\", id=None), \
                ToolOutput(name='get_humidity', output=\"{'humidity': 65}\", id=None), \
                ToolOutput(name='get_forecast', output=\"{'forecast': 'Overcast with mild temperatures'}\", id=None)]";
    assert_details(
        &outputs,
        json!({
            "expected": list,
            "actual": list,
            "explained_tool_calls_outputs": {
                "get_temperature_0": "Actual: {'temperature': 25.0, 'unit': 'fahrenheit'}, Expected: {'temperature': 25.0, 'unit': 'fahrenheit'}, Score: 1.0",
                "get_weather_condition_0": "Actual: {'condition': 'cloudy'}, Expected: {'condition': 'cloudy'}, Score: 1.0",
                "get_humidity_0": "Actual: {'humidity': 65}, Expected: {'humidity': 65}, Score: 1.0",
                "get_forecast_0": "Actual: {'forecast': 'Overcast with mild temperatures'}, Expected: {'forecast': 'Overcast with mild temperatures'}, Score: 1.0",
            },
        }),
    );
}

#[test]
fn seed_sample_eval_set_every_item_scores_one() {
    // The sample's default eval set (§1.8): the real CLI run scored 1.0 for
    // every tool-call evaluator on every item.
    for (city, action, tools, output) in [
        (
            "New York",
            "get_weather",
            &["get_temperature", "get_weather_condition", "get_humidity"][..],
            None,
        ),
        (
            "Paris",
            "get_forecast",
            &[
                "get_temperature",
                "get_weather_condition",
                "get_humidity",
                "get_forecast",
            ][..],
            Some((
                "get_forecast",
                "{'forecast': 'Cloudy with a chance of rain in the afternoon'}",
            )),
        ),
        (
            "London",
            "get_alerts",
            &[
                "get_temperature",
                "get_weather_condition",
                "get_humidity",
                "get_weather_alerts",
            ][..],
            Some((
                "get_weather_alerts",
                "{'alerts': ['Heavy rain warning until 6 PM']}",
            )),
        ),
        (
            "Sydney",
            "get_weather",
            &["get_temperature", "get_weather_condition", "get_humidity"][..],
            None,
        ),
    ] {
        let calls = weather_trace(city, action);
        let counts: serde_json::Map<String, Json> = tools
            .iter()
            .map(|t| ((*t).to_owned(), json!(["=", 1])))
            .collect();
        let count = json!({ "toolCallsCount": counts }).to_string();
        assert_score(&score_count(&calls, &count), 1.0);
        assert_score(&score_order(&calls, tools), 1.0);
        let city_args = json!({ "city": city }).to_string();
        let expected: Vec<(&str, &str)> = tools.iter().map(|t| (*t, city_args.as_str())).collect();
        assert_score(&score_args(&calls, &args_criteria(&expected)), 1.0);
        if let Some(expected_output) = output {
            assert_score(
                &score_outputs(&calls, &outputs_criteria(&[expected_output])),
                1.0,
            );
        }
    }
}

#[test]
fn seed_sample_content_wrapper_pattern() {
    let calls = with_outputs(&[(
        "get_temperature",
        r#"{"content": {"temperature": 72.5, "unit": "fahrenheit"}}"#,
    )]);
    assert_eq!(
        calls[0].output,
        "{'temperature': 72.5, 'unit': 'fahrenheit'}"
    );
}

#[test]
fn seed_sample_args_exact_mode_still_accepts_extra_args() {
    // The sample says `subset: false` means "Args must match exactly"; the
    // reference ignores `subset` (row 23).
    let calls = with_args(&[("get_temperature", r#"{"city": "Tokyo", "units": "metric"}"#)]);
    let criteria = args_criteria(&[("get_temperature", r#"{"city": "Tokyo"}"#)]);
    assert_score(&score_args_with(&calls, false, false, &criteria), 1.0);
}

// ---------------------------------------------------------------------------
// Seeds: deepeval's ToolCorrectnessMetric documentation
// ---------------------------------------------------------------------------

#[test]
fn seed_deepeval_doc_usage_example() {
    let o = score_deepeval(
        deepeval_default(),
        &named(&["WebSearch", "ToolQuery"]),
        &expected_tools(&["WebSearch"]),
    );
    assert_close(&o, 1.0);
    assert_eq!((o.passed, o.threshold), (Some(true), Some(0.5)));
}

#[test]
fn seed_deepeval_doc_ordering_example_is_two_thirds_not_correct() {
    let o = score_deepeval(
        deepeval_ordering(),
        &named(&["WebSearch", "WebSearch", "ToolQuery"]),
        &expected_tools(&["WebSearch", "ToolQuery", "WebSearch"]),
    );
    assert_close(&o, 0.6666666666666666);
}

#[test]
fn seed_deepeval_doc_denominator_is_expected_tools_not_tools_called() {
    let o = score_deepeval(
        deepeval_default(),
        &named(&["a", "b", "c"]),
        &expected_tools(&["a"]),
    );
    assert_close(&o, 1.0);
    let o = score_deepeval(
        deepeval_default(),
        &named(&["a"]),
        &expected_tools(&["a", "b", "c", "d"]),
    );
    assert_close(&o, 0.25);
}

#[test]
fn seed_deepeval_doc_input_parameters_give_a_percentage() {
    let o = score_deepeval(
        deepeval_params(),
        &with_args(&[("WebSearch", r#"{"query": "shoes", "limit": 5}"#)]),
        r#"{"expectedTools": [{"name": "WebSearch", "inputParameters": {"query": "shoes", "limit": 10}}]}"#,
    );
    assert_close(&o, 0.5);
}

#[test]
fn seed_deepeval_doc_exact_match_overrides_ordering() {
    let cfg = DeepevalConfig {
        should_consider_ordering: true,
        should_exact_match: true,
        ..DeepevalConfig::default()
    };
    let o = score_deepeval(
        cfg,
        &named(&["WebSearch", "WebSearch", "ToolQuery"]),
        &expected_tools(&["WebSearch", "ToolQuery", "WebSearch"]),
    );
    assert_close(&o, 0.0);
}

#[test]
fn seed_deepeval_doc_strict_mode_is_binary_with_threshold_one() {
    let strict = DeepevalConfig {
        strict_mode: true,
        ..DeepevalConfig::default()
    };
    let o = score_deepeval(
        strict,
        &named(&["WebSearch"]),
        &expected_tools(&["WebSearch", "ToolQuery"]),
    );
    assert_eq!(
        (o.score, o.score_is_int, o.passed),
        (Some(0.0), true, Some(false))
    );
    assert_eq!(o.threshold, Some(1.0));
}

#[test]
fn seed_deepeval_doc_output_param_requires_equal_outputs() {
    let cfg = DeepevalConfig {
        output: true,
        ..DeepevalConfig::default()
    };
    let calls = with_outputs(&[("WebSearch", "found")]);
    let equal = r#"{"expectedTools": [{"name": "WebSearch", "output": "found"}]}"#;
    assert_close(&score_deepeval(cfg.clone(), &calls, equal), 1.0);
    let different = r#"{"expectedTools": [{"name": "WebSearch", "output": "lost"}]}"#;
    assert_close(&score_deepeval(cfg, &calls, different), 0.0);
}

proptest::proptest! {
    /// The output evaluator writes its justification as text: it must be
    /// exactly what `serde_json` writes for the value it stands for, escapes
    /// and key order included (the store keeps it as is, and the API, CLI
    /// and exporter read it as that value).
    #[test]
    fn output_details_text_is_what_serde_json_writes(
        calls in proptest::collection::vec((r#"[ab"\\\n\x01é_1]{0,3}"#, r#"[xy"\\\t\x1fü]{0,3}"#), 1..6),
        expected in proptest::collection::vec((r#"[ab"\\\n\x01é_1]{0,3}"#, r#"[xy"\\\t\x1fü]{0,3}"#), 1..6),
        strict in proptest::bool::ANY,
    ) {
        let calls: Vec<(&str, &str)> = calls.iter().map(|(n, o)| (n.as_str(), o.as_str())).collect();
        let expected: Vec<(&str, &str)> = expected.iter().map(|(n, o)| (n.as_str(), o.as_str())).collect();
        let calls = with_outputs(&calls);
        let criteria = outputs_criteria(&expected);
        let o = if strict { score_outputs_strict(&calls, &criteria) } else { score_outputs(&calls, &criteria) };
        let oracle = output_explained_oracle(&calls, &expected, strict);
        let OutcomeDetails::Text(text) = &o.details else {
            return Err(proptest::test_runner::TestCaseError::fail(format!("not text: {}", o.details)));
        };
        let value: Json = serde_json::from_str(text).map_err(|e| {
            proptest::test_runner::TestCaseError::fail(format!("{e}: {text}"))
        })?;
        proptest::prop_assert_eq!(&serde_json::to_string(&value).unwrap_or_default(), text);
        if let Some(explained) = oracle {
            // As text: `Map`'s equality ignores key order.
            proptest::prop_assert_eq!(
                serde_json::to_string(&value["explained_tool_calls_outputs"]).unwrap_or_default(),
                serde_json::to_string(&explained).unwrap_or_default()
            );
        }
    }
}

proptest::proptest! {
    /// The grouped lookup the args and output evaluators use yields exactly
    /// the calls the reference's rule (`call_matches`) accepts, in call
    /// order: ids and names, raw and sanitised, mixed.
    #[test]
    fn grouped_matching_is_the_reference_rule_in_call_order(
        calls in proptest::collection::vec(("[ab _.]{0,3}", proptest::option::of("[ab_]{0,2}")), 0..12),
        expected in proptest::collection::vec(("[ab _.]{0,3}", proptest::option::of("[ab_]{0,2}")), 1..6),
    ) {
        let mut tool_calls = named(&calls.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>());
        for (call, (_, id)) in tool_calls.iter_mut().zip(&calls) {
            call.id.clone_from(id);
        }
        let matcher = common::Matcher::new(&tool_calls);
        let groups = matcher.groups();
        for (name, id) in &expected {
            let grouped: Vec<usize> = groups.matching(matcher.expected(name, id.as_deref())).collect();
            let scanned: Vec<usize> = (0..tool_calls.len())
                .filter(|&i| common::call_matches(&tool_calls[i], name, id.as_deref()))
                .collect();
            proptest::prop_assert_eq!(grouped, scanned, "expected {:?} {:?}", name, id);
        }
    }
}

proptest::proptest! {
    /// The count, order and args evaluators write their justification as
    /// text too: it must be exactly what `serde_json` writes for its value,
    /// with names and arguments that need escaping.
    #[test]
    fn uipath_details_text_is_what_serde_json_writes(
        calls in proptest::collection::vec((r#"[ab"\\\n\x01é_ 1]{0,3}"#, r#"[xy"\\\t\x1fü']{0,3}"#), 0..6),
        expected in proptest::collection::vec((r#"[ab"\\\n\x01é_ 1]{0,3}"#, r#"[xy"\\\t\x1fü']{0,3}"#, 0i64..3), 0..6),
        strict in proptest::bool::ANY,
    ) {
        let inputs: Vec<(&str, String)> = calls
            .iter()
            .map(|(n, v)| (n.as_str(), json!({"k": v}).to_string()))
            .collect();
        let inputs: Vec<(&str, &str)> = inputs.iter().map(|(n, i)| (*n, i.as_str())).collect();
        let calls = with_args(&inputs);
        let count = json!({"toolCallsCount": expected.iter().map(|(n, _, c)| (n.clone(), json!(["=", c]))).collect::<serde_json::Map<_, _>>()});
        let order = json!({"toolCallsOrder": expected.iter().map(|(n, _, _)| n).collect::<Vec<_>>()});
        let args = json!({"toolCalls": expected.iter().map(|(n, v, _)| json!({"name": n, "args": {"k": v}})).collect::<Vec<_>>()});
        for (kind, config, criteria) in [
            (EvaluatorType::Count, Config::Count { strict }, count),
            (EvaluatorType::Order, Config::Order { strict }, order),
            (EvaluatorType::Args, Config::Args { strict, subset: false }, args),
        ] {
            let o = run(kind, config, &calls, &criteria.to_string());
            let OutcomeDetails::Text(text) = &o.details else {
                return Err(proptest::test_runner::TestCaseError::fail(format!("{kind:?}: not text: {}", o.details)));
            };
            let value: Json = serde_json::from_str(text).map_err(|e| {
                proptest::test_runner::TestCaseError::fail(format!("{kind:?}: {e}: {text}"))
            })?;
            proptest::prop_assert_eq!(&serde_json::to_string(&value).unwrap_or_default(), text, "{:?}", kind);
        }
    }
}

/// A count criteria object with a repeated key (not possible from JSON,
/// whose loader keeps one of each): the reference's dict keeps the key's
/// first place and its last line.
#[test]
fn count_explains_a_repeated_key_once_in_its_first_place() {
    let criteria = super::count::CountCriteria {
        entries: vec![
            ("a".into(), "=".into(), pyvalue::Int::Small(1)),
            ("b".into(), "=".into(), pyvalue::Int::Small(1)),
            ("a".into(), "=".into(), pyvalue::Int::Small(2)),
        ],
    };
    let o = super::count::evaluate(&named(&["a", "b", "a"]), &criteria, false);
    assert_detail(
        &o,
        "explained_tool_calls_count",
        json!({"a": "Actual: 2, Expected: 2, Score: 1.0", "b": "Actual: 1, Expected: 1, Score: 1.0"}),
    );
    assert_close(&o, 2.0 / 3.0);
}

/// Many attempts (an expected output tried against every call of its name)
/// take the output evaluator's other writer, from pieces escaped once into
/// an allocation of the computed length: 12 calls of one name against 12
/// expected outputs that match none of them, then one that matches the
/// first, give 145 attempts, with counters into three digits.
#[test]
fn output_details_with_many_attempts_are_the_oracles_text() {
    let calls: Vec<(&str, &str)> = (0..12).map(|_| ("a \"q\"", "x\n")).collect();
    let mut expected: Vec<(&str, &str)> = (0..12).map(|_| ("a \"q\"", "y\t")).collect();
    expected.push(("a \"q\"", "x\n"));
    let tool_calls = with_outputs(&calls);
    let o = score_outputs(&tool_calls, &outputs_criteria(&expected));
    assert_close(&o, 1.0 / 13.0);
    let OutcomeDetails::Text(text) = &o.details else {
        panic!("not text: {}", o.details);
    };
    let value: Json = serde_json::from_str(text).unwrap();
    assert_eq!(&serde_json::to_string(&value).unwrap(), text);
    let explained = &value["explained_tool_calls_outputs"];
    assert_eq!(explained.as_object().map(|m| m.len()), Some(145));
    assert_eq!(
        serde_json::to_string(explained).unwrap(),
        serde_json::to_string(&output_explained_oracle(&tool_calls, &expected, false).unwrap())
            .unwrap()
    );
    assert_eq!(
        explained["a \"q\"_144"],
        json!("Actual: x\n, Expected: x\n, Score: 1.0")
    );
}

/// The output evaluator's explained attempts as the code before the text
/// path built them (a `serde_json` map), or `None` where the evaluator
/// returns early instead (no calls or no expected outputs; strict mode).
fn output_explained_oracle(
    calls: &[ToolCall],
    expected: &[(&str, &str)],
    strict: bool,
) -> Option<Json> {
    if calls.is_empty() || expected.is_empty() {
        return None;
    }
    let matcher = common::Matcher::new(calls);
    let (ids, names) = common::name_ids(calls);
    let mut consumed = vec![false; calls.len()];
    let mut attempts = vec![0usize; names];
    let mut explained = serde_json::Map::new();
    for (name, want) in expected {
        let key = matcher.expected(name, None);
        let mut found = false;
        for (idx, call_key) in matcher.calls.iter().enumerate() {
            if consumed[idx] || !call_key.matches(key) {
                continue;
            }
            let n = &mut attempts[ids[idx] as usize];
            let entry = common::attempt_key(&calls[idx].name, *n);
            *n += 1;
            let ok = calls[idx].output == *want;
            if strict && !ok {
                return None;
            }
            explained.insert(
                entry,
                Json::String(common::attempt_line(&calls[idx].output, want, ok)),
            );
            if ok {
                consumed[idx] = true;
                found = true;
                break;
            }
        }
        if strict && !found {
            return None;
        }
    }
    Some(Json::Object(explained))
}

/// A recognised library that captured no content: the evaluators reading
/// arguments or outputs say so (skipped, with the reason), the ones reading
/// names score as always; spans read by the reference's rules never are
/// (their absent content scores as the reference scores it).
#[test]
fn content_a_library_did_not_capture_is_skipped_with_the_reason() {
    let mut genai = span(
        "execute_tool get_weather",
        100,
        &[
            ("gen_ai.operation.name", text("execute_tool")),
            ("gen_ai.tool.name", text("get_weather")),
        ],
    );
    genai.scope_name = Some(std::sync::Arc::from("opentelemetry.util.genai.handler"));
    let keep = std::sync::Arc::new(ExtractConfig::default().keep([]));
    let records = crate::record::Records::from_spans(std::slice::from_ref(&genai), &keep);
    let spans = records.traces(&keep).unwrap().into_values().next().unwrap();
    let calls = extract::extract(&spans, &ExtractConfig::default());
    assert_eq!(calls.len(), 1);
    assert!(calls[0].content_missing && !calls[0].content_captured);

    let args = Evaluator::with_defaults("args", EvaluatorType::Args);
    let criteria = args
        .parse_criteria(&py(
            r#"{"toolCalls": [{"name": "get_weather", "args": {"city": "Paris"}}]}"#,
        ))
        .unwrap();
    let outcome = args.evaluate(&calls, &criteria);
    assert_eq!(outcome.status, Status::Skipped);
    assert_eq!(outcome.score, None);
    let why = outcome.error.as_deref().unwrap_or_default();
    assert!(
        why.contains("arguments") && why.contains("get_weather"),
        "{why}"
    );

    let count = Evaluator::with_defaults("count", EvaluatorType::Count);
    let c = count
        .parse_criteria(&py(r#"{"toolCallsCount": {"get_weather": ["=", 1]}}"#))
        .unwrap();
    assert_eq!(count.evaluate(&calls, &c).score, Some(1.0));

    // The reference's spans without content: scored as the reference does.
    let reference = named(&["get_weather"]);
    assert!(!reference[0].content_missing && !reference[0].content_captured);
    assert_eq!(args.evaluate(&reference, &criteria).status, Status::Ok);
}

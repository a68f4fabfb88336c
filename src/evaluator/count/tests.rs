//! The count evaluator: SEMANTICS §4 rows 1–12 and its documentation's examples.

use serde_json::json;

use crate::evaluator::tests::{
    assert_close, assert_detail, assert_details, assert_refused, assert_score, assert_thrown,
    calls_of, named, outputs_criteria, score_count, score_count_strict, score_order, score_outputs,
    span, text, tool,
};
use crate::pyvalue;

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

/// A count criteria object with a repeated key (not possible from JSON,
/// whose loader keeps one of each): the reference's dict keeps the key's
/// first place and its last line.
#[test]
fn count_explains_a_repeated_key_once_in_its_first_place() {
    let criteria = super::CountCriteria {
        entries: vec![
            ("a".into(), "=".into(), pyvalue::Int::Small(1)),
            ("b".into(), "=".into(), pyvalue::Int::Small(1)),
            ("a".into(), "=".into(), pyvalue::Int::Small(2)),
        ],
    };
    let o = super::evaluate(
        &named(&["a", "b", "a"]),
        &criteria,
        false,
        crate::evaluator::Explain::Yes,
    );
    assert_detail(
        &o,
        "explained_tool_calls_count",
        json!({"a": "Actual: 2, Expected: 2, Score: 1.0", "b": "Actual: 1, Expected: 1, Score: 1.0"}),
    );
    assert_close(&o, 2.0 / 3.0);
}

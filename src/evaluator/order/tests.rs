//! The order evaluator: SEMANTICS §4 rows 13–22 and its documentation's examples.

use serde_json::{Value as Json, json};

use crate::evaluator::tests::{
    assert_detail, assert_details, assert_score, calls_of, named, py, score_order,
    score_order_strict, span, text, tool,
};
use crate::evaluator::{Evaluator, EvaluatorType};
use crate::span::AttrValue;

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

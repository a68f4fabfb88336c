//! Criteria resolved as the reference resolves them: eval-set items with
//! null, empty and absent criteria, and evaluator files' defaults.

use std::path::Path;

use serde_json::json;

use crate::evaluator::tests::{assert_detail, assert_score, named, py, weather_trace};

use super::*;

/// A catalog of the one evaluator file `json` (as `evaluators/order.json`).
fn catalog_of(json: &str) -> Catalog {
    let file = Path::new("evaluators/order.json");
    let evaluator = parse_evaluator_file(&py(json), file).unwrap_or_else(|e| panic!("{e}"));
    let mut catalog = Catalog::default();
    catalog
        .add_evaluator(evaluator, file)
        .unwrap_or_else(|e| panic!("{e}"));
    catalog
}

#[test]
fn row_47_48_eval_set_items_resolve_null_empty_and_absent_criteria() {
    let catalog = catalog_of(
        r#"{"version": "1.0", "id": "Order", "evaluatorTypeId": "uipath-tool-call-order",
            "evaluatorConfig": {"defaultEvaluationCriteria": {"toolCallsOrder": ["a", "b"]}}}"#,
    );
    let set = parse_eval_set(
        &py(
            r#"{"version": "1.0", "id": "set", "evaluatorRefs": ["Order"], "evaluations": [
                {"id": "null", "evaluationCriterias": {"Order": null}},
                {"id": "empty", "evaluationCriterias": {"Order": {}}},
                {"id": "own", "evaluationCriterias": {"Order": {"toolCallsOrder": ["a"]}}},
                {"id": "absent", "evaluationCriterias": {}}
            ]}"#,
        ),
        Path::new("eval-sets/set.json"),
        &catalog,
    )
    .unwrap_or_else(|e| panic!("{e}"));

    let calls = named(&["a"]);
    let score_of = |i: usize| {
        let item = &set.items[i].evaluators[0];
        item.evaluator.evaluate(&calls, &item.criteria)
    };
    assert_score(&score_of(0), 0.5); // null → default ["a", "b"]
    assert_score(&score_of(1), 0.5); // {} → default
    assert_score(&score_of(2), 1.0); // own criteria
    assert!(
        set.items[3].evaluators.is_empty(),
        "no key: the evaluator is skipped"
    );
}

#[test]
fn row_47_eval_set_null_criteria_without_default_is_refused() {
    let catalog = catalog_of(
        r#"{"version": "1.0", "id": "Order", "evaluatorTypeId": "uipath-tool-call-order"}"#,
    );
    let err = parse_eval_set(
        &py(
            r#"{"version": "1.0", "id": "set", "evaluatorRefs": ["Order"], "evaluations": [
                {"id": "null", "evaluationCriterias": {"Order": null}}
            ]}"#,
        ),
        Path::new("eval-sets/set.json"),
        &catalog,
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(
        err.contains("Python.NO_EVALUATION_CRITERIA_PROVIDED"),
        "{err:?}"
    );
}

#[test]
fn seed_sample_default_order_criteria_is_an_empty_list() {
    let evaluator_file = Path::new("evaluators/tool-call-order.json");
    let loaded = parse_evaluator_file(
        &py(r#"{"version": "1.0", "id": "ToolCallOrderEvaluator",
                "description": "Evaluates if tools were called in the correct sequence.",
                "evaluatorTypeId": "uipath-tool-call-order",
                "evaluatorConfig": {"name": "ToolCallOrderEvaluator", "strict": false,
                                    "defaultEvaluationCriteria": {"toolCallsOrder": []}}}"#),
        evaluator_file,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let LoadedEvaluator::Supported(ev) = loaded else {
        panic!("the order evaluator is supported");
    };
    let o = ev.evaluate_value(&weather_trace("Tokyo", "get_forecast"), None);
    assert_score(&o, 0.0);
    assert_detail(&o, "lcs", json!([]));
}

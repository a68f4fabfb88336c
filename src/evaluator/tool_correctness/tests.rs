//! deepeval's ToolCorrectnessMetric: §4 rows 49–64 and its documentation's examples.

use serde_json::{Value as Json, json};

use super::DeepevalConfig;
use crate::evaluator::tests::{
    assert_close, assert_refused, calls_of, named, py_dict, run, span, text, with_args,
    with_outputs,
};
use crate::evaluator::{Config, Evaluator, EvaluatorType, Outcome, Status, parse_config};
use crate::extract::ToolCall;
use crate::span::AttrValue;

// ---------------------------------------------------------------------------
// deepeval's criteria, configs and reasons
// ---------------------------------------------------------------------------

/// `{"expectedTools": [{"name"}…]}`.
fn expected_tools(names: &[&str]) -> String {
    let items: Vec<Json> = names.iter().map(|n| json!({ "name": n })).collect();
    json!({ "expectedTools": items }).to_string()
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

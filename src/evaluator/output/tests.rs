//! The output evaluator: §4 rows 35–46, the §1.2 output rule and its details text.

use serde_json::{Value as Json, json};

use crate::evaluator::OutcomeDetails;
use crate::evaluator::common;
use crate::evaluator::tests::{
    assert_close, assert_detail, assert_details, assert_refused, assert_score, calls_of,
    output_text, outputs_criteria, score_outputs, score_outputs_strict, span, text, with_outputs,
};
use crate::extract::ToolCall;
use crate::span::AttrValue;

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
// Seeds: the weather_tools sample (tool-call evaluators document, §1.7–1.8)
// ---------------------------------------------------------------------------

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

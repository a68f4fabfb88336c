//! The args evaluator: §4 rows 23–34, the §1.2 argument rule, its documentation's examples.

use serde_json::json;

use crate::evaluator::Status;
use crate::evaluator::tests::{
    args_criteria, assert_detail, assert_details, assert_refused, assert_score, assert_thrown,
    calls_of, parse_args, score_args, score_args_with, span, text, tool, with_args,
};
use crate::extract::{Args, ArgsFormat};
use crate::pyvalue::Value;
use crate::span::AttrValue;

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

#[test]
fn seed_sample_args_exact_mode_still_accepts_extra_args() {
    // The sample says `subset: false` means "Args must match exactly"; the
    // reference ignores `subset` (row 23).
    let calls = with_args(&[("get_temperature", r#"{"city": "Tokyo", "units": "metric"}"#)]);
    let criteria = args_criteria(&[("get_temperature", r#"{"city": "Tokyo"}"#)]);
    assert_score(&score_args_with(&calls, false, false, &criteria), 1.0);
}

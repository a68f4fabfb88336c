//! The `Evaluator` itself: criteria, thresholds, config, uncaptured content, the sample.

use super::*;

use serde_json::json;

use crate::evaluator::tests::{
    args_criteria, assert_detail, assert_details, assert_refused, assert_score, named,
    outputs_criteria, py, py_dict, run, score_args, score_count, score_order, score_outputs, span,
    text, weather_trace, with_args,
};
use crate::extract::{self, ExtractConfig};

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

#[test]
fn row_63_deepeval_available_tools_need_a_model() {
    // Row 63: a non-empty `available_tools` asks an LLM (src/llm/deepeval.rs);
    // an empty or null one means no LLM call.
    let result = parse_config(
        EvaluatorType::ToolCorrectness,
        &py_dict(r#"{"available_tools": [{"name": "a"}]}"#),
        "config",
    );
    match result {
        Ok(Config::ToolCorrectness(cfg)) => {
            assert_eq!(
                Config::ToolCorrectness(cfg).judged(),
                kind::Judged::Yes { asks: true }
            )
        }
        other => panic!("{other:?}"),
    }
    for config in [r#"{"available_tools": []}"#, r#"{"available_tools": null}"#] {
        match parse_config(EvaluatorType::ToolCorrectness, &py_dict(config), "config") {
            Ok(Config::ToolCorrectness(cfg)) => {
                assert_ne!(
                    Config::ToolCorrectness(cfg).judged(),
                    kind::Judged::Yes { asks: true },
                    "{config}"
                )
            }
            other => panic!("{config}: {other:?}"),
        }
    }
}

// ---------------------------------------------------------------------------
// Seeds: the weather_tools sample (tool-call evaluators document, §1.7–1.8)
// ---------------------------------------------------------------------------

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
            (EvaluatorType::Count, Config::Count(Strict { strict }), count),
            (EvaluatorType::Order, Config::Order(Strict { strict }), order),
            (EvaluatorType::Args, Config::Args(ArgsConfig { strict, subset: false }), args),
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

/// A config flag that is not a boolean is refused at its key path, for
/// each UiPath tool-call kind, with pydantic's message; an absent one is
/// `false`.
#[test]
fn a_config_flag_that_is_not_a_boolean_names_its_key() {
    for (kind, key) in [
        (EvaluatorType::Count, "strict"),
        (EvaluatorType::Order, "strict"),
        (EvaluatorType::Args, "strict"),
        (EvaluatorType::Args, "subset"),
        (EvaluatorType::Output, "strict"),
    ] {
        let config = py_dict(&format!(r#"{{"{key}": "maybe"}}"#));
        let err = parse_config(kind, &config, "evaluatorConfig").unwrap_err();
        assert_eq!(err.path, format!("evaluatorConfig.{key}"), "{kind:?}");
        assert_eq!(err.message, "Input should be a valid boolean, got 'maybe'");
        assert_eq!(
            parse_config(kind, &py_dict("{}"), "evaluatorConfig").ok(),
            Some(default_config(kind))
        );
    }
    assert_eq!(
        parse_config(EvaluatorType::Args, &py_dict(r#"{"subset": "yes"}"#), "c").ok(),
        Some(Config::Args(ArgsConfig {
            strict: false,
            subset: true
        }))
    );
}

//! The uipath LLM-judge evaluators against the LLM conformance cases
//! (`../shared/conformance/llm/cases.jsonl`): the requests sent (in order,
//! headers and body key order included), the score, the details and the
//! error, each exactly as the reference produced them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::llm::{LlmCase, Replay, STUB_PORT, check_outcome, compare_requests, load_cases};

use toolscore::evaluator::judged::uipath::{self, Discovery, Kind};
use toolscore::evaluator::judged::{Endpoint, TraceView, root_span};
use toolscore::extract::{ExtractConfig, extract};
use toolscore::pyvalue::Value;

fn endpoint() -> Endpoint {
    Endpoint {
        base_url: format!("http://127.0.0.1:{STUB_PORT}/org/tenant"),
        token: "stub-token".into(),
        action_id: None,
    }
}

/// Runs one case against its replayed script; `Err` says what differed.
async fn run(case: &LlmCase, kind: Kind) -> Result<(), String> {
    let config = case
        .case
        .config
        .as_dict()
        .ok_or("the case's config is not an object")?;
    let cfg = uipath::parse_config(kind, config, "evaluatorConfig").map_err(|e| e.to_string())?;
    let criteria = match &case.case.criteria {
        Value::None => None,
        v => Some(v),
    };
    let spans = toolscore::record::Spans::from_spans(&case.spans());
    let root = root_span(&spans);
    let calls = extract(&spans, &ExtractConfig::default());
    let trace = TraceView {
        spans: &spans,
        calls: &calls,
        input: root.and_then(|r| r.attr("input.value")),
        output: root.and_then(|r| r.attr("output.value")),
    };
    let replay = Replay::new(case.script());
    let outcome = uipath::evaluate(
        &replay,
        &endpoint(),
        &Discovery::new(),
        kind,
        &cfg,
        criteria,
        trace,
        &case.simulation_instructions(),
    )
    .await;
    let expected = case.expected();
    compare_requests(&expected["requests"], &replay.sent())?;
    check_outcome(case, &outcome)
}

#[tokio::test(start_paused = true)]
async fn uipath_llm_judge_cases() {
    let cases = load_cases();
    let mut failures = Vec::new();
    let mut ran = 0;
    for case in &cases {
        let Some(kind) = Kind::parse(&case.case.evaluator_type) else {
            continue;
        };
        ran += 1;
        if let Err(e) = run(case, kind).await {
            failures.push(format!("{}: {e}", case.id()));
        }
    }
    assert!(ran >= 31, "only {ran} uipath cases found");
    assert!(
        failures.is_empty(),
        "{} of {ran} uipath cases failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// A 503 is retried up to five attempts in all, then reported. (`Retry-After: 0`
/// keeps the test from waiting: the backoff itself is unit-tested.)
#[tokio::test(start_paused = true)]
async fn retries_then_give_up() {
    let error = serde_json::json!({"status": 503, "body": {"error": "busy"}, "headers": {"Retry-After": "0"}});
    let script = serde_json::json!({
        "responses": [error, error, error, error, error, error],
        "discovery": [],
    });
    let replay = Replay::new(&script);
    let cfg = uipath::parse_config(
        Kind::OutputSemanticSimilarity,
        toolscore::pyvalue::json::loads(r#"{"model": "gpt-4.1"}"#)
            .unwrap()
            .as_dict()
            .unwrap(),
        "",
    )
    .unwrap();
    let criteria = toolscore::pyvalue::json::loads(r#"{"expectedOutput": "x"}"#).unwrap();
    let outcome = uipath::evaluate(
        &replay,
        &endpoint(),
        &Discovery::new(),
        Kind::OutputSemanticSimilarity,
        &cfg,
        Some(&criteria),
        TraceView {
            spans: &toolscore::record::Spans::from_spans(&[]),
            calls: &[],
            input: None,
            output: None,
        },
        "",
    )
    .await;
    let sent = replay.sent();
    assert_eq!(sent.len(), 6, "one discovery GET and five POSTs");
    let error = outcome.error.unwrap();
    assert!(
        error.starts_with("Exception thrown by evaluator: Model: gpt-4.1, Error: EnrichedException: \nRequest URL: http://127.0.0.1:{STUB_PORT}/org/tenant/agenthub_/llm/api/chat/completions?api-version=2024-08-01-preview\nHTTP Method: POST\nStatus Code: 503\n"),
        "{error}"
    );
}

/// The discovery reply is fetched once per cache, and its
/// `shouldSkipTemperature` drops the temperature.
#[tokio::test(start_paused = true)]
async fn discovery_is_cached_and_drops_temperature() {
    let ok = serde_json::json!({"status": 200, "body": {
        "id": "c", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": [
            {"id": "t", "name": "submit_evaluation", "arguments": {"justification": "j", "score": 87.456}}]}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}});
    let script = serde_json::json!({
        "responses": [ok, ok],
        "discovery": [{"modelName": "m", "modelDetails": {"shouldSkipTemperature": true}}],
    });
    let replay = Replay::new(&script);
    let discovery = Discovery::new();
    let cfg = uipath::parse_config(
        Kind::TrajectorySimilarity,
        toolscore::pyvalue::json::loads(r#"{"model": "m", "temperature": 0.5}"#)
            .unwrap()
            .as_dict()
            .unwrap(),
        "",
    )
    .unwrap();
    let criteria = toolscore::pyvalue::json::loads(r#"{"expectedAgentBehavior": "b"}"#).unwrap();
    for _ in 0..2 {
        let outcome = uipath::evaluate(
            &replay,
            &endpoint(),
            &discovery,
            Kind::TrajectorySimilarity,
            &cfg,
            Some(&criteria),
            TraceView {
                spans: &toolscore::record::Spans::from_spans(&[]),
                calls: &[],
                input: None,
                output: None,
            },
            "",
        )
        .await;
        assert_eq!(outcome.score, Some(0.87));
    }
    let sent = replay.sent();
    let methods: Vec<&str> = sent.iter().map(|r| r.method.as_str()).collect();
    assert_eq!(methods, ["GET", "POST", "POST"]);
    assert!(sent[1].body.get("temperature").is_none());
    assert_eq!(sent[1].body["max_tokens"], 4096);
}

/// Errors raised before `evaluate()` send nothing and carry no score.
#[tokio::test(start_paused = true)]
async fn errors_before_evaluate() {
    let loads = |s: &str| toolscore::pyvalue::json::loads(s).unwrap();
    let empty = TraceView {
        spans: &toolscore::record::Spans::from_spans(&[]),
        calls: &[],
        input: None,
        output: None,
    };
    let cfg_for =
        |kind, json: &str| uipath::parse_config(kind, loads(json).as_dict().unwrap(), "").unwrap();
    let replay = Replay::new(&serde_json::json!({"responses": []}));
    let kind = Kind::OutputStrictJsonSimilarity;
    let cfg = cfg_for(kind, r#"{"model": "o3-mini"}"#);
    let missing = uipath::evaluate(
        &replay,
        &endpoint(),
        &Discovery::new(),
        kind,
        &cfg,
        None,
        empty,
        "",
    )
    .await;
    assert_eq!(
        missing.error.as_deref(),
        Some(
            "Python.MISSING_EVALUATION_CRITERIA: No evaluation criteria provided: Evaluation criteria must be provided either in the request or as default in config"
        )
    );
    assert_eq!(missing.score, None);
    let bad = loads(r#"{"expectedOutput": [1]}"#);
    let invalid = uipath::evaluate(
        &replay,
        &endpoint(),
        &Discovery::new(),
        kind,
        &cfg,
        Some(&bad),
        empty,
        "",
    )
    .await;
    assert!(
        invalid.error.as_deref().unwrap().starts_with(
            "Python.CANNOT_VALIDATE_EVALUATION_CRITERIA: Cannot validate <class 'dict'> to <class 'uipath.eval.evaluators.output_evaluator.OutputEvaluationCriteria'>: Error: 2 validation errors for OutputEvaluationCriteria\nexpectedOutput.dict[str,any]\n"
        ),
        "{:?}",
        invalid.error
    );
    assert!(replay.sent().is_empty());
}

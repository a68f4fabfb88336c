//! deepeval 4.3.1: ToolCorrectnessMetric with `available_tools`, the
//! LLM-judged tool selection (`conformance/llm/README.md` §1).
//!
//! `measure()` in order: the judge model is built (temperature checked), the
//! test case is checked (multimodal input needs a multimodal model), the
//! deterministic tool-calling score is computed, then, when
//! `available_tools` is non-empty and the input is not multimodal, one chat
//! completion asks for a `ToolSelectionScore`, retried by deepeval's
//! tenacity policy (2 attempts, 1 s × 2ⁿ + up to 2 s of jitter, capped at
//! 5 s, 30 s per attempt). The score is the smaller of the two.
//!
//! Every exception the reference raises becomes an error outcome with its
//! `"ExcType: message"`. After the last attempt of a retried failure
//! tenacity raises `RetryError` (the policy has `reraise=False`); its text
//! holds a `Future` address that cannot be reproduced, so a fixed one is
//! written.

use std::time::Duration;

use serde_json::{Map, Value as Json, json};

use super::deepeval_prompt::{self as prompt_mod, is_multimodal};
use super::deepeval_reply::{self as reply, ParsePath, PyErr, Selection};
use super::openai_models::{self, ModelData};
use super::{Endpoint, Method, Reply, Request, Transport};
use crate::evaluator::Outcome;
use crate::evaluator::tool_correctness::{
    self, DeepevalConfig, ExpectedTools, NO_AVAILABLE_TOOLS_REASON,
};
use crate::extract::ToolCall;

/// deepeval's `DEEPEVAL_RETRY_MAX_ATTEMPTS` default.
const MAX_ATTEMPTS: u32 = 2;
/// The per-attempt timeout the recordings were made with.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(30);
/// `wait_exponential_jitter(initial=1, exp_base=2, jitter=2, max=5)`.
const WAIT_INITIAL_S: f64 = 1.0;
const WAIT_JITTER_S: f64 = 2.0;
const WAIT_CAP_S: f64 = 5.0;
/// Stands in for the `Future` address in tenacity's `RetryError` text.
const FUTURE_ADDRESS: &str = "0x7f0000000000";

/// The markers that make `measure()` re-raise any error as
/// `ContextWindowExceededError` (`metrics/indicator.py`).
const CONTEXT_WINDOW_MARKERS: [&str; 9] = [
    "context_length_exceeded",
    "maximum context length",
    "exceeds the context window",
    "contextwindowexceedederror",
    "prompt is too long",
    "input is too long",
    "exceeds the maximum number of tokens",
    "maximum prompt length",
    "exceeded model token limit",
];

/// `ToolCorrectnessMetric(...).measure(LLMTestCase(input, tools_called,
/// expected_tools))`, with the judge reached through `transport`.
pub async fn evaluate<T: Transport>(
    transport: &T,
    endpoint: &Endpoint,
    calls: &[ToolCall],
    criteria: &ExpectedTools,
    cfg: &DeepevalConfig,
    input: &str,
) -> Outcome {
    let model = openai_models::lookup(&cfg.model);
    // OpenAIModel.__init__: models without temperature get 1, then the check.
    let temperature = if model.supports_temperature == Some(false) {
        1.0
    } else {
        cfg.temperature.unwrap_or(0.0)
    };
    if temperature < 0.0 {
        return Outcome::error("DeepEvalError: Temperature must be >= 0.");
    }
    let multimodal = is_multimodal(input);
    if multimodal && model.supports_multimodal != Some(true) {
        return Outcome::error(multimodal_error(&cfg.model));
    }
    let calling = match tool_correctness::tool_calling(calls, criteria, cfg) {
        Ok(c) => c,
        Err(e) => return Outcome::error(e),
    };
    let available = cfg.available_tools.as_deref().filter(|t| !t.is_empty());
    // `evaluation_cost` starts as the int 0 (a native model) and becomes the
    // float sum, or None once a call has no price.
    let mut cost: Option<Json> = Some(json!(0));
    let (score, reason) = match available {
        Some(tools) if !multimodal => {
            let judge = Judge {
                transport,
                endpoint,
                model: &model,
                name: &cfg.model,
                temperature,
            };
            match judge.select(calls, tools, input).await {
                Ok(sel) => {
                    cost = sel
                        .cost
                        .and_then(|c| serde_json::Number::from_f64(c).map(Json::Number));
                    (sel.score, sel.reason)
                }
                Err(e) => return Outcome::error(context_window(e)),
            }
        }
        _ => (1.0, NO_AVAILABLE_TOOLS_REASON.to_owned()),
    };
    let combined = tool_correctness::combine(&calling, score, &reason, cfg);
    let mut details: Map<String, Json> = combined.details();
    details.insert("score_is_int".into(), Json::Bool(combined.score_is_int));
    details.insert(
        "verbose_logs".into(),
        Json::String(tool_correctness::verbose_logs(
            calls, criteria, available, score, &reason,
        )),
    );
    details.insert("evaluation_cost".into(), cost.unwrap_or(Json::Null));
    combined.outcome(details)
}

/// `check_llm_test_case_params`' error for a multimodal input and a model
/// without multimodal support.
fn multimodal_error(model: &str) -> String {
    let names: Vec<&str> = openai_models::multimodal_names().collect();
    format!(
        "ValueError: The evaluation model {model} does not support multimodal evaluations at the moment. Available multi-modal models for the OpenAIModel provider includes {}.",
        names.join(", ")
    )
}

/// An error's text, or `ContextWindowExceededError` when it (or, for a
/// `RetryError`, its last attempt) names a context-window overflow.
fn context_window(e: Failure) -> String {
    let texts = [
        e.error.message.to_lowercase(),
        e.cause
            .map(|c| c.message.to_lowercase())
            .unwrap_or_default(),
    ];
    if texts
        .iter()
        .any(|t| CONTEXT_WINDOW_MARKERS.iter().any(|m| t.contains(m)))
    {
        return "ContextWindowExceededError: Too large to evaluate: the test case or trace exceeds the evaluation model's context window. Evaluate a smaller test case or span, or use a model with a larger context window.".to_owned();
    }
    e.error.text()
}

/// What the selection raised: the exception, and for `RetryError` the last
/// attempt's exception (its `__cause__`).
struct Failure {
    error: PyErr,
    cause: Option<PyErr>,
}

impl From<PyErr> for Failure {
    fn from(error: PyErr) -> Failure {
        Failure { error, cause: None }
    }
}

/// The judge model as `OpenAIModel` holds it.
struct Judge<'a, T> {
    transport: &'a T,
    endpoint: &'a Endpoint,
    model: &'a ModelData,
    name: &'a str,
    temperature: f64,
}

impl<T: Transport> Judge<'_, T> {
    /// `_a_get_tool_selection_score`: the prompt, the call with retries, and
    /// the parsed `ToolSelectionScore`.
    async fn select(
        &self,
        calls: &[ToolCall],
        available: &[tool_correctness::DeepevalTool],
        input: &str,
    ) -> Result<Selection, Failure> {
        let called =
            tool_correctness::tools_called(calls).map_err(|e| PyErr::new("ValidationError", e))?;
        let text = prompt_mod::prompt(input, available, &called);
        let path = if self.model.supports_structured_outputs == Some(true) {
            ParsePath::Structured
        } else if self.model.supports_json == Some(true) {
            ParsePath::JsonMode
        } else {
            ParsePath::Plain
        };
        let mut last = None;
        for attempt in 1..=MAX_ATTEMPTS {
            match self.attempt(path, &text, attempt).await {
                Ok(sel) => return Ok(sel),
                Err(e) if !e.retryable => return Err(e.into()),
                Err(e) => {
                    if attempt < MAX_ATTEMPTS {
                        tokio::time::sleep(retry_wait(attempt)).await;
                    }
                    last = Some(e);
                }
            }
        }
        let cause = last.unwrap_or_else(|| reply::connection_error(false));
        Err(Failure {
            error: PyErr::new(
                "RetryError",
                format!(
                    "RetryError[<Future at {FUTURE_ADDRESS} state=finished raised {}>]",
                    cause.class
                ),
            ),
            cause: Some(cause),
        })
    }

    /// One `a_generate` attempt under the per-attempt timeout.
    async fn attempt(
        &self,
        path: ParsePath,
        prompt: &str,
        attempt: u32,
    ) -> Result<Selection, PyErr> {
        if self.model.requires_audio == Some(true) {
            return Err(PyErr::new(
                "DeepEvalError",
                format!(
                    "{} only accepts requests that include audio. Pass audio, or use a model that also takes text-only requests.",
                    self.name
                ),
            ));
        }
        let content = prompt_mod::content(prompt).map_err(|e| PyErr::new("ValueError", e))?;
        let request = Request {
            attempt,
            ..self.request(path, content)
        };
        let reply = match tokio::time::timeout(ATTEMPT_TIMEOUT, self.transport.send(request)).await
        {
            Ok(r) => r,
            Err(_) => {
                return Err(PyErr {
                    class: "TimeoutError",
                    message: "call timed out after 30s (per attempt). Increase DEEPEVAL_PER_ATTEMPT_TIMEOUT_SECONDS_OVERRIDE (None disables) or reduce work per attempt.".into(),
                    retryable: true,
                });
            }
        };
        match reply {
            Reply::Failed { timed_out, .. } => Err(reply::connection_error(timed_out)),
            Reply::Response { status, body, .. } if !(200..300).contains(&status) => {
                Err(reply::status_error(status, &body))
            }
            ref r @ Reply::Response { ref body, .. } => {
                reply::read_success(path, self.model, r.header("content-type"), body)
            }
        }
    }

    /// The chat-completions request the SDK sends, keys in its order.
    fn request(&self, path: ParsePath, content: Json) -> Request {
        let mut body = Map::new();
        body.insert("model".into(), Json::String(self.name.to_owned()));
        if path != ParsePath::Plain {
            body.insert("stream".into(), Json::Bool(false));
        }
        body.insert(
            "messages".into(),
            json!([{"role": "user", "content": content}]),
        );
        match path {
            ParsePath::Structured => {
                body.insert("response_format".into(), structured_format());
            }
            ParsePath::JsonMode => {
                body.insert("response_format".into(), json!({"type": "json_object"}));
            }
            ParsePath::Plain => {}
        }
        if self.model.supports_temperature != Some(false)
            && let Some(t) = serde_json::Number::from_f64(self.temperature)
        {
            body.insert("temperature".into(), Json::Number(t));
        }
        Request {
            method: Method::Post,
            url: format!("{}/chat/completions", self.endpoint.base_url),
            headers: vec![(
                "Authorization".into(),
                format!("Bearer {}", self.endpoint.token),
            )],
            body: Some(Json::Object(body)),
            attempt: 1,
        }
    }
}

/// `response_format` for `ToolSelectionScore` (the SDK's strict schema).
fn structured_format() -> Json {
    json!({
        "type": "json_schema",
        "json_schema": {
            "schema": {
                "properties": {
                    "score": {"title": "Score", "type": "number"},
                    "reason": {"title": "Reason", "type": "string"}
                },
                "required": ["score", "reason"],
                "title": "ToolSelectionScore",
                "type": "object",
                "additionalProperties": false
            },
            "name": "ToolSelectionScore",
            "strict": true
        }
    })
}

/// tenacity's `wait_exponential_jitter` before retry `attempt`'s successor:
/// `min(initial × 2^(attempt−1) + U(0, jitter), cap)`.
fn retry_wait(attempt: u32) -> Duration {
    let unit = rand::random::<f64>();
    let exp = 2f64.powi(i32::try_from(attempt.saturating_sub(1)).unwrap_or(i32::MAX));
    let secs = (WAIT_INITIAL_S * exp + unit * WAIT_JITTER_S).min(WAIT_CAP_S);
    Duration::from_secs_f64(secs.max(0.0))
}

#[cfg(test)]
mod tests {
    use super::reply::{parse_float_str, strip_trailing_commas, trim_and_load_json, validate};
    use super::*;
    use crate::pyvalue::Value;

    #[test]
    fn trailing_commas_are_stripped_even_inside_strings() {
        assert_eq!(
            strip_trailing_commas(r#"{"a": "x, }y",}"#),
            r#"{"a": "x}y"}"#
        );
        assert_eq!(strip_trailing_commas("[1,\n ]"), "[1]");
        assert_eq!(strip_trailing_commas("[1,,]"), "[1,]");
        assert_eq!(strip_trailing_commas("a, b"), "a, b");
    }

    #[test]
    fn trim_and_load_json_takes_the_braces() {
        let v = trim_and_load_json(&Value::Str(
            "Sure! {\"score\": 1, \"reason\": \"a, }b\",}\n```".into(),
        ));
        let Ok(Value::Dict(d)) = v else {
            panic!("{v:?}")
        };
        assert_eq!(d.get_str("reason").and_then(Value::as_str), Some("a}b"));
        // No closing brace: one is appended.
        assert!(trim_and_load_json(&Value::Str("{\"score\": 1, \"reason\": \"x\"".into())).is_ok());
        let err = trim_and_load_json(&Value::Str("no json".into())).err();
        assert_eq!(err.map(|e| e.class), Some("DeepEvalError"));
        let none = trim_and_load_json(&Value::None).err().map(|e| e.text());
        assert_eq!(
            none.as_deref(),
            Some("AttributeError: 'NoneType' object has no attribute 'find'")
        );
    }

    #[test]
    fn lax_float_validation() {
        assert_eq!(parse_float_str(" 0.8 "), Some(0.8));
        assert_eq!(parse_float_str("1_000.5"), Some(1000.5));
        assert_eq!(parse_float_str("_1"), None);
        assert!(parse_float_str("inf").is_some_and(f64::is_infinite));
        assert_eq!(parse_float_str("high"), None);
        let data = |score: Value| {
            let mut d = crate::pyvalue::Dict::new();
            d.insert_str("score", score);
            d.insert_str("reason", Value::Str("r".into()));
            Value::Dict(d)
        };
        assert_eq!(
            validate(&data(Value::Bool(true)), false).ok(),
            Some((1.0, "r".into()))
        );
        assert_eq!(
            validate(&data(Value::int(2)), false).ok(),
            Some((2.0, "r".into()))
        );
        let err = validate(&data(Value::List(vec![])), false)
            .err()
            .map(|e| e.text());
        assert_eq!(
            err.as_deref(),
            Some(
                "ValidationError: 1 validation error for ToolSelectionScore\nscore\n  Input should be a valid number [type=float_type, input_value=[], input_type=list]\n    For further information visit https://errors.pydantic.dev/2.14/v/float_type"
            )
        );
        let mut only_reason = crate::pyvalue::Dict::new();
        only_reason.insert_str("reason", Value::int(1));
        let err = validate(&Value::Dict(only_reason), true)
            .err()
            .map(|e| e.message);
        assert_eq!(
            err.as_deref(),
            Some(
                "2 validation errors for ToolSelectionScore\nscore\n  Field required [type=missing, input_value={'reason': 1}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing\nreason\n  Input should be a valid string [type=string_type, input_value=1, input_type=int]\n    For further information visit https://errors.pydantic.dev/2.14/v/string_type"
            )
        );
    }

    #[test]
    fn status_errors_and_retries() {
        let e = reply::status_error(400, br#"{"error": {"message": "stub error 400"}}"#);
        assert_eq!(
            e.text(),
            "BadRequestError: Error code: 400 - stub error 400"
        );
        assert!(!e.retryable);
        let e = reply::status_error(599, br#"{"error": "stub: no scripted response left"}"#);
        assert_eq!(e.text(), "InternalServerError: Error code: 599");
        assert!(e.retryable);
        let quota = br#"{"error": {"message": "x", "code": "insufficient_quota"}}"#;
        assert!(!reply::status_error(429, quota).retryable);
        assert!(reply::status_error(429, b"{}").retryable);
        assert!(retry_wait(1) <= Duration::from_secs(3));
    }
}

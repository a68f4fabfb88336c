//! The UiPath LLM gateway as uipath-platform 0.2.x calls it: the model
//! discovery (`platform/chat/_model_capabilities.py`), the normalized chat
//! completion request (`platform/chat/_llm_gateway_service.py` 412–707),
//! and `BaseService.request_async`'s retries (`platform/common/retry.py`).
//!
//! Failures are returned as the text the reference puts after `Error: `
//! (`{ExceptionType}: {str(exception)}`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Map, Value as Json, json};

use super::pynum::{float_from_str, py_strip};
use crate::evaluator::judged::{Endpoint, Method, Reply, Request, Transport};
use crate::pyvalue::{Value, json::loads};

/// The normalized API version (`NORMALIZED_API_VERSION`).
const API_VERSION: &str = "2024-08-01-preview";
/// `X-UiPath-AgentHub-Config` of the evaluation judges.
const AGENTHUB_CONFIG: &str = "agentsevals";
/// `stop_after_attempt(MAX_RETRY_ATTEMPTS)`.
const MAX_ATTEMPTS: u32 = 5;
/// Statuses retried (`RETRYABLE_STATUS_CODES`).
const RETRYABLE: [u16; 6] = [408, 429, 502, 503, 504, 524];
/// Caps on a `Retry-After` wait and on the exponential backoff, seconds.
const MAX_RETRY_AFTER_S: f64 = 120.0;
const MAX_BACKOFF_S: f64 = 10.0;

/// Each model's `modelDetails` from the discovery reply, by `modelName`.
type Models = HashMap<String, Value>;

/// The discovery reply cache. The reference keeps one per process, keyed by
/// (base URL, agenthub config), and never refreshes it: a reply that could
/// not be read is cached as "no details" too. Here it is keyed by base URL
/// (the agenthub config is always `agentsevals`); its lifetime is the
/// caller's. Bounded by the number of configured endpoints.
#[derive(Debug, Default)]
pub struct Discovery {
    cache: Mutex<HashMap<String, Arc<Models>>>,
    /// One fetch at a time: judges started together wait for the first
    /// one's reply instead of each asking (the reference, evaluating one
    /// item after another, asks once).
    fetching: tokio::sync::Mutex<()>,
}

impl Discovery {
    /// An empty cache: the first judge call per base URL fetches discovery.
    pub fn new() -> Discovery {
        Discovery::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Models>>> {
        // A panic while holding the lock cannot leave the map half-written.
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `model` rejects `temperature`: `should_skip_temperature`.
    async fn skips_temperature<T: Transport>(
        &self,
        transport: &T,
        endpoint: &Endpoint,
        model: &str,
    ) -> Result<bool, String> {
        let mut cached = self.lock().get(&endpoint.base_url).cloned();
        // Held until this call has fetched and cached (or not) the reply.
        let _fetching = if cached.is_none() {
            let guard = self.fetching.lock().await;
            cached = self.lock().get(&endpoint.base_url).cloned();
            Some(guard)
        } else {
            None
        };
        let models = match cached {
            Some(m) => m,
            None => match fetch_models(transport, endpoint).await {
                Some(m) => {
                    let m = Arc::new(m);
                    self.lock()
                        .insert(endpoint.base_url.clone(), Arc::clone(&m));
                    m
                }
                // Unreadable names: swallowed, not cached.
                None => return Ok(false),
            },
        };
        match models.get(model) {
            None => Ok(false),
            Some(Value::Dict(d)) => Ok(d
                .get_str("shouldSkipTemperature")
                .is_some_and(Value::truthy)),
            // `details.get(...)` on a truthy non-dict is outside the
            // reference's try: the chat call fails.
            Some(other) => Err(format!(
                "AttributeError: '{}' object has no attribute 'get'",
                other.type_name()
            )),
        }
    }
}

/// `_fetch_model_details`: `None` when a `modelName` is unhashable (the
/// reference's `TypeError`, swallowed by its caller without caching);
/// an empty map when the reply cannot be had or read.
async fn fetch_models<T: Transport>(transport: &T, endpoint: &Endpoint) -> Option<Models> {
    let request = Request {
        method: Method::Get,
        url: format!("{}/agenthub_/llm/api/discovery", endpoint.base_url),
        headers: vec![
            ("Accept".into(), "application/json".into()),
            ("Authorization".into(), format!("Bearer {}", endpoint.token)),
            ("x-uipath-agenthub-config".into(), AGENTHUB_CONFIG.into()),
        ],
        body: None,
        attempt: 1,
    };
    let Ok(body) = send(transport, request).await else {
        return Some(Models::new());
    };
    let Ok(Value::List(items)) = response_json(&body) else {
        return Some(Models::new());
    };
    let mut models = Models::new();
    for item in &items {
        let Value::Dict(d) = item else { continue };
        let Some(name) = d.get_str("modelName").filter(|n| n.truthy()) else {
            continue;
        };
        let details = d
            .get_str("modelDetails")
            .filter(|v| v.truthy())
            .cloned()
            .unwrap_or_else(|| Value::Dict(Default::default()));
        match name {
            Value::Str(s) => {
                models.insert(s.clone(), details);
            }
            Value::List(_) | Value::Dict(_) | Value::Set(_) => return None,
            // Other hashable names never equal a model name (a str).
            _ => {}
        }
    }
    Some(models)
}

/// One chat completion call's parameters, as the judge passes them.
pub struct Chat<'a> {
    pub model: &'a str,
    pub system: &'a str,
    pub user: &'a str,
    pub temperature: f64,
    /// `None`: the service default, 4096.
    pub max_tokens: Option<i64>,
}

/// `UiPathLlmChatService.chat_completions` up to `response.json()`: the
/// parsed body, or the failure as `Type: message`.
pub async fn chat<T: Transport>(
    transport: &T,
    endpoint: &Endpoint,
    discovery: &Discovery,
    chat: &Chat<'_>,
) -> Result<Value, String> {
    let model_lower = chat.model.to_lowercase();
    let reasoning = ["o1", "o3", "o4"]
        .iter()
        .any(|p| model_lower.starts_with(p));
    let skip_temperature = reasoning
        || discovery
            .skips_temperature(transport, endpoint, chat.model)
            .await?;

    let mut body = Map::new();
    body.insert(
        "messages".into(),
        json!([
            {"role": "system", "content": chat.system},
            {"role": "user", "content": chat.user},
        ]),
    );
    body.insert("max_tokens".into(), json!(chat.max_tokens.unwrap_or(4096)));
    // httpx serialises with allow_nan=False, after encoding the headers.
    let mut unencodable = None;
    if !skip_temperature {
        match serde_json::Number::from_f64(chat.temperature) {
            Some(t) => {
                body.insert("temperature".into(), Json::Number(t));
            }
            None => unencodable = Some(chat.temperature),
        }
    }
    if !model_lower.contains("claude") && !reasoning {
        body.insert("n".into(), json!(1));
        body.insert("frequency_penalty".into(), json!(0));
        body.insert("presence_penalty".into(), json!(0));
        body.insert("top_p".into(), json!(1));
    }
    body.insert("tools".into(), json!([submit_evaluation_tool()]));
    body.insert("tool_choice".into(), json!({"type": "required"}));
    if model_lower == "gpt-5.6-terra" {
        body.insert("reasoning_effort".into(), json!("none"));
    }

    let mut headers: Vec<(String, String)> = vec![
        ("Accept".into(), "application/json".into()),
        ("Authorization".into(), format!("Bearer {}", endpoint.token)),
        ("X-UIPATH-STREAMING-ENABLED".into(), "false".into()),
        (
            "X-UiPath-LlmGateway-RequestingProduct".into(),
            "agentsplayground".into(),
        ),
        (
            "X-UiPath-LlmGateway-RequestingFeature".into(),
            "agents-evaluations".into(),
        ),
        ("x-uipath-agenthub-config".into(), AGENTHUB_CONFIG.into()),
    ];
    if let Some(id) = endpoint.action_id.as_deref().filter(|id| !id.is_empty()) {
        headers.push(("X-UiPath-LlmGateway-ActionId".into(), id.to_owned()));
    }
    headers.push((
        "X-UiPath-LlmGateway-NormalizedApi-ModelName".into(),
        chat.model.to_owned(),
    ));
    headers.push((
        "X-UiPath-LLMGateway-AllowFull4xxResponse".into(),
        "true".into(),
    ));
    // httpx encodes header values as ASCII before anything is sent.
    if let Some(e) = headers.iter().find_map(|(_, v)| ascii_error(v)) {
        return Err(format!("UnicodeEncodeError: {e}"));
    }
    if let Some(t) = unencodable {
        let mut r = String::new();
        crate::pyvalue::repr::float_repr(t, &mut r);
        return Err(format!(
            "ValueError: Out of range float values are not JSON compliant: {r}"
        ));
    }

    let request = Request {
        method: Method::Post,
        url: format!(
            "{}/agenthub_/llm/api/chat/completions?api-version={API_VERSION}",
            endpoint.base_url
        ),
        headers,
        body: Some(Json::Object(body)),
        attempt: 1,
    };
    let body = send(transport, request).await.map_err(|f| f.python())?;
    response_json(&body)
}

/// The judge's one tool, in the gateway's wire format.
fn submit_evaluation_tool() -> Json {
    json!({
        "name": "submit_evaluation",
        "description": "Submit the evaluation score and justification for the agent output",
        "parameters": {
            "type": "object",
            "properties": {
                "justification": {
                    "type": "string",
                    "description": "Clear analysis of the evaluation explaining the reasoning behind the score"
                },
                "score": {
                    "type": "number",
                    "description": "Numeric score between 0 and 100 representing the evaluation result"
                }
            },
            "required": ["justification", "score"]
        }
    })
}

/// `'ascii' codec can't encode …` for the first run of non-ASCII
/// characters, as Python's strict ASCII encoder reports it.
fn ascii_error(s: &str) -> Option<String> {
    let chars: Vec<char> = s.chars().collect();
    let start = chars.iter().position(|c| !c.is_ascii())?;
    let run = chars[start..].iter().take_while(|c| !c.is_ascii()).count();
    let what = if run == 1 {
        let c = u32::from(chars[start]);
        let shown = if c < 0x100 {
            format!("\\x{c:02x}")
        } else if c < 0x10000 {
            format!("\\u{c:04x}")
        } else {
            format!("\\U{c:08x}")
        };
        format!("character '{shown}' in position {start}")
    } else {
        format!("characters in position {start}-{}", start + run - 1)
    };
    Some(format!(
        "'ascii' codec can't encode {what}: ordinal not in range(128)"
    ))
}

/// httpx's `response.json()`: `json.loads` of the bytes (UTF-8, a BOM
/// skipped), failures as `Type: message`.
fn response_json(body: &[u8]) -> Result<Value, String> {
    let bytes = body.strip_prefix(b"\xef\xbb\xbf").unwrap_or(body);
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        let (end, reason) = match e.error_len() {
            None => (bytes.len(), "unexpected end of data"),
            Some(n) => {
                let first = bytes.get(at).copied().unwrap_or(0);
                let start_byte = (0xc2..=0xf4).contains(&first);
                if start_byte {
                    (at + n, "invalid continuation byte")
                } else {
                    (at + 1, "invalid start byte")
                }
            }
        };
        let shown = if end - at <= 1 {
            format!(
                "byte 0x{:02x} in position {at}",
                bytes.get(at).copied().unwrap_or(0)
            )
        } else {
            format!("bytes in position {at}-{}", end - 1)
        };
        format!("UnicodeDecodeError: 'utf-8' codec can't decode {shown}: {reason}")
    })?;
    loads(text).map_err(|e| format!("JSONDecodeError: {e}"))
}

/// A request that did not get a 2xx reply after its retries.
#[derive(Debug)]
enum Failure {
    /// `EnrichedException` from `raise_for_status`.
    Status {
        method: Method,
        url: String,
        status: u16,
        body: Vec<u8>,
    },
    /// httpx's `ConnectError` or a `TimeoutException`.
    NoResponse { timed_out: bool },
}

impl Failure {
    fn retryable(&self) -> bool {
        match self {
            Failure::Status { status, .. } => RETRYABLE.contains(status),
            Failure::NoResponse { .. } => true,
        }
    }

    /// `{type(e).__name__}: {str(e)}`.
    fn python(&self) -> String {
        match self {
            Failure::Status {
                method,
                url,
                status,
                body,
            } => {
                let content = match std::str::from_utf8(body) {
                    Ok(s) if !s.is_empty() => match s.char_indices().nth(200) {
                        Some((cut, _)) => format!("{}... (truncated)", &s[..cut]),
                        None => s.to_owned(),
                    },
                    _ => "No content".to_owned(),
                };
                format!(
                    "EnrichedException: \nRequest URL: {url}\nHTTP Method: {}\nStatus Code: {status}\nResponse Content: {content}",
                    method.as_str()
                )
            }
            // httpcore's read timeout carries no message.
            Failure::NoResponse { timed_out: true } => "ReadTimeout: ".to_owned(),
            Failure::NoResponse { timed_out: false } => {
                "ConnectError: All connection attempts failed".to_owned()
            }
        }
    }
}

/// `request_async` with its tenacity policy: up to five attempts while the
/// failure is retryable, waiting `Retry-After` (at most 120 s) or
/// `2^(n-1) + U(0, 1)` seconds (at most 10 s) between them.
async fn send<T: Transport>(transport: &T, request: Request) -> Result<Vec<u8>, Failure> {
    let mut attempt = 1;
    loop {
        let reply = transport
            .send(Request {
                attempt,
                ..request.clone()
            })
            .await;
        let retry_after = reply.header("retry-after").and_then(parse_retry_after);
        let failure = match reply {
            Reply::Response { status, body, .. } if (200..300).contains(&status) => {
                return Ok(body);
            }
            Reply::Response { status, body, .. } => Failure::Status {
                method: request.method,
                url: request.url.clone(),
                status,
                body,
            },
            Reply::Failed { timed_out, .. } => Failure::NoResponse { timed_out },
        };
        if !failure.retryable() || attempt >= MAX_ATTEMPTS {
            return Err(failure);
        }
        let retry_after = match failure {
            Failure::Status { .. } => retry_after,
            Failure::NoResponse { .. } => None,
        };
        let wait = wait_s(attempt, retry_after, jitter());
        tokio::time::sleep(Duration::try_from_secs_f64(wait).unwrap_or(Duration::ZERO)).await;
        attempt += 1;
    }
}

/// `platform_wait_strategy` after failed attempt `attempt` (1-based):
/// the reply's `Retry-After` capped at 120 s, else `2^(attempt-1) + jitter`
/// capped at 10 s.
fn wait_s(attempt: u32, retry_after: Option<f64>, jitter: f64) -> f64 {
    match retry_after {
        Some(s) => s.min(MAX_RETRY_AFTER_S),
        None => (2f64.powi(attempt.min(64) as i32 - 1) + jitter).min(MAX_BACKOFF_S),
    }
}

/// `parse_retry_after`: a non-negative number of seconds, else `None`.
fn parse_retry_after(header: &str) -> Option<f64> {
    let trimmed = py_strip(header);
    if header.is_empty() {
        return None;
    }
    // NaN is kept, as `seconds < 0` is false for it (it then waits 0 s).
    float_from_str(trimmed).filter(|s| s.is_nan() || *s >= 0.0)
}

/// `random.uniform(0, 1)`.
fn jitter() -> f64 {
    rand::random::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_values() {
        assert_eq!(parse_retry_after("0"), Some(0.0));
        assert_eq!(parse_retry_after(" 2.5 "), Some(2.5));
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after(""), None);
        assert!((0.0..1.0).contains(&jitter()));
    }

    #[test]
    fn waits_between_attempts() {
        assert_eq!(wait_s(1, None, 0.5), 1.5);
        assert_eq!(wait_s(2, None, 0.0), 2.0);
        assert_eq!(wait_s(4, None, 0.9), 8.9);
        assert_eq!(wait_s(5, None, 0.9), 10.0);
        assert_eq!(wait_s(1, Some(0.0), 0.7), 0.0);
        assert_eq!(wait_s(3, Some(300.0), 0.7), 120.0);
        assert_eq!(wait_s(1, Some(f64::INFINITY), 0.7), 120.0);
    }

    #[test]
    fn ascii_errors() {
        assert_eq!(ascii_error("gpt-4"), None);
        assert_eq!(
            ascii_error("mü").as_deref(),
            Some(
                "'ascii' codec can't encode character '\\xfc' in position 1: ordinal not in range(128)"
            )
        );
        assert_eq!(
            ascii_error("a検索b").as_deref(),
            Some(
                "'ascii' codec can't encode characters in position 1-2: ordinal not in range(128)"
            )
        );
    }

    #[test]
    fn json_bodies() {
        assert_eq!(
            response_json(b"<html>").unwrap_err(),
            "JSONDecodeError: Expecting value: line 1 column 1 (char 0)"
        );
        assert_eq!(
            response_json(b"").unwrap_err(),
            "JSONDecodeError: Expecting value: line 1 column 1 (char 0)"
        );
        assert_eq!(
            response_json(b"\xff{}").unwrap_err(),
            "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"
        );
        assert!(response_json(b"\xef\xbb\xbf[1]").is_ok());
    }

    #[test]
    fn enriched_exception_text() {
        let f = Failure::Status {
            method: Method::Post,
            url: "http://h/x".into(),
            status: 404,
            body: "é".repeat(201).into_bytes(),
        };
        let text = f.python();
        assert!(text.starts_with("EnrichedException: \nRequest URL: http://h/x\nHTTP Method: POST\nStatus Code: 404\nResponse Content: "));
        assert!(text.ends_with(&format!("{}... (truncated)", "é".repeat(200))));
        let empty = Failure::Status {
            method: Method::Get,
            url: "u".into(),
            status: 500,
            body: vec![],
        };
        assert!(empty.python().ends_with("Response Content: No content"));
        assert!(!empty.retryable());
        assert_eq!(
            Failure::NoResponse { timed_out: false }.python(),
            "ConnectError: All connection attempts failed"
        );
        assert_eq!(
            Failure::NoResponse { timed_out: true }.python(),
            "ReadTimeout: "
        );
        assert!(Failure::NoResponse { timed_out: true }.retryable());
    }
}

//! What deepeval 4.3.1 (through the openai SDK and pydantic 2.14) makes of
//! the judge's HTTP reply: the SDK's status errors, the completion's fields,
//! the parse paths (`beta.chat.completions.parse` with a schema or JSON
//! mode, or plain `create`), `trim_and_load_json`, `ToolSelectionScore`
//! validation and the cost.

use super::jiter_check;
use super::openai_models::ModelData;
use crate::pyvalue::{self, Int, Value};

/// An exception the reference raises: its class and `str()`.
#[derive(Debug, Clone, PartialEq)]
pub struct PyErr {
    pub class: &'static str,
    pub message: String,
    /// Whether deepeval's tenacity policy retries it.
    pub retryable: bool,
}

impl PyErr {
    pub fn new(class: &'static str, message: impl Into<String>) -> PyErr {
        PyErr {
            class,
            message: message.into(),
            retryable: false,
        }
    }

    /// `"ExcType: message"`.
    pub fn text(&self) -> String {
        format!("{}: {}", self.class, self.message)
    }
}

/// How the request asked for JSON, which decides how the answer is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParsePath {
    /// `parse(response_format=ToolSelectionScore)`: pydantic reads the content.
    Structured,
    /// `parse(response_format={"type": "json_object"})`: `trim_and_load_json`.
    JsonMode,
    /// `create(...)`: `trim_and_load_json` too, after the cost.
    Plain,
}

/// The judge's answer: `ToolSelectionScore` and the call's cost (`None` when
/// the model has no prices).
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    pub score: f64,
    pub reason: String,
    pub cost: Option<f64>,
}

/// The SDK's `APIStatusError` subclass for a non-2xx status, with its
/// message (`Error code: N[ - error.message]`) and deepeval's retry verdict.
pub fn status_error(status: u16, body: &[u8]) -> PyErr {
    let text = String::from_utf8_lossy(body);
    let parsed = pyvalue::json::loads(text.trim()).ok();
    let error = parsed.as_ref().and_then(|b| match b {
        Value::Dict(d) => Some(d.get_str("error").unwrap_or(b)),
        _ => None,
    });
    let mut message = format!("Error code: {status}");
    if let Some(Value::Dict(e)) = error
        && let Some(Value::Str(m)) = e.get_str("message")
        && !m.is_empty()
    {
        message.push_str(" - ");
        message.push_str(m);
    }
    let class = match status {
        400 => "BadRequestError",
        401 => "AuthenticationError",
        403 => "PermissionDeniedError",
        404 => "NotFoundError",
        409 => "ConflictError",
        422 => "UnprocessableEntityError",
        429 => "RateLimitError",
        500.. => "InternalServerError",
        _ => "APIStatusError",
    };
    let retryable = match status {
        429 => !insufficient_quota(parsed.as_ref(), &message),
        401 => false,
        s => (500..600).contains(&s),
    };
    PyErr {
        class,
        message,
        retryable,
    }
}

/// The policy's non-retryable rate limit: `error.code` (or the message)
/// says the quota is exhausted.
fn insufficient_quota(body: Option<&Value>, message: &str) -> bool {
    let code = body
        .and_then(Value::as_dict)
        .and_then(|b| b.get_str("error"))
        .and_then(Value::as_dict)
        .and_then(|e| e.get_str("code"));
    match code {
        Some(Value::Str(c)) => return c.to_lowercase() == "insufficient_quota",
        Some(Value::Int(_) | Value::Bool(_)) => return false,
        _ => {}
    }
    let m = message.to_lowercase();
    [
        "insufficient_quota",
        "insufficient quota",
        "exceeded your current quota",
        "requestquotaexceeded",
    ]
    .iter()
    .any(|n| m.contains(n))
}

/// A failed attempt without a response: `APITimeoutError` or
/// `APIConnectionError`, both retried.
pub fn connection_error(timed_out: bool) -> PyErr {
    let (class, message) = if timed_out {
        ("APITimeoutError", "Request timed out.")
    } else {
        ("APIConnectionError", "Connection error.")
    };
    PyErr {
        class,
        message: message.into(),
        retryable: true,
    }
}

fn no_attribute(owner: &str, attr: &str) -> PyErr {
    PyErr::new(
        "AttributeError",
        format!("'{owner}' object has no attribute '{attr}'"),
    )
}

/// The class name the SDK's lenient construction leaves for a value:
/// dicts become the model, anything else stays as it was.
fn owner<'a>(v: &Value, model: &'a str) -> &'a str {
    match v {
        Value::Dict(_) => model,
        other => other.type_name(),
    }
}

/// `obj.attr` on a leniently constructed SDK model; `default` is the
/// field's default (`None` for optional fields, absent for required ones).
fn attr<'v>(obj: &'v Value, model: &str, name: &str, optional: bool) -> Result<&'v Value, PyErr> {
    const NONE: &Value = &Value::None;
    match obj {
        Value::Dict(d) => match d.get_str(name) {
            Some(v) => Ok(v),
            None if optional => Ok(NONE),
            None => Err(no_attribute(model, name)),
        },
        other => Err(no_attribute(other.type_name(), name)),
    }
}

/// Reads a 2xx reply the way `generate`/`a_generate` and deepeval's
/// `generate_with_schema_and_extract` do.
pub fn read_success(
    path: ParsePath,
    model: &ModelData,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Selection, PyErr> {
    let completion = decode_body(content_type, body)?;
    let choices = attr(&completion, "ChatCompletion", "choices", false)?;
    if path != ParsePath::Plain {
        // parse_chat_completion: every choice, before anything is read.
        for choice in iter_list(choices)? {
            check_choice(path, &completion, choice)?;
        }
    }
    let first = match choices {
        Value::List(items) => items
            .first()
            .ok_or_else(|| PyErr::new("IndexError", "list index out of range"))?,
        other => {
            return Err(PyErr::new(
                "TypeError",
                format!("'{}' object is not subscriptable", other.type_name()),
            ));
        }
    };
    let message = attr(first, "Choice", "message", false)?;
    let content = attr(message, "ChatCompletionMessage", "content", true)?;
    match path {
        ParsePath::Structured => {
            let parsed = structured_content(message)?;
            let cost = cost(model, &completion)?;
            // `parsed` None: trimAndLoadJson(None) in deepeval.
            let (score, reason) = parsed.ok_or_else(invalid_json_value_error)?;
            Ok(Selection {
                score,
                reason,
                cost,
            })
        }
        ParsePath::JsonMode => {
            let data = trim_and_load_json(content)?;
            let cost = cost(model, &completion)?;
            let (score, reason) = validate(&data, false)?;
            Ok(Selection {
                score,
                reason,
                cost,
            })
        }
        ParsePath::Plain => {
            let cost = cost(model, &completion)?;
            let data = trim_and_load_json(content)?;
            let (score, reason) = validate(&data, false)?;
            Ok(Selection {
                score,
                reason,
                cost,
            })
        }
    }
}

fn invalid_json_value_error() -> PyErr {
    PyErr::new(
        "ValueError",
        "Evaluation LLM outputted an invalid JSON. Please use a better evaluation model.",
    )
}

/// The body as the SDK reads it: JSON for a JSON content type (a decode
/// error propagates), JSON if it parses otherwise, else the text.
fn decode_body(content_type: Option<&str>, body: &[u8]) -> Result<Value, PyErr> {
    let text = String::from_utf8_lossy(body);
    let ct = content_type.unwrap_or("*").split(';').next().unwrap_or("");
    match pyvalue::json::loads(&text) {
        Ok(v) => Ok(v),
        Err(e) if ct.ends_with("json") => Err(PyErr::new("JSONDecodeError", e.to_string())),
        Err(_) => Ok(Value::Str(text.into_owned())),
    }
}

fn iter_list(v: &Value) -> Result<&[Value], PyErr> {
    match v {
        Value::List(items) => Ok(items),
        other => Err(PyErr::new(
            "TypeError",
            format!("'{}' object is not iterable", other.type_name()),
        )),
    }
}

/// `parse_chat_completion`'s checks on one choice: the finish reasons it
/// refuses, and (with a schema) the content's validation.
fn check_choice(path: ParsePath, completion: &Value, choice: &Value) -> Result<(), PyErr> {
    match attr(choice, "Choice", "finish_reason", false)? {
        Value::Str(r) if r == "length" => {
            let mut msg =
                "Could not parse response content as the length limit was reached".to_owned();
            let usage = attr(completion, "ChatCompletion", "usage", true)?;
            if !matches!(usage, Value::None) {
                msg.push_str(" - ");
                msg.push_str(&usage_str(usage));
            }
            return Err(PyErr::new("LengthFinishReasonError", msg));
        }
        Value::Str(r) if r == "content_filter" => {
            return Err(PyErr::new(
                "ContentFilterFinishReasonError",
                "Could not parse response content as the request was rejected by the content filter",
            ));
        }
        _ => {}
    }
    if path == ParsePath::Structured {
        let message = attr(choice, "Choice", "message", false)?;
        structured_content(message)?;
    }
    Ok(())
}

/// `str(CompletionUsage)`: pydantic's `field=value` list, fields in
/// declaration order (absent required ones skipped), then extra keys.
fn usage_str(usage: &Value) -> String {
    let Value::Dict(d) = usage else {
        return usage.py_str();
    };
    let mut parts = Vec::new();
    for (name, optional) in [
        ("completion_tokens", false),
        ("prompt_tokens", false),
        ("total_tokens", false),
        ("completion_tokens_details", true),
        ("prompt_tokens_details", true),
    ] {
        match d.get_str(name) {
            Some(v) => parts.push(format!("{name}={}", v.repr())),
            None if optional => parts.push(format!("{name}=None")),
            None => {}
        }
    }
    const KNOWN: [&str; 5] = [
        "completion_tokens",
        "prompt_tokens",
        "total_tokens",
        "completion_tokens_details",
        "prompt_tokens_details",
    ];
    for (k, v) in d.iter() {
        if let Some(k) = k.as_str()
            && !KNOWN.contains(&k)
        {
            parts.push(format!("{k}={}", v.repr()));
        }
    }
    parts.join(" ")
}

/// `maybe_parse_content`: content that is present and not refused is
/// validated as JSON (`model_validate_json`); otherwise nothing is parsed.
fn structured_content(message: &Value) -> Result<Option<(f64, String)>, PyErr> {
    let content = attr(message, "ChatCompletionMessage", "content", true)?;
    let refusal = attr(message, "ChatCompletionMessage", "refusal", true)?;
    if !content.truthy() || refusal.truthy() {
        return Ok(None);
    }
    let Value::Str(text) = content else {
        return Err(validation_error(&[LineError {
            loc: "",
            kind: "json_type",
            msg: "JSON input should be string, bytes or bytearray".into(),
            input: content.clone(),
        }]));
    };
    if let Err(e) = jiter_check::check(text.as_bytes()) {
        return Err(validation_error(&[LineError {
            loc: "",
            kind: "json_invalid",
            msg: format!("Invalid JSON: {}", e.description(text.as_bytes())),
            input: content.clone(),
        }]));
    }
    let data = pyvalue::json::loads(text)
        .map_err(|e| PyErr::new("ValidationError", format!("Invalid JSON: {e}")))?;
    validate(&data, true).map(Some)
}

/// The call's cost: `usage.prompt_tokens` and `completion_tokens` are read
/// (AttributeError without them), then priced when the model has prices.
fn cost(model: &ModelData, completion: &Value) -> Result<Option<f64>, PyErr> {
    let usage = attr(completion, "ChatCompletion", "usage", true)?;
    let owner_name = owner(usage, "CompletionUsage");
    let prompt = attr(usage, owner_name, "prompt_tokens", false)?;
    let completion_tokens = attr(usage, owner_name, "completion_tokens", false)?;
    let audio = match attr(usage, owner_name, "prompt_tokens_details", true)? {
        Value::Dict(d) => match d.get_str("audio_tokens") {
            Some(Value::Int(Int::Small(n))) => *n,
            _ => 0,
        },
        _ => 0,
    };
    let (Some(input_price), Some(output_price)) = (model.input_price, model.output_price) else {
        return Ok(None);
    };
    if input_price == 0.0 || output_price == 0.0 {
        return Ok(None);
    }
    if audio != 0 && model.audio_input_price.is_none() {
        return Ok(None);
    }
    let number = |v: &Value| match v {
        Value::Int(i) => i.to_f64(),
        Value::Float(f) => Some(*f),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        _ => None,
    };
    let (Some(p), Some(c)) = (number(prompt), number(completion_tokens)) else {
        return Err(PyErr::new(
            "TypeError",
            "unsupported operand type(s) for the token cost",
        ));
    };
    let mut input_cost = (p - audio as f64) * input_price;
    if audio != 0 {
        input_cost += audio as f64 * model.audio_input_price.unwrap_or(0.0);
    }
    Ok(Some(input_cost + c * output_price))
}

/// `models/llms/utils.py` `trim_and_load_json`: from the first `{` to the
/// last `}` (a `}` appended when there is none), `,\s*` dropped before every
/// `]`/`}` (inside strings too), then `json.loads`.
pub fn trim_and_load_json(content: &Value) -> Result<Value, PyErr> {
    let Value::Str(s) = content else {
        return Err(no_attribute(content.type_name(), "find"));
    };
    let start = s.find('{');
    let mut owned;
    let mut text: &str = s;
    let mut end = s.rfind('}').map(|i| i + 1);
    if end.is_none() && start.is_some() {
        owned = s.clone();
        owned.push('}');
        end = Some(owned.len());
        text = &owned;
    }
    let json_str = match (start, end) {
        (Some(a), Some(b)) if a < b => &text[a..b],
        _ => "",
    };
    let cleaned = strip_trailing_commas(json_str);
    pyvalue::json::loads(&cleaned).map_err(|_| {
        PyErr::new(
            "DeepEvalError",
            "Evaluation LLM outputted an invalid JSON. Please use a better evaluation model.",
        )
    })
}

/// `re.sub(r",\s*([\]}])", r"\1", s)` (`\s` as Python's `str.isspace`).
pub fn strip_trailing_commas(s: &str) -> String {
    let is_space = |c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c);
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(',') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let trimmed = after.trim_start_matches(is_space);
        match trimmed.chars().next() {
            Some(c @ (']' | '}')) => {
                out.push(c);
                rest = &trimmed[1..];
            }
            _ => {
                out.push(',');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// One pydantic line error.
struct LineError {
    loc: &'static str,
    kind: &'static str,
    msg: String,
    input: Value,
}

/// `ValidationError` for `ToolSelectionScore`, as pydantic-core prints it.
fn validation_error(errors: &[LineError]) -> PyErr {
    let plural = if errors.len() == 1 { "" } else { "s" };
    let lines: Vec<String> = errors
        .iter()
        .map(|e| {
            let loc = if e.loc.is_empty() {
                String::new()
            } else {
                format!("{}\n", e.loc)
            };
            format!(
                "{loc}  {} [type={}, input_value={}, input_type={}]\n    For further information visit https://errors.pydantic.dev/2.14/v/{}",
                e.msg,
                e.kind,
                truncate(&e.input.repr()),
                e.input.type_name(),
                e.kind
            )
        })
        .collect();
    PyErr::new(
        "ValidationError",
        format!(
            "{} validation error{plural} for ToolSelectionScore\n{}",
            errors.len(),
            lines.join("\n")
        ),
    )
}

/// pydantic-core's `write_truncated_to_limited_bytes(…, 50)`.
fn truncate(s: &str) -> String {
    if s.len() <= 50 {
        return s.to_owned();
    }
    let mut head = 25;
    while !s.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = s.len() - 24;
    while !s.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}...{}", &s[..head], &s[tail..])
}

/// `ToolSelectionScore.model_validate(data)` (or `_json`): lax `float`
/// score, `str` reason; errors in field order.
pub fn validate(data: &Value, json_input: bool) -> Result<(f64, String), PyErr> {
    let Value::Dict(d) = data else {
        // `model_validate_json` words it for JSON, `model_validate` for
        // Python objects.
        let msg = if json_input {
            "Input should be an object"
        } else {
            "Input should be a valid dictionary or instance of ToolSelectionScore"
        };
        return Err(validation_error(&[LineError {
            loc: "",
            kind: "model_type",
            msg: msg.into(),
            input: data.clone(),
        }]));
    };
    let mut errors = Vec::new();
    let missing = |loc| LineError {
        loc,
        kind: "missing",
        msg: "Field required".into(),
        input: data.clone(),
    };
    let score = match d.get_str("score") {
        None => {
            errors.push(missing("score"));
            None
        }
        Some(v) => match lax_float(v, json_input) {
            Ok(f) => Some(f),
            Err((kind, msg)) => {
                errors.push(LineError {
                    loc: "score",
                    kind,
                    msg: msg.into(),
                    input: v.clone(),
                });
                None
            }
        },
    };
    let reason = match d.get_str("reason") {
        None => {
            errors.push(missing("reason"));
            None
        }
        Some(Value::Str(s)) => Some(s.clone()),
        Some(v) => {
            errors.push(LineError {
                loc: "reason",
                kind: "string_type",
                msg: "Input should be a valid string".into(),
                input: v.clone(),
            });
            None
        }
    };
    match (score, reason) {
        (Some(s), Some(r)) if errors.is_empty() => Ok((s, r)),
        _ => Err(validation_error(&errors)),
    }
}

/// pydantic-core's lax float: numbers, bools, numeric strings (Rust's
/// `f64` parser after trimming, then with underscores removed).
fn lax_float(v: &Value, json_input: bool) -> Result<f64, (&'static str, &'static str)> {
    const FLOAT_TYPE: (&str, &str) = ("float_type", "Input should be a valid number");
    match v {
        Value::Float(f) => Ok(*f),
        Value::Bool(b) => Ok(if *b { 1.0 } else { 0.0 }),
        Value::Int(i) => match i.to_f64() {
            Some(f) => Ok(f),
            // jiter's BigInt → f64 saturates; Python's int → float overflows.
            None if json_input => Ok(if i.is_negative() {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }),
            None => Err(FLOAT_TYPE),
        },
        Value::Str(s) => parse_float_str(s).ok_or((
            "float_parsing",
            "Input should be a valid number, unable to parse string as a number",
        )),
        _ => Err(FLOAT_TYPE),
    }
}

/// `str_as_float`.
pub fn parse_float_str(s: &str) -> Option<f64> {
    if let Ok(f) = s.trim().parse::<f64>() {
        return Some(f);
    }
    if s.starts_with('_') || s.ends_with('_') || !s.contains('_') || s.contains("__") {
        return None;
    }
    s.replace('_', "").parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pydantic 2.14.3's `ToolSelectionScore.model_validate_json` on JSON
    /// that is not an object, and on bad fields (recorded from it); and
    /// `model_validate`'s own wording for a Python object.
    #[test]
    fn validation_messages_are_pydantics_for_json_input() {
        let err = |json: &str, json_input: bool| {
            let v = crate::pyvalue::json::loads(json).unwrap();
            validate(&v, json_input).unwrap_err().message
        };
        let not_an_object = |value: &str, ty: &str| {
            format!(
                "1 validation error for ToolSelectionScore\n  Input should be an object [type=model_type, input_value={value}, input_type={ty}]\n    For further information visit https://errors.pydantic.dev/2.14/v/model_type"
            )
        };
        assert_eq!(err("[0.5]", true), not_an_object("[0.5]", "list"));
        assert_eq!(err(r#""x""#, true), not_an_object("'x'", "str"));
        assert_eq!(err("5", true), not_an_object("5", "int"));
        assert_eq!(err("null", true), not_an_object("None", "NoneType"));
        assert_eq!(err("true", true), not_an_object("True", "bool"));
        assert_eq!(
            err(r#"{"score": [1], "reason": 5}"#, true),
            "2 validation errors for ToolSelectionScore\nscore\n  Input should be a valid number [type=float_type, input_value=[1], input_type=list]\n    For further information visit https://errors.pydantic.dev/2.14/v/float_type\nreason\n  Input should be a valid string [type=string_type, input_value=5, input_type=int]\n    For further information visit https://errors.pydantic.dev/2.14/v/string_type"
        );
        assert_eq!(
            err(r#"{"score": "abc", "reason": "r"}"#, true),
            "1 validation error for ToolSelectionScore\nscore\n  Input should be a valid number, unable to parse string as a number [type=float_parsing, input_value='abc', input_type=str]\n    For further information visit https://errors.pydantic.dev/2.14/v/float_parsing"
        );
        assert_eq!(
            err("{}", true),
            "2 validation errors for ToolSelectionScore\nscore\n  Field required [type=missing, input_value={}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing\nreason\n  Field required [type=missing, input_value={}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing"
        );
        assert!(err("[0.5]", false).contains(
            "Input should be a valid dictionary or instance of ToolSelectionScore [type=model_type"
        ));
        let ok = crate::pyvalue::json::loads(r#"{"score": "0.8", "reason": "r"}"#).unwrap();
        assert_eq!(validate(&ok, true).unwrap(), (0.8, "r".to_owned()));
    }
}

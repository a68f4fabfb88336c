//! The instrumentation libraries extraction tells apart, by their spans'
//! instrumentation scope, and how each one's arguments and outputs are
//! read back to what the tool function received and returned.
//!
//! Spans of no scope toolscore recognises (UiPath's, hand-made ones, the
//! conformance cases') are read by the reference's own rules, unchanged.
//! A library's spans get its normalisation only where the reference rule
//! would misread them: wrappers around the arguments, a bare value for a
//! one-parameter tool, serialised tool messages and JSON-encoded strings.

use crate::pyvalue::{Dict, Value, json};

/// Who made a span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Library {
    /// No scope toolscore recognises: the reference's rules.
    Reference,
    /// OpenInference's LangChain instrumentation (Python or JavaScript):
    /// a one-parameter tool's input is the bare value; the output a
    /// serialised `ToolMessage`.
    OpenInferenceLangChain,
    /// OpenInference for smolagents: arguments in `{"args", "kwargs", …}`.
    OpenInferenceSmolagents,
    /// OpenInference for DSPy: tool spans without `tool.name`, arguments
    /// in `{"kwargs"}`, outputs JSON-encoded.
    OpenInferenceDspy,
    /// Google ADK (its own spans and OpenInference's): outputs are ADK's
    /// function responses; a `(merged tools)` span is no call.
    GoogleAdk,
    /// OpenInference for Haystack: tool results only in Python reprs of
    /// Haystack's `ChatMessage`s, in the model span's `input.value`.
    OpenInferenceHaystack,
    /// Any other OpenInference instrumentation.
    OpenInference,
    /// OpenLLMetry's LangChain instrumentation: the callback payload as
    /// arguments, a serialised `ToolMessage` as output.
    TraceloopLangChain,
    /// OpenLLMetry (traceloop-sdk and its instrumentations).
    Traceloop,
    /// Any other instrumentation toolscore recognises (OpenTelemetry GenAI
    /// instrumentations, pydantic-ai, the Vercel AI SDK, MCP, …).
    Other,
}

/// Scope patterns (a name, or a prefix ending in `*`), first match wins,
/// with the library each names. The records keep a span's scope as its
/// position here (`KeepAttributes::with_scopes`).
pub const SCOPES: &[(&str, Library)] = &[
    (
        "openinference.instrumentation.langchain",
        Library::OpenInferenceLangChain,
    ),
    (
        "@arizeai/openinference-instrumentation-langchain",
        Library::OpenInferenceLangChain,
    ),
    (
        "openinference.instrumentation.smolagents",
        Library::OpenInferenceSmolagents,
    ),
    (
        "openinference.instrumentation.dspy",
        Library::OpenInferenceDspy,
    ),
    (
        "openinference.instrumentation.google_adk",
        Library::GoogleAdk,
    ),
    ("gcp.vertex.agent", Library::GoogleAdk),
    (
        "openinference.instrumentation.haystack",
        Library::OpenInferenceHaystack,
    ),
    ("openinference.instrumentation.*", Library::OpenInference),
    ("@arizeai/*", Library::OpenInference),
    (
        "opentelemetry.instrumentation.langchain",
        Library::TraceloopLangChain,
    ),
    ("traceloop.tracer", Library::Traceloop),
    ("opentelemetry.instrumentation.*", Library::Traceloop),
    ("opentelemetry.util.genai*", Library::Other),
    ("pydantic-ai", Library::Other),
    ("ai", Library::Other),
    ("gen_ai", Library::Other),
    ("mcp-python-sdk", Library::Other),
    ("com.anthropic.sdk.python", Library::Other),
];

impl Library {
    /// The library of a span whose scope matched `pattern` (see [`SCOPES`]).
    pub fn of(pattern: Option<&str>) -> Library {
        pattern
            .and_then(|p| SCOPES.iter().find(|(s, _)| *s == p))
            .map_or(Library::Reference, |(_, l)| *l)
    }

    /// Whether the reference's rules read this library's spans.
    pub fn is_reference(self) -> bool {
        self == Library::Reference
    }
}

/// Arguments as a library recorded them, read back to the named arguments
/// the tool function received: the wrappers of traceloop-sdk
/// (`{"args": […], "kwargs": {…}}`, positional values named after the
/// model's call), smolagents and DSPy, and OpenLLMetry LangChain's
/// callback payload (`{"input_str", "inputs", …}`). `None`: not a wrapper.
pub fn unwrap_args(
    d: &Dict,
    named_like: Option<&Dict>,
    declared: Option<&[String]>,
) -> Option<Dict> {
    if let (Some(Value::Dict(inputs)), true) =
        (d.get_str("inputs"), d.get_str("input_str").is_some())
    {
        return Some(inputs.clone());
    }
    let wrapper = d.keys().all(|k| {
        matches!(
            k.as_str(),
            Some("args" | "kwargs" | "sanitize_inputs_outputs")
        )
    });
    let Some(Value::Dict(kwargs)) = d.get_str("kwargs") else {
        return None;
    };
    if !wrapper {
        return None;
    }
    let positional = match d.get_str("args") {
        None => &[][..],
        Some(Value::List(items)) => &items[..],
        Some(_) => return None,
    };
    let mut out = Dict::new();
    // Positional values take the names the model gave (its arguments, in
    // the order it wrote them) that the keywords do not.
    let names: Vec<&str> = match (named_like, declared) {
        (Some(m), _) => m.keys().filter_map(Value::as_str).collect(),
        (None, Some(declared)) => declared.iter().map(String::as_str).collect(),
        (None, None) => Vec::new(),
    };
    let names: Vec<&str> = names
        .into_iter()
        .filter(|k| kwargs.get_str(k).is_none())
        .collect();
    for (i, v) in positional.iter().enumerate() {
        match names.get(i) {
            Some(name) => out.insert_str(*name, v.clone()),
            // No name known: the value cannot be placed.
            None => return Some(kwargs.clone()),
        }
    }
    for (k, v) in kwargs.iter() {
        if let Value::Str(k) = k {
            out.insert_str(k.clone(), v.clone());
        }
    }
    Some(out)
}

/// An output as a library recorded it, read back to the text the tool
/// returned: a JSON-encoded string decoded, an object's `content` string
/// (as the reference reads it), a serialised LangChain `ToolMessage` or an
/// ADK function response unwrapped to its content, a list of text blocks
/// joined. Any other JSON object stays its text (the reference would give
/// `''`: the function returned that object).
pub fn output_text(text: &str) -> String {
    let trimmed = text.trim_start();
    if !(trimmed.starts_with('"') || trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return text.to_owned();
    }
    match json::loads(text) {
        Ok(v) => value_text(&v).unwrap_or_else(|| text.to_owned()),
        Err(_) => text.to_owned(),
    }
}

/// [`output_text`] of a value already read: `None` when it is an object
/// kept as its JSON text.
pub fn value_text(v: &Value) -> Option<String> {
    match v {
        Value::Str(s) => Some(s.clone()),
        Value::List(items) => blocks_text(items),
        Value::Dict(d) => {
            // The reference's rule too: an object's `content` (a string).
            if let Some(Value::Str(c)) = d.get_str("content") {
                return Some(c.clone());
            }
            let content = tool_message_content(d)?;
            Some(match content {
                Value::Str(s) => s.clone(),
                other => value_text(other).unwrap_or_else(|| json_text(other)),
            })
        }
        _ => None,
    }
}

/// The content of a serialised tool result: LangChain's `ToolMessage`
/// (`{"type": "tool", "data": {"content"}}`, `{"lc": 1, "kwargs":
/// {"content"}}`, or either under `"output"`) and ADK's function response
/// (`{"id", "name", "response": {"result"}}`).
fn tool_message_content(d: &Dict) -> Option<&Value> {
    if let Some(Value::Dict(inner)) = d.get_str("output")
        && let Some(c) = tool_message_content(inner)
    {
        return Some(c);
    }
    if d.get_str("type").and_then(Value::as_str) == Some("tool")
        && let Some(Value::Dict(data)) = d.get_str("data")
    {
        return data.get_str("content");
    }
    if d.get_str("lc").is_some()
        && let Some(Value::Dict(kwargs)) = d.get_str("kwargs")
    {
        let class = match d.get_str("id") {
            Some(Value::List(path)) => path.last().and_then(Value::as_str),
            _ => None,
        };
        if class == Some("ToolMessage")
            || kwargs.get_str("type").and_then(Value::as_str) == Some("tool")
        {
            return kwargs.get_str("content");
        }
    }
    if let (Some(Value::Dict(response)), Some(_)) = (d.get_str("response"), d.get_str("name")) {
        return match response.get_str("result") {
            Some(r) if response.len() == 1 => Some(r),
            _ => d.get_str("response"),
        };
    }
    None
}

/// The text of a list of content blocks (`[{"type": "text", "text"}]`).
fn blocks_text(items: &[Value]) -> Option<String> {
    let mut out = String::new();
    for item in items {
        let Value::Dict(b) = item else { return None };
        match (b.get_str("type").and_then(Value::as_str), b.get_str("text")) {
            (Some("text"), Some(Value::Str(t))) => out.push_str(t),
            _ => return None,
        }
    }
    (!items.is_empty()).then_some(out)
}

/// A value as compact JSON text.
pub fn json_text(v: &Value) -> String {
    crate::pyvalue::py_to_json(v).to_string()
}

/// A call's arguments as the library recorded them, when the value is not
/// a JSON object: the bare value of a one-parameter tool, named after the
/// model's call, or else after the tool's declared parameters, when that
/// has one name.
pub fn bare_argument(
    value: &str,
    named_like: Option<&Dict>,
    declared: Option<&[String]>,
) -> Option<Dict> {
    let name = match (named_like, declared) {
        (Some(names), _) if names.len() == 1 => names.keys().next()?.as_str()?.to_owned(),
        (None, Some([only])) => only.clone(),
        _ => return None,
    };
    let mut out = Dict::new();
    // The model's value tells what the function got: a string as is, else
    // what the text reads as.
    let v = match named_like.and_then(|n| n.get_str(&name)) {
        Some(Value::Str(_)) | None => Value::Str(value.to_owned()),
        Some(_) => json::loads(value).unwrap_or_else(|_| Value::Str(value.to_owned())),
    };
    out.insert_str(name, v);
    Some(out)
}

/// What OpenInference writes in place of hidden content
/// (`OPENINFERENCE_HIDE_INPUTS`, `hideInputs`): no content was captured.
pub const REDACTED: &str = "__REDACTED__";

#[cfg(test)]
mod tests {
    use super::*;

    fn dict(text: &str) -> Dict {
        match json::loads(text).unwrap() {
            Value::Dict(d) => d,
            _ => panic!("{text}"),
        }
    }

    #[test]
    fn wrappers_give_the_named_arguments() {
        let got = |t: &str, like: Option<&str>| {
            unwrap_args(&dict(t), like.map(dict).as_ref(), None).map(|d| json_text(&Value::Dict(d)))
        };
        assert_eq!(
            got(r#"{"args": [], "kwargs": {"city": "Paris"}}"#, None).as_deref(),
            Some(r#"{"city":"Paris"}"#)
        );
        assert_eq!(
            got(
                r#"{"args": ["Paris", 3], "kwargs": {}}"#,
                Some(r#"{"city": "Paris", "days": 3}"#)
            )
            .as_deref(),
            Some(r#"{"city":"Paris","days":3}"#)
        );
        assert_eq!(
            got(
                r#"{"args": [], "sanitize_inputs_outputs": true, "kwargs": {"a": 1}}"#,
                None
            )
            .as_deref(),
            Some(r#"{"a":1}"#)
        );
        assert_eq!(
            got(
                r#"{"input_str": "{'a': 1}", "inputs": {"a": 1}, "kwargs": {}}"#,
                None
            )
            .as_deref(),
            Some(r#"{"a":1}"#)
        );
        assert_eq!(got(r#"{"kwargs": {"a": 1}, "other": 2}"#, None), None);
        assert_eq!(got(r#"{"city": "Paris"}"#, None), None);
    }

    #[test]
    fn outputs_are_read_back_to_the_returned_text() {
        assert_eq!(output_text(r#""Sunny, 22C""#), "Sunny, 22C");
        assert_eq!(output_text("Sunny, 22C"), "Sunny, 22C");
        assert_eq!(output_text(r#"{"ok": true}"#), r#"{"ok": true}"#);
        assert_eq!(
            output_text(r#"{"type": "tool", "data": {"content": "Sunny", "tool_call_id": "c"}}"#),
            "Sunny"
        );
        assert_eq!(
            output_text(
                r#"{"output": {"lc": 1, "type": "constructor", "id": ["x", "ToolMessage"], "kwargs": {"content": "Sunny", "type": "tool"}}, "kwargs": {}}"#
            ),
            "Sunny"
        );
        assert_eq!(
            output_text(r#"{"id": "c", "name": "f", "response": {"result": "Sunny"}}"#),
            "Sunny"
        );
        assert_eq!(
            output_text(r#"{"id": "c", "name": "f", "response": {"ok": true}}"#),
            r#"{"ok":true}"#
        );
        assert_eq!(
            output_text(r#"[{"type": "text", "text": "Sunny"}]"#),
            "Sunny"
        );
    }

    #[test]
    fn a_bare_value_takes_the_one_name_the_model_gave() {
        let named = |v: &str, like: &str| {
            bare_argument(v, Some(&dict(like)), None).map(|d| json_text(&Value::Dict(d)))
        };
        assert_eq!(
            named("Paris", r#"{"city": "Rome"}"#).as_deref(),
            Some(r#"{"city":"Paris"}"#)
        );
        assert_eq!(
            named("3", r#"{"days": 2}"#).as_deref(),
            Some(r#"{"days":3}"#)
        );
        assert_eq!(named("Paris", r#"{"a": 1, "b": 2}"#), None);
        let declared = ["city".to_owned()];
        assert_eq!(
            bare_argument("Paris", None, Some(&declared))
                .map(|d| json_text(&Value::Dict(d)))
                .as_deref(),
            Some(r#"{"city":"Paris"}"#)
        );
    }
}

//! Tool calls from the model's messages: what a model span says the model
//! asked for (its output messages) and what the next request sent back
//! (its input messages' tool results). An agent whose model client alone
//! is instrumented has no tool span at all: its calls are only here.
//!
//! The formats read, whatever library wrote them:
//! - flattened messages: OpenInference's `llm.output_messages.{m}.message.
//!   tool_calls.{k}.tool_call.{id, function.name, function.arguments}` and
//!   `llm.input_messages.{i}.message.{role, tool_call_id, content}`;
//!   OpenLLMetry's older `gen_ai.completion.{m}.tool_calls.{k}.{id, name,
//!   arguments}` and `gen_ai.prompt.{i}.{role, tool_call_id, content}`;
//! - JSON (text, or a structured value) in `gen_ai.output.messages` and
//!   `gen_ai.input.messages`: the GenAI conventions' parts (`tool_call`,
//!   `tool_call_response`), OpenAI's `tool_calls` and `role: tool`
//!   messages, Anthropic's `tool_use` and `tool_result` blocks;
//! - the Vercel AI SDK's `ai.response.toolCalls` and `ai.prompt.messages`;
//! - the older GenAI conventions' (and Semantic Kernel's) JSON lists in
//!   `gen_ai.prompt` and `gen_ai.completion` (OpenAI-shaped messages, or
//!   choices holding them), the attributes of the span events
//!   `gen_ai.content.prompt` and `gen_ai.content.completion`;
//! - events of a model span (log records, or the span's own events): the
//!   GenAI conventions' `gen_ai.client.inference.operation.details` with the
//!   same message attributes, read as the span's own, and the older message
//!   events ([`EVENTS`]), each body (a log record's body, or the JSON text
//!   in [`EVENT_CONTENT`], Azure AI Inference's and Semantic Kernel's) one
//!   message of the request or a choice of the response.
//!
//! A call is taken from the output side only (input messages resend every
//! earlier call), once per call id (several spans can describe one model
//! call, and a root span can repeat every call of the run). A result is
//! joined to its call by id, or, where the library recorded no ids, by its
//! place in the conversation.

use std::collections::HashMap;

use super::library;
use crate::pyvalue::{Dict, Value, json};
use crate::record::{AttrRef, SpanRef};
use crate::span::SpanId;

/// The model message attributes kept by exact key.
pub const JSON_KEYS: &[&str] = &[
    "gen_ai.output.messages",
    "gen_ai.input.messages",
    "gen_ai.completion",
    "gen_ai.prompt",
    "ai.response.toolCalls",
    "ai.prompt.messages",
    "gen_ai.tool.definitions",
    "ai.prompt.tools",
];

/// The older GenAI message events, whose body is one message: the event's
/// name, and the role its message has (a choice is the model's answer).
pub const EVENTS: &[(&str, &str)] = &[
    ("gen_ai.system.message", "system"),
    ("gen_ai.user.message", "user"),
    ("gen_ai.assistant.message", "assistant"),
    ("gen_ai.tool.message", "tool"),
    ("gen_ai.choice", "assistant"),
];

/// The attribute holding a message event's body as JSON text, where the
/// event is a span's own (which has no body).
pub const EVENT_CONTENT: &str = "gen_ai.event.content";

/// The flattened list of the tools offered (`llm.tools.{n}.tool.json_schema`).
pub const TOOLS_LIST: &str = "llm.tools.";

/// The flattened message lists kept by name (`KeepAttributes::with_messages`):
/// (input, output) of each convention.
pub const LISTS: &[(&str, &str)] = &[
    ("llm.input_messages.", "llm.output_messages."),
    ("gen_ai.prompt.", "gen_ai.completion."),
];

/// A call the model asked for.
#[derive(Debug, Clone)]
pub(super) struct Requested {
    pub id: Option<String>,
    pub name: String,
    /// The arguments as the model wrote them (JSON text or an object).
    pub args: Option<Value>,
    pub span_id: SpanId,
    /// When the model span ended: when the call was asked for.
    pub at: u64,
}

/// A call as a model message writes it: the model's id, the tool's name,
/// the arguments as written (JSON text or an object).
#[derive(Debug, Clone)]
struct Asked {
    id: Option<String>,
    name: String,
    args: Option<Value>,
}

/// What a request sent: the model's earlier calls, and tool results.
#[derive(Debug, Clone)]
enum Sent {
    Calls(Vec<(Option<String>, String)>),
    Result {
        id: Option<String>,
        name: Option<String>,
        /// `None`: the instrumentation recorded no content.
        text: Option<String>,
    },
}

/// A trace's model messages: the calls asked for, in order, and the
/// results sent back.
#[derive(Debug, Default)]
pub(super) struct Conversation {
    pub requested: Vec<Requested>,
    /// Results by call id.
    by_id: HashMap<String, String>,
    /// The longest conversation a request sent (the last one's, usually),
    /// for results without ids.
    longest: Vec<Sent>,
    /// The tools offered: each one's parameters, in declared order.
    pub declared: HashMap<String, Vec<String>>,
}

impl Conversation {
    /// Reads one model span: `json` are its values of [`JSON_KEYS`], and
    /// `flattened` whether it has flattened messages.
    pub fn read(&mut self, span: &SpanRef<'_>, json: &[Option<AttrRef<'_>>], flattened: bool) {
        let mut out: Vec<Asked> = Vec::new();
        let mut sent: Vec<Sent> = Vec::new();
        if flattened {
            let tools = read_flattened(span, &mut out, &mut sent);
            for t in &tools {
                self.declare(t);
            }
            if library::Library::of(span.scope()) == library::Library::OpenInferenceHaystack {
                haystack_results(span, &mut sent);
            }
        }
        for (key, value) in JSON_KEYS.iter().zip(json) {
            let Some(v) = value.as_ref().and_then(as_value) else {
                continue;
            };
            match *key {
                "gen_ai.output.messages" => messages(&v, &mut out, &mut Vec::new()),
                "gen_ai.completion" => {
                    // Messages, or choices holding them.
                    let answers = items(&v)
                        .iter()
                        .map(|m| match m {
                            Value::Dict(d) if d.get_str("message").is_some() => {
                                Value::Dict(choice_message(d, "assistant"))
                            }
                            other => other.clone(),
                        })
                        .collect();
                    messages(&Value::List(answers), &mut out, &mut Vec::new());
                }
                "gen_ai.input.messages" | "ai.prompt.messages" | "gen_ai.prompt" => {
                    messages(&v, &mut Vec::new(), &mut sent);
                }
                "ai.response.toolCalls" => {
                    for c in items(&v) {
                        if let Some(call) = vercel_call(c) {
                            out.push(call);
                        }
                    }
                }
                "gen_ai.tool.definitions" => {
                    for t in items(&v) {
                        self.declare(t);
                    }
                }
                "ai.prompt.tools" => {
                    for t in items(&v) {
                        // An array of JSON strings.
                        match t {
                            Value::Str(s) => {
                                if let Ok(t) = json::loads(s) {
                                    self.declare(&t);
                                }
                            }
                            other => self.declare(other),
                        }
                    }
                }
                _ => {}
            }
        }
        self.take(span.span_id, span.end_time_unix_nano, out, sent);
    }

    /// Reads one span's message events ([`EVENTS`]: each event's name and
    /// body, in the order they were emitted): the request's messages, then
    /// the model's choices. `at` is when the last of them was emitted.
    pub fn read_events(&mut self, span_id: SpanId, at: u64, events: &[(&str, Value)]) {
        let (mut input, mut output) = (Vec::new(), Vec::new());
        for (name, body) in events {
            let Some(&(_, role)) = EVENTS.iter().find(|(n, _)| n == name) else {
                continue;
            };
            let Value::Dict(body) = body else { continue };
            if *name == "gen_ai.choice" {
                output.push(Value::Dict(choice_message(body, role)));
            } else {
                let mut m = body.clone();
                if m.get_str("role").is_none() {
                    m.insert_str("role", Value::Str(role.to_owned()));
                }
                input.push(Value::Dict(m));
            }
        }
        let (mut out, mut sent) = (Vec::new(), Vec::new());
        messages(&Value::List(output), &mut out, &mut Vec::new());
        messages(&Value::List(input), &mut Vec::new(), &mut sent);
        self.take(span_id, at, out, sent);
    }

    /// Takes one model call's messages: the calls asked for (each once,
    /// by id), the results sent back.
    fn take(&mut self, span_id: SpanId, at: u64, out: Vec<Asked>, sent: Vec<Sent>) {
        for Asked { id, name, args } in out {
            if let Some(id) = &id
                && self.requested.iter().any(|r| r.id.as_ref() == Some(id))
            {
                continue;
            }
            self.requested.push(Requested {
                id,
                name,
                args,
                span_id,
                at,
            });
        }
        for s in &sent {
            if let Sent::Result {
                id: Some(id),
                text: Some(text),
                ..
            } = s
            {
                self.by_id.entry(id.clone()).or_insert_with(|| text.clone());
            }
        }
        if sent.len() > self.longest.len() {
            self.longest = sent;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.requested.is_empty()
    }

    /// A tool definition offered to the model (OpenAI's `{"function":
    /// {"name", "parameters"}}` or flat `{"name", "parameters"}`,
    /// Anthropic's `input_schema`, the AI SDK's `inputSchema`, ADK's
    /// `parameters_json_schema`): its parameters' names, in order.
    fn declare(&mut self, t: &Value) {
        let Value::Dict(d) = t else { return };
        let d = match d.get_str("function") {
            Some(Value::Dict(f)) => f,
            _ => d,
        };
        let Some(name) = str_of(d, &["name"]) else {
            return;
        };
        let schema = [
            "parameters",
            "input_schema",
            "inputSchema",
            "parameters_json_schema",
        ]
        .iter()
        .find_map(|k| match d.get_str(k) {
            Some(Value::Dict(s)) => Some(s),
            _ => None,
        });
        let Some(Value::Dict(properties)) = schema.and_then(|s| s.get_str("properties")) else {
            return;
        };
        let names = properties
            .keys()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        self.declared.entry(name.to_owned()).or_insert(names);
    }

    /// Each requested call's result, in the order of `requested`: by id,
    /// else by its place in the longest conversation (a result answers
    /// the call of the model message before it with its id, or its name,
    /// or else the first one not answered yet).
    pub fn results(&self) -> Vec<Option<String>> {
        let mut placed: Vec<(String, Option<String>)> = Vec::new();
        let mut waiting: std::collections::VecDeque<(Option<String>, String)> =
            std::collections::VecDeque::new();
        let mut after_calls = false;
        for s in &self.longest {
            match s {
                Sent::Calls(calls) => {
                    // A turn's calls may come as one message or several in a
                    // row (the Responses API's items): results follow them all.
                    if !after_calls {
                        waiting.clear();
                    }
                    waiting.extend(calls.iter().cloned());
                    after_calls = true;
                    continue;
                }
                Sent::Result { id, name, text } => {
                    let at = waiting
                        .iter()
                        .position(|(i, _)| i.is_some() && i == id)
                        .or_else(|| {
                            name.as_ref()
                                .and_then(|n| waiting.iter().position(|(_, w)| w == n))
                        })
                        .or((!waiting.is_empty()).then_some(0));
                    let called = match (at.and_then(|i| waiting.remove(i)), name) {
                        (Some((_, n)), _) => n,
                        (None, Some(n)) => n.clone(),
                        (None, None) => continue,
                    };
                    placed.push((called, text.clone()));
                }
            }
            after_calls = false;
        }
        let mut used = vec![false; placed.len()];
        self.requested
            .iter()
            .map(|r| {
                if let Some(text) = r.id.as_ref().and_then(|id| self.by_id.get(id)) {
                    return Some(text.clone());
                }
                let i = placed
                    .iter()
                    .enumerate()
                    .position(|(i, (n, _))| !used[i] && *n == r.name)?;
                used[i] = true;
                placed[i].1.clone()
            })
            .collect()
    }
}

/// A choice's message (`{"message": {…}, "tool_calls": […]}`: the calls
/// beside the message or in it), with `role` unless it has one.
fn choice_message(choice: &Dict, role: &str) -> Dict {
    let mut m = match choice.get_str("message") {
        Some(Value::Dict(m)) => m.clone(),
        _ => Dict::new(),
    };
    if m.get_str("tool_calls").is_none()
        && let Some(calls) = choice.get_str("tool_calls")
    {
        m.insert_str("tool_calls", calls.clone());
    }
    if m.get_str("role").is_none() {
        m.insert_str("role", Value::Str(role.to_owned()));
    }
    m
}

/// An attribute as a value: JSON text read, a structured value as it is.
pub(super) fn as_value(v: &AttrRef<'_>) -> Option<Value> {
    match v {
        AttrRef::Str(s) => json::loads(s).ok(),
        AttrRef::Array(_) | AttrRef::KvList(_) => Some(v.to_py()),
        _ => None,
    }
}

/// A list's (or tuple's) items.
fn items(v: &Value) -> &[Value] {
    match v {
        Value::List(items) | Value::Tuple(items) => items,
        _ => &[],
    }
}

fn str_of<'a>(d: &'a Dict, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| d.get_str(k)?.as_str())
}

/// The text of a result's value: a string as is, text blocks joined, the
/// AI SDK's typed outputs unwrapped, anything else as JSON.
fn result_text(v: &Value) -> String {
    if let Value::Dict(d) = v
        && let (Some(kind), Some(value)) = (str_of(d, &["type"]), d.get_str("value"))
        && matches!(
            kind,
            "text" | "json" | "error-text" | "error-json" | "content"
        )
    {
        return result_text(value);
    }
    library::value_text(v).unwrap_or_else(|| library::json_text(v))
}

/// A call of the AI SDK's (`ai.response.toolCalls`, `tool-call` parts).
fn vercel_call(c: &Value) -> Option<Asked> {
    let Value::Dict(d) = c else { return None };
    let name = str_of(d, &["toolName"])?.to_owned();
    let id = str_of(d, &["toolCallId"]).map(str::to_owned);
    let args = d.get_str("input").or_else(|| d.get_str("args")).cloned();
    Some(Asked { id, name, args })
}

/// An OpenAI-shaped call (`{"id", "function": {"name", "arguments"}}`)
/// or a GenAI `tool_call` part / Anthropic `tool_use` block (`{"id",
/// "name", "arguments" | "input"}`).
fn call_of(d: &Dict) -> Option<Asked> {
    let id = str_of(d, &["id", "tool_call_id"]).map(str::to_owned);
    if let Some(Value::Dict(f)) = d.get_str("function") {
        let name = str_of(f, &["name"])?.to_owned();
        let args = f.get_str("arguments").cloned();
        return Some(Asked { id, name, args });
    }
    let name = str_of(d, &["name"])?.to_owned();
    let args = d
        .get_str("arguments")
        .or_else(|| d.get_str("input"))
        .cloned();
    Some(Asked { id, name, args })
}

/// The messages of a JSON message list: calls asked for go to `out`
/// (from assistant messages), what was sent to `sent`.
fn messages(v: &Value, out: &mut Vec<Asked>, sent: &mut Vec<Sent>) {
    for m in items(v) {
        let Value::Dict(m) = m else { continue };
        let role = str_of(m, &["role"]).unwrap_or_default();
        let mut calls = Vec::new();
        // OpenAI's shape: `tool_calls` beside the content; a tool message.
        for c in m.get_str("tool_calls").map(items).unwrap_or_default() {
            if let Value::Dict(c) = c
                && let Some(call) = call_of(c)
            {
                calls.push(call);
            }
        }
        if matches!(role, "tool" | "function")
            && let Some(content) = m.get_str("content").or_else(|| m.get_str("result"))
            && m.get_str("parts").is_none()
        {
            sent.push(Sent::Result {
                id: str_of(m, &["tool_call_id", "id"]).map(str::to_owned),
                name: str_of(m, &["name"]).map(str::to_owned),
                text: Some(result_text(content)),
            });
        }
        // GenAI parts, Anthropic blocks, the AI SDK's content parts.
        let parts = m
            .get_str("parts")
            .or_else(|| m.get_str("content"))
            .map(items)
            .unwrap_or_default();
        for p in parts {
            let Value::Dict(p) = p else { continue };
            match str_of(p, &["type"]).unwrap_or_default() {
                "tool_call" | "tool_use" | "function_call" => {
                    if let Some(call) = call_of(p) {
                        calls.push(call);
                    }
                }
                "tool-call" => {
                    if let Some(call) = vercel_call(&Value::Dict(p.clone())) {
                        calls.push(call);
                    }
                }
                "tool_call_response" | "tool_result" | "tool-result" | "function_call_output" => {
                    let value = ["response", "result", "content", "output"]
                        .iter()
                        .find_map(|k| p.get_str(k));
                    sent.push(Sent::Result {
                        id: str_of(p, &["id", "tool_use_id", "toolCallId", "call_id"])
                            .map(str::to_owned),
                        name: str_of(p, &["name", "toolName"]).map(str::to_owned),
                        text: value.map(result_text),
                    });
                }
                _ => {}
            }
        }
        if !calls.is_empty() {
            if matches!(role, "assistant" | "model" | "") {
                sent.push(Sent::Calls(
                    calls
                        .iter()
                        .map(|c| (c.id.clone(), c.name.clone()))
                        .collect(),
                ));
            }
            out.extend(calls);
        }
    }
}

/// One flattened message: its fields by name, in wire order.
#[derive(Default)]
struct Flat {
    role: Option<String>,
    tool_call_id: Option<String>,
    name: Option<String>,
    text: Vec<String>,
    /// Calls by their index, each as far as its fields came.
    calls: Vec<(u64, FlatCall)>,
}

/// A flattened call's fields: id, name, arguments.
#[derive(Default)]
struct FlatCall {
    id: Option<String>,
    name: Option<String>,
    args: Option<Value>,
}

/// The flattened messages of a span: output lists' calls to `out`, input
/// lists' messages to `sent`.
fn read_flattened(span: &SpanRef<'_>, out: &mut Vec<Asked>, sent: &mut Vec<Sent>) -> Vec<Value> {
    let mut tools = Vec::new();
    // (list, message index) → message, in index order per list.
    let mut lists: Vec<(&str, std::collections::BTreeMap<u64, Flat>)> = Vec::new();
    for (key, value) in span.messages() {
        if let Some(rest) = key.strip_prefix(TOOLS_LIST) {
            if rest.ends_with(".tool.json_schema")
                && let Some(t) = value.as_str().and_then(|s| json::loads(s).ok())
            {
                tools.push(t);
            }
            continue;
        }
        let Some((list, rest)) = LISTS
            .iter()
            .flat_map(|(i, o)| [*i, *o])
            .find_map(|l| Some((l, key.strip_prefix(l)?)))
        else {
            continue;
        };
        let Some((index, field)) = rest.split_once('.') else {
            continue;
        };
        let Ok(index) = index.parse::<u64>() else {
            continue;
        };
        let field = field.strip_prefix("message.").unwrap_or(field);
        let at = match lists.iter().position(|(l, _)| *l == list) {
            Some(at) => at,
            None => {
                lists.push((list, Default::default()));
                lists.len() - 1
            }
        };
        let m = lists[at].1.entry(index).or_default();
        let text = || value.py_str();
        match field {
            "role" => m.role = Some(text()),
            "tool_call_id" => m.tool_call_id = Some(text()),
            "name" => m.name = Some(text()),
            "content" => m.text.push(text()),
            f if f.starts_with("contents.") && f.ends_with(".message_content.text") => {
                m.text.push(text());
            }
            f => {
                let Some(call) = f.strip_prefix("tool_calls.") else {
                    continue;
                };
                let Some((k, part)) = call.split_once('.') else {
                    continue;
                };
                let Ok(k) = k.parse::<u64>() else { continue };
                let part = part.strip_prefix("tool_call.").unwrap_or(part);
                let slot = match m.calls.iter().position(|c| c.0 == k) {
                    Some(i) => i,
                    None => {
                        m.calls.push((k, FlatCall::default()));
                        m.calls.len() - 1
                    }
                };
                let c = &mut m.calls[slot].1;
                match part {
                    "id" => c.id = Some(text()),
                    "function.name" | "name" => c.name = Some(text()),
                    "function.arguments" | "arguments" => {
                        c.args = Some(match value {
                            AttrRef::Str(s) => Value::Str(s.to_owned()),
                            other => other.to_py(),
                        });
                    }
                    _ => {}
                }
            }
        }
    }
    for (list, messages) in lists {
        let output = LISTS.iter().any(|(_, o)| *o == list);
        for (_, mut m) in messages {
            m.calls.sort_by_key(|c| c.0);
            let calls: Vec<Asked> = m
                .calls
                .into_iter()
                .filter_map(|(_, c)| {
                    Some(Asked {
                        id: c.id,
                        name: c.name?,
                        args: c.args,
                    })
                })
                .collect();
            if output {
                out.extend(calls);
                continue;
            }
            if !calls.is_empty() {
                sent.push(Sent::Calls(
                    calls.into_iter().map(|c| (c.id, c.name)).collect(),
                ));
            }
            let role = m.role.as_deref().unwrap_or_default();
            if matches!(role, "tool" | "function" | "tool-response") || m.tool_call_id.is_some() {
                sent.push(Sent::Result {
                    id: m.tool_call_id,
                    name: m.name,
                    text: (!m.text.is_empty()).then(|| m.text.concat()),
                });
            }
        }
    }
    tools
}

/// Haystack's instrumentation records a tool result's message with its role
/// only; the result is in the Python repr of Haystack's `ChatMessage` in
/// the model span's `input.value` (`{"messages": ["ChatMessage(_role=
/// <ChatRole.TOOL: 'tool'>, _content=[ToolCallResult(result='…',
/// origin=ToolCall(tool_name='…', arguments={…}, id='…', …), error=…)],
/// …)", …]}`). The flattened tool messages without content are filled, in
/// order, from those results: their text, tool name and call id.
fn haystack_results(span: &SpanRef<'_>, sent: &mut [Sent]) {
    let Some(input) = span.attr("input.value").and_then(|v| v.as_str()) else {
        return;
    };
    let Ok(Value::Dict(d)) = json::loads(input) else {
        return;
    };
    let mut results = items(d.get_str("messages").unwrap_or(&Value::None))
        .iter()
        .filter_map(Value::as_str)
        .flat_map(tool_call_results);
    for s in sent.iter_mut() {
        if let Sent::Result {
            id,
            name,
            text: text @ None,
        } = s
        {
            let Some(r) = results.next() else { return };
            *text = Some(r.0);
            *name = name.take().or(r.1);
            *id = id.take().or(r.2);
        }
    }
}

/// The `ToolCallResult(result=…, origin=ToolCall(tool_name=…, …, id=……`
/// of a Haystack `ChatMessage` repr: (result, tool name, call id).
fn tool_call_results(repr: &str) -> Vec<(String, Option<String>, Option<String>)> {
    const RESULT: &str = "ToolCallResult(result=";
    let mut out = Vec::new();
    let mut rest = repr;
    while let Some(at) = rest.find(RESULT) {
        rest = &rest[at + RESULT.len()..];
        let Some((text, after)) = py_str_at(rest) else {
            break;
        };
        rest = after;
        // The origin's fields, up to the next result.
        let origin = &rest[..rest.find(RESULT).unwrap_or(rest.len())];
        let field = |key: &str| {
            let at = origin.find(key)?;
            py_str_at(&origin[at + key.len()..]).map(|(v, _)| v)
        };
        out.push((text, field("tool_name="), field(", id=")));
    }
    out
}

/// The Python string literal `s` starts with, read, and what follows it.
fn py_str_at(s: &str) -> Option<(String, &str)> {
    let quote = s.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let mut escaped = false;
    for (i, c) in s.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            c if c == quote => {
                let end = i + c.len_utf8();
                return match crate::pyvalue::literal::literal_eval(&s[..end]) {
                    Ok(Value::Str(text)) => Some((text, &s[end..])),
                    _ => None,
                };
            }
            _ => {}
        }
    }
    None
}

/// The arguments the model wrote, as a dict: JSON text read (or a Python
/// literal, as a reference would), an object as it is.
pub(super) fn args_dict(args: &Value) -> Option<Dict> {
    match args {
        Value::Dict(d) => Some(d.clone()),
        Value::Str(s) => match json::loads(s) {
            Ok(Value::Dict(d)) => Some(d),
            _ => match crate::pyvalue::literal::literal_eval(s) {
                Ok(Value::Dict(d)) => Some(d),
                _ => None,
            },
        },
        _ => None,
    }
}

#[cfg(test)]
mod haystack_tests {
    use super::tool_call_results;

    #[test]
    fn results_are_read_from_chat_message_reprs() {
        let repr = r#"ChatMessage(_role=<ChatRole.TOOL: 'tool'>, _content=[ToolCallResult(result="it's \"sunny\", 22C", origin=ToolCall(tool_name='get_weather', arguments={'city': 'Paris'}, id='call_1', extra=None), error=False), ToolCallResult(result='Failed: no rooms\n', origin=ToolCall(tool_name='book_hotel', arguments={}, id=None, extra=None), error=True)], _name=None, _meta={})"#;
        assert_eq!(
            tool_call_results(repr),
            [
                (
                    "it's \"sunny\", 22C".to_owned(),
                    Some("get_weather".to_owned()),
                    Some("call_1".to_owned())
                ),
                (
                    "Failed: no rooms\n".to_owned(),
                    Some("book_hotel".to_owned()),
                    None
                ),
            ]
        );
        assert!(tool_call_results("ChatMessage(_role=<ChatRole.USER: 'user'>)").is_empty());
        // A result that is no string literal ends the reading.
        assert!(tool_call_results("ToolCallResult(result=42, origin=…)").is_empty());
    }
}

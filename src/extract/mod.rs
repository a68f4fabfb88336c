//! Spans → tool calls.
//!
//! A trace's tool calls are its tool spans ordered by start time (ties: end
//! time, then span ID). Which spans are tool spans and where name, arguments
//! and output live depends on the agent's instrumentation; each
//! [`Convention`] maps one instrumentation's attributes onto the same
//! [`ToolCall`] fields. The first convention that recognises a span wins, and
//! the default list puts OpenInference's `tool.name` (the reference rule) first,
//! so an explicit `tool.name` always wins.

mod conventions;
pub mod library;
mod messages;
mod spans;

pub use conventions::{ArgsFormat, Convention, Detect, ExtractConfig};
pub use messages::{EVENTS as MESSAGE_EVENTS, JSON_KEYS as MESSAGE_KEYS, LISTS as MESSAGE_LISTS};

use crate::pyvalue::{Dict, Value, json, literal};
use crate::record::{AttrRef, Spans};
use crate::span::SpanId;
use spans::{Keys, SpanCall};

/// One tool call extracted from a tool span.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// Python `str()` of the name attribute (an int 5 is `"5"`).
    pub name: String,
    /// `tool.id`, when present and not null. A call with an id is matched by id only.
    pub id: Option<String>,
    /// The arguments as the reference parses them.
    pub args: Args,
    /// The output as the reference's output rule renders it (for the output evaluator).
    pub output: String,
    /// The raw output attribute (deepeval's `output`); `None` when absent.
    pub raw_output: Option<Value>,
    /// `output` is the reference's rule ([`output_text`]) of the raw output,
    /// a string: a kept call keeps that string only (`store::StoredCall`).
    pub output_from_raw: bool,
    /// Whether the span carried an arguments or output attribute at all.
    pub content_captured: bool,
    /// A recognised library recorded no arguments and no output for the
    /// call (its content capture off, or hidden): evaluators that read them
    /// say so rather than score `{}` and `''`. Never set for spans read by
    /// the reference's rules, which score absent content as the reference
    /// does.
    pub content_missing: bool,
    pub span_id: SpanId,
    pub start_time_unix_nano: u64,
    pub end_time_unix_nano: u64,
}

impl ToolCall {
    /// A call as the API shows one: its arguments as JSON (an object; any
    /// other value is kept as the reason they are invalid), content
    /// captured, no raw output.
    pub fn shown(
        name: impl Into<String>,
        id: Option<String>,
        args: &serde_json::Value,
        output: impl Into<String>,
        span_id: SpanId,
        (start, end): (u64, u64),
    ) -> ToolCall {
        let args = match crate::pyvalue::json_to_py(args) {
            Value::Dict(d) => Args::Dict(d),
            _ => Args::Invalid(args.to_string()),
        };
        ToolCall {
            name: name.into(),
            id,
            args,
            output: output.into(),
            raw_output: None,
            output_from_raw: false,
            content_captured: true,
            content_missing: false,
            span_id,
            start_time_unix_nano: start,
            end_time_unix_nano: end,
        }
    }
}

/// Equal calls: every field the same, values compared by their Python
/// `repr` (which tells `1`, `1.0` and `True`, a tuple and a list apart).
impl PartialEq for ToolCall {
    fn eq(&self, other: &Self) -> bool {
        let repr = |v: &Option<Value>| v.as_ref().map(Value::repr);
        self.name == other.name
            && self.id == other.id
            && self.args == other.args
            && self.output == other.output
            && repr(&self.raw_output) == repr(&other.raw_output)
            && self.output_from_raw == other.output_from_raw
            && self.content_captured == other.content_captured
            && self.content_missing == other.content_missing
            && self.span_id == other.span_id
            && self.start_time_unix_nano == other.start_time_unix_nano
            && self.end_time_unix_nano == other.end_time_unix_nano
    }
}

/// A tool call's arguments.
#[derive(Debug, Clone)]
pub enum Args {
    /// Parsed (or defaulted to `{}`) arguments, every key a string.
    Dict(Dict),
    /// The reference raises while building the call (an unhashable dict key
    /// in a Python literal, a non-string key failing pydantic validation):
    /// any evaluator that reads the arguments reports this as an error.
    Invalid(String),
}

impl PartialEq for Args {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Args::Dict(a), Args::Dict(b)) => a.repr() == b.repr(),
            (Args::Invalid(a), Args::Invalid(b)) => a == b,
            (Args::Dict(_), Args::Invalid(_)) | (Args::Invalid(_), Args::Dict(_)) => false,
        }
    }
}

impl Args {
    pub fn dict(&self) -> Result<&Dict, &str> {
        match self {
            Args::Dict(d) => Ok(d),
            Args::Invalid(e) => Err(e),
        }
    }
}

/// Extracts the tool calls of one trace's spans, in start-time order.
///
/// Tool spans first (`spans.rs`); then the model's messages
/// (`messages.rs`), joined to the tool spans: a call seen as a tool span
/// and in the messages is one call (matched by the model's call id, else by
/// name in order), the span's fields filled from the messages where the
/// span lacks them; a call only in the messages is a call of its own.
/// Framework tools (`exclude_tools`) are left out, but from spans read by
/// the reference's rules.
pub fn extract(spans: &Spans, config: &ExtractConfig) -> Vec<ToolCall> {
    let keys = Keys::new(spans, config);
    let mut found = vec![None; keys.slots_used];
    let mut json = Vec::with_capacity(keys.messages.len());
    // Sized for the worst case (every span a tool call): a ToolCall is large,
    // and growing the vector copied them more than once per trace.
    let mut calls: Vec<ToolCall> = Vec::with_capacity(spans.len());
    let mut metas: Vec<SpanCall> = Vec::with_capacity(spans.len());
    let mut conversation = messages::Conversation::default();
    for span in spans.iter() {
        if !span.has_attributes() {
            continue;
        }
        let flattened = keys.read(&span, &mut found);
        json.clear();
        json.extend(
            keys.messages
                .iter()
                .map(|&(_, slot)| spans::value(&found, slot)),
        );
        if flattened || json.iter().any(Option::is_some) {
            conversation.read(&span, &json, flattened);
        }
        if let Some((c, m)) = spans::tool_call(span, &keys, &found) {
            calls.push(c);
            metas.push(m);
        }
    }
    if spans.event_count() > 0 {
        read_events(spans, &keys, &mut found, &mut json, &mut conversation);
    }
    merge_nested(&mut calls, &mut metas);
    // Framework tools are left out of a recognised library's calls only.
    let kept =
        |c: &ToolCall, framework: bool| !(framework && config.exclude_tools.contains(&c.name));
    if conversation.is_empty() && metas.iter().all(|m| m.pending.is_none()) {
        let mut meta = metas.iter();
        calls.retain_mut(|call| {
            let framework = meta.next().is_some_and(|m| !m.library.is_reference());
            call.content_missing = framework && !call.content_captured;
            kept(call, framework)
        });
    } else {
        // In start-time order, as the model asked for them.
        let mut pairs: Vec<(ToolCall, SpanCall)> = calls.into_iter().zip(metas).collect();
        pairs.sort_by_key(|(c, _)| (c.start_time_unix_nano, c.end_time_unix_nano, c.span_id));
        calls = join(pairs, &conversation)
            .into_iter()
            .filter(|(c, framework)| kept(c, *framework))
            .map(|(c, _)| c)
            .collect();
    }
    calls.sort_by_key(|c| (c.start_time_unix_nano, c.end_time_unix_nano, c.span_id));
    calls
}

/// The model's messages in the trace's events (log records of its model
/// spans, or their own events): an event with message attributes is read
/// as a model span of its own; the older message events of one span,
/// together, as the conversation of that span's model call (each one's
/// body, or else its JSON [`messages::EVENT_CONTENT`]).
fn read_events<'s>(
    spans: &'s Spans,
    keys: &Keys<'_>,
    found: &mut [Option<crate::record::Unread<'s>>],
    json: &mut Vec<Option<AttrRef<'s>>>,
    conversation: &mut messages::Conversation,
) {
    let body = spans.key(crate::span::EVENT_BODY);
    let content = spans.key(messages::EVENT_CONTENT);
    // Per span, in first-seen order: its message events' names and bodies,
    // and when the last was emitted.
    type Events<'e> = Vec<(&'e str, Value)>;
    let mut bodies: Vec<(SpanId, u64, Events<'_>)> = Vec::new();
    for event in spans.events() {
        if !event.has_attributes() {
            continue;
        }
        let flattened = keys.read(&event, found);
        json.clear();
        json.extend(
            keys.messages
                .iter()
                .map(|&(_, slot)| spans::value(found, slot)),
        );
        if flattened || json.iter().any(Option::is_some) {
            conversation.read(&event, json, flattened);
        }
        let value = match body.and_then(|k| event.get(k)) {
            Some(body) => Some(body.to_py()),
            None => content
                .and_then(|k| event.get(k))
                .and_then(|v| messages::as_value(&v)),
        };
        let (Some(parent), Some(value)) = (event.parent_span_id, value) else {
            continue;
        };
        let at = event.end_time_unix_nano;
        let entry = match bodies.iter().position(|(s, ..)| *s == parent) {
            Some(i) => &mut bodies[i],
            None => {
                bodies.push((parent, at, Vec::new()));
                let last = bodies.len() - 1;
                &mut bodies[last]
            }
        };
        entry.1 = entry.1.max(at);
        entry.2.push((event.name(), value));
    }
    for (span_id, at, events) in &bodies {
        conversation.read_events(*span_id, *at, events);
    }
}

/// A tool span directly inside a tool span of the same name (OpenLLMetry's
/// LangChain tool span around a traceloop `@tool`) is the same call: the
/// outer one, its missing fields filled from the inner one.
fn merge_nested(calls: &mut Vec<ToolCall>, metas: &mut Vec<SpanCall>) {
    let mut i = 0;
    while i < calls.len() {
        let outer = calls.iter().position(|o| {
            metas.get(i).and_then(|m| m.parent) == Some(o.span_id) && o.name == calls[i].name
        });
        match outer {
            Some(o) if o != i => {
                let (inner, inner_meta) = (calls.remove(i), metas.remove(i));
                let o = if o > i { o - 1 } else { o };
                let (Some(outer), Some(meta)) = (calls.get_mut(o), metas.get_mut(o)) else {
                    continue;
                };
                if !meta.has_args && inner_meta.has_args {
                    outer.args = inner.args;
                    meta.pending = inner_meta.pending;
                    meta.has_args = true;
                }
                if !meta.has_output && inner_meta.has_output {
                    outer.output = inner.output;
                    outer.raw_output = inner.raw_output;
                    outer.output_from_raw = inner.output_from_raw;
                    meta.has_output = true;
                }
                outer.content_captured |= inner.content_captured;
                if meta.call_id.is_none() {
                    meta.call_id = inner_meta.call_id;
                }
            }
            _ => i += 1,
        }
    }
}

/// Joins tool spans' calls (in start-time order) with the calls the model
/// asked for: by the model's call id, else the n-th span of a name with the
/// n-th request of that name. Each call comes out with whether it may be
/// left out as a framework tool (not a span read by the reference's rules).
fn join(
    spans: Vec<(ToolCall, SpanCall)>,
    conversation: &messages::Conversation,
) -> Vec<(ToolCall, bool)> {
    let requested = &conversation.requested;
    let results = conversation.results();
    let mut taken = vec![false; requested.len()];
    let mut matched: Vec<Option<usize>> = Vec::with_capacity(spans.len());
    for (_, s) in &spans {
        let by_id = s.call_id.as_ref().and_then(|id| {
            requested
                .iter()
                .enumerate()
                .position(|(i, r)| !taken[i] && r.id.as_ref() == Some(id))
        });
        if let Some(i) = by_id {
            taken[i] = true;
        }
        matched.push(by_id);
    }
    for ((call, s), m) in spans.iter().zip(matched.iter_mut()) {
        if m.is_some() || s.call_id.is_some() && requested.iter().any(|r| r.id == s.call_id) {
            continue;
        }
        let by_name = requested
            .iter()
            .enumerate()
            .position(|(i, r)| !taken[i] && r.name == call.name);
        if let Some(i) = by_name {
            taken[i] = true;
            *m = Some(i);
        }
    }
    let mut out = Vec::with_capacity(spans.len() + requested.len());
    for ((mut call, mut s), m) in spans.into_iter().zip(matched) {
        let request = m.map(|i| (&requested[i], results[i].as_deref()));
        let model_args = request
            .and_then(|(r, _)| r.args.as_ref())
            .and_then(messages::args_dict);
        if let Some(p) = s.pending.take() {
            let declared = conversation.declared.get(&call.name).map(Vec::as_slice);
            if let Some(args) = resolve(p, model_args.as_ref(), declared) {
                call.args = Args::Dict(args);
            }
        } else if !s.has_args
            && let Some(args) = model_args
        {
            call.args = Args::Dict(args);
            call.content_captured = true;
        }
        if !s.has_output
            && let Some((_, Some(text))) = request
        {
            call.output = text.to_owned();
            call.raw_output = Some(Value::Str(text.to_owned()));
            call.output_from_raw = false;
            call.content_captured = true;
        }
        let framework = !s.library.is_reference();
        call.content_missing = framework && !call.content_captured;
        out.push((call, framework));
    }
    for (i, r) in requested.iter().enumerate() {
        if taken[i] {
            continue;
        }
        let args = r.args.as_ref().and_then(messages::args_dict);
        let output = results[i].clone();
        out.push((
            ToolCall {
                name: r.name.clone(),
                id: None,
                content_captured: args.is_some() || output.is_some(),
                content_missing: args.is_none() && output.is_none(),
                args: Args::Dict(args.unwrap_or_default()),
                raw_output: output.clone().map(Value::Str),
                output_from_raw: false,
                output: output.unwrap_or_default(),
                span_id: r.span_id,
                start_time_unix_nano: r.at,
                end_time_unix_nano: r.at,
            },
            true,
        ));
    }
    out
}

/// Arguments waiting for names, named after the model's call: a bare
/// value, or a wrapper's positional values.
fn resolve(p: spans::Pending, model: Option<&Dict>, declared: Option<&[String]>) -> Option<Dict> {
    match p {
        spans::Pending::Bare(text) => library::bare_argument(&text, model, declared),
        spans::Pending::Wrapped(d) => library::unwrap_args(&d, model, declared),
    }
}

/// The reference's argument rule: a mapping is used as is; a string is
/// parsed as JSON, then as a Python literal; anything else, or anything that
/// does not parse to a dict, is `{}`. An unhashable literal key is not
/// caught by the reference and makes the arguments invalid.
pub fn parse_args(attr: Option<AttrRef<'_>>, format: ArgsFormat) -> Args {
    let value = match attr {
        None => return Args::Dict(Dict::new()),
        Some(kv @ AttrRef::KvList(_)) => kv.to_py(),
        Some(AttrRef::Str(s)) => match parse_python_args(s) {
            Ok(v) => v,
            Err(e) => return Args::Invalid(e),
        },
        Some(_) => return Args::Dict(Dict::new()),
    };
    let value = match (format, value) {
        (ArgsFormat::TraceloopKwargs, Value::Dict(d)) => d
            .get_str("kwargs")
            .cloned()
            .unwrap_or(Value::Dict(Dict::new())),
        (_, v) => v,
    };
    match value {
        Value::Dict(d) => match check_str_keys(&d) {
            Ok(()) => Args::Dict(d),
            Err(e) => Args::Invalid(e),
        },
        _ => Args::Dict(Dict::new()),
    }
}

/// JSON first, then a Python literal; `Value::None` when neither parses.
fn parse_python_args(s: &str) -> Result<Value, String> {
    if let Ok(v) = json::loads(s) {
        return Ok(v);
    }
    match literal::literal_eval(s) {
        Ok(v) => Ok(v),
        Err(literal::LiteralError::Type(e)) => Err(e.to_string()),
        Err(_) => Ok(Value::None),
    }
}

/// pydantic's `dict[str, Any]` check on `ToolCall.args`, with its message.
fn check_str_keys(d: &Dict) -> Result<(), String> {
    for k in d.keys() {
        if !matches!(k, Value::Str(_)) {
            let mut input = String::new();
            k.write_repr(&mut input);
            return Err(format!(
                "1 validation error for ToolCall\nargs.{input}.[key]\n  Input should be a valid string \
                 [type=string_type, input_value={input}, input_type={}]\n    For further information \
                 visit https://errors.pydantic.dev/2.14/v/string_type",
                k.type_name()
            ));
        }
    }
    Ok(())
}

/// The reference's output rule (SEMANTICS §1.2): a JSON object's `content`
/// (or nothing when it has none), a non-object or unparseable string as is,
/// any other attribute type as its Python `str()` (so an int 0 is `"0"`);
/// a falsy selected value is `""`.
pub fn output_text(attr: Option<AttrRef<'_>>) -> String {
    let parsed = match attr {
        None => return String::new(),
        Some(AttrRef::Str(s)) => {
            // Most outputs are `{"content": …}` documents: rendered from
            // the text when the fast path can decide.
            if let Some(text) = json::dict_content_str(s) {
                return text;
            }
            match json::loads(s) {
                Ok(v @ Value::Dict(_)) => v,
                _ => return s.to_owned(),
            }
        }
        Some(kv @ AttrRef::KvList(_)) => kv.to_py(),
        // Stringified before the falsy check: an int 0 or `False` is "0"/"False".
        Some(other) => return other.py_str(),
    };
    let selected = match &parsed {
        Value::Dict(d) => d.get_str("content"),
        _ => None,
    };
    match selected {
        Some(v) if v.truthy() => v.py_str(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests;

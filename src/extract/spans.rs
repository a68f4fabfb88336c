//! Tool spans: which spans are tool calls, and their names, arguments and
//! outputs, per instrumentation convention.
//!
//! The first convention that recognises a span names it (an explicit
//! `tool.name` always wins, the reference's rule). Each field then comes
//! from the first of the conventions recognising the span that carries it,
//! so a span that several conventions describe (traceloop-sdk's tool
//! spans carry GenAI names and traceloop's content) is read whole.

use super::library::{self, Library};
use super::{Args, ArgsFormat, Convention, ExtractConfig, ToolCall, output_text, parse_args};
use crate::pyvalue::{Dict, Value, json};
use crate::record::{AttrRef, SpanRef, Spans, Unread};
use crate::span::SpanId;

/// What extraction knows of a tool span's call besides the call itself,
/// to join it with the model's messages. Kept beside the calls rather than
/// around them, so that a trace with no messages (the common case) hands
/// its calls on without moving them again.
#[derive(Debug)]
pub(super) struct SpanCall {
    /// The model's id for the call (`gen_ai.tool.call.id`, a serialised
    /// tool message's `tool_call_id`): joins it to the model's request.
    /// Never the call's `id`, which only `tool.id` gives (the reference's).
    pub call_id: Option<String>,
    pub library: Library,
    pub parent: Option<SpanId>,
    /// Arguments that need the model's call to be read: a bare value, or
    /// positional values without names.
    pub pending: Option<Pending>,
    /// Whether arguments and output came from the span (false: the
    /// instrumentation did not record them there).
    pub has_args: bool,
    pub has_output: bool,
}

#[derive(Debug)]
pub(super) enum Pending {
    /// The bare value of a one-parameter tool.
    Bare(String),
    /// A wrapper of positional values.
    Wrapped(Dict),
}

/// The attributes extraction reads, resolved against one trace's records
/// once: each has a slot, which one pass over a span's attributes fills
/// (the last value of a repeated key wins, as in a Python dict).
pub(super) struct Keys<'c> {
    config: &'c ExtractConfig,
    /// By key id: the key's slot, for the keys read here.
    slot_of: Vec<Option<usize>>,
    pub slots_used: usize,
    synthesized: Option<usize>,
    id: Option<usize>,
    kind: Option<usize>,
    /// Every convention's detect attributes' slots, in order.
    detect: Vec<Option<usize>>,
    /// Each convention's name, arguments, output and call id slots.
    fields: Vec<[Option<usize>; 4]>,
    /// The model message attributes kept by exact key, with their slots.
    pub messages: Vec<(&'static str, Option<usize>)>,
}

impl<'c> Keys<'c> {
    pub fn new(spans: &Spans, config: &'c ExtractConfig) -> Keys<'c> {
        let mut keys = Keys {
            config,
            slot_of: Vec::new(),
            slots_used: 0,
            synthesized: None,
            id: None,
            kind: None,
            detect: Vec::new(),
            fields: Vec::new(),
            messages: Vec::new(),
        };
        keys.synthesized = keys.slot(spans, Some(&config.synthesized_attribute));
        keys.id = keys.slot(spans, Some(&config.id_attribute));
        keys.kind = keys.slot(spans, Some(OPENINFERENCE_KIND));
        for c in &config.conventions {
            for d in &c.detect {
                let slot = keys.slot(spans, Some(&d.attribute));
                keys.detect.push(slot);
            }
            let fields = [
                keys.slot(spans, Some(&c.name_attribute)),
                keys.slot(spans, c.args_attribute.as_deref()),
                keys.slot(spans, c.output_attribute.as_deref()),
                keys.slot(spans, c.call_id_attribute.as_deref()),
            ];
            keys.fields.push(fields);
        }
        keys.messages = super::messages::JSON_KEYS
            .iter()
            .map(|&k| (k, keys.slot(spans, Some(k))))
            .collect();
        keys
    }

    /// `name`'s slot (a new one unless it has one); `None` when no span of
    /// the trace can carry it.
    fn slot(&mut self, spans: &Spans, name: Option<&str>) -> Option<usize> {
        let i = spans.key(name?)?.index();
        if self.slot_of.len() <= i {
            self.slot_of.resize(i.checked_add(1)?, None);
        }
        let slot = self.slot_of.get_mut(i)?;
        Some(*slot.get_or_insert_with(|| {
            self.slots_used += 1;
            self.slots_used - 1
        }))
    }

    /// Fills `found` with `span`'s values of the keys read here; whether
    /// the span has flattened model messages too.
    pub fn read<'s>(&self, span: &SpanRef<'s>, found: &mut [Option<Unread<'s>>]) -> bool {
        found.fill(None);
        let mut messages = false;
        for (key, value) in span.keyed() {
            match self.slot_of.get(key.index()) {
                Some(Some(slot)) => {
                    if let Some(f) = found.get_mut(*slot) {
                        *f = Some(value);
                    }
                }
                _ => messages |= key.is_named(),
            }
        }
        messages
    }

    /// The conventions that recognise the span whose values are in
    /// `found`, first to last, with their field slots.
    fn conventions<'k>(
        &'k self,
        found: &'k [Option<Unread<'_>>],
    ) -> impl Iterator<Item = (&'c Convention, [Option<usize>; 4])> + 'k {
        let mut detect = self.detect.as_slice();
        self.config
            .conventions
            .iter()
            .zip(&self.fields)
            .filter_map(move |(c, fields)| {
                let (mine, rest) = detect.split_at_checked(c.detect.len())?;
                detect = rest;
                c.detects(mine.iter().map(|&s| value(found, s)))
                    .then_some((c, *fields))
            })
    }
}

/// OpenInference's span kind: a library's `TOOL` span without `tool.name`
/// (DSPy's) is a tool call named after the span.
pub(super) const OPENINFERENCE_KIND: &str = "openinference.span.kind";

/// The value in `slot`, if the span has one.
pub(super) fn value<'s>(found: &[Option<Unread<'s>>], slot: Option<usize>) -> Option<AttrRef<'s>> {
    found.get(slot?).copied().flatten()?.read()
}

/// The tool call a span stands for, if it is a tool span.
pub(super) fn tool_call<'s>(
    span: SpanRef<'s>,
    keys: &Keys<'_>,
    found: &[Option<Unread<'s>>],
) -> Option<(ToolCall, SpanCall)> {
    let get = |slot: Option<usize>| value(found, slot);
    if get(keys.synthesized).is_some_and(|v| v.truthy()) {
        return None;
    }
    let library = Library::of(span.scope());
    let mut conventions = keys.conventions(found).peekable();
    let Some(&(first, [name_slot, ..])) = conventions.peek() else {
        return library_tool(span, library, get(keys.kind));
    };
    let name = match get(name_slot) {
        Some(v) if v.truthy() => v.py_str(),
        _ => span.name().to_owned(),
    };
    if library == Library::GoogleAdk && name == "(merged tools)" {
        // ADK's merge of a turn's function responses, not a call.
        return None;
    }
    let reference = library.is_reference() && first.name == "openinference";
    // Each field from the first recognising convention that has it; the
    // reference's spans read only their own convention's.
    let mut args = None;
    let mut output = None;
    let mut call_id = None;
    let take = if reference { 1 } else { usize::MAX };
    for (c, [_, a, o, i]) in conventions.take(take) {
        if args.is_none() {
            args = get(a).map(|v| (v, c.args_format));
        }
        if output.is_none() {
            output = get(o);
        }
        if call_id.is_none() {
            call_id = get(i).filter(AttrRef::truthy).map(|v| v.py_str());
        }
    }
    let id = match get(keys.id) {
        None | Some(AttrRef::Empty) => None,
        Some(v) => Some(v.py_str()),
    };
    let mut call = ToolCall {
        name,
        id,
        args: Args::Dict(Dict::new()),
        output: String::new(),
        raw_output: output.map(|v| v.to_py()),
        output_from_raw: false,
        content_captured: args.is_some() || output.is_some(),
        content_missing: false,
        span_id: span.span_id,
        start_time_unix_nano: span.start_time_unix_nano,
        end_time_unix_nano: span.end_time_unix_nano,
    };
    // Hidden content (OpenInference's marker) is no content captured.
    let hidden = |v: Option<AttrRef<'_>>| v.and_then(|v| v.as_str()) == Some(library::REDACTED);
    if hidden(args.map(|(v, _)| v)) || hidden(output) {
        call.content_captured = false;
    }
    let mut pending = None;
    let (mut has_args, mut has_output) = (args.is_some(), output.is_some());
    if reference {
        call.args = parse_args(args.map(|(v, _)| v), first.args_format);
        call.output = output_text(output);
        call.output_from_raw = matches!(output, Some(AttrRef::Str(_)));
    } else {
        let args = args.filter(|(v, _)| !hidden(Some(*v)));
        let output = output.filter(|v| !hidden(Some(*v)));
        (has_args, has_output) = (args.is_some(), output.is_some());
        call.content_captured = has_args || has_output;
        (call.args, pending) = library_args(args);
        if let Some(v) = output {
            let (text, id_inside) = library_output(v);
            call.output = text;
            call.raw_output = Some(Value::Str(call.output.clone()));
            call_id = call_id.or(id_inside);
        }
    }
    Some((
        call,
        SpanCall {
            has_args,
            has_output,
            call_id,
            library,
            parent: span.parent_span_id,
            pending,
        },
    ))
}

/// A recognised library's tool span that no convention names: an
/// OpenInference `TOOL` span without `tool.name` (DSPy's), named after the
/// span (`get_weather.__call__` is `get_weather`).
fn library_tool(
    span: SpanRef<'_>,
    library: Library,
    kind: Option<AttrRef<'_>>,
) -> Option<(ToolCall, SpanCall)> {
    if library.is_reference() || kind.and_then(|k| k.as_str()) != Some("TOOL") {
        return None;
    }
    let name = span.name();
    let name = name.strip_suffix(".__call__").unwrap_or(name).to_owned();
    let input = span.attr("input.value");
    let output = span.attr("output.value");
    let (args, pending) = library_args(input.map(|v| (v, ArgsFormat::Value)));
    let (text, call_id) = output.map(library_output).unwrap_or_default();
    let call = ToolCall {
        name,
        id: None,
        args,
        output: text,
        raw_output: output.map(|v| v.to_py()),
        output_from_raw: false,
        content_captured: input.is_some() || output.is_some(),
        content_missing: false,
        span_id: span.span_id,
        start_time_unix_nano: span.start_time_unix_nano,
        end_time_unix_nano: span.end_time_unix_nano,
    };
    Some((
        call,
        SpanCall {
            has_args: input.is_some(),
            has_output: output.is_some(),
            call_id,
            library,
            parent: span.parent_span_id,
            pending,
        },
    ))
}

/// A recognised library's arguments (see `library.rs`): a JSON object or
/// a key-value list as it is, a wrapper unwrapped, a bare value waiting
/// for the model's call to name it.
pub(super) fn library_args(args: Option<(AttrRef<'_>, ArgsFormat)>) -> (Args, Option<Pending>) {
    let Some((value, format)) = args else {
        return (Args::Dict(Dict::new()), None);
    };
    let parsed = match value {
        AttrRef::Str(s) => match json::loads(s) {
            Ok(v) => v,
            // Not JSON: a Python literal (the reference's second try), else
            // a bare value.
            Err(_) => match crate::pyvalue::literal::literal_eval(s) {
                Ok(v @ Value::Dict(_)) => v,
                _ => return bare(s),
            },
        },
        kv @ AttrRef::KvList(_) => kv.to_py(),
        other => return bare(&other.py_str()),
    };
    match parsed {
        Value::Dict(d) => {
            if let Some(wrapped) = wrapper(&d, format) {
                return wrapped;
            }
            (Args::Dict(d), None)
        }
        Value::Str(s) => bare(&s),
        other => bare(&library::json_text(&other)),
    }
}

/// Arguments inside a wrapper: named now, or waiting for the model's
/// call to name positional values.
fn wrapper(d: &Dict, format: ArgsFormat) -> Option<(Args, Option<Pending>)> {
    let unwrapped = library::unwrap_args(d, None, None);
    let positional = matches!(d.get_str("args"), Some(Value::List(items)) if !items.is_empty());
    match unwrapped {
        Some(_) if positional => Some((Args::Dict(Dict::new()), Some(Pending::Wrapped(d.clone())))),
        Some(named) => Some((Args::Dict(named), None)),
        // traceloop's format names the keyword arguments, wrapper or not.
        None if format == ArgsFormat::TraceloopKwargs => match d.get_str("kwargs") {
            Some(Value::Dict(k)) => Some((Args::Dict(k.clone()), None)),
            _ => Some((Args::Dict(Dict::new()), None)),
        },
        None => None,
    }
}

/// A value that is not a JSON object: a one-parameter tool's bare value,
/// named once the model's call is known (`{}` until then, as the
/// reference reads it).
fn bare(text: &str) -> (Args, Option<Pending>) {
    (
        Args::Dict(Dict::new()),
        Some(Pending::Bare(text.to_owned())),
    )
}

/// A recognised library's output as the returned text (see
/// `library::output_text`), and the model's call id where a serialised
/// tool message carries it.
pub(super) fn library_output(v: AttrRef<'_>) -> (String, Option<String>) {
    match v {
        AttrRef::Str(s) => (library::output_text(s), tool_call_id_in(s)),
        other => {
            let py = other.to_py();
            let text = library::value_text(&py).unwrap_or_else(|| library::json_text(&py));
            (text, None)
        }
    }
}

/// The `tool_call_id` of a serialised tool message (LangChain's).
fn tool_call_id_in(text: &str) -> Option<String> {
    if !text.contains("tool_call_id") {
        return None;
    }
    fn find(v: &Value) -> Option<String> {
        match v {
            Value::Dict(d) => {
                if let Some(Value::Str(id)) = d.get_str("tool_call_id") {
                    return Some(id.clone());
                }
                d.iter().find_map(|(_, v)| find(v))
            }
            _ => None,
        }
    }
    find(&json::loads(text).ok()?)
}

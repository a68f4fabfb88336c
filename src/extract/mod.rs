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

pub use conventions::{ArgsFormat, Convention, Detect, ExtractConfig};

use crate::pyvalue::{Dict, Value, json, literal};
use crate::record::{AttrRef, SpanRef, Spans, Unread};
use crate::span::SpanId;

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
    /// Whether the span carried an arguments or output attribute at all.
    pub content_captured: bool,
    pub span_id: SpanId,
    pub start_time_unix_nano: u64,
    pub end_time_unix_nano: u64,
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

impl Args {
    pub fn dict(&self) -> Result<&Dict, &str> {
        match self {
            Args::Dict(d) => Ok(d),
            Args::Invalid(e) => Err(e),
        }
    }
}

/// Extracts the tool calls of one trace's spans, in start-time order.
pub fn extract(spans: &Spans, config: &ExtractConfig) -> Vec<ToolCall> {
    let keys = Keys::new(spans, config);
    let mut found = vec![None; keys.slots_used];
    // Sized for the worst case (every span a tool call): a ToolCall is large,
    // and growing the vector copied them more than once per trace.
    let mut calls = Vec::with_capacity(spans.len());
    calls.extend(spans.iter().filter_map(|s| tool_call(s, &keys, &mut found)));
    calls.sort_by_key(|c| (c.start_time_unix_nano, c.end_time_unix_nano, c.span_id));
    calls
}

/// The attributes extraction reads, resolved against one trace's records
/// once: each has a slot, which one pass over a span's attributes fills
/// (the last value of a repeated key wins, as in a Python dict).
struct Keys<'c> {
    config: &'c ExtractConfig,
    /// By key id: the key's slot, for the keys read here.
    slot_of: Vec<Option<usize>>,
    slots_used: usize,
    synthesized: Option<usize>,
    id: Option<usize>,
    /// Every convention's detect attributes' slots, in order.
    detect: Vec<Option<usize>>,
    /// Each convention's name, arguments and output slots.
    fields: Vec<[Option<usize>; 3]>,
}

impl<'c> Keys<'c> {
    fn new(spans: &Spans, config: &'c ExtractConfig) -> Keys<'c> {
        let mut keys = Keys {
            config,
            slot_of: Vec::new(),
            slots_used: 0,
            synthesized: None,
            id: None,
            detect: Vec::new(),
            fields: Vec::new(),
        };
        keys.synthesized = keys.slot(spans, Some(&config.synthesized_attribute));
        keys.id = keys.slot(spans, Some(&config.id_attribute));
        for c in &config.conventions {
            for d in &c.detect {
                let slot = keys.slot(spans, Some(&d.attribute));
                keys.detect.push(slot);
            }
            let fields = [
                keys.slot(spans, Some(&c.name_attribute)),
                keys.slot(spans, c.args_attribute.as_deref()),
                keys.slot(spans, c.output_attribute.as_deref()),
            ];
            keys.fields.push(fields);
        }
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

    /// Fills `found` with `span`'s values of the keys read here.
    fn read<'s>(&self, span: &SpanRef<'s>, found: &mut [Option<Unread<'s>>]) {
        found.fill(None);
        for (key, value) in span.keyed() {
            if let Some(Some(slot)) = self.slot_of.get(key.index())
                && let Some(f) = found.get_mut(*slot)
            {
                *f = Some(value);
            }
        }
    }

    /// The first convention that recognises the span whose values are in
    /// `found`, with its field slots.
    fn convention(
        &self,
        found: &[Option<Unread<'_>>],
    ) -> Option<(&'c Convention, [Option<usize>; 3])> {
        let mut detect = self.detect.as_slice();
        self.config
            .conventions
            .iter()
            .zip(&self.fields)
            .find_map(|(c, fields)| {
                let (mine, rest) = detect.split_at_checked(c.detect.len())?;
                detect = rest;
                c.detects(mine.iter().map(|&s| value(found, s)))
                    .then_some((c, *fields))
            })
    }
}

/// The value in `slot`, if the span has one.
fn value<'s>(found: &[Option<Unread<'s>>], slot: Option<usize>) -> Option<AttrRef<'s>> {
    found.get(slot?).copied().flatten()?.read()
}

/// The tool call a span stands for, if it is a tool span under any convention.
fn tool_call<'s>(
    span: SpanRef<'s>,
    keys: &Keys<'_>,
    found: &mut [Option<Unread<'s>>],
) -> Option<ToolCall> {
    if !span.has_attributes() {
        return None;
    }
    keys.read(&span, found);
    let get = |slot: Option<usize>| value(found, slot);
    if get(keys.synthesized).is_some_and(|v| v.truthy()) {
        return None;
    }
    let (convention, [name, args, output]) = keys.convention(found)?;
    Some(call_from(
        &span,
        convention,
        [get(name), get(keys.id), get(args), get(output)],
    ))
}

/// The tool call of a span that `convention` recognises, from the values
/// of its name, id, arguments and output attributes.
fn call_from(
    span: &SpanRef<'_>,
    convention: &Convention,
    values: [Option<AttrRef<'_>>; 4],
) -> ToolCall {
    let [name, id, args, output] = values;
    ToolCall {
        name: match name {
            Some(v) if v.truthy() => v.py_str(),
            _ => span.name().to_owned(),
        },
        id: match id {
            None | Some(AttrRef::Empty) => None,
            Some(v) => Some(v.py_str()),
        },
        args: parse_args(args, convention.args_format),
        output: output_text(output),
        raw_output: output.map(|v| v.to_py()),
        content_captured: args.is_some() || output.is_some(),
        span_id: span.span_id,
        start_time_unix_nano: span.start_time_unix_nano,
        end_time_unix_nano: span.end_time_unix_nano,
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

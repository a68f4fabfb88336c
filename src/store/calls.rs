//! A tool call as a result keeps it: the JSON text the API lists, and what
//! the evaluators read besides, exactly, as text. A parsed call (its
//! arguments a Python dict, a dozen allocations) is rebuilt only when a
//! score's details are rendered, which is rare next to storing a result.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use crate::extract::{Args, ToolCall, output_text};
use crate::pyvalue::{Value, exact, json};
use crate::record::AttrRef;
use crate::span::SpanId;

use super::StoredArgs;

/// See the module's documentation.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredCall {
    pub name: String,
    pub id: Option<String>,
    /// The arguments as the API shows them.
    pub args: StoredArgs,
    pub(crate) exact: ExactArgs,
    pub(crate) output: Output,
    pub(crate) raw: RawOutput,
    /// Whether the span carried an arguments or output attribute at all.
    pub content_captured: bool,
    /// The instrumentation captured no content for the call (see
    /// [`ToolCall::content_missing`]).
    pub content_missing: bool,
    pub span_id: SpanId,
    pub start_time_unix_nano: u64,
    pub end_time_unix_nano: u64,
}

/// How the arguments read back as the dict the evaluators saw.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ExactArgs {
    /// `args` is plain JSON ([`exact::is_plain_dict`]): Python's `json`
    /// reads it back as it was.
    Plain,
    /// [`exact`] text of a dict JSON has no form for.
    Tagged(Box<str>),
    /// The reference could not build the call: why.
    Invalid(Box<str>),
}

/// The output as the evaluators read it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Output {
    Text(String),
    /// The reference's rule of the raw output, a [`RawOutput::Text`]
    /// ([`ToolCall::output_from_raw`]): not kept twice.
    FromRaw,
}

/// The raw output attribute (deepeval's `output`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RawOutput {
    None,
    /// The output's own text (most calls).
    Output,
    /// Another string.
    Text(Box<str>),
    /// [`exact`] text of another value.
    Value(Box<str>),
}

impl From<ToolCall> for StoredCall {
    /// The call kept, its strings moved.
    fn from(c: ToolCall) -> StoredCall {
        let args = StoredArgs::from_args(&c.args);
        let exact = match c.args {
            Args::Dict(d) if exact::is_plain_dict(&d) => ExactArgs::Plain,
            Args::Dict(d) => {
                let mut out = String::new();
                exact::write_dict(&d, &mut out);
                ExactArgs::Tagged(out.into_boxed_str())
            }
            Args::Invalid(why) => ExactArgs::Invalid(why.into_boxed_str()),
        };
        let from_raw = c.output_from_raw && matches!(c.raw_output, Some(Value::Str(_)));
        let raw = match c.raw_output {
            None => RawOutput::None,
            Some(Value::Str(s)) if s == c.output => RawOutput::Output,
            Some(Value::Str(s)) => {
                debug_assert!(
                    !from_raw || output_text(Some(AttrRef::Str(&s))) == c.output,
                    "an output from its raw output is the rule's"
                );
                RawOutput::Text(s.into_boxed_str())
            }
            Some(v) => {
                let mut out = String::new();
                exact::write(&v, &mut out);
                RawOutput::Value(out.into_boxed_str())
            }
        };
        StoredCall {
            name: c.name,
            id: c.id,
            args,
            exact,
            output: match (from_raw, &raw) {
                (true, RawOutput::Text(_)) => Output::FromRaw,
                _ => Output::Text(c.output),
            },
            raw,
            content_captured: c.content_captured,
            content_missing: c.content_missing,
            span_id: c.span_id,
            start_time_unix_nano: c.start_time_unix_nano,
            end_time_unix_nano: c.end_time_unix_nano,
        }
    }
}

impl StoredCall {
    /// The output, as the evaluators and the API read it.
    pub fn output(&self) -> Cow<'_, str> {
        match (&self.output, &self.raw) {
            (Output::Text(t), _) => Cow::Borrowed(t),
            (Output::FromRaw, RawOutput::Text(raw)) => {
                Cow::Owned(output_text(Some(AttrRef::Str(raw))))
            }
            // Not made by `From`: an output without its raw text is empty.
            (Output::FromRaw, _) => Cow::Borrowed(""),
        }
    }

    /// The call as extraction made it, for an evaluator to read again.
    pub fn to_call(&self) -> Result<ToolCall, String> {
        let args = match &self.exact {
            ExactArgs::Plain => match json::loads(self.args.as_json_text()) {
                Ok(Value::Dict(d)) => Args::Dict(d),
                Ok(_) => return Err("stored arguments are not an object".into()),
                Err(e) => return Err(format!("stored arguments: {e}")),
            },
            ExactArgs::Tagged(text) => match exact::read(text) {
                Ok(Value::Dict(d)) => Args::Dict(d),
                Ok(_) => return Err("stored arguments are not a dict".into()),
                Err(e) => return Err(format!("stored arguments: {e}")),
            },
            ExactArgs::Invalid(why) => Args::Invalid(why.to_string()),
        };
        let output = self.output().into_owned();
        let raw_output = match &self.raw {
            RawOutput::None => None,
            RawOutput::Output => Some(Value::Str(output.clone())),
            RawOutput::Text(s) => Some(Value::Str(s.to_string())),
            RawOutput::Value(text) => {
                Some(exact::read(text).map_err(|e| format!("stored raw output: {e}"))?)
            }
        };
        Ok(ToolCall {
            name: self.name.clone(),
            id: self.id.clone(),
            args,
            output,
            raw_output,
            output_from_raw: self.output == Output::FromRaw,
            content_captured: self.content_captured,
            content_missing: self.content_missing,
            span_id: self.span_id,
            start_time_unix_nano: self.start_time_unix_nano,
            end_time_unix_nano: self.end_time_unix_nano,
        })
    }

    /// The memory the call holds, estimated (what `store.max_bytes` counts).
    pub fn approx_bytes(&self) -> usize {
        let exact = match &self.exact {
            ExactArgs::Plain => 0,
            ExactArgs::Tagged(t) | ExactArgs::Invalid(t) => t.len(),
        };
        let raw = match &self.raw {
            RawOutput::None | RawOutput::Output => 0,
            RawOutput::Text(t) | RawOutput::Value(t) => t.len(),
        };
        let output = match &self.output {
            Output::Text(t) => t.len(),
            Output::FromRaw => 0,
        };
        std::mem::size_of::<StoredCall>()
            + self.name.len()
            + self.id.as_ref().map_or(0, String::len)
            + self.args.as_json_text().len()
            + exact
            + output
            + raw
    }

    /// A call as the API shows one (for tests and tools): its arguments as
    /// JSON, content captured, no raw output.
    pub fn shown(
        name: impl Into<String>,
        id: Option<String>,
        args: &serde_json::Value,
        output: impl Into<String>,
        span_id: SpanId,
        times: (u64, u64),
    ) -> StoredCall {
        ToolCall::shown(name, id, args, output, span_id, times).into()
    }
}

/// The calls of a result as the evaluators read them again.
pub fn to_calls(calls: &[StoredCall]) -> Result<Vec<ToolCall>, String> {
    calls.iter().map(StoredCall::to_call).collect()
}

/// A result's tool calls, kept once and shared by the record and its
/// rendered explanations. A record read back from a database keeps its
/// row's text and parses it when the calls are first read: a list page
/// reads a thousand records and shows none of their calls.
#[derive(Clone)]
pub struct Calls(Arc<Kept>);

enum Kept {
    Calls(Box<[StoredCall]>),
    Row {
        text: Box<str>,
        parse: fn(&str) -> Result<Vec<StoredCall>, String>,
        parsed: OnceLock<Result<Box<[StoredCall]>, CallsError>>,
    },
}

/// [`Calls`] as held: parsed, or a stored row's text.
pub(crate) enum Held<'a> {
    Calls(&'a [StoredCall]),
    Row(&'a str),
}

/// A stored row's tool calls that cannot be read back (a row this version
/// did not write, or a damaged file).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct CallsError {
    /// The trace's ID in hex, once known.
    trace: Option<String>,
    why: String,
}

impl CallsError {
    /// The error, naming the trace whose calls these are.
    pub(crate) fn of_trace(self, trace_id: &crate::span::TraceId) -> CallsError {
        CallsError {
            trace: Some(trace_id.to_hex()),
            ..self
        }
    }
}

impl std::fmt::Display for CallsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.trace {
            Some(trace) => write!(f, "unreadable tool calls of trace {trace}: {}", self.why),
            None => write!(f, "unreadable tool calls: {}", self.why),
        }
    }
}

impl Calls {
    /// The calls of a row's `text`, which `parse` reads when they are first
    /// needed.
    pub(crate) fn of_row(
        text: String,
        parse: fn(&str) -> Result<Vec<StoredCall>, String>,
    ) -> Calls {
        Calls(Arc::new(Kept::Row {
            text: text.into_boxed_str(),
            parse,
            parsed: OnceLock::new(),
        }))
    }

    /// The calls (a row's, parsed on the first read).
    pub fn read(&self) -> Result<&[StoredCall], CallsError> {
        match &*self.0 {
            Kept::Calls(calls) => Ok(calls),
            Kept::Row {
                text,
                parse,
                parsed,
            } => match parsed.get_or_init(|| {
                parse(text)
                    .map(Vec::into_boxed_slice)
                    .map_err(|why| CallsError { trace: None, why })
            }) {
                Ok(calls) => Ok(calls),
                Err(e) => Err(e.clone()),
            },
        }
    }

    /// How the calls are held, for a database row to be written from them.
    pub(crate) fn held(&self) -> Held<'_> {
        match &*self.0 {
            Kept::Calls(calls) => Held::Calls(calls),
            Kept::Row { text, .. } => Held::Row(text),
        }
    }

    /// The memory the calls hold, estimated (what `store.max_bytes` counts).
    /// A row's is counted as its text and its parsed calls, about as large,
    /// whether or not they are parsed yet: an estimate made once (a store
    /// counts a record at insertion) holds after the first read.
    pub fn approx_bytes(&self) -> usize {
        match &*self.0 {
            Kept::Calls(c) => c.iter().map(StoredCall::approx_bytes).sum(),
            Kept::Row { text, .. } => text.len().saturating_mul(2),
        }
    }
}

impl Default for Calls {
    fn default() -> Calls {
        Calls::from(Vec::new())
    }
}

impl From<Vec<StoredCall>> for Calls {
    fn from(calls: Vec<StoredCall>) -> Calls {
        Calls(Arc::new(Kept::Calls(calls.into_boxed_slice())))
    }
}

impl FromIterator<StoredCall> for Calls {
    fn from_iter<I: IntoIterator<Item = StoredCall>>(calls: I) -> Calls {
        Calls::from(calls.into_iter().collect::<Vec<_>>())
    }
}

/// Equal when they read back as the same calls.
impl PartialEq for Calls {
    fn eq(&self, other: &Calls) -> bool {
        self.read() == other.read()
    }
}

impl std::fmt::Debug for Calls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.read().fmt(f)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::pyvalue::{Dict, Int};

    /// A call named `search` with these arguments and raw output.
    pub(crate) fn call(args: Args, raw_output: Option<Value>) -> ToolCall {
        ToolCall {
            name: "search".into(),
            id: Some("call_1".into()),
            args,
            output: "found".into(),
            raw_output,
            output_from_raw: false,
            content_captured: true,
            content_missing: false,
            span_id: SpanId([7; 8]),
            start_time_unix_nano: 1,
            end_time_unix_nano: 2,
        }
    }

    /// A kept call gives back the call the evaluators read: Python types
    /// JSON has no form for, the raw output, an invalid call's reason and
    /// the content flags.
    #[test]
    fn a_kept_call_gives_back_the_call() {
        let mut plain = Dict::new();
        plain.insert_str("city", Value::str("Paris"));
        plain.insert_str("ratio", Value::Float(1.0));
        let mut typed = Dict::new();
        typed.insert_str(
            "pair",
            Value::Tuple(vec![Value::Int(Int::Small(1)), Value::Float(f64::NAN)]),
        );
        let _ = typed.insert(Value::Int(Int::Small(5)), Value::Bytes(vec![0, 255]));
        let mut missing = call(Args::Dict(Dict::new()), None);
        missing.content_missing = true;
        missing.content_captured = false;
        let mut from_raw = call(
            Args::Dict(Dict::new()),
            Some(Value::str(r#"{"content": {"unit": "C", "value": 21.5}}"#)),
        );
        from_raw.output = "{'unit': 'C', 'value': 21.5}".into();
        from_raw.output_from_raw = true;
        let calls = vec![
            from_raw,
            call(Args::Dict(plain), Some(Value::str("found"))),
            call(
                Args::Dict(typed),
                Some(Value::List(vec![Value::Bool(true)])),
            ),
            call(Args::Dict(Dict::new()), Some(Value::str("other text"))),
            call(Args::Invalid("unhashable type: 'dict'".into()), None),
            missing,
        ];
        let kept: Vec<StoredCall> = calls.iter().cloned().map(StoredCall::from).collect();
        assert_eq!(to_calls(&kept), Ok(calls));
        assert_eq!(kept[0].output, Output::FromRaw);
        assert_eq!(kept[0].output(), "{'unit': 'C', 'value': 21.5}");
        assert_eq!(kept[1].raw, RawOutput::Output);
        assert_eq!(kept[1].exact, ExactArgs::Plain);
        assert_eq!(
            kept[1].args.as_json_text(),
            r#"{"city":"Paris","ratio":1.0}"#
        );
    }
}

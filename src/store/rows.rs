//! A [`StoredResult`] as database columns, for every database backend: what
//! is filtered on has its own column; what is only shown (tool calls, the
//! binding) is JSON text. A deterministic evaluator's score keeps no
//! details: its row names the evaluator's config and criteria by hash
//! (`explainer`, one row of their own for all the scores they made), and
//! the details are rendered from them and the trace's tool calls, which are
//! stored exactly, when read. Other details (LLM judges', errors', rows
//! written before) are stored as JSON text.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::value::RawValue;
use serde_json::{Value as Json, json};

use super::calls::{Calls, ExactArgs, Held, Output, RawOutput, StoredCall};
use super::db::DbError;
use super::{
    Details, Explainer, RootSummary, Score, StoredArgs, StoredOutcome, StoredResult, TraceStatus,
};
use crate::criteria::{Binding, ItemEvaluator, Source};
use crate::evaluator::{EvaluatorType, Status};
use crate::extract::Args;
use crate::pyvalue::{Value, exact};
use crate::span::{SpanId, TraceId};

/// Nanoseconds since the Unix epoch, as a database's signed 64-bit integer
/// (lossless both ways; times before 1970 are clamped to it).
pub(crate) fn unix_nanos(t: SystemTime) -> i64 {
    let ns = t.duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos();
    i64::try_from(ns).unwrap_or(i64::MAX)
}

fn time_of(ns: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(u64::try_from(ns).unwrap_or(0))
}

/// A record with the JSON text of its trace row (tool calls, binding)
/// already made, by the thread that hands it to the writer: every commit
/// waits on the one writer thread, so it does not format JSON too
/// (perf/README.md).
pub struct Prepared {
    pub record: Arc<StoredResult>,
    tool_calls: String,
    binding: Option<String>,
    /// Each score's details: the hash of what renders them, or their text
    /// (rendered here, for the same reason, when nothing stored can).
    details: Vec<StoredDetails>,
    /// The sources those hashes name, each once.
    pub(crate) sources: Vec<Arc<Source>>,
}

enum StoredDetails {
    Text(String),
    Rendered([u8; 16]),
}

impl Prepared {
    pub fn new(record: Arc<StoredResult>) -> Prepared {
        let mut sources: Vec<Arc<Source>> = Vec::new();
        let details = record
            .scores
            .iter()
            .map(|s| match s.outcome.details.source() {
                Some(source) => {
                    if !sources.iter().any(|k| k.hash == source.hash) {
                        sources.push(source.clone());
                    }
                    StoredDetails::Rendered(source.hash)
                }
                None => StoredDetails::Text(s.outcome.details.text().into_owned()),
            })
            .collect();
        Prepared {
            tool_calls: match record.tool_calls.held() {
                Held::Calls(calls) => tool_calls_text(calls),
                // A record read back is written again as it was read.
                Held::Row(text) => text.to_owned(),
            },
            binding: record.binding.as_ref().map(|b| binding_json(b).to_string()),
            details,
            sources,
            record,
        }
    }
}

/// The trace row's columns, in the order of [`TRACE_COLUMNS`].
pub(crate) struct TraceRow<'a> {
    pub trace_id: [u8; 16],
    pub revision: i64,
    pub status: &'static str,
    pub complete: bool,
    pub evaluated_at: Option<i64>,
    pub stored_at: i64,
    pub root_span_id: Option<[u8; 8]>,
    pub root_name: Option<&'a str>,
    pub root_service: Option<&'a str>,
    /// Span times are the client's u64 nanoseconds, bit-cast.
    pub root_start: Option<i64>,
    pub root_end: Option<i64>,
    pub binding: Option<&'a str>,
    pub tool_calls: &'a str,
    pub content_captured: bool,
    pub span_count: i64,
}

/// Columns of the `traces` table, in [`TraceRow`]'s order.
pub(crate) const TRACE_COLUMNS: &str = "trace_id, revision, status, complete, evaluated_at, \
     stored_at, root_span_id, root_name, root_service, root_start, root_end, binding, \
     tool_calls, content_captured, span_count";

/// A score row's columns; `score` and `threshold` are also kept as their
/// exact bits (a database may store `-0.0` as `0` and a NaN as NULL), the
/// REAL column being what `max_score` filters on.
pub(crate) struct ScoreRow<'a> {
    pub idx: i64,
    pub evaluator_id: &'a str,
    pub evaluator_type: &'static str,
    pub status: &'static str,
    pub score: Option<f64>,
    pub score_bits: Option<i64>,
    pub score_is_int: bool,
    pub passed: Option<bool>,
    pub threshold_bits: Option<i64>,
    /// `None` when `explainer` renders them.
    pub details: Option<&'a str>,
    pub error: Option<&'a str>,
    /// The hash of the [`Source`] that renders the details.
    pub explainer: Option<&'a [u8]>,
}

pub(crate) const SCORE_COLUMNS: &str = "idx, evaluator_id, evaluator_type, status, score, \
     score_bits, score_is_int, passed, threshold_bits, details, error, explainer";

pub(crate) fn trace_row(p: &Prepared, stored_at: i64) -> TraceRow<'_> {
    let r = &p.record;
    let root = r.root.as_ref();
    TraceRow {
        trace_id: r.trace_id.0,
        revision: i64::from(r.revision),
        status: r.status.as_str(),
        complete: r.complete,
        evaluated_at: r.evaluated_at.map(unix_nanos),
        stored_at,
        root_span_id: root.map(|x| x.span_id.0),
        root_name: root.map(|x| x.name.as_str()),
        root_service: root.and_then(|x| x.service.as_deref()),
        root_start: root.map(|x| x.start_time_unix_nano as i64),
        root_end: root.map(|x| x.end_time_unix_nano as i64),
        binding: p.binding.as_deref(),
        tool_calls: &p.tool_calls,
        content_captured: r.content_captured,
        span_count: i64::try_from(r.span_count).unwrap_or(i64::MAX),
    }
}

pub(crate) fn score_rows(p: &Prepared) -> impl Iterator<Item = ScoreRow<'_>> {
    p.record.scores.iter().enumerate().map(|(i, s)| {
        let o = &s.outcome;
        ScoreRow {
            idx: i as i64,
            evaluator_id: &s.evaluator_id,
            evaluator_type: s.evaluator_type.id(),
            status: o.status.as_str(),
            score: o.score.filter(|v| !v.is_nan()),
            score_bits: o.score.map(|v| v.to_bits() as i64),
            score_is_int: o.score_is_int,
            passed: o.passed,
            threshold_bits: o.threshold.map(|v| v.to_bits() as i64),
            details: match p.details.get(i) {
                Some(StoredDetails::Text(t)) => Some(t.as_str()),
                Some(StoredDetails::Rendered(_)) => None,
                None => Some("null"),
            },
            error: o.error.as_deref(),
            explainer: match p.details.get(i) {
                Some(StoredDetails::Rendered(hash)) => Some(&hash[..]),
                Some(StoredDetails::Text(_)) | None => None,
            },
        }
    })
}

fn binding_json(b: &Binding) -> Json {
    match b {
        Binding::EvalSet { eval_set, item } => json!({"eval_set": eval_set, "item": item}),
        Binding::Rule { rule } => json!({"rule": rule}),
        Binding::Default => json!({}),
    }
}

fn binding_of(text: &str) -> Option<Binding> {
    let j: Json = serde_json::from_str(text).ok()?;
    let s = |k: &str| j.get(k).and_then(Json::as_str).map(Arc::<str>::from);
    Some(match (s("eval_set"), s("item"), s("rule")) {
        (Some(eval_set), Some(item), _) => Binding::EvalSet { eval_set, item },
        (_, _, Some(rule)) => Binding::Rule { rule },
        _ => Binding::Default,
    })
}

/// A tool call's columns in the `tool_calls` JSON text ([`ToolCallRead`]
/// reads them back): what the API shows, and what the evaluators read
/// besides, exactly ([`StoredCall`]). Arguments that are plain JSON are
/// stored once, as the API shows them (`args`), which reads back exactly;
/// others as exact text (`py`); invalid ones as their reason (`invalid`).
/// The output is not stored when it is the reference's rule of the raw
/// output (`output_from_raw`). The raw output is the output's text in most
/// other calls (`raw_is_text`); else
/// a string (`raw_text`) or an exact value (`raw`). A text that is itself
/// JSON (most outputs are) is written as that JSON (`output_json`,
/// `raw_json`), which reads back as the same text without an escape for
/// each of its quotes: a JSON-encoded output stored as a string took half
/// again its length.
#[derive(serde::Serialize)]
struct ToolCallColumns<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    py: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    invalid: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_json: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    output_from_raw: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    raw_is_text: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw_text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw_json: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    content_missing: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    content_uncaptured: bool,
    span_id: String,
    start: u64,
    end: u64,
}

/// `text` as a JSON value to write as it is, when it is one: it then
/// reads back as exactly `text`. serde_json checks a raw value without
/// recursing, at any depth, so no depth scan is needed here (and a row's
/// raw values are skipped the same way when it is read back).
fn as_json(text: &str) -> Option<&RawValue> {
    let first = text.as_bytes().first()?;
    // Most texts that are not JSON show it at once: a look before the parse.
    if !matches!(first, b'{' | b'[' | b'"') {
        return None;
    }
    serde_json::from_str::<&RawValue>(text)
        .ok()
        .filter(|raw| raw.get() == text)
}

/// Serialized straight from the calls.
fn tool_calls_text(calls: &[StoredCall]) -> String {
    let columns: Vec<ToolCallColumns<'_>> = calls
        .iter()
        .map(|c| {
            let (raw_text, raw_json) = match &c.raw {
                RawOutput::Text(t) => match as_json(t) {
                    Some(json) => (None, Some(json)),
                    None => (Some(&**t), None),
                },
                RawOutput::None | RawOutput::Output | RawOutput::Value(_) => (None, None),
            };
            let output = match &c.output {
                Output::Text(t) => Some(t.as_str()),
                Output::FromRaw => None,
            };
            let output_json = output.and_then(as_json);
            ToolCallColumns {
                name: &c.name,
                id: c.id.as_deref(),
                // Written by this service: it reads back (a `null` otherwise).
                args: (c.exact == ExactArgs::Plain).then(|| {
                    crate::json_text::deserialize_stored(c.args.as_json_text())
                        .unwrap_or(RawValue::NULL)
                }),
                py: match &c.exact {
                    ExactArgs::Tagged(t) => Some(t),
                    ExactArgs::Plain | ExactArgs::Invalid(_) => None,
                },
                invalid: match &c.exact {
                    ExactArgs::Invalid(why) => Some(why),
                    ExactArgs::Plain | ExactArgs::Tagged(_) => None,
                },
                output: output.filter(|_| output_json.is_none()),
                output_json,
                output_from_raw: c.output == Output::FromRaw,
                raw_is_text: c.raw == RawOutput::Output,
                raw_text,
                raw_json,
                raw: match &c.raw {
                    RawOutput::Value(v) => Some(v),
                    RawOutput::None | RawOutput::Output | RawOutput::Text(_) => None,
                },
                content_missing: c.content_missing,
                content_uncaptured: !c.content_captured,
                span_id: c.span_id.to_hex(),
                start: c.start_time_unix_nano,
                end: c.end_time_unix_nano,
            }
        })
        .collect();
    // Serializing strings, numbers and raw JSON values cannot fail.
    serde_json::to_string(&columns).unwrap_or_else(|_| "[]".to_owned())
}

/// [`ToolCallColumns`] read back. A row written before calls were stored
/// exactly has `args` and `output` only (its scores' details are stored as
/// text).
#[derive(serde::Deserialize)]
struct ToolCallRead {
    name: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    args: Option<Box<RawValue>>,
    #[serde(default)]
    py: Option<String>,
    #[serde(default)]
    invalid: Option<String>,
    #[serde(default)]
    output: Option<String>,
    #[serde(default)]
    output_json: Option<Box<RawValue>>,
    #[serde(default)]
    output_from_raw: bool,
    #[serde(default)]
    raw_is_text: bool,
    #[serde(default)]
    raw_text: Option<String>,
    #[serde(default)]
    raw_json: Option<Box<RawValue>>,
    #[serde(default)]
    raw: Option<String>,
    #[serde(default)]
    content_missing: bool,
    #[serde(default)]
    content_uncaptured: bool,
    span_id: String,
    start: u64,
    end: u64,
}

impl ToolCallRead {
    /// The call as it was kept; nothing is parsed but the span ID.
    fn call(self) -> Option<StoredCall> {
        let (args, exact) = match (self.invalid, self.py, self.args) {
            (Some(why), _, _) => (
                StoredArgs::from_args(&Args::Invalid(why.clone())),
                ExactArgs::Invalid(why.into_boxed_str()),
            ),
            (None, Some(py), _) => {
                let Value::Dict(d) = exact::read(&py).ok()? else {
                    return None;
                };
                (
                    StoredArgs::from_args(&Args::Dict(d)),
                    ExactArgs::Tagged(py.into_boxed_str()),
                )
            }
            (None, None, Some(json)) => (StoredArgs::from_raw(json), ExactArgs::Plain),
            (None, None, None) => return None,
        };
        let output = match (self.output, self.output_json, self.output_from_raw) {
            (Some(text), _, _) => Output::Text(text),
            (None, Some(json), _) => Output::Text(json.get().to_owned()),
            (None, None, true) => Output::FromRaw,
            (None, None, false) => return None,
        };
        let raw = match (self.raw_is_text, self.raw_text, self.raw_json, self.raw) {
            (true, _, _, _) => RawOutput::Output,
            (false, Some(text), _, _) => RawOutput::Text(text.into_boxed_str()),
            (false, None, Some(json), _) => RawOutput::Text(json.get().into()),
            (false, None, None, Some(v)) => RawOutput::Value(v.into_boxed_str()),
            (false, None, None, None) => RawOutput::None,
        };
        if output == Output::FromRaw && !matches!(raw, RawOutput::Text(_)) {
            return None;
        }
        Some(StoredCall {
            name: self.name,
            id: self.id,
            args,
            exact,
            output,
            raw,
            content_captured: !self.content_uncaptured,
            content_missing: self.content_missing,
            span_id: SpanId::parse_hex(&self.span_id).ok()?,
            start_time_unix_nano: self.start,
            end_time_unix_nano: self.end,
        })
    }
}

/// The `tool_calls` column's text read back ([`Calls`] calls it when the
/// calls are first read).
fn calls_of(text: &str) -> Result<Vec<StoredCall>, String> {
    let calls: Vec<ToolCallRead> =
        crate::json_text::deserialize_stored(text).map_err(|e| e.to_string())?;
    calls
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            c.call()
                .ok_or_else(|| format!("call {i} has no arguments, output or span ID it can read"))
        })
        .collect()
}

/// Why a stored row could not be read back (a row this version did not
/// write, or a damaged file).
fn row_error(trace_id: &TraceId, what: &str) -> DbError {
    DbError::Row(format!("stored row of trace {}: {what}", trace_id.to_hex()))
}

/// A trace row read back (scores are added by [`score_of`]).
pub(crate) fn record_of(row: TraceRowOwned) -> Result<StoredResult, DbError> {
    let trace_id = TraceId(row.trace_id);
    let bad = |what: &str| row_error(&trace_id, what);
    let status = TraceStatus::parse(&row.status).ok_or_else(|| bad("unknown status"))?;
    let root = match (row.root_span_id, row.root_name) {
        (Some(id), Some(name)) => Some(RootSummary {
            span_id: SpanId(id),
            name,
            service: row.root_service,
            start_time_unix_nano: row.root_start.unwrap_or(0) as u64,
            end_time_unix_nano: row.root_end.unwrap_or(0) as u64,
        }),
        _ => None,
    };
    let binding = match row.binding {
        None => None,
        Some(text) => Some(binding_of(&text).ok_or_else(|| bad("unreadable binding"))?),
    };
    let tool_calls = Calls::of_row(row.tool_calls, calls_of);
    Ok(StoredResult {
        trace_id,
        status,
        complete: row.complete,
        revision: u32::try_from(row.revision).map_err(|_| bad("revision out of range"))?,
        evaluated_at: row.evaluated_at.map(time_of),
        root,
        binding,
        tool_calls,
        content_captured: row.content_captured,
        scores: Vec::new(),
        span_count: usize::try_from(row.span_count).unwrap_or(0),
        judged: None,
    })
}

/// [`TraceRow`] as read back.
pub(crate) struct TraceRowOwned {
    pub trace_id: [u8; 16],
    pub revision: i64,
    pub status: String,
    pub complete: bool,
    pub evaluated_at: Option<i64>,
    pub root_span_id: Option<[u8; 8]>,
    pub root_name: Option<String>,
    pub root_service: Option<String>,
    pub root_start: Option<i64>,
    pub root_end: Option<i64>,
    pub binding: Option<String>,
    pub tool_calls: String,
    pub content_captured: bool,
    pub span_count: i64,
}

/// A score row read back (the columns of [`SCORE_COLUMNS`] but `idx` and
/// `score`).
pub(crate) struct ScoreRowOwned {
    pub evaluator_id: String,
    pub evaluator_type: String,
    pub status: String,
    pub score_bits: Option<i64>,
    pub score_is_int: bool,
    pub passed: Option<bool>,
    pub threshold_bits: Option<i64>,
    pub details: Option<String>,
    pub error: Option<String>,
    pub explainer: Option<Vec<u8>>,
}

/// A score of `record` (its tool calls read), its details rendered by the
/// evaluator `explainers` loads again from its hash.
pub(crate) fn score_of(
    record: &StoredResult,
    row: ScoreRowOwned,
    explainers: &mut dyn FnMut(&[u8]) -> Result<ItemEvaluator, DbError>,
) -> Result<Score, DbError> {
    let bad = |what: &str| row_error(&record.trace_id, what);
    let evaluator_type =
        EvaluatorType::parse(&row.evaluator_type).ok_or_else(|| bad("unknown evaluator type"))?;
    let status = Status::parse(&row.status).ok_or_else(|| bad("unknown score status"))?;
    let details = match (row.details, row.explainer) {
        (Some(text), _) => Details::from_stored_text(text),
        (None, Some(hash)) => Details::rendered(Explainer {
            calls: record.tool_calls.clone(),
            by: explainers(&hash)?,
        }),
        (None, None) => return Err(bad("a score with neither details nor an explainer")),
    };
    Ok(Score {
        evaluator_id: row.evaluator_id.into(),
        evaluator_type,
        outcome: StoredOutcome {
            status,
            score: row.score_bits.map(|b| f64::from_bits(b as u64)),
            score_is_int: row.score_is_int,
            details,
            error: row.error,
            passed: row.passed,
            threshold: row.threshold_bits.map(|b| f64::from_bits(b as u64)),
        },
    })
}

/// The evaluators stored sources load again, by hash: few (one per config
/// and criteria version), loaded once each while the process runs.
#[derive(Default)]
pub(crate) struct Explainers {
    loaded: std::sync::Mutex<std::collections::HashMap<[u8; 16], ItemEvaluator>>,
}

/// Loaded explainers kept; past it the cache starts again (an eval set of
/// many items has a source for each item's criteria).
const MAX_EXPLAINERS: usize = 4096;

impl Explainers {
    /// The evaluator of `hash`, loaded by `read` (its stored source) the
    /// first time.
    pub(crate) fn get(
        &self,
        hash: &[u8],
        read: impl FnOnce() -> Result<Option<Source>, DbError>,
    ) -> Result<ItemEvaluator, DbError> {
        let key: [u8; 16] = hash
            .try_into()
            .map_err(|_| DbError::Row(format!("an explainer hash of {} bytes", hash.len())))?;
        if let Some(found) = super::lock(&self.loaded).get(&key) {
            return Ok(found.clone());
        }
        let source = read()?.ok_or_else(|| {
            DbError::Row(format!(
                "explainer {} is not stored",
                const_hex::encode(key)
            ))
        })?;
        let loaded = Arc::new(source)
            .load()
            .map_err(|e| DbError::Row(e.to_string()))?;
        let mut cache = super::lock(&self.loaded);
        if cache.len() >= MAX_EXPLAINERS {
            cache.clear();
        }
        cache.insert(key, loaded.clone());
        Ok(loaded)
    }
}

#[cfg(test)]
mod tests {
    use super::super::calls::tests::call;
    use super::*;
    use crate::pyvalue::{Dict, Int};

    fn read_back(calls: &[StoredCall]) -> Vec<StoredCall> {
        calls_of(&tool_calls_text(calls)).unwrap_or_default()
    }

    fn row(tool_calls: String) -> TraceRowOwned {
        TraceRowOwned {
            trace_id: [9; 16],
            revision: 1,
            status: "evaluated".into(),
            complete: true,
            evaluated_at: None,
            root_span_id: None,
            root_name: None,
            root_service: None,
            root_start: None,
            root_end: None,
            binding: None,
            tool_calls,
            content_captured: true,
            span_count: 2,
        }
    }

    /// A row's calls are parsed when first read: a record whose calls
    /// cannot be read still lists, and reading its calls names the trace.
    /// A record read back is written again with its row's text, unparsed.
    #[test]
    fn a_rows_calls_are_read_when_first_used() {
        let calls = vec![StoredCall::from(call(Args::Dict(Dict::new()), None))];
        let text = tool_calls_text(&calls);
        let record = record_of(row(text.clone())).unwrap();
        assert!(matches!(record.tool_calls.held(), Held::Row(t) if t == text));
        let bytes = record.approx_bytes();
        assert_eq!(record.calls().unwrap(), &calls[..]);
        // Counted as parsed from the start: a store's count stays true.
        assert_eq!(record.approx_bytes(), bytes);
        assert_eq!(record.tool_calls, Calls::from(calls));
        assert_eq!(Prepared::new(Arc::new(record)).tool_calls, text);

        for damaged in [
            "[{\"name\":",
            "[{\"name\":\"a\",\"span_id\":\"zz\",\"start\":1,\"end\":2}]",
        ] {
            let record = record_of(row(damaged.into())).unwrap();
            let e = record.calls().unwrap_err().to_string();
            assert!(
                e.starts_with("unreadable tool calls of trace 09090909090909090909090909090909: "),
                "{e}"
            );
            assert_eq!(Prepared::new(Arc::new(record)).tool_calls, damaged);
        }
    }

    /// A stored call reads back as the call kept: Python types JSON has no
    /// form for, the raw output, an invalid call's reason and the content
    /// flags.
    #[test]
    fn a_stored_call_reads_back_exactly() {
        let mut plain = Dict::new();
        plain.insert_str("city", Value::str("Paris"));
        plain.insert_str("days", Value::Int(Int::Small(3)));
        plain.insert_str("ratio", Value::Float(1.0));
        let mut typed = Dict::new();
        typed.insert_str(
            "pair",
            Value::Tuple(vec![Value::Int(Int::Small(1)), Value::Float(f64::NAN)]),
        );
        typed.insert_str("blob", Value::Bytes(vec![0, 255]));
        let _ = typed.insert(Value::Int(Int::Small(5)), Value::Set(vec![Value::None]));
        let mut missing = call(Args::Dict(Dict::new()), None);
        missing.content_missing = true;
        missing.content_captured = false;
        let mut json_output = call(
            Args::Dict(Dict::new()),
            Some(Value::str(r#""{\"content\": [1, 2]}""#)),
        );
        json_output.output = r#"{"a": "b c", "d": [1.50, null]}"#.into();
        let mut spaced = call(Args::Dict(Dict::new()), Some(Value::str(" [1] ")));
        spaced.output = "[1] ".into();
        let calls: Vec<StoredCall> = [
            json_output,
            spaced,
            call(Args::Dict(plain), Some(Value::str("found"))),
            call(
                Args::Dict(typed),
                Some(Value::List(vec![Value::Bool(true)])),
            ),
            call(Args::Invalid("unhashable type: 'dict'".into()), None),
            missing,
        ]
        .into_iter()
        .map(StoredCall::from)
        .collect();
        let back = read_back(&calls);
        assert_eq!(back, calls);
        assert_eq!(
            super::super::to_calls(&back),
            super::super::to_calls(&calls)
        );
        // JSON texts are stored as they are, others as strings.
        let text = tool_calls_text(&calls[..2]);
        assert!(
            text.contains(r#""output_json":{"a": "b c", "d": [1.50, null]}"#),
            "{text}"
        );
        assert!(
            text.contains(r#""raw_json":"{\"content\": [1, 2]}""#),
            "{text}"
        );
        assert!(text.contains(r#""output":"[1] ""#), "{text}");
        // Plain arguments are stored once, as the API shows them.
        let text = tool_calls_text(&calls[2..3]);
        assert!(
            text.contains(r#""args":{"city":"Paris","days":3,"ratio":1.0}"#),
            "{text}"
        );
        assert!(text.contains(r#""raw_is_text":true"#), "{text}");
    }

    /// An output that is JSON nested deeper than serde_json's default
    /// limit (128) and than the stored-text cap (256) is written as JSON
    /// and reads back as the same text: a raw value is skipped, not
    /// parsed, at any depth.
    #[test]
    fn an_output_nested_deep_reads_back() {
        for depth in [200, 100_000] {
            let deep = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
            let mut c = call(Args::Dict(Dict::new()), None);
            c.output = deep.clone();
            let calls = vec![StoredCall::from(c)];
            let text = tool_calls_text(&calls);
            assert!(text.contains(r#""output_json":[[["#), "{depth}");
            let back = calls_of(&text).unwrap();
            assert_eq!(back, calls);
            assert_eq!(back[0].output(), deep);
        }
    }

    /// A row written before calls were stored exactly (`args` only) reads.
    #[test]
    fn a_call_stored_by_an_older_version_reads() {
        let text = r#"[{"name":"a","id":null,"args":{"x":[1,2]},"output":"o","span_id":"0707070707070707","start":1,"end":2}]"#;
        let calls = calls_of(text).unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].args.as_json_text(), r#"{"x":[1,2]}"#);
        assert_eq!(calls[0].raw, RawOutput::None);
    }
}

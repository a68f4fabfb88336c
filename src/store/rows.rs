//! A [`StoredResult`] as database columns, for every database backend: what
//! is filtered on has its own column; what is only shown (tool calls, the
//! binding) is JSON text; a score's details are stored as the JSON text the
//! record already holds, and read back without being parsed.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value as Json, json};

use super::db::DbError;
use super::{Details, RootSummary, Score, StoredArgs, StoredOutcome, StoredResult, TraceStatus};
use crate::criteria::Binding;
use crate::evaluator::{EvaluatorType, Status};
use crate::extract::{Args, ToolCall};
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
    /// Each score's details text, rendered here for the same reason.
    details: Vec<String>,
}

impl Prepared {
    pub fn new(record: Arc<StoredResult>) -> Prepared {
        Prepared {
            tool_calls: tool_calls_text(&record.tool_calls),
            binding: record.binding.as_ref().map(|b| binding_json(b).to_string()),
            details: record
                .scores
                .iter()
                .map(|s| s.outcome.details.text().into_owned())
                .collect(),
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
    pub details: &'a str,
    pub error: Option<&'a str>,
}

pub(crate) const SCORE_COLUMNS: &str = "idx, evaluator_id, evaluator_type, status, score, \
     score_bits, score_is_int, passed, threshold_bits, details, error";

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
            details: p.details.get(i).map_or("null", String::as_str),
            error: o.error.as_deref(),
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
/// reads them back).
#[derive(serde::Serialize)]
struct ToolCallColumns<'a> {
    name: &'a str,
    id: Option<&'a str>,
    args: &'a serde_json::value::RawValue,
    output: &'a str,
    span_id: String,
    start: u64,
    end: u64,
}

/// Serialized straight from the calls, the arguments as the API shows them.
fn tool_calls_text(calls: &[ToolCall]) -> String {
    let args: Vec<StoredArgs> = calls
        .iter()
        .map(|c| StoredArgs::from_args(&c.args))
        .collect();
    let columns: Vec<ToolCallColumns<'_>> = calls
        .iter()
        .zip(&args)
        .map(|(c, args)| ToolCallColumns {
            name: &c.name,
            id: c.id.as_deref(),
            // Written by this service: it reads back (a `null` otherwise).
            args: crate::json_text::deserialize_stored(args.as_json_text())
                .unwrap_or(serde_json::value::RawValue::NULL),
            output: &c.output,
            span_id: c.span_id.to_hex(),
            start: c.start_time_unix_nano,
            end: c.end_time_unix_nano,
        })
        .collect();
    // Serializing strings, numbers and raw JSON values cannot fail.
    serde_json::to_string(&columns).unwrap_or_else(|_| "[]".to_owned())
}

/// [`ToolCallColumns`] read back, the arguments' text kept as it was
/// written (not parsed into a tree and written again).
#[derive(serde::Deserialize)]
struct ToolCallRead {
    name: String,
    #[serde(default)]
    id: Option<String>,
    args: Box<serde_json::value::RawValue>,
    output: String,
    span_id: String,
    start: u64,
    end: u64,
}

impl ToolCallRead {
    /// The call as the API shows it: the arguments parsed back as Python's
    /// `json` reads them (they are written again the same), the raw output
    /// not kept (the details that read it were stored as text).
    fn call(self) -> Option<ToolCall> {
        let args = match crate::pyvalue::json::loads(self.args.get()).ok()? {
            crate::pyvalue::Value::Dict(d) => Args::Dict(d),
            _ => return None,
        };
        Some(ToolCall {
            name: self.name,
            id: self.id,
            args,
            output: self.output,
            raw_output: None,
            content_captured: true,
            content_missing: false,
            span_id: SpanId::parse_hex(&self.span_id).ok()?,
            start_time_unix_nano: self.start,
            end_time_unix_nano: self.end,
        })
    }
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
    let calls: Vec<ToolCallRead> = crate::json_text::deserialize_stored(&row.tool_calls)
        .map_err(|_| bad("unreadable tool calls"))?;
    let tool_calls = calls
        .into_iter()
        .map(|c| c.call().ok_or_else(|| bad("unreadable tool call")))
        .collect::<Result<_, _>>()?;
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
    pub details: String,
    pub error: Option<String>,
}

pub(crate) fn score_of(trace_id: &TraceId, row: ScoreRowOwned) -> Result<Score, DbError> {
    let bad = |what: &str| row_error(trace_id, what);
    let evaluator_type =
        EvaluatorType::parse(&row.evaluator_type).ok_or_else(|| bad("unknown evaluator type"))?;
    let status = Status::parse(&row.status).ok_or_else(|| bad("unknown score status"))?;
    Ok(Score {
        evaluator_id: row.evaluator_id.into(),
        evaluator_type,
        outcome: StoredOutcome {
            status,
            score: row.score_bits.map(|b| f64::from_bits(b as u64)),
            score_is_int: row.score_is_int,
            details: Details::from_stored_text(row.details),
            error: row.error,
            passed: row.passed,
            threshold: row.threshold_bits.map(|b| f64::from_bits(b as u64)),
        },
    })
}

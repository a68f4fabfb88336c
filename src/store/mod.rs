//! Results by trace ID, bounded in count, bytes and age, readable by the API.
//!
//! [`ResultStore`] has two implementations: [`MemoryStore`] (this process
//! only) and [`DbStore`], results in a database ([`sqlite::Sqlite`], or
//! [`postgres::Postgres`] shared by replicas) with
//! a memory store beside it for what must be local. Every new or revised
//! record is published to subscribers (long-polls, `WatchScores`) and to
//! the [`OnStored`] hook (the exporter) once it can be read.

mod calls;
mod config;
mod db;
mod memory;
pub mod postgres;
mod rows;
pub mod sqlite;

pub use calls::{Calls, CallsError, StoredCall, to_calls};
pub use config::{PostgresConfig, SqliteConfig, StoreBackend, StoreConfig, WriterConfig};

pub use db::{Database, DbError, DbStore, OnCommit, Retention, WriterStats};
pub use memory::MemoryStore;
pub use rows::Prepared;

/// Called with each record once it is stored and readable (the exporter's
/// offer); it must not block.
pub type OnStored = Box<dyn Fn(Arc<StoredResult>) + Send + Sync>;

/// A read the results database could not answer: the API's 503 /
/// `UNAVAILABLE`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the results database cannot be read now: {0}")]
pub struct ReadError(pub String);

/// Runs a blocking read on the blocking pool.
async fn blocking<T: Send + 'static>(
    read: impl FnOnce() -> Result<T, ReadError> + Send + 'static,
) -> Result<T, ReadError> {
    tokio::task::spawn_blocking(read)
        .await
        .unwrap_or_else(|e| Err(ReadError(format!("the read failed: {e}"))))
}

/// [`ResultStore::try_get`]: from memory on the calling thread when the
/// store can answer so, else off the async threads (a database read
/// blocks). Under load, each hop to the blocking pool and back is a wait
/// for the CPU, which a read of a recent result need not pay.
pub async fn get(
    store: &Arc<dyn ResultStore>,
    trace_id: TraceId,
) -> Result<Option<Arc<StoredResult>>, ReadError> {
    if let Now::Answered(r) = store.get_now(&trace_id) {
        return Ok(r);
    }
    let store = store.clone();
    blocking(move || store.try_get(&trace_id)).await
}

/// [`ResultStore::try_list`] off the async threads.
pub async fn list(
    store: &Arc<dyn ResultStore>,
    filter: ListFilter,
) -> Result<Vec<Arc<StoredResult>>, ReadError> {
    let store = store.clone();
    blocking(move || store.try_list(&filter)).await
}

/// [`ResultStore::try_result_or_wait`], from memory when the store can
/// answer so (as [`get`]), else off the async threads.
pub async fn result_or_wait(
    store: &Arc<dyn ResultStore>,
    trace_id: TraceId,
) -> Result<ResultOrWait, ReadError> {
    if let Now::Answered(r) = store.result_or_wait_now(trace_id) {
        return Ok(r);
    }
    let store = store.clone();
    blocking(move || store.try_result_or_wait(trace_id)).await
}

/// The store [`open`] made, and its writer's figures when it has a writer.
pub type Opened = (Arc<dyn ResultStore>, Option<Arc<WriterStats>>);

/// Opens the configured store; the writer's figures, when there is one, for
/// the metrics registry.
pub fn open(config: &StoreConfig) -> Result<Opened, DbError> {
    Ok(match config.backend {
        StoreBackend::Memory => (Arc::new(MemoryStore::for_config(config)), None),
        StoreBackend::Sqlite | StoreBackend::Postgres => {
            // On a thread of its own: the PostgreSQL client blocks on a
            // runtime of its own, which an async thread must not do.
            let store = std::thread::scope(|s| {
                s.spawn(|| {
                    let db: Arc<dyn Database> = match config.backend {
                        StoreBackend::Postgres => {
                            Arc::new(postgres::Postgres::open(&config.postgres)?)
                        }
                        _ => Arc::new(sqlite::Sqlite::open(&config.sqlite)?),
                    };
                    DbStore::start(db, config)
                })
                .join()
                .unwrap_or_else(|_| Err(DbError::Query("opening the store panicked".into())))
            })?;
            let stats = store.stats();
            (Arc::new(store), Some(stats))
        }
    })
}

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime};

use serde::Serialize;
use tokio::sync::broadcast;

use std::borrow::Cow;

use crate::criteria::{Binding, ItemEvaluator};
use crate::evaluator::{EvaluatorType, Explain, Outcome, OutcomeDetails};
use crate::span::{SpanId, TraceId};
use crate::wal::Pin;

/// Locks `m` even when poisoned: a panic under one of the store's locks is a
/// bug, and serving on with what it guards beats failing every later call.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where a trace stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceStatus {
    /// Spans are arriving; not evaluated yet.
    Pending,
    /// Evaluated (complete, or re-evaluated after late spans).
    Evaluated,
    /// Assembled, but no eval item, rule or default bound any evaluator.
    Unbound,
    /// Its root never came; evaluated as `complete: false`.
    TimedOut,
}

impl TraceStatus {
    /// Every status, in the order a form offers them.
    pub const ALL: [TraceStatus; 4] = [
        Self::Pending,
        Self::Evaluated,
        Self::Unbound,
        Self::TimedOut,
    ];

    /// The status's name in the API, the UI and the database's rows.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Evaluated => "evaluated",
            Self::Unbound => "unbound",
            Self::TimedOut => "timed_out",
        }
    }

    /// The status named `s` ([`as_str`](Self::as_str)'s name).
    pub fn parse(s: &str) -> Option<TraceStatus> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// The root span, summarised.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RootSummary {
    /// The root span's ID: exported results are its children.
    pub span_id: SpanId,
    pub name: String,
    pub service: Option<String>,
    pub start_time_unix_nano: u64,
    pub end_time_unix_nano: u64,
}

/// A tool call's arguments as stored: JSON text as `serde_json` writes it
/// (the dict, or `{"error": …}` when the reference could not build the
/// call), written once when the trace is evaluated. One string is what the
/// API serves, the database stores and an evicted record frees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredArgs(Box<str>);

impl StoredArgs {
    pub fn from_args(args: &crate::extract::Args) -> StoredArgs {
        let text = crate::json_text::exact(|out| match args {
            crate::extract::Args::Dict(d) => crate::json_text::write_py_dict(d, out),
            crate::extract::Args::Invalid(e) => {
                out.push_str("{\"error\":");
                crate::json_text::write_str(e, out);
                out.push('}');
            }
        });
        StoredArgs(text.into_boxed_str())
    }

    pub fn from_json(j: &serde_json::Value) -> StoredArgs {
        let text = crate::json_text::exact(|out| crate::json_text::write_value(j, out));
        StoredArgs(text.into_boxed_str())
    }

    /// Text read back from where this store wrote it, as it is.
    pub(crate) fn from_raw(raw: Box<serde_json::value::RawValue>) -> StoredArgs {
        StoredArgs(raw.into())
    }

    pub fn as_json_text(&self) -> &str {
        &self.0
    }

    pub fn to_json(&self) -> serde_json::Value {
        // Written from a value by this service: it parses back.
        crate::json_text::parse_stored(&self.0).unwrap_or(serde_json::Value::Null)
    }

    /// The text as a JSON value to serialise as it is (checked, not parsed
    /// into a tree).
    pub fn to_raw(&self) -> Box<serde_json::value::RawValue> {
        crate::json_text::raw_stored(&self.0)
            .unwrap_or_else(|_| serde_json::value::RawValue::NULL.to_owned())
    }
}

impl From<serde_json::Value> for StoredArgs {
    fn from(j: serde_json::Value) -> Self {
        StoredArgs::from_json(&j)
    }
}

/// See [`ResultStore::result_or_wait`].
pub enum ResultOrWait {
    Ready(Arc<StoredResult>),
    Wait(tokio::sync::oneshot::Receiver<Arc<StoredResult>>),
}

/// One evaluator's result on the trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Score {
    pub evaluator_id: Arc<str>,
    pub evaluator_type: EvaluatorType,
    pub outcome: StoredOutcome,
}

/// A result's details as a record keeps them: compact JSON text, or what
/// renders it. The deterministic evaluators' details are a pure function of
/// the trace's tool calls, criteria and config, so a record scored by the
/// pipeline keeps those (shared with the record) and the evaluator writes
/// the text again, by the code that scored it, when someone reads it; the
/// LLM judges', errors' and stored records' details are text. Parsed only
/// when shown.
#[derive(Debug, Clone)]
pub struct Details(DetailsRepr);

#[derive(Debug, Clone)]
enum DetailsRepr {
    Text(Box<str>),
    Rendered(Box<Explainer>),
}

/// What renders a score's details: the evaluation, again, explained.
#[derive(Debug, Clone)]
pub struct Explainer {
    pub calls: Calls,
    pub by: ItemEvaluator,
}

impl Explainer {
    fn render(&self) -> String {
        let calls = match self.calls.read() {
            Ok(kept) => to_calls(kept).map_err(|e| format!("the stored tool calls: {e}")),
            Err(e) => Err(e.to_string()),
        };
        let calls = match calls {
            Ok(calls) => calls,
            // Calls this service stored read back; if damaged, the details
            // say so rather than explain a score from other calls.
            Err(e) => {
                return crate::json_text::exact(|out| {
                    out.push_str("{\"error\":");
                    crate::json_text::write_str(&e, out);
                    out.push('}');
                });
            }
        };
        let outcome = self
            .by
            .evaluator
            .evaluate_as(&calls, &self.by.criteria, Explain::Yes);
        match outcome.details {
            OutcomeDetails::Text(t) => t,
            OutcomeDetails::Value(v) => {
                crate::json_text::exact(|out| crate::json_text::write_value(&v, out))
            }
            OutcomeDetails::Unwritten => "null".to_owned(),
        }
    }
}

impl Details {
    /// Details rendered from `explainer` when they are read.
    pub fn rendered(explainer: Explainer) -> Details {
        Details(DetailsRepr::Rendered(Box::new(explainer)))
    }

    /// The JSON text, as `serde_json` writes it (compact).
    pub fn text(&self) -> Cow<'_, str> {
        match &self.0 {
            DetailsRepr::Text(t) => Cow::Borrowed(t),
            DetailsRepr::Rendered(e) => Cow::Owned(e.render()),
        }
    }

    /// Whether the text is rendered on read rather than kept.
    pub fn is_rendered(&self) -> bool {
        matches!(self.0, DetailsRepr::Rendered(_))
    }

    /// What a database keeps to render them: the source of a rendered
    /// score's evaluator (`None`: the text is stored).
    pub fn source(&self) -> Option<&Arc<crate::criteria::Source>> {
        match &self.0 {
            DetailsRepr::Rendered(e) => e.by.source.as_ref(),
            DetailsRepr::Text(_) => None,
        }
    }

    /// The bytes the details hold beside their record (a rendered one
    /// shares the record's calls and the loaded evaluator).
    pub fn approx_bytes(&self) -> usize {
        match &self.0 {
            DetailsRepr::Text(t) => t.len(),
            DetailsRepr::Rendered(_) => std::mem::size_of::<Explainer>(),
        }
    }

    /// Details read back from where this store wrote them.
    pub(crate) fn from_stored_text(text: String) -> Details {
        Details(DetailsRepr::Text(text.into_boxed_str()))
    }

    pub fn to_json(&self) -> serde_json::Value {
        // The text was written from a `Value`: it parses back.
        crate::json_text::parse_stored(&self.text()).unwrap_or(serde_json::Value::Null)
    }

    /// The text as a JSON value to serialise as it is (checked, not parsed
    /// into a tree): what the API answers with.
    pub fn to_raw(&self) -> Box<serde_json::value::RawValue> {
        crate::json_text::raw_stored(&self.text())
            .unwrap_or_else(|_| serde_json::value::RawValue::NULL.to_owned())
    }
}

impl PartialEq for Details {
    fn eq(&self, other: &Self) -> bool {
        self.text() == other.text()
    }
}

impl From<&serde_json::Value> for Details {
    fn from(v: &serde_json::Value) -> Self {
        let text = crate::json_text::exact(|out| crate::json_text::write_value(v, out));
        Details::from_stored_text(text)
    }
}

impl From<serde_json::Value> for Details {
    fn from(v: serde_json::Value) -> Self {
        Details::from(&v)
    }
}

/// An [`Outcome`] as a record keeps it (details as [`Details`]).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredOutcome {
    pub status: crate::evaluator::Status,
    pub score: Option<f64>,
    pub score_is_int: bool,
    pub details: Details,
    pub error: Option<String>,
    pub passed: Option<bool>,
    pub threshold: Option<f64>,
}

impl StoredOutcome {
    /// The outcome as the evaluator returned it (details parsed back).
    pub fn to_outcome(&self) -> Outcome {
        Outcome {
            status: self.status,
            score: self.score,
            score_is_int: self.score_is_int,
            details: self.details.to_json().into(),
            error: self.error.clone(),
            passed: self.passed,
            threshold: self.threshold,
        }
    }
}

impl StoredOutcome {
    /// An outcome scored without its details ([`Explain::No`]), kept with
    /// what renders them.
    pub fn scored(o: Outcome, explainer: impl FnOnce() -> Explainer) -> StoredOutcome {
        let unwritten = o.details == OutcomeDetails::Unwritten;
        let mut stored = StoredOutcome::from(o);
        if unwritten {
            stored.details = Details::rendered(explainer());
        }
        stored
    }
}

impl From<Outcome> for StoredOutcome {
    /// An outcome with its details written ([`StoredOutcome::scored`] keeps
    /// unwritten ones renderable; here they would be `null`).
    fn from(o: Outcome) -> Self {
        StoredOutcome {
            status: o.status,
            score: o.score,
            score_is_int: o.score_is_int,
            details: match o.details {
                OutcomeDetails::Value(v) => Details::from(&v),
                // Written as `serde_json` writes it: kept as is.
                OutcomeDetails::Text(t) => Details::from_stored_text(t),
                OutcomeDetails::Unwritten => Details::from(&serde_json::Value::Null),
            },
            error: o.error,
            passed: o.passed,
            threshold: o.threshold,
        }
    }
}

/// Everything kept about one trace.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredResult {
    pub trace_id: TraceId,
    pub status: TraceStatus,
    pub complete: bool,
    pub revision: u32,
    pub evaluated_at: Option<SystemTime>,
    pub root: Option<RootSummary>,
    pub binding: Option<Binding>,
    /// The calls, kept once: the API lists them and rendered details read
    /// them again.
    pub tool_calls: Calls,
    /// False when some tool call's convention captured neither args nor output.
    pub content_captured: bool,
    pub scores: Vec<Score>,
    pub span_count: usize,
    /// Set on the record that fills in the LLM-judged scores of its
    /// revision (published a second time, same revision); not stored.
    pub judged: Option<Box<JudgedUpdate>>,
}

/// What a judged update settles: the places of the scores it fills in (the
/// others were published with the evaluation), each with its model call.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JudgedUpdate {
    pub scores: Vec<(usize, Option<ModelCall>)>,
}

/// The model call behind a judged score, as the exported result span's
/// `gen_ai.*` attributes describe it (the last attempt's request).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelCall {
    /// `openai` or `uipath`: `gen_ai.provider.name`.
    pub provider: &'static str,
    pub model: String,
    pub server_address: Option<String>,
    pub server_port: Option<u16>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u64>,
    pub response_id: Option<String>,
    pub response_model: Option<String>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
}

impl StoredResult {
    /// Whether this publication settles a score, for those who see each
    /// score once (the exporter): an evaluation settles its scores but the
    /// `pending` ones, a judged update its own.
    pub fn settles_any(&self) -> bool {
        self.judged.is_some()
            || self
                .scores
                .iter()
                .any(|s| s.outcome.status != crate::evaluator::Status::Pending)
    }

    /// Each score's evaluator and status, as the results metric counts them.
    pub fn score_statuses(&self) -> impl Iterator<Item = (&Arc<str>, &'static str)> {
        self.scores
            .iter()
            .map(|s| (&s.evaluator_id, s.outcome.status.as_str()))
    }

    /// The scores [`settles_any`](Self::settles_any) speaks of, a judged
    /// update's with their model calls.
    pub fn settled_scores(&self) -> Vec<(&Score, Option<&ModelCall>)> {
        match &self.judged {
            None => self
                .scores
                .iter()
                .filter(|s| s.outcome.status != crate::evaluator::Status::Pending)
                .map(|s| (s, None))
                .collect(),
            Some(update) => update
                .scores
                .iter()
                .filter_map(|(i, call)| Some((self.scores.get(*i)?, call.as_ref())))
                .collect(),
        }
    }

    /// The record's tool calls (a stored row's are read back on first use).
    pub fn calls(&self) -> Result<&[StoredCall], CallsError> {
        self.tool_calls
            .read()
            .map_err(|e| e.of_trace(&self.trace_id))
    }

    /// The record's memory, estimated: its own size, its strings, its tool
    /// calls' arguments and its scores' details (what `store.max_bytes`
    /// bounds). Within a few tens of bytes a field, not exact.
    pub fn approx_bytes(&self) -> usize {
        let calls = self.tool_calls.approx_bytes();
        let scores: usize = self
            .scores
            .iter()
            .map(|s| {
                std::mem::size_of::<Score>()
                    + s.outcome.details.approx_bytes()
                    + s.outcome.error.as_ref().map_or(0, String::len)
            })
            .sum();
        let root = self.root.as_ref().map_or(0, |r| {
            r.name.len() + r.service.as_ref().map_or(0, String::len)
        });
        std::mem::size_of::<StoredResult>() + root + calls + scores
    }

    pub fn pending(trace_id: TraceId) -> StoredResult {
        StoredResult {
            trace_id,
            status: TraceStatus::Pending,
            complete: false,
            revision: 0,
            evaluated_at: None,
            root: None,
            binding: None,
            tool_calls: Calls::default(),
            content_captured: true,
            scores: Vec::new(),
            span_count: 0,
            judged: None,
        }
    }
}

/// Which records `list` returns.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub status: Option<TraceStatus>,
    pub evaluator: Option<String>,
    /// Only traces with some score at or below this.
    pub max_score: Option<f64>,
    /// Only traces with some score at or above this (with `max_score`, the
    /// same score is within both).
    pub min_score: Option<f64>,
    /// Only traces whose root span's `service.name` is this.
    pub service: Option<String>,
    /// Only traces whose root span has this name.
    pub root_name: Option<String>,
    /// Only records stored at or after this (a `pending` trace: marked).
    pub since: Option<SystemTime>,
    /// Only records stored strictly before this.
    pub until: Option<SystemTime>,
    pub limit: usize,
}

impl ListFilter {
    /// Whether a score bound is NaN, which no score is within.
    pub fn nan_bound(&self) -> bool {
        self.min_score.is_some_and(f64::is_nan) || self.max_score.is_some_and(f64::is_nan)
    }
}

/// A read answered from memory, without blocking, or one that needs the
/// blocking read.
pub enum Now<T> {
    Answered(T),
    WouldBlock,
}

/// The store's seam. Implementations are bounded and evict oldest first.
pub trait ResultStore: Send + Sync + 'static {
    /// Records that these traces' first spans arrived (status `pending`),
    /// for those not known yet. Called once per batch of spans.
    fn mark_pending_many(&self, trace_ids: &[TraceId], now: Instant);
    /// [`mark_pending_many`](Self::mark_pending_many) for one trace.
    fn mark_pending(&self, trace_id: TraceId, now: Instant) {
        self.mark_pending_many(&[trace_id], now);
    }
    /// Stores a record, replacing an older revision, and publishes it.
    /// Returns the stored record, or `None` when a newer revision was kept.
    fn put(&self, record: StoredResult, now: Instant) -> Option<Arc<StoredResult>>;
    /// [`put`](Self::put), releasing the write-ahead log segments `pin`
    /// holds only once the record is stored (committed, with a database).
    fn put_pinned(
        &self,
        record: StoredResult,
        now: Instant,
        pin: Pin,
    ) -> Option<Arc<StoredResult>> {
        let stored = self.put(record, now);
        drop(pin);
        stored
    }
    fn get(&self, trace_id: &TraceId) -> Option<Arc<StoredResult>>;
    /// Newest first.
    fn list(&self, filter: &ListFilter) -> Vec<Arc<StoredResult>>;
    /// [`get`](Self::get), with a database that cannot be read as an error
    /// (the API answers it as unavailable, not as an unknown trace).
    fn try_get(&self, trace_id: &TraceId) -> Result<Option<Arc<StoredResult>>, ReadError> {
        Ok(self.get(trace_id))
    }
    /// [`try_get`](Self::try_get) if memory answers it, never blocking
    /// (the API calls it on its async threads).
    fn get_now(&self, _trace_id: &TraceId) -> Now<Option<Arc<StoredResult>>> {
        Now::WouldBlock
    }
    /// [`try_result_or_wait`](Self::try_result_or_wait) if memory answers
    /// it, never blocking.
    fn result_or_wait_now(&self, _trace_id: TraceId) -> Now<ResultOrWait> {
        Now::WouldBlock
    }
    /// [`list`](Self::list), with a database that cannot be read as an error.
    fn try_list(&self, filter: &ListFilter) -> Result<Vec<Arc<StoredResult>>, ReadError> {
        Ok(self.list(filter))
    }
    /// [`result_or_wait`](Self::result_or_wait), with a database that
    /// cannot be read as an error.
    fn try_result_or_wait(&self, trace_id: TraceId) -> Result<ResultOrWait, ReadError> {
        Ok(self.result_or_wait(trace_id))
    }
    /// Every record stored from now on.
    fn subscribe(&self) -> broadcast::Receiver<Arc<StoredResult>>;
    /// The trace's result if it has one (any status but `pending`), else a
    /// receiver for its next such result. Only that trace's results wake the
    /// waiter: a long poll costs nothing while other traces are stored.
    fn result_or_wait(&self, trace_id: TraceId) -> ResultOrWait;
    /// Drops records past retention; returns how many.
    fn evict_expired(&self, now: Instant) -> usize;
    /// Records evicted so far, by count or by age.
    fn evicted(&self) -> u64;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Sets the hook called with each record once it is readable (once).
    fn set_on_stored(&self, hook: OnStored);
    /// Whether results can be stored now (`/readyz`); why not.
    fn ready(&self) -> Result<(), String> {
        Ok(())
    }
    /// Commits what is queued and stops taking results; false when that did
    /// not finish within `timeout`. Blocks.
    fn close(&self, _timeout: std::time::Duration) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use serde_json::Value as J;

    use super::TraceStatus;

    #[test]
    fn a_status_has_one_name_in_json_and_in_rows() {
        for s in TraceStatus::ALL {
            let json = serde_json::to_value(s).unwrap_or_default();
            assert_eq!(json.as_str(), Some(s.as_str()));
            assert_eq!(TraceStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(TraceStatus::parse("Pending"), None);
    }

    fn json() -> impl Strategy<Value = J> {
        let leaf = prop_oneof![
            Just(J::Null),
            any::<bool>().prop_map(J::Bool),
            any::<i64>().prop_map(J::from),
            any::<u64>().prop_map(J::from),
            any::<f64>().prop_map(J::from),
            "\\PC{0,12}".prop_map(J::String),
            ".{0,8}".prop_map(J::String),
            "[a-z'\"\\\\\\n\\t\\x00-\\x1f\\x7f]{0,10}".prop_map(J::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(J::Array),
                prop::collection::vec(("[a-z\"\\\\]{0,4}", inner), 0..4)
                    .prop_map(|kvs| J::Object(kvs.into_iter().collect())),
            ]
        })
    }

    #[test]
    fn arguments_are_stored_as_the_json_the_api_showed() {
        use crate::extract::Args;
        use crate::pyvalue::{Dict, Value};
        let mut d = Dict::new();
        d.insert_str("city", Value::str("Zürich \"centre\""));
        d.insert_str(
            "n",
            Value::Tuple(vec![Value::int(1), Value::Float(f64::NAN)]),
        );
        let args = super::StoredArgs::from_args(&Args::Dict(d.clone()));
        let shown = crate::pyvalue::py_dict_to_json(&d);
        assert_eq!(args.as_json_text(), shown.to_string());
        assert_eq!(args.to_json(), shown);
        assert_eq!(super::StoredArgs::from_json(&shown), args);
        let failed = super::StoredArgs::from_args(&Args::Invalid("bad \"key\"".into()));
        assert_eq!(failed.as_json_text(), r#"{"error":"bad \"key\""}"#);
        assert_eq!(failed.to_raw().get(), failed.as_json_text());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn details_text_is_serde_jsons(v in json()) {
            let d = super::Details::from(&v);
            prop_assert_eq!(&*d.text(), serde_json::to_string(&v).unwrap());
            prop_assert_eq!(d.to_json(), v);
        }
    }
}

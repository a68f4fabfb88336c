//! The HTTP API's bodies as types: what the handlers serialise and what
//! the OpenAPI document (`openapi.rs`) describes, so the two cannot
//! drift apart.

use serde::Serialize;
use serde_json::Value as Json;
use serde_json::value::RawValue;
use utoipa::ToSchema;

use super::ErrorKind;
use super::time::{rfc3339, rfc3339_nanos};
use crate::criteria::Binding;
use crate::evaluator::Status;
use crate::store::{CallsError, Score, StoredResult, TraceStatus};

// A mirror of the store's `TraceStatus`: the schema is derived from it, and
// the exhaustive `From` below makes a new status fail to build until it is
// described here.
/// Where a trace stands: `pending` (spans arriving), `evaluated`, `unbound`
/// (nothing bound an evaluator), `timed_out` (evaluated without its root).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = TraceStatus)]
pub enum TraceStatusBody {
    Pending,
    Evaluated,
    Unbound,
    TimedOut,
}

impl From<TraceStatus> for TraceStatusBody {
    fn from(s: TraceStatus) -> Self {
        match s {
            TraceStatus::Pending => TraceStatusBody::Pending,
            TraceStatus::Evaluated => TraceStatusBody::Evaluated,
            TraceStatus::Unbound => TraceStatusBody::Unbound,
            TraceStatus::TimedOut => TraceStatusBody::TimedOut,
        }
    }
}

// A mirror of the evaluator's `Status`, for the same reason as
// `TraceStatusBody`.
/// Whether one evaluator ran to a score: `ok`, `error`, and for LLM judges
/// `pending` until the model answers and `skipped` when it did not run.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = ScoreStatus)]
pub enum ScoreStatusBody {
    Ok,
    Error,
    Pending,
    Skipped,
}

impl From<Status> for ScoreStatusBody {
    fn from(s: Status) -> Self {
        match s {
            Status::Ok => ScoreStatusBody::Ok,
            Status::Error => ScoreStatusBody::Error,
            Status::Pending => ScoreStatusBody::Pending,
            Status::Skipped => ScoreStatusBody::Skipped,
        }
    }
}

/// A trace's status and scores: `GET /traces/{id}/scores`, each entry of
/// `GET /traces`, `POST /v1/evaluate`'s answer and each `GET /v1/watch` event.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Scores)]
pub struct ScoresBody {
    /// 32 lowercase hex characters.
    pub trace_id: String,
    pub status: TraceStatusBody,
    /// Whether the root span was seen.
    pub complete: bool,
    /// 1, plus one per re-evaluation after late spans.
    pub revision: u32,
    /// RFC 3339 in UTC; null while pending.
    #[schema(format = DateTime, required = true)]
    pub evaluated_at: Option<String>,
    /// Null until the root span arrives.
    #[schema(required = true)]
    pub root: Option<RootBody>,
    /// Null when nothing bound an evaluator.
    #[schema(required = true)]
    pub binding: Option<BindingBody>,
    /// How many tool calls were extracted.
    pub tool_calls: usize,
    /// False when some tool call's convention captured neither its
    /// arguments nor its output.
    pub content_captured: bool,
    pub scores: Vec<ScoreBody>,
}

/// The root span, summarised.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Root)]
pub struct RootBody {
    pub name: String,
    /// The root span's resource `service.name`.
    #[schema(required = true)]
    pub service: Option<String>,
    pub span_id: String,
    #[schema(format = DateTime)]
    pub start: String,
    #[schema(format = DateTime)]
    pub end: String,
}

/// What bound the trace's evaluators.
#[derive(Debug, Serialize, ToSchema)]
#[serde(tag = "source", rename_all = "snake_case")]
#[schema(as = Binding)]
pub enum BindingBody {
    /// An eval-set item named by a span attribute.
    EvalSet { eval_set: String, item: String },
    /// The first matching rule.
    Rule { rule: String },
    /// Evaluators with `apply_to_all_traces`.
    Default,
}

impl From<&Binding> for BindingBody {
    fn from(b: &Binding) -> Self {
        match b {
            Binding::EvalSet { eval_set, item } => BindingBody::EvalSet {
                eval_set: eval_set.to_string(),
                item: item.to_string(),
            },
            Binding::Rule { rule } => BindingBody::Rule {
                rule: rule.to_string(),
            },
            Binding::Default => BindingBody::Default,
        }
    }
}

/// One evaluator's result on the trace.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Score)]
pub struct ScoreBody {
    pub evaluator_id: String,
    pub evaluator_type: &'static str,
    pub status: ScoreStatusBody,
    /// Null unless `status` is `ok`; deepeval's strict failure is the
    /// integer 0, every other score a float.
    #[schema(value_type = Option<f64>, required = true)]
    pub score: Option<serde_json::Number>,
    /// Only for evaluators with a threshold.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = bool)]
    pub passed: Option<bool>,
    /// Only for evaluators with a threshold.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = f64)]
    pub threshold: Option<f64>,
    /// The reference evaluator's details: any JSON value.
    #[schema(value_type = Json)]
    pub details: Box<RawValue>,
    /// Why the evaluator did not score (`error`, `skipped`); else null.
    #[schema(required = true)]
    pub error: Option<String>,
}

impl From<&Score> for ScoreBody {
    fn from(s: &Score) -> Self {
        let o = &s.outcome;
        let score = match o.score {
            None => None,
            // deepeval's strict failure is the int 0.
            Some(v) if o.score_is_int => Some((v as i64).into()),
            Some(v) => serde_json::Number::from_f64(v),
        };
        ScoreBody {
            evaluator_id: s.evaluator_id.to_string(),
            evaluator_type: s.evaluator_type.id(),
            status: o.status.into(),
            score,
            passed: o.passed,
            threshold: o.threshold,
            details: o.details.to_raw(),
            error: o.error.clone(),
        }
    }
}

impl TryFrom<&StoredResult> for ScoresBody {
    type Error = CallsError;

    fn try_from(r: &StoredResult) -> Result<Self, CallsError> {
        Ok(ScoresBody {
            trace_id: r.trace_id.to_hex(),
            status: r.status.into(),
            complete: r.complete,
            revision: r.revision,
            evaluated_at: r.evaluated_at.map(rfc3339),
            root: r.root.as_ref().map(|root| RootBody {
                name: root.name.clone(),
                service: root.service.clone(),
                span_id: root.span_id.to_hex(),
                start: rfc3339_nanos(root.start_time_unix_nano),
                end: rfc3339_nanos(root.end_time_unix_nano),
            }),
            binding: r.binding.as_ref().map(BindingBody::from),
            tool_calls: r.calls()?.len(),
            content_captured: r.content_captured,
            scores: r.scores.iter().map(ScoreBody::from).collect(),
        })
    }
}

/// The scores body as a JSON value (the demo and the fuzz targets compare
/// it), or its error's text.
pub fn scores_json(r: &StoredResult) -> Json {
    match ScoresBody::try_from(r) {
        Ok(body) => serde_json::to_value(body).unwrap_or(Json::Null),
        Err(e) => Json::String(e.to_string()),
    }
}

/// One score as a JSON value.
pub fn score_json(s: &Score) -> Json {
    serde_json::to_value(ScoreBody::from(s)).unwrap_or(Json::Null)
}

/// `GET /traces/{id}`: the trace's summary without scores, with its tool
/// calls and span count.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Trace)]
pub struct TraceBody {
    pub trace_id: String,
    pub status: TraceStatusBody,
    pub complete: bool,
    pub revision: u32,
    #[schema(format = DateTime, required = true)]
    pub evaluated_at: Option<String>,
    #[schema(required = true)]
    pub root: Option<RootBody>,
    #[schema(required = true)]
    pub binding: Option<BindingBody>,
    pub tool_calls: Vec<ToolCallBody>,
    pub content_captured: bool,
    pub span_count: usize,
}

/// One extracted tool call.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ToolCall)]
pub struct ToolCallBody {
    pub name: String,
    /// The tool call id, when the convention records one.
    #[schema(required = true)]
    pub id: Option<String>,
    /// The arguments as JSON: the object the reference built, or
    /// `{"error": …}` when it could not build the call.
    #[schema(value_type = Json)]
    pub args: Box<RawValue>,
    /// The output as the output evaluator sees it.
    pub output: String,
    pub span_id: String,
    #[schema(format = DateTime)]
    pub start: String,
    #[schema(format = DateTime)]
    pub end: String,
}

impl TryFrom<&StoredResult> for TraceBody {
    type Error = CallsError;

    fn try_from(r: &StoredResult) -> Result<Self, CallsError> {
        let s = ScoresBody::try_from(r)?;
        Ok(TraceBody {
            trace_id: s.trace_id,
            status: s.status,
            complete: s.complete,
            revision: s.revision,
            evaluated_at: s.evaluated_at,
            root: s.root,
            binding: s.binding,
            tool_calls: r
                .calls()?
                .iter()
                .map(|c| ToolCallBody {
                    name: c.name.clone(),
                    id: c.id.clone(),
                    args: c.args.to_raw(),
                    output: c.output().into_owned(),
                    span_id: c.span_id.to_hex(),
                    start: rfc3339_nanos(c.start_time_unix_nano),
                    end: rfc3339_nanos(c.end_time_unix_nano),
                })
                .collect(),
            content_captured: s.content_captured,
            span_count: r.span_count,
        })
    }
}

/// `GET /traces`: recent results, newest first.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = TraceList)]
pub struct TraceListBody {
    pub traces: Vec<ScoresBody>,
}

/// `GET /evaluators`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = EvaluatorList)]
pub struct EvaluatorListBody {
    pub evaluators: Vec<EvaluatorBody>,
}

/// An evaluator loaded, or one skipped at load; told apart by `status`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
#[schema(as = Evaluator)]
pub enum EvaluatorBody {
    Supported(SupportedEvaluatorBody),
    Unsupported(UnsupportedEvaluatorBody),
}

/// The one value of a supported evaluator's `status`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SupportedStatus {
    Supported,
}

/// The one value of an unsupported evaluator's `status`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum UnsupportedStatus {
    Unsupported,
}

/// An evaluator toolscore runs.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SupportedEvaluator)]
pub struct SupportedEvaluatorBody {
    pub id: String,
    pub name: String,
    /// The evaluator type's id (`uipath-tool-call-order`, …).
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub description: String,
    pub status: SupportedStatus,
    pub has_default_criteria: bool,
    /// Scored by a model through the configured `llm` providers, live and by
    /// `POST /v1/evaluate` (its score is `pending` until the model answers).
    pub llm_judged: bool,
}

/// An evaluator file toolscore loaded but does not run (custom, legacy).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = UnsupportedEvaluator)]
pub struct UnsupportedEvaluatorBody {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub status: UnsupportedStatus,
    pub reason: String,
    pub file: String,
}

/// `GET /eval-sets`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = EvalSetList)]
pub struct EvalSetListBody {
    pub eval_sets: Vec<EvalSetBody>,
}

/// An eval set loaded.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = EvalSet)]
pub struct EvalSetBody {
    pub id: String,
    pub name: String,
    pub file: String,
    /// The ids of the evaluators it runs, in its order.
    pub evaluators: Vec<String>,
    /// Evaluators it names that toolscore does not run.
    pub skipped_evaluators: Vec<String>,
    pub items: Vec<EvalItemBody>,
}

/// One item of an eval set and the evaluators it runs.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = EvalItem)]
pub struct EvalItemBody {
    pub id: String,
    pub name: String,
    pub evaluators: Vec<String>,
}

/// `/healthz` and `/readyz`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Health)]
pub struct HealthBody {
    pub status: HealthStatus,
    /// Why not, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String)]
    pub reason: Option<String>,
}

/// `ok`/`failed` from `/healthz`, `ready`/`not ready` from `/readyz`.
#[derive(Debug, Serialize, ToSchema)]
pub enum HealthStatus {
    #[serde(rename = "ok")]
    Ok,
    #[serde(rename = "failed")]
    Failed,
    #[serde(rename = "ready")]
    Ready,
    #[serde(rename = "not ready")]
    NotReady,
}

/// Every error: `{"error": {"code", "message"}}`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Error)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// An error's code (one of the table shared with the gRPC API:
/// `invalid_argument`, `not_found`, `unavailable`, …) and what went wrong.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    pub code: &'static str,
    pub message: String,
}

impl ErrorBody {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                code: kind.statuses().2,
                message: message.into(),
            },
        }
    }
}

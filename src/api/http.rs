//! The HTTP API (DESIGN §6): results by trace, listings, what is loaded,
//! synchronous evaluation, health and metrics. `api::router(state)` is tested
//! with `oneshot` and served by `app/serve.rs` behind a request timeout.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Request, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use utoipa::IntoParams;

use super::ApiConfig;
use super::ErrorKind;
pub use super::body::{
    BindingBody, ErrorBody, ErrorDetail, EvalItemBody, EvalSetBody, EvalSetListBody, EvaluatorBody,
    EvaluatorListBody, HealthBody, HealthStatus, RootBody, ScoreBody, ScoreStatusBody, ScoresBody,
    SupportedEvaluatorBody, SupportedStatus, ToolCallBody, TraceBody, TraceListBody,
    TraceStatusBody, UnsupportedEvaluatorBody, UnsupportedStatus, score_json, scores_json,
};
use super::query::from_query;
use super::schema::{EvaluateRequest, Refused, TimedOut, Unavailable};
use super::time::parse_since;
use crate::assembler::{Ready, Reason};
use crate::criteria::Binder;
use crate::criteria::ItemEvaluator;
use crate::evaluator::{EvaluatorType, Outcome, Status};
use crate::extract::{self, ExtractConfig};
use crate::pyvalue::Value as PyValue;
use crate::scoring::evaluate_ready;
use crate::span::TraceId;
use crate::store::{self, ListFilter, ResultOrWait, ResultStore, Score, StoredResult, TraceStatus};
use crate::telemetry::Metrics;

/// What the handlers share.
pub struct ApiState {
    pub store: Arc<dyn ResultStore>,
    pub binder: Arc<Binder>,
    pub extract: Arc<ExtractConfig>,
    pub metrics: Arc<Metrics>,
    /// False while starting and draining: `/readyz` answers 503.
    pub ready: Arc<AtomicBool>,
    /// Set when a pipeline stage died: `/readyz` and `/healthz` answer 503.
    pub failed: crate::supervise::Failed,
    pub config: ApiConfig,
    /// Ends long-polls when the service starts shutting down.
    pub shutdown: tokio_util::sync::CancellationToken,
    /// The model providers `POST /v1/evaluate`'s LLM-judged evaluators call.
    pub judges: Arc<crate::llm::Judges>,
    /// `GET /v1/watch` subscriptions (ended by `shutdown`).
    pub watchers: super::watch::Watchers,
    /// The attributes a span keeps: `POST /v1/evaluate` reads its spans as
    /// the receivers do.
    pub keep: Arc<crate::span::KeepAttributes>,
    /// With tokens on this listener: the UI's sign-in (`None`: no tokens,
    /// the UI needs no sign-in).
    pub ui_auth: Option<crate::auth::UiAuth>,
}

/// An API error: `{"error": {"code", "message"}}` with the table's status.
/// 5xx bodies carry no internal detail (it goes to the log).
#[derive(Debug)]
pub struct ApiError {
    kind: ErrorKind,
    message: String,
}

impl ApiError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ApiError {
        ApiError {
            kind,
            message: message.into(),
        }
    }
}

/// A results database that cannot be read: 503, never "not known".
impl From<store::ReadError> for ApiError {
    fn from(e: store::ReadError) -> ApiError {
        ApiError::new(ErrorKind::Unavailable, e.to_string())
    }
}

/// A stored record that cannot be read back: the service's fault.
impl From<store::CallsError> for ApiError {
    fn from(e: store::CallsError) -> ApiError {
        ApiError::new(ErrorKind::Internal, e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, _, code) = self.kind.statuses();
        let message = if status >= 500 {
            tracing::warn!(code, error = %self.message, "API request failed");
            match self.kind {
                ErrorKind::Unavailable => "the service is not ready; retry shortly".to_owned(),
                ErrorKind::DeadlineExceeded => "the request took too long".to_owned(),
                _ => "internal error".to_owned(),
            }
        } else {
            self.message
        };
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, axum::Json(ErrorBody::new(self.kind, message))).into_response()
    }
}

type ApiResult<T> = Result<T, ApiError>;

/// A request refused for its token, in the API's error shape, with no
/// detail on what was wrong with it.
pub fn refuse_auth(failure: crate::auth::Failure, _: &http::HeaderMap) -> Response {
    match failure {
        crate::auth::Failure::Forbidden => ApiError::new(
            ErrorKind::PermissionDenied,
            "the token does not allow this request",
        ),
        _ => ApiError::new(ErrorKind::Unauthenticated, "authentication required"),
    }
    .into_response()
}

/// A handler's query parameters, `T`: unknown keys are ignored, a repeated
/// key or a value that is not of its field's type is a 400 naming it.
pub(super) struct ApiQuery<T>(pub(super) T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        from_query(parts.uri.query().unwrap_or(""))
            .map(ApiQuery)
            .map_err(|e| ApiError::new(ErrorKind::InvalidArgument, format!("invalid query: {e}")))
    }
}

/// axum's `Path`, with its rejections in the API's error shape (a
/// segment that is not UTF-8).
pub(super) struct ApiPath<T>(T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(p)) => Ok(ApiPath(p)),
            Err(e) => Err(ApiError::new(ErrorKind::InvalidArgument, e.body_text())),
        }
    }
}

/// The request body, with the body limit's 413 in the API's error shape.
pub(super) struct ApiBody(Bytes);

impl<S: Send + Sync> FromRequest<S> for ApiBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match Bytes::from_request(req, state).await {
            Ok(b) => Ok(ApiBody(b)),
            Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => Err(ApiError::new(
                ErrorKind::PayloadTooLarge,
                "the body exceeds api.max_evaluate_body_bytes",
            )),
            Err(e) => Err(ApiError::new(ErrorKind::InvalidArgument, e.body_text())),
        }
    }
}

/// Cuts every request off after `after` with a 504 in the API's error shape.
pub fn with_timeout(router: Router, after: Duration) -> Router {
    router.layer(
        tower::ServiceBuilder::new()
            .layer(axum::error_handling::HandleErrorLayer::new(
                |_: tower::BoxError| async {
                    ApiError::new(ErrorKind::DeadlineExceeded, "request timed out")
                },
            ))
            .layer(tower::timeout::TimeoutLayer::new(after)),
    )
}

/// The endpoints defined here, and the fallbacks: the API's router
/// ([`super::router`]) adds the watch stream and the OpenAPI document.
pub(super) fn routes(max_body: usize) -> Router<Arc<ApiState>> {
    Router::new()
        .route("/traces/{trace_id}/scores", get(get_scores))
        .route("/traces/{trace_id}", get(get_trace))
        .route("/traces", get(list_traces))
        .route("/evaluators", get(list_evaluators))
        .route("/eval-sets", get(list_eval_sets))
        .route(
            "/v1/evaluate",
            post(evaluate).layer(axum::extract::DefaultBodyLimit::max(max_body)),
        )
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .fallback(|| async { ApiError::new(ErrorKind::NotFound, "no such endpoint") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                ErrorKind::MethodNotAllowed,
                "this endpoint does not take that method",
            )
        })
}

fn parse_trace_id(s: &str) -> ApiResult<TraceId> {
    TraceId::parse_hex(s).map_err(|e| ApiError::new(ErrorKind::InvalidArgument, e.to_string()))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct WaitQuery {
    /// Wait up to this long (capped by `api.max_wait_ms`) for the trace to
    /// be evaluated.
    wait_ms: Option<u64>,
}

/// `GET /traces/{id}/scores[?wait_ms=N]`: with `wait_ms`, waits (woken by
/// the store, not polling) until the trace is evaluated or the wait ends.
#[utoipa::path(
    get,
    path = "/traces/{trace_id}/scores",
    tag = "results",
    summary = "A trace's status and scores",
    params(
        ("trace_id" = String, Path, description = "32 hex characters, not all zero",
            pattern = "^[0-9a-fA-F]{32}$"),
        WaitQuery,
    ),
    responses(
        (status = 200, description = "The trace's status and scores", body = ScoresBody),
        (status = 400, description = "An invalid trace id or query", body = ErrorBody),
        (status = 404, description = "No span of the trace has arrived", body = ErrorBody),
        Refused,
        Unavailable,
        TimedOut,
    ),
    security(("bearer" = ["read"])),
)]
pub(super) async fn get_scores(
    State(st): State<Arc<ApiState>>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<WaitQuery>,
) -> ApiResult<axum::Json<ScoresBody>> {
    let trace_id = parse_trace_id(&id)?;
    let wait = Duration::from_millis(q.wait_ms.unwrap_or(0).min(st.config.max_wait_ms));
    let record = tokio::select! {
        r = wait_for_result(&st.store, trace_id, wait) => r?,
        () = st.shutdown.cancelled() => {
            // Shutting down with the trace not evaluated yet: the drain may
            // store it a moment later, so retry (here, or at another
            // replica), as `/v1/watch` says to its watchers.
            let r = store::get(&st.store, trace_id).await?;
            if wait.is_zero() || r.as_ref().is_some_and(|r| r.status != TraceStatus::Pending) {
                r
            } else {
                return Err(ApiError::new(
                    ErrorKind::Unavailable,
                    "the service is shutting down before the trace was evaluated",
                ));
            }
        }
    };
    match record {
        Some(r) => Ok(axum::Json(ScoresBody::try_from(&*r)?)),
        None => Err(ApiError::new(
            ErrorKind::NotFound,
            format!("trace {trace_id} is not known"),
        )),
    }
}

async fn wait_for_result(
    store: &Arc<dyn ResultStore>,
    id: TraceId,
    wait: Duration,
) -> Result<Option<Arc<StoredResult>>, store::ReadError> {
    if wait.is_zero() {
        return store::get(store, id).await;
    }
    // Registered and checked under the store's lock, so a result cannot land
    // in between unseen; and only this trace's result wakes the wait (with
    // a broadcast, every long poll woke for every stored result).
    let rx = match store::result_or_wait(store, id).await? {
        ResultOrWait::Ready(r) => return Ok(Some(r)),
        ResultOrWait::Wait(rx) => rx,
    };
    match tokio::time::timeout(wait, rx).await {
        Ok(Ok(r)) => Ok(Some(r)),
        // Timed out: the trace as it stands (pending, or not known).
        _ => store::get(store, id).await,
    }
}

/// `GET /traces/{id}`: the trace summary and its tool calls.
#[utoipa::path(
    get,
    path = "/traces/{trace_id}",
    tag = "results",
    summary = "A trace's summary and its tool calls",
    params(
        ("trace_id" = String, Path, description = "32 hex characters, not all zero",
            pattern = "^[0-9a-fA-F]{32}$"),
    ),
    responses(
        (status = 200, description = "The trace without scores, with its tool calls",
            body = TraceBody),
        (status = 400, description = "An invalid trace id", body = ErrorBody),
        (status = 404, description = "No span of the trace has arrived", body = ErrorBody),
        Refused,
        Unavailable,
        TimedOut,
    ),
    security(("bearer" = ["read"])),
)]
pub(super) async fn get_trace(
    State(st): State<Arc<ApiState>>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<axum::Json<TraceBody>> {
    let trace_id = parse_trace_id(&id)?;
    let r = store::get(&st.store, trace_id).await?.ok_or_else(|| {
        ApiError::new(
            ErrorKind::NotFound,
            format!("trace {trace_id} is not known"),
        )
    })?;
    Ok(axum::Json(TraceBody::try_from(&*r)?))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    /// Only traces with this status.
    #[param(value_type = Option<TraceStatusBody>, inline)]
    status: Option<String>,
    /// Only traces with a score from this evaluator id.
    evaluator: Option<String>,
    /// Only traces with some score at or below this.
    max_score: Option<f64>,
    /// Only traces with some score at or above this (not above `max_score`).
    min_score: Option<f64>,
    /// Only traces whose root span's `service.name` is this.
    service: Option<String>,
    /// Only traces whose root span has this name.
    root_name: Option<String>,
    /// Only records stored at or after this: unix seconds or RFC 3339 (`2026-11-22T06:02:36Z`, any offset).
    since: Option<String>,
    /// Only records stored before this: unix seconds or RFC 3339 (`2026-11-22T06:02:36Z`, any offset).
    until: Option<String>,
    /// At most this many (default 100, capped by `api.max_list_limit`).
    limit: Option<usize>,
}

/// A `since`/`until` value: unix seconds or RFC 3339 with an offset.
fn parse_time(key: &str, value: Option<&str>) -> ApiResult<Option<SystemTime>> {
    value
        .map(|s| {
            parse_since(s).ok_or_else(|| {
                ApiError::new(
                    ErrorKind::InvalidArgument,
                    format!("{key} must be unix seconds or RFC 3339 with an offset (2026-11-22T06:02:36Z), got {s:?}"),
                )
            })
        })
        .transpose()
}

/// A score bound: NaN would match nothing and hide a client's bug.
fn check_score(key: &str, value: Option<f64>) -> ApiResult<()> {
    if value.is_some_and(f64::is_nan) {
        return Err(ApiError::new(
            ErrorKind::InvalidArgument,
            format!("{key} must be a number, got NaN"),
        ));
    }
    Ok(())
}

/// `GET /traces`: recent results, newest first.
#[utoipa::path(
    get,
    path = "/traces",
    tag = "results",
    summary = "Recent results, newest first",
    params(ListQuery),
    responses(
        (status = 200, description = "The matching traces' scores bodies", body = TraceListBody),
        (status = 400, description = "An invalid filter", body = ErrorBody),
        Refused,
        Unavailable,
        TimedOut,
    ),
    security(("bearer" = ["read"])),
)]
pub(super) async fn list_traces(
    State(st): State<Arc<ApiState>>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<axum::Json<TraceListBody>> {
    let status = match q.status.as_deref() {
        None => None,
        Some(s) => Some(TraceStatus::parse(s).ok_or_else(|| {
            ApiError::new(
                ErrorKind::InvalidArgument,
                format!("status must be pending, evaluated, unbound or timed_out, got {s:?}"),
            )
        })?),
    };
    let since = parse_time("since", q.since.as_deref())?;
    let until = parse_time("until", q.until.as_deref())?;
    check_score("max_score", q.max_score)?;
    check_score("min_score", q.min_score)?;
    if let (Some(min), Some(max)) = (q.min_score, q.max_score)
        && min > max
    {
        return Err(ApiError::new(
            ErrorKind::InvalidArgument,
            format!("min_score ({min}) must not be above max_score ({max})"),
        ));
    }
    let limit = q.limit.unwrap_or(100).min(st.config.max_list_limit.get());
    let filter = ListFilter {
        status,
        evaluator: q.evaluator,
        max_score: q.max_score,
        min_score: q.min_score,
        service: q.service,
        root_name: q.root_name,
        since,
        until,
        limit,
    };
    let records = store::list(&st.store, filter).await?;
    Ok(axum::Json(TraceListBody {
        traces: records
            .iter()
            .map(|r| ScoresBody::try_from(&**r))
            .collect::<Result<_, _>>()?,
    }))
}

/// `GET /evaluators`: every evaluator loaded, and those skipped.
#[utoipa::path(
    get,
    path = "/evaluators",
    tag = "configuration",
    summary = "The evaluators loaded, and those skipped",
    responses(
        (status = 200, description = "Supported evaluators, then unsupported ones",
            body = EvaluatorListBody),
        Refused,
        TimedOut,
    ),
    security(("bearer" = ["read"])),
)]
pub(super) async fn list_evaluators(
    State(st): State<Arc<ApiState>>,
) -> axum::Json<EvaluatorListBody> {
    let c = &st.binder.catalog;
    let supported = c.evaluators.values().map(|e| {
        EvaluatorBody::Supported(SupportedEvaluatorBody {
            id: e.id.to_string(),
            name: e.name.clone(),
            kind: e.kind.id(),
            description: e.description.clone(),
            status: SupportedStatus::Supported,
            has_default_criteria: e.default_criteria.is_some(),
            llm_judged: e.is_llm_judged(),
        })
    });
    let unsupported = c.unsupported.values().map(|u| {
        EvaluatorBody::Unsupported(UnsupportedEvaluatorBody {
            id: u.id.clone(),
            kind: u.type_id.clone(),
            status: UnsupportedStatus::Unsupported,
            reason: u.reason.clone(),
            file: u.file.display().to_string(),
        })
    });
    axum::Json(EvaluatorListBody {
        evaluators: supported.chain(unsupported).collect(),
    })
}

/// `GET /eval-sets`: the eval sets loaded and their items.
#[utoipa::path(
    get,
    path = "/eval-sets",
    tag = "configuration",
    summary = "The eval sets loaded and their items",
    responses(
        (status = 200, description = "The eval sets", body = EvalSetListBody),
        Refused,
        TimedOut,
    ),
    security(("bearer" = ["read"])),
)]
pub(super) async fn list_eval_sets(State(st): State<Arc<ApiState>>) -> axum::Json<EvalSetListBody> {
    let ids = |evaluators: &mut dyn Iterator<Item = &Arc<str>>| {
        evaluators.map(|id| id.to_string()).collect::<Vec<_>>()
    };
    let eval_sets = st
        .binder
        .catalog
        .eval_sets
        .iter()
        .map(|s| EvalSetBody {
            id: s.id.to_string(),
            name: s.name.clone(),
            file: s.file.display().to_string(),
            evaluators: ids(&mut s.evaluators.iter().map(|e| &e.id)),
            skipped_evaluators: s.skipped.clone(),
            items: s
                .items
                .iter()
                .map(|i| EvalItemBody {
                    id: i.id.to_string(),
                    name: i.name.clone(),
                    evaluators: ids(&mut i.evaluators.iter().map(|e| &e.evaluator.id)),
                })
                .collect(),
        })
        .collect();
    axum::Json(EvalSetListBody { eval_sets })
}

/// 200 while the process serves; 503 once a pipeline stage has died (a
/// restart is the remedy).
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "operations",
    summary = "Liveness (no token needed)",
    responses(
        (status = 200, description = "The process serves: `ok`", body = HealthBody),
        (status = 503, description = "A pipeline stage died: `failed`", body = HealthBody),
        TimedOut,
    ),
)]
pub(super) async fn healthz(State(st): State<Arc<ApiState>>) -> Response {
    if st.failed.is_set() {
        let body = HealthBody {
            status: HealthStatus::Failed,
            reason: Some("a pipeline stage panicked".to_owned()),
        };
        return (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
    }
    let body = HealthBody {
        status: HealthStatus::Ok,
        reason: None,
    };
    axum::Json(body).into_response()
}

/// 200 while spans are taken and results stored; 503 while shutting down,
/// after a stage died, or while the results database is unreachable.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "operations",
    summary = "Readiness (no token needed)",
    responses(
        (status = 200, description = "Spans are taken and results stored: `ready`",
            body = HealthBody),
        (status = 503,
            description = "Draining, a stage died, or the results database cannot be written: `not ready`",
            body = HealthBody),
        TimedOut,
    ),
)]
pub(super) async fn readyz(State(st): State<Arc<ApiState>>) -> Response {
    let store = st.store.ready();
    if st.ready.load(Ordering::Relaxed) && !st.failed.is_set() && store.is_ok() {
        let body = HealthBody {
            status: HealthStatus::Ready,
            reason: None,
        };
        axum::Json(body).into_response()
    } else {
        let body = HealthBody {
            status: HealthStatus::NotReady,
            reason: store.err().map(|why| format!("results database: {why}")),
        };
        (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response()
    }
}

/// The service's own metrics, for Prometheus.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "operations",
    summary = "The service's metrics in OpenMetrics text",
    responses(
        (status = 200, description = "OpenMetrics text",
            body = String, content_type = "application/openmetrics-text"),
        Refused,
        TimedOut,
    ),
    // Open by default (`api.http.auth.public_metrics`), else the `metrics` scope.
    security((), ("bearer" = ["metrics"])),
)]
pub(super) async fn metrics(State(st): State<Arc<ApiState>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        st.metrics.encode(),
    )
        .into_response()
}

/// This document, built once with the router: the same bytes every time.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "operations",
    summary = "This OpenAPI description",
    responses(
        (status = 200, description = "The OpenAPI 3.1 document",
            body = Object, content_type = "application/json"),
        Refused,
        TimedOut,
    ),
    security(("bearer" = ["read"])),
)]
pub(super) async fn openapi_json(doc: Bytes) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], doc).into_response()
}

/// `POST /v1/evaluate`: OTLP JSON spans of one trace, optionally with inline
/// evaluators and criteria, scored synchronously (off the async threads).
#[utoipa::path(
    post,
    path = "/v1/evaluate",
    tag = "evaluation",
    summary = "Score one trace synchronously",
    request_body(content = EvaluateRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The trace's scores, LLM judges' included", body = ScoresBody),
        (status = 400, description = "Invalid input; the message names its JSON path",
            body = ErrorBody),
        (status = 413, description = "A body over `api.max_evaluate_body_bytes`", body = ErrorBody),
        (status = 500, description = "The evaluation failed unexpectedly", body = ErrorBody),
        Refused,
        TimedOut,
    ),
    security(("bearer" = ["evaluate"])),
)]
pub(super) async fn evaluate(
    State(st): State<Arc<ApiState>>,
    ApiBody(body): ApiBody,
) -> ApiResult<axum::Json<ScoresBody>> {
    let started = Instant::now();
    let st2 = st.clone();
    let (mut record, spans, judged) =
        tokio::task::spawn_blocking(move || evaluate_body(&st2, &body))
            .await
            .map_err(|e| ApiError::new(ErrorKind::Internal, e.to_string()))??;
    if !judged.is_empty() {
        // The LLM-judged scores, awaited together (each provider bounds its
        // own concurrency), in the places their `pending` scores keep.
        let calls = extract::extract(&spans, &st.extract);
        let view = crate::llm::trace_view(&spans, &calls, &st.extract);
        let outcomes = futures_util::future::join_all(
            judged
                .iter()
                .map(|(_, j)| st.judges.evaluate(&j.evaluator, &j.criteria, view)),
        )
        .await;
        for ((i, _), outcome) in judged.iter().zip(outcomes) {
            if let Some(score) = record.scores.get_mut(*i) {
                score.outcome = outcome.into();
            }
        }
    }
    st.metrics
        .record_evaluation(record.score_statuses(), started.elapsed());
    Ok(axum::Json(ScoresBody::try_from(&record)?))
}

/// An LLM-judged evaluator of a `POST /v1/evaluate`, scored after the
/// others, and its place in the evaluator order.
type Judged = (usize, ItemEvaluator);

fn invalid(path: impl std::fmt::Display, message: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        ErrorKind::InvalidArgument,
        format!("at `{path}`: {message}"),
    )
}

/// The record with every score that needs no model, the trace's spans, and
/// the LLM-judged evaluators still to score.
type Evaluated = (StoredResult, Arc<crate::record::Spans>, Vec<Judged>);

fn evaluate_body(st: &ApiState, body: &[u8]) -> ApiResult<Evaluated> {
    let text = std::str::from_utf8(body).map_err(|e| invalid("(body)", e))?;
    let parsed =
        crate::otlp_json::parse_object(text, &st.keep).map_err(|e| invalid(&e.path, &e.message))?;
    if let Some(r) = parsed.rejected.first() {
        let (resource, scope, item) = match r.what {
            "span" => ("resourceSpans", "scopeSpans", "spans"),
            _ => ("resourceLogs", "scopeLogs", "logRecords"),
        };
        return Err(invalid(
            format!(
                "{resource}[{}].{scope}[{}].{item}[{}]",
                r.resource, r.scope, r.index
            ),
            &r.reason,
        ));
    }
    let traces = parsed.spans.traces(&st.keep).map_err(|e| {
        tracing::error!(error = %e, "POST /v1/evaluate: records did not read back");
        ApiError::new(ErrorKind::Internal, "internal error")
    })?;
    // Log records that belong to no span of the document are ignored (a
    // document of log records alone names its trace by them).
    let with_spans = traces.values().any(|s| !s.is_empty());
    let mut traces = traces
        .into_iter()
        .filter(|(_, s)| !with_spans || !s.is_empty());
    let Some((trace_id, spans)) = traces.next() else {
        // Both references score an empty tool-call list; but a body with no
        // span names no trace, so the answer's trace ID, root and revision
        // would be invented (docs/api.md).
        return Err(invalid(
            "resourceSpans",
            "no spans: send at least one span of the trace (a root span alone scores an empty tool-call list)",
        ));
    };
    if let Some((other, _)) = traces.next() {
        return Err(invalid(
            "resourceSpans",
            format!("spans of one trace expected, got {trace_id} and {other}"),
        ));
    }
    // The body as the references read their files, with `json.loads`:
    // serde_json would refuse integers past a float's range (which Python
    // reads as ints) and `NaN`, and make `-0` and integers past 64 bits floats.
    let body = crate::pyvalue::json::loads(text).map_err(|e| invalid("(body)", e))?;
    let complete = spans.iter().any(|s| s.is_root());
    let ready = Ready {
        trace_id,
        complete,
        spans: Arc::new(spans),
        revision: 1,
        reason: Reason::Complete,
        root_arrived: None,
        due: std::time::Instant::now(),
        pin: Default::default(),
        ticket: Default::default(),
    };
    let spans = ready.spans.clone();
    match py_field(&body, "evaluators") {
        None | Some(PyValue::None) => {
            let evaluated = evaluate_ready(&st.binder, &st.extract, &ready, SystemTime::now());
            Ok((evaluated.record, spans, evaluated.judges))
        }
        Some(list) => {
            let criteria = py_field(&body, "criteria");
            let (record, judged) = evaluate_inline(st, &ready, list, criteria)?;
            Ok((record, spans, judged))
        }
    }
}

/// `body[key]` of a body read by `json.loads`, when it is an object.
fn py_field<'a>(body: &'a PyValue, key: &str) -> Option<&'a PyValue> {
    body.as_dict()?.get_str(key)
}

/// Inline evaluators: each with the request's criteria for its id, or its
/// default criteria when the criteria are absent or null.
fn evaluate_inline(
    st: &ApiState,
    ready: &Ready,
    list: &PyValue,
    criteria: Option<&PyValue>,
) -> ApiResult<(StoredResult, Vec<Judged>)> {
    let PyValue::List(items) = list else {
        return Err(invalid(
            "evaluators",
            "must be a list of {\"id\", \"type\", \"config\"}",
        ));
    };
    let empty = crate::pyvalue::Dict::new();
    let criteria = match criteria {
        None | Some(PyValue::None) => &empty,
        Some(PyValue::Dict(m)) => m,
        Some(_) => {
            return Err(invalid(
                "criteria",
                "must be an object keyed by evaluator id",
            ));
        }
    };
    let calls = extract::extract(&ready.spans, &st.extract);
    let mut scores = Vec::with_capacity(items.len());
    let mut judged = Vec::new();
    let mut ids = std::collections::HashSet::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("evaluators[{i}]");
        let field = |key: &str| py_field(item, key);
        let id = field("id")
            .and_then(PyValue::as_str)
            .ok_or_else(|| invalid(format!("{path}.id"), "a string is required"))?;
        if !ids.insert(id) {
            return Err(invalid(
                format!("{path}.id"),
                format!("{id:?} is the id of an earlier evaluator: ids must be unique"),
            ));
        }
        let ty = field("type")
            .and_then(PyValue::as_str)
            .ok_or_else(|| invalid(format!("{path}.type"), "a string is required"))?;
        let kind = EvaluatorType::parse(ty).ok_or_else(|| {
            invalid(
                format!("{path}.type"),
                format!("unknown evaluator type {ty:?}"),
            )
        })?;
        let config = match field("config") {
            None | Some(PyValue::None) => crate::pyvalue::Dict::new(),
            Some(PyValue::Dict(c)) => c.clone(),
            Some(_) => return Err(invalid(format!("{path}.config"), "must be an object")),
        };
        let ev = crate::criteria::build_evaluator(id, kind, &config, &format!("{path}.config"))
            .map_err(|e| invalid(&e.path, &e.message))?;
        let bound = match criteria.get_str(id) {
            None | Some(PyValue::None) => {
                let Some(c) = &ev.default_criteria else {
                    return Err(invalid(
                        format!("criteria.{id}"),
                        "no criteria given and the evaluator has no defaultEvaluationCriteria",
                    ));
                };
                c.clone()
            }
            Some(c) => ev
                .parse_criteria(c)
                .map_err(|e| invalid(format!("criteria.{id}"), e))?,
        };
        let outcome = if ev.is_llm_judged() {
            let (evaluator, criteria) = (Arc::new(ev.clone()), Arc::new(bound));
            judged.push((
                i,
                ItemEvaluator {
                    evaluator,
                    criteria,
                    source: None,
                },
            ));
            Outcome::pending()
        } else {
            ev.evaluate(&calls, &bound)
        };
        scores.push(Score {
            evaluator_id: ev.id.clone(),
            evaluator_type: kind,
            outcome: outcome.into(),
        });
    }
    let mut record =
        evaluate_ready(&Binder::default(), &st.extract, ready, SystemTime::now()).record;
    record.status = if ready.complete {
        TraceStatus::Evaluated
    } else {
        TraceStatus::TimedOut
    };
    record.binding = None;
    record.scores = scores;
    Ok((record, judged))
}

/// Whether any score of a record errored (for tests and callers).
pub fn has_errors(r: &StoredResult) -> bool {
    r.scores.iter().any(|s| s.outcome.status == Status::Error)
}

/// An API state over `store` with the default configuration, for the
/// handler tests.
#[cfg(test)]
pub(crate) fn test_state(store: Arc<dyn ResultStore>, config: ApiConfig) -> Arc<ApiState> {
    Arc::new(ApiState {
        store,
        binder: Arc::new(Binder::default()),
        extract: Arc::new(ExtractConfig::default()),
        metrics: Arc::new(Metrics::new()),
        ready: Arc::new(AtomicBool::new(true)),
        failed: crate::supervise::Failed::default(),
        config,
        shutdown: tokio_util::sync::CancellationToken::new(),
        keep: Arc::new(ExtractConfig::default().keep([])),
        judges: Arc::new(
            crate::llm::Judges::build(
                &crate::llm::config::LlmConfig::default(),
                &crate::llm::metrics::LlmMetrics::default(),
            )
            .expect("the default llm config builds"),
        ),
        watchers: super::watch::Watchers::new(16, 16, tokio_util::sync::CancellationToken::new()),
        ui_auth: None,
    })
}

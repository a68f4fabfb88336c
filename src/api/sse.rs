//! `GET /v1/watch`: results as server-sent events, the HTTP counterpart of
//! gRPC `WatchScores` (the same subscription, `super::watch`).
//!
//! Each stored record that passes the filters is one event `scores` whose
//! data is the scores body of `GET /traces/{id}/scores` and whose id is
//! `<trace id>:<revision>`. A subscriber that falls behind gets an event
//! `error` (`resource_exhausted`) and the stream ends; at shutdown, `error`
//! (`unavailable`). A comment every 15 s keeps idle connections open
//! through proxies.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use serde::Deserialize;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use utoipa::IntoParams;

use super::ErrorKind;
use super::http::{ApiError, ApiQuery, ApiState, ErrorBody, ScoresBody};
use super::watch::{TOO_SLOW, WatchFilter, Watched};
use crate::span::TraceId;
use crate::store::TraceStatus;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct WatchQuery {
    /// Only traces with a score from this evaluator id.
    evaluator: Option<String>,
    /// Only traces with some score (of `evaluator`, if given) at or below this.
    max_score: Option<f64>,
    /// Only traces with this status.
    #[param(value_type = Option<super::http::TraceStatusBody>, inline)]
    status: Option<String>,
    /// Only this trace (32 hex characters).
    trace_id: Option<String>,
}

/// The stream's documentation: each event's data is JSON, which OpenAPI
/// cannot describe inside `text/event-stream`, so the description names it.
#[utoipa::path(
    get,
    path = "/v1/watch",
    tag = "results",
    summary = "Results as server-sent events",
    description = "Each result stored from the moment the response starts that passes every \
        filter is one event `scores` whose data is the scores body (the `Scores` schema) and \
        whose id is `<trace id>:<revision>`. A subscriber that falls behind gets a last event \
        `error` (`resource_exhausted`); at shutdown, `error` (`unavailable`); their data is the \
        `Error` schema. A comment every 15 s keeps idle connections open.",
    params(WatchQuery),
    responses(
        (status = 200, description = "An endless stream of events",
            body = String, content_type = "text/event-stream"),
        (status = 400, description = "An invalid or unknown filter", body = ErrorBody),
        (status = 429, description = "Too many watch subscriptions; retry later", body = ErrorBody),
        super::schema::Refused,
        super::schema::TimedOut,
    ),
    security(("bearer" = ["read"])),
)]
pub(super) async fn watch(
    State(st): State<Arc<ApiState>>,
    ApiQuery(q): ApiQuery<WatchQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let invalid = |m: String| ApiError::new(ErrorKind::InvalidArgument, m);
    if q.max_score.is_some_and(f64::is_nan) {
        return Err(invalid("max_score must be a number, got NaN".into()));
    }
    let status = match q.status.as_deref() {
        None => None,
        Some(s) => Some(TraceStatus::parse(s).ok_or_else(|| {
            invalid(format!(
                "status must be pending, evaluated, unbound or timed_out, got {s:?}"
            ))
        })?),
    };
    let trace_id = match q.trace_id.as_deref() {
        None => None,
        Some(s) => Some(TraceId::parse_hex(s).map_err(|e| invalid(e.to_string()))?),
    };
    let filter = WatchFilter {
        status,
        evaluator: q.evaluator,
        trace_id,
        max_score: q.max_score,
    };
    let dropped = st.metrics.watch_subscribers_dropped.clone();
    let Some(rx) = st
        .watchers
        .subscribe(st.store.subscribe(), filter, move || {
            dropped.inc();
        })
    else {
        return Err(ApiError::new(
            ErrorKind::ResourceExhausted,
            "too many watch subscriptions; retry later",
        ));
    };
    let events = ReceiverStream::new(rx).map(|watched| {
        Ok(match watched {
            Watched::Record(r) => match ScoresBody::try_from(&*r) {
                Ok(body) => Event::default()
                    .event("scores")
                    .id(format!("{}:{}", r.trace_id.to_hex(), r.revision))
                    .data(json_text(&body)),
                // A record as stored is readable; one that is not is
                // logged and named, and the stream goes on.
                Err(e) => {
                    tracing::warn!(error = %e, "a watched result could not be read");
                    error_event(ErrorKind::Internal, "a stored result could not be read")
                }
            },
            Watched::TooSlow => error_event(ErrorKind::ResourceExhausted, TOO_SLOW),
            Watched::ShuttingDown => error_event(
                ErrorKind::Unavailable,
                "the server is shutting down; reconnect",
            ),
        })
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// The API's error shape as an event (the stream's last, but for a
/// record that cannot be read).
fn error_event(kind: ErrorKind, message: &str) -> Event {
    Event::default()
        .event("error")
        .data(json_text(&ErrorBody::new(kind, message)))
}

/// An event's data: compact JSON (the bodies are plain structs, which
/// always serialise).
fn json_text(body: &impl serde::Serialize) -> String {
    serde_json::to_string(body).unwrap_or_default()
}

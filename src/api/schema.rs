//! The HTTP API's documentation-only types: the `POST /v1/evaluate` body's
//! schema (the handler reads the body itself) and the error responses
//! several operations share. The handlers name them in their
//! `#[utoipa::path]` attributes; `openapi.rs` collects the document.

use std::collections::BTreeMap;

use serde_json::Value as Json;
use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder, response::Response};
use utoipa::{IntoResponses, ToSchema};

// Only its schema is used: the handler reads the body itself, to name the
// JSON path of what is wrong and to read numbers as Python's `json.loads` does.
/// `POST /v1/evaluate`'s body: an OTLP/JSON `ExportTraceServiceRequest`
/// holding the spans of one trace, with optional inline evaluators and their
/// criteria. Without `evaluators`, the trace is bound as the live service
/// would bind it. The body may also hold the trace's log records, as OTLP/JSON
/// `resourceLogs` (the model's messages as GenAI events: docs/api.md).
#[derive(ToSchema)]
#[expect(dead_code, reason = "a schema only; the handler parses the body")]
pub struct EvaluateRequest {
    /// The spans, every one of one trace, as OTLP/JSON encodes them.
    #[schema(rename = "resourceSpans", min_items = 1)]
    resource_spans: Vec<ResourceSpans>,
    /// Evaluators to run instead of those the service would bind.
    evaluators: Option<Vec<InlineEvaluator>>,
    /// Criteria by evaluator id; an absent or null entry takes the
    /// evaluator's `defaultEvaluationCriteria`.
    #[schema(value_type = Option<BTreeMap<String, Value>>)]
    criteria: Option<Json>,
}

/// OTLP/JSON `ResourceSpans`: spans with their resource (whose
/// `service.name` the root's summary shows).
#[derive(ToSchema)]
#[expect(dead_code, reason = "a schema only; the handler parses the body")]
pub struct ResourceSpans {
    #[schema(value_type = Option<Object>)]
    resource: Option<Json>,
    #[schema(rename = "scopeSpans")]
    scope_spans: Vec<ScopeSpans>,
}

/// OTLP/JSON `ScopeSpans`.
#[derive(ToSchema)]
#[expect(dead_code, reason = "a schema only; the handler parses the body")]
pub struct ScopeSpans {
    #[schema(value_type = Option<Object>)]
    scope: Option<Json>,
    spans: Vec<OtlpSpan>,
}

/// An OTLP/JSON span: the fields toolscore reads (others are ignored).
#[derive(ToSchema)]
#[expect(dead_code, reason = "a schema only; the handler parses the body")]
#[schema(as = Span)]
pub struct OtlpSpan {
    /// 32 hex characters, not all zero.
    #[schema(rename = "traceId", pattern = "^[0-9a-fA-F]{32}$")]
    trace_id: String,
    /// 16 hex characters, not all zero.
    #[schema(rename = "spanId", pattern = "^[0-9a-fA-F]{16}$")]
    span_id: String,
    /// The parent's span id; absent or empty for the root span.
    #[schema(rename = "parentSpanId")]
    parent_span_id: Option<String>,
    name: String,
    /// Nanoseconds since the Unix epoch, as a decimal string.
    #[schema(rename = "startTimeUnixNano", pattern = "^[0-9]{1,19}$")]
    start_time_unix_nano: Option<String>,
    /// Nanoseconds since the Unix epoch, as a decimal string.
    #[schema(rename = "endTimeUnixNano", pattern = "^[0-9]{1,19}$")]
    end_time_unix_nano: Option<String>,
    /// OTLP key-values (`{"key", "value": {"stringValue": …}}`); the tool
    /// call conventions read them.
    #[schema(value_type = Option<Vec<Object>>)]
    attributes: Option<Json>,
}

/// An evaluator given inline, as in a UiPath evaluator file.
#[derive(ToSchema)]
#[expect(dead_code, reason = "a schema only; the handler parses the body")]
pub struct InlineEvaluator {
    id: String,
    /// The evaluator type's id (`uipath-tool-call-order`, …).
    #[schema(rename = "type")]
    kind: String,
    /// The evaluator's config, as in its file.
    #[schema(value_type = Option<Object>)]
    config: Option<Json>,
}

/// An error answer's response, with the error body.
fn error_response(description: &str) -> RefOr<Response> {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("Error")))
                .build(),
        )
        .build()
        .into()
}

fn responses(list: &[(&str, &str)]) -> BTreeMap<String, RefOr<Response>> {
    list.iter()
        .map(|(status, description)| ((*status).to_owned(), error_response(description)))
        .collect()
}

/// The token check's refusals, on every operation that needs a scope.
pub struct Refused;

impl IntoResponses for Refused {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        responses(&[
            ("401", "No valid bearer token (`unauthenticated`)"),
            (
                "403",
                "The token lacks the operation's scope (`permission_denied`)",
            ),
        ])
    }
}

/// The results database cannot be read.
pub struct Unavailable;

impl IntoResponses for Unavailable {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        responses(&[("503", "The results database cannot be read (`unavailable`)")])
    }
}

/// `api.request_timeout_ms` passed.
pub struct TimedOut;

impl IntoResponses for TimedOut {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        responses(&[(
            "504",
            "The request took longer than `api.request_timeout_ms` (`deadline_exceeded`)",
        )])
    }
}

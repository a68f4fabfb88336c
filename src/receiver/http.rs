//! OTLP/HTTP: `POST /v1/traces` and `POST /v1/logs`, protobuf or JSON,
//! optionally gzip. The body is capped as sent and again after inflation
//! (413 past either cap).

use std::io::Read;
use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use prost::Message;

use super::HttpReceiverConfig;
use super::decode::decode;
use super::{Ingest, Refused, Signal, admit, ingest, log};
use crate::telemetry::Refusal;
use crate::wal::Kind;

pub struct HttpState {
    pub ctx: Arc<Ingest>,
    pub max_body: usize,
    pub max_inflated: usize,
    /// The body must arrive whole within this.
    pub read_timeout: std::time::Duration,
}

impl HttpState {
    /// Counts a request refused for `why` and answers it.
    fn refuse(&self, why: Refusal, format: Kind, status: StatusCode, message: String) -> Response {
        self.ctx.metrics.refuse(why);
        error(format, status, message)
    }

    fn too_large(&self, format: Kind, what: &str, max: usize) -> Response {
        let message = format!("{what} exceeds {max} bytes");
        self.refuse(
            Refusal::TooLarge,
            format,
            StatusCode::PAYLOAD_TOO_LARGE,
            message,
        )
    }
}

/// The OTLP/HTTP router.
pub fn router(ctx: Arc<Ingest>, cfg: &HttpReceiverConfig) -> Router {
    let state = Arc::new(HttpState {
        ctx,
        max_body: cfg.max_request_body_bytes.get(),
        max_inflated: cfg.max_decompressed_body_bytes.get(),
        read_timeout: std::time::Duration::from_millis(cfg.read_timeout_ms.get()),
    });
    Router::new()
        .route("/v1/traces", post(export_traces))
        .route("/v1/logs", post(export_logs))
        // Our own cap applies (below); axum's default 2 MiB must not.
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(state)
}

fn content_type(format: Kind) -> &'static str {
    if format.is_json() {
        "application/json"
    } else {
        "application/x-protobuf"
    }
}

fn format_of(headers: &HeaderMap) -> Option<Kind> {
    let ct = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let mime = ct.split(';').next()?.trim().to_ascii_lowercase();
    match mime.as_str() {
        "application/x-protobuf" | "application/protobuf" => Some(Kind::OtlpProtobuf),
        "application/json" => Some(Kind::OtlpJson),
        _ => None,
    }
}

/// A request refused for its token: `UNAUTHENTICATED` (401) or
/// `PERMISSION_DENIED` (403), in the request's encoding, with no detail.
pub fn refuse_auth(failure: crate::auth::Failure, headers: &HeaderMap) -> Response {
    let format = format_of(headers).unwrap_or(Kind::OtlpJson);
    match failure {
        crate::auth::Failure::Forbidden => error(
            format,
            StatusCode::FORBIDDEN,
            "the token does not allow export".into(),
        ),
        _ => error(
            format,
            StatusCode::UNAUTHORIZED,
            "authentication required".into(),
        ),
    }
}

/// An OTLP error response: `google.rpc.Status` in the request's encoding.
fn error(format: Kind, status: StatusCode, message: String) -> Response {
    let code = match status {
        StatusCode::BAD_REQUEST | StatusCode::UNSUPPORTED_MEDIA_TYPE => 3,
        StatusCode::UNAUTHORIZED => 16,
        StatusCode::FORBIDDEN => 7,
        StatusCode::REQUEST_TIMEOUT => 4,
        StatusCode::PAYLOAD_TOO_LARGE => 8,
        StatusCode::SERVICE_UNAVAILABLE => 14,
        _ => 13,
    };
    let body = if format.is_json() {
        serde_json::json!({"code": code, "message": message})
            .to_string()
            .into_bytes()
    } else {
        tonic_types::Status {
            code,
            message,
            details: vec![],
        }
        .encode_to_vec()
    };
    (status, [(header::CONTENT_TYPE, content_type(format))], body).into_response()
}

async fn export_traces(
    State(st): State<Arc<HttpState>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    export(&st, &headers, body, Signal::Traces).await
}

async fn export_logs(State(st): State<Arc<HttpState>>, headers: HeaderMap, body: Body) -> Response {
    export(&st, &headers, body, Signal::Logs).await
}

async fn export(st: &HttpState, headers: &HeaderMap, body: Body, signal: Signal) -> Response {
    let Some(format) = format_of(headers) else {
        return st.refuse(
            Refusal::UnsupportedMediaType,
            Kind::OtlpJson,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/x-protobuf or application/json".into(),
        );
    };
    let gzip = match headers
        .get(header::CONTENT_ENCODING)
        .map(HeaderValue::to_str)
    {
        None => false,
        Some(Ok(e)) if e.trim().eq_ignore_ascii_case("gzip") => true,
        Some(Ok(e)) if e.trim().eq_ignore_ascii_case("identity") => false,
        Some(_) => {
            return st.refuse(
                Refusal::UnsupportedEncoding,
                format,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Content-Encoding must be gzip or identity".into(),
            );
        }
    };
    // A declared length over the cap is refused before any of the body is
    // read: a client sending `Expect: 100-continue` gets 413, not 100.
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > st.max_body as u64) {
        return st.too_large(format, "request body", st.max_body);
    }
    // Before the body is read and decoded (see `admit`).
    if let Err(refused) = admit(&st.ctx).await {
        return refusal(format, refused);
    }
    let read = tokio::time::timeout(st.read_timeout, axum::body::to_bytes(body, st.max_body));
    let raw = match read.await {
        Ok(Ok(b)) => b,
        Err(_) => {
            return st.refuse(
                Refusal::Timeout,
                format,
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body did not arrive within {} ms",
                    st.read_timeout.as_millis()
                ),
            );
        }
        Ok(Err(_)) => return st.too_large(format, "request body", st.max_body),
    };
    let bytes = if gzip {
        match inflate(&raw, st.max_inflated) {
            Ok(b) => b,
            Err(Inflate::TooLarge) => {
                return st.too_large(format, "inflated request body", st.max_inflated);
            }
            Err(Inflate::Corrupt(e)) => {
                let message = format!("invalid gzip body: {e}");
                return st.refuse(Refusal::Malformed, format, StatusCode::BAD_REQUEST, message);
            }
        }
    } else {
        raw
    };
    let kind = match signal {
        Signal::Traces => format,
        Signal::Logs => format.logs(),
    };
    let decoded = match decode(kind, &bytes, &st.ctx.keep) {
        Ok(r) => r,
        Err(message) => {
            return st.refuse(Refusal::Malformed, format, StatusCode::BAD_REQUEST, message);
        }
    };
    let ingested = match log(&st.ctx, kind, &bytes, &decoded) {
        Ok(appended) => ingest(&st.ctx, "http", signal, decoded, appended).await,
        Err(refused) => Err(refused),
    };
    let done = match ingested {
        Ok(done) => done,
        Err(refused) => return refusal(format, refused),
    };
    let body = match (signal, format.is_json()) {
        // `{}` rather than `{"partialSuccess": null}` when all was accepted.
        (_, true) if done.rejected == 0 => b"{}".to_vec(),
        (Signal::Traces, true) => serde_json::to_vec(&done.response()).unwrap_or_default(),
        (Signal::Traces, false) => done.response().encode_to_vec(),
        (Signal::Logs, true) => serde_json::to_vec(&done.logs_response()).unwrap_or_default(),
        (Signal::Logs, false) => done.logs_response().encode_to_vec(),
    };
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, content_type(format))],
        body,
    )
        .into_response()
}

/// A request refused whole, in the request's encoding.
fn refusal(format: Kind, refused: Refused) -> Response {
    match refused {
        Refused::Unavailable { retry_after } => {
            // `Retry-After` takes whole seconds: rounded up, at least one.
            let secs = retry_after.as_millis().div_ceil(1000).max(1);
            let mut r = error(
                format,
                StatusCode::SERVICE_UNAVAILABLE,
                format!("toolscore is at capacity; retry after {secs}s"),
            );
            if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
                r.headers_mut().insert(header::RETRY_AFTER, v);
            }
            r
        }
        Refused::Invalid(message) => error(format, StatusCode::BAD_REQUEST, message),
    }
}

enum Inflate {
    TooLarge,
    Corrupt(std::io::Error),
}

/// Inflates gzip, refusing to produce more than `max` bytes (a zip bomb stops there).
fn inflate(raw: &[u8], max: usize) -> Result<Bytes, Inflate> {
    let mut out = Vec::new();
    let mut reader = flate2::read::MultiGzDecoder::new(raw).take(max as u64 + 1);
    reader.read_to_end(&mut out).map_err(Inflate::Corrupt)?;
    if out.len() > max {
        return Err(Inflate::TooLarge);
    }
    Ok(Bytes::from(out))
}

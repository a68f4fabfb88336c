//! The query API: HTTP/JSON (`http.rs`, axum) and gRPC
//! (`toolscore.v1.ScoresService`). Both map errors through one table,
//! [`ErrorKind`], so a given failure has the same meaning on either.

mod body;
mod config;
pub mod grpc;
pub mod http;
mod openapi;
mod query;
mod schema;
mod sse;
mod time;
pub mod ui;
pub mod watch;

pub use config::{ApiConfig, ApiListener, UiConfig};

/// The HTTP API's router: `http.rs`'s endpoints, the watch stream
/// (`sse.rs`) and the OpenAPI document (`openapi.rs`), joined here so that
/// none of the three needs another's router.
pub fn router(state: std::sync::Arc<http::ApiState>) -> axum::Router {
    use axum::routing::get;
    let doc = openapi::document();
    http::routes(state.config.max_evaluate_body_bytes.get())
        .route("/v1/watch", get(sse::watch))
        .route(
            "/openapi.json",
            get(move || http::openapi_json(doc.clone())),
        )
        .with_state(state)
}

#[cfg(test)]
mod tests;

/// What went wrong, independent of the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    InvalidArgument,
    NotFound,
    MethodNotAllowed,
    /// No valid bearer token.
    Unauthenticated,
    /// A valid token without the scope the call needs.
    PermissionDenied,
    PayloadTooLarge,
    /// Too many of something at once (watch subscriptions): retry later.
    ResourceExhausted,
    Unavailable,
    DeadlineExceeded,
    Internal,
}

impl ErrorKind {
    /// The one table from error kind to HTTP status, gRPC code and JSON code.
    pub fn statuses(self) -> (u16, tonic::Code, &'static str) {
        match self {
            ErrorKind::InvalidArgument => (400, tonic::Code::InvalidArgument, "invalid_argument"),
            ErrorKind::NotFound => (404, tonic::Code::NotFound, "not_found"),
            ErrorKind::MethodNotAllowed => (405, tonic::Code::Unimplemented, "method_not_allowed"),
            ErrorKind::Unauthenticated => (401, tonic::Code::Unauthenticated, "unauthenticated"),
            ErrorKind::PermissionDenied => {
                (403, tonic::Code::PermissionDenied, "permission_denied")
            }
            ErrorKind::PayloadTooLarge => {
                (413, tonic::Code::ResourceExhausted, "payload_too_large")
            }
            ErrorKind::ResourceExhausted => {
                (429, tonic::Code::ResourceExhausted, "resource_exhausted")
            }
            ErrorKind::Unavailable => (503, tonic::Code::Unavailable, "unavailable"),
            ErrorKind::DeadlineExceeded => {
                (504, tonic::Code::DeadlineExceeded, "deadline_exceeded")
            }
            ErrorKind::Internal => (500, tonic::Code::Internal, "internal"),
        }
    }

    pub fn grpc_status(self, message: impl Into<String>) -> tonic::Status {
        tonic::Status::new(self.statuses().1, message)
    }
}

//! The web UI at `/ui/` (GitHub issue 20): server-rendered pages over the
//! results store, for "which tool call went wrong, and why?" (a trace's
//! page) and "are our agents getting worse?" (the overview, kept live by
//! `GET /v1/watch`).
//!
//! No build step and nothing fetched from elsewhere: the pages are `maud`
//! templates, and one script and one stylesheet are embedded in the binary
//! ([`assets`]). Every page carries a strict Content-Security-Policy (no
//! inline script or style), since traces are attacker-controlled text.
//! `router(state)` is merged into the HTTP API's router by `app/serve.rs`, before
//! its token guard and timeout, so the pages need the `read` scope.

pub mod assets;
mod explain;
mod layout;
mod overview;
mod search;
mod sign_in;
mod trace;

use std::sync::Arc;

use axum::Router;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use maud::{Markup, html};

use super::http::ApiState;
use crate::span::TraceId;
use layout::Nav;

/// No script or style but the embedded ones, no framing, no form posting
/// elsewhere; `connect-src 'self'` is for the live script's `EventSource`.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'none'; connect-src 'self'; form-action 'self'; base-uri 'none'; \
    frame-ancestors 'none'";

/// The UI's routes. There is no fallback here: the HTTP API's router, into
/// which this one is merged, has the only one.
pub fn router(state: Arc<ApiState>) -> Router {
    Router::new()
        .route("/ui", get(|| async { Redirect::permanent("/ui/") }))
        .route("/ui/", get(overview::handler))
        .route("/ui/search", get(search::handler))
        .route("/ui/traces/{trace_id}", get(trace_page))
        .route("/ui/assets/{name}", get(assets::handler))
        .route(
            "/ui/sign-in",
            get(sign_in::page)
                .post(sign_in::submit)
                .layer(axum::extract::DefaultBodyLimit::max(
                    sign_in::MAX_FORM_BYTES,
                )),
        )
        .route("/ui/sign-out", post(sign_in::sign_out))
        .with_state(state)
}

/// An HTML page with the UI's security headers. Pages show live data, so
/// they are revalidated on every visit.
pub fn html_page(status: StatusCode, markup: Markup) -> Response {
    let mut resp = (status, markup.into_string()).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// Why a page could not be shown; each answers as an HTML page with its
/// status, never with internal detail for a 5xx.
#[derive(Debug)]
pub enum UiError {
    BadRequest(String),
    NotFound(String),
    /// The results database cannot be read now.
    Unavailable(crate::store::ReadError),
    /// Rendering a page failed (its blocking task panicked or was
    /// cancelled): a 500 without detail.
    Internal(tokio::task::JoinError),
    /// A stored result that cannot be read back: a 500 naming it.
    Unreadable(crate::store::CallsError),
}

impl From<crate::store::ReadError> for UiError {
    fn from(e: crate::store::ReadError) -> UiError {
        UiError::Unavailable(e)
    }
}

impl IntoResponse for UiError {
    fn into_response(self) -> Response {
        let (status, title, message) = match self {
            UiError::BadRequest(m) => (StatusCode::BAD_REQUEST, "Bad request", m),
            UiError::NotFound(m) => (StatusCode::NOT_FOUND, "Not found", m),
            UiError::Unavailable(e) => {
                tracing::warn!(error = %e, "UI page failed: results store unreadable");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Results unavailable",
                    "The results database cannot be read now; retry shortly.".to_owned(),
                )
            }
            UiError::Unreadable(e) => {
                tracing::warn!(error = %e, "UI page failed: a stored result is unreadable");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Internal error",
                    "This trace's stored result could not be read.".to_owned(),
                )
            }
            UiError::Internal(e) => {
                tracing::warn!(error = %e, "UI page failed: rendering did not complete");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Internal error",
                    "This page could not be rendered.".to_owned(),
                )
            }
        };
        let body = html! {
            h1 { (title) }
            p class="error-text" { (message) }
            p { a href="/ui/" { "Back to the overview" } }
        };
        html_page(status, layout::page(title, Nav::None, false, body))
    }
}

/// `/ui/traces/{trace_id}`: 400 for an ID that is not 32 hex characters,
/// 404 for one the store does not hold.
async fn trace_page(
    State(st): State<Arc<ApiState>>,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, UiError> {
    let Ok(Path(raw)) = path else {
        return Err(UiError::BadRequest("the trace ID is not valid text".into()));
    };
    let id = TraceId::parse_hex(&raw)
        .map_err(|e| UiError::BadRequest(format!("{raw:?} is not a trace ID: {e}")))?;
    let Some(record) = crate::store::get(&st.store, id).await? else {
        return Err(UiError::NotFound(format!(
            "No trace {} is stored (it may not have arrived yet, or has expired).",
            id.to_hex()
        )));
    };
    // A trace with many or large calls takes milliseconds to render:
    // that work leaves the async threads.
    let binder = st.binder.clone();
    let sign_out = st.ui_auth.is_some();
    let page = tokio::task::spawn_blocking(move || {
        let body = trace::render(&record, &binder)?;
        let title = format!("Trace {}", id.to_hex());
        Ok(layout::page(&title, Nav::None, sign_out, body))
    })
    .await
    .map_err(UiError::Internal)?
    .map_err(UiError::Unreadable)?;
    Ok(html_page(StatusCode::OK, page))
}

#[cfg(test)]
mod tests;

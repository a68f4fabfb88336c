//! The check on the HTTP listeners, as axum middleware.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, Method, header};

use super::{Failure, Guard, Scope, Sessions};

/// The scope a request needs, from its method and path; `None`: it is open.
pub type ScopeOf = Box<dyn Fn(&Method, &str) -> Option<Scope> + Send + Sync>;

/// What a listener needs per request, and how it refuses.
pub struct HttpGuard {
    pub guard: Guard,
    pub scope_of: ScopeOf,
    /// The refusal in the listener's error shape; 401 or 403, no detail.
    pub refuse: fn(Failure, &HeaderMap) -> Response,
    /// The web UI's signed-in sessions, which its pages and the live
    /// updates they open (`/v1/watch`) accept in place of a bearer token;
    /// a page asked for without either goes to the sign-in page.
    pub sessions: Option<Arc<Sessions>>,
}

/// Whether a path takes a UI session in place of a bearer token.
fn takes_session(path: &str) -> bool {
    path.starts_with("/ui/") || path == "/ui" || path == "/v1/watch"
}

pub async fn http_guard(State(g): State<Arc<HttpGuard>>, req: Request, next: Next) -> Response {
    let Some(scope) = (g.scope_of)(req.method(), req.uri().path()) else {
        return next.run(req).await;
    };
    let authorization = req
        .headers()
        .get(header::AUTHORIZATION)
        .map(HeaderValue::as_bytes);
    let path = req.uri().path();
    let checked = match (&g.sessions, authorization) {
        (Some(sessions), None) if takes_session(path) => {
            g.guard.check_session(sessions, req.headers(), scope)
        }
        _ => g.guard.check(authorization, scope),
    };
    match checked {
        Ok(()) => next.run(req).await,
        // A page without a session: the sign-in page, which comes back.
        Err(Failure::Missing | Failure::Invalid)
            if g.sessions.is_some() && path.starts_with("/ui") && req.method() == Method::GET =>
        {
            axum::response::Redirect::to("/ui/sign-in").into_response()
        }
        Err(failure) => {
            let mut response = (g.refuse)(failure, req.headers());
            if failure != Failure::Forbidden {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            response
        }
    }
}

//! The check on the HTTP listeners, as axum middleware.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderMap, HeaderValue, Method, header};

use super::{Failure, Guard, Scope};

/// The scope a request needs, from its method and path; `None`: it is open.
pub type ScopeOf = Box<dyn Fn(&Method, &str) -> Option<Scope> + Send + Sync>;

/// What a listener needs per request, and how it refuses.
pub struct HttpGuard {
    pub guard: Guard,
    pub scope_of: ScopeOf,
    /// The refusal in the listener's error shape; 401 or 403, no detail.
    pub refuse: fn(Failure, &HeaderMap) -> Response,
}

pub async fn http_guard(State(g): State<Arc<HttpGuard>>, req: Request, next: Next) -> Response {
    let Some(scope) = (g.scope_of)(req.method(), req.uri().path()) else {
        return next.run(req).await;
    };
    let authorization = req
        .headers()
        .get(header::AUTHORIZATION)
        .map(HeaderValue::as_bytes);
    match g.guard.check(authorization, scope) {
        Ok(()) => next.run(req).await,
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

//! `/ui/sign-in` and `/ui/sign-out`: with tokens on `api.http`, a browser
//! signs in once with a token that has the `read` scope and then carries a
//! session cookie ([`crate::auth::Sessions`]), since it cannot send a
//! bearer token with a page request.
//!
//! The token is posted in a form body, never in a URL, and neither it nor
//! the session ID is logged. Both forms are refused from another origin:
//! the cookie is `SameSite=Strict`, and checking `Origin` as well keeps a
//! foreign page from signing a browser in or out.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};

use super::html_page;
use super::layout::{self, Nav};
use crate::api::http::ApiState;
use crate::auth::{Failure, Scope};

/// The largest sign-in form body read: a token is a line of text.
pub const MAX_FORM_BYTES: usize = 8 * 1024;

/// `GET /ui/sign-in`: the form, or the overview when no sign-in is needed.
pub async fn page(State(st): State<Arc<ApiState>>) -> Response {
    if st.ui_auth.is_none() {
        return Redirect::to("/ui/").into_response();
    }
    html_page(StatusCode::OK, render(None))
}

/// `POST /ui/sign-in`: a session for a token with the `read` scope, then
/// the overview; the form again with the reason otherwise.
pub async fn submit(
    State(st): State<Arc<ApiState>>,
    uri: Uri,
    headers: HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    let Some(auth) = &st.ui_auth else {
        return Redirect::to("/ui/").into_response();
    };
    if !same_origin(&uri, &headers) {
        return html_page(
            StatusCode::FORBIDDEN,
            render(Some("Sign-in is only accepted from this site's own page.")),
        );
    }
    let form_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
    let (true, Ok(body)) = (form_type, body) else {
        return html_page(
            StatusCode::BAD_REQUEST,
            render(Some("The form could not be read; enter the token again.")),
        );
    };
    let token = form_urlencoded::parse(&body)
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v)
        .unwrap_or_default();
    let token = token.trim().as_bytes();
    let refused = match auth.guard.check_token(token, Scope::Read) {
        Ok(()) => None,
        Err(Failure::Forbidden) => Some((
            StatusCode::FORBIDDEN,
            "That token does not have the read scope.",
        )),
        Err(Failure::Missing) => Some((StatusCode::UNAUTHORIZED, "Enter a token.")),
        Err(Failure::Malformed | Failure::Invalid) => {
            Some((StatusCode::UNAUTHORIZED, "That token is not valid."))
        }
    };
    if let Some((status, message)) = refused {
        return html_page(status, render(Some(message)));
    }
    match auth.sessions.open(token, Instant::now()) {
        Some(cookie) => with_cookie(Redirect::to("/ui/").into_response(), &cookie),
        // No randomness for a session ID: nothing to hand out.
        None => html_page(
            StatusCode::SERVICE_UNAVAILABLE,
            render(Some("A session could not be opened; retry shortly.")),
        ),
    }
}

/// `POST /ui/sign-out`: ends the session and clears the cookie.
pub async fn sign_out(State(st): State<Arc<ApiState>>, uri: Uri, headers: HeaderMap) -> Response {
    let Some(auth) = &st.ui_auth else {
        return Redirect::to("/ui/").into_response();
    };
    if !same_origin(&uri, &headers) {
        return html_page(
            StatusCode::FORBIDDEN,
            render(Some("Sign-out is only accepted from this site's own page.")),
        );
    }
    let cleared = auth.sessions.close(&headers);
    with_cookie(Redirect::to("/ui/sign-in").into_response(), &cleared)
}

/// Whether a form post comes from this site, as Go's
/// `http.CrossOriginProtection` decides it: a browser's `Sec-Fetch-Site`
/// says so (`same-origin`, or `none` for one the user typed); without it,
/// `Origin` must name this host; a request with neither is not a browser
/// led there by another site. The pages' `no-referrer` policy makes a
/// browser send `Origin: null`, so `Sec-Fetch-Site` decides for modern
/// ones. The host is `Host`'s, or HTTP/2's `:authority`.
fn same_origin(uri: &Uri, headers: &HeaderMap) -> bool {
    if let Some(site) = headers.get("sec-fetch-site") {
        return site == "same-origin" || site == "none";
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| uri.authority().map(|a| a.as_str()));
    let origin_host = origin
        .to_str()
        .ok()
        .and_then(|o| o.split_once("://"))
        .map(|(_, rest)| rest);
    matches!((origin_host, host), (Some(o), Some(h)) if o.eq_ignore_ascii_case(h))
}

fn with_cookie(mut resp: Response, cookie: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(cookie) {
        resp.headers_mut().insert(header::SET_COOKIE, v);
    }
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

fn render(error: Option<&str>) -> Markup {
    let body = html! {
        h1 { "Sign in" }
        p { "This toolscore asks for a token with the " code { "read" } " scope. \
             It is sent once; the browser then keeps a session cookie, \
             not the token." }
        @if let Some(e) = error {
            div class="error-summary" role="alert" { p { (e) } }
        }
        form method="post" action="/ui/sign-in" class="sign-in" {
            label for="token" { "Token" }
            input id="token" name="token" type="password" autocomplete="current-password"
                required autofocus aria-invalid=[error.map(|_| "true")];
            button type="submit" { "Sign in" }
        }
    };
    layout::page("Sign in", Nav::None, false, body)
}

//! The HTTP API's handlers through their router (`oneshot`), on the
//! runtime's paused clock: long polls and their caps take no real time.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{Value as Json, json};
use tower::ServiceExt;

use super::ApiConfig;
use super::http::test_state;
use super::router;
use crate::span::TraceId;
use crate::store::{MemoryStore, ResultStore, StoredResult, TraceStatus};

fn memory() -> Arc<MemoryStore> {
    Arc::new(MemoryStore::new(100, Duration::from_secs(3600), 16))
}

fn evaluated(id: u8) -> StoredResult {
    let mut r = StoredResult::pending(TraceId([id; 16]));
    r.status = TraceStatus::Evaluated;
    r.complete = true;
    r.revision = 1;
    r.evaluated_at = Some(SystemTime::now());
    r
}

async fn call(
    state: Arc<super::http::ApiState>,
    method: Method,
    uri: impl AsRef<str>,
) -> (StatusCode, Json) {
    let uri = uri.as_ref();
    let resp = router(state)
        .oneshot(
            Request::builder()
                .method(method)
                .uri(uri)
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let status = resp.status();
    let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
        .await
        .unwrap();
    (status, serde_json::from_slice(&body).unwrap_or(Json::Null))
}

fn id(n: u8) -> String {
    TraceId([n; 16]).to_hex()
}

#[tokio::test(start_paused = true)]
async fn a_long_poll_answers_when_the_result_is_stored() {
    let store = memory();
    store.put(StoredResult::pending(TraceId([1; 16])), Instant::now());
    let state = test_state(store.clone(), ApiConfig::default());
    let started = tokio::time::Instant::now();
    let poll = tokio::spawn(call(
        state,
        Method::GET,
        format!("/traces/{}/scores?wait_ms=20000", id(1)),
    ));
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!poll.is_finished(), "answered before the result was stored");
    store.put(evaluated(1), Instant::now());
    let (status, body) = poll.await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["status"], "evaluated");
    assert_eq!(started.elapsed(), Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn a_long_poll_ends_at_api_max_wait_ms_with_the_trace_as_it_stands() {
    let store = memory();
    store.put(StoredResult::pending(TraceId([2; 16])), Instant::now());
    let config = ApiConfig {
        max_wait_ms: 7_000,
        ..ApiConfig::default()
    };
    let state = test_state(store, config);

    let started = tokio::time::Instant::now();
    let (status, body) = call(
        state.clone(),
        Method::GET,
        &format!("/traces/{}/scores?wait_ms=600000", id(2)),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["status"], "pending");
    assert_eq!(started.elapsed(), Duration::from_secs(7), "capped");

    // A trace nothing is known of: not found once the wait ends.
    let started = tokio::time::Instant::now();
    let (status, body) = call(
        state,
        Method::GET,
        &format!("/traces/{}/scores?wait_ms=1500", id(3)),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"]["code"], "not_found");
    assert_eq!(started.elapsed(), Duration::from_millis(1500));
}

#[tokio::test(start_paused = true)]
async fn a_long_poll_ends_at_shutdown() {
    let store = memory();
    store.put(StoredResult::pending(TraceId([4; 16])), Instant::now());
    let state = test_state(store, ApiConfig::default());
    let shutdown = state.shutdown.clone();
    let poll = tokio::spawn(call(
        state,
        Method::GET,
        format!("/traces/{}/scores?wait_ms=20000", id(4)),
    ));
    tokio::time::sleep(Duration::from_secs(1)).await;
    shutdown.cancel();
    let (status, body) = tokio::time::timeout(Duration::from_millis(10), poll)
        .await
        .expect("the poll ends with the shutdown")
        .unwrap();
    // Still pending: the drain may store it a moment later, or another
    // replica may have it, so the client is told to retry, as `/v1/watch`
    // tells its watchers.
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["error"]["code"], "unavailable");
}

#[tokio::test(start_paused = true)]
async fn a_long_poll_at_shutdown_answers_a_stored_result() {
    let store = memory();
    let mut done = StoredResult::pending(TraceId([5; 16]));
    done.status = TraceStatus::Unbound;
    done.revision = 1;
    store.put(done, Instant::now());
    let state = test_state(store, ApiConfig::default());
    state.shutdown.cancel();
    let (status, body) = call(
        state,
        Method::GET,
        &format!("/traces/{}/scores?wait_ms=20000", id(5)),
    )
    .await;
    assert_eq!(
        (status, &body["status"]),
        (StatusCode::OK, &json!("unbound"))
    );
}

/// Every refusal in the one error shape, with its status and code.
#[tokio::test]
async fn refusals_have_the_error_shape() {
    let store: Arc<dyn ResultStore> = memory();
    let state = test_state(store, ApiConfig::default());
    let zero = "0".repeat(32);
    let unknown = id(9);
    let cases: Vec<(Method, String, StatusCode, &str)> = vec![
        (
            Method::GET,
            "/traces/xyz/scores".into(),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
        ),
        (
            Method::GET,
            format!("/traces/{zero}/scores"),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
        ),
        (
            Method::GET,
            format!("/traces/{unknown}/scores"),
            StatusCode::NOT_FOUND,
            "not_found",
        ),
        (
            Method::GET,
            format!("/traces/{unknown}"),
            StatusCode::NOT_FOUND,
            "not_found",
        ),
        (
            Method::GET,
            format!("/traces/{unknown}/scores?wait=1"),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
        ),
        (
            Method::GET,
            format!("/traces/{unknown}/scores?wait_ms=-1"),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
        ),
        (
            Method::GET,
            "/traces?bogus=1".into(),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
        ),
        (
            Method::GET,
            "/traces?since=2026-02-31T00:00:00Z".into(),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
        ),
        (
            Method::GET,
            "/traces?status=done".into(),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
        ),
        (
            Method::POST,
            "/traces".into(),
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
        ),
        (
            Method::DELETE,
            format!("/traces/{unknown}/scores"),
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
        ),
        (
            Method::GET,
            "/nope".into(),
            StatusCode::NOT_FOUND,
            "not_found",
        ),
    ];
    for (method, uri, want, code) in cases {
        let (status, body) = call(state.clone(), method.clone(), &uri).await;
        assert_eq!(status, want, "{method} {uri}: {body}");
        assert_eq!(body["error"]["code"], code, "{method} {uri}: {body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{method} {uri}: {body}"
        );
    }
}

#[tokio::test]
async fn readiness_follows_the_service_and_health_its_stages() {
    let store: Arc<dyn ResultStore> = memory();
    let state = test_state(store, ApiConfig::default());
    let (status, body) = call(state.clone(), Method::GET, "/readyz").await;
    assert_eq!((status, &body["status"]), (StatusCode::OK, &json!("ready")));

    state
        .ready
        .store(false, std::sync::atomic::Ordering::Relaxed);
    let (status, body) = call(state.clone(), Method::GET, "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    let (status, _) = call(state.clone(), Method::GET, "/healthz").await;
    assert_eq!(status, StatusCode::OK, "draining is not unhealthy");

    state.failed.set();
    let (status, _) = call(state, Method::GET, "/healthz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
}

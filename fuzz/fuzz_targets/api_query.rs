//! The HTTP query API's paths and query parameters (`api::router`,
//! in process): the input is a GET request's path and query (`/traces?
//! since=…&max_score=…&status=…&limit=…`, `/traces/{id}/scores?wait_ms=…`,
//! …), served against a store holding the example traces' results. The
//! parsers behind it (`api::time::parse_since` among them) are
//! crate-private; this reaches them as a client does. Never a panic, never
//! a 500, and every answer is JSON (or the Prometheus text of `/metrics`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let target = if text.starts_with('/') { text.to_owned() } else { format!("/{text}") };
    let Ok(req) = http::Request::get(target.as_str()).body(axum::body::Body::empty()) else { return };
    let (status, body) = toolscore_fuzz::request(req);
    assert_ne!(status.as_u16(), 500, "GET {target:?}: {}", String::from_utf8_lossy(&body));
    if !target.starts_with("/metrics") || status.as_u16() != 200 {
        serde_json::from_slice::<serde_json::Value>(&body).unwrap_or_else(|e| {
            panic!("GET {target:?} answered {status} with a body that is not JSON ({e}): {}", String::from_utf8_lossy(&body))
        });
    }
});

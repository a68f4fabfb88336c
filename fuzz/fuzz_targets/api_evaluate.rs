//! `POST /v1/evaluate` (`api::router`, in process): the input is the
//! request body, an OTLP/JSON trace with optional inline `evaluators` and
//! `criteria`, evaluated on the spot (OTLP/JSON parsing, extraction,
//! evaluator and criteria validation, every evaluator, the result's JSON).
//! Without inline evaluators the trace is bound as the service binds it (to
//! the example eval set's items by `eval.case.id`, …). Never a panic
//! (a panic in the handler answers 500) and every answer is JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let req = http::Request::post("/v1/evaluate")
        .header("content-type", "application/json")
        .body(axum::body::Body::from(data.to_vec()))
        .expect("a request");
    let (status, body) = toolscore_fuzz::request(req);
    assert_ne!(status.as_u16(), 500, "POST /v1/evaluate: {}", String::from_utf8_lossy(&body));
    serde_json::from_slice::<serde_json::Value>(&body).unwrap_or_else(|e| {
        panic!("answered {status} with a body that is not JSON ({e}): {}", String::from_utf8_lossy(&body))
    });
});

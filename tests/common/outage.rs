//! A database outage under load, for every database backend: small queues
//! so that it fills them fast, one-span traces sent until the receiver
//! refuses, then every acknowledged trace checked once the database is back.

use std::net::SocketAddr;
use std::num::NonZero;
use std::time::{Duration, Instant};

use toolscore::config::Config;

use super::process::{WAIT, body};

/// `config` with queues of a few results and a count evaluator.
pub fn small_queues(mut config: Config) -> Config {
    config.store.writer.queue_capacity = NonZero::new(4).unwrap();
    config.store.writer.max_batch = NonZero::new(2).unwrap();
    config.store.writer.retry_backoff_ms = NonZero::new(10).unwrap();
    config.evaluation.queue_capacity = NonZero::new(4).unwrap();
    config.assembler.max_traces = NonZero::new(64).unwrap();
    config.assembler.retry_after_secs = 3;
    config
        .evaluators
        .inline
        .push(super::service::count_evaluator(
            serde_json::json!({"get_weather": [">=", 1]}),
        ));
    config
}

/// A root span alone: a complete trace, as OTLP/JSON.
pub fn one_span_trace(n: u32) -> String {
    format!(
        r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"traceId":"{n:032x}","spanId":"00000000000000{:02x}","name":"agent","startTimeUnixNano":"1","endTimeUnixNano":"2"}}]}}]}}]}}"#,
        n % 251 + 1
    )
}

/// Posts [`one_span_trace`]`(n)` as OTLP/JSON to `otlp` (a receiver's
/// `/v1/traces`).
pub async fn post_one_span_trace(http: &reqwest::Client, otlp: &str, n: u32) -> reqwest::Response {
    http.post(otlp)
        .header("content-type", "application/json")
        .body(one_span_trace(n))
        .send()
        .await
        .unwrap()
}

/// Sends one-span traces (numbered after `accepted`'s) over OTLP/HTTP to
/// `otlp` until one is refused while `/readyz` is not ready, as it is once
/// the database's outage is what fills the queues; each trace acknowledged
/// is added to `accepted`. Checks the refusal's `Retry-After` and that
/// `/readyz` names the results database.
pub async fn send_until_refused(
    http: &reqwest::Client,
    otlp: &str,
    api: SocketAddr,
    accepted: &mut Vec<u32>,
) {
    let deadline = Instant::now() + WAIT;
    loop {
        assert!(
            Instant::now() < deadline,
            "never refused ({} accepted)",
            accepted.len()
        );
        let n = accepted.iter().max().map_or(1, |m| m + 1);
        let r = post_one_span_trace(http, otlp, n).await;
        match r.status().as_u16() {
            200 => accepted.push(n),
            503 => {
                let (status, ready) = body(http, format!("http://{api}/readyz")).await;
                if status == 503 {
                    assert_eq!(r.headers()["retry-after"], "3");
                    assert!(ready.contains("results database"), "{ready}");
                    return;
                }
                // Traces still in their grace period: the buffer, not the
                // database, refused. Try again shortly.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            other => panic!("HTTP {other}: {}", r.text().await.unwrap()),
        }
    }
}

/// Every acknowledged trace has its result (waiting for it), and `/readyz`
/// is ready again.
pub async fn all_evaluated(http: &reqwest::Client, api: SocketAddr, accepted: &[u32]) {
    for n in accepted {
        let id = format!("{n:032x}");
        let (status, scores) = body(
            http,
            format!("http://{api}/traces/{id}/scores?wait_ms=10000"),
        )
        .await;
        assert_eq!(status, 200, "{id}: {scores}");
        assert!(
            scores.contains("\"status\":\"evaluated\""),
            "{id}: {scores}"
        );
    }
    let (status, text) = body(http, format!("http://{api}/readyz")).await;
    assert_eq!(status, 200, "ready again once the database is back: {text}");
}

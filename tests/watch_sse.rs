//! `GET /v1/watch`: results as server-sent events, read by a real HTTP
//! client from the real service fed by the SDK's OTLP exporter.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;
use toolscore::listener::Listener;

use common::service::{self, SpanSpec, export};
use serde_json::{Value as Json, json};
use toolscore::span::TraceId;

/// One event of the stream.
#[derive(Debug, Default)]
struct Event {
    event: String,
    id: String,
    data: String,
}

/// Reads a `text/event-stream` body event by event.
struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    async fn open(url: &str) -> Events {
        let response = common::http().get(url).send().await.unwrap();
        assert_eq!(response.status(), 200, "{url}");
        assert_eq!(
            response.headers()["content-type"],
            "text/event-stream",
            "{url}"
        );
        Events {
            response,
            buffer: String::new(),
        }
    }

    /// The next event (comments skipped); `None` when the stream ends.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut e = Event::default();
                for line in block.lines() {
                    let (field, value) = line.split_once(':').unwrap_or((line, ""));
                    let value = value.strip_prefix(' ').unwrap_or(value);
                    match field {
                        "event" => e.event = value.into(),
                        "id" => e.id = value.into(),
                        "data" => e.data.push_str(value),
                        _ => {}
                    }
                }
                if !e.event.is_empty() {
                    return Some(e);
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(20), self.response.chunk())
                .await
                .expect("an event in time")
                .unwrap()?;
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }
}

fn trace(n: u8, tool: &str) -> Vec<SpanSpec> {
    let now = service::now_ns();
    let root = SpanSpec {
        trace_id: [n; 16],
        span_id: [n, 0, 0, 0, 0, 0, 0, 1],
        parent: None,
        name: "agent".into(),
        start_ns: now,
        end_ns: now + 1_000,
        attributes: vec![],
    };
    let call = SpanSpec {
        trace_id: [n; 16],
        span_id: [n, 0, 0, 0, 0, 0, 0, 2],
        parent: Some(root.span_id),
        name: tool.into(),
        start_ns: now + 10,
        end_ns: now + 20,
        attributes: vec![opentelemetry::KeyValue::new("tool.name", tool.to_owned())],
    };
    vec![root, call]
}

/// A subscriber sees each stored result as an event (the scores body of
/// `GET /traces/{id}/scores`), only those its filters pass; shutdown ends
/// the stream with an `unavailable` error event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_arrive_as_events_filtered() {
    let mut config = service::test_config();
    config.evaluators.inline = vec![service::count_evaluator(json!({"a": ["=", 1]}))];
    let running = service::start(config).await;
    let base = format!("http://{}", running.addr(Listener::ApiHttp).unwrap());
    let mut all = Events::open(&format!("{base}/v1/watch")).await;
    // Only failing ones: a score at or below 0.5.
    let mut failing = Events::open(&format!("{base}/v1/watch?evaluator=count&max_score=0.5")).await;
    let exporter = service::grpc_exporter(&running);
    export(&exporter, &trace(1, "a")).await; // scores 1.0
    export(&exporter, &trace(2, "b")).await; // scores 0.0

    let mut seen = Vec::new();
    while seen.len() < 2 {
        let e = all.next().await.unwrap();
        assert_eq!(e.event, "scores");
        let body: Json = serde_json::from_str(&e.data).unwrap();
        if body["status"] == "pending" {
            continue;
        }
        let id = body["trace_id"].as_str().unwrap().to_owned();
        assert_eq!(e.id, format!("{id}:1"));
        let stored: Json = common::http()
            .get(format!("{base}/traces/{id}/scores"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(body, stored);
        seen.push(id);
    }
    seen.sort();
    assert_eq!(
        seen,
        vec![TraceId([1; 16]).to_hex(), TraceId([2; 16]).to_hex()]
    );

    let e = failing.next().await.unwrap();
    let body: Json = serde_json::from_str(&e.data).unwrap();
    assert_eq!(body["trace_id"], TraceId([2; 16]).to_hex());
    assert_eq!(body["scores"][0]["score"], 0.0);

    running.shutdown.cancel();
    let e = all.next().await.unwrap();
    assert_eq!(e.event, "error");
    let body: Json = serde_json::from_str(&e.data).unwrap();
    assert_eq!(body["error"]["code"], "unavailable");
    assert!(all.next().await.is_none(), "the stream ends");
    running.wait().await.unwrap();
}

/// Bad filters are refused before the stream starts, in the API's error shape.
#[tokio::test]
async fn bad_filters_are_400() {
    let running = service::start(service::test_config()).await;
    let base = format!("http://{}", running.addr(Listener::ApiHttp).unwrap());
    for query in ["status=done", "trace_id=xyz", "max_score=NaN", "colour=red"] {
        let r = common::http()
            .get(format!("{base}/v1/watch?{query}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{query}");
        let body: Json = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], "invalid_argument", "{query}");
    }
    running.stop().await.unwrap();
}

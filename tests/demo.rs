//! `toolscore demo` against the real service on ephemeral ports: the sample
//! agent trace goes in over OTLP/gRPC, its scores come back over the gRPC
//! query API's `WatchScores`, and the embedded default's sample rule scores
//! it 1.0.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;
use std::time::Duration;
use toolscore::listener::Listener;

use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValueKind;
use toolscore::api::grpc::pb;
use toolscore::cli::demo::{self, DemoArgs, DemoError};
use toolscore::config::Config;
use toolscore::span::TraceId;

/// The embedded default (the sample rule) on ephemeral loopback ports.
fn default_config_on_ephemeral_ports() -> Config {
    let mut c = Config::embedded().unwrap();
    let test = common::service::test_config();
    c.receivers.grpc.endpoint = test.receivers.grpc.endpoint;
    c.receivers.http.endpoint = test.receivers.http.endpoint;
    c.api.http.endpoint = test.api.http.endpoint;
    c.api.grpc.endpoint = test.api.grpc.endpoint;
    c.assembler.grace_after_root_ms = 20;
    c.shutdown_timeout_ms = 5_000;
    // The embedded store and write-ahead log, in a directory per test (a
    // log's directory is one process's; a database left by another build
    // is not this test's business).
    let dir = tempfile::tempdir().unwrap().keep();
    c.store.sqlite.path = dir.join("results.db");
    c.wal.dir = dir.join("wal");
    c
}

/// An address nothing listens on: a port the OS just handed out and took back.
fn closed_endpoint() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_trace_scores_one_with_the_embedded_default() {
    let running = common::service::start(default_config_on_ephemeral_ports()).await;
    let args = DemoArgs {
        otlp_endpoint: format!("http://{}", running.addr(Listener::OtlpGrpc).unwrap()),
        api_endpoint: format!("http://{}", running.addr(Listener::ApiGrpc).unwrap()),
        timeout: Duration::from_secs(10),
    };
    let outcome = demo::send_and_watch(&args).await.unwrap();

    let t = &outcome.scores;
    assert_eq!(t.trace_id, outcome.trace_id);
    assert_eq!(t.status(), pb::TraceStatus::Evaluated);
    assert!(t.complete);
    assert_eq!(t.tool_calls, 3);
    assert_eq!(outcome.spans, 6);
    let root = t.root.as_ref().unwrap();
    assert_eq!(root.name, "invoke_agent weather-agent");
    assert_eq!(root.service.as_deref(), Some("demo-agent"));
    assert_eq!(
        t.binding.as_ref().unwrap().rule.as_deref(),
        Some("sample-every-trace")
    );
    assert_eq!(t.scores.len(), 1);
    let score = &t.scores[0];
    assert_eq!(score.evaluator_id, "sample-tool-call-count");
    assert_eq!(score.status(), pb::ScoreStatus::Ok);
    assert_eq!(score.score, Some(1.0));

    // What the demo prints is the HTTP API's scores body for the same record.
    let id = TraceId::parse_hex(&outcome.trace_id).unwrap();
    let record = running.store.get(&id).unwrap();
    let names: Vec<&str> = record
        .calls()
        .unwrap()
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["get_weather", "get_forecast", "get_weather"]);
    let http = toolscore::api::http::scores_json(&record);
    let printed = demo::scores_json(t);
    for key in [
        "trace_id",
        "status",
        "complete",
        "revision",
        "binding",
        "tool_calls",
        "scores",
    ] {
        assert_eq!(printed[key], http[key], "{key}");
    }
    let summary = demo::summary(&outcome);
    assert!(summary.contains("sample-tool-call-count"), "{summary}");
    assert!(summary.contains("1.00"), "{summary}");

    running.stop().await.unwrap();
}

#[tokio::test]
async fn without_a_service_the_demo_says_how_to_start_one() {
    let args = DemoArgs {
        otlp_endpoint: closed_endpoint(),
        api_endpoint: closed_endpoint(),
        timeout: Duration::from_secs(10),
    };
    let err = demo::send_and_watch(&args).await.unwrap_err();
    assert!(matches!(err, DemoError::Unreachable { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("start it with `cargo run --release -- serve`"),
        "{err}"
    );
}

#[test]
fn the_demo_command_exits_1_when_nothing_listens_and_2_for_a_bad_url() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_toolscore"))
            .arg("demo")
            .args(args)
            .output()
            .unwrap()
    };
    let (otlp, api) = (closed_endpoint(), closed_endpoint());
    let out = run(&["--otlp-endpoint", &otlp, "--api-endpoint", &api]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is `toolscore serve` running?"), "{stderr}");
    assert!(out.stdout.is_empty());

    let out = run(&["--api-endpoint", "127.0.0.1:8081"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("http://host:port"));
}

#[test]
fn the_demo_trace_looks_like_an_instrumented_agent() {
    let id = demo::random_trace_id();
    assert_ne!(id, [0; 16]);
    assert_ne!(id, demo::random_trace_id(), "random per run");
    let end = 1_700_000_002_400_000_000;
    let requests = demo::demo_requests(id, end);
    assert_eq!(requests.len(), 2, "the children, then the root");
    let spans = |i: usize| {
        let rs = &requests[i].resource_spans[0];
        let service = rs
            .resource
            .as_ref()
            .unwrap()
            .attributes
            .iter()
            .find(|kv| kv.key == "service.name");
        assert!(matches!(
            service.and_then(|kv| kv.value.as_ref()).and_then(|v| v.value.as_ref()),
            Some(AnyValueKind::StringValue(s)) if s == "demo-agent"
        ));
        rs.scope_spans[0].spans.clone()
    };
    let (children, root) = (spans(0), spans(1));
    assert_eq!(root.len(), 1);
    let root = &root[0];
    assert_eq!(root.name, "invoke_agent weather-agent");
    assert!(root.parent_span_id.is_empty());
    assert_eq!(root.end_time_unix_nano, end);
    let attr = |s: &opentelemetry_proto::tonic::trace::v1::Span, key: &str| {
        s.attributes
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.as_ref())
            .and_then(|v| match &v.value {
                Some(AnyValueKind::StringValue(s)) => Some(s.clone()),
                _ => None,
            })
    };
    let mut tools = Vec::new();
    let mut chats = 0;
    for c in &children {
        assert_eq!(c.trace_id, id);
        assert_eq!(c.parent_span_id, root.span_id);
        assert!(c.start_time_unix_nano >= root.start_time_unix_nano);
        assert!(c.end_time_unix_nano <= root.end_time_unix_nano);
        if let Some(tool) = attr(c, "tool.name") {
            let input: serde_json::Value =
                serde_json::from_str(&attr(c, "input.value").unwrap()).unwrap();
            assert!(input.is_object());
            let output: serde_json::Value =
                serde_json::from_str(&attr(c, "output.value").unwrap()).unwrap();
            assert!(output["content"].is_string());
            tools.push(tool);
        } else {
            assert_eq!(attr(c, "gen_ai.operation.name").as_deref(), Some("chat"));
            assert!(attr(c, "gen_ai.request.model").is_some());
            chats += 1;
        }
    }
    assert_eq!(tools, ["get_weather", "get_forecast", "get_weather"]);
    assert_eq!(chats, 2);
}

/// `toolscore probe`, what the chart's `helm test` pod runs: 0 for /readyz
/// of a running service, 1 for a 404, a closed port, and an https:// URL
/// on a plaintext port; 2 for a URL it cannot use. (Over TLS: tests/tls.rs.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_exits_zero_only_for_a_2xx_answer() {
    let running = common::service::start(default_config_on_ephemeral_ports()).await;
    let api = running.addr(Listener::ApiHttp).unwrap();
    let cases = [
        (format!("http://{api}/readyz"), 0),
        (format!("http://{api}/no-such-page"), 1),
        (format!("{}/readyz", closed_endpoint()), 1),
        (format!("https://{api}/readyz"), 1),
        (format!("ftp://{api}/readyz"), 2),
    ];
    for (url, code) in cases {
        let out = tokio::task::spawn_blocking({
            let url = url.clone();
            move || {
                Command::new(env!("CARGO_BIN_EXE_toolscore"))
                    .args(["probe", &url])
                    .output()
                    .unwrap()
            }
        })
        .await
        .unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "{url}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    running.stop().await.unwrap();
}

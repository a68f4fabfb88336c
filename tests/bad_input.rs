//! Hostile input and faults against the real service (issue 15): slow and
//! stuck clients, oversized declarations, too many connections. Each case
//! asserts the exact answer, and that the service still serves a good
//! request afterwards.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::num::NonZero;
use std::time::Duration;
use toolscore::listener::Listener;

use common::service::{self, test_config};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use toolscore::app::Running;
use toolscore::config::Config;

/// Longer than any deadline a case sets: a case that hangs fails.
const WAIT: Duration = Duration::from_secs(10);

fn short_deadlines() -> Config {
    let mut c = test_config();
    c.receivers.http.read_header_timeout_ms = NonZero::new(300).unwrap();
    c.receivers.http.read_timeout_ms = NonZero::new(300).unwrap();
    c.receivers.grpc.request_timeout_ms = NonZero::new(300).unwrap();
    c.api.read_header_timeout_ms = NonZero::new(300).unwrap();
    c
}

/// Reads until the peer closes or `WAIT` passes; what was read.
async fn read_to_close(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    tokio::time::timeout(WAIT, stream.read_to_end(&mut out))
        .await
        .expect("the service closed the connection")
        .ok();
    String::from_utf8_lossy(&out).into_owned()
}

/// A good OTLP/HTTP request still gets 200.
async fn http_still_serves(addr: SocketAddr) {
    let resp = common::http()
        .post(format!("http://{addr}/v1/traces"))
        .header("content-type", "application/x-protobuf")
        .body(ExportTraceServiceRequest::default().encode_to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}

/// A good OTLP/gRPC export still succeeds.
async fn grpc_still_serves(addr: SocketAddr) {
    let mut c = TraceServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    c.export(ExportTraceServiceRequest::default())
        .await
        .unwrap();
}

/// Opens a raw gRPC call to `path` (HTTP/2, the stream left open), for
/// requests no client library would send.
async fn open_grpc_call(
    addr: SocketAddr,
    path: &str,
) -> (h2::client::ResponseFuture, h2::SendStream<bytes::Bytes>) {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (h2, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    let mut h2 = h2.ready().await.unwrap();
    let request = http::Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap();
    h2.send_request(request, false).unwrap()
}

async fn raw(addr: SocketAddr, bytes: &[u8]) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(bytes).await.unwrap();
    s
}

/// The series `name{label="value"}` on `/metrics` (read strictly).
async fn metric(running: &Running, name: &str, label: (&str, &str)) -> f64 {
    let text = service::metrics_text(running).await;
    common::metrics::parse(&text)
        .unwrap_or_else(|e| panic!("/metrics: {e}"))
        .value(name, &[label])
        .unwrap_or_else(|| panic!("{name}{{{}=\"{}\"}} not in /metrics", label.0, label.1))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_http_body_shorter_than_its_content_length_is_408_not_a_hang() {
    let running = service::start(short_deadlines()).await;
    let addr = running.addr(Listener::OtlpHttp).unwrap();
    let mut s = raw(
        addr,
        b"POST /v1/traces HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n\
          Content-Length: 100\r\n\r\n{\"resourceSpans\"",
    )
    .await;
    let mut head = [0u8; 12];
    tokio::time::timeout(WAIT, s.read_exact(&mut head))
        .await
        .expect("answered")
        .unwrap();
    assert_eq!(&head, b"HTTP/1.1 408");
    assert_eq!(
        metric(
            &running,
            "toolscore_requests_refused_total",
            ("reason", "timeout")
        )
        .await,
        1.0
    );
    http_still_serves(addr).await;
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_that_never_finish_and_idle_connections_are_closed() {
    let running = service::start(short_deadlines()).await;
    for addr in [
        running.addr(Listener::OtlpHttp).unwrap(),
        running.addr(Listener::ApiHttp).unwrap(),
    ] {
        let mut stalled = raw(addr, b"POST /v1/traces HTTP/1.1\r\nHost: t\r\n").await;
        let mut idle = TcpStream::connect(addr).await.unwrap();
        read_to_close(&mut stalled).await;
        read_to_close(&mut idle).await;
    }
    http_still_serves(running.addr(Listener::OtlpHttp).unwrap()).await;
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expect_100_continue_with_an_oversized_length_gets_413_not_100() {
    let running = service::start(test_config()).await;
    let addr = running.addr(Listener::OtlpHttp).unwrap();
    let mut s = raw(
        addr,
        b"POST /v1/traces HTTP/1.1\r\nHost: t\r\nContent-Type: application/x-protobuf\r\n\
          Content-Length: 209715200\r\nExpect: 100-continue\r\n\r\n",
    )
    .await;
    let mut head = [0u8; 12];
    tokio::time::timeout(WAIT, s.read_exact(&mut head))
        .await
        .expect("answered")
        .unwrap();
    assert_eq!(&head, b"HTTP/1.1 413");
    http_still_serves(addr).await;
    running.stop().await.unwrap();
}

/// Past `max_connections` a new connection is closed at once and counted;
/// once one closes, there is room again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_are_closed_and_counted_on_every_listener() {
    let mut config = test_config();
    config.receivers.http.max_connections = NonZero::new(2).unwrap();
    config.receivers.grpc.max_connections = NonZero::new(2).unwrap();
    config.api.max_connections = NonZero::new(2).unwrap();
    let running = service::start(config).await;
    for (listener, addr) in [
        ("otlp_http", running.addr(Listener::OtlpHttp).unwrap()),
        ("otlp_grpc", running.addr(Listener::OtlpGrpc).unwrap()),
        ("api_grpc", running.addr(Listener::ApiGrpc).unwrap()),
    ] {
        let held = [
            TcpStream::connect(addr).await.unwrap(),
            TcpStream::connect(addr).await.unwrap(),
        ];
        let mut third = TcpStream::connect(addr).await.unwrap();
        assert_eq!(read_to_close(&mut third).await, "", "{listener}");
        assert_eq!(
            metric(
                &running,
                "toolscore_connections_refused_total",
                ("listener", listener)
            )
            .await,
            1.0,
            "{listener}"
        );
        drop(held);
    }
    // Room again once the held connections are gone.
    let addr = running.addr(Listener::OtlpHttp).unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let sent = common::http()
            .post(format!("http://{addr}/v1/traces"))
            .header("content-type", "application/x-protobuf")
            .body(Vec::new())
            .send()
            .await;
        if sent.is_ok_and(|r| r.status() == 200) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "no room again");
        tokio::task::yield_now().await;
    }
    grpc_still_serves(running.addr(Listener::OtlpGrpc).unwrap()).await;
    running.stop().await.unwrap();
}

/// A gRPC export whose message never arrives ends at the call timeout
/// instead of holding its stream forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_grpc_export_ends_at_its_timeout() {
    let running = service::start(short_deadlines()).await;
    let addr = running.addr(Listener::OtlpGrpc).unwrap();
    let (response, mut body) = open_grpc_call(
        addr,
        "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
    )
    .await;
    body.send_data(bytes::Bytes::from_static(&[0, 0, 0, 0, 100]), false)
        .unwrap();
    let response = tokio::time::timeout(WAIT, response)
        .await
        .expect("answered")
        .unwrap();
    // Trailers-only: the status is in the headers.
    let status = response
        .headers()
        .get("grpc-status")
        .map(|v| v.to_str().unwrap().to_owned());
    assert_eq!(status.as_deref(), Some("1"), "CANCELLED: {response:?}");
    drop(body);
    grpc_still_serves(addr).await;
    running.stop().await.unwrap();
}

/// `GET`/`POST` on the HTTP API: every refusal, the framework's included,
/// in the documented `{"error": {"code", "message"}}` shape.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_http_api_refusal_has_the_error_shape() {
    let mut config = test_config();
    config.api.max_evaluate_body_bytes = NonZero::new(1000).unwrap();
    let running = service::start(config).await;
    let base = format!("http://{}", running.addr(Listener::ApiHttp).unwrap());
    let id = "ab".repeat(16);
    let http = common::http();
    let cases = [
        (
            format!("{base}/traces/{id}/scores?wait_ms=-1"),
            400,
            "invalid_argument",
            "wait_ms",
        ),
        (
            format!("{base}/traces?limit=abc"),
            400,
            "invalid_argument",
            "limit",
        ),
        (
            format!("{base}/traces?limit=1&limit=2"),
            400,
            "invalid_argument",
            "limit",
        ),
        (
            format!("{base}/traces?max_score=NaN"),
            400,
            "invalid_argument",
            "max_score",
        ),
        (
            format!("{base}/traces?since=1e20"),
            400,
            "invalid_argument",
            "since",
        ),
        (
            format!("{base}/traces/%FF%FE/scores"),
            400,
            "invalid_argument",
            "UTF-8",
        ),
        (
            format!("{base}/traces/xyz/scores"),
            400,
            "invalid_argument",
            "",
        ),
        (format!("{base}/no/such/thing"), 404, "not_found", ""),
    ];
    for (url, status, code, names) in cases {
        let resp = http.get(&url).send().await.unwrap();
        assert_eq!(resp.status(), status, "{url}");
        let body: serde_json::Value = resp.json().await.unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(body["error"]["code"], code, "{url}: {body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(names), "{url}: {body}");
    }
    let resp = http
        .post(format!("{base}/v1/evaluate"))
        .header("content-type", "application/json")
        .body(vec![b' '; 5000])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "payload_too_large", "{body}");
    http_still_serves(running.addr(Listener::OtlpHttp).unwrap()).await;
    running.stop().await.unwrap();
}

/// OTLP/JSON is an object: `[]` is refused (serde would take it as an empty
/// request and answer 200).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_otlp_json_body_that_is_not_an_object_is_400() {
    let running = service::start(test_config()).await;
    let addr = running.addr(Listener::OtlpHttp).unwrap();
    for body in ["[]", " [1]", "null", "1"] {
        let resp = common::http()
            .post(format!("http://{addr}/v1/traces"))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400, "{body}");
        let status: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(status["code"], 3, "{body}: {status}");
    }
    http_still_serves(addr).await;
    running.stop().await.unwrap();
}

/// The gRPC query API answers INVALID_ARGUMENT, not INTERNAL, for a request
/// it cannot decode: a string field that is not UTF-8, or no protobuf at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_grpc_api_requests_are_invalid_argument() {
    let running = service::start(test_config()).await;
    let addr = running.addr(Listener::ApiGrpc).unwrap();
    for message in [&[0x0a, 0x02, 0xff, 0xfe][..], &[0xff, 0xff, 0xff][..]] {
        let (response, mut body) =
            open_grpc_call(addr, "/toolscore.v1.ScoresService/GetScores").await;
        let mut frame = vec![0u8];
        frame.extend_from_slice(&u32::try_from(message.len()).unwrap().to_be_bytes());
        frame.extend_from_slice(message);
        body.send_data(bytes::Bytes::from(frame), true).unwrap();
        let response = tokio::time::timeout(WAIT, response).await.unwrap().unwrap();
        let status = response.headers().get("grpc-status").cloned();
        let status = match status {
            Some(s) => s,
            None => {
                let mut body = response.into_body();
                while body.data().await.is_some() {}
                body.trailers().await.unwrap().unwrap()["grpc-status"].clone()
            }
        };
        assert_eq!(status, "3", "{message:?}: INVALID_ARGUMENT");
    }
    running.stop().await.unwrap();
}

fn validate_config(yaml: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.yaml");
    std::fs::write(&file, yaml).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolscore"))
        .arg("validate-config")
        .arg(&file)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A log filter whose span field value tracing-subscriber's `EnvFilter`
/// compiled as a regular expression for minutes (the `config_yaml` fuzz
/// target's finding): `validate-config` refuses it at once, as the span
/// filter it is, naming the key.
#[test]
fn a_span_filter_in_the_log_level_is_refused_at_once() {
    let yaml = "telemetry:\n  log_level: 'ed n [[[[[[[[[[[Z[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[ nn[ool grpc[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[ nn[ool grpc: rs: grpc: &endpoi { 5  \"f!SalEtuv   500ed -  =       ..................................................................................................      \"!=rV U }'\n";
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(validate_config(yaml));
    });
    let (code, stderr) = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("validate-config answers within a minute");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("telemetry.log_level"), "{stderr}");
}

/// Configuration the service used to take silently, or crash on later.
#[test]
fn configs_that_used_to_pass_are_refused_naming_the_key() {
    let deep = format!(
        "evaluators:\n  inline:\n    - id: x\n      type: uipath-tool-call-count\n      config:\n        a: {}1{}\n",
        "{b: ".repeat(100_000),
        "}".repeat(100_000)
    );
    for (yaml, names) in [
        (
            "assembler:\n  late_span_window_secs: 9223372036854775807\n",
            "late_span_window_secs",
        ),
        (
            "assembler:\n  idle_timeout_secs: 10000000000000000000\n",
            "idle_timeout_secs",
        ),
        ("evaluation:\n  workers: 600\n", "evaluation.workers"),
        // Each reload task overflowed its timer and died at start-up.
        (
            "auth:\n  reload_interval_secs: 18446744073709551615\n",
            "auth.reload_interval_secs",
        ),
        (
            "receivers:\n  grpc:\n    tls: {cert_file: c.pem, key_file: k.pem, reload_interval_secs: 18446744073709551615}\n",
            "receivers.grpc.tls.reload_interval_secs",
        ),
        (
            "api:\n  http:\n    endpoint: 127.0.0.1:8080\n    tls: {cert_file: c.pem, key_file: k.pem, reload_interval_secs: 0}\n",
            "api.http.tls.reload_interval_secs",
        ),
        // Cut clients off mid-handshake.
        (
            "api:\n  http:\n    endpoint: 127.0.0.1:8080\n    tls: {cert_file: c.pem, key_file: k.pem, handshake_timeout_ms: 0}\n",
            "api.http.tls.handshake_timeout_ms",
        ),
        (
            "evaluators:\n  files: [no-such-evaluator.json]\n",
            "no-such-evaluator.json",
        ),
        (
            "eval_sets:\n  files: [no-such-set.json]\n",
            "no-such-set.json",
        ),
        (deep.as_str(), "nested more than 128 deep"),
    ] {
        let (code, stderr) = validate_config(yaml);
        assert_eq!(code, Some(2), "{names}: {stderr}");
        assert!(stderr.contains(names), "{names}: {stderr}");
    }
    // A glob that matches nothing may be meant: a warning, not an error.
    let (code, stderr) = validate_config("evaluators:\n  files: [none-yet/*.json]\n");
    assert_eq!(code, Some(0), "{stderr}");
}

fn otlp_span(trace: u32, span: u8, root: bool) -> opentelemetry_proto::tonic::trace::v1::Span {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut trace_id = vec![7u8; 16];
    trace_id[12..].copy_from_slice(&trace.to_be_bytes());
    opentelemetry_proto::tonic::trace::v1::Span {
        trace_id,
        span_id: vec![span; 8],
        parent_span_id: if root { vec![] } else { vec![1; 8] },
        name: format!("s{span}"),
        start_time_unix_nano: now,
        end_time_unix_nano: now + 1000,
        ..Default::default()
    }
}

fn otlp_request(
    spans: Vec<opentelemetry_proto::tonic::trace::v1::Span>,
) -> ExportTraceServiceRequest {
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans};
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            scope_spans: vec![ScopeSpans {
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

/// Rootless traces (a crashed agent, a hostile client) filling the buffer
/// used to refuse every request, honest ones included, until the idle
/// timeout (300 s). Once idle for the grace period they are evaluated as
/// timed out to make room, counted, and fresh traces are taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buffer_full_of_idle_rootless_traces_makes_room_for_fresh_ones() {
    let mut config = test_config();
    config.assembler.max_traces = NonZero::new(200).unwrap();
    // One shard, so that the 200 traces fill it exactly.
    config.assembler.shards = 1;
    config.assembler.grace_after_root_ms = 200;
    config.rules = vec![];
    let running = service::start(config).await;
    let mut c = TraceServiceClient::connect(format!(
        "http://{}",
        running.addr(Listener::OtlpGrpc).unwrap()
    ))
    .await
    .unwrap();
    let rootless: Vec<_> = (0..200).map(|t| otlp_span(t, 2, false)).collect();
    c.export(otlp_request(rootless)).await.unwrap();
    // Full: a new trace is refused while the rootless ones are fresh...
    let fresh = || otlp_request(vec![otlp_span(1000, 1, true), otlp_span(1000, 2, false)]);
    let refused = c.export(fresh()).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unavailable);
    // ...and taken once they have been idle for the grace period.
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        match c.export(fresh()).await {
            Ok(_) => break,
            Err(e) => assert_eq!(e.code(), tonic::Code::Unavailable),
        }
        assert!(tokio::time::Instant::now() < deadline, "never taken");
        tokio::task::yield_now().await;
    }
    let mut id = [7u8; 16];
    id[12..].copy_from_slice(&1000u32.to_be_bytes());
    let r = service::wait_for(
        &running,
        toolscore::span::TraceId(id),
        WAIT,
        service::evaluated(1),
    )
    .await;
    assert!(r.complete);
    assert!(
        metric(
            &running,
            "toolscore_traces_total",
            ("outcome", "evicted_idle")
        )
        .await
            >= 1.0,
        "counted"
    );
    running.stop().await.unwrap();
}

/// `POST /v1/evaluate` inputs the issue asked to check against the
/// references (SEMANTICS.md §1.2, §1.7): booleans are lax (`"yes"` is true,
/// `"maybe"` refused), an unknown count operator is accepted and fails the
/// score when reached, and criteria for an evaluator the request does not
/// run are ignored, as the UiPath runtime ignores criteria for evaluators
/// an eval set does not reference.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evaluate_inputs_behave_as_the_references_do() {
    let running = service::start(test_config()).await;
    let url = format!(
        "http://{}/v1/evaluate",
        running.addr(Listener::ApiHttp).unwrap()
    );
    let body = |config: serde_json::Value, criteria: serde_json::Value| {
        serde_json::json!({
            "resourceSpans": [{"scopeSpans": [{"spans": [
                {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
                 "name": "agent", "startTimeUnixNano": "1", "endTimeUnixNano": "9"},
                {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203332",
                 "parentSpanId": "b7ad6b7169203331", "name": "tool",
                 "startTimeUnixNano": "2", "endTimeUnixNano": "3",
                 "attributes": [{"key": "tool.name", "value": {"stringValue": "a"}}]}]}]}],
            "evaluators": [{"id": "count", "type": "uipath-tool-call-count", "config": config}],
            "criteria": criteria,
        })
    };
    let http = common::http();
    let post = async |b: serde_json::Value| {
        let r = http.post(&url).json(&b).send().await.unwrap();
        (
            r.status().as_u16(),
            r.json::<serde_json::Value>().await.unwrap(),
        )
    };
    let two = serde_json::json!({"count": {"toolCallsCount": {"b": ["=", 1], "a": ["=", 1]}}});
    let (status, lax) = post(body(serde_json::json!({}), two.clone())).await;
    assert_eq!(status, 200, "{lax}");
    assert_eq!(lax["scores"][0]["score"], 0.5, "{lax}");
    let (status, strict) = post(body(serde_json::json!({"strict": "yes"}), two.clone())).await;
    assert_eq!(status, 200, "{strict}");
    assert_eq!(
        strict["scores"][0]["score"], 0.0,
        "\"yes\" is strict: {strict}"
    );
    let (status, refused) = post(body(serde_json::json!({"strict": "maybe"}), two)).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["code"], "invalid_argument");

    let tilde = serde_json::json!({"count": {"toolCallsCount": {"a": ["~", 1]}}});
    let (status, r) = post(body(serde_json::json!({}), tilde)).await;
    assert_eq!(status, 200, "{r}");
    let score = &r["scores"][0];
    assert_eq!(score["status"], "error", "{r}");
    assert!(
        score
            .to_string()
            .contains("Exception thrown by evaluator: '~'"),
        "{r}"
    );

    let other = serde_json::json!({
        "count": {"toolCallsCount": {"a": ["=", 1]}},
        "not-in-the-request": {"toolCallsCount": {"z": ["=", 9]}},
    });
    let (status, r) = post(body(serde_json::json!({}), other)).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["scores"][0]["score"], 1.0, "{r}");
    assert_eq!(r["scores"].as_array().unwrap().len(), 1);

    // Criteria are read as `json.loads` reads them: an integer past 64 bits
    // stays an int equal to the span's (serde_json made it a float, unequal,
    // and the score 0.0), found by the `py_json_loads` fuzz target.
    let big = "123456789012345678901234567890";
    let raw = format!(
        r#"{{"resourceSpans": [{{"scopeSpans": [{{"spans": [
            {{"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
             "name": "agent", "startTimeUnixNano": "1", "endTimeUnixNano": "9"}},
            {{"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203332",
             "parentSpanId": "b7ad6b7169203331", "name": "tool",
             "startTimeUnixNano": "2", "endTimeUnixNano": "3",
             "attributes": [{{"key": "tool.name", "value": {{"stringValue": "a"}}}},
                            {{"key": "input.value", "value": {{"stringValue": "{{\"n\": {big}, \"z\": 0}}"}}}}]}}]}}]}}],
          "evaluators": [{{"id": "args", "type": "uipath-tool-call-args", "config": {{"strict": -0}}}}],
          "criteria": {{"args": {{"toolCalls": [{{"name": "a", "args": {{"n": {big}, "z": -0}}}}]}}}}}}"#
    );
    let r = http.post(&url).body(raw.clone()).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let r: serde_json::Value = r.json().await.unwrap();
    assert_eq!(r["scores"][0]["score"], 1.0, "{r}");

    // Past a float's range too: 400 digits are an int to `json.loads`
    // (serde_json refused the body, "number out of range").
    let huge = "9".repeat(400);
    let r = http
        .post(&url)
        .body(raw.replace(big, &huge))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let r: serde_json::Value = r.json().await.unwrap();
    assert_eq!(r["scores"][0]["score"], 1.0, "{r}");

    // No span at all: refused, saying how to score an empty list; a root
    // span alone scores it as the references do.
    let empty = serde_json::json!({"resourceSpans": [],
        "evaluators": [{"id": "count", "type": "uipath-tool-call-count", "config": {}}],
        "criteria": {"count": {"toolCallsCount": {}}}});
    let (status, r) = post(empty).await;
    assert_eq!(status, 400, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no spans: send at least one span"),
        "{r}"
    );
    let root_only = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
         "name": "agent", "startTimeUnixNano": "1", "endTimeUnixNano": "9"}]}]}],
        "evaluators": [{"id": "count", "type": "uipath-tool-call-count", "config": {}}],
        "criteria": {"count": {"toolCallsCount": {}}}});
    let (status, r) = post(root_only).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["tool_calls"], 0, "{r}");
    assert_eq!(r["scores"][0]["score"], 1.0, "{r}");

    // Two inline evaluators under one id: refused, as in a config file,
    // instead of two scores under one id.
    let mut twice = body(
        serde_json::json!({}),
        serde_json::json!({"count": {"toolCallsCount": {"a": ["=", 1]}}}),
    );
    let first = twice["evaluators"][0].clone();
    twice["evaluators"].as_array_mut().unwrap().push(first);
    let (status, r) = post(twice).await;
    assert_eq!(status, 400, "{r}");
    assert_eq!(r["error"]["code"], "invalid_argument");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("evaluators[1].id"),
        "{r}"
    );
    running.stop().await.unwrap();
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// A JSON span with these IDs (hex), for the ID cases.
fn json_span(trace_id: &str, span_id: &str) -> String {
    format!(
        r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"traceId":"{trace_id}","spanId":"{span_id}","name":"s","startTimeUnixNano":"1","endTimeUnixNano":"2"}}]}}]}}]}}"#
    )
}

/// (Content-Type, Content-Encoding, a declared Content-Length, body,
/// status, `google.rpc` code, what the message names.)
type HttpCase = (
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
    Vec<u8>,
    u16,
    i64,
    &'static str,
);

/// OTLP/HTTP: each hostile request gets its status, a `google.rpc.Status`
/// code and a message naming the problem; afterwards a good request is
/// taken and a trace sent before is still evaluated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_http_catalogue() {
    let mut config = test_config();
    config.receivers.http.max_request_body_bytes = NonZero::new(4096).unwrap();
    config.receivers.http.max_decompressed_body_bytes = NonZero::new(8192).unwrap();
    config.rules = vec![];
    let running = service::start(config).await;
    let addr = running.addr(Listener::OtlpHttp).unwrap();
    // A trace in flight before the hostile requests: it must not be lost.
    let mut c = TraceServiceClient::connect(format!(
        "http://{}",
        running.addr(Listener::OtlpGrpc).unwrap()
    ))
    .await
    .unwrap();
    c.export(otlp_request(vec![otlp_span(77, 1, true)]))
        .await
        .unwrap();

    let good = "0af7651916cd43dd8448eb211c80319c";
    let big = vec![b'x'; 5000];
    let bomb = gzip(&vec![b' '; 100_000]);
    let cases: Vec<HttpCase> = vec![
        (
            "text/plain",
            None,
            None,
            b"{}".to_vec(),
            415,
            3,
            "Content-Type",
        ),
        ("", None, None, b"{}".to_vec(), 415, 3, "Content-Type"),
        (
            "application/xml",
            None,
            None,
            b"<a/>".to_vec(),
            415,
            3,
            "Content-Type",
        ),
        (
            "application/json",
            Some("br"),
            None,
            b"{}".to_vec(),
            415,
            3,
            "Content-Encoding",
        ),
        (
            "application/json",
            Some("gzip"),
            None,
            b"{not gzip".to_vec(),
            400,
            3,
            "gzip",
        ),
        (
            "application/json",
            None,
            None,
            b"{".to_vec(),
            400,
            3,
            "invalid OTLP JSON",
        ),
        (
            "application/json",
            None,
            None,
            br#"{"resourceSpans": 5}"#.to_vec(),
            400,
            3,
            "resourceSpans",
        ),
        (
            "application/json",
            None,
            None,
            json_span("zz", "b7ad6b7169203331").into_bytes(),
            400,
            3,
            "invalid",
        ),
        (
            "application/json",
            None,
            None,
            json_span(&"0".repeat(32), "b7ad6b7169203331").into_bytes(),
            400,
            3,
            "invalid",
        ),
        (
            "application/json",
            None,
            None,
            json_span(good, "b7ad").into_bytes(),
            400,
            3,
            "invalid",
        ),
        // Hex strings, as the OTLP specification says: no `0x` prefix.
        (
            "application/json",
            None,
            None,
            json_span(&format!("0x{good}"), "b7ad6b7169203331").into_bytes(),
            400,
            3,
            "0x prefix",
        ),
        (
            "application/json",
            None,
            None,
            json_span(good, "0000000000000000").into_bytes(),
            400,
            3,
            "invalid",
        ),
        (
            "application/x-protobuf",
            None,
            None,
            vec![0xff, 0xff, 0xff, 0xff],
            400,
            3,
            "",
        ),
        (
            "application/x-protobuf",
            None,
            None,
            big,
            413,
            8,
            "exceeds 4096",
        ),
        (
            "application/json",
            Some("gzip"),
            None,
            bomb,
            413,
            8,
            "inflated",
        ),
        (
            "application/json",
            None,
            Some("1000000"),
            b"{}".to_vec(),
            413,
            8,
            "exceeds 4096",
        ),
    ];
    let http = common::http();
    for (ct, encoding, length, body, status, code, names) in cases {
        let mut req = http.post(format!("http://{addr}/v1/traces"));
        if !ct.is_empty() {
            req = req.header("content-type", ct);
        }
        if let Some(e) = encoding {
            req = req.header("content-encoding", e);
        }
        let resp = match length {
            // A declared length over the cap: answered before the body.
            Some(n) => {
                let mut s = raw(
                    addr,
                    format!(
                        "POST /v1/traces HTTP/1.1\r\nHost: t\r\nContent-Type: {ct}\r\nContent-Length: {n}\r\n\r\n"
                    )
                    .as_bytes(),
                )
                .await;
                let mut head = [0u8; 12];
                s.read_exact(&mut head).await.unwrap();
                assert_eq!(&head[9..], status.to_string().as_bytes());
                continue;
            }
            None => req.body(body).send().await.unwrap(),
        };
        assert_eq!(resp.status().as_u16(), status, "{ct} {encoding:?} {names}");
        let text = resp.text().await.unwrap();
        if ct == "application/json" || status == 415 {
            let s: serde_json::Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(s["code"], code, "{ct} {names}: {s}");
            assert!(
                s["message"].as_str().unwrap().contains(names),
                "{names}: {s}"
            );
        }
        http_still_serves(addr).await;
    }
    let mut id = [7u8; 16];
    id[12..].copy_from_slice(&77u32.to_be_bytes());
    service::wait_for(
        &running,
        toolscore::span::TraceId(id),
        WAIT,
        service::evaluated(1),
    )
    .await;
    running.stop().await.unwrap();
}

/// The HTTP API: more malformed requests, each in the error shape.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_api_catalogue() {
    let running = service::start(test_config()).await;
    let base = format!("http://{}", running.addr(Listener::ApiHttp).unwrap());
    let http = common::http();
    let id33 = "a".repeat(33);
    let gets = [
        (
            format!("{base}/traces?status=bogus"),
            400,
            "invalid_argument",
            "status",
        ),
        (
            format!("{base}/traces?limit=-1"),
            400,
            "invalid_argument",
            "limit",
        ),
        (
            format!("{base}/traces?since=2026-13-01T00:00:00Z"),
            400,
            "invalid_argument",
            "since",
        ),
        (
            format!("{base}/traces?since=yesterday"),
            400,
            "invalid_argument",
            "since",
        ),
        (
            format!("{base}/traces/{id33}/scores"),
            400,
            "invalid_argument",
            "",
        ),
        (
            format!("{base}/traces/{}", "0".repeat(32)),
            400,
            "invalid_argument",
            "",
        ),
        (
            format!("{base}/traces/{}/scores?wait_ms=abc", "ab".repeat(16)),
            400,
            "invalid_argument",
            "wait_ms",
        ),
    ];
    for (url, status, code, names) in gets {
        let resp = http.get(&url).send().await.unwrap();
        assert_eq!(resp.status(), status, "{url}");
        let body: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["code"], code, "{url}: {body}");
        assert!(
            body["error"]["message"].as_str().unwrap().contains(names),
            "{url}: {body}"
        );
    }
    let resp = http.post(format!("{base}/traces")).send().await.unwrap();
    assert_eq!(resp.status(), 405);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "method_not_allowed", "{body}");
    let spans = r#""resourceSpans": []"#;
    let posts = [
        ("not json".to_owned(), "invalid_argument"),
        (
            format!("{{{spans}, \"evaluators\": 5}}"),
            "invalid_argument",
        ),
        (
            format!("{{{spans}, \"evaluators\": [{{\"id\": \"x\", \"type\": \"nope\"}}]}}"),
            "invalid_argument",
        ),
        (
            format!(
                "{{{spans}, \"evaluators\": [{{\"id\": \"x\", \"type\": \"tool-call-count\"}}], \"criteria\": 1}}"
            ),
            "invalid_argument",
        ),
        (
            format!(
                "{{{spans}, \"evaluators\": [{{\"id\": \"x\", \"type\": \"tool-call-count\"}}]}}"
            ),
            "invalid_argument",
        ),
        (
            format!(
                "{{{spans}, \"evaluators\": [{{\"id\": \"x\", \"type\": \"tool-call-count\"}}], \"criteria\": {{\"x\": {{\"toolCallsCount\": {{\"a\": \"=\"}}}}}}}}"
            ),
            "invalid_argument",
        ),
    ];
    for (body, code) in posts {
        let resp = http
            .post(format!("{base}/v1/evaluate"))
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400, "{body}");
        let r: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(r["error"]["code"], code, "{body}: {r}");
    }
    let resp = http.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    running.stop().await.unwrap();
}

/// Configuration mistakes: `validate-config` exits 2 naming the key.
#[test]
fn config_catalogue() {
    for (yaml, names) in [
        (
            "receivers:\n  grpc: {enabled: false}\n  http: {enabled: false}\n",
            "at least one receiver",
        ),
        (
            "assembler:\n  grace_after_root_ms: 400000\n",
            "assembler.grace_after_root_ms",
        ),
        (
            "assembler:\n  idle_timeout_secs: 7200\n",
            "assembler.idle_timeout_secs",
        ),
        ("assembler:\n  max_tracez: 5\n", "assembler.max_tracez"),
        (
            "receivers:\n  grpc:\n    endpoint: localhost:4317\n",
            "receivers.grpc.endpoint",
        ),
        ("api:\n  max_wait_ms: 40000\n", "api.max_wait_ms"),
        (
            "telemetry:\n  log_level: 'info,,=['\n",
            "telemetry.log_level",
        ),
        // tracing-subscriber's parser panicked on this (the config_yaml
        // fuzz target's finding): a message, not a crash.
        (
            "telemetry:\n  log_level: ' \u{684}[d: a, type: tl-cal[,=,ofGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGG'\n",
            "telemetry.log_level",
        ),
        ("rules:\n  - name: r\n    evaluators: []\n", "rules[0]"),
        (
            "exporter:\n  enabled: true\n  endpoint: 'not a url'\n",
            "exporter.endpoint",
        ),
        ("store:\n  max_traces: 0\n", "store.max_traces"),
        (
            "receivers:\n  http:\n    max_connections: 0\n",
            "receivers.http.max_connections",
        ),
        (
            "receivers:\n  http:\n    read_timeout_ms: 0\n",
            "receivers.http.read_timeout_ms",
        ),
        (
            "receivers:\n  grpc:\n    endpoint: 127.0.0.1:9999\n  http:\n    endpoint: 127.0.0.1:9999\n",
            "same address",
        ),
        (
            "evaluators:\n  inline:\n    - {id: a, type: tool-call-count}\n    - {id: a, type: tool-call-count}\n",
            "a",
        ),
        (
            "evaluators:\n  inline:\n    - {id: a, type: no-such-type}\n",
            "no-such-type",
        ),
        ("assembler: [1, 2]\n", "assembler"),
        ("shutdown_timeout_ms: -1\n", "shutdown_timeout_ms"),
    ] {
        let (code, stderr) = validate_config(yaml);
        assert_eq!(code, Some(2), "{yaml}: {stderr}");
        assert!(
            stderr.contains(names),
            "{yaml} should name {names}: {stderr}"
        );
    }
}

/// `assembler.max_traces_per_service`: one sender cannot take the whole
/// buffer. The noisy service's new traces are refused (retryable) at its
/// quota; another service's are taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_service_at_its_quota_cannot_take_the_buffer() {
    use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
    use opentelemetry_proto::tonic::resource::v1::Resource;
    let mut config = test_config();
    config.assembler.shards = 1;
    config.assembler.max_traces = NonZero::new(100).unwrap();
    config.assembler.max_traces_per_service = 10;
    config.assembler.grace_after_root_ms = 60_000;
    let running = service::start(config).await;
    let mut c = TraceServiceClient::connect(format!(
        "http://{}",
        running.addr(Listener::OtlpGrpc).unwrap()
    ))
    .await
    .unwrap();
    let from = |service: &str, traces: std::ops::Range<u32>| {
        let mut req = otlp_request(traces.map(|t| otlp_span(t, 2, false)).collect());
        req.resource_spans[0].resource = Some(Resource {
            attributes: vec![KeyValue {
                key: "service.name".into(),
                value: Some(AnyValue {
                    value: Some(any_value::Value::StringValue(service.into())),
                }),
                ..Default::default()
            }],
            ..Default::default()
        });
        req
    };
    c.export(from("noisy", 0..10)).await.unwrap();
    let refused = c.export(from("noisy", 10..11)).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unavailable);
    c.export(from("honest", 20..30)).await.unwrap();
    assert_eq!(
        metric(
            &running,
            "toolscore_requests_refused_total",
            ("reason", "service_quota")
        )
        .await,
        1.0
    );
    running.stop().await.unwrap();
}

//! OTLP receiver behaviour at the edges: compression, invalid spans, size
//! caps, content types, backpressure that reaches the client, and the drain.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::io::Write;
use std::num::NonZero;
use std::time::Duration;
use toolscore::listener::Listener;

use common::service::{self, SpanSpec, evaluated, test_config, wait_for};
use opentelemetry::KeyValue;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue as PKeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;
use tonic::Code;
use tonic::codec::CompressionEncoding;
use tonic_types::StatusExt;
use toolscore::config::Config;
use toolscore::span::TraceId;
use toolscore::store::TraceStatus;

const WAIT: Duration = Duration::from_secs(10);

fn pspan(trace: u8, id: u8, parent: Option<u8>, attrs: &[(&str, &str)]) -> Span {
    Span {
        trace_id: vec![trace; 16],
        span_id: vec![0, 0, 0, 0, 0, 0, trace, id],
        parent_span_id: parent
            .map(|p| vec![0, 0, 0, 0, 0, 0, trace, p])
            .unwrap_or_default(),
        name: format!("span-{id}"),
        start_time_unix_nano: service::now_ns() + u64::from(id),
        end_time_unix_nano: service::now_ns() + 1000,
        attributes: attrs
            .iter()
            .map(|(k, v)| PKeyValue {
                key: (*k).into(),
                value: Some(AnyValue {
                    value: Some(any_value::Value::StringValue((*v).into())),
                }),
                ..PKeyValue::default()
            })
            .collect(),
        ..Span::default()
    }
}

fn request(spans: Vec<Span>) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            scope_spans: vec![ScopeSpans {
                spans,
                ..ScopeSpans::default()
            }],
            ..ResourceSpans::default()
        }],
    }
}

async fn client(
    running: &toolscore::app::Running,
) -> TraceServiceClient<tonic::transport::Channel> {
    TraceServiceClient::connect(format!(
        "http://{}",
        running.addr(Listener::OtlpGrpc).unwrap()
    ))
    .await
    .unwrap()
}

async fn grpc_channel(running: &toolscore::app::Running) -> tonic::transport::Channel {
    tonic::transport::Endpoint::from_shared(format!(
        "http://{}",
        running.addr(Listener::OtlpGrpc).unwrap()
    ))
    .unwrap()
    .connect()
    .await
    .unwrap()
}

fn counting_config() -> Config {
    let mut config = test_config();
    config.evaluators.inline.push(service::count_evaluator(
        serde_json::json!({"a": [">=", 1]}),
    ));
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_gzip_and_invalid_ids_reported_in_partial_success() {
    let running = service::start(counting_config()).await;
    let mut c = client(&running)
        .await
        .send_compressed(CompressionEncoding::Gzip)
        .accept_compressed(CompressionEncoding::Gzip);
    let mut bad_trace = pspan(1, 3, Some(1), &[]);
    bad_trace.trace_id = vec![1; 15];
    let mut zero_span = pspan(1, 4, Some(1), &[]);
    zero_span.span_id = vec![0; 8];
    let good = vec![
        pspan(1, 1, None, &[]),
        pspan(1, 2, Some(1), &[("tool.name", "a")]),
    ];
    let mut spans = good.clone();
    spans.push(bad_trace.clone());
    spans.push(zero_span.clone());
    let resp = c.export(request(spans)).await.unwrap().into_inner();
    let ps = resp.partial_success.unwrap();
    assert_eq!(ps.rejected_spans, 2);
    assert!(
        ps.error_message
            .contains("trace ID must be 16 bytes, got 15"),
        "{}",
        ps.error_message
    );
    assert!(
        ps.error_message.contains("span ID must not be all zeros"),
        "{}",
        ps.error_message
    );
    let r = wait_for(&running, TraceId([1; 16]), WAIT, evaluated(1)).await;
    assert_eq!(r.span_count, 2, "the good spans of the request were kept");
    assert_eq!(r.scores[0].outcome.score, Some(1.0));

    // Only invalid spans: the whole request is INVALID_ARGUMENT.
    let err = c
        .export(request(vec![bad_trace, zero_span]))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    running.stop().await.unwrap();
}

/// A model span's own events carrying its messages (Azure AI Inference's
/// `gen_ai.choice` with `gen_ai.event.content`) are taken with it: the
/// client is told of spans only (two received, none refused), and the
/// trace's calls are read from the events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_span_s_message_events_are_taken_with_it_and_counted_as_its() {
    use opentelemetry_proto::tonic::trace::v1::span::Event;
    let running = service::start(counting_config()).await;
    let mut c = client(&running).await;
    let mut model = pspan(1, 2, Some(1), &[]);
    let at = model.end_time_unix_nano;
    let choice = r#"{"finish_reason":"tool_calls","index":0,"message":{"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}}"#;
    model.events = vec![
        Event {
            time_unix_nano: at,
            name: "exception".into(),
            ..Event::default()
        },
        Event {
            time_unix_nano: at,
            name: "gen_ai.choice".into(),
            attributes: pspan(1, 2, None, &[("gen_ai.event.content", choice)]).attributes,
            dropped_attributes_count: 0,
        },
    ];
    let resp = c
        .export(request(vec![pspan(1, 1, None, &[]), model]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(resp.partial_success, None);
    let r = wait_for(&running, TraceId([1; 16]), WAIT, evaluated(1)).await;
    // The two spans and the event kept with them.
    assert_eq!(r.span_count, 3);
    let calls: Vec<(&str, String)> = r
        .calls()
        .unwrap()
        .iter()
        .map(|c| (c.name.as_str(), c.output().into_owned()))
        .collect();
    assert_eq!(calls, [("get_weather", String::new())]);
    let metrics = service::metrics_text(&running).await;
    assert!(
        metrics.contains("toolscore_spans_received_total{receiver=\"grpc\"} 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains("toolscore_spans_accepted_total 2"),
        "{metrics}"
    );
    running.stop().await.unwrap();
}

/// The gRPC protocol: a request on a gRPC port whose `content-type` is not
/// gRPC's (an OTLP/JSON body sent over HTTP/2 to 4317) is answered 415,
/// on both gRPC listeners, and nothing of it is taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_port_answers_415_to_a_request_that_is_not_grpc() {
    use tower::ServiceExt as _;
    let running = service::start(counting_config()).await;
    for addr in [
        running.addr(Listener::OtlpGrpc).unwrap(),
        running.addr(Listener::ApiGrpc).unwrap(),
    ] {
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        let body = serde_json::to_vec(&serde_json::json!({"resourceSpans": []})).unwrap();
        let req = http::Request::builder()
            .method("POST")
            .uri(format!(
                "http://{addr}/opentelemetry.proto.collector.trace.v1.TraceService/Export"
            ))
            .header("content-type", "application/json")
            .body(tonic::body::Body::new(http_body_util::Full::new(
                bytes::Bytes::from(body),
            )))
            .unwrap();
        let res = channel.oneshot(req).await.unwrap();
        assert_eq!(res.status(), 415, "{addr}");
    }
    let received = service::metrics_text(&running).await;
    assert!(
        !received.contains("toolscore_spans_received_total{receiver=\"grpc\"} 1"),
        "{received}"
    );
    running.stop().await.unwrap();
}

/// A root whose parent span ID is all zeros (as some exporters and
/// converters send it) is a root, as the Collector reads it: over gRPC and
/// OTLP/JSON the trace completes at its root + grace, not at its timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_all_zero_parent_span_id_is_a_root() {
    let running = service::start(counting_config()).await;
    let mut root = pspan(1, 1, None, &[]);
    root.parent_span_id = vec![0; 8];
    let resp = client(&running)
        .await
        .export(request(vec![
            root,
            pspan(1, 2, Some(1), &[("tool.name", "a")]),
        ]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(resp.partial_success, None);
    let r = wait_for(&running, TraceId([1; 16]), WAIT, evaluated(1)).await;
    assert!(r.complete, "the root was seen");
    assert_eq!(r.span_count, 2);

    let now = service::now_ns();
    let json = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "02020202020202020202020202020202", "spanId": "0000000000000201",
         "parentSpanId": "0000000000000000", "name": "root", "kind": 1,
         "startTimeUnixNano": now.to_string(), "endTimeUnixNano": (now + 1000).to_string()}
    ]}]}]});
    let resp = common::http()
        .post(format!(
            "http://{}/v1/traces",
            running.addr(Listener::OtlpHttp).unwrap()
        ))
        .json(&json)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), "{}");
    let r = wait_for(&running, TraceId([2; 16]), WAIT, evaluated(1)).await;
    assert!(r.complete);
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_grpc_messages_get_resource_exhausted() {
    let mut config = counting_config();
    config.receivers.grpc.max_recv_msg_size_bytes = NonZero::new(2048).unwrap();
    let running = service::start(config).await;
    let big = "x".repeat(4096);
    let err = client(&running)
        .await
        .export(request(vec![pspan(2, 1, None, &[("input.value", &big)])]))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted, "{err:?}");
    // A compressed message is limited by its decoded size.
    let err = client(&running)
        .await
        .send_compressed(CompressionEncoding::Gzip)
        .export(request(vec![pspan(2, 1, None, &[("input.value", &big)])]))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted, "{err:?}");
    // Counted as OTLP/HTTP counts its own.
    let text = service::metrics_text(&running).await;
    assert!(
        text.contains(r#"toolscore_requests_refused_total{reason="too_large"} 2"#),
        "{text}"
    );
    running.stop().await.unwrap();
}

/// The gRPC receiver advertises `receivers.grpc.max_concurrent_streams` in
/// its HTTP/2 SETTINGS, so clients queue calls beyond it on their side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_receiver_advertises_its_stream_limit() {
    let mut config = counting_config();
    config.receivers.grpc.max_concurrent_streams = NonZero::new(7).unwrap();
    let running = service::start(config).await;
    let tcp = tokio::net::TcpStream::connect(running.addr(Listener::OtlpGrpc).unwrap())
        .await
        .unwrap();
    let (send, mut connection) = h2::client::handshake(tcp).await.unwrap();
    // Until the server's SETTINGS arrive, h2 assumes 100 (its default).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while connection.max_concurrent_send_streams() != 7 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server's SETTINGS never said 7 streams (now {})",
            connection.max_concurrent_send_streams()
        );
        // Drives the connection (reads the SETTINGS frame) for a moment.
        let _ = tokio::time::timeout(Duration::from_millis(20), &mut connection).await;
    }
    // Closed first: a graceful stop waits for open connections.
    drop((send, connection));
    running.stop().await.unwrap();
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_json_protobuf_gzip_content_types_and_size_caps() {
    let mut config = counting_config();
    config.receivers.http.max_request_body_bytes = NonZero::new(16 * 1024).unwrap();
    config.receivers.http.max_decompressed_body_bytes = NonZero::new(64 * 1024).unwrap();
    let running = service::start(config).await;
    let url = format!(
        "http://{}/v1/traces",
        running.addr(Listener::OtlpHttp).unwrap()
    );
    let http = common::http();
    let post = |body: Vec<u8>, ct: &'static str, enc: Option<&'static str>| {
        let mut r = http.post(&url).header("content-type", ct).body(body);
        if let Some(e) = enc {
            r = r.header("content-encoding", e);
        }
        r.send()
    };
    // OTLP JSON (hex IDs, int64 as strings and numbers), gzip-compressed.
    let json = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "03030303030303030303030303030303", "spanId": "0000000000000301", "name": "root",
         "startTimeUnixNano": "1000", "endTimeUnixNano": 2000},
        {"traceId": "03030303030303030303030303030303", "spanId": "0000000000000302",
         "parentSpanId": "0000000000000301", "name": "t", "startTimeUnixNano": 1100, "endTimeUnixNano": "1200",
         "attributes": [{"key": "tool.name", "value": {"stringValue": "a"}}, {"key": "n", "value": {"intValue": "5"}}]}
    ]}]}]});
    let resp = post(
        gzip(json.to_string().as_bytes()),
        "application/json",
        Some("gzip"),
    )
    .await
    .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let r = wait_for(&running, TraceId([3; 16]), WAIT, evaluated(1)).await;
    assert_eq!(r.calls().unwrap().len(), 1);

    // Protobuf, with one invalid span reported in partial_success.
    let mut bad = pspan(4, 2, Some(1), &[]);
    bad.span_id = vec![1, 2];
    let body = request(vec![pspan(4, 1, None, &[]), bad]).encode_to_vec();
    let resp = post(body, "application/x-protobuf", None).await.unwrap();
    assert_eq!(resp.status(), 200);
    let decoded =
        opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse::decode(
            resp.bytes().await.unwrap(),
        )
        .unwrap();
    assert_eq!(decoded.partial_success.unwrap().rejected_spans, 1);

    // Other content types and encodings: 415. Malformed bodies: 400 naming the JSON path.
    assert_eq!(
        post(b"x".to_vec(), "text/plain", None)
            .await
            .unwrap()
            .status(),
        415
    );
    assert_eq!(
        post(b"{}".to_vec(), "application/json", Some("br"))
            .await
            .unwrap()
            .status(),
        415
    );
    let resp = post(
        br#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 5}]}]}]}"#.to_vec(),
        "application/json",
        None,
    )
    .await
    .unwrap();
    assert_eq!(resp.status(), 400);
    assert!(
        resp.text()
            .await
            .unwrap()
            .contains("resourceSpans[0].scopeSpans[0].spans[0].traceId")
    );
    assert_eq!(
        post(b"\x0a\xff".to_vec(), "application/x-protobuf", None)
            .await
            .unwrap()
            .status(),
        400
    );
    assert_eq!(
        post(b"not gzip".to_vec(), "application/json", Some("gzip"))
            .await
            .unwrap()
            .status(),
        400
    );

    // Size caps: as sent, and after inflation (a small gzip body that inflates past the cap).
    assert_eq!(
        post(vec![b' '; 20 * 1024], "application/json", None)
            .await
            .unwrap()
            .status(),
        413
    );
    let bomb = gzip(&vec![b' '; 1024 * 1024]);
    assert!(bomb.len() < 16 * 1024);
    assert_eq!(
        post(bomb, "application/json", Some("gzip"))
            .await
            .unwrap()
            .status(),
        413
    );
    running.stop().await.unwrap();
}

fn tool(trace: u8, id: u8) -> SpanSpec {
    SpanSpec {
        trace_id: [trace; 16],
        span_id: [0, 0, 0, 0, 0, 0, trace, id],
        parent: Some([0, 0, 0, 0, 0, 0, trace, 1]),
        name: "a".into(),
        start_ns: service::now_ns(),
        end_ns: service::now_ns() + 10,
        attributes: vec![KeyValue::new("tool.name", "a")],
    }
}

fn root(trace: u8) -> SpanSpec {
    SpanSpec {
        trace_id: [trace; 16],
        span_id: [0, 0, 0, 0, 0, 0, trace, 1],
        parent: None,
        name: "invoke_agent".into(),
        start_ns: service::now_ns() - 1000,
        end_ns: service::now_ns() + 1000,
        attributes: vec![],
    }
}

/// With the assembler full, the next export is refused with a retryable
/// status carrying RetryInfo (HTTP: 503 + Retry-After); once capacity
/// returns, the SDK exporter's own retry lands every span exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backpressure_reaches_the_client_and_retries_land_everything() {
    let mut config = counting_config();
    config.assembler.shards = 1;
    config.assembler.max_traces = NonZero::new(2).unwrap();
    // Rootless traces idle for the grace period make room (tests/bad_input.rs);
    // a long grace keeps these two in use while the refusals are checked.
    config.assembler.grace_after_root_ms = 3_000;
    let running = service::start(config).await;
    let exporter = service::grpc_exporter(&running);
    // Two open (rootless) traces fill the assembler.
    service::export(&exporter, &[tool(10, 2), tool(10, 3)]).await;
    service::export(&exporter, &[tool(11, 2)]).await;

    let err = client(&running)
        .await
        .export(request(vec![pspan(12, 2, Some(1), &[("tool.name", "a")])]))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable);
    assert_eq!(
        err.get_details_retry_info().and_then(|r| r.retry_delay),
        Some(Duration::from_secs(1))
    );
    let resp = common::http()
        .post(format!(
            "http://{}/v1/traces",
            running.addr(Listener::OtlpHttp).unwrap()
        ))
        .header("content-type", "application/x-protobuf")
        .body(request(vec![pspan(12, 2, Some(1), &[("tool.name", "a")])]).encode_to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.headers()["retry-after"], "1");
    assert!(
        running
            .metrics
            .encode()
            .contains("toolscore_requests_refused_total{reason=\"full\"} 2")
    );

    // The SDK exporter is refused too, and retries after the RetryInfo delay.
    let exporter12 = service::grpc_exporter(&running);
    let pending = tokio::spawn(async move {
        service::export(&exporter12, &[root(12), tool(12, 2), tool(12, 3)]).await;
    });
    // Wait (polling with a deadline) until the exporter has been refused once.
    let refused = "toolscore_requests_refused_total{reason=\"full\"} 3";
    let deadline = tokio::time::Instant::now() + WAIT;
    while !running.metrics.encode().contains(refused) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the SDK export was never refused"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Capacity returns: traces 10 and 11 get their roots and are evaluated,
    // after which they are only kept for late spans and make room.
    service::export(&exporter, &[root(10), root(11)]).await;
    tokio::time::timeout(WAIT, pending).await.unwrap().unwrap();
    let r12 = wait_for(&running, TraceId([12; 16]), WAIT, evaluated(1)).await;
    assert_eq!(r12.span_count, 3, "every span of the retried export, once");
    let r10 = wait_for(&running, TraceId([10; 16]), WAIT, evaluated(1)).await;
    assert_eq!(r10.span_count, 3);
    let r11 = wait_for(&running, TraceId([11; 16]), WAIT, evaluated(1)).await;
    assert_eq!(r11.span_count, 2);
    running.stop().await.unwrap();
}

/// The value of one series of the service's metrics, read strictly.
fn metric(running: &toolscore::app::Running, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    common::metrics::parse(&running.metrics.encode())
        .unwrap()
        .value(name, labels)
}

/// Waits (with a deadline) until the gauge `name` reads `value`.
async fn wait_metric(running: &toolscore::app::Running, name: &str, value: f64) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while metric(running, name, &[]) != Some(value) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name} never read {value}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A complete trace: its root and `tools` tool calls.
fn rooted(trace: u8, tools: u8) -> ExportTraceServiceRequest {
    let calls = (2..2 + tools).map(|id| pspan(trace, id, Some(1), &[("tool.name", "a")]));
    request(
        std::iter::once(pspan(trace, 1, None, &[]))
            .chain(calls)
            .collect(),
    )
}

const BACKLOG_REFUSALS: (&str, &[(&str, &str)]) = (
    "toolscore_requests_refused_total",
    &[("reason", "evaluation_backlog")],
);

/// With the evaluation backlog at its limit (evaluation not draining it), a
/// request waits `max_wait_ms` and is then refused with a retry delay
/// (gRPC: UNAVAILABLE + RetryInfo; HTTP: 503 + Retry-After), counted by
/// reason, nothing of it taken; once evaluation drains the backlog, the
/// retry is taken at once, and every acknowledged trace is evaluated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_evaluation_backlog_refuses_within_the_bound_then_takes_the_retry() {
    let mut config = counting_config();
    config.receivers.admission.min_backlog_spans = NonZero::new(3).unwrap();
    config.receivers.admission.max_wait_ms = 150;
    // Trace 20 stays due-soon (in the backlog, undrained) for two seconds.
    config.assembler.grace_after_root_ms = 2_000;
    let running = service::start(config).await;
    let mut c = client(&running).await;
    c.export(rooted(20, 2)).await.unwrap();
    let trace21 = || rooted(21, 1);

    let started = tokio::time::Instant::now();
    let err = c.export(trace21()).await.unwrap_err();
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(150), "{waited:?}");
    assert_eq!(err.code(), Code::Unavailable);
    assert_eq!(
        err.get_details_retry_info().and_then(|r| r.retry_delay),
        Some(Duration::from_secs(1)),
        "nothing evaluated yet: the delay for an unknown rate"
    );
    let resp = common::http()
        .post(format!(
            "http://{}/v1/traces",
            running.addr(Listener::OtlpHttp).unwrap()
        ))
        .header("content-type", "application/x-protobuf")
        .body(trace21().encode_to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.headers()["retry-after"], "1");
    let (refusals, labels) = BACKLOG_REFUSALS;
    assert_eq!(metric(&running, refusals, labels), Some(2.0));
    assert_eq!(
        metric(&running, "toolscore_admission_wait_seconds_count", &[]),
        Some(3.0)
    );
    // Refused whole: trace 21 was never taken.
    assert!(running.store.get(&TraceId([21; 16])).is_none());
    wait_metric(&running, "toolscore_evaluation_backlog_spans", 3.0).await;

    // Evaluation drains trace 20; the retry is then taken without waiting
    // out the bound, and both acknowledged traces are evaluated whole.
    let r20 = wait_for(&running, TraceId([20; 16]), WAIT, evaluated(1)).await;
    assert_eq!(r20.span_count, 3);
    c.export(trace21()).await.unwrap();
    let r21 = wait_for(&running, TraceId([21; 16]), WAIT, evaluated(1)).await;
    assert_eq!(r21.span_count, 2);
    assert_eq!(metric(&running, refusals, labels), Some(2.0));
    running.stop().await.unwrap();
}

/// A request held by the backlog is taken as soon as evaluation drains it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_request_is_taken_once_evaluation_drains_the_backlog() {
    let mut config = counting_config();
    config.receivers.admission.min_backlog_spans = NonZero::new(3).unwrap();
    config.receivers.admission.max_wait_ms = 10_000;
    config.assembler.grace_after_root_ms = 300;
    let running = service::start(config).await;
    let mut c = client(&running).await;
    c.export(rooted(22, 2)).await.unwrap();
    let started = tokio::time::Instant::now();
    c.export(rooted(23, 1)).await.unwrap();
    // Trace 22 is due 300 ms after it was taken; nothing drains it sooner.
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "{:?}",
        started.elapsed()
    );
    wait_for(&running, TraceId([22; 16]), WAIT, evaluated(1)).await;
    let r23 = wait_for(&running, TraceId([23; 16]), WAIT, evaluated(1)).await;
    assert_eq!(r23.span_count, 2);
    let (refusals, labels) = BACKLOG_REFUSALS;
    assert_eq!(
        metric(&running, refusals, labels),
        Some(0.0),
        "nothing refused"
    );
    running.stop().await.unwrap();
}

/// Cancelling (what SIGTERM does) with traces in flight evaluates every
/// complete trace before exit, evaluates the rootless one as incomplete,
/// and stops within the deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_evaluates_buffered_traces_before_exit() {
    let mut config = counting_config();
    // Long enough that nothing completes on its own during the test.
    config.assembler.grace_after_root_ms = 60_000;
    let running = service::start(config).await;
    let exporter = service::grpc_exporter(&running);
    for t in 20..23 {
        service::export(&exporter, &[root(t), tool(t, 2)]).await;
    }
    service::export(&exporter, &[tool(23, 2)]).await;
    let store = running.store.clone();
    for t in 20..24 {
        assert_eq!(
            store.get(&TraceId([t; 16])).unwrap().status,
            TraceStatus::Pending
        );
    }
    let started = std::time::Instant::now();
    tokio::time::timeout(Duration::from_secs(5), running.stop())
        .await
        .expect("drained within the deadline")
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    for t in 20..23 {
        let r = store.get(&TraceId([t; 16])).unwrap();
        assert_eq!(r.status, TraceStatus::Evaluated, "trace {t}");
        assert!(r.complete);
        assert_eq!(r.scores[0].outcome.score, Some(1.0));
    }
    let r = store.get(&TraceId([23; 16])).unwrap();
    assert_eq!(r.status, TraceStatus::TimedOut);
    assert!(!r.complete);
}

/// The drain deadline runs from the signal: a service up for longer than
/// `shutdown_timeout_ms` still drains what it holds.
#[tokio::test]
async fn the_drain_deadline_starts_at_the_signal_not_at_start_up() {
    let mut config = counting_config();
    config.assembler.grace_after_root_ms = 60_000;
    config.shutdown_timeout_ms = 300;
    let running = service::start(config).await;
    let exporter = service::grpc_exporter(&running);
    service::export(&exporter, &[root(30), tool(30, 2)]).await;
    // The condition under test is the service's age itself: it outlives the
    // shutdown timeout on the runtime's clock (advanced, not slept), which
    // runs in real time again for the drain.
    tokio::time::pause();
    tokio::time::advance(Duration::from_millis(400)).await;
    tokio::time::resume();
    let store = running.store.clone();
    running.stop().await.unwrap();
    let r = store.get(&TraceId([30; 16])).unwrap();
    assert_eq!(r.status, TraceStatus::Evaluated, "buffered trace drained");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_health_reports_serving() {
    let running = service::start(counting_config()).await;
    let channel = grpc_channel(&running).await;
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
    let resp = health
        .check(tonic_health::pb::HealthCheckRequest {
            service: "opentelemetry.proto.collector.trace.v1.TraceService".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        resp.status,
        tonic_health::pb::health_check_response::ServingStatus::Serving as i32
    );
    running.stop().await.unwrap();
}

/// Sends bytes as they are: a malformed `ExportTraceServiceRequest`.
#[derive(Debug, Clone, Copy, Default)]
struct RawCodec;

impl tonic::codec::Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
    type Encoder = RawCodec;
    type Decoder = tonic_prost::ProstDecoder<Self::Decode>;
    fn encoder(&mut self) -> RawCodec {
        RawCodec
    }
    fn decoder(&mut self) -> Self::Decoder {
        tonic_prost::ProstDecoder::new(tonic::codec::BufferSettings::default())
    }
}

impl tonic::codec::Encoder for RawCodec {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn encode(
        &mut self,
        item: Vec<u8>,
        dst: &mut tonic::codec::EncodeBuf<'_>,
    ) -> Result<(), tonic::Status> {
        bytes::BufMut::put_slice(dst, &item);
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_grpc_protobuf_is_invalid_argument_and_counted() {
    let running = service::start(counting_config()).await;
    let channel = grpc_channel(&running).await;
    let mut grpc = tonic::client::Grpc::new(channel);
    let path = http::uri::PathAndQuery::from_static(
        "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
    );
    // resource_spans claims 5 bytes and has 1.
    grpc.ready().await.unwrap();
    let err = grpc
        .unary(
            tonic::Request::new(vec![0x0a, 0x05, 0x01]),
            path.clone(),
            RawCodec,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(
        err.message()
            .contains("invalid protobuf: length past the end of the message at byte 1"),
        "{}",
        err.message()
    );
    let metrics = running.metrics.encode();
    assert!(
        metrics.contains("toolscore_requests_refused_total{reason=\"malformed\"} 1"),
        "{metrics}"
    );
    // The connection and the service go on: a good request is taken.
    grpc.ready().await.unwrap();
    let good = request(vec![
        pspan(6, 1, None, &[]),
        pspan(6, 2, Some(1), &[("tool.name", "a")]),
    ]);
    grpc.unary(tonic::Request::new(good.encode_to_vec()), path, RawCodec)
        .await
        .unwrap();
    let r = wait_for(&running, TraceId([6; 16]), WAIT, evaluated(1)).await;
    assert_eq!(r.scores[0].outcome.score, Some(1.0));
    running.stop().await.unwrap();
}

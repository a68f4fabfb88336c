//! OTLP logs into the running service: instrumentations that write the
//! model's messages only to log records (the GenAI events) have their tool
//! calls read from them, whichever transport the records come by, before
//! or after their spans, and across a `kill -9` through the write-ahead log.
//! Recordings from tests/recordings/fixtures; what they must give is what
//! the extraction gives offline, which tests/recordings.rs holds to the
//! ground truth.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::process::{body, ready, serve};
use common::service::test_config;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::logs::v1::logs_service_client::LogsServiceClient;
use opentelemetry_proto::tonic::logs::v1::LogsData;
use prost::Message;
use serde_json::{Value as Json, json};
use toolscore::config::{Config, StoreBackend};

const WAIT: Duration = Duration::from_secs(30);

fn fixture(name: &str) -> (String, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/recordings/fixtures");
    let read = |suffix: &str| {
        let p: PathBuf = root.join(format!("{name}{suffix}"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    };
    (read(".otlp.json"), read(".logs.otlp.json"))
}

/// Each trace's calls (name, arguments, output) as extraction gives them
/// offline, from the spans and the log records together.
fn expected(spans: &str, logs: &str) -> Vec<(String, Json)> {
    let config = Config::default();
    let keep = Arc::new(config.kept_attributes());
    let mut records = toolscore::otlp_json::parse_file_text(spans, &keep)
        .unwrap()
        .spans;
    records.append(
        toolscore::otlp_json::parse_file_text(logs, &keep)
            .unwrap()
            .spans,
    );
    let out: Vec<(String, Json)> = records
        .traces(&keep)
        .unwrap()
        .into_iter()
        .map(|(id, spans)| {
            let calls = toolscore::extract::extract(&spans, &config.extract);
            let calls: Vec<Json> = calls
                .iter()
                .map(|c| {
                    let args = toolscore::pyvalue::py_dict_to_json(c.args.dict().unwrap());
                    json!({"name": c.name, "args": args, "output": c.output})
                })
                .collect();
            (id.to_hex(), Json::Array(calls))
        })
        .collect();
    assert!(
        out.iter()
            .any(|(_, c)| c.as_array().is_some_and(|a| !a.is_empty())),
        "the recording has calls to read"
    );
    out
}

/// The test config with results in SQLite and the write-ahead log on,
/// both in `dir`.
fn durable_config(dir: &Path) -> Config {
    let mut config = test_config();
    config.store.backend = StoreBackend::Sqlite;
    config.store.sqlite.path = dir.join("results.db");
    config.wal.enabled = true;
    config.wal.dir = dir.join("wal");
    config
}

/// A trace's calls from `GET /traces/{id}`, once it is evaluated (bound
/// to no evaluator here: its calls are what is looked at) with at least
/// `revision`.
async fn calls_of(http: &reqwest::Client, api: SocketAddr, trace: &str, revision: u64) -> Json {
    let deadline = Instant::now() + WAIT;
    loop {
        let (status, text) = body(http, format!("http://{api}/traces/{trace}")).await;
        if status == 200 {
            let t: Json = serde_json::from_str(&text).unwrap();
            if !t["evaluated_at"].is_null() && t["revision"].as_u64() >= Some(revision) {
                let calls = t["tool_calls"].as_array().unwrap();
                return calls
                    .iter()
                    .map(|c| json!({"name": c["name"], "args": c["args"], "output": c["output"]}))
                    .collect();
            }
        }
        assert!(
            Instant::now() < deadline,
            "trace {trace} was not evaluated (revision {revision}): {status} {text}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn post(http: &reqwest::Client, url: String, content_type: &str, body: Vec<u8>) -> Json {
    let r = http
        .post(url)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status();
    let bytes = r.bytes().await.unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    if content_type == "application/json" {
        serde_json::from_slice(&bytes).unwrap()
    } else {
        json!({"bytes": bytes.len()})
    }
}

fn logs_proto(text: &str) -> Vec<u8> {
    serde_json::from_str::<LogsData>(text)
        .unwrap()
        .encode_to_vec()
}

async fn grpc_logs(addr: SocketAddr, text: &str) {
    let data: LogsData = serde_json::from_str(text).unwrap();
    let mut client = LogsServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    let answer = client
        .export(ExportLogsServiceRequest {
            resource_logs: data.resource_logs,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.partial_success, None);
}

/// Three recordings, their log records by each transport: OTLP/HTTP
/// protobuf and JSON, OTLP/gRPC. The first two send the log records before
/// the spans; the last sends them after its trace was evaluated, as a
/// logs exporter flushing later than the spans' would: they make the
/// trace's next revision, with the calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_in_log_records_are_read_over_every_transport() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config();
    config.assembler.grace_after_root_ms = 300;
    let s = serve(&config, dir.path());
    let http = common::http();
    ready(&http, s.api).await;
    let traces = |a: SocketAddr| format!("http://{a}/v1/traces");
    let logs = |a: SocketAddr| format!("http://{a}/v1/logs");

    let (spans, records) = fixture("otel-genai-openai-v2-legacy/chat-loop");
    let want = expected(&spans, &records);
    let answer = post(
        &http,
        logs(s.otlp_http),
        "application/x-protobuf",
        logs_proto(&records),
    )
    .await;
    assert_eq!(answer["bytes"], 0, "all accepted: an empty response");
    post(&http, traces(s.otlp_http), "application/json", spans.into()).await;
    for (trace, calls) in &want {
        assert_eq!(&calls_of(&http, s.api, trace, 1).await, calls, "{trace}");
    }

    let (spans, records) = fixture("openllmetry-anthropic/messages-loop-events");
    let want = expected(&spans, &records);
    let answer = post(&http, logs(s.otlp_http), "application/json", records.into()).await;
    assert_eq!(answer, json!({}));
    post(&http, traces(s.otlp_http), "application/json", spans.into()).await;
    for (trace, calls) in &want {
        assert_eq!(&calls_of(&http, s.api, trace, 1).await, calls, "{trace}");
    }

    let (spans, records) = fixture("otel-genai-openai-v2/chat-loop-event-only");
    let want = expected(&spans, &records);
    post(&http, traces(s.otlp_http), "application/json", spans.into()).await;
    for (trace, _) in &want {
        assert_eq!(calls_of(&http, s.api, trace, 1).await, json!([]), "{trace}");
    }
    grpc_logs(s.otlp_grpc, &records).await;
    for (trace, calls) in &want {
        assert_eq!(&calls_of(&http, s.api, trace, 2).await, calls, "{trace}");
    }

    let metrics = body(&http, format!("http://{}/metrics", s.api)).await.1;
    let counted = |name: &str| {
        metrics
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    assert!(counted("toolscore_log_records_received_total{receiver=\"http\"}") > 0.0);
    assert!(counted("toolscore_log_records_received_total{receiver=\"grpc\"}") > 0.0);
}

/// Log records that belong to no span, or carry nothing extraction reads,
/// are acknowledged and counted, not kept; one with a malformed span ID is
/// refused alone, in `partial_success`; a request of such records alone is
/// refused whole with 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_records_toolscore_does_not_read_are_counted_and_bad_ones_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(&test_config(), dir.path());
    let http = common::http();
    ready(&http, s.api).await;
    let record = |trace: &str, span: &str, name: &str| {
        json!({"traceId": trace, "spanId": span, "eventName": name,
               "body": {"kvlistValue": {"values": [{"key": "content", "value": {"stringValue": "hi"}}]}}})
    };
    let request = |records: Vec<Json>| {
        json!({"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]}).to_string()
    };
    let trace = "5b8efff798038103d269b633813fc60c";
    let mixed = request(vec![
        record("", "", "gen_ai.user.message"),
        record(trace, "eee19b7ec3c1b174", "app.started"),
        record(trace, "eee19b7e", "gen_ai.user.message"),
    ]);
    let answer = post(
        &http,
        format!("http://{}/v1/logs", s.otlp_http),
        "application/json",
        mixed.into(),
    )
    .await;
    assert_eq!(answer["partialSuccess"]["rejectedLogRecords"], json!(1));
    let message = answer["partialSuccess"]["errorMessage"].as_str().unwrap();
    assert!(
        message.contains("log record 2 of scope 0 of resource 0: span ID must be 8 bytes"),
        "{message}"
    );
    let bad = request(vec![record(trace, "eee19b7e", "gen_ai.user.message")]);
    let r = http
        .post(format!("http://{}/v1/logs", s.otlp_http))
        .header("content-type", "application/json")
        .body(bad)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let text = r.text().await.unwrap();
    assert!(text.contains("all 1 log records were invalid"), "{text}");
    let metrics = body(&http, format!("http://{}/metrics", s.api)).await.1;
    assert!(
        metrics.contains("toolscore_log_records_ignored_total 2"),
        "{metrics}"
    );
    // Nothing was kept: the trace is not known.
    let (status, _) = body(&http, format!("http://{}/traces/{trace}", s.api)).await;
    assert_eq!(status, 404);
}

/// Log records acknowledged before a `kill -9` are in the write-ahead log:
/// after the restart their trace's calls are read from them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_records_survive_kill_9_through_the_write_ahead_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = durable_config(dir.path());
    // Nothing is evaluated before the kill.
    config.assembler.grace_after_root_ms = 250_000;
    let http = common::http();
    let (spans, records) = fixture("openllmetry-openai/chat-loop-events");
    let want = expected(&spans, &records);
    let mut s = serve(&config, dir.path());
    ready(&http, s.api).await;
    grpc_logs(s.otlp_grpc, &records).await;
    post(
        &http,
        format!("http://{}/v1/traces", s.otlp_http),
        "application/json",
        spans.into(),
    )
    .await;
    s.kill();
    config.assembler.grace_after_root_ms = 50;
    let s = serve(&config, dir.path());
    ready(&http, s.api).await;
    for (trace, calls) in &want {
        assert_eq!(&calls_of(&http, s.api, trace, 1).await, calls, "{trace}");
    }
}

/// `POST /v1/evaluate` reads a document's `resourceLogs` with its
/// `resourceSpans`: the order evaluator sees the calls only the log records
/// carry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evaluate_reads_the_log_records_beside_the_spans() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(&test_config(), dir.path());
    let http = common::http();
    ready(&http, s.api).await;
    let (spans, records) = fixture("otel-genai-openai-v2-legacy/chat-loop");
    let want = expected(&spans, &records);
    let (trace, calls) = want.first().unwrap();
    let names: Vec<&Json> = calls
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["name"])
        .collect();
    let mut doc: Json = serde_json::from_str(&spans).unwrap();
    let logs: Json = serde_json::from_str(&records).unwrap();
    let evaluate = |doc: Json| {
        let mut doc = doc;
        doc["evaluators"] =
            json!([{"id": "order", "type": "uipath-tool-call-order", "config": {}}]);
        doc["criteria"] = json!({"order": {"toolCallsOrder": names}});
        let http = http.clone();
        let url = format!("http://{}/v1/evaluate", s.api);
        async move {
            let got = post(&http, url, "application/json", doc.to_string().into()).await;
            assert_eq!(got["trace_id"], json!(trace), "{got}");
            got["scores"][0]["score"].as_f64().unwrap()
        }
    };
    assert!(
        evaluate(doc.clone()).await < 1.0,
        "the spans alone have no calls"
    );
    doc["resourceLogs"] = logs["resourceLogs"].clone();
    // A record of another trace is ignored, not a second trace.
    doc["resourceLogs"]
        .as_array_mut()
        .unwrap()
        .push(json!({"scopeLogs": [{"logRecords": [{
            "traceId": "0123456789abcdef0123456789abcdef",
            "spanId": "0123456789abcdef",
            "eventName": "gen_ai.choice",
            "body": {"kvlistValue": {"values": []}},
        }]}]}));
    assert_eq!(evaluate(doc).await, 1.0);
}

/// A trace evaluated with its log records before a `kill -9` is replayed as
/// evaluated: its records, events included, are those of its stored result,
/// so the restart makes no new revision of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_does_not_revise_a_trace_evaluated_with_its_events() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = durable_config(dir.path());
    config.assembler.grace_after_root_ms = 50;
    let http = common::http();
    let (spans, records) = fixture("openllmetry-anthropic/messages-loop-events");
    let want = expected(&spans, &records);
    let mut s = serve(&config, dir.path());
    ready(&http, s.api).await;
    grpc_logs(s.otlp_grpc, &records).await;
    let traces = |a: SocketAddr| format!("http://{a}/v1/traces");
    post(&http, traces(s.otlp_http), "application/json", spans.into()).await;
    for (trace, calls) in &want {
        assert_eq!(&calls_of(&http, s.api, trace, 1).await, calls, "{trace}");
    }
    s.kill();
    let s = serve(&config, dir.path());
    ready(&http, s.api).await;
    // A trace sent after the restart is evaluated a grace period after its
    // root; a replayed trace the restart revised would have been too.
    let (later, later_records) = fixture("otel-genai-openai-v2-legacy/chat-loop");
    let later_want = expected(&later, &later_records);
    post(&http, traces(s.otlp_http), "application/json", later.into()).await;
    for (trace, _) in &later_want {
        calls_of(&http, s.api, trace, 1).await;
    }
    for (trace, _) in &want {
        let (_, text) = body(&http, format!("http://{}/traces/{trace}", s.api)).await;
        let t: Json = serde_json::from_str(&text).unwrap();
        assert_eq!(t["revision"], 1, "{text}");
    }
}

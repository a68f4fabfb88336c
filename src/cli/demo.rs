//! `toolscore demo`: a first run with no agent at hand. Sends one realistic
//! agent trace to a running toolscore over OTLP/gRPC and prints its scores.
//!
//! The order matters: the `WatchScores` stream (gRPC query API) is opened
//! before the trace is sent, so the result cannot be stored unseen. The
//! children go out in one export request and the root span in a second one,
//! as an SDK's batch processor sends them (the root ends last).

use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValueKind;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, InstrumentationScope, KeyValue,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use serde_json::{Map, Value as Json, json};
use tonic::transport::{Channel, Endpoint};

use super::Exit;
use crate::api::grpc::pb;
use crate::api::grpc::pb::scores_service_client::ScoresServiceClient;

/// The default OTLP/gRPC receiver of `toolscore serve`.
pub const DEFAULT_OTLP_ENDPOINT: &str = "http://127.0.0.1:4317";
/// The default gRPC query API of `toolscore serve`.
pub const DEFAULT_API_ENDPOINT: &str = "http://127.0.0.1:8081";
/// How long to wait for the trace's scores once it is sent.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long to wait for a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// The demo agent's `service.name`.
pub const SERVICE_NAME: &str = "demo-agent";

const HINT: &str = "is `toolscore serve` running? start it with `cargo run --release -- serve`";

/// Where the service listens.
#[derive(Debug, Clone)]
pub struct DemoArgs {
    /// The OTLP/gRPC receiver, `http://host:port`.
    pub otlp_endpoint: String,
    /// The gRPC query API, `http://host:port`.
    pub api_endpoint: String,
    /// How long to wait for the scores once the trace is sent.
    pub timeout: Duration,
}

impl Default for DemoArgs {
    fn default() -> Self {
        DemoArgs {
            otlp_endpoint: DEFAULT_OTLP_ENDPOINT.into(),
            api_endpoint: DEFAULT_API_ENDPOINT.into(),
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// Why the demo did not get scores.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("not a valid endpoint URL {endpoint:?}: {reason}")]
    Endpoint { endpoint: String, reason: String },
    #[error("cannot reach toolscore's {what} at {endpoint}: {reason}; {HINT}")]
    Unreachable {
        what: &'static str,
        endpoint: String,
        reason: String,
    },
    #[error("toolscore refused {rejected} of the trace's spans: {message}")]
    Rejected { rejected: i64, message: String },
    #[error(
        "no result for trace {trace_id} within {} s; is toolscore's \
         assembler.grace_after_root_ms longer than that? \
         (curl -s http://127.0.0.1:8080/traces/{trace_id}/scores)",
        timeout.as_secs()
    )]
    Timeout { trace_id: String, timeout: Duration },
    #[error("the WatchScores stream of trace {trace_id} ended: {reason}; {HINT}")]
    StreamEnded { trace_id: String, reason: String },
}

/// What the demo sent, and the result toolscore stored for it.
#[derive(Debug, Clone)]
pub struct DemoOutcome {
    /// 32 lowercase hex characters.
    pub trace_id: String,
    /// Spans sent.
    pub spans: usize,
    /// The first result that is not `pending`.
    pub scores: pb::TraceScores,
}

/// `toolscore demo`: runs [`send_and_watch`] and prints the scores.
pub fn run(args: &DemoArgs) -> Exit {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return Exit::Failed;
        }
    };
    eprintln!(
        "sending a sample agent trace to {} (OTLP/gRPC), watching for its scores on {} (gRPC query API)…",
        args.otlp_endpoint, args.api_endpoint
    );
    match runtime.block_on(send_and_watch(args)) {
        Ok(outcome) => {
            let body = serde_json::to_string_pretty(&scores_json(&outcome.scores))
                .unwrap_or_else(|e| format!("(cannot render the scores: {e})"));
            write_stdout(&body);
            eprintln!("{}", summary(&outcome));
            Exit::Ok
        }
        Err(e @ DemoError::Endpoint { .. }) => {
            eprintln!("error: {e}");
            Exit::Usage
        }
        Err(e) => {
            eprintln!("error: {e}");
            Exit::Failed
        }
    }
}

/// The CLI's output path: the scores body goes to stdout, the rest to stderr.
#[allow(clippy::print_stdout)]
fn write_stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
}

/// Sends the demo trace and waits for its first evaluated result: opens the
/// `WatchScores` stream for the trace, sends the trace, reads results until
/// one is not `pending`, within `args.timeout`.
pub async fn send_and_watch(args: &DemoArgs) -> Result<DemoOutcome, DemoError> {
    let api = connect("gRPC query API", &args.api_endpoint).await?;
    let otlp = connect("OTLP/gRPC receiver", &args.otlp_endpoint).await?;

    let trace_id = random_trace_id();
    let hex = const_hex::encode(trace_id);
    let requests = demo_requests(trace_id, now_unix_nanos());
    let spans = requests.iter().map(span_count).sum();

    // The subscription exists once the response headers have arrived.
    let unreachable = |what, e: tonic::Status| DemoError::Unreachable {
        what,
        endpoint: args.api_endpoint.clone(),
        reason: e.message().to_owned(),
    };
    let mut stream = tokio::time::timeout(
        CONNECT_TIMEOUT,
        ScoresServiceClient::new(api).watch_scores(pb::WatchScoresRequest {
            status: None,
            evaluator: None,
            trace_id: Some(hex.clone()),
        }),
    )
    .await
    .map_err(|_| DemoError::Unreachable {
        what: "gRPC query API",
        endpoint: args.api_endpoint.clone(),
        reason: "WatchScores did not answer".into(),
    })?
    .map_err(|e| unreachable("gRPC query API", e))?
    .into_inner();

    let mut client = TraceServiceClient::new(otlp);
    for request in requests {
        let response = client
            .export(request)
            .await
            .map_err(|e| DemoError::Unreachable {
                what: "OTLP/gRPC receiver",
                endpoint: args.otlp_endpoint.clone(),
                reason: format!("{}: {}", e.code(), e.message()),
            })?;
        if let Some(p) = response.into_inner().partial_success
            && p.rejected_spans > 0
        {
            return Err(DemoError::Rejected {
                rejected: p.rejected_spans,
                message: p.error_message,
            });
        }
    }

    let deadline = tokio::time::Instant::now() + args.timeout;
    loop {
        let next = tokio::time::timeout_at(deadline, stream.message())
            .await
            .map_err(|_| DemoError::Timeout {
                trace_id: hex.clone(),
                timeout: args.timeout,
            })?;
        match next {
            Ok(Some(scores)) if scores.status() == pb::TraceStatus::Pending => continue,
            Ok(Some(scores)) => {
                return Ok(DemoOutcome {
                    trace_id: hex,
                    spans,
                    scores,
                });
            }
            Ok(None) => {
                return Err(DemoError::StreamEnded {
                    trace_id: hex,
                    reason: "closed by the server".into(),
                });
            }
            Err(e) => {
                return Err(DemoError::StreamEnded {
                    trace_id: hex,
                    reason: format!("{}: {}", e.code(), e.message()),
                });
            }
        }
    }
}

async fn connect(what: &'static str, endpoint: &str) -> Result<Channel, DemoError> {
    let invalid = |reason: String| DemoError::Endpoint {
        endpoint: endpoint.to_owned(),
        reason,
    };
    let uri: http::Uri = endpoint.parse().map_err(|e| invalid(format!("{e}")))?;
    if uri.scheme_str() != Some("http") || uri.authority().is_none() {
        return Err(invalid("expected http://host:port".into()));
    }
    let ep = Endpoint::from(uri).connect_timeout(CONNECT_TIMEOUT);
    ep.connect().await.map_err(|e| DemoError::Unreachable {
        what,
        endpoint: endpoint.to_owned(),
        reason: error_chain(&e),
    })
}

/// A transport error's message and its causes, each once ("transport error:
/// tcp connect error: Connection refused").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut source = e.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !parts.contains(&text) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}

fn span_count(r: &ExportTraceServiceRequest) -> usize {
    r.resource_spans
        .iter()
        .flat_map(|rs| &rs.scope_spans)
        .map(|ss| ss.spans.len())
        .sum()
}

fn now_unix_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// A random, valid (non-zero) trace ID, as the OpenTelemetry SDK makes them.
pub fn random_trace_id() -> [u8; 16] {
    use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator};
    loop {
        let id = RandomIdGenerator::default().new_trace_id();
        if id != opentelemetry::TraceId::INVALID {
            return id.to_bytes();
        }
    }
}

/// The demo trace, as two export requests: the five children, then the root
/// span (`invoke_agent weather-agent`), which ends last. The trace ends at
/// `end_ns`: a root of 2.4 s, two LLM `chat` spans with GenAI attributes, and
/// three OpenInference tool spans: `get_weather`, `get_forecast`,
/// `get_weather`.
pub fn demo_requests(trace_id: [u8; 16], end_ns: u64) -> Vec<ExportTraceServiceRequest> {
    let start = end_ns.saturating_sub(2_400_000_000);
    let at = |ms: u64| start + ms * 1_000_000;
    let span_id = |n: u8| {
        let mut id = [0u8; 8];
        id[..7].copy_from_slice(&trace_id[9..16]);
        id[7] = n;
        id.to_vec()
    };
    let root_id = span_id(1);
    let child = |n: u8, name: &str, from: u64, to: u64, attributes: Vec<KeyValue>| Span {
        trace_id: trace_id.to_vec(),
        span_id: span_id(n),
        parent_span_id: root_id.clone(),
        name: name.into(),
        kind: SpanKind::Internal as i32,
        start_time_unix_nano: at(from),
        end_time_unix_nano: at(to),
        attributes,
        ..Default::default()
    };
    let tool = |n, name: &str, from, to, input: Json, output: &str| {
        child(
            n,
            name,
            from,
            to,
            vec![
                kv("openinference.span.kind", "TOOL"),
                kv("tool.name", name),
                kv("input.value", &input.to_string()),
                kv("input.mime_type", "application/json"),
                kv("output.value", &json!({ "content": output }).to_string()),
                kv("output.mime_type", "application/json"),
            ],
        )
    };
    let children = vec![
        child(2, "chat gpt-4o", 10, 610, chat(412, 58, "tool_calls")),
        tool(
            3,
            "get_weather",
            620,
            900,
            json!({"city": "Paris"}),
            "Paris: sunny, 21°C",
        ),
        tool(
            4,
            "get_forecast",
            910,
            1300,
            json!({"city": "Paris", "days": 3}),
            "Paris, next 3 days: sunny, cloudy, rain",
        ),
        tool(
            5,
            "get_weather",
            1310,
            1580,
            json!({"city": "Lyon"}),
            "Lyon: cloudy, 17°C",
        ),
        child(6, "chat gpt-4o", 1590, 2380, chat(655, 96, "stop")),
    ];
    let root = Span {
        trace_id: trace_id.to_vec(),
        span_id: root_id,
        name: "invoke_agent weather-agent".into(),
        kind: SpanKind::Internal as i32,
        start_time_unix_nano: at(0),
        end_time_unix_nano: at(2400),
        attributes: vec![
            kv("gen_ai.operation.name", "invoke_agent"),
            kv("gen_ai.agent.name", "weather-agent"),
            kv("openinference.span.kind", "AGENT"),
            kv("input.value", "What's the weather in Paris and Lyon?"),
        ],
        ..Default::default()
    };
    vec![request(children), request(vec![root])]
}

fn chat(input_tokens: i64, output_tokens: i64, finish: &str) -> Vec<KeyValue> {
    vec![
        kv("gen_ai.operation.name", "chat"),
        kv("gen_ai.provider.name", "openai"),
        kv("gen_ai.request.model", "gpt-4o"),
        kv("gen_ai.response.model", "gpt-4o-2024-08-06"),
        int_kv("gen_ai.usage.input_tokens", input_tokens),
        int_kv("gen_ai.usage.output_tokens", output_tokens),
        KeyValue {
            key: "gen_ai.response.finish_reasons".into(),
            value: Some(AnyValue {
                value: Some(AnyValueKind::ArrayValue(ArrayValue {
                    values: vec![string_value(finish)],
                })),
            }),
            ..Default::default()
        },
        kv("openinference.span.kind", "LLM"),
    ]
}

fn request(spans: Vec<Span>) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![
                    kv("service.name", SERVICE_NAME),
                    kv("telemetry.sdk.name", "toolscore-demo"),
                ],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "toolscore.demo".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..Default::default()
                }),
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

fn string_value(s: &str) -> AnyValue {
    AnyValue {
        value: Some(AnyValueKind::StringValue(s.into())),
    }
}

fn kv(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(string_value(value)),
        ..Default::default()
    }
}

fn int_kv(key: &str, value: i64) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(AnyValueKind::IntValue(value)),
        }),
        ..Default::default()
    }
}

/// The gRPC result in the shape of the HTTP API's scores body (`GET
/// /traces/{trace_id}/scores`, as docs/api.md documents it), without its
/// timestamps (`evaluated_at`, the root's `start` and `end`).
pub fn scores_json(t: &pb::TraceScores) -> Json {
    let mut m = Map::new();
    m.insert("trace_id".into(), json!(t.trace_id));
    m.insert("status".into(), json!(status_name(t.status())));
    m.insert("complete".into(), json!(t.complete));
    m.insert("revision".into(), json!(t.revision));
    m.insert(
        "root".into(),
        t.root.as_ref().map_or(
            Json::Null,
            |r| json!({"name": r.name, "service": r.service, "span_id": r.span_id}),
        ),
    );
    m.insert(
        "binding".into(),
        t.binding.as_ref().map_or(Json::Null, |b| {
            let mut o = Map::new();
            o.insert("source".into(), json!(b.source));
            for (k, v) in [
                ("eval_set", &b.eval_set),
                ("item", &b.item),
                ("rule", &b.rule),
            ] {
                if let Some(v) = v {
                    o.insert(k.into(), json!(v));
                }
            }
            Json::Object(o)
        }),
    );
    m.insert("tool_calls".into(), json!(t.tool_calls));
    m.insert("content_captured".into(), json!(t.content_captured));
    let scores = t.scores.iter().map(score_json).collect();
    m.insert("scores".into(), Json::Array(scores));
    Json::Object(m)
}

fn score_json(s: &pb::Score) -> Json {
    let mut m = Map::new();
    m.insert("evaluator_id".into(), json!(s.evaluator_id));
    m.insert("evaluator_type".into(), json!(s.evaluator_type));
    let status = match s.status() {
        pb::ScoreStatus::Ok => "ok",
        pb::ScoreStatus::Error => "error",
        pb::ScoreStatus::Pending => "pending",
        pb::ScoreStatus::Skipped => "skipped",
        pb::ScoreStatus::Unspecified => "unspecified",
    };
    m.insert("status".into(), json!(status));
    let score = match s.score {
        None => Json::Null,
        Some(v) if s.score_is_int => json!(v as i64),
        Some(v) => json!(v),
    };
    m.insert("score".into(), score);
    if let Some(p) = s.passed {
        m.insert("passed".into(), json!(p));
    }
    if let Some(t) = s.threshold {
        m.insert("threshold".into(), json!(t));
    }
    let details =
        serde_json::from_str(&s.details_json).unwrap_or(Json::String(s.details_json.clone()));
    m.insert("details".into(), details);
    m.insert("error".into(), json!(s.error));
    Json::Object(m)
}

fn status_name(s: pb::TraceStatus) -> &'static str {
    match s {
        pb::TraceStatus::Pending => "pending",
        pb::TraceStatus::Evaluated => "evaluated",
        pb::TraceStatus::Unbound => "unbound",
        pb::TraceStatus::TimedOut => "timed_out",
        pb::TraceStatus::Unspecified => "unspecified",
    }
}

/// A few lines for a person: what was sent, each score, where to look next.
pub fn summary(o: &DemoOutcome) -> String {
    let t = &o.scores;
    let mut s = format!(
        "\ntrace {} ({} spans, {} tool calls): {}\n",
        o.trace_id,
        o.spans,
        t.tool_calls,
        status_name(t.status())
    );
    if t.scores.is_empty() {
        s.push_str(
            "  no evaluator is bound to this trace: add a rule or an eval set to the config\n",
        );
    }
    for score in &t.scores {
        let value = score
            .score
            .map_or_else(|| "error".to_owned(), |v| format!("{v:.2}"));
        let passed = match score.passed {
            Some(true) => " (passed)",
            Some(false) => " (failed)",
            None => "",
        };
        s.push_str(&format!(
            "  {}  {}: {}{}{}\n",
            score.evaluator_id,
            score.evaluator_type,
            value,
            passed,
            score
                .error
                .as_deref()
                .map_or_else(String::new, |e| format!(" — {e}")),
        ));
    }
    s.push_str(&format!(
        "see it again: curl -s http://127.0.0.1:8080/traces/{}/scores",
        o.trace_id
    ));
    s
}

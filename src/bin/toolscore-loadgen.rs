//! Load generator: sends realistic agent traces to toolscore (or any OTLP
//! receiver) over OTLP/gRPC and reports what was accepted and how fast.
//!
//! Each trace: 2–3 LLM spans, N tool spans (`tool.name`, `input.value`,
//! `output.value`) and the root `invoke_agent` span emitted last;
//! `service.name` on the resource; `eval.case.id` on the root of a share of
//! the traces. Requests carry ~512 spans of whole traces.
//!
//! Cheapness: one request template is encoded once; per request the encoded
//! buffer is copied and only the 16-byte trace IDs are patched in place, then
//! the raw bytes are sent through a passthrough tonic codec. Every trace ID is
//! unique for the run: 8 bytes of per-run nonce + an 8-byte counter.
//!
//! `toolscore-loadgen --mode max --concurrency 4 --duration-secs 10`
//! `toolscore-loadgen --mode rate --spans-per-sec 100000 --duration-secs 10`

#![allow(clippy::print_stdout)]

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use bytes::{BufMut, Bytes};
use clap::{Parser, ValueEnum};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use tokio::sync::Mutex;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::transport::{Channel, Endpoint};
use toolscore::agent_trace::{AgentTrace, resource_spans};
use toolscore::http_client::HttpClient;

const EXPORT_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

/// A probe waits up to 10 s on the server (`wait_ms`); past this, it failed.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// The most of a probe's answer read: one trace's scores.
const PROBE_MAX_BYTES: usize = 16 << 20;

/// The `--probe-api` client: an `https://` API's certificate must chain to
/// the system's roots.
fn probe_client(api: &str) -> Result<HttpClient> {
    let tls = if api.starts_with("https://") {
        let tls = toolscore::tls::ClientTlsConfig::default();
        Some(toolscore::tls::client_config(&tls, &[b"http/1.1"])?)
    } else {
        None
    };
    Ok(HttpClient::new(tls, PROBE_TIMEOUT, PROBE_MAX_BYTES)?)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// Closed loop: `--concurrency` requests always in flight.
    Max,
    /// Open loop: requests started on a fixed schedule (`--spans-per-sec`).
    Rate,
}

#[derive(Debug, Parser)]
#[command(
    name = "toolscore-loadgen",
    about = "OTLP/gRPC load generator for toolscore"
)]
struct Args {
    /// OTLP/gRPC endpoint; `https://` speaks TLS.
    #[arg(long, default_value = "http://127.0.0.1:4317")]
    endpoint: String,
    /// With an `https://` endpoint: the CA (PEM) its certificate chains to
    /// (default: the system's roots).
    #[arg(long)]
    ca_file: Option<std::path::PathBuf>,
    #[arg(long, value_enum, default_value_t = Mode::Max)]
    mode: Mode,
    /// In-flight requests (max mode).
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Target spans per second (rate mode).
    #[arg(long, default_value_t = 100_000)]
    spans_per_sec: u64,
    /// Upper bound on in-flight requests in rate mode (beyond it a tick is skipped and counted).
    #[arg(long, default_value_t = 256)]
    max_in_flight: usize,
    /// Whole run, including the warm-up.
    #[arg(long, default_value_t = 10)]
    duration_secs: u64,
    /// Seconds at the start not counted in spans/s and latency.
    #[arg(long, default_value_t = 2)]
    warmup_secs: u64,
    /// Tool spans per trace.
    #[arg(long, default_value_t = 6)]
    tools: usize,
    /// Target spans per request (whole traces; rounded down to a trace multiple).
    #[arg(long, default_value_t = 512)]
    spans_per_request: usize,
    /// Share of traces whose root carries `eval.case.id`.
    #[arg(long, default_value_t = 1.0)]
    bound_share: f64,
    /// Eval-set item ids to bind to, comma-separated (cycled over traces).
    #[arg(long, default_value = "bench-weather-1,bench-weather-2")]
    case_ids: String,
    /// Attribute naming the eval-set item.
    #[arg(long, default_value = "eval.case.id")]
    case_attribute: String,
    #[arg(long, default_value = "bench-weather-agent")]
    service_name: String,
    /// Tokio worker threads of the generator.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Write the hex IDs of every trace in an accepted request, one a line.
    #[arg(long)]
    trace_ids_out: Option<std::path::PathBuf>,
    /// Print the report as one JSON object.
    #[arg(long)]
    json: bool,
    /// toolscore's HTTP API (e.g. http://127.0.0.1:8080): probe the latency
    /// from outside. For one request in `--probe-every`, once its export is
    /// acknowledged (its traces' roots accepted), ask for its last trace's
    /// scores with `GET /traces/<id>/scores?wait_ms=10000` and time the answer.
    #[arg(long)]
    probe_api: Option<String>,
    /// Probe one request in this many (after the warm-up).
    #[arg(long, default_value_t = 20)]
    probe_every: u64,
    /// Also serve a model at this address for the LLM judges' benchmark
    /// (`perf/ab.sh`'s `judges` variant): the UiPath gateway's discovery
    /// (no models) and chat completions, each chat answered after
    /// `--model-delay-ms` with a `submit_evaluation` tool call scoring 80.
    #[arg(long)]
    model_stub: Option<std::net::SocketAddr>,
    #[arg(long, default_value_t = 500)]
    model_delay_ms: u64,
}

/// The benchmark's model (see `--model-stub`); runs until the process ends.
async fn serve_model(addr: std::net::SocketAddr, delay: Duration) -> Result<()> {
    use axum::routing::{get, post};
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("--model-stub {addr}"))?;
    let answer = serde_json::json!({
        "id": "chatcmpl-bench", "object": "chat.completion", "created": 1,
        "model": "gpt-4.1-2025-04-14",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "t", "name": "submit_evaluation",
                "arguments": {"justification": "bench", "score": 80}}]},
            "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 400, "completion_tokens": 20, "total_tokens": 420}});
    let app = axum::Router::new()
        .route(
            "/{org}/{tenant}/agenthub_/llm/api/discovery",
            get(|| async { axum::Json(serde_json::json!([])) }),
        )
        .route(
            "/{org}/{tenant}/agenthub_/llm/api/chat/completions",
            post(move || {
                let answer = answer.clone();
                async move {
                    tokio::time::sleep(delay).await;
                    axum::Json(answer)
                }
            }),
        );
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            eprintln!("the model stub stopped: {e}");
        }
    });
    Ok(())
}

// ---------------------------------------------------------------- codec

/// Sends pre-encoded `ExportTraceServiceRequest` bytes as they are and
/// decodes the response with prost.
#[derive(Debug, Clone, Copy, Default)]
struct RawCodec;

#[derive(Debug, Clone, Copy, Default)]
struct RawEncoder;

#[derive(Debug, Clone, Copy, Default)]
struct ResponseDecoder;

impl Codec for RawCodec {
    type Encode = Bytes;
    type Decode = ExportTraceServiceResponse;
    type Encoder = RawEncoder;
    type Decoder = ResponseDecoder;
    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }
    fn decoder(&mut self) -> ResponseDecoder {
        ResponseDecoder
    }
}

impl Encoder for RawEncoder {
    type Item = Bytes;
    type Error = tonic::Status;
    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for ResponseDecoder {
    type Item = ExportTraceServiceResponse;
    type Error = tonic::Status;
    fn decode(
        &mut self,
        src: &mut DecodeBuf<'_>,
    ) -> Result<Option<ExportTraceServiceResponse>, tonic::Status> {
        ExportTraceServiceResponse::decode(src)
            .map(Some)
            .map_err(|e| tonic::Status::internal(e.to_string()))
    }
}

// ---------------------------------------------------------------- template

const CITIES: [&str; 4] = ["Paris", "New York", "San Francisco", "Buenos Aires"];

/// The marker trace ID of template trace `j` (patched per request).
fn marker(j: usize) -> [u8; 16] {
    let mut m = [0xA5u8; 16];
    m[4..8].copy_from_slice(&(j as u32).to_be_bytes());
    m[0..4].copy_from_slice(b"TSLG");
    m
}

fn spans_per_trace(tools: usize, j: usize) -> usize {
    1 + llm_count(j) + tools
}

fn llm_count(j: usize) -> usize {
    2 + j % 2
}

fn template_trace(args: &Args, j: usize, base_ns: u64, case: Option<&str>) -> Vec<Span> {
    AgentTrace {
        trace_id: marker(j),
        llm_spans: llm_count(j),
        tools: args.tools,
        city: CITIES[j % CITIES.len()],
        start_ns: base_ns,
        case: case.map(|c| (args.case_attribute.as_str(), c)),
    }
    .spans()
}

struct Template {
    bytes: Vec<u8>,
    /// Per template trace, the offsets of its trace ID occurrences.
    offsets: Vec<Vec<usize>>,
    spans: usize,
    traces: usize,
}

fn build_template(args: &Args) -> Result<Template> {
    let cases: Vec<&str> = args.case_ids.split(',').filter(|s| !s.is_empty()).collect();
    let base_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut traces = 0usize;
    let mut total = 0usize;
    while traces == 0 || total + spans_per_trace(args.tools, traces) <= args.spans_per_request {
        total += spans_per_trace(args.tools, traces);
        traces += 1;
    }
    let mut spans = Vec::with_capacity(total);
    for j in 0..traces {
        // Bind trace j when its slot falls within the share (exact per request).
        let bound = (j as f64 + 0.5) / (traces as f64) < args.bound_share;
        let case = (bound && !cases.is_empty()).then(|| cases[j % cases.len()]);
        spans.extend(template_trace(args, j, base_ns, case));
    }
    let n_spans = spans.len();
    let req = ExportTraceServiceRequest {
        resource_spans: vec![resource_spans(&args.service_name, spans)],
    };
    let bytes = req.encode_to_vec();
    let mut offsets = vec![Vec::new(); traces];
    for (j, offs) in offsets.iter_mut().enumerate() {
        let m = marker(j);
        let mut i = 0;
        while i + 16 <= bytes.len() {
            if bytes[i..i + 16] == m {
                offs.push(i);
                i += 16;
            } else {
                i += 1;
            }
        }
        if offs.len() != spans_per_trace(args.tools, j) {
            bail!(
                "template trace {j}: found its ID {} times, expected {}",
                offs.len(),
                spans_per_trace(args.tools, j)
            );
        }
    }
    Ok(Template {
        bytes,
        offsets,
        spans: n_spans,
        traces,
    })
}

// ---------------------------------------------------------------- run

#[derive(Default)]
struct Stats {
    requests_ok: u64,
    spans_sent: u64,
    spans_accepted: u64,
    spans_rejected_partial: u64,
    /// gRPC status code name → spans refused with it.
    rejected_by_status: std::collections::BTreeMap<String, u64>,
    /// Spans accepted after the warm-up.
    measured_spans: u64,
    /// Spans accepted in each second after the warm-up (by answer time).
    per_second: Vec<u64>,
    /// Every answered request's latency after the warm-up, refusals included.
    latencies_us: Vec<u64>,
    /// First trace counter of each accepted request.
    accepted_starts: Vec<u64>,
    skipped_ticks: u64,
    /// Export acknowledged → scores returned by the API, per probe.
    probe_us: Vec<u64>,
    /// Probes that got no evaluated scores.
    probe_failed: u64,
}

struct Shared {
    template: Template,
    nonce: [u8; 8],
    counter: AtomicU64,
    stats: Mutex<Stats>,
    warm_at: Instant,
    deadline: Instant,
    keep_ids: bool,
    probe: Option<(HttpClient, String, u64)>,
    probes: Mutex<tokio::task::JoinSet<()>>,
}

impl Shared {
    fn next_request(&self) -> (u64, Bytes) {
        let tr = self.template.traces as u64;
        let start = self.counter.fetch_add(tr, Ordering::Relaxed);
        let mut buf = self.template.bytes.clone();
        for (j, offs) in self.template.offsets.iter().enumerate() {
            let mut id = [0u8; 16];
            id[..8].copy_from_slice(&self.nonce);
            id[8..].copy_from_slice(&(start + j as u64).to_be_bytes());
            for &o in offs {
                buf[o..o + 16].copy_from_slice(&id);
            }
        }
        (start, Bytes::from(buf))
    }
}

async fn send_one(shared: &Arc<Shared>, grpc: &mut tonic::client::Grpc<Channel>) {
    let (start, body) = shared.next_request();
    let n = shared.template.spans as u64;
    let t0 = Instant::now();
    let res = match grpc.ready().await {
        Ok(()) => {
            grpc.unary(
                tonic::Request::new(body),
                http::uri::PathAndQuery::from_static(EXPORT_PATH),
                RawCodec,
            )
            .await
        }
        Err(e) => Err(tonic::Status::unavailable(e.to_string())),
    };
    let took = t0.elapsed();
    // Counted: requests started after the warm-up and answered before the end.
    let measured = t0 >= shared.warm_at && t0 + took <= shared.deadline;
    let mut st = shared.stats.lock().await;
    st.spans_sent += n;
    match res {
        Ok(resp) => {
            let rejected = resp
                .into_inner()
                .partial_success
                .map_or(0, |p| p.rejected_spans.max(0) as u64);
            st.requests_ok += 1;
            st.spans_accepted += n.saturating_sub(rejected);
            st.spans_rejected_partial += rejected;
            if measured {
                st.measured_spans += n.saturating_sub(rejected);
                st.latencies_us.push(took.as_micros() as u64);
                let second = (t0 + took - shared.warm_at).as_secs() as usize;
                if st.per_second.len() <= second {
                    st.per_second.resize(second + 1, 0);
                }
                st.per_second[second] += n.saturating_sub(rejected);
            }
            if shared.keep_ids {
                st.accepted_starts.push(start);
            }
            if let Some((client, api, every)) = &shared.probe
                && measured
                && (start / shared.template.traces as u64).is_multiple_of((*every).max(1))
            {
                let last = start + shared.template.traces as u64 - 1;
                let url = format!(
                    "{api}/traces/{}{last:016x}/scores?wait_ms=10000",
                    const_hex::encode(shared.nonce)
                );
                let (client, acked, sh) = (client.clone(), Instant::now(), Arc::clone(shared));
                shared.probes.lock().await.spawn(async move {
                    let ok = client.get(&url).await.is_ok_and(|r| {
                        serde_json::from_slice::<serde_json::Value>(r.body())
                            .is_ok_and(|j| j["status"] == "evaluated")
                    });
                    let took = acked.elapsed();
                    let mut st = sh.stats.lock().await;
                    if ok {
                        st.probe_us.push(took.as_micros() as u64);
                    } else {
                        st.probe_failed += 1;
                    }
                });
            }
        }
        Err(status) => {
            *st.rejected_by_status
                .entry(format!("{:?}", status.code()))
                .or_default() += n;
            if measured {
                st.latencies_us.push(took.as_micros() as u64);
            }
        }
    }
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)] as f64 / 1000.0
}

async fn run(args: Args) -> Result<()> {
    if let Some(addr) = args.model_stub {
        serve_model(addr, Duration::from_millis(args.model_delay_ms)).await?;
    }
    let template = build_template(&args)?;
    let channel = if args.endpoint.starts_with("https://") {
        // The exporter's TLS channel: the same rustls client the service uses.
        let cfg = toolscore::exporter::ExporterConfig {
            endpoint: args.endpoint.clone(),
            tls: toolscore::tls::ClientTlsConfig {
                ca_file: args.ca_file.clone(),
                ..Default::default()
            },
            timeout_ms: const { std::num::NonZero::new(120_000).unwrap() },
            ..Default::default()
        };
        toolscore::exporter::channel(&cfg).map_err(|e| anyhow::anyhow!("{e}"))?
    } else {
        Endpoint::from_shared(args.endpoint.clone())
            .context("endpoint")?
            .tcp_nodelay(true)
            .connect()
            .await
            .with_context(|| format!("connecting to {}", args.endpoint))?
    };
    let nonce = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        .to_be_bytes();
    let began = Instant::now();
    let warmup = Duration::from_secs(args.warmup_secs.min(args.duration_secs));
    let deadline = began + Duration::from_secs(args.duration_secs);
    let shared = Arc::new(Shared {
        template,
        nonce,
        counter: AtomicU64::new(1),
        stats: Mutex::new(Stats::default()),
        warm_at: began + warmup,
        deadline,
        keep_ids: args.trace_ids_out.is_some(),
        probe: match &args.probe_api {
            Some(api) => Some((
                probe_client(api).context("HTTP client for --probe-api")?,
                api.trim_end_matches('/').to_owned(),
                args.probe_every,
            )),
            None => None,
        },
        probes: Mutex::new(tokio::task::JoinSet::new()),
    });
    match args.mode {
        Mode::Max => {
            let mut tasks = Vec::new();
            for _ in 0..args.concurrency.max(1) {
                let shared = shared.clone();
                let mut grpc = tonic::client::Grpc::new(channel.clone());
                tasks.push(tokio::spawn(async move {
                    while Instant::now() < deadline {
                        send_one(&shared, &mut grpc).await;
                    }
                }));
            }
            for t in tasks {
                t.await.context("sender task")?;
            }
        }
        Mode::Rate => {
            let per_req = shared.template.spans as f64;
            let period = Duration::from_secs_f64(per_req / args.spans_per_sec.max(1) as f64);
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            let sem = Arc::new(tokio::sync::Semaphore::new(args.max_in_flight.max(1)));
            let mut tasks = tokio::task::JoinSet::new();
            loop {
                tick.tick().await;
                if Instant::now() >= deadline {
                    break;
                }
                let Ok(permit) = sem.clone().try_acquire_owned() else {
                    shared.stats.lock().await.skipped_ticks += 1;
                    continue;
                };
                let shared = shared.clone();
                let mut grpc = tonic::client::Grpc::new(channel.clone());
                tasks.spawn(async move {
                    send_one(&shared, &mut grpc).await;
                    drop(permit);
                });
                while tasks.try_join_next().is_some() {}
            }
            while tasks.join_next().await.is_some() {}
        }
    }
    let elapsed = began.elapsed();
    // The last probes wait for their traces' grace period.
    let mut probes = std::mem::take(&mut *shared.probes.lock().await);
    while probes.join_next().await.is_some() {}
    let measured_secs = (deadline - (began + warmup)).as_secs_f64().max(1e-9);
    let mut st = std::mem::take(&mut *shared.stats.lock().await);
    st.latencies_us.sort_unstable();
    let traces_per_req = shared.template.traces as u64;
    let traces_accepted = st.accepted_starts.len() as u64 * traces_per_req;
    if let Some(path) = &args.trace_ids_out {
        let f =
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let mut w = std::io::BufWriter::new(f);
        let nonce_hex = const_hex::encode(shared.nonce);
        for &s in &st.accepted_starts {
            for j in 0..traces_per_req {
                writeln!(w, "{nonce_hex}{:016x}", s + j)?;
            }
        }
        w.flush()?;
    }
    let spans_per_sec = st.measured_spans as f64 / measured_secs;
    // Whole seconds of the measured window only (the last may be cut short).
    let whole = measured_secs.floor() as usize;
    let mut per_second = std::mem::take(&mut st.per_second);
    per_second.resize(whole, 0);
    let p50 = percentile(&st.latencies_us, 0.50);
    let p99 = percentile(&st.latencies_us, 0.99);
    let max = percentile(&st.latencies_us, 1.0);
    let traces_sent = st.spans_sent / shared.template.spans as u64 * traces_per_req;
    st.probe_us.sort_unstable();
    let probe = serde_json::json!({
        "count": st.probe_us.len(),
        "failed": st.probe_failed,
        "p50": percentile(&st.probe_us, 0.50),
        "p99": percentile(&st.probe_us, 0.99),
        "max": percentile(&st.probe_us, 1.0),
    });
    if args.json {
        let report = serde_json::json!({
            "mode": format!("{:?}", args.mode).to_lowercase(),
            "spans_per_request": shared.template.spans,
            "traces_per_request": traces_per_req,
            "request_bytes": shared.template.bytes.len(),
            "duration_secs": elapsed.as_secs_f64(),
            "warmup_secs": warmup.as_secs_f64(),
            "spans_sent": st.spans_sent,
            "spans_accepted": st.spans_accepted,
            "spans_rejected_partial": st.spans_rejected_partial,
            "spans_rejected_by_status": st.rejected_by_status,
            "requests_ok": st.requests_ok,
            "skipped_ticks": st.skipped_ticks,
            "traces_sent": traces_sent,
            "traces_accepted": traces_accepted,
            "accepted_spans_per_sec": spans_per_sec,
            "accepted_spans_per_second": per_second,
            "latency_ms": {"p50": p50, "p99": p99, "max": max},
            "probe_ack_to_scores_ms": probe,
            "trace_ids_out": args.trace_ids_out.as_ref().map(|p| p.display().to_string()),
        });
        println!("{report}");
    } else {
        println!(
            "mode {:?}: {} spans/request ({} traces, {} bytes), {:.1}s ({:.1}s warm-up)",
            args.mode,
            shared.template.spans,
            traces_per_req,
            shared.template.bytes.len(),
            elapsed.as_secs_f64(),
            warmup.as_secs_f64()
        );
        println!(
            "spans sent {}  accepted {}  rejected (partial) {}  rejected by status {:?}",
            st.spans_sent, st.spans_accepted, st.spans_rejected_partial, st.rejected_by_status
        );
        if st.skipped_ticks > 0 {
            println!(
                "rate ticks skipped (max in flight reached): {}",
                st.skipped_ticks
            );
        }
        println!("traces sent {traces_sent}  in accepted requests {traces_accepted}");
        println!("accepted spans/s after warm-up: {spans_per_sec:.0}");
        println!("request latency ms: p50 {p50:.2}  p99 {p99:.2}  max {max:.2}");
        if args.probe_api.is_some() {
            println!("probes, export acknowledged -> scores returned (ms): {probe}");
        }
        if let Some(p) = &args.trace_ids_out {
            println!("trace IDs written to {}", p.display());
        }
    }
    Ok(())
}

fn main() -> Result<()> {
    toolscore::tls::install_default_provider();
    let args = Args::parse();
    if !(0.0..=1.0).contains(&args.bound_share) {
        bail!("--bound-share must be within 0..=1");
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()
        .context("tokio runtime")?;
    rt.block_on(run(args))
}

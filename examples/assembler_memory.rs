//! Memory per buffered span: decodes and pushes N rootless agent traces (the load
//! generator's shape: 3 LLM spans, 6 tool spans with `input.value` and
//! `output.value`, `service.name` on the resource) into one assembler shard
//! and compares the process's RSS growth with the spans' OTLP-encoded size.
//!
//! `cargo run --release --example assembler_memory -- [traces]` (default 100000).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::ResourceSpans;
use prost::Message;
use toolscore::agent_trace::{self, AgentTrace};
use toolscore::assembler::{Limits, Push, Shard};
use toolscore::config::OnTimeout;
use toolscore::record::Run;

/// The load generator's agent trace without its root (so it stays buffered).
fn trace(n: u64) -> ResourceSpans {
    let mut trace_id = [7u8; 16];
    trace_id[..8].copy_from_slice(&n.to_be_bytes());
    let mut spans = AgentTrace {
        trace_id,
        llm_spans: 3,
        tools: 6,
        city: "Paris",
        start_ns: 1_000,
        case: None,
    }
    .spans();
    spans.pop();
    agent_trace::resource_spans("weather-agent", spans)
}

fn rss_bytes() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| {
            v.trim()
                .trim_end_matches(" kB")
                .trim()
                .parse::<usize>()
                .ok()
        })
        .map_or(0, |kb| kb * 1024)
}

fn main() {
    let traces: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    // The attributes the embedded default configuration reads (what `serve` keeps).
    let keep = std::sync::Arc::new(
        toolscore::config::Config::embedded()
            .unwrap()
            .kept_attributes(),
    );
    let mut shard = Shard::new(Limits {
        grace: Duration::from_secs(1),
        idle_timeout: Duration::from_secs(300),
        max_age: Duration::from_secs(3600),
        late_window: Duration::from_secs(60),
        on_timeout: OnTimeout::Evaluate,
        max_traces: usize::MAX / 2,
        max_spans_per_trace: 10_000,
        max_bytes: usize::MAX / 2,
        max_traces_per_service: 0,
        keys: keep.clone(),
    });
    let before = rss_bytes();
    let now = Instant::now();
    let (mut encoded, mut spans) = (0usize, 0usize);
    let started = Instant::now();
    for n in 0..traces {
        // Decoded as the service's receivers do, then pushed as its shards do.
        let rs = trace(n);
        encoded += rs.encoded_len();
        let body = ExportTraceServiceRequest {
            resource_spans: vec![rs],
        }
        .encode_to_vec();
        let decoded = toolscore::receiver::wire::decode_request(&body, &keep).unwrap();
        assert!(decoded.rejected.is_empty());
        for i in 0..decoded.spans.len() {
            spans += 1;
            assert_eq!(
                shard.push_record(&decoded.spans, i, Run::default(), now),
                Push::Accepted
            );
        }
    }
    let took = started.elapsed();
    let after = rss_bytes();
    let grown = after.saturating_sub(before);
    println!(
        "buffered {spans} spans in {traces} rootless traces ({took:.2?}, {:.0} spans/s decoded+pushed)",
        spans as f64 / took.as_secs_f64()
    );
    println!(
        "OTLP-encoded size: {:.0} bytes/span",
        encoded as f64 / spans as f64
    );
    println!(
        "shard accounting: {:.0} bytes/span",
        shard.bytes() as f64 / spans as f64
    );
    println!(
        "RSS growth: {:.1} MiB = {:.0} bytes/span = {:.2} x encoded",
        grown as f64 / 1048576.0,
        grown as f64 / spans as f64,
        grown as f64 / encoded as f64
    );
}

//! The assembler's shard tasks on the runtime's paused clock: a trace is
//! handed to evaluation exactly when its timer says, with no real waiting.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::num::NonZero;
use std::sync::Arc;
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use toolscore::agent_trace::{AgentTrace, resource_spans};
use toolscore::assembler::{
    self, AssemblerHandle, Backlog, Limits, OnTimeout, Push, Ready, Reason, Shard,
};
use toolscore::config::Config;
use toolscore::span::TraceId;
use toolscore::telemetry::Metrics;

const GRACE: Duration = Duration::from_secs(2);
const IDLE: Duration = Duration::from_secs(30);

/// One shard behind the driver, and the evaluation queue it feeds.
fn assembler() -> (AssemblerHandle, mpsc::Receiver<Ready>) {
    assembler_with_queue(16)
}

fn assembler_with_queue(capacity: usize) -> (AssemblerHandle, mpsc::Receiver<Ready>) {
    let limits = Limits {
        grace: GRACE,
        idle_timeout: IDLE,
        max_age: Duration::from_secs(3600),
        late_window: Duration::from_secs(60),
        on_timeout: OnTimeout::Evaluate,
        max_traces: 1000,
        max_spans_per_trace: 1000,
        max_bytes: 1 << 24,
        max_traces_per_service: 0,
        keys: Arc::new(Config::embedded().unwrap().kept_attributes()),
    };
    let (ready_tx, ready_rx) = mpsc::channel(capacity);
    let (handle, _tasks) = assembler::spawn(
        vec![Shard::new(limits)],
        NonZero::new(16).unwrap(),
        Duration::from_millis(200),
        (ready_tx, Backlog::new(1)),
        Arc::new(|_: &[TraceId], _| {}),
        Arc::new(Metrics::new()),
        CancellationToken::new(),
    );
    (handle, ready_rx)
}

/// Trace `n` of the load generator's shape with `tools` tool calls, without
/// its root if `rootless`; returns how many of its spans were new.
async fn submit(handle: &AssemblerHandle, n: u8, tools: usize, rootless: bool) -> usize {
    let mut spans = AgentTrace {
        trace_id: [n; 16],
        llm_spans: 2,
        tools,
        city: "Paris",
        start_ns: 1_000,
        case: None,
    }
    .spans();
    if rootless {
        spans.pop();
    }
    let body = ExportTraceServiceRequest {
        resource_spans: vec![resource_spans("agent", spans)],
    }
    .encode_to_vec();
    let keep = Config::default().kept_attributes();
    let decoded = toolscore::receiver::wire::decode_request(&body, &keep).unwrap();
    let verdicts = handle.submit(decoded.spans, None).await;
    assert!(
        verdicts
            .iter()
            .all(|v| matches!(v, Push::Accepted | Push::Duplicate)),
        "{verdicts:?}"
    );
    verdicts.iter().filter(|v| **v == Push::Accepted).count()
}

#[tokio::test(start_paused = true)]
async fn a_complete_trace_is_handed_over_a_grace_period_after_its_root() {
    let (handle, mut ready) = assembler();
    assert_eq!(submit(&handle, 1, 3, true).await, 5);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let root = Instant::now();
    assert_eq!(submit(&handle, 1, 3, false).await, 1, "the root");
    let r = ready.recv().await.unwrap();
    assert_eq!(root.elapsed(), GRACE);
    assert_eq!(r.trace_id, TraceId([1; 16]));
    assert_eq!((r.complete, r.revision, r.spans.len()), (true, 1, 6));
    assert!(matches!(r.reason, Reason::Complete), "{:?}", r.reason);
}

#[tokio::test(start_paused = true)]
async fn a_rootless_trace_times_out_when_it_goes_idle() {
    let (handle, mut ready) = assembler();
    assert_eq!(submit(&handle, 2, 3, true).await, 5);
    // New spans of it later push its idle deadline back (span IDs 7 and 8;
    // the rest are duplicates, kept once).
    tokio::time::sleep(Duration::from_secs(10)).await;
    let last = Instant::now();
    assert_eq!(submit(&handle, 2, 5, true).await, 2);
    let r = ready.recv().await.unwrap();
    assert_eq!(last.elapsed(), IDLE);
    assert_eq!((r.complete, r.spans.len()), (false, 7));
    assert!(matches!(r.reason, Reason::TimedOut), "{:?}", r.reason);
}

/// With the evaluation queue full, the shard waits for room for several
/// traces at once (half the queue here), not for each slot: it still takes
/// spans meanwhile, and every due trace is handed over once as the queue
/// drains.
#[tokio::test(start_paused = true)]
async fn a_full_evaluation_queue_is_refilled_by_halves_and_gets_every_due_trace_once() {
    let (handle, mut ready) = assembler_with_queue(8);
    for n in 1..=20 {
        submit(&handle, n, 2, false).await;
    }
    tokio::time::sleep(GRACE * 2).await;
    assert_eq!(
        ready.len(),
        8,
        "the queue is full, the rest wait in the shard"
    );
    let settle = || async {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    };
    let mut seen = BTreeSet::new();
    let take = |seen: &mut BTreeSet<TraceId>, r: Ready| {
        assert!(r.complete);
        assert!(seen.insert(r.trace_id), "{:?} twice", r.trace_id);
    };
    take(&mut seen, ready.recv().await.unwrap());
    settle().await;
    assert_eq!(ready.len(), 7, "one free slot does not wake the shard");
    // Spans still go in while the shard waits for room.
    tokio::time::timeout(IDLE, submit(&handle, 21, 2, false))
        .await
        .expect("the shard takes spans while it waits for room");
    for _ in 0..3 {
        take(&mut seen, ready.recv().await.unwrap());
    }
    settle().await;
    assert_eq!(ready.len(), 8, "four free slots do: it fills them");
    while seen.len() < 21 {
        let r = tokio::time::timeout(IDLE, ready.recv())
            .await
            .unwrap()
            .unwrap();
        take(&mut seen, r);
    }
    tokio::time::sleep(IDLE * 2).await;
    assert!(ready.is_empty());
}

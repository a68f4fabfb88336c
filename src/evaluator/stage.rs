//! The evaluation stage: complete traces in, stored results out.
//!
//! The only part of `evaluator/` that is not pure: [`evaluate_ready`] is a
//! plain function (with `criteria::Binder` choosing the criteria), and [`run`] is the small loop that
//! takes ready traces off a bounded queue and evaluates them on the blocking
//! pool (never on the async I/O threads), at most `workers` at a time, under
//! the normal scheduling policy while the I/O threads yield (`sched.rs`).

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use tokio::sync::mpsc;

use super::llm::root_span;
use crate::assembler::Ready;
use crate::criteria::{Binder, ItemEvaluator};
use crate::extract::{self, ExtractConfig, ToolCall};
use crate::span::Span;
use crate::store::{
    ResultStore, RootSummary, Score, StoredArgs, ToolCallSummary, TraceRecord, TraceStatus,
};
use crate::telemetry::Metrics;

/// A trace evaluated: the record to store now, with a `pending` score in
/// the place of each evaluator that calls a model, and those evaluators
/// with their places (their scores follow, `crate::judge::live`).
#[derive(Debug)]
pub struct Evaluated {
    pub record: TraceRecord,
    pub judges: Vec<(usize, ItemEvaluator)>,
}

/// Where the LLM judges of an evaluated trace go (`crate::judge::live`,
/// behind this trait so that `evaluator` does not depend on `judge`).
pub trait Judging: Send + Sync {
    /// Settles, in `record`, the judges that will not run; returns what
    /// starts the others, to call once `record` is stored.
    fn prepare(
        &self,
        record: &mut TraceRecord,
        judges: Vec<(usize, ItemEvaluator)>,
        spans: &Arc<Vec<Span>>,
    ) -> Option<Box<dyn FnOnce() + Send>>;
}

/// Evaluates one ready trace into the record the store keeps.
pub fn evaluate_ready(
    binder: &Binder,
    extract_cfg: &ExtractConfig,
    ready: &Ready,
    now: SystemTime,
) -> Evaluated {
    let spans = ready.spans.as_slice();
    let calls = extract::extract(spans, extract_cfg);
    let root = root_span(spans).map(|r| RootSummary {
        span_id: r.span_id,
        name: r.name.clone(),
        service: r.service_name.as_deref().map(str::to_owned),
        start_time_unix_nano: r.start_time_unix_nano,
        end_time_unix_nano: r.end_time_unix_nano,
    });
    let bound = binder.bind(spans);
    let status = match (&bound, ready.complete) {
        (None, _) => TraceStatus::Unbound,
        (Some(_), true) => TraceStatus::Evaluated,
        (Some(_), false) => TraceStatus::TimedOut,
    };
    let mut judges = Vec::new();
    let scores = bound
        .as_ref()
        .map(|b| {
            b.evaluators
                .iter()
                .enumerate()
                .map(|(i, ie)| {
                    let outcome = if ie.evaluator.is_llm_judged() {
                        judges.push((i, ie.clone()));
                        crate::evaluator::Outcome::pending()
                    } else {
                        ie.evaluator.evaluate(&calls, &ie.criteria)
                    };
                    Score {
                        evaluator_id: ie.evaluator.id.clone(),
                        evaluator_type: ie.evaluator.kind,
                        outcome: outcome.into(),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let record = TraceRecord {
        trace_id: ready.trace_id,
        status,
        complete: ready.complete,
        revision: ready.revision,
        evaluated_at: Some(now),
        root,
        binding: bound.map(|b| b.binding),
        content_captured: calls.iter().all(|c| c.content_captured),
        tool_calls: summarise_all(calls),
        scores,
        span_count: spans.len(),
        judged: None,
    };
    Evaluated { record, judges }
}

/// The calls as the record keeps them, in a list of exactly their number:
/// `collect` would reuse extraction's larger list (sized for every span, of
/// larger items), and a stored record would keep that slack (≈ 1.4 KB of
/// ≈ 13 KB with the benchmark's traces).
fn summarise_all(calls: Vec<ToolCall>) -> Vec<ToolCallSummary> {
    let mut out = Vec::with_capacity(calls.len());
    out.extend(calls.into_iter().map(summarise));
    out
}

/// The record keeps what extraction made, moved rather than copied.
fn summarise(c: ToolCall) -> ToolCallSummary {
    ToolCallSummary {
        name: c.name,
        id: c.id,
        args: StoredArgs::Extracted(c.args),
        output: c.output,
        span_id: c.span_id,
        start_time_unix_nano: c.start_time_unix_nano,
        end_time_unix_nano: c.end_time_unix_nano,
    }
}

/// Ready traces a worker takes off the queue at once: one queue lock per
/// batch under load; a single trace when traffic is light. Each result is
/// stored as soon as it is evaluated, so none waits for its batch.
const MAX_BATCH: usize = 64;

/// Takes ready traces off `rx` and stores their results, with `workers`
/// evaluation threads (long-running tasks on the blocking pool, never the
/// async I/O threads) that share the queue. Each takes what is queued, up to
/// [`MAX_BATCH`], straight off it: no hand-off through an async task, so a
/// busy I/O thread never holds evaluation up. Returns when `rx` closes and
/// every worker has finished what it took (the drain).
pub async fn run(
    rx: mpsc::Receiver<Ready>,
    binder: Arc<Binder>,
    extract_cfg: Arc<ExtractConfig>,
    store: Arc<dyn ResultStore>,
    metrics: Arc<Metrics>,
    live: Arc<dyn Judging>,
    workers: usize,
) {
    let rx = Arc::new(std::sync::Mutex::new(rx));
    let mut threads = Vec::new();
    for _ in 0..workers.max(1) {
        let (rx, binder, extract_cfg, store, metrics, live) = (
            rx.clone(),
            binder.clone(),
            extract_cfg.clone(),
            store.clone(),
            metrics.clone(),
            live.clone(),
        );
        threads.push(tokio::task::spawn_blocking(move || {
            let _policy = crate::sched::Evaluating::enter();
            let mut batch = Vec::with_capacity(MAX_BATCH);
            let stage = Stage {
                binder: &binder,
                extract_cfg: &extract_cfg,
                store: &*store,
                metrics: &metrics,
                live: &*live,
            };
            while take_batch(&rx, &mut batch, &metrics) {
                stage.evaluate_batch(&mut batch);
                batch.clear();
            }
        }));
    }
    for t in threads {
        if let Err(e) = t.await {
            tracing::error!(error = %e, "an evaluation worker failed");
        }
    }
}

/// Blocks for the next ready trace, then takes what else is queued (up to
/// [`MAX_BATCH`]). False once the queue is closed and empty.
fn take_batch(
    rx: &std::sync::Mutex<mpsc::Receiver<Ready>>,
    batch: &mut Vec<Ready>,
    metrics: &Metrics,
) -> bool {
    // The queue cannot be left inconsistent by a panic elsewhere: ignore poisoning.
    let mut rx = rx.lock().unwrap_or_else(|e| e.into_inner());
    let Some(first) = rx.blocking_recv() else {
        return false;
    };
    batch.push(first);
    while batch.len() < MAX_BATCH {
        match rx.try_recv() {
            Ok(r) => batch.push(r),
            Err(_) => break,
        }
    }
    metrics.evaluation_queue_depth.set(rx.len() as i64);
    true
}

/// What an evaluation worker works with.
struct Stage<'a> {
    binder: &'a Binder,
    extract_cfg: &'a ExtractConfig,
    store: &'a dyn ResultStore,
    metrics: &'a Metrics,
    live: &'a dyn Judging,
}

impl Stage<'_> {
    /// Evaluates a batch of ready traces and stores the results (the store
    /// offers them for export once they can be read); hands the LLM judges of
    /// each to [`Judging`] once its deterministic scores are stored.
    fn evaluate_batch(&self, batch: &mut [Ready]) {
        let Stage {
            binder,
            extract_cfg,
            store,
            metrics,
            live,
        } = *self;
        for ready in batch {
            let _span = tracing::info_span!(
                "evaluate_trace",
                trace_id = %ready.trace_id,
                revision = ready.revision,
                spans = ready.spans.len()
            )
            .entered();
            // Leaves the evaluation backlog once this iteration ends, stored or not.
            let _ticket = std::mem::take(&mut ready.ticket);
            let started = Instant::now();
            // A panic (a bug) costs this trace, not the worker: the others in
            // the queue are still evaluated. It is logged and counted; the trace
            // keeps its `pending` record.
            let evaluated = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                evaluate_ready(binder, extract_cfg, ready, SystemTime::now())
            }));
            let Ok(Evaluated { mut record, judges }) = evaluated else {
                tracing::error!(trace_id = %ready.trace_id, "evaluating this trace panicked; it has no result");
                metrics.stage_panicked("evaluation");
                continue;
            };
            let job = match judges.is_empty() {
                true => None,
                false => live.prepare(&mut record, judges, &ready.spans),
            };
            // Counted before it is stored: once a result can be read, so can its count.
            metrics.record_evaluation(&record, started.elapsed());
            // Stored as soon as it is ready (an uncontended lock), so no result
            // waits for the rest of its batch.
            // The log segments of its spans are released once it is stored.
            let pin = std::mem::take(&mut ready.pin);
            store.put_pinned(record, Instant::now(), pin);
            metrics.observe_scores_latency(ready);
            if let Some(start) = job {
                start();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::span::SpanId;

    fn call(name: &str) -> ToolCall {
        ToolCall {
            name: name.into(),
            id: None,
            args: crate::extract::Args::Dict(crate::pyvalue::Dict::default()),
            output: "out".into(),
            raw_output: None,
            content_captured: true,
            span_id: SpanId([1; 8]),
            start_time_unix_nano: 1,
            end_time_unix_nano: 2,
        }
    }

    #[test]
    fn a_record_keeps_its_calls_without_extractions_slack() {
        // Extraction sizes its list for every span of the trace.
        let mut calls = Vec::with_capacity(10);
        calls.extend([call("a"), call("b")]);
        let kept = summarise_all(calls);
        assert_eq!(kept.capacity(), 2);
        assert_eq!(kept[1].name, "b");
    }
}

//! The evaluation stage's workers: complete traces in, stored results out.
//!
//! [`run`] is the small loop that takes ready traces off a bounded queue and
//! evaluates them ([`evaluate_ready`]) on the blocking pool (never on the
//! async I/O threads), at most `workers` at a time.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use tokio::sync::mpsc;

use super::ready::{Evaluated, Judging, evaluate_ready};
use crate::assembler::{Ready, Reason};
use crate::criteria::Binder;
use crate::extract::ExtractConfig;
use crate::store::ResultStore;
use crate::telemetry::Metrics;

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
            let Ok(Evaluated {
                mut record,
                judges,
                calls,
            }) = evaluated
            else {
                tracing::error!(trace_id = %ready.trace_id, "evaluating this trace panicked; it has no result");
                metrics.stage_panicked("evaluation");
                continue;
            };
            let job = match judges.is_empty() {
                true => None,
                false => live.prepare(&mut record, judges, &ready.spans, calls),
            };
            // Counted before it is stored: once a result can be read, so can its count.
            metrics.record_evaluation(record.score_statuses(), started.elapsed());
            // Stored as soon as it is ready (an uncontended lock), so no result
            // waits for the rest of its batch.
            // The log segments of its spans are released once it is stored.
            let pin = std::mem::take(&mut ready.pin);
            store.put_pinned(record, Instant::now(), pin);
            // Latencies of complete traces, on their first evaluation only.
            if ready.reason == Reason::Complete {
                metrics.observe_scores_latency(ready.root_arrived, ready.due);
            }
            if let Some(start) = job {
                start();
            }
        }
    }
}

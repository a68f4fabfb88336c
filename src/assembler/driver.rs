//! The async shell around the shard cores: one task per shard, one timer per
//! shard (its earliest deadline), bounded queues in and out.
//!
//! Receivers hand spans to an [`AssemblerHandle`], which splits them by
//! shard and waits for each shard's verdicts. When a shard's queue stays full
//! past the send timeout, or the shard is at its bounds, the verdict is
//! [`Push::Full`] and the receiver answers with a retryable status: the
//! backpressure reaches the client instead of growing a buffer.

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::backlog::Backlog;
use super::core::{Counts, Push, Ready, Shard};
use super::shard_of;
use crate::record::{Records, Run};
use crate::span::TraceId;
use crate::telemetry::{Metrics, ShardLabel, TraceOutcome};
use crate::wal::Wal;

/// Where a shard reports the traces it starts, one call per request's
/// spans (the store shows them as pending): passed in, so the assembler does
/// not depend on the store.
pub type MarkPending = Arc<dyn Fn(&[TraceId], std::time::Instant) + Send + Sync>;

/// What a shard's queue carries.
pub enum Command {
    Push(Batch),
    /// A trace stored before a restart, as replay found it: see
    /// [`Shard::restore`].
    Restore {
        trace_id: TraceId,
        revision: u32,
        spans: usize,
    },
}

/// Spans for one shard (indexes into a request's span records, which the
/// shards of one request share) and where to send the verdicts.
pub struct Batch {
    pub request: Arc<Records>,
    pub spans: Vec<usize>,
    /// The log and segment the request is in: accepted spans' traces hold it.
    pub logged: Option<(Wal, u64)>,
    pub reply: oneshot::Sender<Vec<Push>>,
}

/// The receivers' side of the assembler. Cloning is cheap; the shards drain
/// and stop once every clone is dropped, or when the drain token passed to
/// [`spawn`] fires, whichever comes first.
#[derive(Clone)]
pub struct AssemblerHandle {
    senders: Arc<[mpsc::Sender<Command>]>,
    send_timeout: Duration,
}

impl AssemblerHandle {
    pub fn shards(&self) -> usize {
        self.senders.len()
    }

    /// Submits a request's spans (in write-ahead log segment `logged`, when
    /// the log is on); returns one verdict per span, in order.
    pub async fn submit(&self, request: Records, logged: Option<(&Wal, u64)>) -> Vec<Push> {
        self.submit_shared(Arc::new(request), logged).await
    }

    /// [`submit`](Self::submit) of spans the caller may submit again.
    pub async fn submit_shared(
        &self,
        request: Arc<Records>,
        logged: Option<(&Wal, u64)>,
    ) -> Vec<Push> {
        let n = self.senders.len();
        let total = request.len();
        let mut parts: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, s) in request.spans().iter().enumerate() {
            parts[shard_of(&s.trace_id, n)].push(i);
        }
        let mut verdicts = vec![Push::Full; total];
        let mut pending = Vec::new();
        for (shard, idx) in parts.into_iter().enumerate() {
            if idx.is_empty() {
                continue;
            }
            let (tx, rx) = oneshot::channel();
            let batch = Batch {
                request: request.clone(),
                spans: idx.clone(),
                logged: logged.map(|(wal, segment)| (wal.clone(), segment)),
                reply: tx,
            };
            let sent = tokio::time::timeout(
                self.send_timeout,
                self.senders[shard].send(Command::Push(batch)),
            )
            .await;
            if matches!(sent, Ok(Ok(()))) {
                pending.push((idx, rx));
            }
            // A full queue or a stopped shard: those spans stay `Full` (retryable).
        }
        for (idx, rx) in pending {
            if let Ok(got) = rx.await {
                for (i, v) in idx.into_iter().zip(got) {
                    verdicts[i] = v;
                }
            }
        }
        verdicts
    }

    /// Restores a trace stored before a restart (replay), ahead of its spans.
    pub async fn restore(&self, trace_id: TraceId, revision: u32, spans: usize) {
        let shard = shard_of(&trace_id, self.senders.len());
        let command = Command::Restore {
            trace_id,
            revision,
            spans,
        };
        if let Some(tx) = self.senders.get(shard) {
            // A stopped shard: shutting down; the log keeps the trace.
            let _ = tx.send(command).await;
        }
    }
}

/// Evaluated traces a shard forgets per batch while the log is past half full.
const EVICT_UNDER_PRESSURE: usize = 8;

/// Due traces a shard hands over per turn when the evaluation queue has
/// room, before it looks at its queue of spans again.
const EMIT_PER_TURN: usize = 64;

/// Starts one task per shard; returns the handle and the task handles.
/// When `drain` fires, each shard closes its queue (a later submit is
/// refused as full, so its sender retries), takes what was already queued,
/// answers it, and drains: a request that never finishes arriving cannot
/// hold the drain, as a live handle in its task would.
pub fn spawn(
    shards: Vec<Shard>,
    queue_capacity: NonZeroUsize,
    send_timeout: Duration,
    // The evaluation queue, and the backlog its traces count in.
    (ready_tx, backlog): (mpsc::Sender<Ready>, Arc<Backlog>),
    pending: MarkPending,
    metrics: Arc<Metrics>,
    drain: CancellationToken,
) -> (AssemblerHandle, Vec<tokio::task::JoinHandle<()>>) {
    let mut senders = Vec::with_capacity(shards.len());
    let mut tasks = Vec::with_capacity(shards.len());
    for (i, shard) in shards.into_iter().enumerate() {
        let (tx, rx) = mpsc::channel(queue_capacity.get());
        senders.push(tx);
        tasks.push(tokio::spawn(run_shard(
            i,
            shard,
            rx,
            (ready_tx.clone(), backlog.clone()),
            pending.clone(),
            metrics.clone(),
            drain.clone(),
        )));
    }
    (
        AssemblerHandle {
            senders: senders.into(),
            send_timeout,
        },
        tasks,
    )
}

/// Drives one shard until its queue closes, then drains it.
///
/// Spans and due traces take turns: the shard hands due traces to
/// evaluation only while its queue has room, and takes requests' spans in
/// between, so a full evaluation queue never holds the receivers (the
/// receivers' admission holds them instead, by the evaluation backlog).
async fn run_shard(
    index: usize,
    mut shard: Shard,
    mut rx: mpsc::Receiver<Command>,
    (out, backlog): (mpsc::Sender<Ready>, Arc<Backlog>),
    pending: MarkPending,
    metrics: Arc<Metrics>,
    drain: CancellationToken,
) {
    let label = ShardLabel {
        shard: index.to_string(),
    };
    let mut seen = Counts::default();
    let mut new_traces = Vec::new();
    let mut closed = false;
    // Some trace may be due: wait for room in the evaluation queue, not
    // for the timer. Cleared when none is.
    let mut due = false;
    // Room waited for at once, when the queue is short of it: this task is
    // woken once per `room` traces evaluated, not once per trace. At most
    // half the queue, so evaluation always has the other half queued.
    let room = EMIT_PER_TURN.min((out.max_capacity() / 2).max(1));
    // The wait outlives the turns that spans take: the slots it has
    // gathered stay with it, and it keeps its place among the shards'.
    let mut room_wait = None;
    loop {
        let deadline = if due {
            None
        } else {
            shard.next_deadline().map(Instant::from_std)
        };
        if due && room_wait.is_none() {
            room_wait = Some(Box::pin(out.reserve_many(room)));
        }
        tokio::select! {
            () = drain.cancelled(), if !closed => {
                // What is queued stays and is answered below; nothing more comes.
                rx.close();
                closed = true;
            }
            command = rx.recv() => {
                let batch = match command {
                    None => break,
                    Some(Command::Push(batch)) => batch,
                    Some(Command::Restore { trace_id, revision, spans }) => {
                        shard.restore(trace_id, revision, spans, Instant::now().into_std());
                        continue;
                    }
                };
                let hand_over = |shard: &mut Shard| hand_over_leaving(shard, &out, &backlog);
                push_batch(&mut shard, batch, &mut new_traces, &*pending, hand_over);
            }
            permits = async {
                match room_wait.as_mut() {
                    Some(wait) => wait.await,
                    None => std::future::pending().await,
                }
            }, if room_wait.is_some() => {
                room_wait = None;
                let Ok(mut permits) = permits else { return };
                // One `now` for the turn: it ends with the traces due at its start.
                let now = Instant::now().into_std();
                for _ in 0..EMIT_PER_TURN {
                    let permit = match permits.next().map(Ok).unwrap_or_else(|| out.try_reserve()) {
                        Ok(permit) => permit,
                        // Full: the next turn waits for room (beside the spans).
                        Err(mpsc::error::TrySendError::Full(())) => break,
                        Err(mpsc::error::TrySendError::Closed(())) => return,
                    };
                    let Some(mut ready) = shard.expire_next(now) else {
                        due = false;
                        break;
                    };
                    ready.ticket = backlog.ticket(ready.spans.len());
                    permit.send(ready);
                }
            }
            () = sleep_until(deadline), if !due => due = true,
        }
        metrics
            .assembler_queue_depth
            .get_or_create(&label)
            .set(rx.len() as i64);
        let (spans, traces) = shard.rooted();
        backlog.publish(index, spans, traces);
        publish(&shard, &label, &mut seen, &metrics);
    }
    // The slots a pending wait holds go back before the drain waits for some.
    drop(room_wait);
    'drain: {
        for id in shard.held_ids() {
            // Decoded only once the queue has room for it.
            let Ok(permit) = out.reserve().await else {
                break 'drain;
            };
            if let Some(mut ready) = shard.drain_one(id) {
                ready.ticket = backlog.ticket(ready.spans.len());
                permit.send(ready);
            }
        }
    }
    let (spans, traces) = shard.rooted();
    backlog.publish(index, spans, traces);
    publish(&shard, &label, &mut seen, &metrics);
}

/// Hands the trace timed out early first to evaluation if its queue has
/// room now: a span waiting for that room is then taken at once.
fn hand_over_leaving(shard: &mut Shard, out: &mpsc::Sender<Ready>, backlog: &Arc<Backlog>) -> bool {
    if shard.leaving() == 0 {
        return false;
    }
    let Ok(permit) = out.try_reserve() else {
        return false;
    };
    let Some(mut ready) = shard.take_leaving(Instant::now().into_std()) else {
        return false;
    };
    ready.ticket = backlog.ticket(ready.spans.len());
    permit.send(ready);
    true
}

/// Takes one request's spans for this shard and answers with the verdicts.
/// A span refused for room while traces timed out early wait for
/// evaluation is pushed again after `hand_over` passes one on, for as long
/// as the evaluation queue takes them.
fn push_batch(
    shard: &mut Shard,
    batch: Batch,
    new_traces: &mut Vec<TraceId>,
    mark_pending: &dyn Fn(&[TraceId], std::time::Instant),
    mut hand_over: impl FnMut(&mut Shard) -> bool,
) {
    let now = Instant::now().into_std();
    let mut verdicts = Vec::with_capacity(batch.spans.len());
    new_traces.clear();
    let request = &batch.request;
    let following = runs(request, &batch.spans);
    for (&i, run) in batch.spans.iter().zip(following) {
        let Some(trace_id) = request.spans().get(i).map(|s| s.trace_id) else {
            continue;
        };
        let known = shard.contains(&trace_id);
        let mut v = shard.push_record(request, i, run, now);
        while v == Push::Full && hand_over(shard) {
            v = shard.push_record(request, i, run, now);
        }
        if v == Push::Accepted {
            if !known {
                new_traces.push(trace_id);
            }
            if let Some((wal, segment)) = &batch.logged {
                shard.hold(&trace_id, wal, *segment);
            }
        }
        if run.spans == 0 {
            shard.end_run(&trace_id);
        }
        verdicts.push(v);
    }
    // One call (one store lock) per batch, not per trace.
    mark_pending(new_traces, now);
    // A log past half full: the evaluated traces kept longest stop waiting
    // for late spans, so their segments can go. A few a batch: segments are
    // deleted a moment later, by the log's thread, and the log's size lags
    // behind.
    if let Some((wal, _)) = &batch.logged
        && wal.under_pressure()
    {
        for _ in 0..EVICT_UNDER_PRESSURE {
            if !shard.evict_emitted() {
                break;
            }
        }
    }
    // The receiver may have given up (timeout): nothing to do then.
    let _ = batch.reply.send(verdicts);
}

/// For each of the spans `idx` names, the run of spans of the same trace
/// that follow it in `idx` without a break: how many, and their bytes.
pub(super) fn runs(p: &Records, idx: &[usize]) -> Vec<Run> {
    let trace = |k: usize| p.spans().get(idx[k]).map(|s| s.trace_id);
    let mut out = vec![Run::default(); idx.len()];
    for k in (0..idx.len().saturating_sub(1)).rev() {
        if trace(k) == trace(k + 1) {
            out[k] = Run {
                spans: out[k + 1].spans + 1,
                bytes: out[k + 1].bytes + p.record_size(idx[k + 1]),
            };
        }
    }
    out
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Moves the shard's counters and gauges into the metrics.
fn publish(shard: &Shard, label: &ShardLabel, seen: &mut Counts, metrics: &Metrics) {
    let c = &shard.counts;
    for (outcome, now, before) in [
        (TraceOutcome::Completed, c.completed, seen.completed),
        (TraceOutcome::TimedOut, c.timed_out, seen.timed_out),
        (
            TraceOutcome::TimedOutDropped,
            c.timed_out_dropped,
            seen.timed_out_dropped,
        ),
        (TraceOutcome::Revised, c.revised, seen.revised),
        (
            TraceOutcome::EvictedAfterEvaluation,
            c.evicted_emitted,
            seen.evicted_emitted,
        ),
        (TraceOutcome::EvictedIdle, c.evicted_idle, seen.evicted_idle),
        (
            TraceOutcome::DroppedCorrupt,
            c.corrupt_dropped,
            seen.corrupt_dropped,
        ),
    ] {
        metrics.trace_outcome(outcome, now - before);
    }
    *seen = c.clone();
    for (gauge, value) in [
        (&metrics.buffered_traces, shard.traces()),
        (&metrics.buffered_bytes, shard.bytes()),
        (&metrics.buffered_spans, shard.spans()),
        (&metrics.buffered_encoded_bytes, shard.encoded_bytes()),
    ] {
        gauge.get_or_create(label).set(value as i64);
    }
}

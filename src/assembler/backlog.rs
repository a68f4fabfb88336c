//! The evaluation backlog: spans (and traces) the assembler has accepted
//! that evaluation will take soon and has not finished. The receivers'
//! admission (`receiver/admission.rs`) reads it, so intake follows
//! the rate evaluation drains it instead of the last free slot of a queue.
//!
//! Two parts: spans of open traces due soon (their root has arrived, so
//! they are due within the grace period, or they were timed out early to
//! make room, so they are due now), which each shard publishes after every
//! step, and traces handed to evaluation, each carrying a [`Ticket`] that
//! gives its spans back when dropped (evaluated, or dropped at shutdown).
//! Other rootless traces are not counted: when their root comes, or
//! whether it does, is unknown, and the assembler's own bounds cap them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Notify;

/// Shared by the shards, the evaluation workers and the receivers.
#[derive(Debug)]
pub struct Backlog {
    /// Per shard: spans and traces of open traces with their root.
    shards: Box<[(AtomicU64, AtomicU64)]>,
    /// Handed to evaluation and not yet finished.
    evaluating_spans: AtomicU64,
    evaluating_traces: AtomicU64,
    /// Spans whose evaluation finished, since start (the drain rate's source).
    evaluated_spans: AtomicU64,
    /// [`Backlog::drained`] wakes once `evaluated_spans` reaches this
    /// (`u64::MAX`: nobody waits): one wake-up per admission, not per trace.
    wake_at: AtomicU64,
    drained: Notify,
}

/// The backlog at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Level {
    pub spans: u64,
    pub traces: u64,
}

impl Backlog {
    pub fn new(shards: usize) -> Arc<Backlog> {
        Arc::new(Backlog {
            shards: (0..shards.max(1))
                .map(|_| (AtomicU64::new(0), AtomicU64::new(0)))
                .collect(),
            evaluating_spans: AtomicU64::new(0),
            evaluating_traces: AtomicU64::new(0),
            evaluated_spans: AtomicU64::new(0),
            wake_at: AtomicU64::new(u64::MAX),
            drained: Notify::new(),
        })
    }

    /// A shard's rooted open traces, as it counts them now.
    pub fn publish(&self, shard: usize, spans: usize, traces: usize) {
        if let Some((s, t)) = self.shards.get(shard) {
            s.store(spans as u64, Ordering::Relaxed);
            t.store(traces as u64, Ordering::Relaxed);
        }
    }

    /// Counts a trace of `spans` spans handed to evaluation until the
    /// ticket is dropped.
    pub fn ticket(self: &Arc<Self>, spans: usize) -> Ticket {
        let spans = spans as u64;
        self.evaluating_spans.fetch_add(spans, Ordering::Relaxed);
        self.evaluating_traces.fetch_add(1, Ordering::Relaxed);
        Ticket {
            backlog: Some(self.clone()),
            spans,
        }
    }

    pub fn level(&self) -> Level {
        let mut level = Level {
            spans: self.evaluating_spans.load(Ordering::Relaxed),
            traces: self.evaluating_traces.load(Ordering::Relaxed),
        };
        for (s, t) in &self.shards[..] {
            level.spans = level.spans.saturating_add(s.load(Ordering::Relaxed));
            level.traces = level.traces.saturating_add(t.load(Ordering::Relaxed));
        }
        level
    }

    /// Spans evaluated since start.
    pub fn evaluated_spans(&self) -> u64 {
        self.evaluated_spans.load(Ordering::Relaxed)
    }

    /// Resolves once `evaluated_spans` reaches `at`, or at [`wake`](Self::wake).
    /// A count reached before `at` is stored is seen at the next trace
    /// evaluated, or the next `wake`.
    pub fn drained(&self, at: u64) -> tokio::sync::futures::Notified<'_> {
        let notified = self.drained.notified();
        self.wake_at.store(at, Ordering::Relaxed);
        notified
    }

    /// Wakes whoever waits on [`drained`](Self::drained) now (the limit moved).
    pub fn wake(&self) {
        self.drained.notify_waiters();
    }
}

/// A trace in evaluation; gives its spans back to the [`Backlog`] when dropped.
#[derive(Debug, Default)]
pub struct Ticket {
    backlog: Option<Arc<Backlog>>,
    spans: u64,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(b) = self.backlog.take() {
            // Never below zero: each ticket takes back exactly what it added.
            b.evaluating_spans.fetch_sub(self.spans, Ordering::Relaxed);
            b.evaluating_traces.fetch_sub(1, Ordering::Relaxed);
            let done = b.evaluated_spans.fetch_add(self.spans, Ordering::Relaxed) + self.spans;
            if done >= b.wake_at.load(Ordering::Relaxed) {
                b.wake_at.store(u64::MAX, Ordering::Relaxed);
                b.drained.notify_waiters();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickets_and_shards_add_up() {
        let b = Backlog::new(2);
        b.publish(0, 10, 1);
        b.publish(1, 5, 2);
        b.publish(7, 100, 100); // no such shard: ignored
        let t = b.ticket(4);
        assert_eq!(
            b.level(),
            Level {
                spans: 19,
                traces: 4
            }
        );
        drop(t);
        assert_eq!(
            b.level(),
            Level {
                spans: 15,
                traces: 3
            }
        );
        assert_eq!(b.evaluated_spans(), 4);
        drop(Ticket::default());
        assert_eq!(b.evaluated_spans(), 4);
    }
}

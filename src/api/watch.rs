//! Watching results as the store takes them: the subscription both APIs
//! share (gRPC `WatchScores`, HTTP server-sent events at `GET /v1/watch`).
//!
//! Watching never slows the pipeline. The store publishes each record on a
//! broadcast channel and returns; one small task per subscriber filters and
//! forwards records into that subscriber's bounded buffer with `try_send`.
//! A subscriber whose buffer is full, or whose task fell behind the
//! broadcast (`Lagged`), is ended ([`Watched::TooSlow`]) and counted; it
//! reconnects and catches up with a listing.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use crate::span::TraceId;
use crate::store::{StoredResult, TraceStatus};

/// The message that ends a subscriber that fell behind.
pub const TOO_SLOW: &str = "subscriber too slow; reconnect";

/// What a subscriber receives.
#[derive(Debug)]
pub enum Watched {
    Record(Arc<StoredResult>),
    /// The last item: the subscriber fell behind (counted).
    TooSlow,
    /// The last item: the server is draining.
    ShuttingDown,
}

/// Which stored records a subscriber wants: every set filter must match.
#[derive(Debug, Default, Clone)]
pub struct WatchFilter {
    pub status: Option<TraceStatus>,
    pub evaluator: Option<String>,
    pub trace_id: Option<TraceId>,
    /// Only records with some score (of `evaluator`, if set) at or below
    /// this, as `GET /traces?max_score=` lists them.
    pub max_score: Option<f64>,
}

impl WatchFilter {
    pub fn matches(&self, r: &StoredResult) -> bool {
        if self.trace_id.is_some_and(|id| id != r.trace_id)
            || self.status.is_some_and(|s| s != r.status)
        {
            return false;
        }
        let mut scores = r
            .scores
            .iter()
            .filter(|s| {
                self.evaluator
                    .as_deref()
                    .is_none_or(|ev| *s.evaluator_id == *ev)
            })
            .peekable();
        if self.evaluator.is_some() && scores.peek().is_none() {
            return false;
        }
        self.max_score
            .is_none_or(|max| scores.any(|s| s.outcome.score.is_some_and(|v| v <= max)))
    }
}

/// Subscribers of both APIs: at most `max` at once, each with `buffer`
/// records of slack.
#[derive(Debug, Clone)]
pub struct Watchers {
    buffer: usize,
    max: usize,
    count: Arc<AtomicUsize>,
    shutdown: CancellationToken,
}

impl Watchers {
    /// `buffer` (at least 1) bounds each subscriber's backlog; `shutdown`
    /// ends every subscription (the server drains).
    pub fn new(buffer: usize, max: usize, shutdown: CancellationToken) -> Watchers {
        Watchers {
            buffer: buffer.max(1),
            max,
            count: Arc::new(AtomicUsize::new(0)),
            shutdown,
        }
    }

    /// A subscription to `updates` (subscribe before answering, so nothing
    /// stored after the answer is missed), or `None` when `max` are open.
    /// `too_slow` is called when the subscriber is dropped for falling behind.
    pub fn subscribe(
        &self,
        updates: broadcast::Receiver<Arc<StoredResult>>,
        filter: WatchFilter,
        too_slow: impl Fn() + Send + 'static,
    ) -> Option<mpsc::Receiver<Watched>> {
        let slot = Slot::take(&self.count, self.max)?;
        // One slot more than the buffer, so the closing item always fits.
        let (tx, rx) = mpsc::channel(self.buffer + 1);
        let forwarder = Forwarder {
            filter,
            tx,
            shutdown: self.shutdown.clone(),
            _slot: slot,
        };
        tokio::spawn(forwarder.run(updates, too_slow));
        Some(rx)
    }

    /// Subscriptions open now.
    pub fn open(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }
}

/// A place among the `max` concurrent subscriptions, given back on drop.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(count: &Arc<AtomicUsize>, max: usize) -> Option<Slot> {
        count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(count.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One subscriber's task: store broadcast → filter → its bounded buffer.
struct Forwarder {
    filter: WatchFilter,
    /// Capacity `buffer + 1`: records may use all but the last slot, which
    /// is kept for the item that ends the subscription.
    tx: mpsc::Sender<Watched>,
    shutdown: CancellationToken,
    _slot: Slot,
}

impl Forwarder {
    async fn run(
        self,
        mut updates: broadcast::Receiver<Arc<StoredResult>>,
        too_slow: impl Fn() + Send,
    ) {
        loop {
            let received = tokio::select! {
                biased;
                () = self.tx.closed() => return, // the client went away
                () = self.shutdown.cancelled() => return self.end(Watched::ShuttingDown),
                received = updates.recv() => received,
            };
            match received {
                Ok(record) if self.filter.matches(&record) => {
                    // The only sender, so capacity cannot shrink under us.
                    if self.tx.capacity() <= 1 {
                        return self.slow("buffer full", &too_slow);
                    }
                    if self.tx.try_send(Watched::Record(record)).is_err() {
                        return; // closed
                    }
                }
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    return self.slow("lagged", &too_slow);
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }

    fn slow(&self, why: &'static str, too_slow: &impl Fn()) {
        too_slow();
        tracing::warn!(why, "dropped a watch subscriber that fell behind");
        self.end(Watched::TooSlow);
    }

    fn end(&self, last: Watched) {
        // Fits by construction (the reserved slot); fails only if the client left.
        let _ = self.tx.try_send(last);
    }
}

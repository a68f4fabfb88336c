//! The in-memory [`ResultStore`]: one map behind a mutex, plus an insertion
//! order queue for eviction (oldest first, by count, bytes and age).
//!
//! The lock is held for a map operation only, never across an await; puts
//! happen once per evaluated trace, so it is not on the per-span path.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::{broadcast, oneshot};

use super::{ListFilter, OnStored, ResultOrWait, ResultStore, TraceRecord, TraceStatus};
use crate::span::TraceId;

struct Entry {
    record: Arc<TraceRecord>,
    stored_at: Instant,
    stored_wall: SystemTime,
    /// Matches the entry's position in `order` (stale queue entries are skipped).
    seq: u64,
    /// [`TraceRecord::approx_bytes`], counted in [`Inner::bytes`].
    bytes: usize,
}

#[derive(Default)]
struct Inner {
    /// Long polls waiting for a trace's result, woken by that trace only.
    waiters: HashMap<TraceId, Vec<oneshot::Sender<Arc<TraceRecord>>>, foldhash::fast::RandomState>,
    /// Waiters registered since the last sweep of abandoned ones, and how
    /// many traces had waiters after it.
    waiters_added: usize,
    waiters_swept_to: usize,
    /// Keyed by client-chosen IDs: foldhash, randomly seeded per process.
    map: HashMap<TraceId, Entry, foldhash::fast::RandomState>,
    order: VecDeque<(u64, TraceId)>,
    seq: u64,
    /// The records' bytes (estimated), bounded by `max_bytes`.
    bytes: usize,
    /// Records evicted (by count or age), dropped outside the lock by the
    /// next [`put`](ResultStore::put) or `evict_expired` (see [`GRAVEYARD_MAX`]).
    graveyard: Vec<Arc<TraceRecord>>,
}

/// Evicted records waiting for a `put` to drop them. Most evictions happen
/// when the assembler marks new traces pending, on an I/O thread; a record
/// is a few dozen allocations made by an evaluation worker, and freeing them
/// on an I/O thread sends every one back through the allocator's shared
/// arena (about 7% of the CPU at full load, measured). The next `put`, on an
/// evaluation worker (the one that allocated them when there is one worker,
/// as on one CPU), frees them instead, into the cache its next records come
/// from. Past `max_traces / 16` of them, at most this many (evaluation
/// stalled, or a small store whose records must not be doubled), the marking
/// thread drops them itself. At full load a few hundred wait at most
/// (measured). The age sweep (once a second) frees what it evicts itself,
/// and a revision replacing a record frees the old one under the lock (rare).
const GRAVEYARD_MAX: usize = 4096;

pub struct MemoryStore {
    inner: Mutex<Inner>,
    max_traces: usize,
    max_bytes: usize,
    on_stored: std::sync::OnceLock<OnStored>,
    /// See [`GRAVEYARD_MAX`].
    graveyard_max: usize,
    retention: Duration,
    updates: broadcast::Sender<Arc<TraceRecord>>,
    evicted: std::sync::atomic::AtomicU64,
}

impl MemoryStore {
    /// `subscriber_buffer` bounds each subscriber's backlog; a slower one lags.
    pub fn new(max_traces: usize, retention: Duration, subscriber_buffer: usize) -> MemoryStore {
        let (updates, _) = broadcast::channel(subscriber_buffer.max(1));
        MemoryStore {
            inner: Mutex::new(Inner::default()),
            max_traces: max_traces.max(1),
            max_bytes: usize::MAX,
            on_stored: std::sync::OnceLock::new(),
            graveyard_max: (max_traces / 16).min(GRAVEYARD_MAX),
            retention,
            updates,
            evicted: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Bounds the records' bytes too ([`TraceRecord::approx_bytes`]): the
    /// oldest are evicted beyond it.
    pub fn with_max_bytes(mut self, max_bytes: usize) -> MemoryStore {
        self.max_bytes = max_bytes.max(1);
        self
    }

    /// [`ResultStore::put`] of a record already shared (a database's
    /// writer, after its commit); the record stored, or `None` when a newer
    /// revision was kept. The [`OnStored`] hook is the caller's.
    pub(crate) fn put_shared(
        &self,
        record: Arc<TraceRecord>,
        now: Instant,
    ) -> Option<Arc<TraceRecord>> {
        let (stored, dead) = {
            let mut inner = self.lock();
            let stored = self.put_locked(&mut inner, record, now);
            (stored, std::mem::take(&mut inner.graveyard))
        };
        drop(dead);
        let stored = stored?;
        if self.updates.receiver_count() > 0 {
            let _ = self.updates.send(stored.clone());
        }
        Some(stored)
    }

    /// Whether anyone here would see a record of this trace now: a long
    /// poll waiting for it, or a watcher (subscriber) of every record.
    pub(crate) fn is_awaited(&self, trace_id: &TraceId) -> bool {
        self.updates.receiver_count() > 0 || self.lock().waiters.contains_key(trace_id)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the map inconsistent
        // (every operation is a single insert/remove), so poisoning is ignored.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stores a record unless a newer revision is kept; the caller publishes it.
    fn put_locked(
        &self,
        inner: &mut Inner,
        record: Arc<TraceRecord>,
        now: Instant,
    ) -> Option<Arc<TraceRecord>> {
        // An older revision never replaces a newer one.
        if inner
            .map
            .get(&record.trace_id)
            .is_some_and(|e| e.record.revision > record.revision)
        {
            return None;
        }
        if record.status != TraceStatus::Pending
            && let Some(waiters) = inner.waiters.remove(&record.trace_id)
        {
            for w in waiters {
                // A waiter that gave up has dropped its receiver: nothing to do.
                let _ = w.send(record.clone());
            }
        }
        self.insert(inner, record.clone(), now);
        Some(record)
    }

    fn insert(&self, inner: &mut Inner, record: Arc<TraceRecord>, now: Instant) {
        inner.seq += 1;
        let seq = inner.seq;
        let id = record.trace_id;
        let bytes = record.approx_bytes();
        inner.order.push_back((seq, id));
        inner.bytes += bytes;
        let replaced = inner.map.insert(
            id,
            Entry {
                record,
                stored_at: now,
                stored_wall: SystemTime::now(),
                seq,
                bytes,
            },
        );
        if let Some(old) = replaced {
            inner.bytes -= old.bytes;
        }
        let mut evicted = 0;
        while inner.map.len() > self.max_traces
            || (inner.bytes > self.max_bytes && inner.map.len() > 1)
        {
            let Some((s, old)) = inner.order.pop_front() else {
                break;
            };
            if inner.map.get(&old).is_some_and(|e| e.seq == s) {
                if let Some(e) = inner.map.remove(&old) {
                    inner.bytes -= e.bytes;
                    inner.graveyard.push(e.record);
                }
                evicted += 1;
            }
        }
        // Every evaluated trace leaves a stale queue entry behind (its
        // `pending` one). Dropping them when they reach the front keeps the
        // queue within about twice the map at O(1) per insert; a full sweep
        // (O(n), under the lock) is only a safety valve for traces revised
        // over and over, so it never stalls the steady state.
        while let Some(&(s, id)) = inner.order.front() {
            if inner.map.get(&id).is_some_and(|e| e.seq == s) {
                break;
            }
            inner.order.pop_front();
        }
        if inner.order.len() > inner.map.len() * 4 + 1024 {
            let Inner { map, order, .. } = inner;
            order.retain(|(s, id)| map.get(id).is_some_and(|e| e.seq == *s));
        }
        self.evicted
            .fetch_add(evicted, std::sync::atomic::Ordering::Relaxed);
    }
}

impl ResultStore for MemoryStore {
    fn put(&self, record: TraceRecord, now: Instant) -> Option<Arc<TraceRecord>> {
        let stored = self.put_shared(Arc::new(record), now)?;
        if let Some(hook) = self.on_stored.get() {
            hook(stored.clone());
        }
        Some(stored)
    }

    fn set_on_stored(&self, hook: OnStored) {
        let _ = self.on_stored.set(hook);
    }

    fn mark_pending_many(&self, trace_ids: &[TraceId], now: Instant) {
        let dead = {
            let mut inner = self.lock();
            for id in trace_ids {
                if !inner.map.contains_key(id) {
                    self.insert(&mut inner, Arc::new(TraceRecord::pending(*id)), now);
                }
            }
            if inner.graveyard.len() > self.graveyard_max {
                std::mem::take(&mut inner.graveyard)
            } else {
                Vec::new()
            }
        };
        drop(dead);
    }

    fn get(&self, trace_id: &TraceId) -> Option<Arc<TraceRecord>> {
        self.lock().map.get(trace_id).map(|e| e.record.clone())
    }

    fn list(&self, f: &ListFilter) -> Vec<Arc<TraceRecord>> {
        let inner = self.lock();
        let mut out = Vec::new();
        for (seq, id) in inner.order.iter().rev() {
            if out.len() >= f.limit {
                break;
            }
            let Some(e) = inner.map.get(id).filter(|e| e.seq == *seq) else {
                continue;
            };
            if f.since.is_some_and(|since| e.stored_wall < since) {
                break;
            }
            let r = &e.record;
            if f.status.is_some_and(|s| s != r.status) {
                continue;
            }
            let scores = r.scores.iter().filter(|s| {
                f.evaluator
                    .as_ref()
                    .is_none_or(|ev| **ev == *s.evaluator_id)
            });
            let mut scores = scores.peekable();
            if f.evaluator.is_some() && scores.peek().is_none() {
                continue;
            }
            if let Some(max) = f.max_score
                && !scores.any(|s| s.outcome.score.is_some_and(|v| v <= max))
            {
                continue;
            }
            out.push(r.clone());
        }
        out
    }

    fn subscribe(&self) -> broadcast::Receiver<Arc<TraceRecord>> {
        self.updates.subscribe()
    }

    fn result_or_wait(&self, trace_id: TraceId) -> ResultOrWait {
        let mut inner = self.lock();
        if let Some(e) = inner.map.get(&trace_id)
            && e.record.status != TraceStatus::Pending
        {
            return ResultOrWait::Ready(e.record.clone());
        }
        // Waiters whose poll ended (timeout, client gone) are swept once as
        // many have been added since the last sweep as were left by it (and
        // at least 1,024): abandoned waits for traces that never come stay
        // bounded, at O(1) amortised cost.
        inner.waiters_added += 1;
        if inner.waiters_added > inner.waiters_swept_to.max(1024) {
            inner.waiters.retain(|_, ws| {
                ws.retain(|w| !w.is_closed());
                !ws.is_empty()
            });
            inner.waiters_added = 0;
            inner.waiters_swept_to = inner.waiters.len();
        }
        let (tx, rx) = oneshot::channel();
        inner.waiters.entry(trace_id).or_default().push(tx);
        ResultOrWait::Wait(rx)
    }

    fn evict_expired(&self, now: Instant) -> usize {
        let mut inner = self.lock();
        let mut n = 0;
        while let Some(&(seq, id)) = inner.order.front() {
            match inner.map.get(&id) {
                Some(e) if e.seq == seq => {
                    if now.saturating_duration_since(e.stored_at) < self.retention {
                        break;
                    }
                    if let Some(e) = inner.map.remove(&id) {
                        inner.bytes -= e.bytes;
                        inner.graveyard.push(e.record);
                    }
                    n += 1;
                }
                _ => {}
            }
            inner.order.pop_front();
        }
        // Dropped outside the lock.
        let dead = std::mem::take(&mut inner.graveyard);
        drop(inner);
        drop(dead);
        self.evicted
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        n
    }

    fn len(&self) -> usize {
        self.lock().map.len()
    }

    fn evicted(&self) -> u64 {
        self.evicted.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl TraceStatus {
    pub fn parse(s: &str) -> Option<TraceStatus> {
        match s {
            "pending" => Some(TraceStatus::Pending),
            "evaluated" => Some(TraceStatus::Evaluated),
            "unbound" => Some(TraceStatus::Unbound),
            "timed_out" => Some(TraceStatus::TimedOut),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: u8, revision: u32) -> TraceRecord {
        let mut r = TraceRecord::pending(TraceId([id; 16]));
        r.revision = revision;
        r.status = TraceStatus::Evaluated;
        r
    }

    #[test]
    fn a_waiter_is_woken_by_its_own_trace_only_and_abandoned_ones_are_swept() {
        let s = MemoryStore::new(100, Duration::from_secs(60), 8);
        let t = Instant::now();
        let ResultOrWait::Wait(mut rx) = s.result_or_wait(TraceId([1; 16])) else {
            panic!("nothing stored yet");
        };
        s.put(rec(2, 1), t);
        s.mark_pending(TraceId([1; 16]), t);
        assert!(
            rx.try_recv().is_err(),
            "another trace and `pending` do not wake it"
        );
        s.put(rec(1, 1), t);
        assert_eq!(rx.try_recv().unwrap().trace_id, TraceId([1; 16]));
        assert!(matches!(
            s.result_or_wait(TraceId([1; 16])),
            ResultOrWait::Ready(r) if r.revision == 1
        ));
        // Waits given up on for traces that never come do not pile up.
        for i in 0..5000u32 {
            let mut id = [7u8; 16];
            id[..4].copy_from_slice(&i.to_le_bytes());
            drop(s.result_or_wait(TraceId(id)));
        }
        assert!(s.lock().waiters.len() <= 2048, "{}", s.lock().waiters.len());
    }

    #[test]
    fn bounded_by_count_oldest_first() {
        let s = MemoryStore::new(2, Duration::from_secs(60), 8);
        let t = Instant::now();
        s.put(rec(1, 1), t);
        s.put(rec(2, 1), t);
        s.put(rec(1, 2), t); // re-put refreshes trace 1's position
        s.put(rec(3, 1), t);
        assert_eq!(s.len(), 2);
        assert!(s.get(&TraceId([2; 16])).is_none(), "the oldest is evicted");
        assert_eq!(s.get(&TraceId([1; 16])).unwrap().revision, 2);
        assert_eq!(s.evicted(), 1);
    }

    #[test]
    fn bounded_by_age_and_older_revisions_never_win() {
        let s = MemoryStore::new(10, Duration::from_secs(60), 8);
        let t = Instant::now();
        s.put(rec(1, 2), t);
        s.put(rec(1, 1), t);
        assert_eq!(s.get(&TraceId([1; 16])).unwrap().revision, 2);
        s.mark_pending(TraceId([1; 16]), t);
        assert_eq!(
            s.get(&TraceId([1; 16])).unwrap().status,
            TraceStatus::Evaluated
        );
        s.put(rec(2, 1), t + Duration::from_secs(30));
        assert_eq!(s.evict_expired(t + Duration::from_secs(61)), 1);
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn list_is_newest_first_and_filtered() {
        let s = MemoryStore::new(10, Duration::from_secs(60), 8);
        let t = Instant::now();
        for i in 1..=4 {
            s.put(rec(i, 1), t);
        }
        s.mark_pending(TraceId([9; 16]), t);
        let all = s.list(&ListFilter {
            limit: 10,
            ..ListFilter::default()
        });
        assert_eq!(all[0].trace_id, TraceId([9; 16]));
        let evaluated = s.list(&ListFilter {
            status: Some(TraceStatus::Evaluated),
            limit: 2,
            ..ListFilter::default()
        });
        let ids: Vec<u8> = evaluated.iter().map(|r| r.trace_id.0[0]).collect();
        assert_eq!(ids, vec![4, 3]);
    }

    #[tokio::test]
    async fn subscribers_see_every_put() {
        let s = MemoryStore::new(10, Duration::from_secs(60), 8);
        let mut rx = s.subscribe();
        s.put(rec(7, 1), Instant::now());
        assert_eq!(rx.recv().await.unwrap().trace_id, TraceId([7; 16]));
    }

    #[test]
    fn records_evicted_by_marking_are_freed_by_the_next_put_and_never_pile_up() {
        let s = MemoryStore::new(32, Duration::from_secs(60), 8);
        let t = Instant::now();
        let first = Arc::downgrade(&s.put(rec(100, 1), t).unwrap());
        for i in 1..32 {
            s.put(rec(i, 1), t);
        }
        s.mark_pending(TraceId([200; 16]), t);
        assert!(s.get(&TraceId([100; 16])).is_none(), "evicted");
        assert!(first.upgrade().is_some(), "kept for the next put to free");
        s.put(rec(200, 1), t);
        assert!(first.upgrade().is_none(), "freed by the put");

        // Without puts, marking alone keeps at most GRAVEYARD_MAX records,
        // and a small store a sixteenth of its size.
        let small = MemoryStore::new(320, Duration::from_secs(60), 8);
        for i in 0..1000u32 {
            let mut id = [8u8; 16];
            id[..4].copy_from_slice(&i.to_le_bytes());
            small.mark_pending(TraceId(id), t);
            assert!(small.lock().graveyard.len() <= 20);
        }
        let s = MemoryStore::new(GRAVEYARD_MAX * 32, Duration::from_secs(60), 8);
        let ids: Vec<TraceId> = (0..35 * GRAVEYARD_MAX as u32)
            .map(|i| {
                let mut id = [9u8; 16];
                id[..4].copy_from_slice(&i.to_le_bytes());
                TraceId(id)
            })
            .collect();
        for chunk in ids.chunks(100) {
            s.mark_pending_many(chunk, t);
            assert!(s.lock().graveyard.len() <= GRAVEYARD_MAX);
        }
        assert_eq!(s.evicted(), ids.len() as u64 - 32 * GRAVEYARD_MAX as u64);
    }
}

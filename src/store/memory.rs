//! The in-memory [`ResultStore`]: one map behind a mutex, plus an insertion
//! order queue for eviction (oldest first, by count, bytes and age).
//!
//! The lock is held for a map operation only, never across an await; puts
//! happen once per evaluated trace, so it is not on the per-span path.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::{broadcast, oneshot};

use super::rows::unix_nanos;
use super::{ListFilter, Now, OnStored, ResultOrWait, ResultStore, StoredResult, TraceStatus};
use crate::span::TraceId;

struct Entry {
    record: Arc<StoredResult>,
    stored_at: Instant,
    /// Matches the entry's position in `order` (stale queue entries are skipped).
    seq: u64,
    /// [`StoredResult::approx_bytes`], counted in [`Inner::bytes`].
    bytes: usize,
}

/// A place in the insertion order: the entry's `seq` (stale when the
/// entry has a later one) and when it was stored.
#[derive(Clone, Copy)]
struct Slot {
    seq: u64,
    id: TraceId,
    /// Wall-clock nanoseconds since the Unix epoch, non-decreasing along
    /// the queue even when the clock steps back (as the databases'
    /// `stored_at`), so `since` and `until` are found by binary search
    /// instead of a walk of everything newer under the lock.
    wall: i64,
}

#[derive(Default)]
struct Inner {
    /// Long polls waiting for a trace's result, woken by that trace only.
    waiters: HashMap<TraceId, Vec<oneshot::Sender<Arc<StoredResult>>>, foldhash::fast::RandomState>,
    /// Waiters registered since the last sweep of abandoned ones, and how
    /// many traces had waiters after it.
    waiters_added: usize,
    waiters_swept_to: usize,
    /// Keyed by client-chosen IDs: foldhash, randomly seeded per process.
    map: HashMap<TraceId, Entry, foldhash::fast::RandomState>,
    order: VecDeque<Slot>,
    seq: u64,
    /// The last [`Slot::wall`] given: the next is never earlier.
    last_wall: i64,
    /// The records' bytes (estimated), bounded by `max_bytes`.
    bytes: usize,
    /// Records evicted (by count or age), dropped outside the lock by the
    /// next [`put`](ResultStore::put) or `evict_expired` (see [`GRAVEYARD_MAX`]).
    graveyard: Vec<Arc<StoredResult>>,
    /// Their bytes, as they were counted in `bytes`.
    graveyard_bytes: usize,
}

impl Inner {
    /// Removes `id`'s entry, its record left for the graveyard.
    fn evict(&mut self, id: &TraceId) {
        if let Some(e) = self.map.remove(id) {
            self.bytes -= e.bytes;
            self.graveyard_bytes += e.bytes;
            self.graveyard.push(e.record);
        }
    }

    /// The graveyard, to drop outside the lock.
    fn bury(&mut self) -> Vec<Arc<StoredResult>> {
        self.graveyard_bytes = 0;
        std::mem::take(&mut self.graveyard)
    }
}

/// What a record costs the store beyond [`StoredResult::approx_bytes`]: its
/// map entry, its places in the insertion order (a stale one besides its
/// own, typically: its `pending` marker's) and its `Arc`'s counts.
const ENTRY_OVERHEAD: usize = std::mem::size_of::<(TraceId, Entry)>()
    + 2 * std::mem::size_of::<Slot>()
    + 2 * std::mem::size_of::<usize>();

/// Evicted records waiting for the next `put` to drop them: most evictions
/// happen on an I/O thread (the assembler marking traces pending), and a
/// record is best freed on the evaluation worker that allocated it, into the
/// allocator cache its next records come from. Past `max_traces / 16` of
/// them, at most this many, or past a sixteenth of `max_bytes`, the marking
/// thread drops them itself; the age sweep and a replaced revision free
/// theirs at once.
const GRAVEYARD_MAX: usize = 4096;

pub struct MemoryStore {
    inner: Mutex<Inner>,
    max_traces: usize,
    max_bytes: usize,
    on_stored: std::sync::OnceLock<OnStored>,
    /// See [`GRAVEYARD_MAX`].
    graveyard_max: usize,
    retention: Duration,
    updates: broadcast::Sender<Arc<StoredResult>>,
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

    /// Bounds the records' bytes too ([`StoredResult::approx_bytes`]): the
    /// oldest are evicted beyond it.
    pub fn with_max_bytes(mut self, max_bytes: usize) -> MemoryStore {
        self.max_bytes = max_bytes.max(1);
        self
    }

    /// The store `store.*` configures (the backend's or, for a database,
    /// the cache in front of it).
    pub fn for_config(config: &super::StoreConfig) -> MemoryStore {
        let retention = Duration::from_secs(config.retention_secs.get());
        MemoryStore::new(config.max_traces.get(), retention, 1024)
            .with_max_bytes(config.max_bytes.get())
    }

    /// [`ResultStore::put`] of a record already shared (a database's
    /// writer, after its commit); the record stored, or `None` when a newer
    /// revision was kept. The [`OnStored`] hook is the caller's.
    pub(crate) fn put_shared(
        &self,
        record: Arc<StoredResult>,
        now: Instant,
    ) -> Option<Arc<StoredResult>> {
        let (stored, dead) = {
            let mut inner = self.lock();
            let stored = self.put_locked(&mut inner, record, now);
            (stored, inner.bury())
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
        super::lock(&self.inner)
    }

    /// Stores a record unless a newer revision is kept; the caller publishes it.
    fn put_locked(
        &self,
        inner: &mut Inner,
        record: Arc<StoredResult>,
        now: Instant,
    ) -> Option<Arc<StoredResult>> {
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

    fn insert(&self, inner: &mut Inner, record: Arc<StoredResult>, now: Instant) {
        inner.seq += 1;
        let seq = inner.seq;
        let id = record.trace_id;
        let bytes = record.approx_bytes() + ENTRY_OVERHEAD;
        let wall = unix_nanos(SystemTime::now()).max(inner.last_wall);
        inner.last_wall = wall;
        inner.order.push_back(Slot { seq, id, wall });
        inner.bytes += bytes;
        let replaced = inner.map.insert(
            id,
            Entry {
                record,
                stored_at: now,
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
            let Some(Slot {
                seq: s, id: old, ..
            }) = inner.order.pop_front()
            else {
                break;
            };
            if inner.map.get(&old).is_some_and(|e| e.seq == s) {
                inner.evict(&old);
                evicted += 1;
            }
        }
        // Every evaluated trace leaves a stale queue entry behind (its
        // `pending` one). Dropping them when they reach the front keeps the
        // queue within about twice the map at O(1) per insert; a full sweep
        // (O(n), under the lock) is only a safety valve for traces revised
        // over and over, so it never stalls the steady state.
        while let Some(&Slot { seq: s, id, .. }) = inner.order.front() {
            if inner.map.get(&id).is_some_and(|e| e.seq == s) {
                break;
            }
            inner.order.pop_front();
        }
        if inner.order.len() > inner.map.len() * 4 + 1024 {
            let Inner { map, order, .. } = inner;
            order.retain(|s| map.get(&s.id).is_some_and(|e| e.seq == s.seq));
        }
        self.evicted
            .fetch_add(evicted, std::sync::atomic::Ordering::Relaxed);
    }
}

impl ResultStore for MemoryStore {
    fn put(&self, record: StoredResult, now: Instant) -> Option<Arc<StoredResult>> {
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
                    self.insert(&mut inner, Arc::new(StoredResult::pending(*id)), now);
                }
            }
            if inner.graveyard.len() > self.graveyard_max
                || inner.graveyard_bytes > self.max_bytes / 16
            {
                inner.bury()
            } else {
                Vec::new()
            }
        };
        drop(dead);
    }

    fn get(&self, trace_id: &TraceId) -> Option<Arc<StoredResult>> {
        self.lock().map.get(trace_id).map(|e| e.record.clone())
    }

    fn get_now(&self, trace_id: &TraceId) -> Now<Option<Arc<StoredResult>>> {
        Now::Answered(self.get(trace_id))
    }

    fn result_or_wait_now(&self, trace_id: TraceId) -> Now<ResultOrWait> {
        Now::Answered(self.result_or_wait(trace_id))
    }

    fn list(&self, f: &ListFilter) -> Vec<Arc<StoredResult>> {
        let inner = self.lock();
        // The slots stored in [since, until), by binary search: a page far
        // back in time walks only its own slots.
        let order = &inner.order;
        let first_at = |t: SystemTime| {
            let t = unix_nanos(t);
            order.partition_point(|s| s.wall < t)
        };
        let from = f.since.map_or(0, first_at);
        let to = f.until.map_or(order.len(), first_at);
        let mut out = Vec::new();
        for slot in order.range(from..to.max(from)).rev() {
            if out.len() >= f.limit {
                break;
            }
            let Some(e) = inner.map.get(&slot.id).filter(|e| e.seq == slot.seq) else {
                continue;
            };
            if matches(&e.record, f) {
                out.push(e.record.clone());
            }
        }
        out
    }

    fn subscribe(&self) -> broadcast::Receiver<Arc<StoredResult>> {
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
        while let Some(&Slot { seq, id, .. }) = inner.order.front() {
            if let Some(e) = inner.map.get(&id)
                && e.seq == seq
            {
                if now.saturating_duration_since(e.stored_at) < self.retention {
                    break;
                }
                inner.evict(&id);
                n += 1;
            }
            inner.order.pop_front();
        }
        // Dropped outside the lock.
        let dead = inner.bury();
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

/// Whether the record passes the filter's conditions on the record itself
/// (all but `since`, `until` and `limit`).
fn matches(r: &StoredResult, f: &ListFilter) -> bool {
    if f.status.is_some_and(|s| s != r.status) {
        return false;
    }
    let root = r.root.as_ref();
    if f.service.is_some() && root.and_then(|r| r.service.as_deref()) != f.service.as_deref() {
        return false;
    }
    if f.root_name
        .as_deref()
        .is_some_and(|name| root.is_none_or(|r| r.name != name))
    {
        return false;
    }
    let mut scores = r.scores.iter().filter(|s| {
        f.evaluator
            .as_ref()
            .is_none_or(|ev| **ev == *s.evaluator_id)
    });
    if f.min_score.is_none() && f.max_score.is_none() {
        // Only `evaluator`: it must have scored the trace (any outcome).
        return f.evaluator.is_none() || scores.next().is_some();
    }
    // One score within both bounds (a NaN, or a NaN bound, is within none).
    scores.any(|s| {
        s.outcome.score.is_some_and(|v| {
            f.min_score.is_none_or(|min| v >= min) && f.max_score.is_none_or(|max| v <= max)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: u8, revision: u32) -> StoredResult {
        let mut r = StoredResult::pending(TraceId([id; 16]));
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

    /// A record with a root and these scores of evaluator `a` (and one
    /// of `b`, 0.5, which no bound below admits alone).
    fn scored(id: u8, service: Option<&str>, name: &str, scores: &[f64]) -> StoredResult {
        use crate::evaluator::{EvaluatorType, Outcome};
        let mut r = rec(id, 1);
        r.root = Some(super::super::RootSummary {
            span_id: crate::span::SpanId([id; 8]),
            name: name.to_owned(),
            service: service.map(str::to_owned),
            start_time_unix_nano: 0,
            end_time_unix_nano: 0,
        });
        let score = |evaluator: &str, v: f64| super::super::Score {
            evaluator_id: evaluator.into(),
            evaluator_type: EvaluatorType::Count,
            outcome: Outcome::ok(v, serde_json::json!({})).into(),
        };
        r.scores = scores.iter().map(|&v| score("a", v)).collect();
        r.scores.push(score("b", 0.5));
        r
    }

    fn ids(s: &MemoryStore, f: ListFilter) -> Vec<u8> {
        let f = ListFilter { limit: 10, ..f };
        s.list(&f).iter().map(|r| r.trace_id.0[0]).collect()
    }

    #[test]
    fn min_and_max_score_bound_the_same_score() {
        let s = MemoryStore::new(10, Duration::from_secs(60), 8);
        let t = Instant::now();
        s.put(scored(1, None, "r", &[0.1, 0.9]), t);
        s.put(scored(2, None, "r", &[0.4]), t);
        s.put(scored(3, None, "r", &[f64::NAN, 1.0]), t);
        let a = |min: Option<f64>, max: Option<f64>| {
            ids(
                &s,
                ListFilter {
                    evaluator: Some("a".into()),
                    min_score: min,
                    max_score: max,
                    ..ListFilter::default()
                },
            )
        };
        // Trace 1 has a score under 0.3 and one over 0.6, none between.
        assert_eq!(a(Some(0.3), Some(0.6)), vec![2]);
        assert_eq!(a(Some(0.9), None), vec![3, 1], "at or above");
        assert_eq!(a(None, Some(0.1)), vec![1], "at or below");
        assert_eq!(a(Some(0.0), Some(1.0)), vec![3, 2, 1]);
        assert_eq!(a(Some(f64::NAN), None), Vec::<u8>::new(), "NaN admits none");
        // Without `evaluator`, any evaluator's score: `b`'s 0.5 for all.
        let any = ids(
            &s,
            ListFilter {
                min_score: Some(0.45),
                max_score: Some(0.55),
                ..ListFilter::default()
            },
        );
        assert_eq!(any, vec![3, 2, 1]);
    }

    #[test]
    fn service_and_root_name_match_exactly() {
        let s = MemoryStore::new(10, Duration::from_secs(60), 8);
        let t = Instant::now();
        s.put(scored(1, Some("checkout"), "agent.run", &[]), t);
        s.put(scored(2, Some("Checkout"), "agent.run", &[]), t);
        s.put(scored(3, None, "plan", &[]), t);
        s.put(rec(4, 1), t); // no root
        s.mark_pending(TraceId([5; 16]), t);
        let by = |service: Option<&str>, root_name: Option<&str>| {
            ids(
                &s,
                ListFilter {
                    service: service.map(str::to_owned),
                    root_name: root_name.map(str::to_owned),
                    ..ListFilter::default()
                },
            )
        };
        assert_eq!(by(Some("checkout"), None), vec![1]);
        assert_eq!(by(None, Some("agent.run")), vec![2, 1]);
        assert_eq!(by(None, Some("agent")), Vec::<u8>::new(), "not a prefix");
        assert_eq!(by(Some("Checkout"), Some("plan")), Vec::<u8>::new());
        assert_eq!(by(None, None), vec![5, 4, 3, 2, 1]);
    }

    /// A time after the records stored so far and at or before the next.
    fn cut() -> SystemTime {
        let t = SystemTime::now();
        while SystemTime::now() <= t {
            std::hint::spin_loop();
        }
        SystemTime::now()
    }

    #[test]
    fn until_is_strictly_before_and_since_at_or_after() {
        let s = MemoryStore::new(10, Duration::from_secs(60), 8);
        let t = Instant::now();
        s.put(rec(1, 1), t);
        s.put(rec(2, 1), t);
        let t1 = cut();
        s.put(rec(3, 1), t);
        // A newer revision moves trace 1 past the cut (its old slot is stale).
        s.put(rec(1, 2), t);
        let t2 = cut();
        s.mark_pending(TraceId([4; 16]), t);
        let window = |since, until| {
            ids(
                &s,
                ListFilter {
                    since,
                    until,
                    ..ListFilter::default()
                },
            )
        };
        assert_eq!(window(None, Some(t1)), vec![2]);
        assert_eq!(window(Some(t1), None), vec![4, 1, 3]);
        assert_eq!(window(Some(t1), Some(t2)), vec![1, 3]);
        assert_eq!(window(Some(t2), Some(t1)), Vec::<u8>::new());
        assert_eq!(window(None, None), vec![4, 1, 3, 2]);
        // The limit counts the records in the window only.
        let f = ListFilter {
            until: Some(t2),
            limit: 1,
            ..ListFilter::default()
        };
        assert_eq!(s.list(&f)[0].trace_id, TraceId([1; 16]));
    }

    #[test]
    fn store_times_never_go_back() {
        let s = MemoryStore::new(10, Duration::from_secs(60), 8);
        let t = Instant::now();
        s.lock().last_wall = i64::MAX - 1; // as if the clock had stepped back
        s.put(rec(1, 1), t);
        s.put(rec(2, 1), t);
        let walls: Vec<i64> = s.lock().order.iter().map(|slot| slot.wall).collect();
        assert_eq!(walls, vec![i64::MAX - 1; 2]);
        assert_eq!(
            ids(
                &s,
                ListFilter {
                    since: Some(SystemTime::now()),
                    ..ListFilter::default()
                }
            ),
            vec![2, 1]
        );
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

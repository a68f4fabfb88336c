//! [`DbStore`]: results in a database, written by one writer thread that
//! commits what evaluation hands it in batches (one transaction each); a
//! shared database's retention runs on a thread of its own beside it.
//!
//! A result becomes visible (to the API, long polls, watchers and the
//! exporter) once committed. A [`MemoryStore`] beside the database keeps
//! what must be local: `pending` markers of traces still arriving, the
//! waiters of long polls, the watchers' broadcast, and the most recent
//! results (bounded by `store.max_bytes`), which reads try first.
//!
//! When the database is slow or down, the writer retries the same batch
//! with backoff; its queue fills, [`put`](ResultStore::put) blocks the
//! evaluation worker, the evaluation queue and the assembler fill, and the
//! receivers refuse new spans as retryable. Nothing acknowledged is dropped.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use tokio::sync::broadcast;

use super::{
    ListFilter, MemoryStore, Now, OnStored, Prepared, ReadError, ResultOrWait, ResultStore,
    StoreConfig, StoredResult, TraceStatus, lock,
};
use crate::span::TraceId;
use crate::wal::Pin;

/// A database failure; the writer retries, reads answer it as unavailable.
#[derive(Debug, Clone, thiserror::Error)]
pub enum DbError {
    #[error("cannot open the results database {what}: {message}")]
    Open { what: String, message: String },
    #[error(
        "the results database {what} has schema version {found}, newer than this toolscore's ({known}); run a newer toolscore or point it at another database"
    )]
    NewerSchema {
        what: String,
        found: i64,
        known: i64,
    },
    #[error("results database: {0}")]
    Query(String),
    #[error("results database: {0}")]
    Row(String),
}

/// Which records of a batch were stored (a newer revision is kept otherwise),
/// and how many old ones retention deleted in the same transaction. A
/// record stored and deleted at once (a batch larger than `max_traces`)
/// counts as stored: it was, and retention evicted it.
pub struct Written {
    pub stored: Vec<bool>,
    pub pruned: u64,
}

/// The bounds a write may enforce in its own transaction, so that the
/// table stays at them while the writer is saturated (chunks deleted
/// between commits only held the excess there).
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    pub older_than: SystemTime,
    pub max_traces: usize,
    /// Rows deleted at most beyond as many as the write adds.
    pub chunk: usize,
}

/// A results database. Calls block: they are made on the writer thread and
/// on blocking threads, never on the async I/O threads.
pub trait Database: Send + Sync + 'static {
    /// Upserts the batch in one transaction: a record replaces the stored
    /// one unless that has a newer revision. A database written by this
    /// process alone also deletes what is past `retention` in it; a shared
    /// one leaves that to [`prune`](Database::prune), which one replica at
    /// a time runs.
    fn write(
        &self,
        batch: &[Prepared],
        now: SystemTime,
        retention: &Retention,
    ) -> Result<Written, DbError>;
    fn get(&self, trace_id: &TraceId) -> Result<Option<StoredResult>, DbError>;
    /// Newest first. Never asked with a NaN score bound (within which no
    /// score is): SQLite binds a NaN as NULL, PostgreSQL orders it above
    /// every number, so neither would answer as the memory store does.
    fn list(&self, filter: &ListFilter) -> Result<Vec<StoredResult>, DbError>;
    /// Deletes up to `batch` of the oldest records: those stored before
    /// `older_than` and those beyond `max_traces` (PostgreSQL: up to `batch`
    /// of each); how many. A call that deletes `batch` or more is followed
    /// by the same pass's next chunk: PostgreSQL counts the table (a scan)
    /// only at a pass's first chunk, and its later ones delete up to the
    /// row that count found the newest past `max_traces`.
    fn prune(
        &self,
        older_than: SystemTime,
        max_traces: usize,
        batch: usize,
    ) -> Result<u64, DbError>;
    fn count(&self) -> Result<u64, DbError>;
    /// Whether other processes write to this database too (replicas): reads
    /// then go to it first, before this process's recent results.
    fn shared(&self) -> bool {
        false
    }
    /// Calls `on_commit`, from a thread of its own, with the trace ID and
    /// revision of each commit any process announces, so that this one's
    /// long polls and watchers wake for them; `on_commit(None)` (about once
    /// a second) asks whether the store is still open. Only a shared
    /// database has something to announce.
    fn listen(&self, _on_commit: OnCommit) -> Result<(), DbError> {
        Ok(())
    }
    /// Keeps this process's claim on the LLM judgements it runs, and
    /// settles as `skipped` those whose process stopped claiming them (it
    /// was killed before its model answered); how many it settled. Called
    /// every second by a shared database's pruner thread. A database only
    /// this process uses settles them when it opens instead.
    fn tend_judgements(&self, _now: SystemTime) -> Result<u64, DbError> {
        Ok(0)
    }
    /// Whether the database can still take writes, looked at while the
    /// writer is idle (once a second): a failure makes the service unready.
    fn check(&self) -> Result<(), DbError> {
        Ok(())
    }
}

/// See [`Database::listen`]; false once the store is gone.
pub type OnCommit = Box<dyn Fn(Option<(TraceId, u32)>) -> bool + Send>;

/// Rows deleted per retention transaction, at most and at least (beyond
/// those a commit adds past `max_traces`): a pass deletes chunk after chunk,
/// between the writer's commits or beside them, until nothing is past the
/// bounds; a transaction stays short.
const PRUNE_BATCH: usize = 1_000;
const PRUNE_MIN: usize = 64;
/// How often retention runs a pass.
const PRUNE_EVERY: Duration = Duration::from_secs(1);

/// The writer's figures, scraped as `toolscore_store_*`.
pub struct WriterStats {
    queued: AtomicUsize,
    committed: AtomicU64,
    commits: AtomicU64,
    errors: AtomicU64,
    prune_errors: AtomicU64,
    pruned: AtomicU64,
    abandoned: AtomicU64,
    rows: AtomicU64,
    dropped_shutdown: AtomicU64,
    commit_seconds: Histogram,
    batch_size: Histogram,
    commit_wait: Histogram,
}

impl Default for WriterStats {
    fn default() -> Self {
        WriterStats {
            queued: AtomicUsize::new(0),
            committed: AtomicU64::new(0),
            commits: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            prune_errors: AtomicU64::new(0),
            pruned: AtomicU64::new(0),
            abandoned: AtomicU64::new(0),
            rows: AtomicU64::new(0),
            dropped_shutdown: AtomicU64::new(0),
            commit_seconds: Histogram::new([
                0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0,
            ]),
            batch_size: Histogram::new([1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0]),
            commit_wait: Histogram::new([
                0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0,
                2.5, 5.0,
            ]),
        }
    }
}

impl std::fmt::Debug for WriterStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriterStats").finish_non_exhaustive()
    }
}

impl Collector for WriterStats {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let counters = [
            (
                "store_results_committed",
                "Results committed to the database",
                &self.committed,
            ),
            (
                "store_commits",
                "Database transactions committed by the writer",
                &self.commits,
            ),
            (
                "store_write_errors",
                "Failed database writes (each retried)",
                &self.errors,
            ),
            (
                "store_prune_errors",
                "Failed retention chunks (retried on the next pass)",
                &self.prune_errors,
            ),
            (
                "store_pruned",
                "Results deleted by retention (age or max_traces)",
                &self.pruned,
            ),
            (
                "store_abandoned_judgements",
                "LLM judgements another replica left pending when it stopped, settled here as skipped",
                &self.abandoned,
            ),
            (
                "store_results_dropped_shutdown",
                "Results not committed before the shutdown deadline",
                &self.dropped_shutdown,
            ),
        ];
        for (name, help, c) in counters {
            let m = ConstCounter::new(c.load(Ordering::Relaxed));
            m.encode(encoder.encode_descriptor(name, help, None, m.metric_type())?)?;
        }
        let gauges = [
            (
                "store_writer_queue_depth",
                "Results waiting for their commit",
                self.queued.load(Ordering::Relaxed) as i64,
            ),
            (
                "store_rows",
                "Results in the database (as of the last retention pass)",
                self.rows.load(Ordering::Relaxed) as i64,
            ),
        ];
        for (name, help, v) in gauges {
            let m = ConstGauge::new(v);
            m.encode(encoder.encode_descriptor(name, help, None, m.metric_type())?)?;
        }
        self.commit_seconds.encode(encoder.encode_descriptor(
            "store_commit_duration_seconds",
            "Time to write and commit one batch",
            None,
            self.commit_seconds.metric_type(),
        )?)?;
        self.batch_size.encode(encoder.encode_descriptor(
            "store_commit_batch_size",
            "Results per committed transaction",
            None,
            self.batch_size.metric_type(),
        )?)?;
        self.commit_wait.encode(encoder.encode_descriptor(
            "store_commit_wait_seconds",
            "Time from a result's hand-off to the writer to its commit (queue, retries and commit)",
            None,
            self.commit_wait.metric_type(),
        )?)?;
        Ok(())
    }
}

/// A result handed to the writer, when, and the write-ahead log segments
/// its spans are in (released once it is committed).
type Queued = (Prepared, Instant, Pin);

/// What the writer thread shares with the store.
struct Shared {
    db: Arc<dyn Database>,
    local: MemoryStore,
    on_stored: OnceLock<OnStored>,
    stats: Arc<WriterStats>,
    /// False from a failed write until the next one succeeds.
    healthy: AtomicBool,
    /// True from a failed retention chunk until the next one succeeds.
    prune_failing: AtomicBool,
    last_error: Mutex<Option<String>>,
    /// Set at shutdown: a writer still retrying gives up at `deadline`.
    closing: AtomicBool,
    deadline: Mutex<Option<Instant>>,
}

pub struct DbStore {
    shared: Arc<Shared>,
    queue: Mutex<Option<SyncSender<Queued>>>,
    /// A message when the writer has finished.
    done: Mutex<Option<Receiver<()>>>,
    /// A shared database's pruner thread.
    pruner: Mutex<Option<Pruner>>,
}

/// Dropping `stop` ends the pruner thread, which then sends on `done`.
struct Pruner {
    stop: SyncSender<()>,
    done: Receiver<()>,
}

impl DbStore {
    /// Starts the writer thread over `db`.
    pub fn start(db: Arc<dyn Database>, config: &StoreConfig) -> Result<DbStore, DbError> {
        let local = MemoryStore::for_config(config);
        let stats = Arc::new(WriterStats::default());
        stats
            .rows
            .store(db.count()?.min(u64::MAX >> 1), Ordering::Relaxed);
        let shared = Arc::new(Shared {
            db,
            local,
            on_stored: OnceLock::new(),
            stats,
            healthy: AtomicBool::new(true),
            prune_failing: AtomicBool::new(false),
            last_error: Mutex::new(None),
            closing: AtomicBool::new(false),
            deadline: Mutex::new(None),
        });
        if shared.db.shared() {
            let weak = Arc::downgrade(&shared);
            shared.db.listen(Box::new(move |commit| {
                let Some(s) = weak.upgrade() else {
                    return false;
                };
                if let Some((trace_id, revision)) = commit {
                    s.notified(trace_id, revision);
                }
                true
            }))?;
        }
        let (tx, rx) = std::sync::mpsc::sync_channel(config.writer.queue_capacity.get());
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let bounds = Bounds {
            retention: Duration::from_secs(config.retention_secs.get()),
            max_traces: config.max_traces.get(),
        };
        let writer = Writer {
            shared: shared.clone(),
            rx,
            max_batch: config.writer.max_batch.get(),
            backoff: Duration::from_millis(config.writer.retry_backoff_ms.get()),
            bounds,
        };
        std::thread::Builder::new()
            .name("toolscore-store-writer".into())
            .spawn(move || {
                writer.run();
                let _ = done_tx.send(());
            })
            .map_err(|e| DbError::Query(format!("cannot start the writer thread: {e}")))?;
        // A shared database is pruned on one of the read pool's connections,
        // beside the writer's commits instead of between them (perf/README.md).
        let mut pruner = None;
        if shared.db.shared() {
            let shared = shared.clone();
            let (stop, stop_rx) = std::sync::mpsc::sync_channel(0);
            let (done_tx, done) = std::sync::mpsc::channel();
            std::thread::Builder::new()
                .name("toolscore-store-prune".into())
                .spawn(move || {
                    prune_until_stopped(&shared, bounds, &stop_rx);
                    let _ = done_tx.send(());
                })
                .map_err(|e| DbError::Query(format!("cannot start the pruner thread: {e}")))?;
            pruner = Some(Pruner { stop, done });
        }
        Ok(DbStore {
            shared,
            queue: Mutex::new(Some(tx)),
            done: Mutex::new(Some(done_rx)),
            pruner: Mutex::new(pruner),
        })
    }

    /// The writer's figures, for the metrics registry.
    pub fn stats(&self) -> Arc<WriterStats> {
        self.shared.stats.clone()
    }

    fn db_get(&self, trace_id: &TraceId) -> Result<Option<Arc<StoredResult>>, ReadError> {
        self.shared
            .db
            .get(trace_id)
            .map(|r| r.map(Arc::new))
            .map_err(|e| ReadError(e.to_string()))
    }
}

impl Shared {
    /// Another process committed this revision: makes it this process's
    /// recent result, which wakes long polls and watchers. Read only when
    /// one of them is here (reads go to the shared database anyway), and not
    /// when it is here already. The exporter is the committing process's.
    fn notified(&self, trace_id: TraceId, revision: u32) {
        if !self.local.is_awaited(&trace_id)
            || self
                .local
                .get(&trace_id)
                // Equal: perhaps the judged update of the revision it has.
                .is_some_and(|r| r.status != TraceStatus::Pending && r.revision > revision)
        {
            return;
        }
        match self.db.get(&trace_id) {
            Ok(Some(r)) => {
                self.local.put_shared(Arc::new(r), Instant::now());
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "reading another replica's result failed"),
        }
    }
}

/// The read, or (logged) nothing: for the infallible trait methods.
fn logged<T: Default>(read: Result<T, ReadError>) -> T {
    read.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "reading results failed");
        T::default()
    })
}

/// The database's bounds: `store.retention_secs` and `store.max_traces`.
#[derive(Clone, Copy)]
struct Bounds {
    retention: Duration,
    max_traces: usize,
}

impl Bounds {
    /// Results stored before this are past `store.retention_secs`.
    fn older_than(&self, now: SystemTime) -> SystemTime {
        now.checked_sub(self.retention)
            .unwrap_or(SystemTime::UNIX_EPOCH)
    }
}

struct Writer {
    shared: Arc<Shared>,
    rx: Receiver<Queued>,
    max_batch: usize,
    backoff: Duration,
    bounds: Bounds,
}

/// A shared database's retention: a pass a second, chunk after chunk on a
/// read connection, until `stop` is dropped.
fn prune_until_stopped(shared: &Shared, bounds: Bounds, stop: &Receiver<()>) {
    let mut tending_failed = false;
    while let Err(RecvTimeoutError::Timeout) = stop.recv_timeout(PRUNE_EVERY) {
        match shared.db.tend_judgements(SystemTime::now()) {
            Ok(n) => {
                shared.stats.abandoned.fetch_add(n, Ordering::Relaxed);
                if n > 0 {
                    tracing::warn!(
                        scores = n,
                        "LLM-judged scores left pending by a replica that stopped are stored as skipped"
                    );
                }
                tending_failed = false;
            }
            Err(e) => {
                if !std::mem::replace(&mut tending_failed, true) {
                    tracing::warn!(error = %e, "keeping the claim on running LLM judgements failed; retried every second");
                }
            }
        }
        while shared.prune_chunk(bounds, PRUNE_BATCH) {
            if shared.closing.load(Ordering::Relaxed) {
                return;
            }
        }
    }
}

impl Writer {
    fn run(self) {
        let mut batch = Vec::with_capacity(self.max_batch);
        // Each result's hand-off time and log segments, beside `batch`.
        let mut handed = Vec::with_capacity(self.max_batch);
        let mut last_prune = Instant::now();
        // A retention pass owes more chunks: they alternate with commits, each
        // as large as the commit before it (PRUNE_MIN to PRUNE_BATCH), so a second's
        // deletions are spread over the second's commits instead of holding
        // the results queued behind them.
        let mut pruning = false;
        let mut committed = 0;
        // A shared database has a pruner thread of its own.
        let prunes = !self.shared.db.shared();
        loop {
            let wait = if pruning { Duration::ZERO } else { PRUNE_EVERY };
            let first = match self.rx.recv_timeout(wait) {
                Ok(queued) => Some(queued),
                Err(RecvTimeoutError::Timeout) => {
                    if let Err(e) = self.shared.db.check() {
                        self.shared.failing(&e);
                    }
                    None
                }
                Err(RecvTimeoutError::Disconnected) => break,
            };
            let queued = first.into_iter().chain(self.rx.try_iter());
            for (r, since, pin) in queued.take(self.max_batch) {
                batch.push(r);
                handed.push((since, pin));
            }
            if !batch.is_empty() {
                let done = self.commit(&batch, &handed);
                // Waiting until committed: the batch is held as the queue is.
                self.shared
                    .stats
                    .queued
                    .fetch_sub(batch.len(), Ordering::Relaxed);
                if !done {
                    break;
                }
                committed = batch.len();
                batch.clear();
                handed.clear();
            }
            if prunes && !pruning && last_prune.elapsed() >= PRUNE_EVERY {
                last_prune = Instant::now();
                pruning = true;
            }
            if pruning {
                // Nothing committed (nothing waiting): the largest chunk.
                let rows = match committed {
                    0 => PRUNE_BATCH,
                    n => n.clamp(PRUNE_MIN, PRUNE_BATCH),
                };
                pruning = self.shared.prune_chunk(self.bounds, rows);
                committed = 0;
            }
        }
        // Closing past the deadline: what is left is lost, and counted.
        let queued = self.rx.try_iter().count();
        self.shared
            .stats
            .queued
            .fetch_sub(queued, Ordering::Relaxed);
        let left = (batch.len() + queued) as u64;
        if left > 0 {
            self.shared
                .stats
                .dropped_shutdown
                .fetch_add(left, Ordering::Relaxed);
            tracing::error!(
                results = left,
                "results not committed before the shutdown deadline are lost"
            );
        }
    }

    /// Commits `batch`, retrying with backoff until it succeeds; false when
    /// the shutdown deadline passed first.
    fn commit(&self, batch: &[Prepared], handed: &[(Instant, Pin)]) -> bool {
        let s = &self.shared;
        let mut backoff = self.backoff;
        loop {
            let started = Instant::now();
            let now = SystemTime::now();
            let retention = Retention {
                older_than: self.bounds.older_than(now),
                max_traces: self.bounds.max_traces,
                chunk: batch.len().clamp(PRUNE_MIN, PRUNE_BATCH),
            };
            match s.db.write(batch, now, &retention) {
                Ok(written) => {
                    s.stats.pruned.fetch_add(written.pruned, Ordering::Relaxed);
                    s.stats
                        .commit_seconds
                        .observe(started.elapsed().as_secs_f64());
                    s.stats.batch_size.observe(batch.len() as f64);
                    s.stats.commits.fetch_add(1, Ordering::Relaxed);
                    if !s.healthy.swap(true, Ordering::Relaxed) {
                        tracing::info!("the results database is reachable again");
                        *lock(&s.last_error) = None;
                    }
                    let now = Instant::now();
                    for (since, _) in handed {
                        s.stats
                            .commit_wait
                            .observe(now.saturating_duration_since(*since).as_secs_f64());
                    }
                    for (p, stored) in batch.iter().zip(written.stored) {
                        if !stored {
                            continue;
                        }
                        s.stats.committed.fetch_add(1, Ordering::Relaxed);
                        if let Some(r) = s.local.put_shared(p.record.clone(), now)
                            && let Some(hook) = s.on_stored.get()
                        {
                            hook(r);
                        }
                    }
                    return true;
                }
                Err(e) => {
                    s.stats.errors.fetch_add(1, Ordering::Relaxed);
                    s.failing(&e);
                    let deadline = *lock(&s.deadline);
                    if s.closing.load(Ordering::Relaxed)
                        && deadline.is_none_or(|d| Instant::now() + backoff > d)
                    {
                        return false;
                    }
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(self.backoff * 32);
                }
            }
        }
    }
}

impl Shared {
    /// Deletes one chunk of what is past retention or `max_traces`; whether
    /// more is left.
    /// The database cannot take writes: unready, saying why (logged once).
    fn failing(&self, e: &DbError) {
        if self.healthy.swap(false, Ordering::Relaxed) {
            tracing::error!(error = %e, "writing results failed; retrying (receivers refuse spans while the queue is full)");
        }
        *lock(&self.last_error) = Some(e.to_string());
    }

    fn prune_chunk(&self, bounds: Bounds, rows: usize) -> bool {
        let older = bounds.older_than(SystemTime::now());
        let more = match self.db.prune(older, bounds.max_traces, rows) {
            Ok(n) => {
                self.stats.pruned.fetch_add(n, Ordering::Relaxed);
                if self.prune_failing.swap(false, Ordering::Relaxed) {
                    tracing::info!("enforcing retention works again");
                }
                n >= rows as u64
            }
            Err(e) => {
                self.stats.prune_errors.fetch_add(1, Ordering::Relaxed);
                // Once per outage: the pass is retried every second.
                if !self.prune_failing.swap(true, Ordering::Relaxed) {
                    tracing::warn!(error = %e, "enforcing retention failed; retried every second (counted in toolscore_store_prune_errors_total)");
                }
                false
            }
        };
        if !more && let Ok(n) = self.db.count() {
            self.stats.rows.store(n, Ordering::Relaxed);
        }
        more
    }
}

impl ResultStore for DbStore {
    fn mark_pending_many(&self, trace_ids: &[TraceId], now: Instant) {
        self.shared.local.mark_pending_many(trace_ids, now);
    }

    fn put(&self, record: StoredResult, now: Instant) -> Option<Arc<StoredResult>> {
        self.put_pinned(record, now, Pin::default())
    }

    /// Queues the record for the writer; blocks while the queue is full
    /// (backpressure). It is visible once committed, so this returns `None`.
    fn put_pinned(
        &self,
        record: StoredResult,
        _now: Instant,
        pin: Pin,
    ) -> Option<Arc<StoredResult>> {
        let Some(tx) = lock(&self.queue).clone() else {
            // Past the shutdown deadline every later result comes here: one
            // line for the first, the count in the metric.
            let before = self
                .shared
                .stats
                .dropped_shutdown
                .fetch_add(1, Ordering::Relaxed);
            if before == 0 {
                tracing::error!(trace_id = %record.trace_id, "results arriving after the store closed are lost (counted in toolscore_store_results_dropped_shutdown_total)");
            }
            return None;
        };
        let record = (Prepared::new(Arc::new(record)), Instant::now(), pin);
        self.shared.stats.queued.fetch_add(1, Ordering::Relaxed);
        let sent = match tx.try_send(record) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(r)) => tx.send(r).map_err(|e| e.0),
            Err(TrySendError::Disconnected(r)) => Err(r),
        };
        if let Err(r) = sent {
            self.shared.stats.queued.fetch_sub(1, Ordering::Relaxed);
            self.shared
                .stats
                .dropped_shutdown
                .fetch_add(1, Ordering::Relaxed);
            tracing::error!(trace_id = %r.0.record.trace_id, "the store's writer has stopped; a result is lost");
        }
        None
    }

    fn get(&self, trace_id: &TraceId) -> Option<Arc<StoredResult>> {
        logged(self.try_get(trace_id))
    }

    fn try_get(&self, trace_id: &TraceId) -> Result<Option<Arc<StoredResult>>, ReadError> {
        if let Now::Answered(r) = self.get_now(trace_id) {
            return Ok(r);
        }
        // With replicas, another one may have stored a newer revision.
        Ok(self
            .db_get(trace_id)?
            .or_else(|| self.shared.local.get(trace_id)))
    }

    /// A result this process committed, while memory keeps it: the only
    /// writer, it has committed nothing newer.
    fn get_now(&self, trace_id: &TraceId) -> Now<Option<Arc<StoredResult>>> {
        match self.shared.local.get(trace_id) {
            Some(r) if !self.shared.db.shared() && r.status != TraceStatus::Pending => {
                Now::Answered(Some(r))
            }
            _ => Now::WouldBlock,
        }
    }

    fn result_or_wait_now(&self, trace_id: TraceId) -> Now<ResultOrWait> {
        match self.get_now(&trace_id) {
            Now::Answered(Some(r)) => Now::Answered(ResultOrWait::Ready(r)),
            _ => Now::WouldBlock,
        }
    }

    fn list(&self, filter: &ListFilter) -> Vec<Arc<StoredResult>> {
        logged(self.try_list(filter))
    }

    fn try_list(&self, filter: &ListFilter) -> Result<Vec<Arc<StoredResult>>, ReadError> {
        // Traces still arriving are local; results are in the database. A
        // pending trace has no scores and no root yet: a filter on either
        // excludes it. `since` and `until` apply to when it was marked.
        let mut out: Vec<Arc<StoredResult>> =
            if filter.status.is_none_or(|s| s == TraceStatus::Pending)
                && filter.evaluator.is_none()
                && filter.max_score.is_none()
                && filter.min_score.is_none()
                && filter.service.is_none()
                && filter.root_name.is_none()
            {
                let mut pending = self.shared.local.list(&ListFilter {
                    status: Some(TraceStatus::Pending),
                    ..filter.clone()
                });
                // A pending marker whose result is already committed is stale.
                pending.retain(|r| r.status == TraceStatus::Pending);
                pending
            } else {
                Vec::new()
            };
        if filter.status != Some(TraceStatus::Pending) && !filter.nan_bound() {
            let records = self
                .shared
                .db
                .list(filter)
                .map_err(|e| ReadError(e.to_string()))?;
            out.extend(records.into_iter().map(Arc::new));
        }
        out.truncate(filter.limit);
        Ok(out)
    }

    fn subscribe(&self) -> broadcast::Receiver<Arc<StoredResult>> {
        self.shared.local.subscribe()
    }

    fn result_or_wait(&self, trace_id: TraceId) -> ResultOrWait {
        match self.try_result_or_wait(trace_id) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "reading results failed");
                self.shared.local.result_or_wait(trace_id)
            }
        }
    }

    fn try_result_or_wait(&self, trace_id: TraceId) -> Result<ResultOrWait, ReadError> {
        let done = |r: &Arc<StoredResult>| r.status != TraceStatus::Pending;
        if self.shared.db.shared() {
            // Another replica may have stored it, or a newer revision.
            if let Some(r) = self.db_get(&trace_id)?.filter(done) {
                return Ok(ResultOrWait::Ready(r));
            }
        }
        // The waiter is registered before the database is read, so a
        // commit in between wakes it.
        Ok(match self.shared.local.result_or_wait(trace_id) {
            ResultOrWait::Ready(r) => ResultOrWait::Ready(r),
            ResultOrWait::Wait(rx) => match self.db_get(&trace_id)?.filter(done) {
                Some(r) => ResultOrWait::Ready(r),
                None => ResultOrWait::Wait(rx),
            },
        })
    }

    fn evict_expired(&self, now: Instant) -> usize {
        // The database's retention is the writer's or the pruner's; this
        // ages the local part.
        self.shared.local.evict_expired(now)
    }

    /// Results deleted from the database (the local part's evictions lose
    /// nothing: those results are in the database).
    fn evicted(&self) -> u64 {
        self.shared.stats.pruned.load(Ordering::Relaxed)
    }

    fn len(&self) -> usize {
        usize::try_from(self.shared.stats.rows.load(Ordering::Relaxed)).unwrap_or(usize::MAX)
    }

    fn set_on_stored(&self, hook: OnStored) {
        let _ = self.shared.on_stored.set(hook);
    }

    fn ready(&self) -> Result<(), String> {
        if self.shared.healthy.load(Ordering::Relaxed) {
            return Ok(());
        }
        let why = lock(&self.shared.last_error).clone();
        Err(why.unwrap_or_else(|| "the results database is unreachable".into()))
    }

    fn close(&self, timeout: Duration) -> bool {
        *lock(&self.shared.deadline) = Some(Instant::now() + timeout);
        self.shared.closing.store(true, Ordering::Relaxed);
        // Dropping the last sender ends the writer once the queue is empty.
        drop(lock(&self.queue).take());
        let pruner = lock(&self.pruner).take().map(|p| {
            drop(p.stop);
            p.done
        });
        let Some(writer) = lock(&self.done).take() else {
            return true;
        };
        let deadline = Instant::now() + timeout;
        let left = || deadline.saturating_duration_since(Instant::now());
        let committed = writer.recv_timeout(left()).is_ok();
        // Only the writer's end says whether every result was committed: a
        // retention chunk still running is waited for until the deadline.
        if let Some(pruner) = pruner
            && pruner.recv_timeout(left()).is_err()
        {
            tracing::warn!("a retention chunk was still running at shutdown");
        }
        committed
    }
}

//! One assembler shard as a plain synchronous state machine: no tasks, no
//! clock. The caller passes `now` to [`Shard::push`] and [`Shard::expire`];
//! an async loop (`super::run_shard`) drives it, and tests drive it directly.
//!
//! A trace is buffered until its root span has arrived and the grace period
//! has passed (then it is *complete*), or until it times out without a root
//! (idle or too old). Once emitted, its spans stay for the late-span window so
//! a late span re-evaluates the whole trace with `revision + 1`. Spans are
//! de-duplicated by span ID, since exporters retry.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use foldhash::fast::RandomState;

use super::backlog::Ticket;
use super::config::{AssemblerConfig, OnTimeout};
use crate::record::{Held, Records, Run, Spans};
use crate::span::{KeepAttributes, Span, SpanId, TraceId};
use crate::wal::{Pin, Wal};

/// The per-shard share of the assembler's bounds.
#[derive(Debug, Clone)]
pub struct Limits {
    pub grace: Duration,
    pub idle_timeout: Duration,
    pub max_age: Duration,
    pub late_window: Duration,
    pub on_timeout: OnTimeout,
    pub max_traces: usize,
    pub max_spans_per_trace: usize,
    pub max_bytes: usize,
    /// Open traces one service may hold (0: no limit).
    pub max_traces_per_service: usize,
    /// The attributes the service keeps: what the records' key ids mean.
    pub keys: Arc<KeepAttributes>,
}

impl Limits {
    /// Splits the configured bounds evenly over `shards`.
    pub fn for_shard(cfg: &AssemblerConfig, shards: usize, keys: Arc<KeepAttributes>) -> Limits {
        let shards = shards.max(1);
        Limits {
            grace: Duration::from_millis(cfg.grace_after_root_ms),
            idle_timeout: Duration::from_secs(cfg.idle_timeout_secs.get()),
            max_age: Duration::from_secs(cfg.max_trace_age_secs.get()),
            late_window: Duration::from_secs(cfg.late_span_window_secs),
            on_timeout: cfg.on_timeout,
            max_traces: cfg.max_traces.get().div_ceil(shards),
            max_spans_per_trace: cfg.max_spans_per_trace.get(),
            max_bytes: cfg.max_buffered_bytes.get().div_ceil(shards),
            max_traces_per_service: cfg.max_traces_per_service.div_ceil(shards),
            keys,
        }
    }
}

/// What happened to one pushed span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Push {
    Accepted,
    /// Already seen (an exporter retry): accepted, not stored twice.
    Duplicate,
    /// The trace already holds `max_spans_per_trace` spans: refused for good.
    TraceFull,
    /// The trace was evaluated longer ago than the late-span window: dropped.
    TooLate,
    /// The span could not be buffered (a bug, logged): refused for good.
    Corrupt,
    /// The shard is at its trace or byte bound: refused, retryable.
    Full,
    /// The span's service holds `max_traces_per_service` open traces
    /// already: a new trace of it is refused, retryable.
    ServiceFull,
}

/// Why a trace left the buffer for evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The root span arrived and the grace period passed.
    Complete,
    /// No root span before the idle timeout or the age limit.
    TimedOut,
    /// A late span arrived for an evaluated trace.
    Revised,
    /// The service is shutting down.
    Shutdown,
}

/// A trace ready to be evaluated.
#[derive(Debug)]
pub struct Ready {
    pub trace_id: TraceId,
    pub spans: Arc<Spans>,
    /// Whether the root span was seen.
    pub complete: bool,
    /// 1 for the first evaluation, +1 for each re-evaluation.
    pub revision: u32,
    pub reason: Reason,
    /// When the root span arrived, for the root → scores latency.
    pub root_arrived: Option<Instant>,
    /// When the trace was due for evaluation (its deadline: root + grace for
    /// a complete trace), for the due → scores latency.
    pub due: Instant,
    /// The write-ahead log segments holding the spans of this revision:
    /// kept until its result is stored (then dropped, which releases them).
    pub pin: Pin,
    /// Its place in the evaluation backlog, given back when dropped (the
    /// driver issues it as it hands the trace over).
    pub ticket: Ticket,
}

#[derive(Debug)]
enum State {
    /// Waiting for the root (deadline: idle/age timeout) or for the grace
    /// period after it (deadline: root + grace).
    Open,
    /// Emitted with this revision, of this many spans; kept for late spans
    /// until the deadline. A span beyond those makes a new revision.
    Emitted { revision: u32, spans: usize },
}

/// Open traces with more spans than this keep a span-ID set for
/// de-duplication; smaller ones scan their IDs, which is faster and costs
/// no memory, and evaluated ones search their sorted IDs.
const ID_SET_FROM: usize = 32;

#[derive(Debug)]
struct Buffer {
    /// The spans' records (see `record/`).
    held: Held,
    /// What the spans took on the wire.
    encoded: usize,
    /// Span IDs, while the trace is open and has more than [`ID_SET_FROM`] spans.
    ids: Option<HashSet<SpanId, RandomState>>,
    bytes: usize,
    first_seen: Instant,
    /// When its latest span arrived: how long it has been idle.
    last_seen: Instant,
    /// The service of its first span, while it counts against that
    /// service's quota (open, with a quota set).
    service: Option<Arc<str>>,
    root_arrived: Option<Instant>,
    /// When the trace is due.
    deadline: Instant,
    /// The key of its entry in `Shard::deadlines`: at or before `deadline`.
    /// A deadline that only moves later (an idle timeout pushed back by each
    /// new span) is not re-indexed; `expire` re-files the entry when it
    /// comes up early. That keeps the sorted index off the per-span path.
    indexed: Instant,
    state: State,
    /// A late span arrived since the last emission.
    dirty: bool,
    /// The log segments of its spans, held while the trace is buffered
    /// (its results hold them too, until stored): a restart finds every
    /// span of a trace that can still take late spans.
    pin: Pin,
    /// Timed out early to make room (see [`Shard::evict_idle`]): due now,
    /// and still counted in the bounds until evaluation takes it.
    leaving: bool,
}

impl Buffer {
    /// Open and due soon: its root arrived (due within the grace period),
    /// or it is leaving. What the evaluation backlog counts.
    fn due_soon(&self) -> bool {
        matches!(self.state, State::Open) && (self.root_arrived.is_some() || self.leaving)
    }
}

/// Counters the shard keeps; the driver exports them as metrics.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts {
    pub completed: u64,
    pub timed_out: u64,
    pub timed_out_dropped: u64,
    pub revised: u64,
    pub late_dropped: u64,
    /// Traces dropped because their buffer did not decode (a bug, logged).
    pub corrupt_dropped: u64,
    /// Emitted traces forgotten early to make room (their late window cut short).
    pub evicted_emitted: u64,
    /// Rootless traces idle for the grace period or more, timed out early
    /// to make room for new spans (also counted in `timed_out` or
    /// `timed_out_dropped`).
    pub evicted_idle: u64,
}

/// How many of the earliest deadlines [`Shard::make_room`] looks through
/// for an idle rootless trace before it refuses: a bound on the work per
/// span when the buffer is full of traces still in use.
const IDLE_SCAN: usize = 64;

/// One shard: owns its traces outright (no locks).
#[derive(Debug)]
pub struct Shard {
    limits: Limits,
    /// Keyed by client-chosen IDs: foldhash, randomly seeded per process.
    traces: HashMap<TraceId, Buffer, RandomState>,
    /// (deadline, trace): one entry per buffered trace; the smallest is next.
    deadlines: BTreeSet<(Instant, TraceId)>,
    /// Emitted traces kept for late spans, oldest emission first (may hold stale entries).
    emitted_order: std::collections::VecDeque<(Instant, TraceId)>,
    /// Traces forgotten after emission, so a too-late span is dropped rather
    /// than starting a phantom trace; bounded FIFO of `max_traces` entries.
    tombstones: HashSet<TraceId, RandomState>,
    tombstone_order: std::collections::VecDeque<TraceId>,
    /// Traces timed out early to make room, in the order they were (may
    /// hold stale entries): they leave at the driver's
    /// [`take_leaving`](Shard::take_leaving) or at their deadline, which is
    /// the moment they were chosen.
    leaving: std::collections::VecDeque<TraceId>,
    /// The bytes and traces of those: room that is on its way.
    leaving_bytes: usize,
    leaving_traces: usize,
    /// Open traces per service, kept when `max_traces_per_service` is set.
    per_service: HashMap<Arc<str>, usize, RandomState>,
    bytes: usize,
    spans: usize,
    encoded: usize,
    open: usize,
    /// Spans and traces open and due soon (see `Buffer::due_soon`): the
    /// evaluation backlog's share held here (see `backlog.rs`).
    rooted_spans: usize,
    rooted_traces: usize,
    pub counts: Counts,
}

impl Shard {
    pub fn new(limits: Limits) -> Shard {
        Shard {
            limits,
            traces: HashMap::default(),
            deadlines: BTreeSet::new(),
            emitted_order: std::collections::VecDeque::new(),
            tombstones: HashSet::default(),
            tombstone_order: std::collections::VecDeque::new(),
            leaving: std::collections::VecDeque::new(),
            leaving_bytes: 0,
            leaving_traces: 0,
            per_service: HashMap::default(),
            bytes: 0,
            spans: 0,
            encoded: 0,
            open: 0,
            rooted_spans: 0,
            rooted_traces: 0,
            counts: Counts::default(),
        }
    }

    /// A buffered trace's spans (for the tests).
    #[cfg(test)]
    pub(super) fn held(&self, id: &TraceId) -> Option<&Held> {
        self.traces.get(id).map(|b| &b.held)
    }

    /// Traces buffered (open or kept for late spans).
    pub fn traces(&self) -> usize {
        self.traces.len()
    }

    pub fn contains(&self, id: &TraceId) -> bool {
        self.traces.contains_key(id)
    }

    /// Traces not yet evaluated.
    pub fn open_traces(&self) -> usize {
        self.open
    }

    /// Spans and traces open and due soon: with their root (due within the
    /// grace period), or timed out early to make room (due now).
    pub fn rooted(&self) -> (usize, usize) {
        (self.rooted_spans, self.rooted_traces)
    }

    /// A trace leaves the open rooted ones (emitted or forgotten).
    fn unroot(&mut self, spans: usize) {
        self.rooted_spans = self.rooted_spans.saturating_sub(spans);
        self.rooted_traces = self.rooted_traces.saturating_sub(1);
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Spans buffered (open traces and those kept for late spans).
    pub fn spans(&self) -> usize {
        self.spans
    }

    /// The encoded (wire) size of the buffered spans, where it was given.
    pub fn encoded_bytes(&self) -> usize {
        self.encoded
    }

    /// The earliest deadline, for the driver's one timer. Entries filed
    /// early (see `Buffer::indexed`) are re-filed first, so the timer does
    /// not wake for them.
    pub fn next_deadline(&mut self) -> Option<Instant> {
        loop {
            let &(key, id) = self.deadlines.first()?;
            match self.traces.get(&id) {
                Some(b) if b.deadline > key => {
                    self.deadlines.pop_first();
                    self.reindex(id);
                }
                _ => return Some(key),
            }
        }
    }

    fn set_deadline(&mut self, id: TraceId, new: Instant) {
        if let Some(b) = self.traces.get_mut(&id) {
            b.deadline = new;
            if new < b.indexed {
                self.deadlines.remove(&(b.indexed, id));
                b.indexed = new;
                self.deadlines.insert((new, id));
            }
        }
    }

    /// Files a trace under its (new) deadline after its entry was popped.
    fn reindex(&mut self, id: TraceId) {
        if let Some(b) = self.traces.get_mut(&id) {
            b.indexed = b.deadline;
            self.deadlines.insert((b.deadline, id));
        }
    }

    /// Whether `need` more bytes (and one more trace, for a new one) fit
    /// once `freed` bytes and traces have left.
    fn fits(&self, need: usize, new_trace: bool, freed: (usize, usize)) -> bool {
        let bytes = self.bytes.saturating_sub(freed.0).saturating_add(need);
        let traces = self.traces.len().saturating_sub(freed.1);
        bytes <= self.limits.max_bytes && (!new_trace || traces < self.limits.max_traces)
    }

    /// Frees emitted traces (oldest first), then times out rootless traces
    /// idle for the grace period or more (see [`Shard::evict_idle`]), until
    /// `need` more bytes and one more trace fit. Returns false when they do
    /// not fit yet: traces timed out early leave only when evaluation takes
    /// them (the driver's [`take_leaving`](Shard::take_leaving)), and until
    /// then they count, so the bounds hold whatever evaluation's pace; or
    /// when only traces in use are left, and the shard is really full.
    fn make_room(&mut self, need: usize, new_trace: bool, now: Instant) -> bool {
        loop {
            if self.fits(need, new_trace, (0, 0)) {
                return true;
            }
            if self.evict_emitted() {
                continue;
            }
            if self.fits(need, new_trace, (self.leaving_bytes, self.leaving_traces)) {
                // Room is on its way.
                return false;
            }
            if !self.evict_idle(now) {
                return false;
            }
        }
    }

    /// Times out the rootless trace nearest its deadline among the first
    /// [`IDLE_SCAN`] that has been idle for the grace period or more: with
    /// `on_timeout: evaluate` it becomes due now and leaves once evaluation
    /// takes it, as timed out (it would have at its idle timeout); with
    /// `drop` it is dropped at once. Then it is forgotten and its later
    /// spans are refused as too late. A full buffer of abandoned traces (a
    /// crashed agent, an instrumentation that never sends the root, an
    /// upstream service that does not export here, a hostile client) then
    /// makes room instead of refusing everyone's fresh spans until the idle
    /// timeout. Traces already leaving fill the scan first, so at most
    /// about [`IDLE_SCAN`] wait for evaluation at a time.
    fn evict_idle(&mut self, now: Instant) -> bool {
        let idle_since = now.checked_sub(self.limits.grace);
        let victim = self.deadlines.iter().take(IDLE_SCAN).find_map(|&(_, id)| {
            let b = self.traces.get(&id)?;
            let idle = idle_since.is_some_and(|t| b.last_seen <= t);
            (matches!(b.state, State::Open) && b.root_arrived.is_none() && !b.leaving && idle)
                .then_some(id)
        });
        let Some(id) = victim else {
            return false;
        };
        if self.limits.on_timeout == OnTimeout::Drop {
            self.counts.evicted_idle += 1;
            self.counts.timed_out_dropped += 1;
            self.forget(id);
            self.tombstone(id);
            return true;
        }
        let Some(b) = self.traces.get_mut(&id) else {
            return false;
        };
        b.leaving = true;
        let (bytes, spans) = (b.bytes, b.held.span_count());
        self.leaving_bytes += bytes;
        self.leaving_traces += 1;
        self.rooted_spans += spans;
        self.rooted_traces += 1;
        self.leaving.push_back(id);
        self.set_deadline(id, now);
        true
    }

    /// Traces timed out early and not yet taken by evaluation.
    pub fn leaving(&self) -> usize {
        self.leaving_traces
    }

    /// The trace timed out early that was chosen first, for evaluation
    /// (the driver calls this when a span needs room and the evaluation
    /// queue has it now); it is forgotten, so its room is free.
    pub fn take_leaving(&mut self, now: Instant) -> Option<Ready> {
        while let Some(id) = self.leaving.pop_front() {
            if self.traces.get(&id).is_some_and(|b| b.leaving) {
                return self.leave(id, now);
            }
        }
        None
    }

    /// A trace timed out early leaves for evaluation: as complete if its
    /// root came meanwhile, else as timed out (and evicted idle).
    fn leave(&mut self, id: TraceId, now: Instant) -> Option<Ready> {
        let spans = self.spans_of(id)?;
        let b = self.traces.get_mut(&id)?;
        let complete = b.root_arrived.is_some();
        let ready = Ready {
            trace_id: id,
            spans,
            complete,
            revision: 1,
            reason: if complete {
                Reason::Complete
            } else {
                Reason::TimedOut
            },
            root_arrived: b.root_arrived,
            due: b.deadline.min(now),
            pin: std::mem::take(&mut b.pin),
            ticket: Ticket::default(),
        };
        if complete {
            self.counts.completed += 1;
        } else {
            self.counts.timed_out += 1;
            self.counts.evicted_idle += 1;
        }
        self.forget(id);
        self.tombstone(id);
        Some(ready)
    }

    fn tombstone(&mut self, id: TraceId) {
        if self.tombstones.insert(id) {
            self.tombstone_order.push_back(id);
            while self.tombstone_order.len() > self.limits.max_traces {
                if let Some(old) = self.tombstone_order.pop_front() {
                    self.tombstones.remove(&old);
                }
            }
        }
    }

    /// Ends a run of one trace's spans in a batch (see `push_sized`): the
    /// room reserved for spans that were then refused is given back, so an
    /// open trace keeps at most a quarter of slack, as when it grows.
    pub fn end_run(&mut self, id: &TraceId) {
        let Some(b) = self.traces.get_mut(id) else {
            return;
        };
        b.held.trim();
        let bytes = held_bytes(&b.held);
        self.bytes = self.bytes - b.bytes + bytes;
        if b.leaving {
            self.leaving_bytes = self.leaving_bytes - b.bytes + bytes;
        }
        b.bytes = bytes;
    }

    /// A trace stops counting against its service's quota.
    fn release_service(&mut self, service: Option<Arc<str>>) {
        let Some(service) = service else { return };
        if let Some(n) = self.per_service.get_mut(&service) {
            *n -= 1;
            if *n == 0 {
                self.per_service.remove(&service);
            }
        }
    }

    fn forget(&mut self, id: TraceId) {
        if let Some(mut b) = self.traces.remove(&id) {
            self.release_service(b.service.take());
            self.deadlines.remove(&(b.indexed, id));
            self.bytes -= b.bytes;
            self.spans -= b.held.span_count();
            self.encoded -= b.encoded;
            if b.due_soon() {
                self.unroot(b.held.span_count());
            }
            if matches!(b.state, State::Open) {
                self.open -= 1;
            }
            if b.leaving {
                self.leaving_bytes -= b.bytes;
                self.leaving_traces -= 1;
            }
        }
    }

    /// Adds one span given as a `Span` (the tests' way in; the driver
    /// pushes the receivers' records). The caller counts the outcome.
    pub fn push(&mut self, span: Span, now: Instant) -> Push {
        let p = Records::from_spans(&[span], &self.limits.keys);
        self.push_record(&p, 0, Run::default(), now)
    }

    /// [`push`](Self::push) with an encoded size, and `following` spans of
    /// this one's size known to follow (for the tests of sizing).
    #[cfg(test)]
    pub fn push_sized(
        &mut self,
        span: Span,
        encoded: usize,
        following: usize,
        now: Instant,
    ) -> Push {
        let mut p = Records::from_spans(&[span], &self.limits.keys);
        p.end(u32::try_from(encoded).unwrap_or(u32::MAX));
        let run = Run {
            spans: following,
            bytes: following.saturating_mul(p.record_size(0)),
        };
        self.push_record(&p, 0, run, now)
    }

    /// Adds span `i` of a request's span records, with the `run` of the
    /// same trace's spans that come right after it in the request (a
    /// request usually carries a trace's spans together): the trace's
    /// buffer is sized for them at once instead of growing span by span.
    /// An index past the request (a caller's bug) is refused as corrupt.
    pub fn push_record(&mut self, p: &Records, i: usize, run: Run, now: Instant) -> Push {
        let (Some(&span), Some(record)) = (p.spans().get(i), p.record(i)) else {
            tracing::error!(index = i, "refusing a span: its index is past the request");
            return Push::Corrupt;
        };
        let encoded = span.encoded as usize;
        let id = span.trace_id;
        let size = record.len() + std::mem::size_of::<SpanId>();
        if self.tombstones.contains(&id) {
            self.counts.late_dropped += 1;
            return Push::TooLate;
        }
        if let Some(b) = self.traces.get(&id) {
            let dup = match &b.ids {
                Some(ids) => ids.contains(&span.span_id),
                None => b.held.contains(&span.span_id),
            };
            if dup {
                return Push::Duplicate;
            }
            if b.held.span_count() >= self.limits.max_spans_per_trace {
                return Push::TraceFull;
            }
        }
        let new_trace = !self.traces.contains_key(&id);
        // Quota first: one service's new traces must not evict (or time
        // out) anyone's to make room.
        let quota = self.limits.max_traces_per_service;
        let service: Option<Arc<str>> = if new_trace && quota > 0 {
            p.service_of(i).map(Arc::from)
        } else {
            None
        };
        if let Some(s) = &service
            && self.per_service.get(s).copied().unwrap_or(0) >= quota
        {
            return Push::ServiceFull;
        }
        let need = size
            + if new_trace {
                std::mem::size_of::<Held>()
            } else {
                0
            };
        if !self.make_room(need, new_trace, now) {
            return Push::Full;
        }
        let is_root = span.root;
        // Never room for more spans than the trace may hold.
        let room = {
            let spans = self
                .limits
                .max_spans_per_trace
                .saturating_sub(1)
                .min(run.spans);
            Run {
                spans,
                bytes: if spans < run.spans {
                    run.bytes / run.spans * spans
                } else {
                    run.bytes
                },
            }
        };
        let mut new_deadline = None;
        match self.traces.get_mut(&id) {
            Some(b) => {
                b.held.push(record, span.span_id, room);
                b.encoded += encoded;
                b.last_seen = now;
                let bytes = held_bytes(&b.held);
                self.bytes = self.bytes - b.bytes + bytes;
                if b.leaving {
                    self.leaving_bytes = self.leaving_bytes - b.bytes + bytes;
                }
                b.bytes = bytes;
                match &mut b.ids {
                    Some(ids) => {
                        ids.insert(span.span_id);
                    }
                    None if !b.held.is_sealed() && b.held.span_count() > ID_SET_FROM => {
                        b.ids = Some(b.held.ids().iter().copied().collect());
                    }
                    None => {}
                }
                match b.state {
                    // A leaving trace stays due now: a root makes it complete.
                    State::Open if b.leaving => {
                        self.rooted_spans += 1;
                        if is_root && b.root_arrived.is_none() {
                            b.root_arrived = Some(now);
                        }
                    }
                    State::Open => {
                        if b.root_arrived.is_some() {
                            self.rooted_spans += 1;
                        } else if is_root {
                            b.root_arrived = Some(now);
                            new_deadline = Some(now + self.limits.grace);
                            self.rooted_spans += b.held.span_count();
                            self.rooted_traces += 1;
                        } else {
                            new_deadline = Some(open_deadline(b.first_seen, now, &self.limits));
                        }
                    }
                    State::Emitted { spans, .. } => {
                        // Re-evaluate after a grace period, so a burst of late spans
                        // gives one revision.
                        if is_root && b.root_arrived.is_none() {
                            b.root_arrived = Some(now);
                        }
                        if !b.dirty && b.held.span_count() > spans {
                            b.dirty = true;
                            new_deadline = Some(now + self.limits.grace);
                        }
                    }
                }
                self.spans += 1;
                self.encoded += encoded;
            }
            None => {
                let deadline = if is_root {
                    now + self.limits.grace
                } else {
                    open_deadline(now, now, &self.limits)
                };
                let mut held = Held::default();
                held.push(record, span.span_id, room);
                let bytes = held_bytes(&held);
                self.traces.insert(
                    id,
                    Buffer {
                        held,
                        encoded,
                        ids: None,
                        bytes,
                        first_seen: now,
                        last_seen: now,
                        service: service.clone(),
                        root_arrived: is_root.then_some(now),
                        deadline,
                        indexed: deadline,
                        state: State::Open,
                        dirty: false,
                        pin: Pin::default(),
                        leaving: false,
                    },
                );
                self.deadlines.insert((deadline, id));
                if let Some(s) = service {
                    *self.per_service.entry(s).or_insert(0) += 1;
                }
                self.bytes += bytes;
                self.spans += 1;
                self.encoded += encoded;
                self.open += 1;
                if is_root {
                    self.rooted_spans += 1;
                    self.rooted_traces += 1;
                }
            }
        }
        if let Some(d) = new_deadline {
            self.set_deadline(id, d);
        }
        Push::Accepted
    }

    /// A trace whose result (`revision`, of `spans` spans) was stored before
    /// a restart, as an evaluated one kept for late spans: its spans read
    /// back from the log come next, and only spans beyond those make a new
    /// revision. Nothing if the trace is already buffered.
    pub fn restore(&mut self, id: TraceId, revision: u32, spans: usize, now: Instant) {
        if self.traces.contains_key(&id) {
            return;
        }
        let held = Held::default();
        let bytes = held_bytes(&held);
        let deadline = now + self.limits.late_window;
        self.traces.insert(
            id,
            Buffer {
                held,
                encoded: 0,
                ids: None,
                bytes,
                first_seen: now,
                last_seen: now,
                service: None,
                root_arrived: None,
                deadline,
                indexed: deadline,
                state: State::Emitted { revision, spans },
                dirty: false,
                pin: Pin::default(),
                leaving: false,
            },
        );
        self.deadlines.insert((deadline, id));
        self.emitted_order.push_back((now, id));
        self.bytes += bytes;
    }

    /// Forgets the evaluated trace kept longest for late spans (its late
    /// window cut short): to make room for new spans, and when the log
    /// fills. False when none is left.
    pub fn evict_emitted(&mut self) -> bool {
        while let Some((_, id)) = self.emitted_order.pop_front() {
            if matches!(self.traces.get(&id), Some(b) if matches!(b.state, State::Emitted { .. }) && !b.dirty)
            {
                self.forget(id);
                self.tombstone(id);
                self.counts.evicted_emitted += 1;
                return true;
            }
        }
        false
    }

    /// Keeps log `segment` of `wal` while trace `id` is buffered (called for
    /// each accepted span).
    pub fn hold(&mut self, id: &TraceId, wal: &Wal, segment: u64) {
        if let Some(b) = self.traces.get_mut(id) {
            b.pin.hold(wal, segment);
        }
    }

    /// Emits every trace whose deadline is at or before `now` (for tests and
    /// benchmarks; the driver takes them one at a time).
    pub fn expire(&mut self, now: Instant) -> Vec<Ready> {
        std::iter::from_fn(|| self.expire_next(now)).collect()
    }

    /// The next trace due at `now` that is to be evaluated, handling the
    /// deadlines before it that are not (a late window closing, a timed-out
    /// trace dropped). One at a time, so the driver emits a trace (and
    /// decodes it) only once the evaluation queue has room
    /// for it: a shard held by a full queue keeps its due traces in the
    /// buffer, not in a list of emitted traces beside it.
    pub fn expire_next(&mut self, now: Instant) -> Option<Ready> {
        while let Some(&(deadline, id)) = self.deadlines.first() {
            if deadline > now {
                break;
            }
            self.deadlines.pop_first();
            if self.traces.get(&id).is_some_and(|b| b.deadline > now) {
                // Filed early (its deadline moved later since): file it again.
                self.reindex(id);
                continue;
            }
            if let Some(r) = self.on_deadline(id, now) {
                return Some(r);
            }
        }
        None
    }

    fn on_deadline(&mut self, id: TraceId, now: Instant) -> Option<Ready> {
        let b = self.traces.get(&id)?;
        match b.state {
            State::Open if b.leaving => self.leave(id, now),
            State::Open => {
                let complete = b.root_arrived.is_some();
                if !complete && self.limits.on_timeout == OnTimeout::Drop {
                    self.counts.timed_out_dropped += 1;
                    self.forget(id);
                    return None;
                }
                let reason = if complete {
                    Reason::Complete
                } else {
                    Reason::TimedOut
                };
                let ready = self.emit(id, now, 1, reason)?;
                if complete {
                    self.counts.completed += 1;
                } else {
                    self.counts.timed_out += 1;
                }
                Some(ready)
            }
            State::Emitted { revision, .. } if b.dirty => {
                let ready = self.emit(id, now, revision + 1, Reason::Revised)?;
                self.counts.revised += 1;
                Some(ready)
            }
            State::Emitted { .. } => {
                // The late window closed: forget the trace, remember its ID.
                self.forget(id);
                self.tombstone(id);
                None
            }
        }
    }

    /// Hands a trace to evaluation (its first evaluation or a revision); it
    /// stays for the late-span window, its records sealed.
    fn emit(&mut self, id: TraceId, now: Instant, revision: u32, reason: Reason) -> Option<Ready> {
        let spans = self.spans_of(id)?;
        let late_window = self.limits.late_window;
        let b = self.traces.get_mut(&id)?;
        let ready = Ready {
            trace_id: id,
            spans,
            complete: b.root_arrived.is_some(),
            revision,
            reason,
            root_arrived: b.root_arrived,
            due: b.deadline,
            pin: b.pin.share(),
            ticket: Ticket::default(),
        };
        let unrooted = b.due_soon().then(|| b.held.span_count());
        let released = if matches!(b.state, State::Open) {
            self.open -= 1;
            b.service.take()
        } else {
            None
        };
        b.state = State::Emitted {
            revision,
            spans: b.held.span_count(),
        };
        b.dirty = false;
        b.deadline = now + late_window;
        b.held.seal();
        b.ids = None;
        let bytes = held_bytes(&b.held);
        self.bytes = self.bytes - b.bytes + bytes;
        b.bytes = bytes;
        self.reindex(id);
        self.emitted_order.push_back((now, id));
        self.release_service(released);
        if let Some(spans) = unrooted {
            self.unroot(spans);
        }
        Some(ready)
    }

    /// A trace's spans, checked; `None` if the trace is not buffered or
    /// its records do not read back, which would be a bug: the trace is
    /// then forgotten rather than evaluated wrongly.
    fn spans_of(&mut self, id: TraceId) -> Option<Arc<Spans>> {
        match self.traces.get(&id)?.held.spans(id, &self.limits.keys) {
            Ok(spans) => Some(Arc::new(spans)),
            Err(e) => {
                tracing::error!(trace_id = %id, error = %e, "dropping a buffered trace");
                self.forget(id);
                self.tombstone(id);
                self.counts.corrupt_dropped += 1;
                None
            }
        }
    }

    /// Every trace held, in trace ID order: what shutdown drains, one
    /// [`drain_one`](Self::drain_one) at a time, so that a full buffer is
    /// decoded as the evaluation queue takes it, not all at once.
    pub fn held_ids(&self) -> Vec<TraceId> {
        let mut ids: Vec<TraceId> = self.traces.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// Shutdown, for one trace: emits it if open (a complete one as
    /// complete; a rootless one per `on_timeout`) or holding a pending
    /// revision, and forgets it.
    pub fn drain_one(&mut self, id: TraceId) -> Option<Ready> {
        let b = self.traces.get(&id)?;
        let (complete, open) = (b.root_arrived.is_some(), matches!(b.state, State::Open));
        let (root_arrived, due) = (b.root_arrived, b.deadline);
        let (revision, emit) = match b.state {
            State::Open => (1, complete || self.limits.on_timeout == OnTimeout::Evaluate),
            State::Emitted { revision, .. } => (revision + 1, b.dirty),
        };
        let mut out = None;
        if emit {
            if let Some(spans) = self.spans_of(id) {
                match (open, complete) {
                    (false, _) => self.counts.revised += 1,
                    (true, true) => self.counts.completed += 1,
                    (true, false) => self.counts.timed_out += 1,
                }
                let pin = self
                    .traces
                    .get_mut(&id)
                    .map(|b| std::mem::take(&mut b.pin))
                    .unwrap_or_default();
                out = Some(Ready {
                    trace_id: id,
                    spans,
                    complete,
                    revision,
                    reason: Reason::Shutdown,
                    root_arrived,
                    due,
                    pin,
                    ticket: Ticket::default(),
                });
            }
        } else if open {
            self.counts.timed_out_dropped += 1;
        }
        self.forget(id);
        out
    }
}

/// What a trace holds, for the byte accounting: its records, its entry in
/// the map and its entries in the deadline index and the tombstones.
fn held_bytes(c: &Held) -> usize {
    TRACE_OVERHEAD + c.heap_bytes()
}

const TRACE_OVERHEAD: usize = std::mem::size_of::<(TraceId, Buffer)>()
    + std::mem::size_of::<(Instant, TraceId)>()
    + 2 * std::mem::size_of::<TraceId>();

/// An open rootless trace's deadline: idle timeout from the last span,
/// capped by the age limit from the first.
fn open_deadline(first_seen: Instant, now: Instant, l: &Limits) -> Instant {
    (now + l.idle_timeout).min(first_seen + l.max_age)
}

//! Live judgements: the LLM-judged scores of traces the service evaluates,
//! off the evaluation workers.
//!
//! A trace's deterministic scores are stored as soon as it is evaluated,
//! with a `pending` score in the place of each judge that will run. Its
//! judges then run here, as tasks (a model call takes seconds, and waits
//! on the network, not the CPU), and the record is stored again with the
//! same revision and their scores in those places. A judge that will not
//! run is settled at once, as `skipped` with the reason: its trace is not in
//! the sample, or the queue of traces awaiting judgement is full.
//!
//! The queue is bounded in traces and bytes (`llm.max_queued_traces`,
//! `llm.max_queued_bytes`); each provider bounds its own requests in flight.
//! At shutdown, judgements still running when the drain's deadline comes
//! are stored as `skipped`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use futures_util::FutureExt;
use futures_util::stream::{FuturesUnordered, StreamExt};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::Judges;
use super::config::LlmConfig;
use crate::criteria::ItemEvaluator;
use crate::evaluator::{Outcome, Status};
use crate::extract::{ExtractConfig, ToolCall};
use crate::record::Spans;
use crate::span::TraceId;
use crate::store::{JudgedUpdate, ResultStore, StoredResult};

impl crate::scoring::Judging for Arc<Live> {
    fn prepare(
        &self,
        record: &mut StoredResult,
        judges: Vec<(usize, ItemEvaluator)>,
        spans: &Arc<Spans>,
        calls: Vec<ToolCall>,
    ) -> Option<Box<dyn FnOnce() + Send>> {
        let job = Live::prepare(self, record, judges, spans, calls)?;
        let live = self.clone();
        Some(Box::new(move || live.start(job)))
    }
}

/// Why a judge did not run (the `reason` label of
/// `toolscore_llm_judgements_skipped_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Skip {
    NotSampled,
    QueueFull,
    Shutdown,
}

impl Skip {
    fn label(self) -> &'static str {
        match self {
            Skip::NotSampled => "not_sampled",
            Skip::QueueFull => "queue_full",
            Skip::Shutdown => "shutdown",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SkipLabel {
    reason: &'static str,
}

/// The skip counters, looked up once: a full queue skips every trace's
/// judges, so this is on the evaluation workers' path.
#[derive(Debug, Clone)]
struct SkipCounters {
    not_sampled: Counter,
    queue_full: Counter,
    shutdown: Counter,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: &'static str,
}

/// The live judgements' metrics, under `toolscore_llm_*`.
#[derive(Debug, Clone)]
struct LiveMetrics {
    judgements: Family<StatusLabel, Counter>,
    skipped: SkipCounters,
    queued_traces: Gauge,
    queued_bytes: Gauge,
    seconds: Histogram,
}

impl LiveMetrics {
    fn register(registry: &mut Registry) -> LiveMetrics {
        let skipped = Family::<SkipLabel, Counter>::default();
        let counter = |why: Skip| {
            skipped
                .get_or_create(&SkipLabel {
                    reason: why.label(),
                })
                .clone()
        };
        let m = LiveMetrics {
            judgements: Family::default(),
            skipped: SkipCounters {
                not_sampled: counter(Skip::NotSampled),
                queue_full: counter(Skip::QueueFull),
                shutdown: counter(Skip::Shutdown),
            },
            queued_traces: Gauge::default(),
            queued_bytes: Gauge::default(),
            seconds: Histogram::new(exponential_buckets(0.05, 2.0, 12)),
        };
        let sub = registry.sub_registry_with_prefix("llm");
        sub.register(
            "judgements",
            "LLM-judged scores settled live, by status (skipped ones included)",
            m.judgements.clone(),
        );
        sub.register(
            "judgements_skipped",
            "LLM judges that did not run, by reason",
            skipped,
        );
        sub.register(
            "queued_traces",
            "Traces waiting for, or in, their LLM judgement",
            m.queued_traces.clone(),
        );
        sub.register_with_unit(
            "queued",
            "The queued traces' spans and records, estimated",
            Unit::Bytes,
            m.queued_bytes.clone(),
        );
        sub.register_with_unit(
            "judgement",
            "From a trace's evaluation to its judged scores being stored",
            Unit::Seconds,
            m.seconds.clone(),
        );
        m
    }
}

/// The judgements of one evaluated trace, between its two publications.
pub struct Job {
    record: StoredResult,
    spans: Arc<Spans>,
    /// The calls evaluation extracted, read by the judges.
    calls: Vec<ToolCall>,
    judges: Vec<(usize, ItemEvaluator)>,
    bytes: usize,
    evaluated: Instant,
}

/// What a job's extracted calls hold, estimated from the record's kept
/// calls: the same texts, parsed (arguments as a dict, the raw output
/// beside its text), so counted twice.
fn calls_bytes(record: &StoredResult) -> usize {
    record.tool_calls.approx_bytes().saturating_mul(2)
}

/// Schedules the live judgements (see the module's documentation).
pub struct Live {
    judges: Arc<Judges>,
    extract: Arc<ExtractConfig>,
    store: Arc<dyn ResultStore>,
    sample_rate: f64,
    sample_rates: std::collections::BTreeMap<String, f64>,
    max_traces: usize,
    max_bytes: usize,
    queued: Mutex<(usize, usize)>,
    metrics: LiveMetrics,
    tasks: TaskTracker,
    /// Cancelled at the drain's deadline: what is still running is stored
    /// as `skipped`.
    give_up: CancellationToken,
    runtime: tokio::runtime::Handle,
    /// Judgements running now (for tests and the drain's log line).
    running: AtomicUsize,
}

impl Live {
    /// Must be called on the runtime the judgements run on.
    pub fn new(
        config: &LlmConfig,
        judges: Arc<Judges>,
        extract: Arc<ExtractConfig>,
        store: Arc<dyn ResultStore>,
        registry: &mut Registry,
    ) -> Live {
        Live {
            judges,
            extract,
            store,
            sample_rate: config.sample_rate,
            sample_rates: config.sample_rates.clone(),
            max_traces: config.max_queued_traces,
            max_bytes: config.max_queued_bytes,
            queued: Mutex::new((0, 0)),
            metrics: LiveMetrics::register(registry),
            tasks: TaskTracker::new(),
            give_up: CancellationToken::new(),
            runtime: tokio::runtime::Handle::current(),
            running: AtomicUsize::new(0),
        }
    }

    /// Settles, in `record`, the judges that will not run (their outcome
    /// instead of `pending`), and reserves a place in the queue for the
    /// others: the job to [`start`](Self::start) once `record` is stored.
    pub fn prepare(
        &self,
        record: &mut StoredResult,
        judges: Vec<(usize, ItemEvaluator)>,
        spans: &Arc<Spans>,
        calls: Vec<ToolCall>,
    ) -> Option<Job> {
        let mut kept = Vec::with_capacity(judges.len());
        for (i, ie) in judges {
            let ev = &ie.evaluator;
            let rate = self.sample_rates.get(&*ev.id).copied();
            let settled = if let Some(why) = self.judges.missing_provider(ev) {
                // A judge without a provider cannot run anywhere: an error
                // naming why, as `toolscore eval` and /v1/evaluate give.
                Some(super::no_provider(ev, why))
            } else if !sampled(&record.trace_id, rate.unwrap_or(self.sample_rate)) {
                self.skipped(Skip::NotSampled);
                let key = match rate {
                    Some(r) => format!("llm.sample_rates.{} is {r}", ev.id),
                    None => format!("llm.sample_rate is {}", self.sample_rate),
                };
                Some(Outcome::skipped(format!(
                    "{} was not judged: the trace is not in the sample ({key})",
                    ev.id
                )))
            } else {
                None
            };
            match settled {
                Some(outcome) => set(record, i, outcome),
                None => kept.push((i, ie)),
            }
        }
        if kept.is_empty() {
            return None;
        }
        // Sized only when the count leaves room: under load the queue is
        // full for most traces.
        let room = self.lock().0 < self.max_traces;
        let bytes = match room {
            true => record
                .approx_bytes()
                .saturating_add(spans.heap_bytes())
                .saturating_add(calls_bytes(record)),
            false => 0,
        };
        if !room || !self.reserve(bytes) {
            for (i, ie) in &kept {
                self.skipped(Skip::QueueFull);
                let why = format!(
                    "{} was not judged: the queue of traces awaiting judgement is full (llm.max_queued_traces {}, llm.max_queued_bytes {})",
                    ie.evaluator.id, self.max_traces, self.max_bytes
                );
                set(record, *i, Outcome::skipped(why));
            }
            return None;
        }
        Some(Job {
            record: record.clone(),
            spans: spans.clone(),
            calls,
            judges: kept,
            bytes,
            evaluated: Instant::now(),
        })
    }

    /// Starts a prepared job's judgements. Never blocks.
    pub fn start(self: &Arc<Self>, job: Job) {
        let live = self.clone();
        self.tasks.spawn_on(live.judge(job), &self.runtime);
    }

    async fn judge(self: Arc<Self>, job: Job) {
        self.running.fetch_add(1, Ordering::Relaxed);
        let Job {
            mut record,
            spans,
            calls,
            judges,
            bytes,
            evaluated,
        } = job;
        let view = super::trace_view(&spans, &calls, &self.extract);
        let mut running: FuturesUnordered<_> = judges
            .iter()
            .map(|(i, ie)| {
                // A panic (a bug) costs this score, not the others or the task.
                std::panic::AssertUnwindSafe(self.judges.judge(&ie.evaluator, &ie.criteria, view))
                    .catch_unwind()
                    .map(move |r| (*i, r))
            })
            .collect();
        let mut update = JudgedUpdate::default();
        loop {
            tokio::select! {
                next = running.next() => {
                    let Some((i, result)) = next else { break };
                    let (outcome, call) = result.unwrap_or_else(|_| {
                        tracing::error!(trace_id = %record.trace_id, "an LLM judge panicked");
                        (Outcome::error("the judge failed (a bug in toolscore; see its log)"), None)
                    });
                    set(&mut record, i, outcome);
                    update.scores.push((i, call));
                }
                () = self.give_up.cancelled() => break,
            }
        }
        drop(running);
        for (i, ie) in &judges {
            if record.scores[*i].outcome.status == Status::Pending {
                self.skipped(Skip::Shutdown);
                let why = format!(
                    "{} was not judged: toolscore stopped before the model answered",
                    ie.evaluator.id
                );
                set(&mut record, *i, Outcome::skipped(why));
                update.scores.push((*i, None));
            }
        }
        update.scores.sort_by_key(|(i, _)| *i);
        for (i, _) in &update.scores {
            let status = record.scores[*i].outcome.status.as_str();
            self.metrics
                .judgements
                .get_or_create(&StatusLabel { status })
                .inc();
        }
        record.judged = Some(Box::new(update));
        record.evaluated_at = Some(SystemTime::now());
        let store = self.store.clone();
        // A database store's `put` blocks while its writer's queue is full.
        let stored = tokio::task::spawn_blocking(move || {
            store.put(record, Instant::now());
        })
        .await;
        if let Err(e) = stored {
            tracing::error!(error = %e, "storing judged scores failed");
        }
        self.metrics
            .seconds
            .observe(evaluated.elapsed().as_secs_f64());
        self.release(bytes);
        self.running.fetch_sub(1, Ordering::Relaxed);
    }

    /// Waits for the judgements in flight until `deadline`, then stores
    /// what is still unanswered as `skipped`. Call once evaluation has
    /// drained (nothing is started after).
    pub async fn drain(&self, deadline: tokio::time::Instant) {
        self.tasks.close();
        if tokio::time::timeout_at(deadline, self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                traces = self.running.load(Ordering::Relaxed),
                "LLM judgements still running at the shutdown deadline are stored as skipped"
            );
            self.give_up.cancel();
            self.tasks.wait().await;
        }
    }

    fn skipped(&self, why: Skip) {
        let s = &self.metrics.skipped;
        match why {
            Skip::NotSampled => s.not_sampled.inc(),
            Skip::QueueFull => s.queue_full.inc(),
            Skip::Shutdown => s.shutdown.inc(),
        };
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (usize, usize)> {
        self.queued.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place in the queue for a trace of `bytes`, if both bounds allow
    /// (a trace larger than `max_bytes` alone is admitted into an empty
    /// queue, or it could never be judged).
    fn reserve(&self, bytes: usize) -> bool {
        let mut q = self.lock();
        let (traces, queued) = *q;
        if traces >= self.max_traces
            || (traces > 0 && queued.saturating_add(bytes) > self.max_bytes)
        {
            return false;
        }
        *q = (traces + 1, queued.saturating_add(bytes));
        self.gauges(*q);
        true
    }

    fn release(&self, bytes: usize) {
        let mut q = self.lock();
        *q = (q.0.saturating_sub(1), q.1.saturating_sub(bytes));
        self.gauges(*q);
    }

    fn gauges(&self, (traces, bytes): (usize, usize)) {
        self.metrics
            .queued_traces
            .set(i64::try_from(traces).unwrap_or(i64::MAX));
        self.metrics
            .queued_bytes
            .set(i64::try_from(bytes).unwrap_or(i64::MAX));
    }
}

fn set(record: &mut StoredResult, i: usize, outcome: Outcome) {
    if let Some(score) = record.scores.get_mut(i) {
        score.outcome = outcome.into();
    }
}

/// Whether a trace is in a sample of `rate`: its ID's low 56 bits (the
/// random part W3C Trace Context level 2 asks for) against the rate's
/// share of 2⁵⁶, as OpenTelemetry's consistent ratio samplers compare them.
pub fn sampled(trace_id: &TraceId, rate: f64) -> bool {
    if rate >= 1.0 {
        return true;
    }
    let mut low = [0u8; 8];
    low[1..].copy_from_slice(&trace_id.0[9..]);
    let random = u64::from_be_bytes(low);
    // 2⁵⁶ × rate is below 2⁵⁶ here: the cast cannot saturate wrongly.
    let threshold = (rate.max(0.0) * (1u64 << 56) as f64) as u64;
    random < threshold
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_is_by_the_trace_ids_random_bits() {
        let id = |low: u8| {
            let mut b = [0xff; 16];
            b[9..].copy_from_slice(&[low, 0, 0, 0, 0, 0, 0]);
            TraceId(b)
        };
        // 0x40… is a quarter of 2⁵⁶: in a sample of 0.3, not of 0.2.
        assert!(sampled(&id(0x40), 0.3));
        assert!(!sampled(&id(0x40), 0.2));
        assert!(!sampled(&id(0), 0.0));
        assert!(sampled(&id(0xff), 1.0));
        // The high bytes do not count.
        let mut other = id(0x40);
        other.0[0] = 0;
        assert_eq!(sampled(&other, 0.3), sampled(&id(0x40), 0.3));
    }

    #[test]
    fn a_sample_rate_picks_about_its_share() {
        let n = 20_000u32;
        let picked = (0..n)
            .filter(|i| {
                let mut b = [0u8; 16];
                // Spread like random IDs: a multiplicative hash of i.
                let x = u64::from(*i).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                b[8..].copy_from_slice(&x.to_be_bytes());
                sampled(&TraceId(b), 0.25)
            })
            .count();
        let share = picked as f64 / f64::from(n);
        assert!((0.23..0.27).contains(&share), "{share}");
    }
}

//! Admission: a request's spans are taken while the evaluation backlog
//! ([`Backlog`]) is under its limit, and otherwise wait for evaluation to
//! drain it, at most `max_wait_ms`; then the request is refused with a
//! retry delay (UNAVAILABLE + RetryInfo / 503 + Retry-After), which the
//! OTLP exporters honour. So intake follows the rate evaluation drains
//! (on one CPU they share it) instead of filling every buffer at decode
//! speed and then holding every sender while evaluation catches up.
//!
//! The limit is what evaluation drains in the grace period plus
//! `max_backlog_ms`, at the drain rate measured here (and never less than
//! `min_backlog_spans`, so a start or a quiet spell admits at once): in a
//! steady state the backlog is the grace period's worth of intake, under
//! it; past capacity the part already due stays near `max_backlog_ms`.

use std::num::{NonZero, NonZeroU64};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::assembler::{Backlog, Level};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdmissionConfig {
    /// How long a request may wait for the evaluation backlog to fall under
    /// its limit before it is refused, retryably.
    pub max_wait_ms: u64,
    /// Evaluation work queued beyond the grace period's, in milliseconds of
    /// evaluation at the measured drain rate: the due → scores latency a
    /// saturated service settles at.
    pub max_backlog_ms: u64,
    /// Spans the backlog may always hold, whatever the measured rate. Not
    /// 0: that would refuse everything until something was evaluated,
    /// which nothing then would be.
    pub min_backlog_spans: NonZeroU64,
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        AdmissionConfig {
            max_wait_ms: 200,
            // Room for evaluation's pauses (an SQLite checkpoint) without
            // holding requests below capacity (perf/README.md).
            max_backlog_ms: 1000,
            min_backlog_spans: const { NonZero::new(65_536).unwrap() },
        }
    }
}

/// The longest retry delay suggested: past it a client would sit idle long
/// after the backlog is gone.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// The shortest: a client told to come back at once would spend its retries
/// (and our decoding) on a backlog that drains in steps.
const MIN_RETRY_AFTER: Duration = Duration::from_millis(250);

/// How often the drain rate is measured and the gauges are set.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// The drain rate is the spans evaluated over this window: a short window's
/// rate swings, which made the limit jump by a large share of the backlog
/// and held every waiting request until evaluation caught up.
const RATE_WINDOW: Duration = Duration::from_secs(2);

/// The admission metrics, registered under the service's prefix.
#[derive(Clone)]
pub struct AdmissionMetrics {
    wait_seconds: Histogram,
    backlog_spans: Gauge,
    backlog_traces: Gauge,
    backlog_seconds: Gauge<f64, std::sync::atomic::AtomicU64>,
    limit_spans: Gauge,
    drain_rate: Gauge<f64, std::sync::atomic::AtomicU64>,
}

impl AdmissionMetrics {
    pub fn register(registry: &mut Registry) -> AdmissionMetrics {
        let m = AdmissionMetrics {
            wait_seconds: Histogram::new([
                0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.5, 1.0, 2.5,
            ]),
            backlog_spans: Gauge::default(),
            backlog_traces: Gauge::default(),
            backlog_seconds: Gauge::default(),
            limit_spans: Gauge::default(),
            drain_rate: Gauge::default(),
        };
        registry.register_with_unit(
            "admission_wait",
            "Time export requests waited for the evaluation backlog before being taken or refused",
            Unit::Seconds,
            m.wait_seconds.clone(),
        );
        registry.register(
            "evaluation_backlog_spans",
            "Spans accepted and not yet evaluated: open traces with their root, and traces in evaluation",
            m.backlog_spans.clone(),
        );
        registry.register(
            "evaluation_backlog_traces",
            "Traces accepted and not yet evaluated: open with their root, or in evaluation",
            m.backlog_traces.clone(),
        );
        registry.register_with_unit(
            "evaluation_backlog",
            "The evaluation backlog in estimated seconds of evaluation at the measured drain rate",
            Unit::Seconds,
            m.backlog_seconds.clone(),
        );
        registry.register(
            "admission_limit_spans",
            "The evaluation backlog above which export requests wait",
            m.limit_spans.clone(),
        );
        registry.register(
            "evaluation_drain_rate_spans_per_second",
            "Spans evaluated a second (moving average while evaluating)",
            m.drain_rate.clone(),
        );
        m
    }
}

/// The receivers' gate. Cheap to share.
pub struct Admission {
    backlog: Arc<Backlog>,
    /// Waiting requests queue here, first come first served (tokio's mutex
    /// is fair): only the first waits for the backlog, so the others' waits
    /// are alike rather than some waking to find others took the room.
    line: tokio::sync::Mutex<()>,
    max_wait: Duration,
    /// Grace period plus `max_backlog_ms`, in seconds.
    horizon_secs: f64,
    min_spans: u64,
    /// The measured drain rate (spans a second), as `f64` bits.
    rate: AtomicU64,
    metrics: AdmissionMetrics,
}

/// Why a request was not admitted, and when to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backlogged {
    pub retry_after: Duration,
}

impl Admission {
    pub fn new(
        config: &AdmissionConfig,
        grace: Duration,
        backlog: Arc<Backlog>,
        metrics: AdmissionMetrics,
    ) -> Arc<Admission> {
        let horizon = grace.saturating_add(Duration::from_millis(config.max_backlog_ms));
        Arc::new(Admission {
            backlog,
            line: tokio::sync::Mutex::new(()),
            max_wait: Duration::from_millis(config.max_wait_ms),
            horizon_secs: horizon.as_secs_f64(),
            min_spans: config.min_backlog_spans.get(),
            rate: AtomicU64::new(0f64.to_bits()),
            metrics,
        })
    }

    fn rate(&self) -> f64 {
        f64::from_bits(self.rate.load(Ordering::Relaxed))
    }

    /// The backlog (in spans) above which requests wait.
    pub fn limit(&self) -> u64 {
        // A float → integer `as` saturates; the rate is finite and ≥ 0.
        ((self.rate() * self.horizon_secs) as u64).max(self.min_spans)
    }

    /// Waits until the backlog is under the limit (then the request's spans
    /// may be taken), for `max_wait_ms` at most.
    pub async fn admit(&self) -> Result<(), Backlogged> {
        let started = Instant::now();
        // Under the limit with nobody waiting: taken at once.
        if self.line.try_lock().is_ok() && self.backlog.level().spans < self.limit() {
            self.metrics.wait_seconds.observe(0.0);
            return Ok(());
        }
        let wait = async {
            let _first = self.line.lock().await;
            loop {
                let (spans, limit) = (self.backlog.level().spans, self.limit());
                if spans < limit {
                    return;
                }
                // Woken when evaluation has drained the excess (or the
                // limit moved, at the next sample).
                let excess = spans - limit + 1;
                let at = self.backlog.evaluated_spans().saturating_add(excess);
                self.backlog.drained(at).await;
            }
        };
        let verdict = match tokio::time::timeout_at(started + self.max_wait, wait).await {
            Ok(()) => Ok(()),
            Err(_) => Err(Backlogged {
                retry_after: self.retry_after(self.backlog.level()),
            }),
        };
        self.metrics
            .wait_seconds
            .observe(started.elapsed().as_secs_f64());
        verdict
    }

    /// The time evaluation needs to bring the backlog under the limit at the
    /// measured rate (one second while no rate is measured), from
    /// [`MIN_RETRY_AFTER`] to [`MAX_RETRY_AFTER`], to the millisecond: gRPC's
    /// `RetryInfo` carries it as it is, HTTP's `Retry-After` in whole seconds.
    fn retry_after(&self, level: Level) -> Duration {
        let excess = level.spans.saturating_sub(self.limit()) as f64;
        let rate = self.rate();
        let secs = if rate > 0.0 { excess / rate } else { 1.0 };
        let ms = (secs * 1000.0).ceil().clamp(
            MIN_RETRY_AFTER.as_millis() as f64,
            MAX_RETRY_AFTER.as_millis() as f64,
        );
        // Finite and within the clamp: the cast is exact.
        Duration::from_millis(ms as u64)
    }

    /// Measures the drain rate over the last [`RATE_WINDOW`] and sets the
    /// gauges, every [`SAMPLE_EVERY`], until `stop`. The rate keeps its last
    /// value while nothing is evaluated, so a quiet spell does not shrink
    /// the limit.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let mut tick = tokio::time::interval(SAMPLE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut samples = std::collections::VecDeque::new();
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            let now = (Instant::now(), self.backlog.evaluated_spans());
            samples.push_back(now);
            while samples
                .front()
                .is_some_and(|&(t, _)| now.0.duration_since(t) > RATE_WINDOW)
            {
                samples.pop_front();
            }
            if let Some(&(t, n)) = samples.front() {
                let secs = now.0.duration_since(t).as_secs_f64();
                let done = now.1.saturating_sub(n);
                if done > 0 && secs > 0.0 {
                    self.rate
                        .store((done as f64 / secs).to_bits(), Ordering::Relaxed);
                }
            }
            self.publish();
            // The limit may have moved past the backlog: the first waiting
            // request looks again.
            self.backlog.wake();
        }
    }

    fn publish(&self) {
        let level = self.backlog.level();
        let rate = self.rate();
        let m = &self.metrics;
        m.backlog_spans
            .set(i64::try_from(level.spans).unwrap_or(i64::MAX));
        m.backlog_traces
            .set(i64::try_from(level.traces).unwrap_or(i64::MAX));
        m.limit_spans
            .set(i64::try_from(self.limit()).unwrap_or(i64::MAX));
        m.drain_rate.set(rate);
        m.backlog_seconds.set(if rate > 0.0 {
            level.spans as f64 / rate
        } else {
            0.0
        });
    }
}

impl crate::bounds::Bounded for AdmissionConfig {
    const MAXIMA: &'static [(&'static str, u64)] = &[
        ("max_wait_ms", crate::bounds::HOUR_MS),
        ("max_backlog_ms", crate::bounds::HOUR_MS),
        ("min_backlog_spans", 1 << 40),
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(min_spans: u64, max_wait_ms: u64) -> (Arc<Backlog>, Arc<Admission>) {
        let backlog = Backlog::new(1);
        let config = AdmissionConfig {
            max_wait_ms,
            max_backlog_ms: 500,
            min_backlog_spans: NonZeroU64::new(min_spans).unwrap(),
        };
        let metrics = AdmissionMetrics::register(&mut Registry::default());
        let a = Admission::new(&config, Duration::from_secs(1), backlog.clone(), metrics);
        (backlog, a)
    }

    #[tokio::test(start_paused = true)]
    async fn under_the_limit_is_admitted_at_once() {
        let (backlog, a) = admission(100, 200);
        backlog.publish(0, 99, 1);
        let t = Instant::now();
        assert_eq!(a.admit().await, Ok(()));
        assert_eq!(t.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn a_drain_admits_a_waiting_request() {
        let (backlog, a) = admission(100, 200);
        backlog.publish(0, 90, 1);
        let ticket = backlog.ticket(20);
        let waiting = tokio::spawn({
            let a = a.clone();
            async move { a.admit().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished());
        drop(ticket);
        assert_eq!(waiting.await.ok(), Some(Ok(())));
    }

    #[tokio::test(start_paused = true)]
    async fn past_max_wait_it_is_refused_with_a_delay_from_the_backlog() {
        let (backlog, a) = admission(100, 200);
        backlog.publish(0, 100 + 5_000, 1);
        a.rate.store(1_000f64.to_bits(), Ordering::Relaxed);
        // limit: max(1,000/s × 1.5 s, 100) = 1,500; 3,600 over it at 1,000/s.
        let t = Instant::now();
        let refused = a.admit().await;
        assert_eq!(t.elapsed(), Duration::from_millis(200));
        assert_eq!(
            refused,
            Err(Backlogged {
                retry_after: Duration::from_millis(3_600)
            })
        );
        // No rate measured yet: one second; a huge backlog: capped; a
        // small one: the floor.
        a.rate.store(0f64.to_bits(), Ordering::Relaxed);
        assert_eq!(a.retry_after(backlog.level()), Duration::from_secs(1));
        a.rate.store(1f64.to_bits(), Ordering::Relaxed);
        assert_eq!(a.retry_after(backlog.level()), MAX_RETRY_AFTER);
        a.rate.store(1e9f64.to_bits(), Ordering::Relaxed);
        assert_eq!(
            a.retry_after(Level {
                spans: 1,
                traces: 1
            }),
            MIN_RETRY_AFTER
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_rate_follows_evaluation_and_holds_when_idle() {
        let (backlog, a) = admission(100, 200);
        let stop = CancellationToken::new();
        let task = tokio::spawn(a.clone().run(stop.clone()));
        for _ in 0..30 {
            // 1,000 spans every 100 ms: 10,000 a second.
            drop(backlog.ticket(1_000));
            tokio::time::sleep(SAMPLE_EVERY).await;
        }
        let rate = a.rate();
        assert!((9_000.0..=11_000.0).contains(&rate), "{rate}");
        assert_eq!(a.limit(), (rate * 1.5) as u64);
        // Idle: the window empties of evaluations, and the rate then stays
        // at what the window last measured instead of falling to zero.
        tokio::time::sleep(Duration::from_secs(5)).await;
        let idle = a.rate();
        assert!(idle > 0.0 && idle < rate, "{idle}");
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(a.rate(), idle);
        stop.cancel();
        let _ = task.await;
    }
}

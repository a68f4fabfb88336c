//! The exporter's own counters: plain atomics any thread can bump, read as a
//! [`ExporterStatsSnapshot`] or scraped through `prometheus_client` (the
//! `Collector` impl below; register it in `telemetry`/`app`).

use std::sync::atomic::{AtomicU64, Ordering};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;

/// Counters since start. Records are evaluated traces (each carries one
/// result per evaluator); spans and logs are exported items.
#[derive(Debug, Default)]
pub struct ExporterStats {
    /// Records taken into the export queue.
    pub records_accepted: AtomicU64,
    /// Dropped because the queue was full (the endpoint is slow or down).
    pub records_dropped_queue_full: AtomicU64,
    /// Dropped because a span or log request for them failed for good
    /// (non-retryable code, or `max_retries` exhausted). Counted once per
    /// record even if both signals failed.
    pub records_dropped_export_failed: AtomicU64,
    /// Offered while the exporter is disabled.
    pub records_dropped_disabled: AtomicU64,
    /// Offered after shutdown began, or still queued when the flush deadline passed.
    pub records_dropped_shutdown: AtomicU64,
    /// Result spans the endpoint accepted.
    pub spans_exported: AtomicU64,
    /// Result log events the endpoint accepted.
    pub logs_exported: AtomicU64,
    /// Metric requests the endpoint accepted.
    pub metric_exports: AtomicU64,
    /// Metric requests that failed for good (the next interval resends the
    /// cumulative values, so nothing is lost but resolution).
    pub metric_exports_failed: AtomicU64,
    /// Spans, log records or data points the endpoint refused in a
    /// `partial_success` (not retried, per OTLP).
    pub items_rejected: AtomicU64,
    /// Failed request attempts, retried or not.
    pub requests_failed: AtomicU64,
    /// Retries made.
    pub retries: AtomicU64,
    /// Metric observations dropped because the attribute-set limit was reached.
    pub metric_series_dropped: AtomicU64,
}

/// A point-in-time copy of [`ExporterStats`], field for field.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExporterStatsSnapshot {
    pub records_accepted: u64,
    pub records_dropped_queue_full: u64,
    pub records_dropped_export_failed: u64,
    pub records_dropped_disabled: u64,
    pub records_dropped_shutdown: u64,
    pub spans_exported: u64,
    pub logs_exported: u64,
    pub metric_exports: u64,
    pub metric_exports_failed: u64,
    pub items_rejected: u64,
    pub requests_failed: u64,
    pub retries: u64,
    pub metric_series_dropped: u64,
}

impl ExporterStats {
    pub(crate) fn inc(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> ExporterStatsSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ExporterStatsSnapshot {
            records_accepted: get(&self.records_accepted),
            records_dropped_queue_full: get(&self.records_dropped_queue_full),
            records_dropped_export_failed: get(&self.records_dropped_export_failed),
            records_dropped_disabled: get(&self.records_dropped_disabled),
            records_dropped_shutdown: get(&self.records_dropped_shutdown),
            spans_exported: get(&self.spans_exported),
            logs_exported: get(&self.logs_exported),
            metric_exports: get(&self.metric_exports),
            metric_exports_failed: get(&self.metric_exports_failed),
            items_rejected: get(&self.items_rejected),
            requests_failed: get(&self.requests_failed),
            retries: get(&self.retries),
            metric_series_dropped: get(&self.metric_series_dropped),
        }
    }
}

impl ExporterStatsSnapshot {
    /// Records dropped, for every reason.
    pub fn records_dropped(&self) -> u64 {
        self.records_dropped_queue_full
            + self.records_dropped_export_failed
            + self.records_dropped_disabled
            + self.records_dropped_shutdown
    }
}

/// Scraped as `exporter_*` counters (under the registry's prefix, so
/// `toolscore_exporter_records_dropped_total{reason="queue_full"}`):
/// `registry.register_collector(Box::new(handle.stats().clone()))`.
impl Collector for ExporterStats {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = self.snapshot();
        let plain = [
            (
                "exporter_records_accepted",
                "Evaluated records queued for export",
                s.records_accepted,
            ),
            (
                "exporter_spans_exported",
                "Evaluation result spans accepted downstream",
                s.spans_exported,
            ),
            (
                "exporter_logs_exported",
                "Evaluation result log events accepted downstream",
                s.logs_exported,
            ),
            (
                "exporter_metric_exports",
                "Metric export requests accepted downstream",
                s.metric_exports,
            ),
            (
                "exporter_metric_exports_failed",
                "Metric export requests that failed after retries",
                s.metric_exports_failed,
            ),
            (
                "exporter_items_rejected",
                "Items refused downstream in a partial success",
                s.items_rejected,
            ),
            (
                "exporter_requests_failed",
                "Failed export request attempts",
                s.requests_failed,
            ),
            ("exporter_retries", "Export request retries", s.retries),
            (
                "exporter_metric_series_dropped",
                "Metric observations dropped at the attribute-set limit",
                s.metric_series_dropped,
            ),
        ];
        for (name, help, value) in plain {
            let counter = ConstCounter::new(value);
            let metric = encoder.encode_descriptor(name, help, None, counter.metric_type())?;
            counter.encode(metric)?;
        }
        let dropped = [
            ("queue_full", s.records_dropped_queue_full),
            ("export_failed", s.records_dropped_export_failed),
            ("disabled", s.records_dropped_disabled),
            ("shutdown", s.records_dropped_shutdown),
        ];
        let mut family = encoder.encode_descriptor(
            "exporter_records_dropped",
            "Evaluated records dropped before export, by reason",
            None,
            prometheus_client::metrics::MetricType::Counter,
        )?;
        for (reason, value) in dropped {
            let labels = [("reason", reason)];
            ConstCounter::new(value).encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_as_prometheus_counters() {
        let stats = std::sync::Arc::new(ExporterStats::default());
        ExporterStats::add(&stats.records_dropped_queue_full, 3);
        ExporterStats::inc(&stats.spans_exported);
        let mut registry = prometheus_client::registry::Registry::with_prefix("toolscore");
        registry.register_collector(Box::new(stats.clone()));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains("toolscore_exporter_records_dropped_total{reason=\"queue_full\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("toolscore_exporter_spans_exported_total 1"),
            "{text}"
        );
        assert_eq!(stats.snapshot().records_dropped(), 3);
    }
}

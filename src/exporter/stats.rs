//! The exporter's own counters, `prometheus_client` counters any thread can
//! bump, registered as `exporter_*` under the service's metrics prefix.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DropLabel {
    reason: &'static str,
}

/// Counters since start. Records are evaluated traces (each carries one
/// result per evaluator); spans and logs are exported items.
#[derive(Debug, Clone)]
pub struct ExporterStats {
    /// Records taken into the export queue.
    pub records_accepted: Counter,
    /// Records dropped before export, by reason; the four fields below are
    /// its series.
    records_dropped: Family<DropLabel, Counter>,
    /// Dropped because the queue was full (the endpoint is slow or down).
    pub records_dropped_queue_full: Counter,
    /// Dropped because a span or log request for them failed for good
    /// (non-retryable code, or `max_retries` exhausted). Counted once per
    /// record even if both signals failed.
    pub records_dropped_export_failed: Counter,
    /// Offered while the exporter is disabled.
    pub records_dropped_disabled: Counter,
    /// Offered after shutdown began, or still queued when the flush deadline passed.
    pub records_dropped_shutdown: Counter,
    /// Result spans the endpoint accepted.
    pub spans_exported: Counter,
    /// Result log events the endpoint accepted.
    pub logs_exported: Counter,
    /// Metric requests the endpoint accepted.
    pub metric_exports: Counter,
    /// Metric requests that failed for good (the next interval resends the
    /// cumulative values, so nothing is lost but resolution).
    pub metric_exports_failed: Counter,
    /// Spans, log records or data points the endpoint refused in a
    /// `partial_success` (not retried, per OTLP).
    pub items_rejected: Counter,
    /// Failed request attempts, retried or not.
    pub requests_failed: Counter,
    /// Retries made.
    pub retries: Counter,
    /// Metric observations dropped because the attribute-set limit was reached.
    pub metric_series_dropped: Counter,
}

impl Default for ExporterStats {
    fn default() -> ExporterStats {
        let records_dropped = Family::<DropLabel, Counter>::default();
        // Each reason's series exists (at 0) from the start.
        let reason = |reason| records_dropped.get_or_create(&DropLabel { reason }).clone();
        ExporterStats {
            records_accepted: Counter::default(),
            records_dropped_queue_full: reason("queue_full"),
            records_dropped_export_failed: reason("export_failed"),
            records_dropped_disabled: reason("disabled"),
            records_dropped_shutdown: reason("shutdown"),
            records_dropped,
            spans_exported: Counter::default(),
            logs_exported: Counter::default(),
            metric_exports: Counter::default(),
            metric_exports_failed: Counter::default(),
            items_rejected: Counter::default(),
            requests_failed: Counter::default(),
            retries: Counter::default(),
            metric_series_dropped: Counter::default(),
        }
    }
}

impl ExporterStats {
    /// Records dropped, for every reason.
    pub fn records_dropped(&self) -> u64 {
        [
            &self.records_dropped_queue_full,
            &self.records_dropped_export_failed,
            &self.records_dropped_disabled,
            &self.records_dropped_shutdown,
        ]
        .iter()
        .map(|c| c.get())
        .sum()
    }

    /// Registers the counters as `exporter_*` (so, under the service's
    /// prefix, `toolscore_exporter_records_dropped_total{reason="queue_full"}`).
    pub fn register(&self, registry: &mut Registry) {
        let r = registry.sub_registry_with_prefix("exporter");
        let counters = [
            (
                "records_accepted",
                "Evaluated records queued for export",
                &self.records_accepted,
            ),
            (
                "spans_exported",
                "Evaluation result spans accepted downstream",
                &self.spans_exported,
            ),
            (
                "logs_exported",
                "Evaluation result log events accepted downstream",
                &self.logs_exported,
            ),
            (
                "metric_exports",
                "Metric export requests accepted downstream",
                &self.metric_exports,
            ),
            (
                "metric_exports_failed",
                "Metric export requests that failed after retries",
                &self.metric_exports_failed,
            ),
            (
                "items_rejected",
                "Items refused downstream in a partial success",
                &self.items_rejected,
            ),
            (
                "requests_failed",
                "Failed export request attempts",
                &self.requests_failed,
            ),
            ("retries", "Export request retries", &self.retries),
            (
                "metric_series_dropped",
                "Metric observations dropped at the attribute-set limit",
                &self.metric_series_dropped,
            ),
        ];
        for (name, help, counter) in counters {
            r.register(name, help, counter.clone());
        }
        r.register(
            "records_dropped",
            "Evaluated records dropped before export, by reason",
            self.records_dropped.clone(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_as_prometheus_counters() {
        let stats = ExporterStats::default();
        stats.records_dropped_queue_full.inc_by(3);
        stats.spans_exported.inc();
        let mut registry = Registry::with_prefix("toolscore");
        stats.register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains("toolscore_exporter_records_dropped_total{reason=\"queue_full\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("toolscore_exporter_records_dropped_total{reason=\"shutdown\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("toolscore_exporter_spans_exported_total 1"),
            "{text}"
        );
        assert!(
            text.contains("# HELP toolscore_exporter_retries Export request retries"),
            "{text}"
        );
        assert_eq!(stats.records_dropped(), 3);
    }
}

//! The exporter task: batches queued records, sends spans and logs
//! (concurrently, each with retries), sends metrics on an interval, and on
//! shutdown flushes what is queued within a deadline.

use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use opentelemetry_proto::tonic::collector::logs::v1::logs_service_client::LogsServiceClient;
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_client::MetricsServiceClient;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use tokio::sync::mpsc;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;
use tonic::codec::CompressionEncoding;
use tonic::transport::Channel;

use super::batch::{Covering, convert_batch};
use super::convert::{self, unix_nanos};
use super::metrics::MetricsAggregator;
use super::retry::{RetryPolicy, with_retry};
use super::{ExporterConfig, ExporterStats, connect};
use crate::key_error::KeyError;
use crate::store::StoredResult;

type Records = Vec<Arc<StoredResult>>;

/// The task's clocks, from the config.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timing {
    max_batch: usize,
    batch_timeout: Duration,
    metrics_interval: Duration,
    flush_timeout: Duration,
}

impl From<&ExporterConfig> for Timing {
    fn from(cfg: &ExporterConfig) -> Timing {
        Timing {
            max_batch: cfg.max_batch.get(),
            batch_timeout: ExporterConfig::ms(cfg.batch_timeout_ms),
            metrics_interval: ExporterConfig::ms(cfg.metrics_interval_ms),
            flush_timeout: ExporterConfig::ms(cfg.flush_timeout_ms),
        }
    }
}

/// Clients (one per enabled signal), the retry policy and the metric totals.
pub(crate) struct Exporter {
    endpoint: String,
    resource: Resource,
    stats: Arc<ExporterStats>,
    policy: RetryPolicy,
    traces: Option<TraceServiceClient<Channel>>,
    logs: Option<LogsServiceClient<Channel>>,
    metrics: Option<MetricsServiceClient<Channel>>,
    aggregator: MetricsAggregator,
    /// Whether the last request succeeded, so failures log once per outage.
    healthy: std::sync::atomic::AtomicBool,
}

impl Exporter {
    /// Builds the clients on one lazily connecting channel
    /// ([`connect::channel`]).
    pub(crate) fn new(
        cfg: &ExporterConfig,
        stats: Arc<ExporterStats>,
    ) -> Result<Exporter, KeyError> {
        let channel = connect::channel(cfg)?;
        let gzip = cfg.gzip;
        macro_rules! client {
            ($on:expr, $client:ident) => {
                $on.then(|| {
                    let c = $client::new(channel.clone());
                    if gzip {
                        c.send_compressed(CompressionEncoding::Gzip)
                            .accept_compressed(CompressionEncoding::Gzip)
                    } else {
                        c
                    }
                })
            };
        }
        Ok(Exporter {
            endpoint: cfg.endpoint.clone(),
            resource: convert::resource(&cfg.service_name),
            stats,
            policy: RetryPolicy {
                max_retries: cfg.max_retries,
                initial: ExporterConfig::ms(cfg.initial_backoff_ms),
                max: ExporterConfig::ms(cfg.max_backoff_ms),
            },
            traces: client!(cfg.spans, TraceServiceClient),
            logs: client!(cfg.logs, LogsServiceClient),
            metrics: client!(cfg.metrics, MetricsServiceClient),
            aggregator: MetricsAggregator::new(unix_nanos(SystemTime::now())),
            healthy: std::sync::atomic::AtomicBool::new(true),
        })
    }

    /// Adds records just taken off the queue to the metric totals.
    fn observe(&mut self, records: &[Arc<StoredResult>]) {
        if self.metrics.is_none() {
            return;
        }
        for (score, _) in records.iter().flat_map(|r| r.settled_scores()) {
            if !self.aggregator.observe(score) {
                self.stats.metric_series_dropped.inc();
            }
        }
    }

    /// Sends a batch's spans and logs; records whose export failed for good
    /// are counted as dropped. Converting (JSON text, sizes) can take
    /// milliseconds for a full batch, so it runs on the blocking pool.
    async fn export_batch(&self, records: &[Arc<StoredResult>]) {
        if records.is_empty() {
            return;
        }
        let owned = records.to_vec();
        let resource = self.resource.clone();
        let signals = (self.traces.is_some(), self.logs.is_some());
        let now = unix_nanos(SystemTime::now());
        let converted = tokio::task::spawn_blocking(move || {
            convert_batch(&owned, &resource, now, signals.0, signals.1)
        })
        .await;
        let requests = match converted {
            Ok(requests) => requests,
            Err(e) => {
                tracing::error!(error = %e, "converting results for export failed");
                let n = records.len() as u64;
                self.stats.records_dropped_export_failed.inc_by(n);
                return;
            }
        };
        let (span_failures, log_failures) = tokio::join!(
            self.export_spans(requests.spans),
            self.export_logs(requests.logs)
        );
        let mut failed = vec![false; records.len()];
        for range in span_failures.into_iter().chain(log_failures) {
            failed[range].fill(true);
        }
        let dropped = failed.iter().filter(|f| **f).count() as u64;
        self.stats.records_dropped_export_failed.inc_by(dropped);
    }

    /// Returns the ranges of records whose spans were not delivered.
    async fn export_spans(
        &self,
        requests: Vec<Covering<ExportTraceServiceRequest>>,
    ) -> Vec<Range<usize>> {
        let Some(client) = &self.traces else {
            return Vec::new();
        };
        let send = |request| {
            let mut client = client.clone();
            async move { client.export(request).await }
        };
        let rejected = |r: ExportTraceServiceResponse| {
            r.partial_success
                .map_or(0, |p| u64::try_from(p.rejected_spans).unwrap_or(0))
        };
        self.export_each(
            "spans",
            &self.stats.spans_exported,
            requests,
            send,
            rejected,
        )
        .await
    }

    /// Returns the ranges of records whose log events were not delivered.
    async fn export_logs(
        &self,
        requests: Vec<Covering<ExportLogsServiceRequest>>,
    ) -> Vec<Range<usize>> {
        let Some(client) = &self.logs else {
            return Vec::new();
        };
        let send = |request| {
            let mut client = client.clone();
            async move { client.export(request).await }
        };
        let rejected = |r: ExportLogsServiceResponse| {
            r.partial_success
                .map_or(0, |p| u64::try_from(p.rejected_log_records).unwrap_or(0))
        };
        self.export_each("logs", &self.stats.logs_exported, requests, send, rejected)
            .await
    }

    /// Sends each request with retries; counts what was delivered (less
    /// what a partial success refused) and returns the ranges of records
    /// whose request failed for good.
    async fn export_each<Req, Resp, Fut>(
        &self,
        signal: &'static str,
        exported: &prometheus_client::metrics::counter::Counter,
        requests: Vec<Covering<Req>>,
        send: impl Fn(Req) -> Fut,
        rejected: impl Fn(Resp) -> u64,
    ) -> Vec<Range<usize>>
    where
        Req: Clone,
        Fut: std::future::Future<Output = Result<tonic::Response<Resp>, tonic::Status>>,
    {
        let mut failures = Vec::new();
        for Covering {
            records,
            items,
            request,
        } in requests
        {
            match with_retry(&self.policy, &self.stats, || send(request.clone())).await {
                Ok(response) => self.delivered(exported, items, rejected(response.into_inner())),
                Err(status) => {
                    self.failed(signal, &status);
                    failures.push(records);
                }
            }
        }
        failures
    }

    /// Sends the cumulative totals; a failure loses nothing but one point in
    /// time, since the next interval sends the totals again.
    async fn export_metrics(&self) {
        let Some(client) = &self.metrics else {
            return;
        };
        let Some(request) = self
            .aggregator
            .request(&self.resource, unix_nanos(SystemTime::now()))
        else {
            return;
        };
        let sent = with_retry(&self.policy, &self.stats, || {
            let mut client = client.clone();
            let request = request.clone();
            async move { client.export(request).await }
        })
        .await;
        match sent {
            Ok(response) => {
                let rejected = response
                    .into_inner()
                    .partial_success
                    .map_or(0, |p| u64::try_from(p.rejected_data_points).unwrap_or(0));
                self.delivered(&self.stats.metric_exports, 1, 0);
                self.stats.items_rejected.inc_by(rejected);
            }
            Err(status) => {
                self.stats.metric_exports_failed.inc();
                self.failed("metrics", &status);
            }
        }
    }

    fn delivered(
        &self,
        counter: &prometheus_client::metrics::counter::Counter,
        sent: u64,
        rejected: u64,
    ) {
        use std::sync::atomic::Ordering;
        counter.inc_by(sent.saturating_sub(rejected));
        self.stats.items_rejected.inc_by(rejected);
        if rejected > 0 {
            tracing::warn!(rejected, "export partly rejected downstream");
        }
        if !self.healthy.swap(true, Ordering::Relaxed) {
            tracing::info!(endpoint = %self.endpoint, "export recovered");
        }
    }

    fn failed(&self, signal: &'static str, status: &tonic::Status) {
        use std::sync::atomic::Ordering;
        if self.healthy.swap(false, Ordering::Relaxed) {
            tracing::error!(
                endpoint = %self.endpoint,
                signal,
                code = ?status.code(),
                message = status.message(),
                "export failed after retries: dropping results until it recovers"
            );
        } else {
            tracing::debug!(signal, code = ?status.code(), "export failed after retries");
        }
    }
}

/// Runs until `shutdown` is cancelled or every handle is dropped, then
/// flushes. Records are observed for metrics as they leave the queue.
pub(crate) async fn run(
    mut exporter: Exporter,
    mut rx: mpsc::Receiver<Arc<StoredResult>>,
    shutdown: CancellationToken,
    timing: Timing,
) {
    let mut pending: Records = Vec::with_capacity(timing.max_batch);
    let mut deadline: Option<Instant> = None;
    let metrics_on = exporter.metrics.is_some();
    let mut tick = tokio::time::interval_at(
        Instant::now() + timing.metrics_interval,
        timing.metrics_interval,
    );
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        if pending.len() >= timing.max_batch || deadline.is_some_and(|d| d <= Instant::now()) {
            // A shutdown abandons the send and the flush sends the batch
            // again: its spans keep their derived IDs, so a span delivered
            // twice is a duplicate a backend can drop.
            tokio::select! {
                biased;
                _ = shutdown.cancelled() => break,
                _ = exporter.export_batch(&pending) => {}
            }
            pending.clear();
            deadline = None;
            continue;
        }
        let room = timing.max_batch - pending.len();
        tokio::select! {
            biased;
            _ = shutdown.cancelled() => break,
            _ = tick.tick(), if metrics_on => {
                tokio::select! {
                    biased;
                    _ = shutdown.cancelled() => break,
                    _ = exporter.export_metrics() => {}
                }
            }
            n = rx.recv_many(&mut pending, room) => {
                if n == 0 {
                    break; // every handle dropped
                }
                let start = pending.len() - n;
                exporter.observe(&pending[start..]);
                deadline.get_or_insert_with(|| Instant::now() + timing.batch_timeout);
            }
            _ = sleep_until(deadline), if deadline.is_some() => {}
        }
    }
    flush(&mut exporter, rx, pending, timing).await;
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Stops taking records, then sends what is queued and the final metric
/// totals within `flush_timeout`; whatever is left then is counted as
/// dropped (`shutdown`).
async fn flush(
    exporter: &mut Exporter,
    mut rx: mpsc::Receiver<Arc<StoredResult>>,
    mut pending: Records,
    timing: Timing,
) {
    rx.close();
    let mut queued = Vec::new();
    while let Ok(record) = rx.try_recv() {
        queued.push(record);
    }
    exporter.observe(&queued);
    pending.append(&mut queued);
    let total = pending.len();
    let mut done = 0;
    let exporter = &*exporter;
    let flushed = tokio::time::timeout(timing.flush_timeout, async {
        for chunk in pending.chunks(timing.max_batch) {
            exporter.export_batch(chunk).await;
            done += chunk.len();
        }
        exporter.export_metrics().await;
    })
    .await;
    if flushed.is_err() {
        let lost = (total - done) as u64;
        exporter.stats.records_dropped_shutdown.inc_by(lost);
        if lost > 0 {
            tracing::error!(lost, "export flush timed out; results dropped");
        }
    }
    tracing::debug!(flushed = done, "exporter stopped");
}

//! Exports evaluation results downstream over OTLP/gRPC (DESIGN §6 "Exports").
//!
//! Every evaluated [`StoredResult`] becomes, per score: one span in the
//! evaluated trace (a child of its root, linked to it), one
//! `gen_ai.evaluation.result` log event parented to the root, and
//! observations for two cumulative metrics (`toolscore.evaluation.score`,
//! `toolscore.evaluations`), sent on an interval.
//!
//! The shape is a pure core and a thin async shell:
//! - [`convert`]: records → OTLP spans and log records (pure, unit-tested);
//! - [`metrics`]: the bounded cumulative aggregation (pure);
//! - `batch`: a batch of records → requests of bounded size (pure);
//! - `retry`: which gRPC codes are retried and the backoff between attempts;
//! - `task`: the one task that batches, sends and flushes on shutdown;
//! - `connect`: its channel, plaintext or TLS (`exporter.tls`).
//!
//! The pipeline hands records over through [`ExporterHandle::offer`], which
//! never waits: a full queue drops the record and counts it. A down endpoint
//! therefore costs drops, never latency elsewhere. Every drop is counted by
//! reason in [`ExporterStats`].

mod batch;
mod connect;

pub use connect::channel;
pub mod convert;
pub mod metrics;
mod retry;
mod stats;
mod task;

use crate::key_error::KeyError;
use std::num::{NonZero, NonZeroU64, NonZeroUsize};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::store::StoredResult;
use crate::tls::ClientTlsConfig;

pub use stats::ExporterStats;

/// The `exporter` section of the configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExporterConfig {
    /// Whether results are exported at all.
    pub enabled: bool,
    /// The downstream OTLP/gRPC endpoint: `http://host:port` (plaintext)
    /// or `https://host:port` (TLS, configured by `tls`).
    pub endpoint: String,
    /// TLS of an `https://` endpoint: `ca_file` (unset: the system's
    /// roots), `cert_file` and `key_file` for mutual TLS,
    /// `insecure_skip_verify`, `min_version`. Refused with `http://`.
    pub tls: ClientTlsConfig,
    /// Export one span per evaluation result, as a child of the trace's root.
    pub spans: bool,
    /// Export one `gen_ai.evaluation.result` log event per evaluation result.
    pub logs: bool,
    /// Export the `toolscore.evaluation.score` histogram and the
    /// `toolscore.evaluations` counter.
    pub metrics: bool,
    /// Evaluated records queued for export; when full, new records are
    /// dropped and counted (`reason="queue_full"`).
    pub queue_capacity: NonZeroUsize,
    /// Records per batch: a batch is sent when it is this large…
    pub max_batch: NonZeroUsize,
    /// …or this long after its first record arrived.
    pub batch_timeout_ms: NonZeroU64,
    /// How often the cumulative metrics are sent.
    pub metrics_interval_ms: NonZeroU64,
    /// Deadline of one export request (and of connecting).
    pub timeout_ms: NonZeroU64,
    /// Retries of a request that failed with a retryable code before its
    /// records are dropped (`reason="export_failed"`).
    pub max_retries: u32,
    /// First backoff between retries; doubled per retry, with jitter.
    pub initial_backoff_ms: NonZeroU64,
    /// Backoff cap (a server's `RetryInfo` may ask for longer, up to 60 s).
    pub max_backoff_ms: NonZeroU64,
    /// Gzip-compress requests.
    pub gzip: bool,
    /// On shutdown, how long queued records may take to flush before the rest
    /// is dropped (`reason="shutdown"`). Keep it under the service's
    /// `shutdown_timeout_ms`.
    pub flush_timeout_ms: NonZeroU64,
    /// `service.name` of the exported resource.
    pub service_name: String,
}

impl Default for ExporterConfig {
    fn default() -> Self {
        ExporterConfig {
            enabled: false,
            endpoint: "http://127.0.0.1:4317".into(),
            tls: ClientTlsConfig::default(),
            spans: true,
            logs: true,
            metrics: true,
            queue_capacity: const { NonZero::new(10_000).unwrap() },
            max_batch: const { NonZero::new(512).unwrap() },
            batch_timeout_ms: const { NonZero::new(200).unwrap() },
            metrics_interval_ms: const { NonZero::new(10_000).unwrap() },
            timeout_ms: const { NonZero::new(5_000).unwrap() },
            max_retries: 5,
            initial_backoff_ms: const { NonZero::new(100).unwrap() },
            max_backoff_ms: const { NonZero::new(5_000).unwrap() },
            gzip: true,
            flush_timeout_ms: const { NonZero::new(3_000).unwrap() },
            service_name: "toolscore".into(),
        }
    }
}

impl ExporterConfig {
    /// Checks bounds and the endpoint; the error is (key path, message), the
    /// path starting with `exporter.`. Checked even when disabled, so a
    /// config that is wrong fails before someone turns it on.
    pub fn validate(&self) -> Result<(), KeyError> {
        // Maxima, so that no deadline or backoff arithmetic can overflow.
        crate::bounds::Section::of("exporter", self).check()?;
        if self.initial_backoff_ms > self.max_backoff_ms {
            return Err(KeyError::new(
                "exporter.initial_backoff_ms".into(),
                "must not exceed exporter.max_backoff_ms".into(),
            ));
        }
        if self.service_name.is_empty() {
            return Err(KeyError::new(
                "exporter.service_name".into(),
                "must not be empty".into(),
            ));
        }
        let https = check_endpoint(&self.endpoint)
            .map_err(|m| KeyError::new("exporter.endpoint".into(), m))?;
        crate::tls::keyed::validate("exporter.tls", https, &self.tls)
    }

    fn signals_enabled(&self) -> bool {
        self.spans || self.logs || self.metrics
    }

    fn ms(ms: NonZeroU64) -> Duration {
        Duration::from_millis(ms.get())
    }
}

/// Whether the endpoint is `https://`.
fn check_endpoint(endpoint: &str) -> Result<bool, String> {
    let uri: http::Uri = endpoint
        .parse()
        .map_err(|e| format!("not a valid URI ({e}): {endpoint:?}"))?;
    let https = match uri.scheme_str() {
        Some("http") => false,
        Some("https") => true,
        _ => {
            return Err(format!(
                "must start with http:// or https://, got {endpoint:?}"
            ));
        }
    };
    if uri.authority().is_none_or(|a| a.host().is_empty()) {
        return Err(format!("must name a host and port, got {endpoint:?}"));
    }
    Ok(https)
}

/// Where the pipeline offers evaluated records. Cheap to clone; never blocks.
#[derive(Debug, Clone)]
pub struct ExporterHandle {
    /// `None` when exporting is disabled.
    tx: Option<mpsc::Sender<Arc<StoredResult>>>,
    stats: Arc<ExporterStats>,
    /// Set while the queue is full, so the warning is logged once per episode.
    full: Arc<AtomicBool>,
}

impl ExporterHandle {
    /// Queues a record for export without waiting. Records that settle no
    /// score (pending, unbound, or only `pending` LLM judges) carry nothing
    /// to export and are ignored. Otherwise
    /// the record is either queued (`records_accepted`) or dropped and
    /// counted: `queue_full`, `disabled`, or `shutdown` once the exporter
    /// has stopped taking records.
    pub fn offer(&self, record: Arc<StoredResult>) {
        if !record.settles_any() {
            return;
        }
        let Some(tx) = &self.tx else {
            self.stats.records_dropped_disabled.inc();
            return;
        };
        match tx.try_send(record) {
            Ok(()) => {
                self.stats.records_accepted.inc();
                if self.full.load(Ordering::Relaxed) {
                    self.full.store(false, Ordering::Relaxed);
                }
            }
            Err(TrySendError::Full(_)) => {
                self.stats.records_dropped_queue_full.inc();
                if !self.full.swap(true, Ordering::Relaxed) {
                    tracing::error!(
                        capacity = tx.max_capacity(),
                        "export queue full: dropping evaluation results until it drains"
                    );
                }
            }
            Err(TrySendError::Closed(_)) => {
                self.stats.records_dropped_shutdown.inc();
            }
        }
    }

    /// The exporter's counters (also a `prometheus_client` collector).
    pub fn stats(&self) -> &Arc<ExporterStats> {
        &self.stats
    }

    /// Records waiting in the queue now (0 when disabled).
    pub fn queue_len(&self) -> usize {
        self.tx
            .as_ref()
            .map_or(0, |tx| tx.max_capacity() - tx.capacity())
    }

    /// Whether records are exported (false when disabled by config).
    pub fn is_enabled(&self) -> bool {
        self.tx.is_some()
    }
}

/// Starts the exporter. Call from within a Tokio runtime with a validated
/// config ([`ExporterConfig::validate`]). The returned task ends after
/// `shutdown` is cancelled (or every handle is dropped) and what was queued
/// is flushed, within `flush_timeout_ms`.
///
/// The TLS configuration of an `https://` endpoint is built here, so a TLS
/// file that cannot be used fails start-up (the [`KeyError`] names its key).
/// The connection is made lazily: a down endpoint never delays start-up,
/// and once it is back the channel reconnects on the next request. Disabled
/// (or with no signal on), the handle counts every offered record as
/// dropped (`reason="disabled"`) and the task ends at once.
pub fn try_spawn(
    cfg: ExporterConfig,
    shutdown: CancellationToken,
) -> Result<(ExporterHandle, JoinHandle<()>), KeyError> {
    let stats = Arc::new(ExporterStats::default());
    if !cfg.enabled || !cfg.signals_enabled() {
        return Ok(disabled(stats));
    }
    let exporter = task::Exporter::new(&cfg, stats.clone())?;
    let (tx, rx) = mpsc::channel(cfg.queue_capacity.get());
    let handle = ExporterHandle {
        tx: Some(tx),
        stats,
        full: Arc::new(AtomicBool::new(false)),
    };
    let join = tokio::spawn(task::run(exporter, rx, shutdown, task::Timing::from(&cfg)));
    Ok((handle, join))
}

/// [`try_spawn`], for callers that run on without the exporter: one that
/// cannot start is logged and disabled (offered records are counted as
/// dropped, `reason="disabled"`).
pub fn spawn(cfg: ExporterConfig, shutdown: CancellationToken) -> (ExporterHandle, JoinHandle<()>) {
    try_spawn(cfg, shutdown).unwrap_or_else(|e| {
        tracing::error!(key = %e.key, error = %e.message, "exporter disabled: it cannot start");
        disabled(Arc::new(ExporterStats::default()))
    })
}

/// A handle that counts every offered record as dropped, and a task that
/// has nothing to do.
fn disabled(stats: Arc<ExporterStats>) -> (ExporterHandle, JoinHandle<()>) {
    let handle = ExporterHandle {
        tx: None,
        stats,
        full: Arc::new(AtomicBool::new(false)),
    };
    (handle, tokio::spawn(async {}))
}

impl crate::bounds::Bounded for ExporterConfig {
    const MAXIMA: &'static [(&'static str, u64)] = &[
        ("queue_capacity", 10_000_000),
        ("max_batch", 100_000),
        ("batch_timeout_ms", crate::bounds::HOUR_MS),
        ("metrics_interval_ms", crate::bounds::HOUR_MS),
        ("timeout_ms", crate::bounds::HOUR_MS),
        ("max_retries", 1000),
        ("initial_backoff_ms", crate::bounds::HOUR_MS),
        ("max_backoff_ms", crate::bounds::HOUR_MS),
        ("flush_timeout_ms", crate::bounds::HOUR_MS),
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate() {
        assert_eq!(ExporterConfig::default().validate(), Ok(()));
        assert!(!ExporterConfig::default().enabled);
    }

    #[test]
    fn unknown_keys_are_refused_and_missing_ones_default() {
        let cfg: ExporterConfig =
            serde_json::from_str(r#"{"enabled": true, "max_batch": 7}"#).unwrap();
        assert!(cfg.enabled);
        assert_eq!(cfg.max_batch.get(), 7);
        assert_eq!(cfg.queue_capacity.get(), 10_000);
        let err = serde_json::from_str::<ExporterConfig>(r#"{"batch_size": 7}"#).unwrap_err();
        assert!(err.to_string().contains("batch_size"), "{err}");
    }

    #[test]
    fn bad_bounds_are_refused() {
        let err = serde_json::from_str::<ExporterConfig>(r#"{"max_batch": 0}"#).unwrap_err();
        assert!(err.to_string().contains("nonzero"), "{err}");
        let cfg = ExporterConfig {
            initial_backoff_ms: NonZero::new(10_000).unwrap(),
            ..ExporterConfig::default()
        };
        assert_eq!(
            cfg.validate().unwrap_err().key,
            "exporter.initial_backoff_ms"
        );
    }

    #[test]
    fn endpoints_must_be_http_or_https_with_a_host() {
        for (good, https) in [
            ("http://127.0.0.1:4317", false),
            ("http://collector:4317", false),
            ("http://[::1]:4317", false),
            ("https://collector:4317", true),
            ("https://[::1]:4317", true),
        ] {
            assert_eq!(check_endpoint(good), Ok(https), "{good}");
        }
        for bad in [
            "",
            "127.0.0.1:4317",
            "grpc://collector:4317",
            "http://",
            "https://",
            "not a uri",
        ] {
            assert!(check_endpoint(bad).is_err(), "{bad}");
        }
    }

    fn https(tls: ClientTlsConfig) -> ExporterConfig {
        ExporterConfig {
            enabled: true,
            endpoint: "https://localhost:4317".into(),
            tls,
            ..ExporterConfig::default()
        }
    }

    #[test]
    fn https_is_accepted_with_system_roots_by_default() {
        let cfg: ExporterConfig =
            serde_json::from_str(r#"{"endpoint": "https://collector:4317"}"#).unwrap();
        assert_eq!(cfg.tls, ClientTlsConfig::default());
        assert_eq!(cfg.validate(), Ok(()));
        let cfg: ExporterConfig = serde_json::from_str(
            r#"{"endpoint": "https://collector:4317",
                "tls": {"ca_file": "ca.pem", "cert_file": "c.pem", "key_file": "k.pem",
                        "min_version": "1.3"}}"#,
        )
        .unwrap();
        assert_eq!(cfg.validate(), Ok(()));
        let err = serde_json::from_str::<ExporterConfig>(r#"{"tls": {"ca": "x"}}"#).unwrap_err();
        assert!(err.to_string().contains("ca"), "{err}");
    }

    #[test]
    fn tls_keys_on_a_plaintext_endpoint_are_refused() {
        let cfg = ExporterConfig {
            endpoint: "http://collector:4317".into(),
            ..https(ClientTlsConfig {
                insecure_skip_verify: true,
                ..ClientTlsConfig::default()
            })
        };
        let crate::key_error::KeyError { key: path, message } = cfg.validate().unwrap_err();
        assert_eq!(path, "exporter.tls");
        assert!(message.contains("https://"), "{message}");
        let half = https(ClientTlsConfig {
            cert_file: Some("c.pem".into()),
            ..ClientTlsConfig::default()
        });
        assert_eq!(half.validate().unwrap_err().key, "exporter.tls.key_file");
    }

    #[tokio::test]
    async fn a_tls_file_that_cannot_be_used_fails_start_up_naming_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = https(ClientTlsConfig {
            ca_file: Some(dir.path().join("missing-ca.pem")),
            ..ClientTlsConfig::default()
        });
        assert_eq!(cfg.validate(), Ok(()), "files are read at start-up");
        let err = try_spawn(cfg.clone(), CancellationToken::new()).unwrap_err();
        assert_eq!(err.key, "exporter.tls.ca_file");
        assert!(err.message.contains("missing-ca.pem"), "{err}");

        // `spawn` runs on without the exporter.
        let (handle, join) = spawn(cfg, CancellationToken::new());
        join.await.unwrap();
        assert!(!handle.is_enabled());
    }

    #[tokio::test]
    async fn https_with_system_roots_starts_without_connecting() {
        let (handle, join) =
            try_spawn(https(ClientTlsConfig::default()), CancellationToken::new()).unwrap();
        assert!(handle.is_enabled());
        drop(handle);
        join.await.unwrap();
    }

    #[tokio::test]
    async fn disabled_counts_offers_as_dropped() {
        let (handle, join) = spawn(ExporterConfig::default(), CancellationToken::new());
        join.await.unwrap();
        handle.offer(Arc::new(convert::tests::record(2)));
        handle.offer(Arc::new(convert::tests::record(0)));
        let s = handle.stats();
        assert_eq!(
            s.records_dropped_disabled.get(),
            1,
            "records without scores are ignored"
        );
        assert!(!handle.is_enabled());
    }
}

//! The staged drain at shutdown (the module documentation of `app` gives
//! the order): every wait bounded by one deadline from the signal, and
//! what is given up named and returned as the error.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{AppError, Exporter};
use crate::config::Config;
use crate::receiver;
use crate::store::ResultStore;

/// Everything `run` started, handed over to be stopped in order.
pub(super) struct Stopping<'a> {
    pub config: &'a Config,
    /// `/readyz`'s flag, cleared first.
    pub ready: Arc<std::sync::atomic::AtomicBool>,
    pub health: tonic_health::server::HealthReporter,
    /// The receivers' servers.
    pub servers: Vec<JoinHandle<Result<(), AppError>>>,
    pub drain: CancellationToken,
    pub shard_tasks: Vec<JoinHandle<()>>,
    pub evaluation: JoinHandle<()>,
    pub live: Arc<crate::llm::live::Live>,
    pub wal: Option<crate::wal::Wal>,
    pub store: Arc<dyn ResultStore>,
    pub exporter: Option<Exporter>,
    /// Stops the query APIs, last.
    pub api_stop: CancellationToken,
    pub api_servers: Vec<JoinHandle<()>>,
    pub api: Option<JoinHandle<Result<(), AppError>>>,
    pub retention: JoinHandle<()>,
}

impl Stopping<'_> {
    /// Receivers, then the shards, evaluation, judgements, the log, the
    /// store, the exporter and last the query APIs.
    pub async fn drain(self) -> Result<(), AppError> {
        let Stopping {
            config,
            ready,
            health: health_reporter,
            servers,
            drain,
            shard_tasks,
            evaluation,
            live,
            wal,
            store,
            exporter,
            api_stop,
            api_servers,
            api,
            retention,
        } = self;
        // The drain's deadline runs from the signal, not from start-up.
        let deadline =
            tokio::time::Instant::now() + Duration::from_millis(config.shutdown_timeout_ms);
        ready.store(false, std::sync::atomic::Ordering::Relaxed);
        tracing::info!("shutting down: receivers stop, buffered traces are evaluated");
        health_reporter
            .set_service_status("", tonic_health::ServingStatus::NotServing)
            .await;
        health_reporter
            .set_not_serving::<receiver::grpc::TraceServer>()
            .await;
        health_reporter
            .set_not_serving::<receiver::grpc::LogsServer>()
            .await;
        // Requests in flight get a quarter of the deadline to arrive whole and be
        // answered. Then the shards stop taking spans and drain, whatever a stuck
        // or hostile client still holds open: its request was never acknowledged,
        // and is refused (retryable) if it ever completes.
        let in_flight =
            tokio::time::Instant::now() + Duration::from_millis(config.shutdown_timeout_ms / 4);
        let mut result = Ok(());
        let mut lost = Lost::default();
        let mut stuck = Vec::new();
        for mut s in servers {
            match tokio::time::timeout_at(in_flight, &mut s).await {
                Ok(Ok(Err(e))) => result = Err(e),
                Ok(Err(e)) => tracing::error!(error = %e, "a server task panicked"),
                Ok(Ok(Ok(()))) => {}
                Err(_) => stuck.push(s),
            }
        }
        if !stuck.is_empty() {
            tracing::warn!(
                "requests still arriving at the shutdown's in-flight deadline are cut off (never acknowledged)"
            );
        }
        drain.cancel();
        for t in shard_tasks {
            let missed = "an assembler shard did not drain before the shutdown deadline; its traces are lost";
            lost.by_deadline(deadline, t, missed).await;
        }
        let missed = "evaluation did not drain before the shutdown deadline; some results are lost";
        lost.by_deadline(deadline, evaluation, missed).await;
        // Judgements get what is left of the deadline, less a margin for the
        // store to commit what they settle (unanswered ones as skipped).
        let margin = Duration::from_millis(config.shutdown_timeout_ms / 10);
        live.drain(deadline.checked_sub(margin).unwrap_or(deadline))
            .await;
        // The log closes before the store: a result the store then fails to
        // commit (its deadline passed) releases its segments into a closed log,
        // which keeps them for the next start instead of deleting them. (Results
        // committed meanwhile are found stored then, and their segments go.)
        if let Some(wal) = wal {
            let _ = tokio::task::spawn_blocking(move || wal.close()).await;
        }
        // Evaluated results are committed before the exporter's last flush.
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let closing = store.clone();
        if !tokio::task::spawn_blocking(move || closing.close(left))
            .await
            .unwrap_or(false)
        {
            lost.missed("the store did not commit every result before the shutdown deadline");
        }
        // Results stored during the drain are exported, then the exporter flushes and stops.
        if let Some((_, task, stop)) = exporter {
            stop.cancel();
            let missed = "the result exporter did not flush before the shutdown deadline";
            lost.by_deadline(deadline, task, missed).await;
        }
        api_stop.cancel();
        for s in api_servers {
            let missed = "the gRPC query API did not stop before the shutdown deadline";
            lost.by_deadline(deadline, s, missed).await;
        }
        if let Some(api) = api {
            let missed = "the HTTP API did not stop before the shutdown deadline";
            match lost.by_deadline(deadline, api, missed).await {
                Some(Ok(Err(e))) => result = Err(e),
                Some(Err(e)) => tracing::error!(error = %e, "the API task panicked"),
                Some(Ok(Ok(()))) | None => {}
            }
        }
        for s in stuck {
            s.abort();
        }
        retention.abort();
        tracing::info!("stopped");
        result.and(lost.into_result())
    }
}

/// What the drain gave up on at the shutdown deadline.
#[derive(Default)]
struct Lost(Vec<&'static str>);

impl Lost {
    /// Waits for `task` until the shutdown deadline; past it, gives up on it
    /// and logs `missed`, which says what is lost.
    async fn by_deadline<F: std::future::IntoFuture>(
        &mut self,
        deadline: tokio::time::Instant,
        task: F,
        missed: &'static str,
    ) -> Option<F::Output> {
        let done = tokio::time::timeout_at(deadline, task).await.ok();
        if done.is_none() {
            self.missed(missed);
        }
        done
    }

    fn missed(&mut self, what: &'static str) {
        tracing::error!("{what}");
        self.0.push(what);
    }

    fn into_result(self) -> Result<(), AppError> {
        match self.0.is_empty() {
            true => Ok(()),
            false => Err(AppError::Drain(self.0.join("; "))),
        }
    }
}

//! Wires the stages together and runs them until cancelled.
//!
//! ```text
//! receivers ──(per-shard bounded queues)──▶ assembler shards ──(bounded)──▶ evaluation ──▶ store
//! ```
//!
//! Start-up: load evaluators and eval sets (fail fast), bind every listener
//! (a taken port fails with its address), then spawn. Shutdown is staged and
//! driven by closing channels: health goes NOT_SERVING and the servers stop
//! accepting; when they finish, the last assembler handle drops, the shards
//! emit what they hold (complete traces evaluated, rootless ones per
//! `on_timeout`), the evaluation queue closes and drains. Every wait has a
//! deadline under the configured `shutdown_timeout_ms`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::assembler::{self, Limits, Shard};
use crate::config::Config;
use crate::criteria::{Binder, LoadError};
use crate::listener::Listener;
use crate::receiver;
use crate::scoring;
use crate::store::ResultStore;
use crate::supervise;
use crate::telemetry::Metrics;

mod serve;
mod shutdown;

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("cannot listen on {addr} ({what}): {source}")]
    Bind {
        what: &'static str,
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("{what} server failed: {message}")]
    Serve { what: &'static str, message: String },
    #[error(transparent)]
    Store(#[from] crate::store::DbError),
    #[error("write-ahead log: {0}")]
    Wal(#[from] crate::wal::WalError),
    #[error(transparent)]
    Security(#[from] crate::security::SecurityError),
    /// Work abandoned at the shutdown deadline (each item logged as it was
    /// given up): the process exits non-zero, since results were lost.
    #[error("the shutdown deadline passed with work left: {0}")]
    Drain(String),
}

/// The bound listeners; bind first so a bad port fails before anything starts.
pub struct Listeners {
    pub grpc: Option<TcpListener>,
    pub http: Option<TcpListener>,
    /// The HTTP query API.
    pub api_http: Option<TcpListener>,
    /// The gRPC query API (`toolscore.v1.ScoresService`).
    pub api_grpc: Option<TcpListener>,
}

impl Listeners {
    /// Binds every enabled listener, in the table's order.
    pub async fn bind(config: &Config) -> Result<Listeners, AppError> {
        let mut out = Listeners {
            grpc: None,
            http: None,
            api_http: None,
            api_grpc: None,
        };
        for which in Listener::ALL {
            let l = config.listener(which);
            if !l.enabled {
                continue;
            }
            let bound = TcpListener::bind(l.endpoint)
                .await
                .map_err(|source| AppError::Bind {
                    what: which.description(),
                    addr: l.endpoint,
                    source,
                })?;
            *out.slot(which) = Some(bound);
        }
        Ok(out)
    }

    fn get(&self, which: Listener) -> Option<&TcpListener> {
        match which {
            Listener::OtlpGrpc => self.grpc.as_ref(),
            Listener::OtlpHttp => self.http.as_ref(),
            Listener::ApiHttp => self.api_http.as_ref(),
            Listener::ApiGrpc => self.api_grpc.as_ref(),
        }
    }

    fn slot(&mut self, which: Listener) -> &mut Option<TcpListener> {
        match which {
            Listener::OtlpGrpc => &mut self.grpc,
            Listener::OtlpHttp => &mut self.http,
            Listener::ApiHttp => &mut self.api_http,
            Listener::ApiGrpc => &mut self.api_grpc,
        }
    }
}

/// A running service: its shared parts (for the API and tests) and its task.
pub struct Running {
    pub store: Arc<dyn ResultStore>,
    pub metrics: Arc<Metrics>,
    /// Each enabled listener's bound address (port 0 in the config: the
    /// one the OS chose).
    addrs: Vec<(Listener, SocketAddr)>,
    pub shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), AppError>>,
}

impl Running {
    /// Where `which` listens, `None` when it is off.
    pub fn addr(&self, which: Listener) -> Option<SocketAddr> {
        self.addrs
            .iter()
            .find(|(l, _)| *l == which)
            .map(|(_, a)| *a)
    }

    /// Starts the drain and waits for it.
    pub async fn stop(self) -> Result<(), AppError> {
        self.shutdown.cancel();
        self.wait().await
    }

    /// Waits until the service has stopped (after `shutdown` is cancelled).
    pub async fn wait(self) -> Result<(), AppError> {
        match self.task.await {
            Ok(r) => r,
            Err(e) => Err(AppError::Serve {
                what: "service",
                message: e.to_string(),
            }),
        }
    }
}

/// Loads what the config names (`config_file`: where it came from, for
/// errors and relative paths) and starts every stage on the given listeners.
pub fn start(
    config: Config,
    config_file: Option<&Path>,
    listeners: Listeners,
) -> Result<Running, AppError> {
    let binder = Arc::new(Binder::load(config.binder(), config_file)?);
    for u in binder.catalog.unsupported.values() {
        tracing::warn!(evaluator = %u.id, r#type = %u.type_id, file = %u.file.display(), "evaluator skipped: {}", u.reason);
    }
    let config_path = config_file.unwrap_or(Path::new("<embedded config/default.yaml>"));
    config
        .llm
        .check_sample_rates(|id| binder.catalog.is_llm_judge(id))
        .map_err(|e| LoadError::new(config_path, e.key, e.message))?;
    let mut metrics = Metrics::new();
    let security = crate::security::Security::load(&config, &metrics)?;
    // A provider whose key or TLS files cannot be used fails start-up.
    let llm_metrics = crate::llm::metrics::LlmMetrics::register(&mut metrics.registry);
    let judges = Arc::new(
        crate::llm::Judges::build(&config.llm, &llm_metrics)
            .map_err(|e| LoadError::new(config_path, e.key, e.message))?,
    );
    for ev in binder.catalog.evaluators.values() {
        if let Some(why) = judges.missing_provider(ev) {
            tracing::warn!(evaluator = %ev.id, r#type = %ev.kind.id(), "this evaluator calls a model, but {why}: its scores will be errors");
        }
    }
    crate::security::warn_exposed(&config);
    let exporter_stop = CancellationToken::new();
    // A TLS file of `exporter.tls` that cannot be used fails start-up.
    let exporter = if config.exporter.enabled {
        let file = config_file.unwrap_or(Path::new("<embedded config/default.yaml>"));
        Some(
            crate::exporter::try_spawn(config.exporter.clone(), exporter_stop.clone())
                .map_err(|e| LoadError::new(file, e.key, e.message))?,
        )
    } else {
        None
    };
    if let Some((handle, _)) = &exporter {
        handle.stats().register(&mut metrics.registry);
    }
    let (store, writer_stats) = crate::store::open(&config.store)?;
    if let Some(stats) = writer_stats {
        metrics.register_collector(Box::new(ArcCollector(stats)));
    }
    if let Some((handle, _)) = &exporter {
        let handle = handle.clone();
        // Never blocks: a full export queue drops (and counts) the record.
        store.set_on_stored(Box::new(move |record| handle.offer(record)));
    }
    let admission_metrics =
        crate::receiver::admission::AdmissionMetrics::register(&mut metrics.registry);
    let live = Arc::new(crate::llm::live::Live::new(
        &config.llm,
        judges.clone(),
        Arc::new(config.extract.clone()),
        store.clone(),
        &mut metrics.registry,
    ));
    let metrics = Arc::new(metrics);
    // Opened (and checked) before anything is served; replayed in `run`
    // before the receivers open.
    let wal = if config.wal.enabled {
        Some(crate::wal::Wal::open(&config.wal, metrics.clone())?)
    } else {
        None
    };
    let shutdown = CancellationToken::new();
    let addrs = Listener::ALL
        .into_iter()
        .filter_map(|which| {
            let bound = listeners.get(which)?.local_addr().ok()?;
            Some((which, bound))
        })
        .collect();
    let task = tokio::spawn(run(
        config,
        binder,
        listeners,
        store.clone(),
        metrics.clone(),
        shutdown.clone(),
        Parts {
            exporter: exporter.map(|(handle, task)| (handle, task, exporter_stop)),
            wal,
            security,
            judges,
            live,
            admission_metrics,
        },
    ));
    Ok(Running {
        store,
        metrics,
        addrs,
        shutdown,
        task,
    })
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// The exporter's handle, task and stop token, when export is enabled.
type Exporter = (
    crate::exporter::ExporterHandle,
    tokio::task::JoinHandle<()>,
    CancellationToken,
);

/// What `start` loaded and opened for `run`: the parts a configuration
/// may leave out, and those that must exist before anything is served.
struct Parts {
    exporter: Option<Exporter>,
    /// The log, and what it holds from before this start.
    wal: Option<(crate::wal::Wal, crate::wal::Replay)>,
    /// Each listener's TLS and token check.
    security: crate::security::Security,
    /// The model providers of `POST /v1/evaluate`'s LLM judges.
    judges: Arc<crate::llm::Judges>,
    /// The live LLM judgements of evaluated traces.
    live: Arc<crate::llm::live::Live>,
    admission_metrics: crate::receiver::admission::AdmissionMetrics,
}

/// Runs the service until `shutdown`, then drains it: the named steps
/// below, in order.
async fn run(
    config: Config,
    binder: Arc<Binder>,
    listeners: Listeners,
    store: Arc<dyn ResultStore>,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
    parts: Parts,
) -> Result<(), AppError> {
    let Parts {
        exporter,
        wal,
        security,
        judges,
        live,
        admission_metrics,
    } = parts;
    let failed = supervise::Failed::default();
    let pipeline = start_pipeline(
        &config,
        &binder,
        &store,
        &metrics,
        &failed,
        &live,
        admission_metrics,
    );
    let wal = match wal {
        Some((wal, log)) => {
            replay_log(&wal, log, &pipeline, &store, &metrics, &shutdown).await?;
            Some(wal)
        }
        None => None,
    };
    let ingest = Arc::new(receiver::Ingest {
        handle: pipeline.handle,
        metrics: metrics.clone(),
        keep: pipeline.keep.clone(),
        retry_after: Duration::from_secs(config.assembler.retry_after_secs.max(1)),
        wal: wal.clone(),
        admission: pipeline.admission,
    });
    let serving = serve::Serving {
        config: &config,
        metrics: &metrics,
        failed: &failed,
        security: &security,
    };
    let mut servers = Vec::new();
    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    if let Some(listener) = listeners.grpc {
        health_reporter
            .set_serving::<receiver::grpc::TraceServer>()
            .await;
        health_reporter
            .set_serving::<receiver::grpc::LogsServer>()
            .await;
        servers.push(serving.otlp_grpc(listener, ingest.clone(), health_service, &shutdown));
    }
    if let Some(listener) = listeners.http {
        servers.push(serving.otlp_http(listener, ingest.clone(), &shutdown));
    }
    // The servers hold the other handles; the shards drain when they stop,
    // or when `drain` fires, whichever comes first.
    drop(ingest);
    // The query API answers until the pipeline has drained, so results
    // stored during the drain can still be read; it stops last.
    let ready = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let api_stop = CancellationToken::new();
    let mut api_servers = Vec::new();
    if let Some(listener) = listeners.api_grpc {
        let task = serve::grpc_api(
            listener,
            security.api_grpc.clone(),
            &config,
            store.clone(),
            metrics.clone(),
            api_stop.clone(),
        )?;
        api_servers.push(supervise::watch(
            Listener::ApiGrpc.name(),
            task,
            || (),
            &failed,
            &metrics,
        ));
    }
    let api = listeners.api_http.map(|listener| {
        let state = serve::ApiParts {
            store: store.clone(),
            binder: binder.clone(),
            judges: judges.clone(),
            keep: pipeline.keep.clone(),
            ready: ready.clone(),
            shutdown: shutdown.clone(),
        };
        serving.http_api(listener, state, &api_stop)
    });
    // Certificates and token files are re-read until the last listener stops.
    security.spawn_reloads(&api_stop, &failed, &metrics);
    let retention = supervise::spawn(
        "retention",
        evict_loop(store.clone(), metrics.clone(), shutdown.clone()),
        || (),
        &failed,
        &metrics,
    );
    tracing::info!(
        shards = pipeline.shards,
        workers = pipeline.workers,
        "toolscore is running"
    );

    shutdown.cancelled().await;
    shutdown::Stopping {
        config: &config,
        ready,
        health: health_reporter,
        servers,
        drain: pipeline.drain,
        shard_tasks: pipeline.shard_tasks,
        evaluation: pipeline.evaluation,
        live,
        wal,
        store,
        exporter,
        api_stop,
        api_servers,
        api,
        retention,
    }
    .drain()
    .await
}

/// The pipeline behind the receivers: assembler shards, the evaluation
/// workers and the admission gate, running.
struct Pipeline {
    handle: assembler::AssemblerHandle,
    shard_tasks: Vec<tokio::task::JoinHandle<()>>,
    evaluation: tokio::task::JoinHandle<()>,
    admission: Arc<receiver::admission::Admission>,
    keep: Arc<crate::span::KeepAttributes>,
    /// Makes the shards stop taking spans and drain.
    drain: CancellationToken,
    shards: usize,
    workers: usize,
}

/// Starts the evaluation workers, the admission gate and the assembler
/// shards, each supervised.
fn start_pipeline(
    config: &Config,
    binder: &Arc<Binder>,
    store: &Arc<dyn ResultStore>,
    metrics: &Arc<Metrics>,
    failed: &supervise::Failed,
    live: &Arc<crate::llm::live::Live>,
    admission_metrics: crate::receiver::admission::AdmissionMetrics,
) -> Pipeline {
    let a = &config.assembler;
    let shards = if a.shards == 0 { cpus() } else { a.shards };
    let keep = Arc::new(config.kept_attributes());
    let limits = Limits::for_shard(a, shards, keep.clone());
    let (ready_tx, ready_rx) = mpsc::channel(config.evaluation.queue_capacity.get());
    let workers = if config.evaluation.workers == 0 {
        cpus()
    } else {
        config.evaluation.workers
    };
    let evaluation = supervise::spawn(
        "evaluation",
        scoring::run(
            ready_rx,
            binder.clone(),
            Arc::new(config.extract.clone()),
            store.clone(),
            metrics.clone(),
            Arc::new(live.clone()),
            workers,
        ),
        || (),
        failed,
        metrics,
    );
    let drain = CancellationToken::new();
    let backlog = assembler::Backlog::new(shards);
    let admission = receiver::admission::Admission::new(
        &config.receivers.admission,
        Duration::from_millis(a.grace_after_root_ms),
        backlog.clone(),
        admission_metrics,
    );
    supervise::spawn(
        "admission",
        admission.clone().run(drain.clone()),
        || (),
        failed,
        metrics,
    );
    let pending: assembler::MarkPending = {
        let store = store.clone();
        Arc::new(move |traces, now| store.mark_pending_many(traces, now))
    };
    let (handle, shard_tasks) = assembler::spawn(
        (0..shards).map(|_| Shard::new(limits.clone())).collect(),
        a.queue_capacity,
        Duration::from_millis(200),
        (ready_tx, backlog),
        pending,
        metrics.clone(),
        drain.clone(),
    );
    let shard_tasks = shard_tasks
        .into_iter()
        .map(|t| supervise::watch("assembler", t, || (), failed, metrics))
        .collect();
    Pipeline {
        handle,
        shard_tasks,
        evaluation,
        admission,
        keep,
        drain,
        shards,
        workers,
    }
}

/// Replays what the write-ahead log holds from before this start into the
/// assembler, before any receiver opens.
async fn replay_log(
    wal: &crate::wal::Wal,
    log: crate::wal::Replay,
    pipeline: &Pipeline,
    store: &Arc<dyn ResultStore>,
    metrics: &Arc<Metrics>,
    shutdown: &CancellationToken,
) -> Result<(), AppError> {
    let started = std::time::Instant::now();
    let done = receiver::replay::replay(
        wal,
        log,
        &pipeline.handle,
        store,
        &pipeline.keep,
        metrics,
        shutdown,
    )
    .await?;
    if done.records > 0 {
        tracing::info!(
            records = done.records,
            spans = done.spans,
            traces = done.traces,
            already_stored = done.already_stored,
            seconds = started.elapsed().as_secs_f64(),
            "write-ahead log replayed"
        );
    }
    Ok(())
}

/// A collector shared with the stage that updates it.
#[derive(Debug)]
struct ArcCollector<C>(Arc<C>);

impl<C: prometheus_client::collector::Collector> prometheus_client::collector::Collector
    for ArcCollector<C>
{
    fn encode(
        &self,
        encoder: prometheus_client::encoding::DescriptorEncoder,
    ) -> Result<(), std::fmt::Error> {
        self.0.encode(encoder)
    }
}

/// Evicts results past retention once a second.
async fn evict_loop(store: Arc<dyn ResultStore>, metrics: Arc<Metrics>, stop: CancellationToken) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut reported = 0u64;
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {
                store.evict_expired(std::time::Instant::now());
                let evicted = store.evicted();
                metrics.store_evicted.inc_by(evicted.saturating_sub(reported));
                reported = evicted;
                metrics.store_traces.set(store.len() as i64);
            }
        }
    }
}

/// Loads the config (`None`: the embedded default) and returns it with its file.
pub fn load_config(
    path: Option<&Path>,
) -> Result<(Config, Option<PathBuf>), crate::config::ConfigError> {
    match path {
        Some(p) => Ok((Config::load(p)?, Some(p.to_path_buf()))),
        None => Ok((Config::embedded()?, None)),
    }
}

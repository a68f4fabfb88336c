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
use crate::evaluation;
use crate::listener::Listener;
use crate::receiver;
use crate::store::ResultStore;
use crate::supervise;
use crate::telemetry::Metrics;

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
    pub async fn bind(config: &Config) -> Result<Listeners, AppError> {
        async fn bind_one(what: &'static str, addr: SocketAddr) -> Result<TcpListener, AppError> {
            TcpListener::bind(addr)
                .await
                .map_err(|source| AppError::Bind { what, addr, source })
        }
        let r = &config.receivers;
        Ok(Listeners {
            grpc: match r.grpc.enabled {
                true => Some(bind_one("OTLP/gRPC receiver", r.grpc.endpoint).await?),
                false => None,
            },
            http: match r.http.enabled {
                true => Some(bind_one("OTLP/HTTP receiver", r.http.endpoint).await?),
                false => None,
            },
            api_http: match config.api.http.enabled {
                true => Some(bind_one("HTTP API", config.api.http.endpoint).await?),
                false => None,
            },
            api_grpc: match config.api.grpc.enabled {
                true => Some(bind_one("gRPC query API", config.api.grpc.endpoint).await?),
                false => None,
            },
        })
    }
}

/// A running service: its shared parts (for the API and tests) and its task.
pub struct Running {
    pub store: Arc<dyn ResultStore>,
    pub metrics: Arc<Metrics>,
    pub grpc_addr: Option<SocketAddr>,
    pub http_addr: Option<SocketAddr>,
    pub api_addr: Option<SocketAddr>,
    pub api_grpc_addr: Option<SocketAddr>,
    pub shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), AppError>>,
}

impl Running {
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
        .map_err(|(key, message)| LoadError::new(config_path, key, message))?;
    let mut metrics = Metrics::new();
    let security = crate::security::Security::load(&config, &metrics)?;
    // A provider whose key or TLS files cannot be used fails start-up.
    let llm_metrics = crate::judge::metrics::LlmMetrics::register(&mut metrics.registry);
    let judges = Arc::new(
        crate::judge::Judges::build(&config.llm, &llm_metrics)
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
                .map_err(|e| LoadError::new(file, e.path, e.message))?,
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
    let live = Arc::new(crate::judge::live::Live::new(
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
    let grpc_addr = listeners.grpc.as_ref().and_then(|l| l.local_addr().ok());
    let http_addr = listeners.http.as_ref().and_then(|l| l.local_addr().ok());
    let api_addr = listeners
        .api_http
        .as_ref()
        .and_then(|l| l.local_addr().ok());
    let api_grpc_addr = listeners
        .api_grpc
        .as_ref()
        .and_then(|l| l.local_addr().ok());
    let task = tokio::spawn(run(
        config,
        binder,
        listeners,
        store.clone(),
        metrics.clone(),
        shutdown.clone(),
        Optional {
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
        grpc_addr,
        http_addr,
        api_addr,
        api_grpc_addr,
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

/// The stages a configuration may leave out.
struct Optional {
    exporter: Option<Exporter>,
    /// The log, and what it holds from before this start.
    wal: Option<(crate::wal::Wal, crate::wal::Replay)>,
    /// Each listener's TLS and token check.
    security: crate::security::Security,
    /// The model providers of `POST /v1/evaluate`'s LLM judges.
    judges: Arc<crate::judge::Judges>,
    /// The live LLM judgements of evaluated traces.
    live: Arc<crate::judge::live::Live>,
    admission_metrics: crate::receiver::admission::AdmissionMetrics,
}

async fn run(
    config: Config,
    binder: Arc<Binder>,
    listeners: Listeners,
    store: Arc<dyn ResultStore>,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
    Optional {
        exporter,
        wal,
        security,
        judges,
        live,
        admission_metrics,
    }: Optional,
) -> Result<(), AppError> {
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
    let failed = supervise::Failed::default();
    let evaluation = supervise::spawn(
        "evaluation",
        evaluation::run(
            ready_rx,
            binder.clone(),
            Arc::new(config.extract.clone()),
            store.clone(),
            metrics.clone(),
            Arc::new(live.clone()),
            workers,
        ),
        || (),
        &failed,
        &metrics,
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
        &failed,
        &metrics,
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
    let shard_tasks: Vec<_> = shard_tasks
        .into_iter()
        .map(|t| supervise::watch("assembler", t, || (), &failed, &metrics))
        .collect();
    let wal = match wal {
        Some((wal, log)) => {
            let started = std::time::Instant::now();
            let done =
                receiver::replay::replay(&wal, log, &handle, &store, &keep, &metrics, &shutdown)
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
            Some(wal)
        }
        None => None,
    };
    let ingest = Arc::new(receiver::Ingest {
        handle,
        metrics: metrics.clone(),
        keep: keep.clone(),
        retry_after: Duration::from_secs(a.retry_after_secs.max(1)),
        wal: wal.clone(),
        admission,
    });
    let mut servers = Vec::new();
    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    if let Some(listener) = listeners.grpc {
        let svc = receiver::grpc::service(
            ingest.clone(),
            config.receivers.grpc.max_recv_msg_size_bytes.get(),
        );
        health_reporter
            .set_serving::<receiver::grpc::TraceServer>()
            .await;
        let g = &config.receivers.grpc;
        // (The header deadline is HTTP/1.1's; gRPC calls have their timeout.)
        let limits = metrics
            .connection_limits(
                Listener::OtlpGrpc.name(),
                g.max_connections.get(),
                Duration::ZERO,
            )
            .with_tls(security.otlp_grpc.tls.clone());
        let incoming = crate::net::limited_incoming(listener, limits, shutdown.clone());
        let auth = crate::auth::GrpcAuthLayer::new(
            security.otlp_grpc.guard.clone(),
            crate::security::otlp_grpc_scope,
        );
        let stop = shutdown.clone();
        let streams = g.max_concurrent_streams.get();
        let timeout = Duration::from_millis(g.request_timeout_ms.get());
        let oversize = receiver::grpc::oversize_is_resource_exhausted(metrics.clone());
        let served = async move {
            tonic::transport::Server::builder()
                .max_concurrent_streams(streams)
                .timeout(timeout)
                .http2_keepalive_interval(Some(HTTP2_KEEPALIVE_INTERVAL))
                .http2_keepalive_timeout(Some(HTTP2_KEEPALIVE_TIMEOUT))
                .layer(receiver::grpc::GrpcContentTypeLayer)
                .layer(auth)
                .layer(tower::util::MapResponseLayer::new(oversize))
                .add_service(health_service)
                .add_service(svc)
                .serve_with_incoming_shutdown(incoming, stop.cancelled_owned())
                .await
                .map_err(|e| AppError::Serve {
                    what: "OTLP/gRPC",
                    message: e.to_string(),
                })
        };
        servers.push(supervise::spawn(
            Listener::OtlpGrpc.name(),
            served,
            panicked("OTLP/gRPC"),
            &failed,
            &metrics,
        ));
    }
    if let Some(listener) = listeners.http {
        let h = &config.receivers.http;
        let mut router = receiver::http::router(ingest.clone(), h);
        if let Some(guard) = security.otlp_http.guard.clone() {
            router = router.layer(axum::middleware::from_fn_with_state(
                Arc::new(crate::auth::HttpGuard {
                    guard,
                    scope_of: Box::new(|_, _| Some(crate::auth::Scope::Ingest)),
                    refuse: receiver::http::refuse_auth,
                    sessions: None,
                }),
                crate::auth::http_guard,
            ));
        }
        let limits = metrics
            .connection_limits(
                Listener::OtlpHttp.name(),
                h.max_connections.get(),
                Duration::from_millis(h.read_header_timeout_ms.get()),
            )
            .with_tls(security.otlp_http.tls.clone());
        let stop = shutdown.clone();
        let served = async move {
            crate::net::serve_http(listener, router, limits, stop)
                .await
                .map_err(|e| AppError::Serve {
                    what: "OTLP/HTTP",
                    message: e.to_string(),
                })
        };
        servers.push(supervise::spawn(
            Listener::OtlpHttp.name(),
            served,
            panicked("OTLP/HTTP"),
            &failed,
            &metrics,
        ));
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
        let task = serve_grpc_api(
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
        // With tokens, the UI's pages take a signed-in session too.
        let ui_auth = security
            .api_http
            .guard
            .clone()
            .filter(|_| config.api.ui.enabled)
            .map(|guard| crate::auth::UiAuth {
                guard,
                sessions: Arc::new(crate::auth::Sessions::new(
                    Duration::from_secs(config.api.ui.session_ttl_secs.get()),
                    config.api.ui.max_sessions.get(),
                    security.api_http.tls.is_some(),
                    metrics.ui_sessions.clone(),
                )),
            });
        let state = Arc::new(crate::api::http::ApiState {
            store: store.clone(),
            binder: binder.clone(),
            extract: Arc::new(config.extract.clone()),
            metrics: metrics.clone(),
            ready: ready.clone(),
            failed: failed.clone(),
            config: config.api.clone(),
            shutdown: shutdown.clone(),
            judges: judges.clone(),
            watchers: crate::api::watch::Watchers::new(
                config.api.watch_buffer.get(),
                crate::api::grpc::MAX_WATCHERS,
                shutdown.clone(),
            ),
            keep,
            ui_auth: ui_auth.clone(),
        });
        // The UI joins before the token guard and the timeout: its pages
        // need the `read` scope and are cut off like any other request.
        let mut router = if config.api.ui.enabled {
            crate::api::router(state.clone()).merge(crate::api::ui::router(state))
        } else {
            crate::api::router(state)
        };
        if let Some(guard) = security.api_http.guard.clone() {
            router = router.layer(axum::middleware::from_fn_with_state(
                Arc::new(crate::auth::HttpGuard {
                    guard,
                    scope_of: Box::new(crate::security::api_http_scope(
                        config.api.http.auth.public_metrics,
                    )),
                    refuse: crate::api::http::refuse_auth,
                    sessions: ui_auth.map(|u| u.sessions),
                }),
                crate::auth::http_guard,
            ));
        }
        let router = crate::api::http::with_timeout(
            router,
            Duration::from_millis(config.api.request_timeout_ms.get()),
        );
        let limits = metrics
            .connection_limits(
                Listener::ApiHttp.name(),
                config.api.max_connections.get(),
                Duration::from_millis(config.api.read_header_timeout_ms.get()),
            )
            .with_tls(security.api_http.tls.clone());
        let stop = api_stop.clone();
        let served = async move {
            crate::net::serve_http(listener, router, limits, stop)
                .await
                .map_err(|e| AppError::Serve {
                    what: "HTTP API",
                    message: e.to_string(),
                })
        };
        supervise::spawn(
            Listener::ApiHttp.name(),
            served,
            panicked("HTTP API"),
            &failed,
            &metrics,
        )
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
    tracing::info!(shards, workers, "toolscore is running");

    shutdown.cancelled().await;
    // The drain's deadline runs from the signal, not from start-up.
    let deadline = tokio::time::Instant::now() + Duration::from_millis(config.shutdown_timeout_ms);
    ready.store(false, std::sync::atomic::Ordering::Relaxed);
    tracing::info!("shutting down: receivers stop, buffered traces are evaluated");
    health_reporter
        .set_service_status("", tonic_health::ServingStatus::NotServing)
        .await;
    health_reporter
        .set_not_serving::<receiver::grpc::TraceServer>()
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
        let missed =
            "an assembler shard did not drain before the shutdown deadline; its traces are lost";
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

/// What a server's supervisor returns after its task panicked.
fn panicked(what: &'static str) -> impl FnOnce() -> Result<(), AppError> + Send + 'static {
    move || {
        Err(AppError::Serve {
            what,
            message: "the server task panicked".into(),
        })
    }
}

/// HTTP/2 PINGs on an idle gRPC connection, and how long the peer has to
/// answer before the connection is closed: a vanished peer frees its slot.
const HTTP2_KEEPALIVE_INTERVAL: Duration = Duration::from_secs(60);
const HTTP2_KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// The gRPC query API with its own health service and reflection.
fn serve_grpc_api(
    listener: TcpListener,
    security: crate::security::ListenerSecurity,
    config: &Config,
    store: Arc<dyn ResultStore>,
    metrics: Arc<Metrics>,
    stop: CancellationToken,
) -> Result<tokio::task::JoinHandle<()>, AppError> {
    use crate::api::grpc;
    let scores = grpc::ScoresApi::new(store, config.api.watch_buffer.get())
        .with_max_list_limit(config.api.max_list_limit.get())
        .with_shutdown(stop.clone());
    let dropped = scores.dropped();
    let reflection = grpc::reflection_service().map_err(|e| AppError::Serve {
        what: "gRPC query API",
        message: e.to_string(),
    })?;
    let (health_reporter, health) = tonic_health::server::health_reporter();
    let limits = metrics
        .connection_limits(
            Listener::ApiGrpc.name(),
            config.api.max_connections.get(),
            Duration::ZERO,
        )
        .with_tls(security.tls);
    let incoming = crate::net::limited_incoming(listener, limits, stop.clone());
    let auth = crate::auth::GrpcAuthLayer::new(security.guard, crate::security::api_grpc_scope);
    let timeout = Duration::from_millis(config.api.request_timeout_ms.get());
    Ok(tokio::spawn(async move {
        health_reporter
            .set_serving::<grpc::pb::scores_service_server::ScoresServiceServer<grpc::ScoresApi>>()
            .await;
        // Slow subscribers dropped by the service are counted in the metrics.
        let counter = tokio::spawn({
            let stop = stop.clone();
            async move {
                let mut seen = 0;
                let mut tick = tokio::time::interval(Duration::from_secs(1));
                while !stop.is_cancelled() {
                    tokio::select! {
                        _ = tick.tick() => {}
                        () = stop.cancelled() => {}
                    }
                    let now = dropped.load(std::sync::atomic::Ordering::Relaxed);
                    metrics.watch_subscribers_dropped.inc_by(now - seen);
                    seen = now;
                }
            }
        });
        // The timeout bounds a unary call and the start of a stream (a
        // WatchScores stream then runs on).
        let served = tonic::transport::Server::builder()
            .timeout(timeout)
            .http2_keepalive_interval(Some(HTTP2_KEEPALIVE_INTERVAL))
            .http2_keepalive_timeout(Some(HTTP2_KEEPALIVE_TIMEOUT))
            .layer(receiver::grpc::GrpcContentTypeLayer)
            .layer(auth)
            .layer(tower::util::MapResponseLayer::new(
                grpc::decode_error_is_invalid_argument,
            ))
            .add_service(health)
            .add_service(scores.into_server())
            .add_service(reflection)
            .serve_with_incoming_shutdown(incoming, stop.cancelled_owned())
            .await;
        if let Err(e) = served {
            tracing::error!(error = %e, "the gRPC query API failed");
        }
        counter.abort();
    }))
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

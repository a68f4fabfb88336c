//! Each listener's server, built from its configuration, its TLS and
//! token check and the stage it feeds, and spawned supervised: the steps
//! `run` takes to open the receivers and the query APIs.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::AppError;
use crate::config::Config;
use crate::criteria::Binder;
use crate::listener::Listener;
use crate::receiver;
use crate::security::Security;
use crate::store::ResultStore;
use crate::supervise;
use crate::telemetry::Metrics;

/// What every server is built from.
pub(super) struct Serving<'a> {
    pub config: &'a Config,
    pub metrics: &'a Arc<Metrics>,
    pub failed: &'a supervise::Failed,
    pub security: &'a Security,
}

/// What the HTTP API's handlers share beyond the configuration.
pub(super) struct ApiParts {
    pub store: Arc<dyn ResultStore>,
    pub binder: Arc<Binder>,
    pub judges: Arc<crate::llm::Judges>,
    pub keep: Arc<crate::span::KeepAttributes>,
    /// Cleared when shutdown starts: `/readyz` answers 503.
    pub ready: Arc<std::sync::atomic::AtomicBool>,
    pub shutdown: CancellationToken,
}

impl Serving<'_> {
    /// The OTLP/gRPC receiver (traces and logs), with the health service.
    pub fn otlp_grpc(
        &self,
        listener: TcpListener,
        ingest: Arc<receiver::Ingest>,
        health_service: tonic_health::pb::health_server::HealthServer<
            impl tonic_health::pb::health_server::Health,
        >,
        shutdown: &CancellationToken,
    ) -> JoinHandle<Result<(), AppError>> {
        let (config, metrics, security) = (self.config, self.metrics, self.security);
        let max = config.receivers.grpc.max_recv_msg_size_bytes.get();
        let svc = receiver::grpc::service(ingest.clone(), max);
        let logs = receiver::grpc::logs_service(ingest, max);
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
                .add_service(logs)
                .serve_with_incoming_shutdown(incoming, stop.cancelled_owned())
                .await
                .map_err(|e| AppError::Serve {
                    what: "OTLP/gRPC",
                    message: e.to_string(),
                })
        };
        supervise::spawn(
            Listener::OtlpGrpc.name(),
            served,
            panicked("OTLP/gRPC"),
            self.failed,
            metrics,
        )
    }

    /// The OTLP/HTTP receiver.
    pub fn otlp_http(
        &self,
        listener: TcpListener,
        ingest: Arc<receiver::Ingest>,
        shutdown: &CancellationToken,
    ) -> JoinHandle<Result<(), AppError>> {
        let (metrics, security) = (self.metrics, self.security);
        let h = &self.config.receivers.http;
        let mut router = receiver::http::router(ingest, h);
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
        self.spawn_http(
            Listener::OtlpHttp,
            "OTLP/HTTP",
            listener,
            router,
            limits,
            shutdown,
        )
    }

    /// The HTTP API and the web UI, behind the token check (and the UI's
    /// sessions) and the request timeout; it stops at `api_stop`.
    pub fn http_api(
        &self,
        listener: TcpListener,
        parts: ApiParts,
        api_stop: &CancellationToken,
    ) -> JoinHandle<Result<(), AppError>> {
        let (config, metrics, security) = (self.config, self.metrics, self.security);
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
            store: parts.store,
            binder: parts.binder,
            extract: Arc::new(config.extract.clone()),
            metrics: metrics.clone(),
            ready: parts.ready,
            failed: self.failed.clone(),
            config: config.api.clone(),
            shutdown: parts.shutdown.clone(),
            judges: parts.judges,
            watchers: crate::api::watch::Watchers::new(
                config.api.watch_buffer.get(),
                crate::api::grpc::MAX_WATCHERS,
                parts.shutdown,
            ),
            keep: parts.keep,
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
        self.spawn_http(
            Listener::ApiHttp,
            "HTTP API",
            listener,
            router,
            limits,
            api_stop,
        )
    }

    /// Serves `router` on an HTTP listener until `stop`, supervised.
    fn spawn_http(
        &self,
        which: Listener,
        what: &'static str,
        listener: TcpListener,
        router: axum::Router,
        limits: crate::net::Limits,
        stop: &CancellationToken,
    ) -> JoinHandle<Result<(), AppError>> {
        let stop = stop.clone();
        let served = async move {
            crate::net::serve_http(listener, router, limits, stop)
                .await
                .map_err(|e| AppError::Serve {
                    what,
                    message: e.to_string(),
                })
        };
        supervise::spawn(
            which.name(),
            served,
            panicked(what),
            self.failed,
            self.metrics,
        )
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
pub(super) fn grpc_api(
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

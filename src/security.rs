//! Each listener's TLS and token check, loaded from the configuration at
//! start-up (and by `validate-config`), so a missing or unparsable file is
//! a start-up error naming its key, never a failure on the first client.

use std::sync::Arc;
use std::time::Duration;

use http::Method;
use tokio_util::sync::CancellationToken;

use crate::auth::{Guard, Scope, Tokens};
use crate::config::{Config, ListenerConfig};
use crate::listener::Listener;
use crate::telemetry::Metrics;
use crate::tls::ServerTls;

/// A listener's security that cannot be loaded; names the key path.
#[derive(Debug, thiserror::Error)]
pub enum SecurityError {
    #[error("{key}.tls: {source}")]
    Tls {
        key: &'static str,
        source: crate::tls::TlsError,
    },
    #[error(transparent)]
    Auth(#[from] crate::auth::AuthError),
    #[error("{key}.auth.enabled: no token in `auth.tokens` grants the `{scope}` scope it needs")]
    NoScope {
        key: &'static str,
        scope: &'static str,
    },
    /// The TLS files of an outgoing connection (`exporter.tls`,
    /// `telemetry.otlp.tls`): the key path and what is wrong.
    #[error(transparent)]
    Client(crate::key_error::KeyError),
}

/// One listener's TLS (if on) and token check (if on).
#[derive(Clone, Default)]
pub struct ListenerSecurity {
    pub tls: Option<Arc<ServerTls>>,
    pub guard: Option<Guard>,
}

/// The security of every listener.
#[derive(Default)]
pub struct Security {
    pub otlp_grpc: ListenerSecurity,
    pub otlp_http: ListenerSecurity,
    pub api_http: ListenerSecurity,
    pub api_grpc: ListenerSecurity,
    tokens: Option<Arc<Tokens>>,
}

/// A listener's configuration as this module sees it.
struct ListenerSettings<'a> {
    which: Listener,
    config: ListenerConfig<'a>,
    /// The scope its main calls need.
    scope: Scope,
}

fn listeners(config: &Config) -> [ListenerSettings<'_>; 4] {
    Listener::ALL.map(|which| ListenerSettings {
        which,
        config: config.listener(which),
        scope: match which {
            Listener::OtlpGrpc | Listener::OtlpHttp => Scope::Ingest,
            Listener::ApiHttp | Listener::ApiGrpc => Scope::Read,
        },
    })
}

fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::Ingest => "ingest",
        Scope::Read => "read",
        Scope::Evaluate => "evaluate",
        Scope::Metrics => "metrics",
    }
}

impl Security {
    /// Reads every certificate, key, CA bundle and token source the
    /// configuration names.
    pub fn load(config: &Config, metrics: &Metrics) -> Result<Security, SecurityError> {
        let all = listeners(config);
        let tokens = if all.iter().any(|l| l.config.auth.enabled) {
            Some(Arc::new(Tokens::load(&config.auth)?))
        } else {
            None
        };
        let mut out = Security {
            tokens: tokens.clone(),
            ..Security::default()
        };
        for l in &all {
            let (name, key) = (l.which.name(), l.which.key());
            let alpn = l.which.protocol().alpn();
            let tls = match l.config.tls {
                Some(tls) => Some(Arc::new(
                    ServerTls::load(name, tls, &[alpn], metrics.tls_metrics(name))
                        .map_err(|source| SecurityError::Tls { key, source })?,
                )),
                None => None,
            };
            let guard = match &tokens {
                Some(tokens) if l.config.auth.enabled => {
                    let granted = config
                        .auth
                        .tokens
                        .iter()
                        .any(|t| t.scopes.contains(&l.scope));
                    if !granted {
                        return Err(SecurityError::NoScope {
                            key,
                            scope: scope_name(l.scope),
                        });
                    }
                    Some(Guard::new(
                        Arc::clone(tokens),
                        name,
                        metrics.auth_failures(name),
                    ))
                }
                _ => None,
            };
            let slot = match l.which {
                Listener::OtlpGrpc => &mut out.otlp_grpc,
                Listener::OtlpHttp => &mut out.otlp_http,
                Listener::ApiHttp => &mut out.api_http,
                Listener::ApiGrpc => &mut out.api_grpc,
            };
            *slot = ListenerSecurity { tls, guard };
        }
        Ok(out)
    }

    /// Re-reads certificates and token files on their intervals until
    /// `stop`, supervised: a reload task that panics is counted and fails
    /// `/healthz`, since certificates and tokens would never be read again.
    pub fn spawn_reloads(
        &self,
        stop: &CancellationToken,
        failed: &crate::supervise::Failed,
        metrics: &Arc<crate::telemetry::Metrics>,
    ) {
        let listeners = [
            &self.otlp_grpc,
            &self.otlp_http,
            &self.api_http,
            &self.api_grpc,
        ];
        for tls in listeners.into_iter().filter_map(|l| l.tls.clone()) {
            let (every, listener) = (tls.reload_interval(), tls.listener());
            let task = reload_every(every, stop.clone(), move || match tls.reload() {
                Ok(true) => tracing::info!(listener, "TLS certificate reloaded"),
                Ok(false) => {}
                Err(e) => tracing::warn!(
                    listener,
                    error = %e,
                    "TLS files changed but cannot be used; the previous certificate is still served"
                ),
            });
            crate::supervise::spawn("tls_reload", task, || (), failed, metrics);
        }
        if let Some(tokens) = self.tokens.clone() {
            let every = tokens.reload_interval();
            let task = reload_every(every, stop.clone(), move || {
                if let Err(e) = tokens.reload() {
                    tracing::warn!(error = %e, "cannot read tokens again; the previous ones are kept");
                }
            });
            crate::supervise::spawn("token_reload", task, || (), failed, metrics);
        }
    }
}

/// Calls `reload` every `every` until `stop`, on a blocking thread: it
/// reads files.
async fn reload_every(
    every: Duration,
    stop: CancellationToken,
    reload: impl Fn() + Send + Sync + 'static,
) {
    let reload = Arc::new(reload);
    // Validated at start-up (at most a day), so this cannot overflow.
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let reload = Arc::clone(&reload);
        match tokio::task::spawn_blocking(move || reload()).await {
            Ok(()) => {}
            // A panic of the reload itself goes on to the supervisor.
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // The runtime is shutting down.
            Err(_) => return,
        }
    }
}

/// Reads the TLS files of the enabled outgoing connections that use TLS
/// (`https://` endpoints, PostgreSQL with `sslmode=require`), as their
/// start does (`validate-config` checks them here).
pub fn check_clients(config: &Config) -> Result<(), SecurityError> {
    let (e, t, pg) = (
        &config.exporter,
        &config.telemetry.otlp,
        &config.store.postgres,
    );
    let postgres_tls =
        config.store.backend == crate::config::StoreBackend::Postgres && pg.wants_tls();
    let clients = [
        (
            "exporter.tls",
            e.enabled && e.endpoint.starts_with("https://"),
            &e.tls,
            &b"h2"[..],
        ),
        (
            "telemetry.otlp.tls",
            t.enabled && t.endpoint.starts_with("https://"),
            &t.tls,
            &b"http/1.1"[..],
        ),
        ("store.postgres.tls", postgres_tls, &pg.tls, &b""[..]),
    ];
    for (prefix, used, tls, alpn) in clients {
        if used {
            let alpn: &[&[u8]] = if alpn.is_empty() { &[] } else { &[alpn] };
            crate::tls::keyed::build(prefix, tls, alpn).map_err(SecurityError::Client)?;
        }
    }
    Ok(())
}

/// Warns, naming each, about enabled listeners reachable beyond this host
/// without TLS or without tokens.
pub fn warn_exposed(config: &Config) {
    for l in listeners(config) {
        if !l.config.enabled || l.config.endpoint.ip().is_loopback() {
            continue;
        }
        let missing = match (l.config.tls.is_some(), l.config.auth.enabled) {
            (true, true) => continue,
            (false, true) => "TLS",
            (true, false) => "authentication",
            (false, false) => "TLS or authentication",
        };
        let key = l.which.key();
        tracing::warn!(
            listener = key,
            endpoint = %l.config.endpoint,
            "{key} listens beyond this host without {missing}: set `{key}.tls` and `{key}.auth`",
        );
    }
}

/// The scope of an HTTP API request: health probes, the UI's sign-in and
/// sign-out and its static files are open, `/metrics` per
/// `public_metrics`, `POST /v1/evaluate` needs `evaluate`, the rest `read`.
pub fn api_http_scope(public_metrics: bool) -> impl Fn(&Method, &str) -> Option<Scope> {
    move |method, path| match path {
        "/healthz" | "/readyz" => None,
        // The UI's sign-in, sign-out and static files need no token.
        "/ui/sign-in" | "/ui/sign-out" => None,
        p if p.starts_with("/ui/assets/") => None,
        "/metrics" if public_metrics => None,
        "/metrics" => Some(Scope::Metrics),
        "/v1/evaluate" if method == Method::POST => Some(Scope::Evaluate),
        _ => Some(Scope::Read),
    }
}

/// The scope of a gRPC call: health checks are open; the receiver's calls
/// need `ingest`, the query API's (and reflection) `read`.
pub fn otlp_grpc_scope(path: &str) -> Option<Scope> {
    (!path.starts_with("/grpc.health.v1.Health/")).then_some(Scope::Ingest)
}

pub fn api_grpc_scope(path: &str) -> Option<Scope> {
    (!path.starts_with("/grpc.health.v1.Health/")).then_some(Scope::Read)
}

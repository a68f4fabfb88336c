//! The query API's configuration (`api:`), owned by the stage that reads it.

use std::net::SocketAddr;
use std::num::{NonZero, NonZeroU64, NonZeroUsize};

use serde::{Deserialize, Serialize};

use crate::listener::Listener;

/// The query API: HTTP (JSON) and gRPC (`toolscore.v1.ScoresService`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ApiConfig {
    /// The HTTP API (default endpoint `127.0.0.1:8080`).
    #[serde(deserialize_with = "http_listener")]
    pub http: ApiListener,
    /// The gRPC query API (default endpoint `127.0.0.1:8081`).
    #[serde(deserialize_with = "grpc_listener")]
    pub grpc: ApiListener,
    /// Every HTTP API request is cut off after this long (503).
    pub request_timeout_ms: NonZeroU64,
    /// The longest `wait_ms` a long-poll may ask for.
    pub max_wait_ms: u64,
    /// The largest `limit` of `GET /traces`.
    pub max_list_limit: NonZeroUsize,
    /// The largest `POST /v1/evaluate` body.
    pub max_evaluate_body_bytes: NonZeroUsize,
    /// Results buffered per `WatchScores` subscriber before it is dropped as too slow.
    pub watch_buffer: NonZeroUsize,
    /// Connections open at once on each API listener.
    pub max_connections: NonZeroUsize,
    /// HTTP API: a request's headers must arrive within this; a keep-alive
    /// connection idle this long is closed.
    pub read_header_timeout_ms: NonZeroU64,
    /// The web UI served on the HTTP API's listener (`/ui/`).
    pub ui: UiConfig,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            http: ApiListener {
                enabled: true,
                endpoint: Listener::ApiHttp.default_endpoint(),
                tls: None,
                auth: crate::auth::ListenerAuthConfig::default(),
            },
            grpc: ApiListener {
                enabled: true,
                endpoint: Listener::ApiGrpc.default_endpoint(),
                tls: None,
                auth: crate::auth::ListenerAuthConfig::default(),
            },
            request_timeout_ms: const { NonZero::new(30_000).unwrap() },
            max_wait_ms: 25_000,
            max_list_limit: const { NonZero::new(1000).unwrap() },
            max_evaluate_body_bytes: const { NonZero::new(16 << 20).unwrap() },
            watch_buffer: const { NonZero::new(256).unwrap() },
            max_connections: const { NonZero::new(1024).unwrap() },
            read_header_timeout_ms: const { NonZero::new(10_000).unwrap() },
            ui: UiConfig::default(),
        }
    }
}

/// The web UI (`src/api/ui/`): on by default, since it only reads what the
/// HTTP API already serves, under the same tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UiConfig {
    /// Serve the pages under `/ui/` on `api.http.endpoint`.
    pub enabled: bool,
    /// With tokens on `api.http`: how long a browser stays signed in (the
    /// session and its cookie).
    pub session_ttl_secs: NonZeroU64,
    /// Signed-in sessions kept at once; past it the oldest ends.
    pub max_sessions: NonZeroUsize,
}

impl Default for UiConfig {
    fn default() -> Self {
        UiConfig {
            enabled: true,
            session_ttl_secs: const { NonZero::new(8 * 3600).unwrap() },
            max_sessions: const { NonZero::new(1000).unwrap() },
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApiListener {
    pub enabled: bool,
    pub endpoint: SocketAddr,
    /// TLS (`cert_file`, `key_file`, `client_ca_file`, …); absent: plaintext.
    pub tls: Option<crate::tls::ServerTlsConfig>,
    /// Bearer tokens with the listener's scope (`auth.tokens`).
    pub auth: crate::auth::ListenerAuthConfig,
}

/// A listener's keys as written: every one optional, the endpoint's
/// default being the listener's own.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListenerKeys {
    #[serde(default = "enabled")]
    enabled: bool,
    #[serde(default)]
    endpoint: Option<SocketAddr>,
    #[serde(default)]
    tls: Option<crate::tls::ServerTlsConfig>,
    #[serde(default)]
    auth: crate::auth::ListenerAuthConfig,
}

fn enabled() -> bool {
    true
}

fn listener<'de, D: serde::Deserializer<'de>>(
    d: D,
    which: Listener,
) -> Result<ApiListener, D::Error> {
    let k = ListenerKeys::deserialize(d)?;
    Ok(ApiListener {
        enabled: k.enabled,
        endpoint: k.endpoint.unwrap_or_else(|| which.default_endpoint()),
        tls: k.tls,
        auth: k.auth,
    })
}

fn http_listener<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ApiListener, D::Error> {
    listener(d, Listener::ApiHttp)
}

fn grpc_listener<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ApiListener, D::Error> {
    listener(d, Listener::ApiGrpc)
}

impl crate::bounds::Bounded for ApiConfig {
    const MAXIMA: &'static [(&'static str, u64)] = &[
        ("request_timeout_ms", crate::bounds::HOUR_MS),
        ("max_wait_ms", crate::bounds::HOUR_MS),
        ("max_list_limit", 100_000),
        ("max_evaluate_body_bytes", crate::bounds::GIB),
        ("watch_buffer", 1_000_000),
        ("max_connections", 100_000),
        ("read_header_timeout_ms", crate::bounds::HOUR_MS),
    ];
}

impl crate::bounds::Bounded for UiConfig {
    const MAXIMA: &'static [(&'static str, u64)] = &[
        ("session_ttl_secs", 30 * crate::bounds::DAY_SECS),
        ("max_sessions", 1_000_000),
    ];
}

//! The query API's configuration (`api:`), owned by the stage that reads it.

use std::net::SocketAddr;
use std::num::{NonZero, NonZeroU64, NonZeroUsize};

use serde::{Deserialize, Serialize};

/// The query API: HTTP (JSON) and gRPC (`toolscore.v1.ScoresService`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ApiConfig {
    pub http: ApiListener,
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
                endpoint: SocketAddr::from(([127, 0, 0, 1], 8080)),
                tls: None,
                auth: crate::auth::ListenerAuthConfig::default(),
            },
            grpc: ApiListener {
                enabled: true,
                endpoint: SocketAddr::from(([127, 0, 0, 1], 8081)),
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
}

impl Default for UiConfig {
    fn default() -> Self {
        UiConfig { enabled: true }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiListener {
    #[serde(default = "enabled")]
    pub enabled: bool,
    pub endpoint: SocketAddr,
    #[serde(default)]
    /// TLS (`cert_file`, `key_file`, `client_ca_file`, …); absent: plaintext.
    pub tls: Option<crate::tls::ServerTlsConfig>,
    /// Bearer tokens with the listener's scope (`auth.tokens`).
    #[serde(default)]
    pub auth: crate::auth::ListenerAuthConfig,
}

fn enabled() -> bool {
    true
}

//! The receivers' configuration (`receivers:`), owned by the stage that
//! reads it.

use std::net::SocketAddr;
use std::num::{NonZero, NonZeroU32, NonZeroU64, NonZeroUsize};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReceiversConfig {
    pub grpc: GrpcReceiverConfig,
    pub http: HttpReceiverConfig,
    /// Both receivers' wait for the evaluation backlog.
    pub admission: super::admission::AdmissionConfig,
}

/// OTLP/gRPC `TraceService/Export`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GrpcReceiverConfig {
    pub enabled: bool,
    pub endpoint: SocketAddr,
    /// Largest decoded (inflated) request message.
    pub max_recv_msg_size_bytes: NonZeroUsize,
    /// Export calls in flight at once on one connection (HTTP/2
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`): clients queue further calls on
    /// their side. Each call in flight holds its decoded request, so this
    /// bounds a connection's share of memory; under overload, fewer streams
    /// also mean less work per refused call.
    pub max_concurrent_streams: NonZeroU32,
    /// Connections open at once; past it a new one is closed at once.
    pub max_connections: NonZeroUsize,
    /// An export call must be answered within this (`CANCELLED` past it),
    /// which also ends a stream whose message never arrives.
    pub request_timeout_ms: NonZeroU64,
    /// TLS (`cert_file`, `key_file`, `client_ca_file`, …); absent: plaintext.
    pub tls: Option<crate::tls::ServerTlsConfig>,
    /// Bearer tokens with the listener's scope (`auth.tokens`).
    pub auth: crate::auth::ListenerAuthConfig,
}

impl Default for GrpcReceiverConfig {
    fn default() -> Self {
        GrpcReceiverConfig {
            enabled: true,
            endpoint: crate::listener::Listener::OtlpGrpc.default_endpoint(),
            max_recv_msg_size_bytes: const { NonZero::new(64 << 20).unwrap() },
            max_concurrent_streams: const { NonZero::new(16).unwrap() },
            max_connections: const { NonZero::new(1024).unwrap() },
            request_timeout_ms: const { NonZero::new(30_000).unwrap() },
            tls: None,
            auth: crate::auth::ListenerAuthConfig::default(),
        }
    }
}

/// OTLP/HTTP `POST /v1/traces`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpReceiverConfig {
    pub enabled: bool,
    pub endpoint: SocketAddr,
    /// Largest request body as sent (compressed or not).
    pub max_request_body_bytes: NonZeroUsize,
    /// Largest body after gzip inflation.
    pub max_decompressed_body_bytes: NonZeroUsize,
    /// Connections open at once; past it a new one is closed at once.
    pub max_connections: NonZeroUsize,
    /// A request's headers must arrive within this; a keep-alive connection
    /// idle this long is closed.
    pub read_header_timeout_ms: NonZeroU64,
    /// A request's body must arrive whole within this (408 past it).
    pub read_timeout_ms: NonZeroU64,
    /// TLS (`cert_file`, `key_file`, `client_ca_file`, …); absent: plaintext.
    pub tls: Option<crate::tls::ServerTlsConfig>,
    /// Bearer tokens with the listener's scope (`auth.tokens`).
    pub auth: crate::auth::ListenerAuthConfig,
}

impl Default for HttpReceiverConfig {
    fn default() -> Self {
        HttpReceiverConfig {
            enabled: true,
            endpoint: crate::listener::Listener::OtlpHttp.default_endpoint(),
            max_request_body_bytes: const { NonZero::new(16 << 20).unwrap() },
            max_decompressed_body_bytes: const { NonZero::new(64 << 20).unwrap() },
            max_connections: const { NonZero::new(1024).unwrap() },
            read_header_timeout_ms: const { NonZero::new(10_000).unwrap() },
            read_timeout_ms: const { NonZero::new(30_000).unwrap() },
            tls: None,
            auth: crate::auth::ListenerAuthConfig::default(),
        }
    }
}

impl crate::bounds::Bounded for GrpcReceiverConfig {
    const MAXIMA: &'static [(&'static str, u64)] = &[
        ("max_recv_msg_size_bytes", crate::bounds::GIB),
        ("max_concurrent_streams", 10_000),
        ("max_connections", 100_000),
        ("request_timeout_ms", crate::bounds::HOUR_MS),
    ];
}

impl crate::bounds::Bounded for HttpReceiverConfig {
    const MAXIMA: &'static [(&'static str, u64)] = &[
        ("max_request_body_bytes", crate::bounds::GIB),
        ("max_decompressed_body_bytes", crate::bounds::GIB),
        ("max_connections", 100_000),
        ("read_header_timeout_ms", crate::bounds::HOUR_MS),
        ("read_timeout_ms", crate::bounds::HOUR_MS),
    ];
}

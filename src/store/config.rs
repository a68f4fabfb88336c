//! The store's configuration (`store:`), owned by the stage that reads it.

use std::num::{NonZero, NonZeroU64, NonZeroUsize};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// Where results live: `sqlite` (a file; they survive restarts),
    /// `postgres` (a server; shared by several replicas) or `memory` (this
    /// process only; for tests and benchmarks).
    pub backend: StoreBackend,
    /// Results kept; the oldest are evicted beyond it.
    pub max_traces: NonZeroUsize,
    /// Results older than this are evicted.
    pub retention_secs: NonZeroU64,
    /// Bytes of results held in memory: the whole store with `memory`, the
    /// recent results kept for long polls and watchers with a database.
    pub max_bytes: NonZeroUsize,
    pub sqlite: SqliteConfig,
    pub postgres: PostgresConfig,
    pub writer: WriterConfig,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            backend: StoreBackend::Sqlite,
            max_traces: const { NonZero::new(100_000).unwrap() },
            retention_secs: const { NonZero::new(3600).unwrap() },
            max_bytes: const { NonZero::new(64 << 20).unwrap() },
            sqlite: SqliteConfig::default(),
            postgres: PostgresConfig::default(),
            writer: WriterConfig::default(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StoreBackend {
    Sqlite,
    Postgres,
    Memory,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SqliteConfig {
    /// The database file, created with its directory when missing; relative
    /// to the working directory.
    pub path: std::path::PathBuf,
    /// How long a statement waits for the file's lock (another process on
    /// the same file) before it fails.
    pub busy_timeout_ms: u64,
}

impl Default for SqliteConfig {
    fn default() -> Self {
        SqliteConfig {
            path: "toolscore-data/results.db".into(),
            busy_timeout_ms: 5_000,
        }
    }
}

/// The PostgreSQL backend: several replicas on one database.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PostgresConfig {
    /// A `postgres://` URL (or a libpq `key=value` string). Its password,
    /// when it has none, comes from `password_file`, else `PGPASSWORD`.
    pub url: String,
    /// A file holding the password (a mounted Secret); one trailing newline
    /// is ignored.
    pub password_file: Option<std::path::PathBuf>,
    /// Connections open at once for reads (the API) and retention; the
    /// writer and the listener have one each besides.
    pub pool_size: NonZeroUsize,
    /// How long a connection's start-up (TCP, TLS, authentication) may
    /// take, data may stay unacknowledged on a connection, and a read waits
    /// for a busy pool's connection.
    pub connect_timeout_ms: NonZeroU64,
    /// Any statement running longer is cancelled by the server (an error:
    /// a write is retried, a read answered unavailable); 0: no limit.
    pub statement_timeout_ms: u64,
    /// A replica claims the LLM judgements it runs for this long at a
    /// time, renewing the claim every quarter of it; judgements whose
    /// replica stopped renewing (killed before its model answered) are
    /// settled as `skipped` by any replica once the claim runs out.
    pub judgement_lease_secs: NonZeroU64,
    /// With `sslmode=require` in the URL: how the server's certificate is
    /// checked (`ca_file`, else the system's roots; and its host name).
    pub tls: crate::tls::ClientTlsConfig,
}

impl PostgresConfig {
    /// Whether the URL asks for TLS (`sslmode=require`; `verify-ca` and
    /// `verify-full` are read the same).
    pub fn wants_tls(&self) -> bool {
        ["require", "verify-ca", "verify-full"]
            .iter()
            .any(|mode| self.url.contains(&format!("sslmode={mode}")))
    }
}

impl Default for PostgresConfig {
    fn default() -> Self {
        PostgresConfig {
            url: String::new(),
            password_file: None,
            pool_size: const { NonZero::new(8).unwrap() },
            connect_timeout_ms: const { NonZero::new(5_000).unwrap() },
            statement_timeout_ms: 30_000,
            judgement_lease_secs: const { NonZero::new(60).unwrap() },
            tls: crate::tls::ClientTlsConfig::default(),
        }
    }
}

/// The database writer: results queue here between evaluation and their
/// commit; a full queue makes evaluation wait (backpressure up to the
/// receivers), never drops.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WriterConfig {
    /// Results waiting for their commit.
    pub queue_capacity: NonZeroUsize,
    /// Results committed in one transaction at most.
    pub max_batch: NonZeroUsize,
    /// The wait before retrying a failed commit, doubled on each failure up
    /// to 32 times this.
    pub retry_backoff_ms: NonZeroU64,
}

impl Default for WriterConfig {
    fn default() -> Self {
        WriterConfig {
            queue_capacity: const { NonZero::new(1024).unwrap() },
            max_batch: const { NonZero::new(512).unwrap() },
            retry_backoff_ms: const { NonZero::new(100).unwrap() },
        }
    }
}

impl crate::bounds::Bounded for StoreConfig {
    const MAXIMA: &'static [(&'static str, u64)] = &[
        ("max_traces", 100_000_000),
        ("retention_secs", 365 * crate::bounds::DAY_SECS),
        ("max_bytes", 1024 * crate::bounds::GIB),
    ];
}

impl crate::bounds::Bounded for SqliteConfig {
    const MAXIMA: &'static [(&'static str, u64)] = &[("busy_timeout_ms", crate::bounds::HOUR_MS)];
}

impl crate::bounds::Bounded for PostgresConfig {
    const MAXIMA: &'static [(&'static str, u64)] = &[
        ("pool_size", 1_000),
        ("connect_timeout_ms", crate::bounds::HOUR_MS),
        ("statement_timeout_ms", crate::bounds::HOUR_MS),
        ("judgement_lease_secs", crate::bounds::DAY_SECS),
    ];
}

impl crate::bounds::Bounded for WriterConfig {
    const MAXIMA: &'static [(&'static str, u64)] = &[
        ("queue_capacity", 1_000_000),
        ("max_batch", 100_000),
        ("retry_backoff_ms", 60_000),
    ];
}

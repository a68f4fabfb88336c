//! The write-ahead log's configuration (`wal:`), owned by the module that
//! reads it.

use std::num::{NonZero, NonZeroU64};

use serde::{Deserialize, Serialize};

/// The write-ahead log: a request is acknowledged only once its spans are
/// in it, so a crash loses nothing acknowledged (docs/operations.md, "Durability").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WalConfig {
    pub enabled: bool,
    /// The log's directory, created when missing; relative to the working
    /// directory. One process per directory.
    pub dir: std::path::PathBuf,
    /// The log's size on disk; past it, receivers refuse (retryable) until
    /// segments whose traces are stored are deleted.
    pub max_bytes: NonZeroU64,
    /// A segment is closed and a new one started past this size.
    pub segment_bytes: NonZeroU64,
    /// When an append counts as done: written to the OS (`none`), or also
    /// fsynced, by a shared fsync at most every `sync_interval_ms`
    /// (`interval`) or by one per write (`always`).
    pub sync: WalSync,
    pub sync_interval_ms: NonZeroU64,
}

impl Default for WalConfig {
    fn default() -> Self {
        WalConfig {
            enabled: true,
            dir: "toolscore-data/wal".into(),
            max_bytes: const { NonZero::new(1 << 30).unwrap() },
            segment_bytes: const { NonZero::new(64 << 20).unwrap() },
            sync: WalSync::None,
            sync_interval_ms: const { NonZero::new(10).unwrap() },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WalSync {
    None,
    Interval,
    Always,
}

impl crate::bounds::Bounded for WalConfig {
    const MAXIMA: &'static [(&'static str, u64)] = &[
        ("max_bytes", 1 << 50),
        ("segment_bytes", 1 << 40),
        ("sync_interval_ms", 60_000),
    ];
}

//! Trace assembly: spans grouped by trace ID until the trace is complete.
//!
//! Sharded by trace ID: each shard is a [`core::Shard`] owned by one task, so
//! the hot path takes no lock. The pure core decides; the driver loop
//! (`driver.rs`) feeds it spans and its one timer.

pub mod backlog;
mod config;
pub mod core;
mod driver;

pub use self::core::{Limits, Push, Ready, Reason, Shard};
pub use backlog::{Backlog, Level, Ticket};
pub use config::{AssemblerConfig, OnTimeout};
pub use driver::{AssemblerHandle, Batch, MarkPending, spawn};

use crate::span::TraceId;

/// The shard that owns a trace: trace IDs are random, so their low bytes spread evenly.
pub fn shard_of(trace_id: &TraceId, shards: usize) -> usize {
    let mut b = [0u8; 8];
    b.copy_from_slice(&trace_id.0[8..]);
    (u64::from_le_bytes(b) % shards.max(1) as u64) as usize
}

#[cfg(test)]
mod tests;

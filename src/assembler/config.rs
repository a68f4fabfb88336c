//! The assembler's configuration (`assembler:`), owned by the stage that
//! reads it.

use std::num::{NonZero, NonZeroU64, NonZeroUsize};

use serde::{Deserialize, Serialize};

/// What to do with a trace whose root span never came.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnTimeout {
    Evaluate,
    Drop,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AssemblerConfig {
    /// Assembler shards (each owns a slice of trace IDs); 0 = one per CPU.
    pub shards: usize,
    /// Wait after the root span arrives, for late children, before evaluating.
    pub grace_after_root_ms: u64,
    /// A rootless trace is evaluated (or dropped) after this long with no new span.
    pub idle_timeout_secs: NonZeroU64,
    /// …or after this long in all.
    pub max_trace_age_secs: NonZeroU64,
    pub on_timeout: OnTimeout,
    /// A span for an evaluated trace within this window re-evaluates it (revision + 1).
    pub late_span_window_secs: u64,
    /// Traces buffered at once (across shards); beyond it exports are refused as retryable.
    pub max_traces: NonZeroUsize,
    /// Spans kept per trace; spans beyond it are refused one by one.
    pub max_spans_per_trace: NonZeroUsize,
    /// Memory held by buffered spans (approximate, across shards).
    pub max_buffered_bytes: NonZeroUsize,
    /// Open (unevaluated) traces one service (`service.name`) may hold,
    /// across shards; 0: no limit. Keeps one sender from taking the buffer.
    pub max_traces_per_service: usize,
    /// Span batches (one per request and shard) queued between the receivers and one shard.
    pub queue_capacity: NonZeroUsize,
    /// The `Retry-After` / `RetryInfo` delay suggested to clients when full.
    pub retry_after_secs: u64,
}

impl Default for AssemblerConfig {
    fn default() -> Self {
        AssemblerConfig {
            shards: 0,
            grace_after_root_ms: 1000,
            idle_timeout_secs: const { NonZero::new(300).unwrap() },
            max_trace_age_secs: const { NonZero::new(3600).unwrap() },
            on_timeout: OnTimeout::Evaluate,
            late_span_window_secs: 60,
            max_traces: const { NonZero::new(100_000).unwrap() },
            max_spans_per_trace: const { NonZero::new(10_000).unwrap() },
            max_buffered_bytes: const { NonZero::new(512 << 20).unwrap() },
            max_traces_per_service: 0,
            queue_capacity: const { NonZero::new(64).unwrap() },
            retry_after_secs: 1,
        }
    }
}

impl crate::bounds::Bounded for AssemblerConfig {
    const MAXIMA: &'static [(&'static str, u64)] = &[
        ("shards", 1024),
        ("grace_after_root_ms", crate::bounds::HOUR_MS),
        ("idle_timeout_secs", 7 * crate::bounds::DAY_SECS),
        ("max_trace_age_secs", 7 * crate::bounds::DAY_SECS),
        ("late_span_window_secs", crate::bounds::DAY_SECS),
        ("max_traces", 100_000_000),
        ("max_traces_per_service", 100_000_000),
        ("max_spans_per_trace", 10_000_000),
        ("max_buffered_bytes", 1024 * crate::bounds::GIB),
        ("queue_capacity", 1_000_000),
        ("retry_after_secs", 3600),
    ];
}

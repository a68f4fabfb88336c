//! The receivers' refusal and rejection reasons and the traces' outcomes, as
//! label values: one enum each, written once below, so a value cannot be
//! misspelt and every one is registered at zero from the start (`ALL`).

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};

/// An enum of reasons, its label values and `ALL` of them, from one list.
macro_rules! reasons {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $label:literal,)+ }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)+
        }

        impl $name {
            pub const ALL: &[$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $label,)+
                }
            }
        }

        impl EncodeLabelValue for $name {
            fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
                std::fmt::Write::write_str(encoder, self.as_str())
            }
        }
    };
}

reasons! {
    /// Why a whole export request was refused
    /// (`toolscore_requests_refused_total`).
    Refusal {
        /// The assembler is at its trace or byte bound (retryable).
        Full => "full",
        /// A new trace of a service at `max_traces_per_service` (retryable).
        ServiceQuota => "service_quota",
        /// Admission waited `max_wait_ms` for evaluation (retryable).
        EvaluationBacklog => "evaluation_backlog",
        TooLarge => "too_large",
        Malformed => "malformed",
        UnsupportedMediaType => "unsupported_media_type",
        UnsupportedEncoding => "unsupported_encoding",
        AllSpansInvalid => "all_spans_invalid",
        /// The body did not arrive whole in time.
        Timeout => "timeout",
        /// The write-ahead log is at `wal.max_bytes` (retryable).
        WalFull => "wal_full",
        /// The write-ahead log failed to write (retryable).
        WalError => "wal_error",
    }
}

reasons! {
    /// Why spans of a request that was taken were rejected, each for good
    /// (`toolscore_spans_rejected_total`; the answer's `partial_success`).
    Rejection {
        /// A trace or span ID of the wrong length or all zeros.
        InvalidId => "invalid_id",
        /// The trace holds `max_spans_per_trace` spans.
        TraceFull => "trace_full",
        /// The trace was evaluated longer ago than the late-span window.
        TooLate => "too_late",
        /// The span could not be buffered: a bug, logged with the trace's ID.
        InternalError => "internal_error",
    }
}

reasons! {
    /// How a trace left the assembler, or was revised
    /// (`toolscore_traces_total`).
    TraceOutcome {
        /// Its root closed and the grace period passed: evaluated.
        Completed => "completed",
        /// No root within the idle timeout: evaluated as it is.
        TimedOut => "timed_out",
        /// No root within the idle timeout: dropped (`on_timeout: drop`).
        TimedOutDropped => "timed_out_dropped",
        /// A late span made a new revision of an evaluated trace.
        Revised => "revised",
        /// Evaluated and kept for late spans, forgotten early to make room.
        EvictedAfterEvaluation => "evicted_after_evaluation",
        /// Of the timed-out ones, those timed out early to make room.
        EvictedIdle => "evicted_idle",
        /// Its buffer was found corrupt (a bug, logged): dropped.
        DroppedCorrupt => "dropped_corrupt",
    }
}

reasons! {
    /// What the write-ahead log's replay did with a trace at start
    /// (`toolscore_wal_replayed_traces_total`).
    ReplayOutcome {
        /// Buffered again, to be evaluated.
        Reassembled => "reassembled",
        /// Its result was stored: kept for late spans only.
        AlreadyStored => "already_stored",
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TraceOutcomeLabel {
    pub outcome: TraceOutcome,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReplayOutcomeLabel {
    pub outcome: ReplayOutcome,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefusalLabel {
    pub reason: Refusal,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RejectionLabel {
    pub reason: Rejection,
}

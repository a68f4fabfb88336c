//! The receivers' refusal and rejection reasons, as label values: one enum
//! each, so a reason cannot be misspelt and every one is registered at zero
//! from the start.

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};

/// Why a whole export request was refused
/// (`toolscore_requests_refused_total`).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Refusal {
    /// The assembler is at its trace or byte bound (retryable).
    Full,
    /// A new trace of a service at `max_traces_per_service` (retryable).
    ServiceQuota,
    /// Admission waited `max_wait_ms` for evaluation (retryable).
    EvaluationBacklog,
    TooLarge,
    Malformed,
    UnsupportedMediaType,
    UnsupportedEncoding,
    AllSpansInvalid,
    /// The body did not arrive whole in time.
    Timeout,
    /// The write-ahead log is at `wal.max_bytes` (retryable).
    WalFull,
    /// The write-ahead log failed to write (retryable).
    WalError,
}

impl Refusal {
    pub const ALL: [Refusal; 11] = [
        Refusal::Full,
        Refusal::ServiceQuota,
        Refusal::EvaluationBacklog,
        Refusal::TooLarge,
        Refusal::Malformed,
        Refusal::UnsupportedMediaType,
        Refusal::UnsupportedEncoding,
        Refusal::AllSpansInvalid,
        Refusal::Timeout,
        Refusal::WalFull,
        Refusal::WalError,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Full => "full",
            Refusal::ServiceQuota => "service_quota",
            Refusal::EvaluationBacklog => "evaluation_backlog",
            Refusal::TooLarge => "too_large",
            Refusal::Malformed => "malformed",
            Refusal::UnsupportedMediaType => "unsupported_media_type",
            Refusal::UnsupportedEncoding => "unsupported_encoding",
            Refusal::AllSpansInvalid => "all_spans_invalid",
            Refusal::Timeout => "timeout",
            Refusal::WalFull => "wal_full",
            Refusal::WalError => "wal_error",
        }
    }
}

/// Why spans of a request that was taken were rejected, each for good
/// (`toolscore_spans_rejected_total`; the answer's `partial_success`).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Rejection {
    /// A trace or span ID of the wrong length or all zeros.
    InvalidId,
    /// The trace holds `max_spans_per_trace` spans.
    TraceFull,
    /// The trace was evaluated longer ago than the late-span window.
    TooLate,
    /// The span could not be buffered: a bug, logged with the trace's ID.
    InternalError,
}

impl Rejection {
    pub const ALL: [Rejection; 4] = [
        Rejection::InvalidId,
        Rejection::TraceFull,
        Rejection::TooLate,
        Rejection::InternalError,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Rejection::InvalidId => "invalid_id",
            Rejection::TraceFull => "trace_full",
            Rejection::TooLate => "too_late",
            Rejection::InternalError => "internal_error",
        }
    }
}

impl EncodeLabelValue for Refusal {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        std::fmt::Write::write_str(encoder, self.as_str())
    }
}

impl EncodeLabelValue for Rejection {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        std::fmt::Write::write_str(encoder, self.as_str())
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefusalLabel {
    pub reason: Refusal,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RejectionLabel {
    pub reason: Rejection,
}

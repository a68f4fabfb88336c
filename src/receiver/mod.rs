//! OTLP receivers: gRPC `TraceService/Export` and `LogsService/Export`
//! (`grpc.rs`), HTTP `POST /v1/traces` and `POST /v1/logs` (`http.rs`).
//! Only this module knows tonic's and axum's request types; each hands its
//! decoded records (`decode.rs`: spans, or the events of log records) to
//! [`ingest`], which validates them, submits them to the assembler and
//! turns the verdicts into the OTLP answer: partial success for records
//! refused one by one, a retryable refusal when the assembler is full.

pub mod admission;
mod config;
pub mod decode;
pub mod grpc;
pub mod http;
pub mod replay;
pub mod wire;

pub use config::{GrpcReceiverConfig, HttpReceiverConfig, ReceiversConfig};

use std::time::Duration;

use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsPartialSuccess, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceResponse,
};

use crate::assembler::{AssemblerHandle, Push};
use crate::span::KeepAttributes;
use crate::telemetry::{Metrics, ReceiverLabel, Refusal, Rejection};
use crate::wal::{Appended, Kind, Wal, WalError};
use wire::Decoded;

/// What a request carries: spans, or log records (whose events are kept
/// with their spans).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Traces,
    Logs,
}

impl Signal {
    /// What one item is called in messages to clients.
    fn items(self) -> &'static str {
        match self {
            Signal::Traces => "spans",
            Signal::Logs => "log records",
        }
    }
}

/// A request's result when it was (at least partly) taken.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Ingested {
    /// Spans refused one by one (OTLP `partial_success.rejected_spans`).
    pub rejected: i64,
    /// Why, for `partial_success.error_message`; empty when nothing was refused.
    pub message: String,
}

impl Ingested {
    /// The OTLP response: `partial_success` only when something was refused.
    pub fn response(self) -> ExportTraceServiceResponse {
        ExportTraceServiceResponse {
            partial_success: (self.rejected > 0).then_some(ExportTracePartialSuccess {
                rejected_spans: self.rejected,
                error_message: self.message,
            }),
        }
    }

    /// The OTLP logs response.
    pub fn logs_response(self) -> ExportLogsServiceResponse {
        ExportLogsServiceResponse {
            partial_success: (self.rejected > 0).then_some(ExportLogsPartialSuccess {
                rejected_log_records: self.rejected,
                error_message: self.message,
            }),
        }
    }
}

/// A request refused whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The assembler is at its bounds, or evaluation is behind: retry after
    /// the delay (nothing the request carried is lost: accepted spans are
    /// de-duplicated on retry).
    #[error("toolscore is at capacity; retry after {retry_after:?}")]
    Unavailable { retry_after: Duration },
    /// Every span was invalid.
    #[error("{0}")]
    Invalid(String),
}

/// How much of the per-span error detail goes into a message.
const MAX_REASONS: usize = 5;

/// What both receivers share: where spans go, what to keep, how to refuse.
pub struct Ingest {
    pub handle: AssemblerHandle,
    pub metrics: std::sync::Arc<Metrics>,
    pub keep: std::sync::Arc<KeepAttributes>,
    /// Suggested to clients refused because the assembler is full.
    pub retry_after: Duration,
    /// The write-ahead log, when on: a request is answered only once it is in it.
    pub wal: Option<Wal>,
    /// Holds requests while the evaluation backlog is over its limit.
    pub admission: std::sync::Arc<admission::Admission>,
}

/// Waits until the evaluation backlog lets a request in, or refuses it
/// (counted). Called before the request's body is read: a refused request
/// costs no decoding and is not logged, and nothing of it was taken, so a
/// refusal loses nothing (the client retries).
pub async fn admit(ctx: &Ingest) -> Result<(), Refused> {
    ctx.admission.admit().await.map_err(|b| {
        ctx.metrics.refuse(Refusal::EvaluationBacklog);
        Refused::Unavailable {
            retry_after: b.retry_after,
        }
    })
}

/// Appends a request's bytes to the write-ahead log (when it is on), after
/// they decoded and before they are taken: a log that cannot take them
/// refuses the request, retryably. A request none of whose records is
/// taken (a logs request of application logs, say) is not logged.
pub fn log(
    ctx: &Ingest,
    kind: Kind,
    bytes: &[u8],
    decoded: &Decoded,
) -> Result<Option<Appended>, Refused> {
    let Some(wal) = &ctx.wal else {
        return Ok(None);
    };
    if decoded.spans.is_empty() {
        return Ok(None);
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    match wal.append(kind, now, bytes) {
        Ok(appended) => Ok(Some(appended)),
        Err(e) => Err(wal_refusal(ctx, &e)),
    }
}

fn wal_refusal(ctx: &Ingest, e: &WalError) -> Refused {
    if matches!(e, WalError::Full { .. }) {
        ctx.metrics.refuse(Refusal::WalFull);
    } else {
        ctx.metrics.refuse(Refusal::WalError);
        tracing::warn!(error = %e, "refusing a request: the write-ahead log cannot take it");
    }
    Refused::Unavailable {
        retry_after: ctx.retry_after,
    }
}

/// Validates, submits and accounts for one request's spans.
pub async fn ingest(
    ctx: &Ingest,
    receiver: &'static str,
    signal: Signal,
    decoded: Decoded,
    logged: Option<Appended>,
) -> Result<Ingested, Refused> {
    let (handle, metrics, retry_after) = (&ctx.handle, &ctx.metrics, ctx.retry_after);
    let Decoded {
        spans,
        rejected: bad_ids,
        ignored,
    } = decoded;
    // A span's events (`Span.events`) are records of their own, but the
    // client sent spans: in a traces request only spans are counted as
    // received, taken or refused one by one (an event's refusal is still
    // counted by its reason).
    let events: Vec<bool> = match signal {
        Signal::Traces if spans.spans().iter().any(|e| e.event) => {
            spans.spans().iter().map(|e| e.event).collect()
        }
        _ => Vec::new(),
    };
    let sent = spans.len() - events.iter().filter(|e| **e).count();
    let total = (sent + bad_ids.len()) as u64;
    let items = signal.items();
    let received = match signal {
        Signal::Traces => &metrics.spans_received,
        Signal::Logs => &metrics.log_records_received,
    };
    received
        .get_or_create(&ReceiverLabel { receiver })
        .inc_by(total + ignored);
    metrics.log_records_ignored.inc_by(ignored);
    let mut reasons: Vec<String> = bad_ids
        .iter()
        .take(MAX_REASONS)
        .map(ToString::to_string)
        .collect();
    metrics.reject(Rejection::InvalidId, bad_ids.len() as u64);
    if spans.is_empty() {
        if bad_ids.is_empty() {
            return Ok(Ingested::default());
        }
        if ignored > 0 {
            // Not all invalid: the others were read (and dropped).
            return Ok(Ingested {
                rejected: i64::try_from(bad_ids.len()).unwrap_or(i64::MAX),
                message: format!("{} {items} rejected: {}", bad_ids.len(), reasons.join("; ")),
            });
        }
        metrics.refuse(Refusal::AllSpansInvalid);
        return Err(Refused::Invalid(format!(
            "all {} {items} were invalid: {}",
            bad_ids.len(),
            reasons.join("; ")
        )));
    }
    // Taken and logged at once; answered when both are done. The append's
    // hold on its segment lasts until the shards hold it for their traces.
    let mut logged = logged;
    let hold = logged.as_mut().map(crate::wal::Appended::take_pin);
    let segment = ctx.wal.as_ref().zip(logged.as_ref().map(|a| a.segment));
    let durable = async {
        match logged {
            Some(a) => a.durable().await,
            None => Ok(()),
        }
    };
    let (verdicts, durable) = tokio::join!(handle.submit(spans, segment), durable);
    drop(hold);
    if let Err(e) = durable {
        // Spans it took stay (a retry is de-duplicated); none is acknowledged.
        return Err(wal_refusal(ctx, &e));
    }
    let (mut accepted, mut dup, mut trace_full, mut late, mut corrupt, mut full, mut quota) =
        (0u64, 0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    // Of span events: refused by trace limit, lateness, internal error.
    let mut events_refused = [0u64; 3];
    for (i, v) in verdicts.iter().enumerate() {
        let event = events.get(i).copied().unwrap_or(false);
        match v {
            Push::Full => full += 1,
            Push::ServiceFull => quota += 1,
            Push::Accepted | Push::Duplicate if event => {}
            Push::TraceFull if event => events_refused[0] += 1,
            Push::TooLate if event => events_refused[1] += 1,
            Push::Corrupt if event => events_refused[2] += 1,
            Push::Accepted => accepted += 1,
            Push::Duplicate => dup += 1,
            Push::TraceFull => trace_full += 1,
            Push::TooLate => late += 1,
            Push::Corrupt => corrupt += 1,
        }
    }
    metrics.spans_accepted.inc_by(accepted + dup);
    metrics.spans_duplicate.inc_by(dup);
    metrics.reject(Rejection::TraceFull, trace_full + events_refused[0]);
    metrics.reject(Rejection::TooLate, late + events_refused[1]);
    metrics.reject(Rejection::InternalError, corrupt + events_refused[2]);
    if full > 0 || quota > 0 {
        metrics.refuse(if full > 0 {
            Refusal::Full
        } else {
            Refusal::ServiceQuota
        });
        return Err(Refused::Unavailable { retry_after });
    }
    for (n, why) in [
        (trace_full, "exceed the per-trace span limit"),
        (late, "arrived after their trace's late-span window"),
        (
            corrupt,
            "could not be buffered (an internal error, in the service's log)",
        ),
    ] {
        if n > 0 {
            reasons.push(format!("{n} {items} {why}"));
        }
    }
    let rejected = bad_ids.len() as u64 + trace_full + late + corrupt;
    Ok(Ingested {
        rejected: i64::try_from(rejected).unwrap_or(i64::MAX),
        message: if rejected == 0 {
            String::new()
        } else {
            format!("{rejected} {items} rejected: {}", reasons.join("; "))
        },
    })
}

//! Start-up replay of the write-ahead log: the receivers take the logged
//! requests again, in the order they were logged, before they open to
//! clients. A trace already stored (a committed result, from before the
//! crash or restart) goes back into the assembler as an evaluated trace kept
//! for late spans: it is not evaluated, stored or exported again unless the
//! log holds spans beyond its result's (late spans whose revision the crash
//! cut off), which make the next revision. The others are assembled anew,
//! their deadlines counted from now, and keep holding the segments they are
//! in until their results are stored.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use foldhash::fast::RandomState;
use tokio_util::sync::CancellationToken;

use super::decode::decode;
use crate::assembler::{AssemblerHandle, Push};
use crate::record::Records;
use crate::span::{KeepAttributes, TraceId};
use crate::store::{ResultStore, TraceStatus};
use crate::telemetry::{Metrics, ReplayOutcome, ReplayOutcomeLabel};
use crate::wal::{Replay, Wal, WalError};

/// How long replay waits before offering again spans the assembler refused
/// as full (evaluation is catching up).
const FULL_BACKOFF: Duration = Duration::from_millis(20);

/// What replay did, for the start-up log line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Replayed {
    pub records: u64,
    pub spans: u64,
    pub traces: u64,
    pub already_stored: u64,
    /// Logged requests that no longer decode (a damaged record that passed
    /// its checksum cannot be, so: a bug); counted and skipped.
    pub undecodable: u64,
}

/// Replays every logged request into the assembler; then segments nothing
/// holds may be deleted.
pub async fn replay(
    wal: &Wal,
    mut log: Replay,
    handle: &AssemblerHandle,
    store: &Arc<dyn ResultStore>,
    keep: &KeepAttributes,
    metrics: &Metrics,
    stop: &CancellationToken,
) -> Result<Replayed, WalError> {
    let mut done = Replayed::default();
    // The traces seen so far: bounded by the traces in the log.
    let mut seen: HashSet<TraceId, RandomState> = HashSet::default();
    loop {
        let (next, back) = tokio::task::spawn_blocking(move || {
            let next = log.next_segment();
            (next, log)
        })
        .await
        .map_err(|e| WalError::Io {
            what: "replay".into(),
            source: std::io::Error::other(e.to_string()),
        })?;
        log = back;
        let Some(records) = next else { break };
        for record in records? {
            done.records += 1;
            let decoded = match decode(record.kind, &record.payload, keep) {
                Ok(d) => d,
                Err(e) => {
                    done.undecodable += 1;
                    tracing::error!(segment = record.segment, error = %e, "a logged request does not decode; its spans are skipped");
                    continue;
                }
            };
            let request = decoded.spans;
            for span in request.spans() {
                let id = span.trace_id;
                if !seen.insert(id) {
                    continue;
                }
                done.traces += 1;
                let outcome = match stored_result(store, id).await {
                    // Kept for late spans: its logged spans are its result's,
                    // unless the log holds more (a revision the crash cut off).
                    Some((revision, spans)) => {
                        handle.restore(id, revision, spans).await;
                        done.already_stored += 1;
                        ReplayOutcome::AlreadyStored
                    }
                    None => ReplayOutcome::Reassembled,
                };
                metrics
                    .wal_replayed_traces
                    .get_or_create(&ReplayOutcomeLabel { outcome })
                    .inc();
            }
            if request.is_empty() {
                continue;
            }
            done.spans += request.len() as u64;
            metrics.wal_replayed_spans.inc_by(request.len() as u64);
            if !submit_all(handle, request, wal, record.segment, stop).await {
                // Shutting down: what is left stays in the log for the next start.
                return Ok(done);
            }
        }
    }
    wal.replay_done();
    Ok(done)
}

/// The revision and span count of the trace's committed result, if any.
async fn stored_result(store: &Arc<dyn ResultStore>, id: TraceId) -> Option<(u32, usize)> {
    match crate::store::get(store, id).await {
        Ok(Some(r)) if r.status != TraceStatus::Pending => Some((r.revision, r.span_count)),
        // Unreadable: evaluate it again rather than lose it.
        _ => None,
    }
}

/// Submits spans until the assembler has taken them all (nothing logged is
/// dropped because evaluation is behind); false if `stop` fired first.
async fn submit_all(
    handle: &AssemblerHandle,
    request: Records,
    wal: &Wal,
    segment: u64,
    stop: &CancellationToken,
) -> bool {
    let request = std::sync::Arc::new(request);
    loop {
        let verdicts = handle
            .submit_shared(request.clone(), Some((wal, segment)))
            .await;
        if !verdicts
            .iter()
            .any(|v| matches!(v, Push::Full | Push::ServiceFull))
        {
            return true;
        }
        // Those taken come back as duplicates.
        tokio::select! {
            () = tokio::time::sleep(FULL_BACKOFF) => {}
            () = stop.cancelled() => return false,
        }
    }
}

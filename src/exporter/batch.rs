//! A batch of records → OTLP requests: pure, run on the blocking pool.

use std::ops::Range;
use std::sync::Arc;

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;

use super::convert;
use crate::store::StoredResult;

/// A request's records are grouped so its encoded items stay under this,
/// below the 4 MiB a collector accepts by default. A single record larger
/// than this is still sent, alone.
pub(crate) const MAX_REQUEST_BYTES: usize = 3 * 1024 * 1024;

/// One request and the batch's records (by index) and items it carries.
#[derive(Debug)]
pub(crate) struct Covering<R> {
    pub records: Range<usize>,
    pub items: u64,
    pub request: R,
}

/// A batch converted to requests.
#[derive(Debug, Default)]
pub(crate) struct Requests {
    pub spans: Vec<Covering<ExportTraceServiceRequest>>,
    pub logs: Vec<Covering<ExportLogsServiceRequest>>,
}

/// Converts a batch, grouping records so no request's items exceed
/// [`MAX_REQUEST_BYTES`] (a lone oversized record goes alone). Pure.
pub(crate) fn convert_batch(
    records: &[Arc<StoredResult>],
    resource: &Resource,
    now: u64,
    spans: bool,
    logs: bool,
) -> Requests {
    let mut out = Requests::default();
    if spans {
        let per_record: Vec<Vec<Span>> = records
            .iter()
            .map(|r| convert::result_spans(r, now))
            .collect();
        out.spans = group_by_size(&per_record)
            .into_iter()
            .map(|range| {
                let spans: Vec<Span> = per_record[range.clone()].concat();
                Covering {
                    records: range,
                    items: spans.len() as u64,
                    request: ExportTraceServiceRequest {
                        resource_spans: vec![ResourceSpans {
                            resource: Some(resource.clone()),
                            scope_spans: vec![ScopeSpans {
                                scope: Some(convert::scope()),
                                spans,
                                ..ScopeSpans::default()
                            }],
                            ..ResourceSpans::default()
                        }],
                    },
                }
            })
            .collect();
    }
    if logs {
        let per_record: Vec<Vec<LogRecord>> = records
            .iter()
            .map(|r| convert::result_logs(r, now, now))
            .collect();
        out.logs = group_by_size(&per_record)
            .into_iter()
            .map(|range| {
                let log_records: Vec<LogRecord> = per_record[range.clone()].concat();
                Covering {
                    records: range,
                    items: log_records.len() as u64,
                    request: ExportLogsServiceRequest {
                        resource_logs: vec![ResourceLogs {
                            resource: Some(resource.clone()),
                            scope_logs: vec![ScopeLogs {
                                scope: Some(convert::scope()),
                                log_records,
                                ..ScopeLogs::default()
                            }],
                            ..ResourceLogs::default()
                        }],
                    },
                }
            })
            .collect();
    }
    out
}

fn group_by_size<M: Message>(per_record: &[Vec<M>]) -> Vec<Range<usize>> {
    group_sizes(
        per_record
            .iter()
            .map(|items| items.iter().map(Message::encoded_len).sum()),
        MAX_REQUEST_BYTES,
    )
}

/// Consecutive groups whose sizes sum to at most `limit`, except a lone
/// item over it; every index is in exactly one group.
fn group_sizes(sizes: impl Iterator<Item = usize>, limit: usize) -> Vec<Range<usize>> {
    let mut groups = Vec::new();
    let (mut start, mut total) = (0, 0);
    let mut end = 0;
    for (i, size) in sizes.enumerate() {
        if total > 0 && total + size > limit {
            groups.push(start..i);
            (start, total) = (i, 0);
        }
        total += size;
        end = i + 1;
    }
    if end > start {
        groups.push(start..end);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_becomes_one_request_per_signal_covering_every_record() {
        let records: Vec<_> = (0..3)
            .map(|_| Arc::new(convert::tests::record(2)))
            .collect();
        let r = convert_batch(&records, &convert::resource("t"), 5, true, true);
        assert_eq!(r.spans.len(), 1);
        assert_eq!((r.spans[0].records.clone(), r.spans[0].items), (0..3, 6));
        assert_eq!((r.logs[0].records.clone(), r.logs[0].items), (0..3, 6));
        let only_logs = convert_batch(&records, &convert::resource("t"), 5, false, true);
        assert!(only_logs.spans.is_empty());
    }

    #[test]
    fn groups_stay_under_the_limit_and_cover_every_record() {
        assert_eq!(group_sizes([].into_iter(), 10), Vec::<Range<usize>>::new());
        assert_eq!(group_sizes([3, 3, 3].into_iter(), 10), vec![0..3]);
        assert_eq!(group_sizes([6, 6, 3, 1].into_iter(), 10), vec![0..1, 1..4]);
        assert_eq!(
            group_sizes([25, 2, 30].into_iter(), 10),
            vec![0..1, 1..2, 2..3]
        );
        assert_eq!(group_sizes([0, 0, 4].into_iter(), 4), vec![0..3]);
    }
}

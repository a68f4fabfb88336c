//! OTLP log records → event records.
//!
//! Some instrumentations put the model's messages only in log records (the
//! GenAI conventions' events: `gen_ai.client.inference.operation.details`,
//! the older `gen_ai.user.message` … `gen_ai.choice`), each carrying the
//! trace and span it belongs to. A log record is kept when it belongs to a
//! span and carries something extraction reads (a kept attribute, or the
//! body of an event named by [`KeepAttributes::with_event_bodies`]); the
//! others (an application's own logs, records with no trace context) are
//! counted and dropped, as a Collector's filter would.

use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs};
use prost::Message;

use super::events::event_id;
use super::{Header, Records, kept_of, key_and_text, service_name};
use crate::span::{self, AttrValue, EVENT_BODY, KeepAttributes, KeyRef, RejectedSpan};

/// What a request's log records became.
#[derive(Debug, Default)]
pub struct FromLogs {
    /// The kept records, each an event of its span.
    pub records: Records,
    /// Records with malformed IDs, refused one by one.
    pub rejected: Vec<RejectedSpan>,
    /// Records toolscore does not read: no span to belong to, or nothing
    /// extraction reads.
    pub ignored: u64,
}

/// Reads a request's log records, keeping what `keep` names.
pub fn from_logs(resource_logs: &[ResourceLogs], keep: &KeepAttributes) -> FromLogs {
    let mut out = FromLogs::default();
    let body_key = keep.id(EVENT_BODY).map(KeyRef::Id);
    for (ri, rl) in resource_logs.iter().enumerate() {
        let service = service_name(rl.resource.as_ref());
        for (si, sl) in rl.scope_logs.iter().enumerate() {
            let scope = sl.scope.as_ref().map_or(0, |s| keep.scope_id(&s.name));
            for (index, log) in sl.log_records.iter().enumerate() {
                if log.trace_id.is_empty() || log.span_id.is_empty() {
                    out.ignored += 1;
                    continue;
                }
                let (trace_id, parent) = match span::checked_ids(&log.trace_id, &log.span_id, &[]) {
                    Ok((t, s, _)) => (t, s),
                    Err(reason) => {
                        out.rejected.push(RejectedSpan {
                            what: "log record",
                            resource: ri,
                            scope: si,
                            index,
                            reason,
                        });
                        continue;
                    }
                };
                let name = event_name(log);
                let body = log
                    .body
                    .as_ref()
                    .filter(|b| b.value.is_some() && keep.keeps_body(name))
                    .map(AttrValue::from);
                let kept = kept_of(keep, &log.attributes, key_and_text);
                let body = body.zip(body_key);
                if kept.is_empty() && body.is_none() {
                    out.ignored += 1;
                    continue;
                }
                // Of the record as sent: a retried one gets the same ID.
                let encoded = log.encode_to_vec();
                let time = match log.time_unix_nano {
                    0 => log.observed_time_unix_nano,
                    t => t,
                };
                let header = Header {
                    trace_id,
                    span_id: event_id(&[&encoded]),
                    parent: Some(parent),
                    start: time,
                    end: time,
                    name,
                    service: service.as_deref(),
                    scope,
                    event: true,
                };
                let records = &mut out.records;
                records.begin(&header, kept.len() + usize::from(body.is_some()));
                records.key_values(kept);
                if let Some((body, key)) = body {
                    records.key(key);
                    records.value(&body);
                }
                records.end(u32::try_from(encoded.len()).unwrap_or(u32::MAX));
            }
        }
    }
    out
}

/// The event's name: the record's `event_name`, or the older `event.name`
/// attribute.
fn event_name(log: &LogRecord) -> &str {
    if !log.event_name.is_empty() {
        return &log.event_name;
    }
    log.attributes
        .iter()
        .rev()
        .find(|kv| kv.key == "event.name")
        .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
            any_value::Value::StringValue(s) => Some(s.as_str()),
            _ => None,
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use opentelemetry_proto::tonic::logs::v1::LogsData;
    use serde_json::json;

    use super::*;
    use crate::span::{SpanId, TraceId};

    fn keep() -> Arc<KeepAttributes> {
        Arc::new(
            KeepAttributes::only(["gen_ai.input.messages".to_owned()])
                .with_event_bodies(["gen_ai.choice".to_owned()]),
        )
    }

    fn log(name: &str, attrs: &[(&str, &str)], body: bool) -> serde_json::Value {
        let attributes: Vec<_> = attrs
            .iter()
            .map(|(k, v)| json!({"key": k, "value": {"stringValue": v}}))
            .collect();
        let mut r = json!({
            "timeUnixNano": "7",
            "traceId": "01010101010101010101010101010101",
            "spanId": "0202020202020202",
            "eventName": name,
            "attributes": attributes,
        });
        if body {
            r["body"] =
                json!({"kvlistValue": {"values": [{"key": "index", "value": {"intValue": "0"}}]}});
        }
        r
    }

    fn request(records: Vec<serde_json::Value>) -> Vec<ResourceLogs> {
        let doc = json!({"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]});
        serde_json::from_value::<LogsData>(doc)
            .unwrap()
            .resource_logs
    }

    #[test]
    fn a_span_s_events_are_kept_and_the_rest_counted() {
        let mut no_context = log("gen_ai.choice", &[], true);
        no_context["traceId"] = json!("");
        let mut bad = log("gen_ai.choice", &[], true);
        bad["spanId"] = json!("0000000000000000");
        let records = vec![
            log("gen_ai.choice", &[], true),
            log("x", &[("gen_ai.input.messages", "[]")], false),
            log("app.log", &[("other", "v")], true),
            no_context,
            bad,
        ];
        let keep = keep();
        let got = from_logs(&request(records), &keep);
        assert_eq!(got.ignored, 2);
        assert_eq!(got.rejected.len(), 1);
        assert_eq!(
            got.rejected[0].to_string(),
            "log record 4 of scope 0 of resource 0: span ID must not be all zeros"
        );
        assert_eq!(got.records.len(), 2);
        assert!(got.records.spans().iter().all(|e| !e.root));
        let traces = got.records.traces(&keep).unwrap();
        let spans = &traces[&TraceId([1; 16])];
        assert_eq!(spans.iter().count(), 0);
        let events: Vec<_> = spans.events().collect();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].name(), "gen_ai.choice");
        assert_eq!(events[0].parent_span_id, Some(SpanId([2; 8])));
        assert_eq!(events[0].start_time_unix_nano, 7);
        assert!(events[0].attr(EVENT_BODY).is_some());
        assert!(events[1].attr("gen_ai.input.messages").is_some());
        assert!(events[1].attr(EVENT_BODY).is_none());
    }

    #[test]
    fn a_retried_record_gets_the_same_id() {
        let keep = keep();
        let one = || {
            from_logs(
                &request(vec![
                    log("x", &[("gen_ai.input.messages", "[1]")], false),
                    log("x", &[("gen_ai.input.messages", "[2]")], false),
                ]),
                &keep,
            )
        };
        let (a, b) = (one(), one());
        let ids = |r: &FromLogs| {
            r.records
                .spans()
                .iter()
                .map(|e| e.span_id)
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&a), ids(&b));
        assert_ne!(ids(&a)[0], ids(&a)[1]);
    }
}

//! A span's own events (`Span.events`) → event records.
//!
//! Some instrumentations put the model's messages in the events of its
//! span rather than in log records: Azure AI Inference and Semantic Kernel
//! (`gen_ai.user.message` … `gen_ai.choice`, each message in the attribute
//! `gen_ai.event.content`), the older GenAI conventions
//! (`gen_ai.content.prompt` and `gen_ai.content.completion`), or the GenAI
//! `gen_ai.client.inference.operation.details` event. An event is kept when
//! it carries an attribute the service keeps; the others (`exception`, a
//! stream's first token) cost a walk over their fields and nothing more.
//! A kept event is written after its span's record, as an event of that
//! span; `receiver/wire.rs` writes the same records from protobuf bytes.

use std::hash::{BuildHasher, Hasher};

use opentelemetry_proto::tonic::trace::v1::span::Event;

use super::{Header, Records, kept_of, key_and_text};
use crate::span::{KeepAttributes, SpanId};

/// The ID of an event: a hash of `parts` with a fixed seed, so that an
/// event sent again (a retried export, or one replayed from the
/// write-ahead log) gets the same ID and is de-duplicated. Never 0, which
/// is no valid ID.
pub(super) fn event_id(parts: &[&[u8]]) -> SpanId {
    let mut h = foldhash::fast::FixedState::with_seed(0x746f_6f6c_7363_6f72).build_hasher();
    for part in parts {
        h.write(part);
    }
    SpanId(h.finish().max(1).to_le_bytes())
}

/// Writes the events of `span` (begun and ended just before) that carry
/// kept attributes.
pub(super) fn span_events(
    out: &mut Records,
    keep: &KeepAttributes,
    span: &Header<'_>,
    events: &[Event],
) {
    for (index, e) in events.iter().enumerate() {
        let kept = kept_of(keep, &e.attributes, key_and_text);
        if kept.is_empty() {
            continue;
        }
        out.begin(&event_header(span, e.time_unix_nano, &e.name), kept.len());
        out.key_values(kept);
        out.end_event(span.span_id, index);
    }
}

/// The header of event `name` of `span`, emitted at `time`: its ID is set
/// when it ends ([`Records::end_event`]).
pub fn event_header<'a>(span: &Header<'a>, time: u64, name: &'a str) -> Header<'a> {
    Header {
        span_id: SpanId([0; 8]),
        parent: Some(span.span_id),
        start: time,
        end: time,
        name,
        event: true,
        ..*span
    }
}

impl Records {
    /// Ends the `index`-th event of `span` (begun last, with
    /// [`event_header`]): its ID becomes a hash of the span's ID, the index
    /// and the event's record after the ID.
    pub fn end_event(&mut self, span: SpanId, index: usize) {
        let len = self.bytes.len();
        let Some(entry) = self.spans.last_mut() else {
            return;
        };
        entry.end = len;
        entry.encoded = 0;
        let Some((id, record)) = self
            .bytes
            .get_mut(entry.start..len)
            .and_then(|r| r.split_at_mut_checked(8))
        else {
            return;
        };
        let hash = event_id(&[&span.0, &(index as u64).to_le_bytes(), record]);
        id.copy_from_slice(&hash.0);
        entry.span_id = hash;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use opentelemetry_proto::tonic::trace::v1::TracesData;
    use serde_json::json;

    use super::*;
    use crate::span::{EVENT_BODY, TraceId};

    fn keep() -> Arc<KeepAttributes> {
        Arc::new(
            KeepAttributes::only([
                "gen_ai.event.content".to_owned(),
                "gen_ai.prompt".to_owned(),
            ])
            .with_messages(["gen_ai.prompt.".to_owned()])
            .with_event_bodies(["gen_ai.choice".to_owned()]),
        )
    }

    fn event(name: &str, time: u64, attrs: &[(&str, &str)]) -> serde_json::Value {
        let attributes: Vec<_> = attrs
            .iter()
            .map(|(k, v)| json!({"key": k, "value": {"stringValue": v}}))
            .collect();
        json!({"timeUnixNano": time.to_string(), "name": name, "attributes": attributes})
    }

    fn records(events: Vec<serde_json::Value>) -> Records {
        let doc = json!({"resourceSpans": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "agent"}}]},
            "scopeSpans": [{"spans": [{
                "traceId": "01010101010101010101010101010101",
                "spanId": "0202020202020202",
                "name": "chat",
                "startTimeUnixNano": "5",
                "endTimeUnixNano": "50",
                "events": events,
            }]}],
        }]});
        let data: TracesData = serde_json::from_value(doc).unwrap();
        let (records, rejected) = Records::from_otlp(&data.resource_spans, &keep());
        assert!(rejected.is_empty());
        records
    }

    #[test]
    fn a_span_s_events_with_kept_attributes_follow_it() {
        let content = ("gen_ai.event.content", r#"{"index":0}"#);
        let got = records(vec![
            event("exception", 6, &[("exception.type", "ValueError")]),
            event("gen_ai.choice", 7, &[content, ("other", "x")]),
            // Named as an event whose body a log record keeps: a span's
            // event has none, and nothing else of it is kept.
            event("gen_ai.choice", 8, &[]),
            // Only a prompt's text, which a span does not keep either.
            event("e", 8, &[("gen_ai.prompt.0.content", "hello")]),
            event("gen_ai.content.prompt", 9, &[("gen_ai.prompt", "[]")]),
            event("gen_ai.choice", 7, &[content]),
        ]);
        let entries = got.spans();
        assert_eq!(entries.len(), 4);
        assert!(!entries[0].event && entries[0].root);
        assert_eq!(entries[0].span_id, SpanId([2; 8]));
        assert!(
            entries[1..]
                .iter()
                .all(|e| e.event && !e.root && e.encoded == 0)
        );
        // An event like another, at another place in its span, is another.
        assert_ne!(entries[1].span_id, entries[3].span_id);
        let again = records(vec![
            event("exception", 6, &[]),
            event("gen_ai.choice", 7, &[content]),
        ]);
        assert_eq!(again.spans()[1].span_id, entries[1].span_id);

        let traces = got.traces(&keep()).unwrap();
        let spans = &traces[&TraceId([1; 16])];
        assert_eq!(spans.iter().count(), 1);
        let events: Vec<_> = spans.events().collect();
        let read: Vec<_> = events
            .iter()
            .map(|e| (e.name(), e.start_time_unix_nano, e.end_time_unix_nano))
            .collect();
        assert_eq!(
            read,
            [
                ("gen_ai.choice", 7, 7),
                ("gen_ai.content.prompt", 9, 9),
                ("gen_ai.choice", 7, 7)
            ]
        );
        for e in &events {
            assert_eq!(e.parent_span_id, Some(SpanId([2; 8])));
            assert_eq!(e.service_name(), Some("agent"));
            assert!(e.attr("other").is_none() && e.attr(EVENT_BODY).is_none());
        }
        assert_eq!(
            events[0]
                .attr("gen_ai.event.content")
                .and_then(|v| v.as_str()),
            Some(r#"{"index":0}"#)
        );
        assert_eq!(
            events[1].attr("gen_ai.prompt").and_then(|v| v.as_str()),
            Some("[]")
        );
    }
}

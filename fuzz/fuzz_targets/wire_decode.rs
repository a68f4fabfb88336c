//! The OTLP protobuf wire decoder (`receiver::wire::decode_request`, what the
//! gRPC and HTTP receivers run on every request body), differential against
//! prost's `ExportTraceServiceRequest` followed by the JSON path's record
//! writer (`record::Records::from_otlp`), with every attribute kept and with
//! the service's kind of short keep list:
//!
//! - what prost decodes, the decoder decodes;
//! - what both decode gives the same records, byte for byte (and they read
//!   back the way a shard reads them), and the same refused spans; on
//!   prost's own canonical encoding the same encoded span sizes too;
//! - what the decoder takes but prost refuses must be refused by prost inside
//!   a field the decoder documents as never read (wire.rs: links, status,
//!   the scope but its name, trace state, … and attribute values it does not
//!   keep; of a span's events, all but the name, time and kept attributes,
//!   and every event of a refused span),
//!   where it checks the wire format only. Anything else is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;
use toolscore::receiver::wire::decode_request;
use toolscore::record::Records;
use toolscore::span::KeepAttributes;
use toolscore_fuzz::{every_key, same_records, wire_spans};

/// Fields of the trace messages the decoder skips without decoding.
const UNREAD: &[&str] = &[
    "ResourceSpans.schema_url",
    // The scope's name is read (a recognised library's); the rest is not.
    "ScopeSpans.scope",
    "ScopeSpans.schema_url",
    "Resource.dropped_attributes_count",
    "Resource.entity_refs",
    "Span.trace_state",
    "Span.flags",
    "Span.kind",
    "Span.dropped_attributes_count",
    // Read in part: an event's name, time and kept attributes (wire.rs).
    "Span.events",
    "Span.dropped_events_count",
    "Span.links",
    "Span.dropped_links_count",
    "Span.status",
    // OTLP's dictionary-encoded key (profiles); a span's key is `key`.
    "KeyValue.key_strindex",
];

fn keep_lists(every: KeepAttributes) -> [std::sync::Arc<KeepAttributes>; 2] {
    [
        std::sync::Arc::new(every),
        std::sync::Arc::new(KeepAttributes::only(
            [
                "tool.name",
                "input.value",
                "output.value",
                "openinference.span.kind",
                "tool.id",
                "eval.case.id",
            ]
            .map(String::from),
        )),
    ]
}

fuzz_target!(|data: &[u8]| {
    let reference = ExportTraceServiceRequest::decode(data);
    // Every attribute: the keys prost finds (none when it refuses the input).
    let every = reference.as_ref().map_or_else(|_| KeepAttributes::default(), |r| every_key(&r.resource_spans));
    for (mode, keep) in keep_lists(every).iter().enumerate() {
        let ours = decode_request(data, keep);
        match (&reference, ours) {
            (Ok(req), Ok(decoded)) => {
                let (want, rejected) = Records::from_otlp(&req.resource_spans, keep);
                assert!(
                    same_records(&decoded.spans, &want),
                    "keep mode {mode}: records differ"
                );
                assert_eq!(wire_spans(&decoded, keep).len(), want.len());
                assert_eq!(decoded.rejected, rejected, "keep mode {mode}: refused spans differ");
                if req.encode_to_vec() == data {
                    let sizes = |r: &Records| r.spans().iter().map(|s| s.encoded).collect::<Vec<u32>>();
                    assert_eq!(sizes(&decoded.spans), sizes(&want), "keep mode {mode}: encoded sizes differ");
                }
            }
            (Ok(_), Err(e)) => panic!("keep mode {mode}: the decoder refused what prost decodes: {e}"),
            (Err(e), Ok(_)) => {
                // Display: "failed to decode Protobuf message: Msg.field: … description",
                // innermost field first.
                let text = e.to_string();
                let unread = UNREAD.iter().any(|f| text.contains(&format!("{f}: ")))
                    // A resource attribute's value (only service.name's is read).
                    || (text.contains("Resource.attributes: ") && text.contains("KeyValue.value: "))
                    // An attribute value the keep list drops (both lists are
                    // short here: "every key" is what prost found, and it found none).
                    || (text.contains("Span.attributes: ") && text.contains("KeyValue.value: "));
                assert!(unread, "keep mode {mode}: the decoder took what prost refuses: {text}");
            }
            (Err(_), Err(_)) => {}
        }
    }
});

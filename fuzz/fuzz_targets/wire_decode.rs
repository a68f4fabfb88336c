//! The OTLP protobuf wire decoder (`receiver::wire::decode_request`, what the
//! gRPC and HTTP receivers run on every request body), differential against
//! prost's `ExportTraceServiceRequest` followed by the project's conversion
//! (`span::from_resource_spans_keeping`), with every attribute kept and with
//! the service's kind of short keep list:
//!
//! - what prost decodes, the decoder decodes;
//! - what both decode gives the same spans (read back the way a shard reads
//!   them) and the same refused spans; on prost's own canonical encoding the
//!   same encoded span sizes too;
//! - what the decoder takes but prost refuses must be refused by prost inside
//!   a field the decoder documents as never read (wire.rs: events, links,
//!   status, scope, trace state, … and attribute values it does not keep),
//!   where it checks the wire format only. Anything else is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;
use toolscore::receiver::wire::decode_request;
use toolscore::span::{KeepAttributes, from_resource_spans_keeping, from_resource_spans_sized};
use toolscore_fuzz::{same_spans, wire_spans};

/// Fields of the trace messages the decoder skips without decoding.
const UNREAD: &[&str] = &[
    "ResourceSpans.schema_url",
    "ScopeSpans.scope",
    "ScopeSpans.schema_url",
    "Resource.dropped_attributes_count",
    "Resource.entity_refs",
    "Span.trace_state",
    "Span.flags",
    "Span.kind",
    "Span.dropped_attributes_count",
    "Span.events",
    "Span.dropped_events_count",
    "Span.links",
    "Span.dropped_links_count",
    "Span.status",
    // OTLP's dictionary-encoded key (profiles); a span's key is `key`.
    "KeyValue.key_strindex",
];

fn keep_lists() -> [KeepAttributes; 2] {
    [
        KeepAttributes::all(),
        KeepAttributes::only(
            [
                "tool.name",
                "input.value",
                "output.value",
                "openinference.span.kind",
                "tool.id",
                "eval.case.id",
            ]
            .map(String::from),
        ),
    ]
}

fuzz_target!(|data: &[u8]| {
    let reference = ExportTraceServiceRequest::decode(data);
    for (mode, keep) in keep_lists().iter().enumerate() {
        let ours = decode_request(data, keep);
        match (&reference, ours) {
            (Ok(req), Ok(decoded)) => {
                let (spans, sizes, rejected) = from_resource_spans_sized(&req.resource_spans, keep);
                let got = wire_spans(&decoded);
                assert!(
                    same_spans(&got, &spans),
                    "keep mode {mode}: spans differ\n ours: {got:?}\n prost: {spans:?}"
                );
                assert_eq!(decoded.rejected, rejected, "keep mode {mode}: refused spans differ");
                let (_, rejected_too) = from_resource_spans_keeping(&req.resource_spans, keep);
                assert_eq!(rejected, rejected_too);
                if req.encode_to_vec() == data {
                    let encoded: Vec<u32> = decoded.spans.spans().iter().map(|s| s.encoded).collect();
                    assert_eq!(encoded, sizes, "keep mode {mode}: encoded sizes differ");
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
                    // An attribute value the keep list drops.
                    || (mode == 1 && text.contains("Span.attributes: ") && text.contains("KeyValue.value: "));
                assert!(unread, "keep mode {mode}: the decoder took what prost refuses: {text}");
            }
            (Err(_), Err(_)) => {}
        }
    }
});

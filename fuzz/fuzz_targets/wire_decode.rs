//! The OTLP protobuf wire decoder (`receiver::wire`), differential against
//! prost: whatever prost decodes, the decoder decodes too, with as many
//! spans (kept, or refused one by one for bad IDs). The decoder may take
//! what prost refuses in fields it skips unread (a `trace_state` with the
//! wrong wire type, say): it never looks inside them, and the spans it
//! keeps are the same (fuzz/README.md).
#![no_main]

use libfuzzer_sys::fuzz_target;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;
use toolscore::span::KeepAttributes;

fuzz_target!(|data: &[u8]| {
    let ours = toolscore::receiver::wire::decode_request(data, &KeepAttributes::all());
    let Ok(reference) = ExportTraceServiceRequest::decode(data) else {
        return;
    };
    let decoded = ours.expect("the wire decoder refused a request prost decodes");
    let spans: usize = reference
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .map(|s| s.spans.len())
        .sum();
    assert_eq!(decoded.spans.len() + decoded.rejected.len(), spans);
});

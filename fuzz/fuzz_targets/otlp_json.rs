//! OTLP/JSON requests into spans, as the HTTP receiver and `toolscore eval`
//! read them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use toolscore::span::KeepAttributes;

fuzz_target!(|data: &[u8]| {
    if let Ok(req) = serde_json::from_slice::<ExportTraceServiceRequest>(data) {
        let _ = toolscore::span::from_resource_spans_sized(&req.resource_spans, &KeepAttributes::all());
    }
});

//! OTLP/JSON (`otlp_json::parse_file_text` / `parse_object`: the HTTP
//! receiver's and `/v1/evaluate`'s `application/json` bodies, and
//! `toolscore eval`'s trace files, one object or JSON Lines). Never a panic;
//! and the two ways a span comes in agree: a document that parses, encoded
//! as protobuf (prost) and read by the wire decoder (`receiver::wire`), gives
//! the same spans, refused spans and encoded sizes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opentelemetry_proto::tonic::trace::v1::TracesData;
use prost::Message;
use toolscore::span::{KeepAttributes, from_resource_spans_sized};
use toolscore_fuzz::{same_spans, wire_spans};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = toolscore::otlp_json::parse_file_text(text);
    let Ok(parsed) = toolscore::otlp_json::parse_object(text) else { return };
    let req: TracesData = serde_json::from_str(text).expect("parse_object took it, so serde does");
    let keep = KeepAttributes::all();
    let (_, sizes, _) = from_resource_spans_sized(&req.resource_spans, &keep);
    let bytes = req.encode_to_vec();
    let decoded = toolscore::receiver::wire::decode_request(&bytes, &keep)
        .unwrap_or_else(|e| panic!("the wire decoder refused prost's encoding of parsed JSON: {e}"));
    let got = wire_spans(&decoded);
    assert!(
        same_spans(&got, &parsed.spans),
        "JSON and protobuf spans differ\n wire: {got:?}\n json: {:?}",
        parsed.spans
    );
    assert_eq!(decoded.rejected, parsed.rejected);
    let encoded: Vec<u32> = decoded.spans.spans().iter().map(|s| s.encoded).collect();
    assert_eq!(encoded, sizes);
});

//! OTLP/JSON (`otlp_json::parse_file_text` / `parse_object`: the HTTP
//! receiver's and `/v1/evaluate`'s `application/json` bodies, and
//! `toolscore eval`'s trace files, one object or JSON Lines). Never a panic;
//! and the two ways a span comes in agree: a document that parses, encoded
//! as protobuf (prost) and read by the wire decoder (`receiver::wire`), gives
//! the same records byte for byte, refused spans and encoded sizes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opentelemetry_proto::tonic::trace::v1::TracesData;
use prost::Message;
use toolscore_fuzz::{every_key, same_records, wire_spans};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let keep_some = toolscore::span::KeepAttributes::only(["tool.name".to_owned()]);
    let _ = toolscore::otlp_json::parse_file_text(text, &keep_some);
    let Ok(req) = serde_json::from_str::<TracesData>(text) else { return };
    let keep = std::sync::Arc::new(every_key(&req.resource_spans));
    let Ok(parsed) = toolscore::otlp_json::parse_object(text, &keep) else { return };
    let bytes = req.encode_to_vec();
    let decoded = toolscore::receiver::wire::decode_request(&bytes, &keep)
        .unwrap_or_else(|e| panic!("the wire decoder refused prost's encoding of parsed JSON: {e}"));
    assert!(same_records(&decoded.spans, &parsed.spans), "JSON and protobuf records differ");
    assert_eq!(wire_spans(&decoded, &keep).len(), parsed.spans.len());
    assert_eq!(decoded.rejected, parsed.rejected);
    let sizes = |r: &toolscore::record::Records| r.spans().iter().map(|s| s.encoded).collect::<Vec<u32>>();
    assert_eq!(sizes(&decoded.spans), sizes(&parsed.spans));
});

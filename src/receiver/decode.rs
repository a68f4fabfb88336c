//! A request's bytes → records, by what the request is (the write-ahead
//! log's [`Kind`]): what the receivers do, and what replaying the log does
//! again, so both read a request alike.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;
use serde::de::DeserializeOwned;

use super::wire::{self, Decoded};
use crate::record::Records;
use crate::span::KeepAttributes;
use crate::wal::Kind;

/// A request's records: spans from a traces request, events from a logs
/// request. The error is the message a client is answered with.
pub fn decode(kind: Kind, bytes: &[u8], keep: &KeepAttributes) -> Result<Decoded, String> {
    match kind {
        Kind::OtlpProtobuf => wire::decode_request(bytes, keep).map_err(|e| e.to_string()),
        Kind::OtlpJson => {
            let req: ExportTraceServiceRequest = json(bytes)?;
            let (spans, rejected) = Records::from_otlp(&req.resource_spans, keep);
            Ok(Decoded {
                spans,
                rejected,
                ignored: 0,
            })
        }
        Kind::OtlpLogsProtobuf => {
            let req = ExportLogsServiceRequest::decode(bytes)
                .map_err(|e| format!("invalid protobuf: {e}"))?;
            Ok(logs(&req, keep))
        }
        Kind::OtlpLogsJson => Ok(logs(&json::<ExportLogsServiceRequest>(bytes)?, keep)),
    }
}

fn logs(req: &ExportLogsServiceRequest, keep: &KeepAttributes) -> Decoded {
    let read = crate::record::from_logs(&req.resource_logs, keep);
    Decoded {
        spans: read.records,
        rejected: read.rejected,
        ignored: read.ignored,
    }
}

/// An OTLP/JSON request, with the path of what does not read.
fn json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    // serde would take a struct from a JSON array too (`[]` as an empty
    // request); OTLP/JSON is an object.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err("invalid OTLP JSON: the body must be a JSON object".into());
    }
    crate::otlp_json::check_id_prefixes(bytes).map_err(|e| format!("invalid OTLP JSON: {e}"))?;
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    let req: T = serde_path_to_error::deserialize(&mut *de)
        .map_err(|e| format!("invalid OTLP JSON at {}: {}", e.path(), e.inner()))?;
    de.end().map_err(|e| format!("invalid OTLP JSON: {e}"))?;
    Ok(req)
}

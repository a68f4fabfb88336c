//! OTLP JSON documents (the OTLP spec's JSON mapping: hex IDs, camelCase
//! keys, int64 as strings or numbers) → span records. Used by the offline
//! CLI for trace files and by `POST /v1/evaluate`. A document may hold
//! spans (`resourceSpans`), log records (`resourceLogs`: the events some
//! instrumentations write the model's messages to), or both.

use opentelemetry_proto::tonic::logs::v1::ResourceLogs;
use opentelemetry_proto::tonic::trace::v1::ResourceSpans;

use crate::record::Records;
use crate::span::{KeepAttributes, RejectedSpan};

/// A JSON document that is not valid OTLP trace JSON.
#[derive(Debug, thiserror::Error)]
#[error("{location}invalid OTLP JSON at {path}: {message}")]
pub struct OtlpJsonError {
    /// `line N: ` for JSON Lines input, else empty.
    pub location: String,
    /// The JSON path of the offending value (`resourceSpans[0].scopeSpans[1]…`).
    pub path: String,
    pub message: String,
}

/// Spans accepted from a document, with the attributes `keep` names, and
/// the spans refused one by one.
#[derive(Debug, Default)]
pub struct Parsed {
    pub spans: Records,
    pub rejected: Vec<RejectedSpan>,
    /// Log records that belong to no span or carry nothing toolscore reads.
    pub ignored: u64,
}

/// An OTLP/JSON document: `TracesData`, `LogsData`, or the two in one.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Document {
    #[serde(default)]
    resource_spans: Vec<ResourceSpans>,
    #[serde(default)]
    resource_logs: Vec<ResourceLogs>,
}

/// OTLP/JSON IDs are hex strings (the OTLP specification); the decoder's
/// hex parser would also take one prefixed `0x`, which is refused here,
/// naming the key. (A key spelled with `\u` escapes is not looked at.)
pub fn check_id_prefixes(text: &[u8]) -> Result<(), String> {
    let skip_ws = |b: &[u8]| -> usize { b.iter().take_while(|c| c.is_ascii_whitespace()).count() };
    for key in ["traceId", "spanId", "parentSpanId"] {
        let quoted = format!("\"{key}\"");
        for at in memchr::memmem::find_iter(text, quoted.as_bytes()) {
            let mut rest = &text[at + quoted.len()..];
            rest = &rest[skip_ws(rest)..];
            let Some(after_colon) = rest.strip_prefix(b":") else {
                continue;
            };
            let value = &after_colon[skip_ws(after_colon)..];
            if value.starts_with(b"\"0x") || value.starts_with(b"\"0X") {
                let shown: String = String::from_utf8_lossy(&value[1..value.len().min(40)])
                    .chars()
                    .take_while(|c| *c != '"')
                    .collect();
                return Err(format!(
                    "{key} {shown:?} has a 0x prefix: OTLP/JSON IDs are plain hex strings"
                ));
            }
        }
    }
    Ok(())
}

/// Parses one `{"resourceSpans": [...]}` object.
pub fn parse_object(text: &str, keep: &KeepAttributes) -> Result<Parsed, OtlpJsonError> {
    check_id_prefixes(text.as_bytes()).map_err(|message| OtlpJsonError {
        location: String::new(),
        path: "resourceSpans".into(),
        message,
    })?;
    let de = &mut serde_json::Deserializer::from_str(text);
    let data: Document = serde_path_to_error::deserialize(&mut *de).map_err(|e| OtlpJsonError {
        location: String::new(),
        path: e.path().to_string(),
        message: e.inner().to_string(),
    })?;
    // Trailing content (a second object) is an error, not silently ignored.
    de.end().map_err(|e| OtlpJsonError {
        location: String::new(),
        path: ".".into(),
        message: e.to_string(),
    })?;
    let (mut spans, mut rejected) = Records::from_otlp(&data.resource_spans, keep);
    let logs = crate::record::from_logs(&data.resource_logs, keep);
    spans.append(logs.records);
    rejected.extend(logs.rejected);
    Ok(Parsed {
        spans,
        rejected,
        ignored: logs.ignored,
    })
}

/// Parses a trace file: one OTLP JSON object, or one object per line (JSON Lines).
pub fn parse_file_text(text: &str, keep: &KeepAttributes) -> Result<Parsed, OtlpJsonError> {
    let whole = parse_object(text, keep);
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .collect();
    if whole.is_ok() || lines.len() <= 1 {
        return whole;
    }
    let mut out = Parsed::default();
    for (n, line) in lines {
        let mut parsed = parse_object(line, keep).map_err(|mut e| {
            e.location = format!("line {}: ", n + 1);
            e
        })?;
        out.spans.append(parsed.spans);
        out.rejected.append(&mut parsed.rejected);
        out.ignored += parsed.ignored;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::span::{AttrValue, TraceId};

    fn keep() -> Arc<KeepAttributes> {
        Arc::new(KeepAttributes::only(["n", "m", "arr"].map(str::to_owned)))
    }

    const ONE: &str = r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"agent"}}]},
      "scopeSpans":[{"spans":[
        {"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"root",
         "startTimeUnixNano":"1544712660000000000","endTimeUnixNano":1544712661000000000,
         "attributes":[{"key":"n","value":{"intValue":"42"}},{"key":"m","value":{"intValue":7}},
                       {"key":"arr","value":{"arrayValue":{"values":[{"stringValue":"x"}]}}}]},
        {"traceId":"5b8efff798038103d269b633813fc60c","spanId":"0000000000000000","name":"bad"}
      ]}]}]}"#;

    #[test]
    fn ids_with_a_0x_prefix_are_refused_naming_the_key() {
        let id = |key: &str, v: &str| format!(r#"{{"a": [{{"{key}" : "{v}"}}]}}"#);
        assert!(
            check_id_prefixes(id("traceId", "5b8efff798038103d269b633813fc60c").as_bytes()).is_ok()
        );
        let e = check_id_prefixes(id("spanId", "0x8efff798038103d2").as_bytes()).unwrap_err();
        assert!(
            e.contains("spanId") && e.contains("0x8efff798038103d2"),
            "{e}"
        );
        assert!(check_id_prefixes(id("parentSpanId", "0X8efff798038103d2").as_bytes()).is_err());
        // Inside a string value (escaped quotes), or as a value, it is no key.
        let inside = r#"{"k": "\"traceId\": \"0x1\"", "v": "traceId", "w": "0x1"}"#;
        assert!(check_id_prefixes(inside.as_bytes()).is_ok());
    }

    #[test]
    fn parses_the_spec_json_mapping() {
        let p = parse_object(ONE, &keep()).unwrap();
        assert_eq!(p.spans.len(), 1);
        assert_eq!(p.rejected.len(), 1);
        let traces = p.spans.traces(&keep()).unwrap();
        let id = TraceId::parse_hex("5b8efff798038103d269b633813fc60c").unwrap();
        let s = traces[&id].iter().next().unwrap();
        assert!(s.is_root());
        assert_eq!(s.service_name(), Some("agent"));
        assert_eq!(s.start_time_unix_nano, 1_544_712_660_000_000_000);
        assert_eq!(s.end_time_unix_nano, 1_544_712_661_000_000_000);
        assert_eq!(s.attr("n").map(|v| v.to_value()), Some(AttrValue::Int(42)));
        assert_eq!(s.attr("m").map(|v| v.to_value()), Some(AttrValue::Int(7)));
        assert_eq!(s.attr("arr").map(|a| a.py_str()), Some("('x',)".to_owned()));
    }

    #[test]
    fn json_lines_and_errors_name_the_line_and_path() {
        let flat = ONE.replace('\n', " ");
        let two = format!("{flat}\n{flat}\n");
        assert_eq!(parse_file_text(&two, &keep()).unwrap().spans.len(), 2);
        let bad = format!(
            "{flat}\n{{\"resourceSpans\":[{{\"scopeSpans\":[{{\"spans\":[{{\"traceId\":\"zz\"}}]}}]}}]}}\n"
        );
        let e = parse_file_text(&bad, &keep()).unwrap_err().to_string();
        assert!(e.starts_with("line 2: "), "{e}");
        assert!(
            e.contains("resourceSpans[0].scopeSpans[0].spans[0].traceId"),
            "{e}"
        );
    }
}

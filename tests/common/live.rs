//! Conformance cases as live traffic: spans for the SDK exporter (and OTLP
//! JSON), and an evaluator + rule that bind each case's criteria.

use std::collections::BTreeMap;

use opentelemetry::KeyValue;
use serde_json::{Value as Json, json};
use toolscore::config::{InlineEvaluator, RuleConfig, RuleMatch};
use toolscore::pyvalue::{self, Value};
use toolscore::span::TraceId;

use super::conformance::{self, Case};
use super::service::SpanSpec;

pub fn kv(k: &str, v: &Value) -> KeyValue {
    match v {
        Value::Str(s) => KeyValue::new(k.to_owned(), s.clone()),
        Value::Bool(b) => KeyValue::new(k.to_owned(), *b),
        Value::Int(pyvalue::Int::Small(i)) => KeyValue::new(k.to_owned(), *i),
        Value::Float(f) => KeyValue::new(k.to_owned(), *f),
        other => panic!("attribute {other:?}"),
    }
}

/// A case's spans for the SDK exporter, the root tagged with the case id so
/// a rule can bind the case's evaluator.
pub fn case_spans(case: &Case) -> Vec<SpanSpec> {
    conformance::spans(case)
        .iter()
        .map(|s| {
            let mut attributes: Vec<KeyValue> = s
                .attributes
                .iter()
                .map(|(k, v)| kv(k, &v.to_py()))
                .collect();
            if s.is_root() {
                attributes.push(KeyValue::new("conformance.case", case.id.clone()));
            }
            SpanSpec {
                trace_id: s.trace_id.0,
                span_id: s.span_id.0,
                parent: s.parent_span_id.map(|p| p.0),
                name: s.name.clone(),
                start_ns: s.start_time_unix_nano,
                end_ns: s.end_time_unix_nano,
                attributes,
            }
        })
        .collect()
}

/// The case's evaluator and a rule binding it (by the root's case id) with the case's criteria.
pub fn case_rule(case: &Case) -> (InlineEvaluator, RuleConfig) {
    let json: serde_json::Value = serde_json::from_str(&case.line).unwrap();
    let id = format!("ev-{}", case.id);
    let evaluator = InlineEvaluator {
        id: id.clone(),
        kind: case.evaluator_type.clone(),
        config: json["evaluator"]["config"]
            .as_object()
            .cloned()
            .unwrap_or_default(),
        apply_to_all_traces: false,
    };
    let mut criteria = serde_json::Map::new();
    criteria.insert(id.clone(), json["criteria"].clone());
    let rule = RuleConfig {
        name: case.id.clone(),
        matcher: RuleMatch {
            attributes: BTreeMap::from([("conformance.case".to_owned(), case.id.clone())]),
            ..RuleMatch::default()
        },
        evaluators: vec![id],
        criteria,
    };
    (evaluator, rule)
}

pub fn trace_of(case: &Case) -> TraceId {
    conformance::spans(case)[0].trace_id
}

/// A case's spans as an OTLP JSON document.
pub fn case_otlp_json(case: &Case) -> Json {
    let spans: Vec<Json> = conformance::spans(case)
        .iter()
        .map(|s| {
            let attributes: Vec<Json> = s
                .attributes
                .iter()
                .map(|(k, v)| {
                    let value = match v.to_py() {
                        Value::Str(s) => json!({"stringValue": s}),
                        Value::Bool(b) => json!({"boolValue": b}),
                        Value::Int(pyvalue::Int::Small(i)) => json!({"intValue": i.to_string()}),
                        Value::Float(f) => json!({"doubleValue": f}),
                        other => panic!("attribute {other:?}"),
                    };
                    json!({"key": &**k, "value": value})
                })
                .collect();
            let mut span = json!({
                "traceId": s.trace_id.to_hex(),
                "spanId": s.span_id.to_hex(),
                "name": s.name,
                "startTimeUnixNano": s.start_time_unix_nano.to_string(),
                "endTimeUnixNano": s.end_time_unix_nano.to_string(),
                "attributes": attributes,
            });
            if let Some(p) = s.parent_span_id {
                span["parentSpanId"] = json!(p.to_hex());
            }
            span
        })
        .collect();
    json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})
}

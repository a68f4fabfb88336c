//! Evaluated records → OTLP spans and log records. Pure: no I/O, no clock
//! (the caller passes the times to use).
//!
//! Per score a [`StoredResult`] settles ([`StoredResult::settled_scores`]: a
//! `pending` LLM judge's score is exported with the judged update that
//! fills it in, once):
//! - a span `evaluation {evaluator_id}` in the evaluated trace, a child of
//!   the root span and linked to it, at `evaluated_at` (start = end);
//! - a log record, event `gen_ai.evaluation.result`, carrying the root's
//!   trace and span IDs so it is parented to the root span.
//!
//! Both carry the same attributes ([`result_attributes`]): the GenAI
//! semantic conventions' `gen_ai.evaluation.*`, OpenInference's span kind,
//! and `toolscore.*` for the rest; an LLM judge's score adds the `gen_ai.*`
//! request and usage attributes of its model call.

use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, SeverityNumber};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::{Link, SpanKind};
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_proto::tonic::trace::v1::{Span, SpanFlags, Status};
use serde_json::value::RawValue;

use crate::criteria::Binding;
use crate::evaluator::kind::Explanation;
use crate::span::{SpanId, TraceId};
use crate::store::{ModelCall, Score, StoredOutcome, StoredResult};

/// The instrumentation scope of everything exported.
pub const SCOPE_NAME: &str = "toolscore";
/// The log event name (GenAI semantic conventions).
pub const EVENT_NAME: &str = "gen_ai.evaluation.result";
/// Explanations longer than this (bytes) are cut at a character boundary
/// and end with `…`: details can quote whole tool outputs.
pub const MAX_EXPLANATION_BYTES: usize = 4096;

/// `pass`, `fail`, `error` or `skipped` (an LLM judge that did not run).
/// An errored evaluation is `error`. Otherwise
/// `passed` decides where the evaluator has a threshold; where it has none,
/// only a perfect score passes (`score >= 1.0`): the UiPath tool-call
/// evaluators score the share of expectations met, so anything less means
/// some expectation failed.
pub fn score_label(outcome: &StoredOutcome) -> &'static str {
    if outcome.status == crate::evaluator::Status::Skipped {
        return "skipped";
    }
    if outcome.error.is_some() || outcome.score.is_none() {
        return "error";
    }
    let passed = outcome
        .passed
        .unwrap_or_else(|| outcome.score.is_some_and(|s| s >= 1.0));
    if passed { "pass" } else { "fail" }
}

/// The human-readable why: the error for an errored evaluation; deepeval's
/// `reason`; for the UiPath evaluators, the compact JSON of their
/// justification (a string detail as itself). `None` when there is nothing.
/// Read from the stored details text without building a tree.
pub fn explanation(score: &Score) -> Option<String> {
    let o = &score.outcome;
    if let Some(error) = &o.error {
        return Some(truncated(error, MAX_EXPLANATION_BYTES));
    }
    let details = o.details.text();
    let details = &*details;
    let shown = match score.evaluator_type.explanation() {
        Explanation::Reason => {
            #[derive(serde::Deserialize)]
            struct Reason<'a> {
                #[serde(borrow)]
                reason: Option<&'a RawValue>,
            }
            crate::json_text::deserialize_stored::<Reason<'_>>(details)
                .ok()
                .and_then(|r| r.reason)
                .map_or(details, RawValue::get)
        }
        Explanation::Details => details,
    };
    match shown.as_bytes().first() {
        None => None,
        Some(b'n') if shown == "null" => None,
        Some(b'"') => serde_json::from_str::<String>(shown)
            .ok()
            .map(|s| truncated(&s, MAX_EXPLANATION_BYTES)),
        Some(_) => Some(truncated(shown, MAX_EXPLANATION_BYTES)),
    }
}

/// `text`, cut at a character boundary and ending with `…` when longer than
/// `max` bytes.
fn truncated(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut cut = max - '…'.len_utf8();
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut out = String::with_capacity(cut + '…'.len_utf8());
    out.push_str(&text[..cut]);
    out.push('…');
    out
}

/// The result span's ID, derived from (trace ID, evaluator ID, revision)
/// rather than drawn at random: a retried or duplicated export carries the
/// same span ID, so a backend can de-duplicate it, while a re-evaluation
/// (new revision) is a new span. FNV-1a then a SplitMix64 finaliser: stable
/// across Rust versions and platforms, unlike `std`'s hasher.
pub fn result_span_id(trace_id: &TraceId, evaluator_id: &str, revision: u32) -> SpanId {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let revision = revision.to_le_bytes();
    let bytes = b"toolscore.evaluation\0"
        .iter()
        .chain(&trace_id.0)
        .chain(evaluator_id.as_bytes())
        // 0xff never occurs in UTF-8, so it ends the evaluator ID unambiguously.
        .chain(&[0xff])
        .chain(&revision);
    let h = bytes.fold(OFFSET, |h, b| (h ^ u64::from(*b)).wrapping_mul(PRIME));
    let mut z = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    SpanId((if z == 0 { 1 } else { z }).to_be_bytes())
}

/// Nanoseconds since the Unix epoch (0 before it, saturating far after).
pub fn unix_nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The exported resource: `service.name` only.
pub fn resource(service_name: &str) -> Resource {
    Resource {
        attributes: vec![kv("service.name", string(service_name))],
        ..Resource::default()
    }
}

pub fn scope() -> InstrumentationScope {
    InstrumentationScope {
        name: SCOPE_NAME.into(),
        version: env!("CARGO_PKG_VERSION").into(),
        ..InstrumentationScope::default()
    }
}

/// The attributes shared by a result's span and log record.
pub fn result_attributes(
    record: &StoredResult,
    score: &Score,
    call: Option<&ModelCall>,
) -> Vec<KeyValue> {
    let o = &score.outcome;
    let mut attrs = vec![
        kv("openinference.span.kind", string("EVALUATOR")),
        kv("gen_ai.evaluation.name", string(&score.evaluator_id)),
    ];
    if let (Some(value), None) = (o.score, &o.error) {
        attrs.push(kv("gen_ai.evaluation.score.value", double(value)));
    }
    attrs.push(kv("gen_ai.evaluation.score.label", string(score_label(o))));
    if let Some(text) = explanation(score) {
        attrs.push(kv("gen_ai.evaluation.explanation", string(&text)));
    }
    attrs.push(kv("toolscore.evaluator.id", string(&score.evaluator_id)));
    attrs.push(kv(
        "toolscore.evaluator.type",
        string(score.evaluator_type.id()),
    ));
    attrs.push(kv("toolscore.revision", int(i64::from(record.revision))));
    if let Some(passed) = o.passed {
        attrs.push(kv("toolscore.passed", boolean(passed)));
    }
    if let Some(threshold) = o.threshold {
        attrs.push(kv("toolscore.threshold", double(threshold)));
    }
    if let Some(error) = &o.error {
        attrs.push(kv("toolscore.error", string(error)));
    }
    attrs.push(kv("toolscore.trace.complete", boolean(record.complete)));
    match &record.binding {
        Some(Binding::EvalSet { eval_set, item }) => {
            attrs.push(kv("toolscore.binding.source", string("eval_set")));
            attrs.push(kv("toolscore.eval_set.id", string(eval_set)));
            attrs.push(kv("toolscore.eval_set.item", string(item)));
        }
        Some(Binding::Rule { rule }) => {
            attrs.push(kv("toolscore.binding.source", string("rule")));
            attrs.push(kv("toolscore.rule", string(rule)));
        }
        Some(Binding::Default) => {
            attrs.push(kv("toolscore.binding.source", string("default")));
        }
        None => {}
    }
    if let Some(call) = call {
        model_call_attributes(call, &mut attrs);
    }
    attrs
}

/// The GenAI semantic conventions' client attributes of a judge's model call.
fn model_call_attributes(call: &ModelCall, attrs: &mut Vec<KeyValue>) {
    attrs.push(kv("gen_ai.operation.name", string("chat")));
    attrs.push(kv("gen_ai.provider.name", string(call.provider)));
    attrs.push(kv("gen_ai.request.model", string(&call.model)));
    let optional = [
        ("server.address", call.server_address.as_deref().map(string)),
        ("server.port", call.server_port.map(|p| int(i64::from(p)))),
        ("gen_ai.request.temperature", call.temperature.map(double)),
        (
            "gen_ai.request.max_tokens",
            call.max_tokens.and_then(|n| i64::try_from(n).ok()).map(int),
        ),
        (
            "gen_ai.response.id",
            call.response_id.as_deref().map(string),
        ),
        (
            "gen_ai.response.model",
            call.response_model.as_deref().map(string),
        ),
        (
            "gen_ai.usage.input_tokens",
            call.input_tokens
                .and_then(|n| i64::try_from(n).ok())
                .map(int),
        ),
        (
            "gen_ai.usage.output_tokens",
            call.output_tokens
                .and_then(|n| i64::try_from(n).ok())
                .map(int),
        ),
    ];
    for (key, value) in optional {
        if let Some(v) = value {
            attrs.push(kv(key, v));
        }
    }
}

/// One span per score. `fallback_time` (unix nanos) stands in for a record
/// without `evaluated_at`. Without a root, a span has no parent and no link.
pub fn result_spans(record: &StoredResult, fallback_time: u64) -> Vec<Span> {
    let time = record.evaluated_at.map_or(fallback_time, unix_nanos);
    // The root was recorded by another process: its context is remote.
    let remote = SpanFlags::ContextHasIsRemoteMask as u32 | SpanFlags::ContextIsRemoteMask as u32;
    record
        .settled_scores()
        .into_iter()
        .map(|(score, call)| {
            let root = record.root.as_ref();
            let status = score.outcome.error.as_ref().map(|e| Status {
                message: e.clone(),
                code: StatusCode::Error as i32,
            });
            Span {
                trace_id: record.trace_id.0.to_vec(),
                span_id: result_span_id(&record.trace_id, &score.evaluator_id, record.revision)
                    .0
                    .to_vec(),
                parent_span_id: root.map(|r| r.span_id.0.to_vec()).unwrap_or_default(),
                flags: if root.is_some() { remote } else { 0 },
                name: format!("evaluation {}", score.evaluator_id),
                kind: SpanKind::Internal as i32,
                start_time_unix_nano: time,
                end_time_unix_nano: time,
                attributes: result_attributes(record, score, call),
                links: root
                    .map(|r| Link {
                        trace_id: record.trace_id.0.to_vec(),
                        span_id: r.span_id.0.to_vec(),
                        flags: remote,
                        ..Link::default()
                    })
                    .into_iter()
                    .collect(),
                status,
                ..Span::default()
            }
        })
        .collect()
}

/// One `gen_ai.evaluation.result` log record per score, with the root's
/// trace and span IDs; the body is the explanation. `observed_time` is when
/// the exporter saw the record.
pub fn result_logs(
    record: &StoredResult,
    fallback_time: u64,
    observed_time: u64,
) -> Vec<LogRecord> {
    let time = record.evaluated_at.map_or(fallback_time, unix_nanos);
    record
        .settled_scores()
        .into_iter()
        .map(|(score, call)| {
            let (severity, text) = if score.outcome.error.is_some() {
                (SeverityNumber::Error, "ERROR")
            } else {
                (SeverityNumber::Info, "INFO")
            };
            LogRecord {
                time_unix_nano: time,
                observed_time_unix_nano: observed_time,
                severity_number: severity as i32,
                severity_text: text.into(),
                body: explanation(score).map(|e| string(&e)),
                attributes: result_attributes(record, score, call),
                trace_id: record.trace_id.0.to_vec(),
                span_id: record
                    .root
                    .as_ref()
                    .map(|r| r.span_id.0.to_vec())
                    .unwrap_or_default(),
                event_name: EVENT_NAME.into(),
                ..LogRecord::default()
            }
        })
        .collect()
}

pub(crate) fn kv(key: &str, value: AnyValue) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(value),
        ..KeyValue::default()
    }
}

pub(crate) fn string(s: &str) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::StringValue(s.into())),
    }
}

fn double(v: f64) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::DoubleValue(v)),
    }
}

fn int(v: i64) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::IntValue(v)),
    }
}

fn boolean(v: bool) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::BoolValue(v)),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::Duration;

    use serde_json::{Value as Json, json};

    use super::*;
    use crate::evaluator::{EvaluatorType, Outcome};
    use crate::store::{RootSummary, TraceStatus};

    pub(crate) fn record(scores: usize) -> StoredResult {
        let mut r = StoredResult::pending(TraceId([7; 16]));
        r.status = TraceStatus::Evaluated;
        r.complete = true;
        r.revision = 2;
        r.evaluated_at = Some(UNIX_EPOCH + Duration::from_secs(1_700_000_000));
        r.root = Some(RootSummary {
            span_id: SpanId([9; 8]),
            name: "agent".into(),
            service: Some("weather".into()),
            start_time_unix_nano: 1,
            end_time_unix_nano: 2,
        });
        r.binding = Some(Binding::EvalSet {
            eval_set: "weather".into(),
            item: "case-1".into(),
        });
        r.scores = (0..scores)
            .map(|i| Score {
                evaluator_id: format!("count-{i}").into(),
                evaluator_type: EvaluatorType::Count,
                outcome: Outcome::ok(1.0, json!({"expected": 1, "actual": 1})).into(),
            })
            .collect();
        r
    }

    fn attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a any_value::Value> {
        attrs
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.as_ref()?.value.as_ref())
    }

    fn str_attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a str> {
        match attr(attrs, key)? {
            any_value::Value::StringValue(s) => Some(s),
            _ => None,
        }
    }

    /// A pending judge is exported once, with the judged update that
    /// settles it (and its model call's `gen_ai.*` attributes); the
    /// update does not export the scores published before it.
    #[test]
    fn each_score_is_exported_once_a_judged_one_with_its_model_call() {
        let mut r = record(2);
        r.scores[1].outcome = Outcome::pending().into();
        let first = result_spans(&r, 0);
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].name, "evaluation count-0");
        assert_eq!(result_logs(&r, 0, 0).len(), 1);

        r.scores[1].outcome = Outcome::ok(0.9, json!("close")).into();
        r.judged = Some(Box::new(crate::store::JudgedUpdate {
            scores: vec![(
                1,
                Some(ModelCall {
                    provider: "openai",
                    model: "gpt-4.1".into(),
                    server_address: Some("api.openai.com".into()),
                    server_port: Some(443),
                    temperature: Some(0.0),
                    input_tokens: Some(120),
                    output_tokens: Some(30),
                    ..ModelCall::default()
                }),
            )],
        }));
        let update = result_spans(&r, 0);
        assert_eq!(update.len(), 1);
        let s = &update[0];
        assert_eq!(s.name, "evaluation count-1");
        assert_eq!(
            str_attr(&s.attributes, "gen_ai.request.model"),
            Some("gpt-4.1")
        );
        assert_eq!(
            str_attr(&s.attributes, "gen_ai.provider.name"),
            Some("openai")
        );
        assert_eq!(
            str_attr(&s.attributes, "gen_ai.operation.name"),
            Some("chat")
        );
        assert_eq!(
            attr(&s.attributes, "gen_ai.usage.input_tokens"),
            Some(&any_value::Value::IntValue(120))
        );
        assert_eq!(
            attr(&s.attributes, "server.port"),
            Some(&any_value::Value::IntValue(443))
        );
        assert_eq!(
            attr(&s.attributes, "gen_ai.request.temperature"),
            Some(&any_value::Value::DoubleValue(0.0))
        );
        assert_eq!(attr(&s.attributes, "gen_ai.response.id"), None);
        // Scores of one revision have distinct span IDs.
        assert_ne!(s.span_id, first[0].span_id);
        let log = &result_logs(&r, 0, 0)[0];
        assert_eq!(
            str_attr(&log.attributes, "gen_ai.request.model"),
            Some("gpt-4.1")
        );
    }

    #[test]
    fn a_skipped_judge_is_labelled_skipped() {
        let mut r = record(1);
        r.scores[0].outcome = Outcome::skipped("not sampled").into();
        assert_eq!(score_label(&r.scores[0].outcome), "skipped");
    }

    #[test]
    fn one_child_span_of_the_root_per_score() {
        let r = record(2);
        let spans = result_spans(&r, 0);
        assert_eq!(spans.len(), 2);
        let s = &spans[0];
        assert_eq!(s.trace_id, vec![7; 16]);
        assert_eq!(s.parent_span_id, vec![9; 8]);
        assert_eq!(s.links.len(), 1);
        assert_eq!(
            (s.links[0].trace_id.clone(), s.links[0].span_id.clone()),
            (vec![7; 16], vec![9; 8])
        );
        assert_eq!(s.name, "evaluation count-0");
        assert_eq!(s.kind, SpanKind::Internal as i32);
        assert_eq!(s.start_time_unix_nano, 1_700_000_000_000_000_000);
        assert_eq!(s.end_time_unix_nano, s.start_time_unix_nano);
        assert!(s.status.is_none());
        assert_ne!(spans[0].span_id, spans[1].span_id);
        let a = &s.attributes;
        assert_eq!(str_attr(a, "openinference.span.kind"), Some("EVALUATOR"));
        assert_eq!(str_attr(a, "gen_ai.evaluation.name"), Some("count-0"));
        assert_eq!(
            attr(a, "gen_ai.evaluation.score.value"),
            Some(&any_value::Value::DoubleValue(1.0))
        );
        assert_eq!(str_attr(a, "gen_ai.evaluation.score.label"), Some("pass"));
        assert_eq!(
            str_attr(a, "gen_ai.evaluation.explanation"),
            Some(r#"{"expected":1,"actual":1}"#)
        );
        assert_eq!(
            str_attr(a, "toolscore.evaluator.type"),
            Some("uipath-tool-call-count")
        );
        assert_eq!(
            attr(a, "toolscore.revision"),
            Some(&any_value::Value::IntValue(2))
        );
        assert_eq!(
            attr(a, "toolscore.trace.complete"),
            Some(&any_value::Value::BoolValue(true))
        );
        assert_eq!(str_attr(a, "toolscore.binding.source"), Some("eval_set"));
        assert_eq!(str_attr(a, "toolscore.eval_set.id"), Some("weather"));
        assert_eq!(str_attr(a, "toolscore.eval_set.item"), Some("case-1"));
        assert_eq!(attr(a, "toolscore.passed"), None);
        assert_eq!(attr(a, "toolscore.error"), None);
    }

    #[test]
    fn errors_have_no_value_an_error_label_and_an_error_status() {
        let mut r = record(1);
        r.scores[0].outcome = Outcome::error("no criteria").into();
        let s = &result_spans(&r, 0)[0];
        assert_eq!(attr(&s.attributes, "gen_ai.evaluation.score.value"), None);
        assert_eq!(
            str_attr(&s.attributes, "gen_ai.evaluation.score.label"),
            Some("error")
        );
        assert_eq!(
            str_attr(&s.attributes, "gen_ai.evaluation.explanation"),
            Some("no criteria")
        );
        assert_eq!(
            str_attr(&s.attributes, "toolscore.error"),
            Some("no criteria")
        );
        let status = s.status.clone().unwrap();
        assert_eq!(
            (status.code, status.message.as_str()),
            (StatusCode::Error as i32, "no criteria")
        );
        let log = &result_logs(&r, 0, 5)[0];
        assert_eq!(log.severity_number, SeverityNumber::Error as i32);
    }

    #[test]
    fn labels_follow_passed_then_a_perfect_score() {
        let mut o: StoredOutcome = Outcome::ok(0.6, Json::Null).into();
        assert_eq!(score_label(&o), "fail");
        o.passed = Some(true);
        assert_eq!(score_label(&o), "pass");
        let mut o: StoredOutcome = Outcome::ok(1.0, Json::Null).into();
        assert_eq!(score_label(&o), "pass");
        o.passed = Some(false);
        assert_eq!(score_label(&o), "fail");
        assert_eq!(score_label(&Outcome::thrown("boom").into()), "error");
    }

    #[test]
    fn deepeval_explains_with_its_reason() {
        let score = Score {
            evaluator_id: "tc".into(),
            evaluator_type: EvaluatorType::ToolCorrectness,
            outcome: Outcome::ok(0.5, json!({"reason": "one tool missing", "success": false}))
                .into(),
        };
        assert_eq!(explanation(&score).as_deref(), Some("one tool missing"));
        let thrown = Score {
            outcome: Outcome::thrown("bad").into(),
            ..score.clone()
        };
        assert_eq!(
            explanation(&thrown).as_deref(),
            Some("Exception thrown by evaluator: bad")
        );
        let silent = Score {
            outcome: Outcome::ok(1.0, Json::Null).into(),
            ..score
        };
        assert_eq!(explanation(&silent), None);
    }

    #[test]
    fn uipath_explains_with_its_justification_as_compact_json() {
        let object = json!({"expected": "{'a': 1}", "actual": 0.5, "why": ["x\n", null]});
        let score = Score {
            evaluator_id: "count".into(),
            evaluator_type: EvaluatorType::Count,
            outcome: Outcome::ok(0.5, object.clone()).into(),
        };
        assert_eq!(explanation(&score), Some(object.to_string()));
        let text = Score {
            outcome: Outcome::ok(1.0, json!("a \"quoted\" line\n")).into(),
            ..score.clone()
        };
        assert_eq!(explanation(&text).as_deref(), Some("a \"quoted\" line\n"));
        // deepeval without a reason: the whole details.
        let no_reason = Score {
            evaluator_type: EvaluatorType::ToolCorrectness,
            outcome: Outcome::ok(1.0, json!({"reason": null, "success": true})).into(),
            ..score
        };
        assert_eq!(
            explanation(&no_reason).as_deref(),
            Some(r#"{"reason":null,"success":true}"#)
        );
    }

    #[test]
    fn long_explanations_are_cut_on_a_char_boundary() {
        let cut = truncated(&"é".repeat(3000), MAX_EXPLANATION_BYTES);
        assert!(cut.len() <= MAX_EXPLANATION_BYTES);
        assert!(cut.ends_with('…'));
        assert_eq!(truncated("short", 10), "short");
    }

    #[test]
    fn span_ids_are_stable_and_distinct() {
        let t = TraceId([1; 16]);
        let a = result_span_id(&t, "count", 1);
        assert_eq!(a, result_span_id(&t, "count", 1));
        assert_ne!(a, result_span_id(&t, "count", 2));
        assert_ne!(a, result_span_id(&t, "order", 1));
        assert_ne!(a, result_span_id(&TraceId([2; 16]), "count", 1));
        assert_ne!(a.0, [0; 8]);
        // Pinned: changing the derivation would break de-duplication across versions.
        assert_eq!(result_span_id(&t, "count", 1).to_hex(), "b1b438ba4df2f7cb");
    }

    #[test]
    fn without_a_root_spans_have_no_parent_or_link() {
        let mut r = record(1);
        r.root = None;
        r.binding = Some(Binding::Rule { rule: "all".into() });
        r.evaluated_at = None;
        let s = &result_spans(&r, 42)[0];
        assert!(s.parent_span_id.is_empty());
        assert!(s.links.is_empty());
        assert_eq!(s.start_time_unix_nano, 42);
        assert_eq!(
            str_attr(&s.attributes, "toolscore.binding.source"),
            Some("rule")
        );
        assert_eq!(str_attr(&s.attributes, "toolscore.rule"), Some("all"));
        assert!(result_logs(&r, 42, 43)[0].span_id.is_empty());
    }

    #[test]
    fn one_event_per_score_parented_to_the_root() {
        let r = record(2);
        let logs = result_logs(&r, 0, 5);
        assert_eq!(logs.len(), 2);
        let l = &logs[0];
        assert_eq!(l.event_name, EVENT_NAME);
        assert_eq!(l.trace_id, vec![7; 16]);
        assert_eq!(l.span_id, vec![9; 8]);
        assert_eq!(l.time_unix_nano, 1_700_000_000_000_000_000);
        assert_eq!(l.observed_time_unix_nano, 5);
        assert_eq!(l.severity_number, SeverityNumber::Info as i32);
        assert_eq!(l.body, Some(string(r#"{"expected":1,"actual":1}"#)));
        assert_eq!(l.attributes, result_attributes(&r, &r.scores[0], None));
    }
}

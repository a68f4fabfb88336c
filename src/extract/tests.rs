//! Tool-call extraction: which spans are tool calls (SEMANTICS §1.2), their
//! names, ids and start-time order (DESIGN §2), and the instrumentation
//! conventions of `ExtractConfig::default()`.

use super::*;

use crate::span::{AttrValue, Span, TraceId};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{self as otlp, ResourceSpans, ScopeSpans, span::Event};
use proptest::strategy::Strategy;

/// [`super::extract`] of spans built here.
fn extract(spans: &[Span], config: &ExtractConfig) -> Vec<ToolCall> {
    super::extract(&Spans::from_spans(spans), config)
}

/// The tool call of a span built here, as [`super::extract`] reads it.
fn tool_call(span: &Span, config: &ExtractConfig) -> Option<ToolCall> {
    extract(std::slice::from_ref(span), config)
        .into_iter()
        .next()
}

const TRACE: TraceId = TraceId([9; 16]);

/// A span with an explicit ID and end time (for the ordering tie-breaks).
fn span_with(id: u64, name: &str, start: u64, end: u64, attrs: &[(&str, AttrValue)]) -> Span {
    Span {
        trace_id: TRACE,
        span_id: SpanId(id.to_be_bytes()),
        parent_span_id: None,
        name: name.to_owned(),
        start_time_unix_nano: start,
        end_time_unix_nano: end,
        attributes: attrs
            .iter()
            .map(|(k, v)| (std::sync::Arc::from(*k), v.clone()))
            .collect(),
        service_name: None,
        scope_name: None,
    }
}

/// A span starting at `start`, ending 1 ns later, its ID derived from `start`.
fn span(name: &str, start: u64, attrs: &[(&str, AttrValue)]) -> Span {
    span_with(start + 1, name, start, start + 1, attrs)
}

fn text(s: &str) -> AttrValue {
    AttrValue::Str(s.to_owned())
}

/// The tool call (if any) of a span named `span-name` with these attributes.
fn call_of(attrs: &[(&str, AttrValue)]) -> Option<ToolCall> {
    tool_call(&span("span-name", 100, attrs), &ExtractConfig::default())
}

#[track_caller]
fn the_call(attrs: &[(&str, AttrValue)]) -> ToolCall {
    call_of(attrs).unwrap_or_else(|| panic!("not a tool span: {attrs:?}"))
}

fn names(calls: &[ToolCall]) -> Vec<&str> {
    calls.iter().map(|c| c.name.as_str()).collect()
}

/// The repr of a call's arguments, or `Invalid(message)`.
fn args_repr(call: &ToolCall) -> String {
    match &call.args {
        Args::Dict(d) => Value::Dict(d.clone()).repr(),
        Args::Invalid(e) => format!("Invalid({e})"),
    }
}

// ---------------------------------------------------------------------------
// Which spans are tool calls
// ---------------------------------------------------------------------------

#[test]
fn truthy_tool_name_makes_a_tool_call() {
    let call = the_call(&[("tool.name", text("get_weather"))]);
    assert_eq!(call.name, "get_weather");
    assert_eq!(call.id, None);
    assert_eq!(args_repr(&call), "{}");
    assert_eq!(call.output, "");
}

#[test]
fn a_repeated_attribute_reads_as_its_last_value() {
    // As the SDK's attribute dict keeps it; each key is read in one pass
    // over the span, so a later value must replace an earlier one.
    let call = the_call(&[
        ("tool.name", text("first")),
        ("input.value", text(r#"{"a": 1}"#)),
        ("tool.synthesized", AttrValue::Bool(true)),
        ("tool.name", text("last")),
        ("input.value", text(r#"{"b": 2}"#)),
        ("tool.synthesized", AttrValue::Bool(false)),
    ]);
    assert_eq!(call.name, "last");
    assert_eq!(args_repr(&call), "{'b': 2}");
    // A detect attribute whose last value detects makes a tool span, and
    // one whose last value is falsy does not.
    let call = the_call(&[
        ("traceloop.span.kind", text("workflow")),
        ("traceloop.span.kind", text("tool")),
    ]);
    assert_eq!(call.name, "span-name");
    assert!(call_of(&[("tool.name", text("x")), ("tool.name", text(""))]).is_none());
}

/// Extraction by one lookup a key, each attribute found by name on the
/// span: the plainest reading, the reference for the one-pass reader. The
/// first convention recognising the span names it; the reference's
/// convention reads its own fields by the reference's rules, the others
/// each field from the first recognising convention that has it.
fn by_lookups(span: &Span, config: &ExtractConfig) -> Option<String> {
    let spans = Spans::from_spans(std::slice::from_ref(span));
    let s = spans.iter().next()?;
    if !s.has_attributes()
        || s.attr(&config.synthesized_attribute)
            .is_some_and(|v| v.truthy())
    {
        return None;
    }
    let detecting: Vec<&Convention> = config
        .conventions
        .iter()
        .filter(|c| c.detects(c.detect.iter().map(|d| s.attr(&d.attribute))))
        .collect();
    let first = *detecting.first()?;
    let attr = |k: Option<&str>| k.and_then(|k| s.attr(k));
    let mut call = ToolCall {
        name: match attr(Some(&first.name_attribute)) {
            Some(v) if v.truthy() => v.py_str(),
            _ => s.name().to_owned(),
        },
        id: match attr(Some(&config.id_attribute)) {
            None | Some(AttrRef::Empty) => None,
            Some(v) => Some(v.py_str()),
        },
        args: Args::Dict(Dict::new()),
        output: String::new(),
        raw_output: None,
        output_from_raw: false,
        content_captured: false,
        content_missing: false,
        span_id: s.span_id,
        start_time_unix_nano: s.start_time_unix_nano,
        end_time_unix_nano: s.end_time_unix_nano,
    };
    if first.name == "openinference" {
        let (args, output) = (
            attr(first.args_attribute.as_deref()),
            attr(first.output_attribute.as_deref()),
        );
        call.args = parse_args(args, first.args_format);
        call.output = output_text(output);
        call.raw_output = output.map(|v| v.to_py());
        call.content_captured = args.is_some() || output.is_some();
    } else {
        let args = detecting
            .iter()
            .find_map(|c| Some((attr(c.args_attribute.as_deref())?, c.args_format)));
        let output = detecting
            .iter()
            .find_map(|c| attr(c.output_attribute.as_deref()));
        call.args = spans::library_args(args).0;
        if let Some(v) = output {
            call.output = spans::library_output(v).0;
            call.raw_output = Some(Value::Str(call.output.clone()));
        }
        call.content_captured = args.is_some() || output.is_some();
    }
    Some(summary(&call))
}

fn summary(c: &ToolCall) -> String {
    format!(
        "{} {:?} {} {:?} {:?} {}",
        c.name,
        c.id,
        args_repr(c),
        c.output,
        c.raw_output.as_ref().map(Value::repr),
        c.content_captured
    )
}

proptest::proptest! {
    #[test]
    fn one_pass_reads_what_a_lookup_per_key_reads(
        attrs in proptest::collection::vec(
            (
                proptest::sample::select(vec![
                    "tool.name", "tool.id", "tool.synthesized", "input.value", "output.value",
                    "gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.arguments",
                    "traceloop.span.kind", "traceloop.entity.name", "traceloop.entity.input",
                    "ai.toolCall.name", "ai.toolCall.result", "other",
                ]),
                proptest::prop_oneof![
                    proptest::sample::select(vec![
                        "", "t", "tool", "execute_tool", "{\"a\": 1}", "{'b': (1,)}",
                        "{\"content\": {\"x\": 2}}", "{\"kwargs\": {\"k\": 3}}",
                    ])
                    .prop_map(text),
                    proptest::prelude::any::<bool>().prop_map(AttrValue::Bool),
                    (0i64..3).prop_map(AttrValue::Int),
                    proptest::strategy::Just(AttrValue::Empty),
                ],
            ),
            0..8,
        ),
    ) {
        let attrs: Vec<(&str, AttrValue)> = attrs;
        let span = span("span-name", 100, &attrs);
        let config = ExtractConfig::default();
        proptest::prop_assert_eq!(
            tool_call(&span, &config).map(|c| summary(&c)),
            by_lookups(&span, &config)
        );
    }
}

#[test]
fn falsy_tool_name_is_not_a_tool_call() {
    for name in [
        text(""),
        AttrValue::Int(0),
        AttrValue::Bool(false),
        AttrValue::Empty,
    ] {
        assert!(
            call_of(&[("tool.name", name.clone())]).is_none(),
            "tool.name = {name:?}"
        );
    }
}

#[test]
fn truthy_synthesized_spans_are_skipped_falsy_ones_kept() {
    // The string "false" is truthy in Python, so such a span is skipped too.
    for (synthesized, skipped) in [
        (AttrValue::Bool(true), true),
        (AttrValue::Int(1), true),
        (text("false"), true),
        (text("true"), true),
        (AttrValue::Bool(false), false),
        (AttrValue::Int(0), false),
        (text(""), false),
    ] {
        let attrs = [
            ("tool.name", text("a")),
            ("tool.synthesized", synthesized.clone()),
        ];
        let call = call_of(&attrs);
        assert_eq!(
            call.is_none(),
            skipped,
            "tool.synthesized = {synthesized:?}"
        );
    }
}

#[test]
fn span_without_attributes_is_not_a_tool_call() {
    let bare = span("get_weather", 100, &[]);
    assert!(tool_call(&bare, &ExtractConfig::default()).is_none());
    assert!(extract(&[bare], &ExtractConfig::default()).is_empty());
}

#[test]
fn span_kind_attributes_alone_do_not_make_a_tool_call() {
    let attrs = [
        ("openinference.span.kind", text("TOOL")),
        ("span_type", text("TOOL")),
        ("input.value", text(r#"{"city": "Paris"}"#)),
    ];
    assert!(call_of(&attrs).is_none());
}

#[test]
fn extract_keeps_only_tool_spans() {
    let spans = [
        span("main", 50, &[("openinference.span.kind", text("AGENT"))]),
        span("a", 100, &[("tool.name", text("a"))]),
        span("llm", 150, &[("gen_ai.operation.name", text("chat"))]),
        span("b", 200, &[("tool.name", text("b"))]),
    ];
    assert_eq!(
        names(&extract(&spans, &ExtractConfig::default())),
        ["a", "b"]
    );
}

// ---------------------------------------------------------------------------
// Names and ids
// ---------------------------------------------------------------------------

#[test]
fn names_render_the_python_way() {
    assert_eq!(the_call(&[("tool.name", AttrValue::Int(5))]).name, "5");
    assert_eq!(
        the_call(&[("tool.name", AttrValue::Bool(true))]).name,
        "True"
    );
    assert_eq!(
        the_call(&[("tool.name", AttrValue::Double(2.5))]).name,
        "2.5"
    );
}

#[test]
fn tool_id_present_and_not_null_gives_an_id() {
    let id_of = |id: AttrValue| the_call(&[("tool.name", text("a")), ("tool.id", id)]).id;
    assert_eq!(id_of(text("call-1")), Some("call-1".to_owned()));
    // Checked against null, not truthiness.
    assert_eq!(id_of(text("")), Some(String::new()));
    assert_eq!(id_of(AttrValue::Int(0)), Some("0".to_owned()));
    assert_eq!(id_of(AttrValue::Empty), None);
    assert_eq!(the_call(&[("tool.name", text("a"))]).id, None);
}

// ---------------------------------------------------------------------------
// Order
// ---------------------------------------------------------------------------

/// Calls are ordered by start time (a and b before c and d, which end
/// earlier), then end time (a before b, though b's span ID is smaller), then
/// span ID (d before c), whatever the order the spans came in.
#[test]
fn calls_are_ordered_by_start_end_and_span_id_not_arrival() {
    let spans = [
        span_with(4, "a", 100, 300, &[("tool.name", text("a"))]),
        span_with(2, "b", 100, 400, &[("tool.name", text("b"))]),
        span_with(7, "c", 200, 210, &[("tool.name", text("c"))]),
        span_with(1, "d", 200, 210, &[("tool.name", text("d"))]),
    ];
    // Every permutation of the four spans: each base-4 code whose digits
    // are 0..4 in some order.
    for code in 0..256usize {
        let order: Vec<usize> = (0..4).map(|k| (code >> (2 * k)) & 3).collect();
        let mut sorted = order.clone();
        sorted.sort_unstable();
        if sorted != [0, 1, 2, 3] {
            continue;
        }
        let shuffled: Vec<Span> = order.iter().map(|&i| spans[i].clone()).collect();
        let calls = extract(&shuffled, &ExtractConfig::default());
        assert_eq!(
            names(&calls),
            ["a", "b", "d", "c"],
            "arrival order {order:?}"
        );
    }
}

#[test]
fn calls_carry_their_span_identity_and_times() {
    let s = span_with(42, "a", 100, 180, &[("tool.name", text("a"))]);
    let call = tool_call(&s, &ExtractConfig::default()).unwrap_or_else(|| panic!("tool span"));
    assert_eq!(call.span_id, SpanId(42u64.to_be_bytes()));
    assert_eq!(
        (call.start_time_unix_nano, call.end_time_unix_nano),
        (100, 180)
    );
}

// ---------------------------------------------------------------------------
// OpenInference / UiPath (`tool.name`, `input.value`, `output.value`)
// ---------------------------------------------------------------------------

#[test]
fn openinference_arguments_and_output() {
    let call = the_call(&[
        ("tool.name", text("get_temperature")),
        ("input.value", text(r#"{"city": "Tokyo"}"#)),
        (
            "output.value",
            text(r#"{"content": {"temperature": 25.0, "unit": "fahrenheit"}}"#),
        ),
    ]);
    assert_eq!(args_repr(&call), "{'city': 'Tokyo'}");
    assert_eq!(call.output, "{'temperature': 25.0, 'unit': 'fahrenheit'}");
    assert!(matches!(&call.raw_output, Some(Value::Str(s)) if s.starts_with(r#"{"content""#)));
    assert!(call.content_captured);
}

#[test]
fn content_is_captured_when_either_attribute_is_present() {
    let bare = the_call(&[("tool.name", text("a"))]);
    assert!(!bare.content_captured);
    assert!(bare.raw_output.is_none());

    let args_only = the_call(&[("tool.name", text("a")), ("input.value", text("{}"))]);
    assert!(args_only.content_captured);
    assert!(args_only.raw_output.is_none());

    let output_only = the_call(&[("tool.name", text("a")), ("output.value", text("ok"))]);
    assert!(output_only.content_captured);
    assert!(matches!(&output_only.raw_output, Some(Value::Str(s)) if s == "ok"));
}

// ---------------------------------------------------------------------------
// OpenTelemetry GenAI semantic conventions
// ---------------------------------------------------------------------------

#[test]
fn gen_ai_tool_name_arguments_and_result() {
    let call = the_call(&[
        ("gen_ai.operation.name", text("execute_tool")),
        ("gen_ai.tool.name", text("get_weather")),
        (
            "gen_ai.tool.call.arguments",
            text(r#"{"city": "Paris", "days": 2}"#),
        ),
        ("gen_ai.tool.call.result", text("sunny")),
    ]);
    assert_eq!(call.name, "get_weather");
    assert_eq!(args_repr(&call), "{'city': 'Paris', 'days': 2}");
    assert_eq!(call.output, "sunny");
    assert!(call.content_captured);
}

#[test]
fn gen_ai_structured_arguments_are_used_as_is() {
    let kv = AttrValue::KvList(vec![("city".to_owned(), text("Paris"))]);
    let call = the_call(&[
        ("gen_ai.tool.name", text("w")),
        ("gen_ai.tool.call.arguments", kv),
    ]);
    assert_eq!(args_repr(&call), "{'city': 'Paris'}");
}

#[test]
fn gen_ai_execute_tool_without_a_name_uses_the_span_name() {
    let call = the_call(&[("gen_ai.operation.name", text("execute_tool"))]);
    assert_eq!(call.name, "span-name");
    assert_eq!(args_repr(&call), "{}");
    assert_eq!(call.output, "");
    // Arguments and results are opt-in in the semconv: nothing captured.
    assert!(!call.content_captured);
}

#[test]
fn gen_ai_other_operations_are_not_tool_calls() {
    assert!(call_of(&[("gen_ai.operation.name", text("chat"))]).is_none());
}

// ---------------------------------------------------------------------------
// OpenLLMetry / Traceloop
// ---------------------------------------------------------------------------

#[test]
fn openllmetry_tool_span_uses_kwargs() {
    let call = the_call(&[
        ("traceloop.span.kind", text("tool")),
        ("traceloop.entity.name", text("get_weather")),
        (
            "traceloop.entity.input",
            text(r#"{"args":[1],"kwargs":{"city":"Paris"}}"#),
        ),
        ("traceloop.entity.output", text("sunny")),
    ]);
    assert_eq!(call.name, "get_weather");
    assert_eq!(args_repr(&call), "{'city': 'Paris'}");
    assert_eq!(call.output, "sunny");
    assert!(call.content_captured);
}

#[test]
fn openllmetry_input_without_kwargs_is_empty() {
    let call = the_call(&[
        ("traceloop.span.kind", text("tool")),
        ("traceloop.entity.name", text("w")),
        ("traceloop.entity.input", text(r#"{"args": [1]}"#)),
    ]);
    assert_eq!(args_repr(&call), "{}");
}

#[test]
fn openllmetry_other_span_kinds_are_not_tool_calls() {
    let attrs = [
        ("traceloop.span.kind", text("task")),
        ("traceloop.entity.name", text("w")),
    ];
    assert!(call_of(&attrs).is_none());
}

// ---------------------------------------------------------------------------
// Vercel AI SDK
// ---------------------------------------------------------------------------

#[test]
fn vercel_ai_tool_call() {
    let call = the_call(&[
        ("ai.toolCall.name", text("get_weather")),
        ("ai.toolCall.args", text(r#"{"city":"Paris"}"#)),
        ("ai.toolCall.result", text("sunny")),
    ]);
    assert_eq!(call.name, "get_weather");
    assert_eq!(args_repr(&call), "{'city': 'Paris'}");
    assert_eq!(call.output, "sunny");
    assert!(call.content_captured);
}

// ---------------------------------------------------------------------------
// Precedence and custom conventions
// ---------------------------------------------------------------------------

#[test]
fn explicit_tool_name_wins_over_other_conventions() {
    let call = the_call(&[
        ("gen_ai.tool.name", text("b")),
        ("gen_ai.tool.call.arguments", text(r#"{"y": 2}"#)),
        ("tool.name", text("a")),
        ("input.value", text(r#"{"x": 1}"#)),
    ]);
    assert_eq!(call.name, "a");
    assert_eq!(args_repr(&call), "{'x': 1}");
}

#[test]
fn openinference_convention_without_its_content_attributes_captures_nothing() {
    // The span's content lives under another convention's keys, which the
    // winning convention does not read.
    let call = the_call(&[
        ("tool.name", text("a")),
        ("gen_ai.tool.call.arguments", text(r#"{"y": 2}"#)),
    ]);
    assert_eq!(args_repr(&call), "{}");
    assert!(!call.content_captured);
}

#[test]
fn synthesized_spans_are_skipped_under_every_convention() {
    let attrs = [
        ("gen_ai.tool.name", text("w")),
        ("tool.synthesized", AttrValue::Bool(true)),
    ];
    assert!(call_of(&attrs).is_none());
}

#[test]
fn custom_convention_added_in_config() {
    let mut config = ExtractConfig::default();
    config.conventions.push(Convention {
        name: "mine".into(),
        detect: vec![Detect {
            attribute: "my.kind".into(),
            equals: Some("tool".into()),
        }],
        name_attribute: "my.tool".into(),
        args_attribute: Some("my.args".into()),
        args_format: ArgsFormat::Value,
        output_attribute: Some("my.result".into()),
        call_id_attribute: None,
    });
    let s = span(
        "span-name",
        100,
        &[
            ("my.kind", text("tool")),
            ("my.tool", text("lookup")),
            ("my.args", text("{'q': 'x'}")),
            ("my.result", text(r#"{"content": "found"}"#)),
        ],
    );
    assert!(tool_call(&s, &ExtractConfig::default()).is_none());
    let call = tool_call(&s, &config).unwrap_or_else(|| panic!("custom convention"));
    assert_eq!(call.name, "lookup");
    assert_eq!(args_repr(&call), "{'q': 'x'}");
    assert_eq!(call.output, "found");
    assert!(call.content_captured);

    let other_kind = span(
        "x",
        200,
        &[("my.kind", text("agent")), ("my.tool", text("lookup"))],
    );
    assert!(tool_call(&other_kind, &config).is_none());
}

#[test]
fn custom_synthesized_and_id_attributes() {
    let config = ExtractConfig {
        synthesized_attribute: "my.synthetic".into(),
        id_attribute: "my.id".into(),
        ..ExtractConfig::default()
    };
    let s = span(
        "a",
        100,
        &[
            ("tool.name", text("a")),
            ("my.id", text("c1")),
            ("tool.synthesized", AttrValue::Bool(true)),
        ],
    );
    let call =
        tool_call(&s, &config).unwrap_or_else(|| panic!("tool.synthesized is not configured"));
    assert_eq!(call.id.as_deref(), Some("c1"));
    let skipped = span(
        "a",
        200,
        &[
            ("tool.name", text("a")),
            ("my.synthetic", AttrValue::Int(1)),
        ],
    );
    assert!(tool_call(&skipped, &config).is_none());
}

// ---------------------------------------------------------------------------
// The model's messages in a model span's own events (OTLP `Span.events`)
// ---------------------------------------------------------------------------

const CONTENT: &str = "gen_ai.event.content";

fn event(name: &str, time: u64, attrs: &[(&str, &str)]) -> Event {
    Event {
        time_unix_nano: time,
        name: name.to_owned(),
        attributes: attrs
            .iter()
            .map(|(k, v)| KeyValue {
                key: (*k).to_owned(),
                value: Some(AnyValue {
                    value: Some(any_value::Value::StringValue((*v).to_owned())),
                }),
                ..KeyValue::default()
            })
            .collect(),
        dropped_attributes_count: 0,
    }
}

/// A model span `[id; 8]` of [`TRACE`], ending at `end`, with these events
/// and no attribute toolscore reads.
fn model_span(id: u8, end: u64, events: Vec<Event>) -> otlp::Span {
    otlp::Span {
        trace_id: TRACE.0.to_vec(),
        span_id: vec![id; 8],
        name: "chat gpt-4o".to_owned(),
        start_time_unix_nano: end - 10,
        end_time_unix_nano: end,
        events,
        ..otlp::Span::default()
    }
}

/// The calls of spans sent over OTLP, as the service reads them (the
/// records of prost's structs: `receiver::wire`'s tests hold its records
/// to those, byte for byte).
fn otlp_calls(spans: Vec<otlp::Span>) -> Vec<ToolCall> {
    let config = ExtractConfig::default();
    let keep = std::sync::Arc::new(config.keep(Vec::new()));
    let resource_spans = vec![ResourceSpans {
        scope_spans: vec![ScopeSpans {
            spans,
            ..ScopeSpans::default()
        }],
        ..ResourceSpans::default()
    }];
    let (records, rejected) = crate::record::Records::from_otlp(&resource_spans, &keep);
    assert!(rejected.is_empty());
    let traces = records.traces(&keep).unwrap();
    super::extract(&traces[&TRACE], &config)
}

/// Each call's name, arguments' repr and output.
fn summaries(calls: &[ToolCall]) -> Vec<(&str, String, &str)> {
    calls
        .iter()
        .map(|c| (c.name.as_str(), args_repr(c), c.output.as_str()))
        .collect()
}

#[test]
fn the_message_events_attributes_are_kept() {
    let keep = ExtractConfig::default().keep(Vec::new());
    for key in ["gen_ai.event.content", "gen_ai.prompt", "gen_ai.completion"] {
        assert!(keep.id(key).is_some(), "{key}");
    }
    // OpenLLMetry's flattened messages stay kept by name.
    assert!(matches!(
        keep.classify("gen_ai.completion.0.tool_calls.0.name"),
        Some(crate::span::KeyRef::Named(..))
    ));
}

#[test]
fn azure_style_message_events_give_calls_joined_to_results_by_id() {
    let asked = r#"[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{\"tz\":\"CET\"}"}}]"#;
    let user = r#"{"content":"Weather and time in Paris?"}"#;
    // A choice's calls in its message (Azure AI Inference), or beside it.
    for choice in [
        format!(r#"{{"finish_reason":"tool_calls","index":0,"message":{{"tool_calls":{asked}}}}}"#),
        format!(r#"{{"finish_reason":"tool_calls","index":0,"tool_calls":{asked}}}"#),
    ] {
        let assistant = format!(r#"{{"role":"assistant","tool_calls":{asked}}}"#);
        let first = model_span(
            2,
            20,
            vec![
                event(
                    "gen_ai.system.message",
                    11,
                    &[(CONTENT, r#"{"content":"Be brief."}"#)],
                ),
                event("gen_ai.user.message", 11, &[(CONTENT, user)]),
                event("exception", 15, &[("exception.type", "RateLimitError")]),
                event("gen_ai.choice", 19, &[(CONTENT, &choice)]),
            ],
        );
        let second = model_span(
            3,
            40,
            vec![
                event("gen_ai.user.message", 31, &[(CONTENT, user)]),
                event("gen_ai.assistant.message", 31, &[(CONTENT, &assistant)]),
                // The results in another order than the calls.
                event(
                    "gen_ai.tool.message",
                    31,
                    &[(CONTENT, r#"{"content":"12:00","id":"call_2"}"#)],
                ),
                event(
                    "gen_ai.tool.message",
                    31,
                    &[(CONTENT, r#"{"content":"Sunny","id":"call_1"}"#)],
                ),
                event(
                    "gen_ai.choice",
                    39,
                    &[(
                        CONTENT,
                        r#"{"finish_reason":"stop","index":0,"message":{"content":"Sunny; 12:00."}}"#,
                    )],
                ),
            ],
        );
        let calls = otlp_calls(vec![first, second]);
        assert_eq!(
            summaries(&calls),
            [
                ("get_weather", "{'city': 'Paris'}".to_owned(), "Sunny"),
                ("get_time", "{'tz': 'CET'}".to_owned(), "12:00"),
            ],
            "{choice}"
        );
        // Asked for by the first model call, when its last event was emitted.
        for c in &calls {
            assert_eq!(c.span_id, SpanId([2; 8]));
            assert_eq!(c.start_time_unix_nano, 19);
            assert!(c.content_captured && !c.content_missing);
        }
    }
}

#[test]
fn older_prompt_and_completion_events_give_calls() {
    let weather = r#"{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}"#;
    let time = r#"{"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{\"tz\": \"CET\"}"}}"#;
    let user = r#"{"role":"user","content":"Weather in Paris, then the time?"}"#;
    let asked_weather =
        format!(r#"{{"role":"assistant","content":null,"tool_calls":[{weather}]}}"#);
    let asked_time = format!(r#"{{"role":"assistant","content":null,"tool_calls":[{time}]}}"#);
    let sunny = r#"{"role":"tool","tool_call_id":"call_1","content":"Sunny"}"#;
    let noon = r#"{"role":"tool","tool_call_id":"call_2","content":"12:00"}"#;
    let turn = |id: u8, end: u64, prompt: String, completion: String| {
        model_span(
            id,
            end,
            vec![
                event(
                    "gen_ai.content.prompt",
                    end - 9,
                    &[("gen_ai.prompt", &prompt)],
                ),
                event(
                    "gen_ai.content.completion",
                    end - 1,
                    &[("gen_ai.completion", &completion)],
                ),
            ],
        )
    };
    let calls = otlp_calls(vec![
        // The completion as a message list…
        turn(2, 20, format!("[{user}]"), format!("[{asked_weather}]")),
        // … or as choices holding the messages.
        turn(
            3,
            40,
            format!("[{user},{asked_weather},{sunny}]"),
            format!(r#"[{{"finish_reason":"tool_calls","index":0,"message":{asked_time}}}]"#),
        ),
        turn(
            4,
            60,
            format!("[{user},{asked_weather},{sunny},{asked_time},{noon}]"),
            r#"[{"role":"assistant","content":"Sunny, and it is noon."}]"#.to_owned(),
        ),
    ]);
    assert_eq!(
        summaries(&calls),
        [
            ("get_weather", "{'city': 'Paris'}".to_owned(), "Sunny"),
            ("get_time", "{'tz': 'CET'}".to_owned(), "12:00"),
        ]
    );
    let at: Vec<u64> = calls.iter().map(|c| c.start_time_unix_nano).collect();
    assert_eq!(at, [19, 39]);
}

#[test]
fn an_inference_details_span_event_gives_calls() {
    let user = r#"{"role":"user","parts":[{"type":"text","content":"Weather in Paris?"}]}"#;
    let asked = r#"{"role":"assistant","parts":[{"type":"tool_call","id":"call_1","name":"get_weather","arguments":{"city":"Paris"}}],"finish_reason":"tool_call"}"#;
    let result = r#"{"role":"tool","parts":[{"type":"tool_call_response","id":"call_1","response":"Sunny"}]}"#;
    let answer = r#"{"role":"assistant","parts":[{"type":"text","content":"Sunny."}],"finish_reason":"stop"}"#;
    let details = |end: u64, input: String, output: String| {
        event(
            "gen_ai.client.inference.operation.details",
            end,
            &[
                ("gen_ai.input.messages", &input),
                ("gen_ai.output.messages", &output),
            ],
        )
    };
    let calls = otlp_calls(vec![
        model_span(
            2,
            20,
            vec![details(20, format!("[{user}]"), format!("[{asked}]"))],
        ),
        model_span(
            3,
            40,
            vec![details(
                40,
                format!("[{user},{asked},{result}]"),
                format!("[{answer}]"),
            )],
        ),
    ]);
    assert_eq!(
        summaries(&calls),
        [("get_weather", "{'city': 'Paris'}".to_owned(), "Sunny")]
    );
    assert_eq!(calls[0].start_time_unix_nano, 20);
}

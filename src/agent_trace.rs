//! A synthetic agent trace as OTLP protobuf: the one shape the load
//! generator sends and the benchmarks and the memory example measure, so
//! their figures describe the same spans.

use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, span::SpanKind};

/// The tools the agent calls, in turn.
pub const TOOLS: [&str; 6] = [
    "get_temperature",
    "get_weather_condition",
    "get_humidity",
    "get_forecast",
    "get_wind",
    "get_alerts",
];

/// One agent run: an LLM `chat` span (with its prompt and completion), `tools`
/// `execute_tool` spans (GenAI conventions, JSON `input.value` and
/// `output.value`), the other LLM spans, and the root `invoke_agent` span
/// last, as an SDK ends them.
#[derive(Debug, Clone)]
pub struct AgentTrace<'a> {
    pub trace_id: [u8; 16],
    /// At least one: the first before the tool calls, the rest after.
    pub llm_spans: usize,
    pub tools: usize,
    /// Quoted in every tool call's arguments and output.
    pub city: &'a str,
    pub start_ns: u64,
    /// An attribute of the root naming the trace's eval-set item (key, value).
    pub case: Option<(&'a str, &'a str)>,
}

impl AgentTrace<'_> {
    /// The trace's spans; span IDs are 1, 2, … in order, the root's 1.
    pub fn spans(&self) -> Vec<Span> {
        let sid = |i: usize| ((i + 1) as u64).to_be_bytes().to_vec();
        let span = |i: usize, name: String, kind: SpanKind, t: u64, took: u64| Span {
            trace_id: self.trace_id.to_vec(),
            span_id: sid(i),
            parent_span_id: if i == 0 { Vec::new() } else { sid(0) },
            name,
            kind: kind as i32,
            start_time_unix_nano: t,
            end_time_unix_nano: t + took,
            ..Span::default()
        };
        let city = self.city;
        // A prompt and a completion, which toolscore receives and does not
        // keep (no convention or judge reads them).
        let llm = |i: usize, t: u64| Span {
            attributes: vec![
                kv("gen_ai.operation.name", "chat"),
                kv("gen_ai.system", "openai"),
                kv("gen_ai.request.model", "gpt-4o"),
                kv(
                    "gen_ai.prompt.0.content",
                    &format!(
                        "You are a weather assistant for {city}. Plan step {i}: answer the \
                         user's question about today's temperature, conditions, humidity, \
                         wind and alerts."
                    ),
                ),
                kv(
                    "gen_ai.completion.0.content",
                    &format!(
                        "Calling the weather tools for {city}{}.",
                        ", then summarising".repeat(i % 3)
                    ),
                ),
            ],
            ..span(i, "chat gpt-4o".into(), SpanKind::Client, t, 400_000_000)
        };
        let llms = self.llm_spans.max(1);
        let mut spans = Vec::with_capacity(llms + self.tools + 1);
        let mut t = self.start_ns;
        spans.push(llm(1, t));
        t += 401_000_000;
        for i in 0..self.tools {
            let tool = TOOLS[i % TOOLS.len()];
            let input = format!(
                "{{\"city\": \"{city}\", \"units\": \"metric\", \"step\": {i}, \"detail\": \"hourly\"}}"
            );
            let output = format!(
                "{{\"content\": {{\"tool\": \"{tool}\", \"city\": \"{city}\", \"value\": {}.5, \"unit\": \"metric\", \"step\": {i}, \"source\": \"station-42\"}}}}",
                20 + i
            );
            spans.push(Span {
                attributes: vec![
                    kv("gen_ai.operation.name", "execute_tool"),
                    kv("tool.name", tool),
                    kv("input.value", &input),
                    kv("output.value", &output),
                ],
                ..span(
                    2 + i,
                    format!("execute_tool {tool}"),
                    SpanKind::Internal,
                    t,
                    50_000_000,
                )
            });
            t += 51_000_000;
        }
        for k in 1..llms {
            spans.push(llm(1 + self.tools + k, t));
            t += 401_000_000;
        }
        let mut root = span(
            0,
            "invoke_agent weather-agent".into(),
            SpanKind::Internal,
            self.start_ns,
            0,
        );
        root.end_time_unix_nano = t;
        root.attributes = vec![
            kv("gen_ai.operation.name", "invoke_agent"),
            kv("gen_ai.agent.name", "weather-agent"),
        ];
        if let Some((key, value)) = self.case {
            root.attributes.push(kv(key, value));
        }
        spans.push(root);
        spans
    }
}

/// A string attribute.
pub fn kv(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.into())),
        }),
        ..KeyValue::default()
    }
}

/// `spans` under one resource whose `service.name` is `service`.
pub fn resource_spans(service: &str, spans: Vec<Span>) -> ResourceSpans {
    ResourceSpans {
        resource: Some(Resource {
            attributes: vec![
                kv("service.name", service),
                kv("telemetry.sdk.language", "python"),
            ],
            ..Resource::default()
        }),
        scope_spans: vec![ScopeSpans {
            spans,
            ..ScopeSpans::default()
        }],
        ..ResourceSpans::default()
    }
}

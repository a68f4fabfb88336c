//! Instrumentation conventions: which attributes make a span a tool span and
//! where its name, arguments and output live. Configurable under
//! `extract.conventions`, so a user can map their own attributes without code.

use serde::{Deserialize, Serialize};

use crate::record::AttrRef;

/// How a convention recognises a tool span: the attribute is truthy and, if
/// `equals` is given, its string form equals it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Detect {
    pub attribute: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<String>,
}

/// How the arguments attribute is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArgsFormat {
    /// The value (or the JSON / Python literal it holds) is the arguments dict.
    #[default]
    Value,
    /// OpenLLMetry's `{"args": [...], "kwargs": {...}}`: the arguments are `kwargs`.
    TraceloopKwargs,
}

/// One instrumentation convention.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Convention {
    /// A label for logs and the API.
    pub name: String,
    /// Any one of these makes a span a tool span.
    pub detect: Vec<Detect>,
    /// The tool's name (falls back to the span name when absent or falsy).
    pub name_attribute: String,
    /// The arguments; absent means the convention does not capture them.
    #[serde(default)]
    pub args_attribute: Option<String>,
    #[serde(default)]
    pub args_format: ArgsFormat,
    /// The output; absent means the convention does not capture it.
    #[serde(default)]
    pub output_attribute: Option<String>,
    /// The model's id for the call (`gen_ai.tool.call.id`): joins the span
    /// to the call in the model's messages. It is not the call's `id`,
    /// which only `extract.id_attribute` gives (the reference's rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id_attribute: Option<String>,
}

impl Convention {
    /// `values`: the span's value of each of `detect`'s attributes, in order.
    pub(super) fn detects<'a>(&self, values: impl Iterator<Item = Option<AttrRef<'a>>>) -> bool {
        self.detect.iter().zip(values).any(|(d, v)| match v {
            Some(v) if v.truthy() => d.equals.as_ref().is_none_or(|want| match v {
                // A string is its own `str()`: compare without copying it.
                AttrRef::Str(s) => s == want,
                other => other.py_str() == *want,
            }),
            _ => false,
        })
    }
}

/// The `extract` section of the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExtractConfig {
    /// Conventions in priority order; the first that recognises a span wins.
    pub conventions: Vec<Convention>,
    /// A truthy value marks a span the agent framework synthesised: never a tool call.
    pub synthesized_attribute: String,
    /// The tool-call id; a call with an id is matched by id only (the reference rule).
    pub id_attribute: String,
    /// The root span's attribute holding the agent's input: what the LLM
    /// judges read as deepeval's `input` and UiPath's `agent_input`.
    pub root_input_attribute: String,
    /// The root span's attribute holding the agent's output: UiPath's
    /// `workload_output`.
    pub root_output_attribute: String,
    /// Agent frameworks' own tools, which end a run rather than act
    /// (pydantic-ai's `final_result`, smolagents' `final_answer`, DSPy's
    /// `finish`): left out of a trace's calls, but from spans read by the
    /// reference's rules. `[]` keeps them.
    pub exclude_tools: Vec<String>,
}

impl Default for ExtractConfig {
    fn default() -> Self {
        ExtractConfig {
            conventions: default_conventions(),
            synthesized_attribute: "tool.synthesized".into(),
            id_attribute: "tool.id".into(),
            root_input_attribute: "input.value".into(),
            root_output_attribute: "output.value".into(),
            exclude_tools: ["final_result", "final_answer", "finish"]
                .map(String::from)
                .to_vec(),
        }
    }
}

impl ExtractConfig {
    /// Every attribute key extraction reads.
    pub fn attribute_keys(&self) -> impl Iterator<Item = &str> {
        self.conventions
            .iter()
            .flat_map(|c| {
                c.detect
                    .iter()
                    .map(|d| d.attribute.as_str())
                    .chain([c.name_attribute.as_str()])
                    .chain(c.args_attribute.as_deref())
                    .chain(c.output_attribute.as_deref())
                    .chain(c.call_id_attribute.as_deref())
            })
            .chain([
                self.synthesized_attribute.as_str(),
                self.id_attribute.as_str(),
                self.root_input_attribute.as_str(),
                self.root_output_attribute.as_str(),
                super::spans::OPENINFERENCE_KIND,
            ])
            .chain(super::messages::JSON_KEYS.iter().copied())
            .chain([super::messages::EVENT_CONTENT])
    }

    /// What a span keeps for extraction: these keys, the flattened model
    /// messages, and the scopes of the libraries it tells apart.
    pub fn keep(
        &self,
        other_keys: impl IntoIterator<Item = String>,
    ) -> crate::span::KeepAttributes {
        crate::span::KeepAttributes::only(
            self.attribute_keys().map(str::to_owned).chain(other_keys),
        )
        .with_messages(
            super::messages::LISTS
                .iter()
                .flat_map(|(i, o)| [i.to_string(), o.to_string()])
                .chain([super::messages::TOOLS_LIST.to_owned()]),
        )
        .with_scopes(super::library::SCOPES.iter().map(|(s, _)| s.to_string()))
        .with_event_bodies(super::messages::EVENTS.iter().map(|(e, _)| e.to_string()))
    }
}

fn detect(attribute: &str, equals: Option<&str>) -> Detect {
    Detect {
        attribute: attribute.into(),
        equals: equals.map(Into::into),
    }
}

/// OpenInference/UiPath, OpenTelemetry GenAI, pydantic-ai's version 2,
/// OpenLLMetry, Vercel AI SDK.
pub fn default_conventions() -> Vec<Convention> {
    vec![
        Convention {
            name: "openinference".into(),
            detect: vec![detect("tool.name", None)],
            name_attribute: "tool.name".into(),
            args_attribute: Some("input.value".into()),
            args_format: ArgsFormat::Value,
            output_attribute: Some("output.value".into()),
            call_id_attribute: None,
        },
        Convention {
            name: "gen_ai".into(),
            detect: vec![
                detect("gen_ai.tool.name", None),
                detect("gen_ai.operation.name", Some("execute_tool")),
            ],
            name_attribute: "gen_ai.tool.name".into(),
            args_attribute: Some("gen_ai.tool.call.arguments".into()),
            args_format: ArgsFormat::Value,
            output_attribute: Some("gen_ai.tool.call.result".into()),
            call_id_attribute: Some("gen_ai.tool.call.id".into()),
        },
        Convention {
            // pydantic-ai's instrumentation version 2.
            name: "pydantic_ai_v2".into(),
            detect: vec![detect("tool_arguments", None)],
            name_attribute: "gen_ai.tool.name".into(),
            args_attribute: Some("tool_arguments".into()),
            args_format: ArgsFormat::Value,
            output_attribute: Some("tool_response".into()),
            call_id_attribute: Some("gen_ai.tool.call.id".into()),
        },
        Convention {
            name: "openllmetry".into(),
            detect: vec![detect("traceloop.span.kind", Some("tool"))],
            name_attribute: "traceloop.entity.name".into(),
            args_attribute: Some("traceloop.entity.input".into()),
            args_format: ArgsFormat::TraceloopKwargs,
            output_attribute: Some("traceloop.entity.output".into()),
            call_id_attribute: None,
        },
        Convention {
            name: "vercel_ai".into(),
            detect: vec![detect("ai.toolCall.name", None)],
            name_attribute: "ai.toolCall.name".into(),
            args_attribute: Some("ai.toolCall.args".into()),
            args_format: ArgsFormat::Value,
            output_attribute: Some("ai.toolCall.result".into()),
            call_id_attribute: Some("ai.toolCall.id".into()),
        },
    ]
}

//! The configuration's criteria keys (`evaluators`, `eval_sets`, `rules`),
//! owned here so that loading them needs nothing from `config.rs`.

use serde::{Deserialize, Serialize};

use super::BindingConfig;

/// What the binder loads, borrowed from the configuration's top-level
/// `evaluators`, `eval_sets`, `rules` and `binding` keys.
#[derive(Debug, Clone, Copy)]
pub struct BinderConfig<'a> {
    pub evaluators: &'a EvaluatorsConfig,
    pub eval_sets: &'a EvalSetsConfig,
    pub rules: &'a [RuleConfig],
    pub binding: &'a BindingConfig,
}

/// Evaluator definitions: UiPath evaluator files and inline definitions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EvaluatorsConfig {
    /// Globs of UiPath evaluator files (relative to the config file).
    pub files: Vec<String>,
    pub inline: Vec<InlineEvaluator>,
}

/// An evaluator defined in the config file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InlineEvaluator {
    pub id: String,
    /// An evaluator type or alias (`uipath-tool-call-count`, `tool-correctness`, …).
    #[serde(rename = "type")]
    pub kind: String,
    /// The evaluator's config (UiPath `evaluatorConfig` keys, or deepeval's parameters).
    #[serde(default)]
    pub config: serde_json::Map<String, serde_json::Value>,
    /// Runs on every trace nothing else binds, with its default criteria.
    #[serde(default)]
    pub apply_to_all_traces: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EvalSetsConfig {
    /// Globs of UiPath eval-set files (relative to the config file).
    pub files: Vec<String>,
}

/// A rule: which traces it matches, and the evaluators and criteria it applies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    pub name: String,
    #[serde(default, rename = "match")]
    pub matcher: RuleMatch,
    /// Evaluator ids to run.
    pub evaluators: Vec<String>,
    /// Criteria per evaluator id; absent or null = the evaluator's default.
    #[serde(default)]
    pub criteria: serde_json::Map<String, serde_json::Value>,
}

/// All given conditions must hold; an empty match matches every trace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RuleMatch {
    /// Glob on the root span's resource `service.name`.
    pub service_name: Option<String>,
    /// Glob on the root span's name.
    pub root_span_name: Option<String>,
    /// Attribute key → exact string value, on any span of the trace.
    pub attributes: std::collections::BTreeMap<String, String>,
}

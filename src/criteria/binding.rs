//! Binding a trace to an eval-set item by a span attribute (DESIGN §4).

use serde::{Deserialize, Serialize};

use crate::span::Span;

/// The `binding` section of the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BindingConfig {
    /// Span attributes whose value names an eval-set item id, in priority order.
    pub attributes: Vec<String>,
}

impl Default for BindingConfig {
    fn default() -> Self {
        BindingConfig {
            attributes: vec![
                "eval.case.id".into(),
                "eval_item_id".into(),
                "evalId".into(),
            ],
        }
    }
}

/// Where a trace's criteria came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum Binding {
    EvalSet { eval_set: String, item: String },
    Rule { rule: String },
    Default,
}

/// The binding attribute's value on the trace: the first attribute of the
/// list that any span carries (spans in start order, so the result does not
/// depend on arrival order).
pub fn find_binding_value(spans: &[Span], config: &BindingConfig) -> Option<String> {
    let mut ordered: Vec<&Span> = spans.iter().collect();
    ordered.sort_by_key(|s| (s.start_time_unix_nano, s.end_time_unix_nano, s.span_id));
    config.attributes.iter().find_map(|attr| {
        ordered
            .iter()
            .find_map(|s| s.attr(attr).filter(|v| v.truthy()).map(|v| v.py_str()))
    })
}

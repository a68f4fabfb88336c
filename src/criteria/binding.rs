//! Binding a trace to an eval-set item by a span attribute (DESIGN §4).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::record::{SpanRef, Spans};

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
    EvalSet { eval_set: Arc<str>, item: Arc<str> },
    Rule { rule: Arc<str> },
    Default,
}

/// The binding attribute's value on the trace: the first attribute of the
/// list that any span carries (spans in start order, so the result does not
/// depend on arrival order).
pub fn find_binding_value(spans: &Spans, config: &BindingConfig) -> Option<String> {
    // The earliest carrier by a scan: no sorted copy of the trace per trace.
    let order = |s: &SpanRef<'_>| (s.start_time_unix_nano, s.end_time_unix_nano, s.span_id);
    config.attributes.iter().find_map(|attr| {
        let key = spans.key(attr)?;
        spans
            .iter()
            .filter_map(|s| Some((s, s.get(key).filter(|v| v.truthy())?)))
            .min_by_key(|(s, _)| order(s))
            .map(|(_, v)| v.py_str())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::span::{AttrValue, Span, SpanId, TraceId};

    fn find_binding_value(spans: &[Span], cfg: &BindingConfig) -> Option<String> {
        super::find_binding_value(&Spans::from_spans(spans), cfg)
    }

    fn span(start: u64, end: u64, attrs: &[(&str, &str)]) -> Span {
        Span {
            trace_id: TraceId([1; 16]),
            span_id: SpanId([start as u8; 8]),
            parent_span_id: None,
            name: "s".into(),
            start_time_unix_nano: start,
            end_time_unix_nano: end,
            attributes: attrs
                .iter()
                .map(|(k, v)| (Arc::from(*k), AttrValue::Str((*v).into())))
                .collect(),
            service_name: None,
            scope_name: None,
        }
    }

    fn config(attributes: &[&str]) -> BindingConfig {
        BindingConfig {
            attributes: attributes.iter().map(|a| (*a).into()).collect(),
        }
    }

    #[test]
    fn the_earliest_carrier_of_the_first_listed_attribute_wins_in_any_arrival_order() {
        let spans = [
            span(30, 31, &[("a", "late")]),
            span(20, 40, &[("b", "other attribute")]),
            span(10, 50, &[("a", "early")]),
            span(10, 20, &[("a", "")]), // falsy: not a carrier
            span(5, 6, &[]),
        ];
        let cfg = config(&["a", "b"]);
        let mut reversed = spans.clone();
        reversed.reverse();
        assert_eq!(find_binding_value(&spans, &cfg).as_deref(), Some("early"));
        assert_eq!(
            find_binding_value(&reversed, &cfg).as_deref(),
            Some("early")
        );
        // Same start: the earlier end first.
        let tie = [span(10, 50, &[("a", "x")]), span(10, 20, &[("a", "y")])];
        assert_eq!(find_binding_value(&tie, &cfg).as_deref(), Some("y"));
        // The second attribute only when no span carries the first.
        assert_eq!(
            find_binding_value(&spans[1..2], &cfg).as_deref(),
            Some("other attribute")
        );
        assert_eq!(find_binding_value(&spans[4..], &cfg), None);
    }
}

//! The explanation of deepeval's tool correctness: its details record only
//! a reason, so the expected tools come from the configuration through the
//! record's binding, and the page says so.

use maud::{Markup, html};
use serde_json::Value as Json;

use super::repr::Call;
use super::{args_list, mismatch, text};
use crate::criteria::Binder;
use crate::criteria::Binding;
use crate::evaluator::{Config, Criteria};
use crate::pyvalue::Value;
use crate::pyvalue::json_to_py;
use crate::store::{Score, StoredCall, StoredResult};

/// deepeval's tool correctness: its reason as written, and the expected
/// tools from the configuration beside the calls.
pub fn tool_correctness(
    s: &Score,
    r: &StoredResult,
    calls: &[StoredCall],
    binder: &Binder,
    details: &Json,
) -> Markup {
    let reason = details.get("reason").and_then(Json::as_str);
    let bound = bound_criteria(binder, r.binding.as_ref(), &s.evaluator_id);
    let compared = bound.map(|(cfg, tools)| {
        let expected: Vec<Call> = tools
            .iter()
            .map(|t| Call {
                name: t.name.clone(),
                id: None,
                args: t.input_parameters.clone(),
                output: t.output.as_ref().map(|o| match o {
                    Value::Str(s) => s.clone(),
                    other => other.py_str(),
                }),
            })
            .collect();
        let actual: Vec<Call> = calls
            .iter()
            .map(|c| Call {
                name: c.name.clone(),
                id: None,
                args: json_to_py(&c.args.to_json()).as_dict().cloned(),
                output: Some(c.output().into_owned()),
            })
            .collect();
        (cfg, expected, actual)
    });
    html! {
        @if let Some(reason) = reason {
            h4 { "The evaluator's reason" }
            pre class="reason" { (text(reason.trim())) }
        }
        @if let Some((cfg, expected, actual)) = compared {
            p class="note" { "ⓘ Expected tools as the current configuration binds them (deepeval's details do not record them). deepeval scores them by its own rules (exact names, its argument similarity, ordering and exact-match options), so the calls are shown beside them without a verdict; only an expected tool that no call names exactly is marked." }
            (tools_side_by_side(&expected, &actual, cfg))
        }
    }
}

/// The expected tools of a deepeval evaluator for a record's binding, with
/// which of parameters and output it compares.
fn bound_criteria<'a>(
    binder: &'a Binder,
    binding: Option<&Binding>,
    evaluator_id: &str,
) -> Option<(
    (bool, bool),
    &'a [crate::evaluator::tool_correctness::DeepevalTool],
)> {
    let ie = binder
        .bound(binding?)?
        .iter()
        .find(|e| &*e.evaluator.id == evaluator_id)?;
    let (evaluator, criteria) = (&ie.evaluator, &*ie.criteria);
    let (Config::ToolCorrectness(cfg), Criteria::ToolCorrectness(tools)) =
        (&evaluator.config, criteria)
    else {
        return None;
    };
    Some(((cfg.input_parameters, cfg.output), &tools.tools))
}

/// The expected tools and the calls made, side by side, without a
/// verdict per row: the only mark is an expected name that no call has
/// exactly, which deepeval cannot match under any of its options.
fn tools_side_by_side(
    expected: &[Call],
    actual: &[Call],
    (params, output): (bool, bool),
) -> Markup {
    let one = |c: &Call, shown_output: bool| {
        html! {
            @if params { (args_list(c.args.as_ref(), None)) }
            @if shown_output { @if let Some(o) = &c.output { pre class="output" { (text(o)) } } }
        }
    };
    html! {
        div class="side-by-side" {
            div {
                h4 { "Expected tools (configuration)" }
                ol class="sequence" {
                    @for e in expected {
                        li {
                            @if actual.iter().any(|a| a.name == e.name) {
                                div class="tool" { code { (e.name) } }
                            } @else {
                                div class="tool" { (mismatch(&e.name, "no call has this exact name")) }
                            }
                            (one(e, output))
                        }
                    }
                    @if expected.is_empty() { li class="empty" { "(none)" } }
                }
            }
            div {
                h4 { "Calls made" }
                ol class="sequence" {
                    @for a in actual {
                        li { div class="tool" { code { (a.name) } } (one(a, output)) }
                    }
                    @if actual.is_empty() { li class="empty" { "(none)" } }
                }
            }
        }
    }
}

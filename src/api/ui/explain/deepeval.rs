//! The explanation of deepeval's tool correctness: its details record only
//! a reason, so the expected tools come from the configuration through the
//! record's binding, and the page says so.

use maud::{Markup, html};
use serde_json::Value as Json;

use super::repr::{Call, align, args_ok};
use super::{args_list, compare_table, mismatch, result_text};
use crate::criteria::Binding;
use crate::evaluator::stage::{Binder, json_to_py};
use crate::evaluator::{Config, Criteria};
use crate::pyvalue::Value;
use crate::store::{Score, TraceRecord};

/// deepeval's tool correctness: its reason as written, and the expected
/// tools from the configuration beside the calls.
pub fn tool_correctness(
    heading: &str,
    s: &Score,
    r: &TraceRecord,
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
        let actual: Vec<Call> = r
            .tool_calls
            .iter()
            .map(|c| Call {
                name: c.name.clone(),
                id: None,
                args: json_to_py(&c.args.to_json()).as_dict().cloned(),
                output: Some(c.output.clone()),
            })
            .collect();
        (cfg, expected, actual)
    });
    html! {
        @if let Some(reason) = reason {
            h4 { "Reason" }
            pre class="reason" { (reason.trim()) }
        }
        @if let Some((cfg, expected, actual)) = compared {
            p class="note" { "ⓘ Expected tools as the current configuration binds them (deepeval's details do not record them)." }
            (tools_table(heading, &expected, &actual, cfg))
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

/// Each expected tool beside the call it was matched with.
fn tools_table(
    heading: &str,
    expected: &[Call],
    actual: &[Call],
    (params, output): (bool, bool),
) -> Markup {
    let agrees = |e: &Call, a: &Call| {
        (!params || e.args.as_ref().is_none_or(|x| args_ok(x, a.args.as_ref())))
            && (!output || e.output.is_none() || e.output == a.output)
    };
    let aligned = align(expected, actual, agrees);
    let rows = html! {
        @for (i, (e, (found, ok))) in expected.iter().zip(&aligned).enumerate() {
            @let a = found.and_then(|j| actual.get(j));
            tr {
                th scope="row" data-label="Tool" { (i + 1) }
                td data-label="Expected" {
                    div class="tool" { code { (e.name) } }
                    @if params { (args_list(e.args.as_ref(), None)) }
                    @if output { @if let Some(o) = &e.output { pre class="output" { (o) } } }
                }
                td data-label="Called" {
                    @match a {
                        None => (mismatch("not called", "no call of this tool")),
                        Some(a) => {
                            div class="tool" { code { (a.name) } }
                            @if params { (args_list(a.args.as_ref(), e.args.as_ref())) }
                            @if output && e.output.is_some() {
                                @if e.output == a.output {
                                    pre class="output" { (a.output.as_deref().unwrap_or("")) }
                                } @else {
                                    pre class="output" { mark class="mismatch" { (a.output.as_deref().unwrap_or("")) } }
                                    span class="why" { "✗ output differs" }
                                }
                            }
                        }
                    }
                }
                td class="result" data-label="Result" { (result_text(*ok, a.is_some())) }
            }
        }
    };
    compare_table(
        heading,
        "Expected tools against the calls made",
        &["#", "Expected", "Called", "Result"],
        rows,
    )
}

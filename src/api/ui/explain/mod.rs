//! A score's justification for a person: expected against actual tool
//! calls side by side, with what does not match marked (`mark.mismatch`,
//! with words beside it, not colour alone).
//!
//! Where the expectation comes from: the UiPath evaluators record it in
//! their details (`expected`, a Python repr of exactly what was compared,
//! whatever rule or eval-set item bound it), so it is read from there; this
//! stays right after a configuration change and for any binding. deepeval's
//! details record only a reason, so its expected tools come from the
//! configuration through the record's binding (`Binder::bound`: the
//! eval-set item's, the rule's or the defaults' criteria), and the page
//! says so.
//! The marks are an aid computed here; the evaluator's verdict is its score
//! and the raw details, which the page shows as they are.

mod deepeval;
pub mod repr;
mod uipath;

use maud::{Markup, html};

use super::layout::cut;

use crate::criteria::Binder;
use crate::evaluator::Status;
use crate::evaluator::kind::Layout;
use crate::pyvalue::py_to_json;
use crate::pyvalue::{Dict, Value};
use crate::store::{Score, StoredCall, StoredResult};

/// Shown values longer than this may break anywhere; shorter ones never
/// break, so a phone does not leave `"celsius` and its closing quote on
/// two lines.
const LONG_VALUE: usize = 24;

/// The most of one value a comparison shows, and of one text block (an
/// output, a reason); the raw details and the JSON API hold the rest.
const VALUE_MAX: usize = 2 * 1024;
const TEXT_MAX: usize = 16 * 1024;

/// The explanation of one score, or nothing when it has none to give
/// (an error's message is shown by the caller). `heading` is the id of
/// the score's heading: a table's region is named by it and its caption,
/// so two tables of the same kind on one page are told apart.
pub fn explain(
    heading: &str,
    s: &Score,
    r: &StoredResult,
    calls: &[StoredCall],
    binder: &Binder,
) -> Markup {
    if s.outcome.status != Status::Ok {
        return html! {};
    }
    let details = s.outcome.details.to_json();
    let shown = match s.evaluator_type.layout() {
        Layout::ToolCounts => uipath::count(heading, &details),
        Layout::ToolSequence => uipath::order(&details, calls),
        Layout::CallArguments => uipath::calls(heading, &details, uipath::Kind::Args),
        Layout::CallOutputs => uipath::calls(heading, &details, uipath::Kind::Output),
        Layout::ExpectedTools => Some(deepeval::tool_correctness(s, r, calls, binder, &details)),
        Layout::JudgeReason => uipath::judge(&details),
    };
    shown.unwrap_or_else(|| {
        html! { p class="note" { "ⓘ This justification has no layout here; see the raw details below." } }
    })
}

/// A comparison table: a row per expected item, its cells labelled by
/// `data-label` (the column's name), which the stylesheet shows when a
/// narrow screen stacks each row's cells.
fn compare_table(heading: &str, caption: &str, columns: &[&str], rows: Markup) -> Markup {
    let caption_id = format!("{heading}-table");
    html! {
        div class="table-wrap" role="region" tabindex="0" aria-labelledby={ (heading) " " (caption_id) } {
            table class="compare" {
                caption id=(caption_id) { (caption) }
                thead { tr { @for c in columns { th scope="col" { (c) } } } }
                tbody { (rows) }
            }
        }
    }
}

/// A value for display as JSON, as the timeline shows arguments; a long
/// one is marked so it may wrap anywhere.
fn show(v: &Value) -> Markup {
    let shown = cut(&py_to_json(v).to_string(), VALUE_MAX);
    let long = shown.truncated || shown.text.chars().count() > LONG_VALUE;
    html! {
        code class=[long.then_some("long")] { (shown.text) @if shown.truncated { "…" } }
        @if shown.truncated { " " span class="why" { "(truncated)" } }
    }
}

/// A text block (an output, a reason, a justification), cut at
/// [`TEXT_MAX`] with a note saying so.
fn text(t: &str) -> Markup {
    let shown = cut(t, TEXT_MAX);
    html! {
        (shown.text)
        @if shown.truncated { "\n" span class="truncated" { "… truncated (see the raw details and the JSON API)" } }
    }
}

fn mismatch(text: &str, why: &str) -> Markup {
    html! { mark class="mismatch" { (text) } " " span class="why" { "✗ " (why) } }
}

/// Arguments as a definition list; with `expected`, the actual ones that
/// are missing or differ are marked.
fn args_list(args: Option<&Dict>, expected: Option<&Dict>) -> Markup {
    let empty = Dict::new();
    let args = args.unwrap_or(&empty);
    if args.is_empty() && expected.is_none_or(|e| e.is_empty()) {
        return html! { p class="note" { "(no arguments)" } };
    }
    html! {
        dl class="args" {
            @if let Some(exp) = expected {
                @for (k, v) in exp.iter() {
                    dt { (k.py_str()) }
                    @match args.get(k) {
                        None => dd { (mismatch("missing", "argument not given")) },
                        Some(a) if a.py_eq(v) => dd { (show(a)) },
                        Some(a) => dd { mark class="mismatch" { (show(a)) } " " span class="why" { "✗ differs" } },
                    }
                }
                @for (k, v) in args.iter().filter(|(k, _)| !exp.contains_key(k)) {
                    dt { (k.py_str()) } dd { (show(v)) " " span class="why" { "(not checked)" } }
                }
            } @else {
                @for (k, v) in args.iter() { dt { (k.py_str()) } dd { (show(v)) } }
            }
        }
    }
}

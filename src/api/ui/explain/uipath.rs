//! The explanations of the UiPath evaluators: call counts, call order,
//! arguments and outputs, and the LLM judges.

use maud::{Markup, html};
use serde_json::Value as Json;

use super::repr::{Call, align, args_ok, calls_of, embed, py_repr};
use super::{args_list, compare_table, mismatch, result_text};
use crate::pyvalue::Value;

/// `"…, Score: 1.0"` in an explained entry: whether it matched.
fn explained_ok(line: &str) -> Option<bool> {
    let score = line.rsplit_once("Score: ")?.1;
    score.trim().parse::<f64>().ok().map(|v| v >= 1.0)
}

/// The evaluator's own message, when it gave one instead of entries
/// (`{"_result": "Both expected and actual tool calls are empty"}`).
fn result_note(explained: Option<&Json>) -> Markup {
    html! {
        @if let Some(m) = explained.and_then(|e| e.get("_result")).and_then(Json::as_str) {
            p class="note" { "ⓘ " (m) }
        }
    }
}

/// `uipath-tool-call-count`: each expected tool's count against the actual.
pub fn count(heading: &str, details: &Json) -> Option<Markup> {
    let expected = py_repr(details.get("expected")?.as_str()?)?;
    let actual = py_repr(details.get("actual")?.as_str()?)?;
    let (expected, actual) = (expected.as_dict()?.clone(), actual.as_dict()?.clone());
    let explained = details.get("explained_tool_calls_count");
    let rows: Vec<(String, String, String, bool)> = expected
        .iter()
        .map(|(k, v)| {
            let name = k.py_str();
            let (op, n) = match v {
                Value::Tuple(t) if t.len() == 2 => (t[0].py_str(), t[1].py_str()),
                other => (String::new(), other.py_str()),
            };
            let got = actual.get(k).map_or_else(|| "0".to_owned(), Value::py_str);
            let ok = explained
                .and_then(|e| e.get(&name))
                .and_then(Json::as_str)
                .and_then(explained_ok)
                .unwrap_or_else(|| compare(&got, &op, &n));
            (name, format!("{op} {n}"), got, ok)
        })
        .collect();
    let others: Vec<String> = actual
        .iter()
        .filter(|(k, _)| !expected.contains_key(k))
        .map(|(k, v)| format!("{} ×{}", k.py_str(), v.py_str()))
        .collect();
    Some(html! {
        (result_note(explained))
        (compare_table(heading, "Expected against actual call counts", &["Tool", "Expected", "Actual", "Result"], html! {
            @for (name, want, got, ok) in &rows {
                tr {
                    th scope="row" { @if *ok { (name) } @else { mark class="mismatch" { (name) } } }
                    td data-label="Expected" { code { (want) } }
                    td data-label="Actual" { @if *ok { (got) } @else { mark class="mismatch" { (got) } } }
                    td class="result" data-label="Result" { @if *ok { "✓ as expected" } @else { "✗ count differs" } }
                }
            }
        }))
        @if !others.is_empty() {
            p { "Other tools called (not counted): " (others.join(", ")) }
        }
    })
}

/// The count comparison, for entries the evaluator did not explain.
fn compare(got: &str, op: &str, n: &str) -> bool {
    let (Ok(a), Ok(b)) = (got.parse::<i64>(), n.parse::<i64>()) else {
        return false;
    };
    match op {
        "=" | "==" => a == b,
        "!=" => a != b,
        ">" => a > b,
        ">=" => a >= b,
        "<" => a < b,
        "<=" => a <= b,
        _ => false,
    }
}

/// `uipath-tool-call-order`: both sequences, with the items outside the
/// longest common subsequence (`lcs`) marked.
pub fn order(details: &Json) -> Option<Markup> {
    let list = |v: Value| -> Option<Vec<String>> {
        match v {
            Value::List(items) => Some(items.iter().map(Value::py_str).collect()),
            _ => None,
        }
    };
    let expected = list(py_repr(details.get("expected")?.as_str()?)?)?;
    let actual = list(py_repr(details.get("actual")?.as_str()?)?)?;
    let lcs: Vec<String> = details
        .get("lcs")?
        .as_array()?
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    let side = |items: &[String], caption: &str, why: &str| {
        let kept = embed(items, &lcs);
        html! {
            div {
                h4 { (caption) }
                ol class="sequence" {
                    @for (item, keep) in items.iter().zip(&kept) {
                        li { @if *keep { (item) } @else { (mismatch(item, why)) } }
                    }
                    @if items.is_empty() { li class="empty" { "(none)" } }
                }
            }
        }
    };
    Some(html! {
        p { "In order: " (lcs.len()) " of " (expected.len()) " expected calls (the longest common subsequence)." }
        div class="side-by-side" {
            (side(&expected, "Expected order", "missing or out of order"))
            (side(&actual, "Actual order", "not in the expected order"))
        }
    })
}

/// Which UiPath evaluator a list of calls belongs to.
#[derive(Clone, Copy, PartialEq)]
pub enum Kind {
    Args,
    Output,
}

/// `uipath-tool-call-args` and `-output`: each expected call beside the
/// actual call it was matched against.
pub fn calls(heading: &str, details: &Json, kind: Kind) -> Option<Markup> {
    let expected = calls_of(&py_repr(details.get("expected")?.as_str()?)?)?;
    let actual = calls_of(&py_repr(details.get("actual")?.as_str()?)?)?;
    let explained_key = match kind {
        Kind::Args => "explained_tool_calls_args",
        Kind::Output => "explained_tool_calls_outputs",
    };
    let agrees = |e: &Call, a: &Call| match kind {
        Kind::Args => e.args.as_ref().is_some_and(|x| args_ok(x, a.args.as_ref())),
        Kind::Output => e.output == a.output,
    };
    let aligned = align(&expected, &actual, agrees);
    let rows = expected.iter().zip(&aligned).map(|(e, (found, ok))| {
        let a = found.and_then(|i| actual.get(i));
        let expected_side = match kind {
            Kind::Args => args_list(e.args.as_ref(), None),
            Kind::Output => html! { pre class="output" { (e.output.as_deref().unwrap_or("")) } },
        };
        let actual_side = match (a, kind) {
            (None, _) => mismatch("not called", "no call of this tool"),
            (Some(a), Kind::Args) => args_list(a.args.as_ref(), e.args.as_ref()),
            (Some(a), Kind::Output) if *ok => {
                html! { pre class="output" { (a.output.as_deref().unwrap_or("")) } }
            }
            (Some(a), Kind::Output) => html! {
                pre class="output" { mark class="mismatch" { (a.output.as_deref().unwrap_or("")) } }
                span class="why" { "✗ output differs" }
            },
        };
        (e, a, *ok, expected_side, actual_side)
    });
    let rows: Vec<_> = rows.collect();
    let used: Vec<bool> = (0..actual.len())
        .map(|i| aligned.iter().any(|(f, _)| *f == Some(i)))
        .collect();
    let others: Vec<&Call> = actual
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|(c, _)| c)
        .collect();
    Some(html! {
        (result_note(details.get(explained_key)))
        (compare_table(heading, "Expected against actual tool calls", &["#", "Expected", "Actual", "Result"], html! {
            @for (i, (e, a, ok, exp_side, act_side)) in rows.iter().enumerate() {
                tr {
                    th scope="row" data-label="Call" { (i + 1) }
                    td data-label="Expected" { div class="tool" { code { (e.name) } } (exp_side) }
                    td data-label="Actual" {
                        div class="tool" {
                            @match a {
                                Some(a) => code { (a.name) @if let Some(id) = &a.id { " (id " (id) ")" } },
                                None => mark class="mismatch" { code { (e.name) } },
                            }
                        }
                        (act_side)
                    }
                    td class="result" data-label="Result" { (result_text(*ok, a.is_some())) }
                }
            }
        }))
        @if !others.is_empty() {
            p { "Other calls (not compared with an expected one): "
                @for (i, c) in others.iter().enumerate() { @if i > 0 { ", " } code { (c.name) } }
            }
        }
    })
}

/// A UiPath LLM judge: its justification, and what it compared.
pub fn judge(details: &Json) -> Option<Markup> {
    let text = |k: &str| details.get(k).and_then(Json::as_str);
    let justification = text("justification")?;
    Some(html! {
        h4 { "Justification" }
        p class="justification" { (justification) }
        div class="side-by-side" {
            div { h4 { "Expected" } pre { (text("expected").unwrap_or("")) } }
            div { h4 { "Actual" } pre { (text("actual").unwrap_or("")) } }
        }
    })
}

//! The explanations of the UiPath evaluators: call counts, call order,
//! arguments and outputs, and the LLM judges.

use maud::{Markup, html};
use serde_json::Value as Json;

use super::repr::{Call, Fate, calls_of, embed, embed_by, explained_ok, py_repr, replay};
use super::{args_list, compare_table, mismatch, text};
use crate::evaluator::common::{sanitize, sanitize_cow};
use crate::pyvalue::Value;
use crate::store::StoredCall;

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
            let line = explained.and_then(|e| e.get(&name)).and_then(Json::as_str);
            let got = line
                .and_then(explained_actual)
                .unwrap_or_else(|| actual_count(&actual, &name));
            let ok = line
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

/// `"Actual: 2, Expected: …"`: the count the evaluator found.
fn explained_actual(line: &str) -> Option<String> {
    let n = line.strip_prefix("Actual: ")?.split(',').next()?;
    n.parse::<i64>().ok().map(|n| n.to_string())
}

/// The count of `name` the evaluator's way, for entries it did not
/// explain: the key as written, else its sanitised form.
fn actual_count(actual: &crate::pyvalue::Dict, name: &str) -> String {
    let got = actual.get_str(name).or_else(|| match sanitize_cow(name) {
        std::borrow::Cow::Owned(s) => actual.get_str(&s),
        std::borrow::Cow::Borrowed(_) => None,
    });
    got.map_or_else(|| "0".to_owned(), Value::py_str)
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
/// longest common subsequence (`lcs`) marked. The actual side matches the
/// evaluator's way: a call with an id by that id, else by sanitised name.
/// The details list each call's id or name; `calls` (the trace's) says
/// which, when they line up with it.
pub fn order(details: &Json, calls: &[StoredCall]) -> Option<Markup> {
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
    let has_id: Vec<Option<bool>> = if calls.len() == actual.len()
        && calls
            .iter()
            .zip(&actual)
            .all(|(c, a)| c.id.as_deref().unwrap_or(&c.name) == a)
    {
        calls.iter().map(|c| Some(c.id.is_some())).collect()
    } else {
        vec![None; actual.len()]
    };
    let actual_kept = embed_by(&actual, &lcs, |i, call, exp| {
        order_matches(call, has_id.get(i).copied().flatten(), exp)
    });
    let side = |items: &[String], kept: &[bool], caption: &str, why: &str| {
        html! {
            div {
                h4 { (caption) }
                ol class="sequence" {
                    @for (item, keep) in items.iter().zip(kept) {
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
            (side(&expected, &embed(&expected, &lcs), "Expected order", "missing or out of order"))
            (side(&actual, &actual_kept, "Actual order", "not in the expected order"))
        }
    })
}

/// Whether an actual item (a call's id, or its name) takes the expected
/// name `exp`, as `order.rs` matches: an id exactly, a name sanitised.
/// Not knowing which it is, either way counts.
pub fn order_matches(item: &str, has_id: Option<bool>, exp: &str) -> bool {
    match has_id {
        Some(true) => item == exp,
        Some(false) => sanitize(item) == sanitize(exp),
        None => item == exp || sanitize(item) == sanitize(exp),
    }
}

/// Which UiPath evaluator a list of calls belongs to.
#[derive(Clone, Copy, PartialEq)]
pub enum Kind {
    Args,
    Output,
}

/// `uipath-tool-call-args` and `-output`: each expected call beside the
/// calls it was compared with. The verdicts are the evaluator's own
/// explained entries ([`replay`]): a row is marked iff its entries scored
/// below 1.
pub fn calls(heading: &str, details: &Json, kind: Kind) -> Option<Markup> {
    let expected = calls_of(&py_repr(details.get("expected")?.as_str()?)?)?;
    let actual = calls_of(&py_repr(details.get("actual")?.as_str()?)?)?;
    let explained_key = match kind {
        Kind::Args => "explained_tool_calls_args",
        Kind::Output => "explained_tool_calls_outputs",
    };
    let explained = details.get(explained_key);
    let entries = explained.and_then(Json::as_object)?;
    let note = result_note(explained);
    if entries.keys().all(|k| k == "_result") {
        return Some(note);
    }
    let Some(fates) = replay(&expected, &actual, entries) else {
        return Some(html! { (note) (entries_list(heading, entries, &actual)) });
    };
    let compared: Vec<bool> = (0..actual.len())
        .map(|i| {
            fates.iter().any(|f| match f {
                Fate::Matched { call, before } => *call == i || before.contains(&i),
                Fate::Rejected(js) => js.contains(&i),
                Fate::NoCall | Fate::NotReached => false,
            })
        })
        .collect();
    let others: Vec<&Call> = actual
        .iter()
        .zip(&compared)
        .filter(|(_, c)| !**c)
        .map(|(c, _)| c)
        .collect();
    Some(html! {
        (note)
        (compare_table(heading, "Expected against actual tool calls", &["#", "Expected", "Actual", "Result"], html! {
            @for (i, (e, fate)) in expected.iter().zip(&fates).enumerate() {
                (call_row(i, e, fate, &actual, kind))
            }
        }))
        @if !others.is_empty() {
            p { "Other calls (not compared with an expected one): "
                @for (i, c) in others.iter().enumerate() { @if i > 0 { ", " } code { (c.name) } }
            }
        }
    })
}

/// One expected call's row.
fn call_row(i: usize, e: &Call, fate: &Fate, actual: &[Call], kind: Kind) -> Markup {
    let expected_side = match kind {
        Kind::Args => args_list(e.args.as_ref(), None),
        Kind::Output => html! { pre class="output" { (text(e.output.as_deref().unwrap_or(""))) } },
    };
    let one = |a: &Call, ok: bool| {
        let body = match (kind, ok) {
            (Kind::Args, true) => args_list(a.args.as_ref(), None),
            (Kind::Args, false) => args_list(a.args.as_ref(), e.args.as_ref()),
            (Kind::Output, true) => {
                html! { pre class="output" { (text(a.output.as_deref().unwrap_or(""))) } }
            }
            (Kind::Output, false) => html! {
                pre class="output" { mark class="mismatch" { (text(a.output.as_deref().unwrap_or(""))) } }
                span class="why" { "✗ output differs" }
            },
        };
        html! {
            div class="tool" { code { (a.name) @if let Some(id) = &a.id { " (id " (id) ")" } } }
            (body)
        }
    };
    let (actual_side, result) = match fate {
        Fate::Matched { call, before } => (
            html! {
                @if let Some(a) = actual.get(*call) { (one(a, true)) }
                @if !before.is_empty() {
                    p class="note" { "(after " (before.len()) " earlier call(s) of this tool that differed)" }
                }
            },
            "✓ matches",
        ),
        Fate::Rejected(js) => (
            html! { @for j in js { @if let Some(a) = actual.get(*j) { (one(a, false)) } } },
            "✗ differs",
        ),
        Fate::NoCall => (
            html! {
                div class="tool" { mark class="mismatch" { code { (e.name) } } }
                (mismatch("not called", "no call of this tool"))
            },
            "✗ not called",
        ),
        Fate::NotReached => (
            html! { p class="note" { "(not compared: the evaluator stopped at an earlier failure)" } },
            "– not compared",
        ),
    };
    html! {
        tr {
            th scope="row" data-label="Call" { (i + 1) }
            td data-label="Expected" { div class="tool" { code { (e.name) } } (expected_side) }
            td data-label="Actual" { (actual_side) }
            td class="result" data-label="Result" { (result) }
        }
    }
}

/// The evaluator's entries as it wrote them, when they cannot be laid
/// out call by call (strict mode keeps only the failing attempt): each
/// key and line, marked when it scored below 1, then the calls whose
/// name has no entry.
fn entries_list(heading: &str, entries: &serde_json::Map<String, Json>, actual: &[Call]) -> Markup {
    let named = |name: &str| {
        entries.keys().any(|k| {
            k.strip_prefix(name)
                .and_then(|rest| rest.strip_prefix('_'))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
    };
    let others: Vec<&Call> = actual.iter().filter(|c| !named(&c.name)).collect();
    html! {
        (compare_table(heading, "The evaluator's comparisons", &["Attempt", "Actual and expected", "Result"], html! {
            @for (k, v) in entries.iter().filter(|(k, _)| *k != "_result") {
                @let line = v.as_str().unwrap_or("");
                @let ok = explained_ok(line) == Some(true);
                tr {
                    th scope="row" data-label="Attempt" { code { (k) } }
                    td data-label="Actual and expected" {
                        @if ok { pre { (text(line)) } } @else { pre { mark class="mismatch" { (text(line)) } } }
                    }
                    td class="result" data-label="Result" { @if ok { "✓ matches" } @else { "✗ differs" } }
                }
            }
        }))
        @if !others.is_empty() {
            p { "Other calls (not compared with an expected one): "
                @for (i, c) in others.iter().enumerate() { @if i > 0 { ", " } code { (c.name) } }
            }
        }
    }
}

/// A UiPath LLM judge: its justification, and what it compared.
pub fn judge(details: &Json) -> Option<Markup> {
    let field = |k: &str| details.get(k).and_then(Json::as_str);
    let justification = field("justification")?;
    Some(html! {
        h4 { "Justification" }
        p class="justification" { (text(justification)) }
        div class="side-by-side" {
            div { h4 { "Expected" } pre { (text(field("expected").unwrap_or(""))) } }
            div { h4 { "Actual" } pre { (text(field("actual").unwrap_or(""))) } }
        }
    })
}

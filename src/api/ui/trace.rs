//! A trace's page (`/ui/traces/{trace_id}`): "which tool call went wrong,
//! and why?" Its summary, its tool calls on a timeline, and each score
//! with its explanation (`explain.rs`) and raw justification.

use maud::{Markup, html};

use super::explain;
use super::layout::{
    self, BLOCK_MAX, Precision, block, cut, pretty, score_fails, score_text, verdict,
};
use crate::criteria::Binder;
use crate::criteria::Binding;
use crate::store::{CallsError, Score, StoredCall, StoredResult};

/// What the timeline's arguments and outputs may show in all: each call's
/// blocks get a share of it, between [`CALL_MIN`] and [`BLOCK_MAX`].
const TIMELINE_BUDGET: usize = 1024 * 1024;
const CALL_MIN: usize = 2 * 1024;

/// The page body. It is built synchronously and may be large: the caller
/// runs it off the async threads.
pub fn render(r: &StoredResult, binder: &Binder) -> Result<Markup, CallsError> {
    let calls = r.calls()?;
    Ok(html! {
        h1 { "Trace " code { (r.trace_id.to_hex()) } }
        (summary(r))
        section aria-labelledby="h-calls" {
            h2 id="h-calls" { "Tool calls (" (calls.len()) ")" }
            @if !r.content_captured {
                p class="note" { "ⓘ Some calls' arguments or output were not captured by the agent's instrumentation." }
            }
            (timeline(r, calls))
        }
        section aria-labelledby="h-scores" {
            h2 id="h-scores" { "Scores (" (r.scores.len()) ")" }
            @if r.scores.is_empty() {
                p { "No evaluator scored this trace." }
            }
            @for (i, s) in r.scores.iter().enumerate() { (score(i, s, r, calls, binder)) }
        }
    })
}

fn summary(r: &StoredResult) -> Markup {
    let root = r.root.as_ref();
    html! {
        section aria-labelledby="h-summary" {
            h2 id="h-summary" class="visually-hidden" { "Summary" }
            dl class="summary" {
                div { dt { "Status" } dd { (r.status.as_str()) @if !r.complete { " (root span not seen)" } } }
                div { dt { "Service" } dd { (root.and_then(|x| x.service.as_deref()).unwrap_or("–")) } }
                div { dt { "Root span" } dd { (root.map_or("–", |x| x.name.as_str())) } }
                @if let Some(x) = root {
                    div { dt { "Root span ID" } dd { code { (x.span_id.to_hex()) } } }
                    div { dt { "Started" } dd { (layout::time_nanos(x.start_time_unix_nano, Precision::Millis)) } }
                    div { dt { "Duration" } dd { (duration(x.start_time_unix_nano, x.end_time_unix_nano)) } }
                }
                div { dt { "Evaluated at" } dd { (layout::time(r.evaluated_at, Precision::Millis)) } }
                div { dt { "Revision" } dd { (r.revision) } }
                div { dt { "Binding" } dd { (binding(r.binding.as_ref())) } }
                div { dt { "Spans" } dd { (r.span_count) } }
            }
        }
    }
}

fn binding(b: Option<&Binding>) -> Markup {
    match b {
        Some(Binding::EvalSet { eval_set, item }) => {
            html! { "eval set " code { (&**eval_set) } ", item " code { (&**item) } }
        }
        Some(Binding::Rule { rule }) => html! { "rule " code { (&**rule) } },
        Some(Binding::Default) => html! { "default evaluators" },
        None => html! { "none" },
    }
}

/// A duration between two span times, readable.
pub fn duration(start: u64, end: u64) -> String {
    let ns = end.saturating_sub(start);
    if ns >= 1_000_000_000 {
        format!("{:.2} s", ns as f64 / 1e9)
    } else if ns >= 1_000_000 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else {
        format!("{:.1} µs", ns as f64 / 1e3)
    }
}

/// The calls in order, each with a bar placed by its start and end within
/// the root span (or, without a root, within the calls' own extent).
fn timeline(r: &StoredResult, calls: &[StoredCall]) -> Markup {
    let (t0, t1) = match &r.root {
        Some(x) if x.end_time_unix_nano > x.start_time_unix_nano => {
            (x.start_time_unix_nano, x.end_time_unix_nano)
        }
        _ => (
            calls
                .iter()
                .map(|c| c.start_time_unix_nano)
                .min()
                .unwrap_or(0),
            calls
                .iter()
                .map(|c| c.end_time_unix_nano)
                .max()
                .unwrap_or(1),
        ),
    };
    // Calls outside the root's time (clock skew) are drawn at its edges.
    let t0 = t0.min(
        calls
            .iter()
            .map(|c| c.start_time_unix_nano)
            .min()
            .unwrap_or(t0),
    );
    let t1 = t1.max(
        calls
            .iter()
            .map(|c| c.end_time_unix_nano)
            .max()
            .unwrap_or(t1),
    );
    let span = (t1.saturating_sub(t0)).max(1) as f64;
    let api = format!("/traces/{}", r.trace_id.to_hex());
    // Arguments and output: two blocks a call.
    let per_call = (TIMELINE_BUDGET / (2 * calls.len().max(1))).clamp(CALL_MIN, BLOCK_MAX);
    html! {
        @if calls.is_empty() {
            p { "No tool call was found in this trace." }
        }
        ol id="tool-calls" class="calls" {
            @for (i, c) in calls.iter().enumerate() {
                @let x = 100.0 * c.start_time_unix_nano.saturating_sub(t0) as f64 / span;
                @let w = (100.0 * c.end_time_unix_nano.saturating_sub(c.start_time_unix_nano) as f64 / span).max(0.5);
                li data-tool-name=(c.name) id={ "call-" (i) } {
                    (call(c, i, x, w, t0, &api, per_call))
                }
            }
        }
    }
}

fn call(c: &StoredCall, i: usize, x: f64, w: f64, t0: u64, api: &str, max: usize) -> Markup {
    let label = format!(
        "Starts {} after the root span's start, lasts {}",
        duration(t0, c.start_time_unix_nano),
        duration(c.start_time_unix_nano, c.end_time_unix_nano)
    );
    html! {
        div class="call-head" {
            span class="call-index" { "#" (i + 1) }
            h3 class="call-name" { (c.name) }
            span class="call-meta" {
                (duration(c.start_time_unix_nano, c.end_time_unix_nano))
                " · span " code { (c.span_id.to_hex()) }
                @if let Some(id) = &c.id { " · call id " code { (id) } }
            }
        }
        svg class="bar-track" role="img" aria-label=(label) viewBox="0 0 100 6" preserveAspectRatio="none" width="100%" height="10" {
            rect class="track" x="0" y="0" width="100" height="6" {}
            rect class="bar" x=(format!("{x:.3}")) y="0" width=(format!("{:.3}", w.min(100.0 - x).max(0.5))) height="6" {}
        }
        div class="io" {
            div {
                h4 { "Arguments" }
                pre class="args" { (block(&pretty(&c.args.to_json(), max), api)) }
            }
            div {
                h4 { "Output" }
                pre class="output" { (block(&cut(&c.output(), max), api)) }
            }
        }
    }
}

/// One score: `data-*` attributes for the browser test, the value as
/// text, the verdict in words, the explanation and the raw details.
fn score(i: usize, s: &Score, r: &StoredResult, calls: &[StoredCall], binder: &Binder) -> Markup {
    let o = &s.outcome;
    html! {
        section class="score" data-evaluator-id=(&*s.evaluator_id) data-status=(o.status.as_str())
            data-passed=(if score_fails(s) { "false" } else { "true" })
            aria-labelledby={ "score-" (i) } {
            h3 id={ "score-" (i) } {
                (&*s.evaluator_id) " " span class="type" { "(" (s.evaluator_type.id()) ")" }
            }
            p class="score-line" {
                "Score: " strong class="score-value" { (score_text(o.score, o.score_is_int)) }
                @if let Some(t) = o.threshold { " · threshold " (score_text(Some(t), false)) }
                " " (verdict(s))
            }
            @if let Some(e) = &o.error {
                p class="error-text" { "Error: " (e) }
            }
            (explain::explain(&format!("score-{i}"), s, r, calls, binder))
            details class="raw" {
                summary { "Raw justification (details)" }
                pre { (block(&pretty(&o.details.to_json(), BLOCK_MAX), &format!("/traces/{}/scores", r.trace_id.to_hex()))) }
            }
        }
    }
}

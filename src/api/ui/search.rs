//! The search page (`/ui/search?…`): a GET form, so a search is a URL one
//! can share. Its fields are `crate::store::ListFilter`'s; invalid input
//! re-renders the form with the message beside the field, as a 400.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};

use super::layout::{self, Nav, traces_table, urlencode};
use super::{UiError, html_page};
use crate::api::http::ApiState;
use crate::span::TraceId;
use crate::store::{ListFilter, StoredResult, TraceStatus};

/// Results shown when the form gives no `limit`.
const DEFAULT_LIMIT: usize = 50;

/// The form's fields, in the order the form shows them.
pub const FIELDS: [&str; 10] = [
    "trace_id",
    "service",
    "root_name",
    "evaluator",
    "min_score",
    "max_score",
    "status",
    "since",
    "until",
    "limit",
];

/// The form as submitted: raw text per field, kept to show it again.
pub type Form = BTreeMap<&'static str, String>;

/// Field name → what is wrong with it.
pub type Errors = BTreeMap<&'static str, String>;

/// What a valid form asks for.
#[derive(Debug)]
pub enum Parsed {
    /// A trace ID: its page answers.
    Trace(TraceId),
    List(ListFilter),
}

/// Reads the query pairs into a form; unknown keys are ignored, a repeated
/// key is an error on that field.
pub fn read_form(pairs: Vec<(String, String)>) -> (Form, Errors) {
    let mut form = Form::new();
    let mut errors = Errors::new();
    for (k, v) in pairs {
        let Some(field) = FIELDS.iter().find(|f| **f == k) else {
            continue;
        };
        if form.insert(field, v).is_some() {
            errors.insert(field, "given more than once".into());
        }
    }
    (form, errors)
}

/// Validates the form against the largest list `limit`.
pub fn parse(form: &Form, max_limit: usize) -> Result<Parsed, Errors> {
    let mut errors = Errors::new();
    let text = |k: &str| form.get(k).map(|s| s.trim()).filter(|s| !s.is_empty());
    if let Some(raw) = text("trace_id") {
        match TraceId::parse_hex(raw) {
            Ok(id) => return Ok(Parsed::Trace(id)),
            Err(e) => {
                errors.insert("trace_id", id_error(&e));
            }
        }
    }
    let mut score = |k: &'static str| -> Option<f64> {
        let raw = text(k)?;
        match raw.parse::<f64>() {
            Ok(v) if v.is_finite() => Some(v),
            _ => {
                errors.insert(k, format!("must be a number, such as 0.5; got {raw:?}"));
                None
            }
        }
    };
    let min_score = score("min_score");
    let max_score = score("max_score");
    if let (Some(lo), Some(hi)) = (min_score, max_score)
        && lo > hi
    {
        errors.insert("max_score", "must not be below the minimum score".into());
    }
    let status = text("status").and_then(|s| {
        let parsed = TraceStatus::parse(s);
        if parsed.is_none() {
            errors.insert(
                "status",
                "must be pending, evaluated, unbound or timed_out".into(),
            );
        }
        parsed
    });
    let mut when = |k: &'static str| -> Option<SystemTime> {
        let raw = text(k)?;
        let t = parse_utc(raw);
        if t.is_none() {
            errors.insert(
                k,
                format!(
                    "must be a date and time in UTC (2026-01-31T13:45), RFC 3339 or Unix seconds; got {raw:?}"
                ),
            );
        }
        t
    };
    let since = when("since");
    let until = when("until");
    if let (Some(a), Some(b)) = (since, until)
        && a >= b
    {
        errors.insert("until", "must be after the start".into());
    }
    let limit = match text("limit") {
        None => DEFAULT_LIMIT.min(max_limit),
        Some(raw) => match raw.parse::<usize>() {
            Ok(n) if (1..=max_limit).contains(&n) => n,
            _ => {
                errors.insert(
                    "limit",
                    format!("must be a whole number from 1 to {max_limit}"),
                );
                0
            }
        },
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Parsed::List(ListFilter {
        status,
        evaluator: text("evaluator").map(str::to_owned),
        max_score,
        min_score,
        service: text("service").map(str::to_owned),
        root_name: text("root_name").map(str::to_owned),
        since,
        until,
        limit,
    }))
}

/// Why a trace ID was refused, in the form's words.
fn id_error(e: &crate::span::IdError) -> String {
    match e {
        crate::span::IdError::Hex { .. } => "must be 32 hexadecimal characters".into(),
        other => format!("is not a trace ID: {other}"),
    }
}

/// Unix seconds or RFC 3339 (as `GET /traces` takes them, any case of
/// `T` and `Z`), else a `datetime-local` value (`2026-01-31T13:45`,
/// seconds optional) read as UTC. A civil time past the last one a
/// timestamp holds (the browser offers up to 9999-12-31T23:59) is that
/// last one: nothing is stored after it either way.
pub fn parse_utc(raw: &str) -> Option<SystemTime> {
    if let Some(t) = crate::api::time::parse_since(raw) {
        return Some(t);
    }
    let dt = raw.parse::<jiff::civil::DateTime>().ok()?;
    let t = jiff::tz::Offset::UTC
        .to_timestamp(dt)
        .unwrap_or(jiff::Timestamp::MAX);
    SystemTime::try_from(t).ok()
}

/// A time field's value as a `datetime-local` input shows it
/// (`2026-01-31T13:45:07`, UTC), so that a link with Unix seconds or
/// RFC 3339 keeps its filter when the form is sent again; `None` when it
/// does not parse.
pub fn datetime_local(raw: &str) -> Option<String> {
    const FORMAT: &str = "%Y-%m-%dT%H:%M:%S";
    if let Some(t) = crate::api::time::parse_since(raw) {
        return Some(
            jiff::Timestamp::try_from(t)
                .ok()?
                .strftime(FORMAT)
                .to_string(),
        );
    }
    let dt = raw.parse::<jiff::civil::DateTime>().ok()?;
    Some(dt.strftime(FORMAT).to_string())
}

/// The search as a link without its empty fields, in the form's order:
/// `/ui/search?service=weather&max_score=0.5`. A GET form sends every
/// field, empty or not; ui.js leaves the empty ones out when it can, and
/// this is the link the page offers either way.
pub fn canonical_url(form: &Form) -> String {
    let query: Vec<String> = FIELDS
        .iter()
        .filter_map(|k| {
            let v = form.get(k).map(|v| v.trim()).filter(|v| !v.is_empty())?;
            Some(format!("{k}={}", urlencode(v)))
        })
        .collect();
    if query.is_empty() {
        "/ui/search".to_owned()
    } else {
        format!("/ui/search?{}", query.join("&"))
    }
}

/// `GET /ui/search`.
pub async fn handler(
    State(st): State<Arc<ApiState>>,
    RawQuery(query): RawQuery,
) -> Result<Response, UiError> {
    let pairs: Vec<(String, String)> = form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .into_owned()
        .collect();
    let evaluators: Vec<String> = st.binder.catalog.evaluators.keys().cloned().collect();
    let signed = st.ui_auth.is_some();
    let (form, mut errors) = read_form(pairs);
    let parsed = parse(&form, st.config.max_list_limit.get());
    let filter = match parsed {
        Ok(Parsed::Trace(id)) if errors.is_empty() => {
            return Ok(Redirect::to(&format!("/ui/traces/{}", id.to_hex())).into_response());
        }
        Ok(Parsed::List(f)) if errors.is_empty() => f,
        Ok(_) => {
            let body = render(&form, &errors, &evaluators, None, signed);
            return Ok(html_page(StatusCode::BAD_REQUEST, body));
        }
        Err(e) => {
            errors.extend(e);
            let body = render(&form, &errors, &evaluators, None, signed);
            return Ok(html_page(StatusCode::BAD_REQUEST, body));
        }
    };
    let records = crate::store::list(&st.store, filter).await?;
    Ok(html_page(
        StatusCode::OK,
        render(&form, &errors, &evaluators, Some(&records), signed),
    ))
}

/// The whole page: the form (with errors) and, when it was valid, results.
pub fn render(
    form: &Form,
    errors: &Errors,
    evaluators: &[String],
    results: Option<&[Arc<StoredResult>]>,
    sign_out: bool,
) -> Markup {
    let title = if errors.is_empty() {
        "Search"
    } else {
        "Search (invalid input)"
    };
    let body = html! {
        h1 { "Search" }
        @if !errors.is_empty() {
            div class="error-summary" role="alert" {
                p { "The search was not run: " (errors.len()) " field(s) need correcting." }
            }
        }
        (search_form(form, errors, evaluators))
        @if let Some(records) = results {
            section aria-labelledby="h-results" {
                h2 id="h-results" { "Results" }
                p {
                    (records.len()) " trace(s), newest first. "
                    a href=(canonical_url(form)) { "Link to this search" }
                }
                @let rows: Vec<&StoredResult> = records.iter().map(|r| &**r).collect();
                (traces_table("results", "Search results", &rows, "No trace matches."))
            }
        }
    };
    layout::page(title, Nav::Search, sign_out, body)
}

fn search_form(form: &Form, errors: &Errors, evaluators: &[String]) -> Markup {
    let value = |k: &str| form.get(k).map_or("", String::as_str);
    let chosen = value("evaluator");
    let status = value("status");
    html! {
        form id="search" method="get" action="/ui/search" novalidate {
            fieldset {
                legend { "Find traces" }
                div class="fields" {
                    (input(errors, "trace_id", "Trace ID (exact; opens its page)", "text", value("trace_id"), Some("32 hexadecimal characters")))
                    (input(errors, "service", "Service", "text", value("service"), None))
                    (input(errors, "root_name", "Root span name", "text", value("root_name"), None))
                    div class="field" {
                        label for="f-evaluator" { "Evaluator" }
                        select id="f-evaluator" name="evaluator" aria-invalid=[errors.contains_key("evaluator").then_some("true")] {
                            option value="" { "Any" }
                            @for e in evaluators {
                                option value=(e) selected[e == chosen] { (e) }
                            }
                            @if !chosen.is_empty() && !evaluators.iter().any(|e| e == chosen) {
                                option value=(chosen) selected { (chosen) " (not loaded)" }
                            }
                        }
                        (error(errors, "evaluator"))
                    }
                    (input(errors, "min_score", "Minimum score", "decimal", value("min_score"), Some("some score at or above this")))
                    (input(errors, "max_score", "Maximum score", "decimal", value("max_score"), Some("some score at or below this")))
                    div class="field" {
                        label for="f-status" { "Status" }
                        select id="f-status" name="status" aria-invalid=[errors.contains_key("status").then_some("true")] {
                            option value="" { "Any" }
                            @for s in TraceStatus::ALL.map(TraceStatus::as_str) {
                                option value=(s) selected[s == status] { (s) }
                            }
                        }
                        (error(errors, "status"))
                    }
                    (time_input(errors, "since", "Stored from (UTC)", value("since")))
                    (time_input(errors, "until", "Stored before (UTC)", value("until")))
                    (input(errors, "limit", "Most results", "numeric", value("limit"), Some("default 50")))
                }
                button type="submit" { "Search" }
                " "
                a href="/ui/search" { "Clear" }
            }
        }
    }
}

/// A time field: a `datetime-local` input holding the parsed time in its
/// own format; a value that does not parse stays as typed, in a text
/// input, beside its error (a `datetime-local` input would blank it).
fn time_input(errors: &Errors, name: &str, label: &str, raw: &str) -> Markup {
    let hint = Some("times are UTC, not your local time");
    match datetime_local(raw.trim()) {
        Some(v) => input(errors, name, label, "datetime-local", &v, hint),
        None if raw.trim().is_empty() => input(errors, name, label, "datetime-local", "", hint),
        None => input(errors, name, label, "text", raw, hint),
    }
}

/// A labelled input with its hint and error, tied to it by
/// `aria-describedby`. `kind` is an input type, or `decimal`/`numeric`:
/// a text input with that `inputmode`, which keeps an invalid value
/// beside its error where a number input would blank it.
fn input(
    errors: &Errors,
    name: &str,
    label: &str,
    kind: &str,
    value: &str,
    hint: Option<&str>,
) -> Markup {
    let id = format!("f-{name}");
    let invalid = errors.contains_key(name);
    let mut described = Vec::new();
    if hint.is_some() {
        described.push(format!("{id}-hint"));
    }
    if invalid {
        described.push(format!("{id}-error"));
    }
    let described = (!described.is_empty()).then(|| described.join(" "));
    let (kind, mode) = match kind {
        "decimal" | "numeric" => ("text", Some(kind)),
        other => (other, None),
    };
    let secs = (kind == "datetime-local").then_some("1");
    html! {
        div class="field" {
            label for=(id) { (label) }
            @if let Some(h) = hint { span class="hint" id={ (id) "-hint" } { (h) } }
            input id=(id) name=(name) type=(kind) inputmode=[mode] value=(value) step=[secs]
                aria-invalid=[invalid.then_some("true")] aria-describedby=[described];
            (error(errors, name))
        }
    }
}

fn error(errors: &Errors, name: &str) -> Markup {
    html! {
        @if let Some(m) = errors.get(name) {
            span class="field-error" id={ "f-" (name) "-error" } { "⚠ " (m) }
        }
    }
}

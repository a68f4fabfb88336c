//! The page shell and the fragments every page shares: the header with its
//! navigation, status badges, score text and a row of a traces table.
//!
//! Everything is written through `maud`, which escapes every interpolated
//! value: span names, arguments and outputs come from the agents' traces
//! and may hold markup.

use std::time::SystemTime;

use jiff::Timestamp;
use maud::{DOCTYPE, Markup, html};

use super::assets;
use crate::evaluator::Status;
use crate::store::{Score, StoredResult};

/// Which navigation link is the current page (`aria-current`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nav {
    Overview,
    Search,
    /// A page under neither link (a trace, an error).
    None,
}

/// A whole page: `title` names it in the tab and in the first heading's
/// place for screen readers; `body` goes inside `<main>`. `sign_out`: the
/// listener has tokens, so the header offers to end the browser's session.
pub fn page(title: &str, nav: Nav, sign_out: bool, body: Markup) -> Markup {
    let current = |n: Nav| (n == nav).then_some("page");
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="no-referrer";
                title { (title) " · toolscore" }
                link rel="stylesheet" href=(assets::CSS.url());
                script src=(assets::JS.url()) defer {}
            }
            body {
                a class="skip" href="#main" { "Skip to content" }
                header class="site" {
                    span class="brand" { "toolscore" }
                    nav aria-label="Main" {
                        ul {
                            li { a href="/ui/" aria-current=[current(Nav::Overview)] { "Overview" } }
                            li { a href="/ui/search" aria-current=[current(Nav::Search)] { "Search" } }
                        }
                    }
                    @if sign_out {
                        form class="sign-out" method="post" action="/ui/sign-out" {
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main id="main" tabindex="-1" { (body) }
            }
        }
    }
}

/// Whether a score counts as failing: below its threshold, or an error.
/// The overview's failing table, the search results and the trace page's
/// `data-passed` all use this one definition.
pub fn score_fails(s: &Score) -> bool {
    s.outcome.passed == Some(false) || s.outcome.status == Status::Error
}

/// Whether any score of the trace fails ([`score_fails`]).
pub fn trace_fails(r: &StoredResult) -> bool {
    r.scores.iter().any(score_fails)
}

/// A score as text: deepeval's strict failure is the int `0`; floats keep
/// up to four decimals, without trailing zeros, so 1.0 reads `1.0`.
pub fn score_text(score: Option<f64>, is_int: bool) -> String {
    match score {
        None => "–".to_owned(),
        Some(v) if is_int => format!("{}", v.round() as i64),
        Some(v) => {
            let s = format!("{v:.4}");
            let s = s.trim_end_matches('0');
            if s.ends_with('.') {
                format!("{s}0")
            } else {
                s.to_owned()
            }
        }
    }
}

/// A score's verdict as a badge that says it in words and a symbol, not
/// colour alone.
pub fn verdict(s: &Score) -> Markup {
    let (class, text) = match (s.outcome.status, s.outcome.passed) {
        (Status::Error, _) => ("bad", "⚠ error"),
        (Status::Pending, _) => ("wait", "… pending"),
        (Status::Skipped, _) => ("wait", "– skipped"),
        (Status::Ok, Some(true)) => ("good", "✓ passed"),
        (Status::Ok, Some(false)) => ("bad", "✗ failed"),
        (Status::Ok, None) => ("plain", "no threshold"),
    };
    html! { span class={ "badge " (class) } { (text) } }
}

/// How finely a time is shown: to the millisecond where sub-second
/// matters (a trace's start and evaluation, on its page), else to the
/// second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    Seconds,
    Millis,
}

/// A time in a `<time>` element: in the pages' one readable format
/// ([`human_time`]), exact (RFC 3339) in its `datetime` attribute.
pub fn time(t: Option<SystemTime>, precision: Precision) -> Markup {
    match t.and_then(|t| Timestamp::try_from(t).ok()) {
        Some(t) => time_element(t, precision),
        None => html! { "–" },
    }
}

/// [`time`] for nanoseconds since the Unix epoch, as spans record them.
pub fn time_nanos(nanos: u64, precision: Precision) -> Markup {
    match Timestamp::from_nanosecond(i128::from(nanos)) {
        Ok(t) => time_element(t, precision),
        Err(_) => html! { "–" },
    }
}

fn time_element(t: Timestamp, precision: Precision) -> Markup {
    let exact = t.to_string();
    html! { time datetime=(exact) title=(exact) { (human_time(t, precision)) } }
}

/// `2026-01-31 13:45:07 UTC`, or `2026-01-31 13:45:07.123 UTC` to the
/// millisecond (truncated, never rounded up into the next second). ui.js
/// writes the seconds form for the rows it adds.
pub fn human_time(t: Timestamp, precision: Precision) -> String {
    let format = match precision {
        Precision::Seconds => "%Y-%m-%d %H:%M:%S UTC",
        Precision::Millis => "%Y-%m-%d %H:%M:%S%.3f UTC",
    };
    t.strftime(format).to_string()
}

/// The header of a traces table; [`trace_row`] writes its rows. Its
/// caption names the table and its scrolling region, so it should differ
/// from the heading of the section around it (two landmarks with one
/// name are ambiguous). The
/// overview's live script builds rows with the same columns.
pub fn traces_table(id: &str, caption: &str, records: &[&StoredResult], empty: &str) -> Markup {
    html! {
        div class="table-wrap" role="region" tabindex="0" aria-labelledby={ (id) "-caption" } {
            table id=(id) {
                caption id={ (id) "-caption" } class="visually-hidden" { (caption) }
                thead {
                    tr {
                        th scope="col" { "Trace" }
                        th scope="col" { "Evaluated at" }
                        th scope="col" { "Service" }
                        th scope="col" { "Root span" }
                        th scope="col" { "Status" }
                        th scope="col" { "Scores" }
                    }
                }
                tbody {
                    @for r in records { (trace_row(r)) }
                    @if records.is_empty() {
                        tr class="empty" { td colspan="6" { (empty) } }
                    }
                }
            }
        }
    }
}

/// One trace as a table row: `data-trace-id` and a link to its page are
/// the browser test's handle on it.
pub fn trace_row(r: &StoredResult) -> Markup {
    let id = r.trace_id.to_hex();
    let root = r.root.as_ref();
    html! {
        tr data-trace-id=(id) data-failing=(trace_fails(r)) {
            th scope="row" { a href={ "/ui/traces/" (id) } { code { (id) } } }
            td { (time(r.evaluated_at, Precision::Seconds)) }
            td { (root.and_then(|r| r.service.as_deref()).unwrap_or("–")) }
            td { (root.map_or("–", |r| r.name.as_str())) }
            td { (r.status.as_str()) }
            td {
                ul class="scores" {
                    @for s in &r.scores {
                        li {
                            span class="ev" { (&*s.evaluator_id) } ": "
                            strong { (score_text(s.outcome.score, s.outcome.score_is_int)) } " "
                            (verdict(s))
                        }
                    }
                    @if r.scores.is_empty() { li { "no scores" } }
                }
            }
        }
    }
}

/// The most text one `<pre>` or value block shows; past it the block ends
/// with a link to the full value in the JSON API ([`capped`]).
pub const BLOCK_MAX: usize = 64 * 1024;

/// Indentation stops growing past this depth, so a value nested a hundred
/// deep does not multiply the page by its depth.
const MAX_INDENT_DEPTH: usize = 8;

/// A value's text for a page, at most `max` bytes (cut at a character
/// boundary); `truncated` says whether anything was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    pub text: String,
    pub truncated: bool,
}

/// `text` cut to at most `max` bytes, at a character boundary.
pub fn cut(text: &str, max: usize) -> Shown {
    if text.len() <= max {
        return Shown {
            text: text.to_owned(),
            truncated: false,
        };
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Shown {
        text: text[..end].to_owned(),
        truncated: true,
    }
}

/// JSON pretty-printed with indentation capped at [`MAX_INDENT_DEPTH`],
/// written until `max` bytes: the work, not only the page, is bounded.
pub fn pretty(v: &serde_json::Value, max: usize) -> Shown {
    use serde::Serialize;
    let mut w = CappedWriter {
        buf: Vec::with_capacity(max.min(4096)),
        max,
        full: false,
    };
    let mut ser = serde_json::Serializer::with_formatter(&mut w, CappedIndent::default());
    // The only error is the writer's "full": what was written is kept.
    let _ = v.serialize(&mut ser);
    let full = w.full;
    let mut buf = w.buf;
    if let Err(e) = std::str::from_utf8(&buf) {
        buf.truncate(e.valid_up_to());
    }
    Shown {
        text: String::from_utf8(buf).unwrap_or_default(),
        truncated: full,
    }
}

/// A writer that takes `max` bytes, then fails.
struct CappedWriter {
    buf: Vec<u8>,
    max: usize,
    full: bool,
}

impl std::io::Write for CappedWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let room = self.max.saturating_sub(self.buf.len());
        if data.len() > room {
            self.buf.extend_from_slice(&data[..room]);
            self.full = true;
            return Err(std::io::Error::other("block full"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// serde_json's pretty formatter, two spaces a level up to
/// [`MAX_INDENT_DEPTH`] levels.
#[derive(Default)]
struct CappedIndent {
    depth: usize,
    has_value: bool,
}

impl CappedIndent {
    fn indent<W: ?Sized + std::io::Write>(&self, w: &mut W) -> std::io::Result<()> {
        const SPACES: &[u8] = &[b' '; 2 * MAX_INDENT_DEPTH];
        w.write_all(&SPACES[..2 * self.depth.min(MAX_INDENT_DEPTH)])
    }

    fn open<W: ?Sized + std::io::Write>(&mut self, w: &mut W, c: &[u8]) -> std::io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(c)
    }

    fn close<W: ?Sized + std::io::Write>(&mut self, w: &mut W, c: &[u8]) -> std::io::Result<()> {
        self.depth = self.depth.saturating_sub(1);
        if self.has_value {
            w.write_all(b"\n")?;
            self.indent(w)?;
        }
        w.write_all(c)
    }

    fn item<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        w.write_all(if first { b"\n" } else { b",\n" })?;
        self.indent(w)
    }
}

impl serde_json::ser::Formatter for CappedIndent {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"[")
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"]")
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.item(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"{")
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"}")
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.item(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// A shown block's text, then, if it was cut, where the whole value is:
/// `api_path` is a path of the JSON API (`/traces/{id}`).
pub fn block(shown: &Shown, api_path: &str) -> Markup {
    html! {
        (shown.text)
        @if shown.truncated {
            "\n" span class="truncated" {
                "… truncated: the full value is at " a href=(api_path) { "GET " (api_path) }
            }
        }
    }
}

/// Percent-encodes a query value (evaluator ids and search fields are
/// free text).
pub fn urlencode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

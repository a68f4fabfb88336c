//! The overview (`/ui/`): "are our agents getting worse?" Traces evaluated
//! per minute, each evaluator's score distribution, share below threshold
//! and errors over the last hour, and the newest traces and failing ones.
//! The figures come from one bounded `list` call; the page's script keeps
//! the tables, counts and charts live from `GET /v1/watch` (the charts'
//! counts are in `data-*` attributes, bucketed here and there alike).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};

use super::layout::{self, Nav, Precision, trace_fails, traces_table};
use super::{UiError, html_page};
use crate::api::http::ApiState;
use crate::evaluator::Status;
use crate::store::{ListFilter, StoredResult};

/// How far back the overview looks.
pub const WINDOW: Duration = Duration::from_secs(3600);
/// The most records the overview reads: its one `list` call stays bounded
/// whatever the traffic.
pub const MAX_RECORDS: usize = 1000;
/// Rows in each traces table.
const TABLE_ROWS: usize = 25;
/// Score buckets: 0–0.1, …, 0.9–1.0.
const BUCKETS: usize = 10;
/// Slots of the per-minute chart.
const MINUTES: usize = (WINDOW.as_secs() / 60) as usize;

/// One evaluator's figures over the window.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct EvaluatorStats {
    /// Scores of this evaluator (any status).
    pub count: u32,
    /// `ok` scores by bucket; a score of 1.0 (or above) is in the last.
    pub buckets: [u32; BUCKETS],
    /// Scores that have a threshold (`passed` known).
    pub with_threshold: u32,
    /// Of those, below it.
    pub below: u32,
    pub errors: u32,
}

/// The overview's figures: a pure function of the records and the time.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// The earliest time the figures cover: the window's start, or the
    /// oldest record read when [`MAX_RECORDS`] cut the list short.
    pub since: SystemTime,
    pub now: SystemTime,
    /// True when the list hit [`MAX_RECORDS`].
    pub truncated: bool,
    /// Traces evaluated in each of the last [`MINUTES`] clock minutes,
    /// oldest first; the last is the current minute, `last_minute`.
    pub per_minute: Vec<u32>,
    /// Minutes since the Unix epoch of `per_minute`'s last slot. Whole
    /// clock minutes, not minutes back from `now`, so the live script can
    /// put a new trace in the same slot the server would.
    pub last_minute: u64,
    pub evaluators: BTreeMap<String, EvaluatorStats>,
    pub traces: usize,
    pub failing: usize,
}

impl Stats {
    /// Figures for `records` (newest first, as `list` returns them).
    pub fn of(records: &[Arc<StoredResult>], now: SystemTime, truncated: bool) -> Stats {
        let start = now.checked_sub(WINDOW).unwrap_or(SystemTime::UNIX_EPOCH);
        let last_minute = epoch_minute(now);
        let mut per_minute = vec![0u32; MINUTES];
        let mut evaluators: BTreeMap<String, EvaluatorStats> = BTreeMap::new();
        let mut oldest = now;
        for r in records {
            if let Some(at) = r.evaluated_at {
                oldest = oldest.min(at);
                // A trace evaluated after `now` (between it and the list) is
                // in the current minute.
                if let Some(slot) = minute_slot(last_minute, epoch_minute(at).min(last_minute))
                    .and_then(|i| per_minute.get_mut(i))
                {
                    *slot += 1;
                }
            }
            for s in &r.scores {
                let e = evaluators.entry(s.evaluator_id.to_string()).or_default();
                e.count += 1;
                if s.outcome.status == Status::Error {
                    e.errors += 1;
                }
                if let (Status::Ok, Some(v)) = (s.outcome.status, s.outcome.score) {
                    let b = ((v.clamp(0.0, 1.0) * BUCKETS as f64) as usize).min(BUCKETS - 1);
                    e.buckets[b] += 1;
                }
                if let Some(p) = s.outcome.passed {
                    e.with_threshold += 1;
                    e.below += u32::from(!p);
                }
            }
        }
        Stats {
            since: if truncated { oldest.max(start) } else { start },
            now,
            truncated,
            per_minute,
            last_minute,
            evaluators,
            traces: records.len(),
            failing: records.iter().filter(|r| trace_fails(r)).count(),
        }
    }
}

/// Whole minutes since the Unix epoch (0 before it).
fn epoch_minute(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 60)
}

/// The chart's slot for `minute` when its last slot is `last`; `None`
/// outside the chart. ui.js's `minuteSlot` is the same.
fn minute_slot(last: u64, minute: u64) -> Option<usize> {
    let back = usize::try_from(last.checked_sub(minute)?).ok()?;
    (MINUTES - 1).checked_sub(back)
}

/// `GET /ui/`.
pub async fn handler(State(st): State<Arc<ApiState>>) -> Result<Response, UiError> {
    let now = SystemTime::now();
    let filter = ListFilter {
        since: now.checked_sub(WINDOW),
        limit: MAX_RECORDS,
        ..ListFilter::default()
    };
    let records = crate::store::list(&st.store, filter).await?;
    let mut stats = Stats::of(&records, now, records.len() >= MAX_RECORDS);
    // Loaded evaluators with nothing in the window still get a row.
    for id in st.binder.catalog.evaluators.keys() {
        stats.evaluators.entry(id.clone()).or_default();
    }
    Ok(html_page(
        StatusCode::OK,
        layout::page(
            "Overview",
            Nav::Overview,
            st.ui_auth.is_some(),
            render(&stats, &records),
        ),
    ))
}

/// The page body.
pub fn render(stats: &Stats, records: &[Arc<StoredResult>]) -> Markup {
    let recent: Vec<&StoredResult> = records.iter().take(TABLE_ROWS).map(|r| &**r).collect();
    let failing: Vec<&StoredResult> = records
        .iter()
        .filter(|r| trace_fails(r))
        .take(TABLE_ROWS)
        .map(|r| &**r)
        .collect();
    html! {
        h1 { "Overview" }
        p class="window" {
            @if stats.truncated {
                "The newest " (MAX_RECORDS) " results, stored since " (layout::time(Some(stats.since), Precision::Seconds))
                " (the last hour holds more than that)."
            } @else {
                "Results stored in the last hour, since " (layout::time(Some(stats.since), Precision::Seconds)) "."
            }
            " "
            span class="live" { "Updates: " span id="live-status" { "connecting…" } }
        }
        div id="live-announce" class="visually-hidden" aria-live="polite" {}
        section aria-labelledby="h-volume" {
            h2 id="h-volume" { "Traces evaluated per minute" }
            p {
                strong id="trace-count" { (stats.traces) } " traces, "
                strong id="failing-count" { (stats.failing) } " with a failing score."
            }
            (per_minute_chart(stats))
        }
        section aria-labelledby="h-evaluators" {
            h2 id="h-evaluators" { "Evaluators" }
            (evaluators_table(stats))
        }
        section aria-labelledby="h-failing" {
            h2 id="h-failing" { "Newest failing traces" }
            p class="hint" { "A trace fails when any score is below its evaluator's threshold or is an error." }
            (traces_table("failing-traces", &format!("Failing traces, newest first (at most {TABLE_ROWS})"), &failing, "No failing trace in this window."))
        }
        section aria-labelledby="h-recent" {
            h2 id="h-recent" { "Newest traces" }
            (traces_table("recent-traces", &format!("All traces, newest first (at most {TABLE_ROWS})"), &recent, "No trace in this window yet."))
        }
    }
}

/// A bar per minute, as SVG (geometry attributes, not inline styles, so
/// the page's CSP holds); its label says the figures in words. The counts
/// and the last slot's minute are in `data-*` attributes, from which the
/// live script redraws the bars as traces arrive and minutes pass.
fn per_minute_chart(stats: &Stats) -> Markup {
    let counts = &stats.per_minute;
    let peak = counts.iter().copied().max().unwrap_or(0);
    let total: u32 = counts.iter().sum();
    let label = format!(
        "Bar chart: {total} traces in the last {} minutes, at most {peak} in one minute.",
        counts.len()
    );
    let now_ms = stats
        .now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let first = (stats.last_minute + 1).saturating_sub(counts.len() as u64);
    html! {
        figure class="chart" {
            p class="hint" { "Peak: " span id="peak" { (peak) } " per minute." }
            svg id="per-minute" role="img" aria-label=(label) viewBox="0 0 100 40" preserveAspectRatio="none" width="100%" height="80"
                data-counts=(data_counts(counts)) data-last-minute=(stats.last_minute) data-now-ms=(now_ms) {
                (bars(counts, 40.0, |i| minute_text(first + i as u64)))
            }
            figcaption { "60 minutes ago → now (UTC clock minutes)" }
        }
    }
}

/// `HH:MM UTC` of a minute since the epoch, as ui.js writes it.
fn minute_text(minute: u64) -> String {
    i64::try_from(minute.saturating_mul(60))
        .ok()
        .and_then(|s| jiff::Timestamp::from_second(s).ok())
        .map_or_else(String::new, |t| t.strftime("%H:%M UTC").to_string())
}

/// Counts for a `data-counts` attribute: `"0 3 1 …"`.
fn data_counts(counts: &[u32]) -> String {
    counts
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A bar per count in a `0 0 100 height` view box, each titled
/// `"{slot}: {count}"`; ui.js's `drawBars` draws the same.
fn bars(counts: &[u32], height: f64, slot: impl Fn(usize) -> String) -> Markup {
    let max = counts.iter().copied().max().unwrap_or(0).max(1);
    let width = 100.0 / counts.len().max(1) as f64;
    html! {
        rect class="track" x="0" y="0" width="100" height=(height) {}
        @for (i, &c) in counts.iter().enumerate() {
            @let h = height * f64::from(c) / f64::from(max);
            rect class="bar" x=(format!("{:.3}", i as f64 * width)) y=(format!("{:.3}", height - h))
                width=(format!("{:.3}", width * 0.8)) height=(format!("{h:.3}")) {
                title { (slot(i)) ": " (c) }
            }
        }
    }
}

/// One row per evaluator: count, distribution, share below threshold,
/// errors. The cells the live script updates carry `data-stat`.
fn evaluators_table(stats: &Stats) -> Markup {
    html! {
        div class="table-wrap" role="region" tabindex="0" aria-labelledby="evaluators-caption" {
            table id="evaluators" {
                caption id="evaluators-caption" class="visually-hidden" { "Scores per evaluator in this window" }
                thead {
                    tr {
                        th scope="col" { "Evaluator" }
                        th scope="col" { "Scores" }
                        th scope="col" { "Distribution (0 → 1)" }
                        th scope="col" { "Below threshold" }
                        th scope="col" { "Errors" }
                    }
                }
                tbody {
                    @for (id, e) in &stats.evaluators {
                        tr data-evaluator-id=(id) data-count=(e.count) data-below=(e.below)
                            data-with-threshold=(e.with_threshold) data-errors=(e.errors) {
                            th scope="row" { a href={ "/ui/search?evaluator=" (layout::urlencode(id)) } { (id) } }
                            td data-stat="count" { (e.count) }
                            td { (distribution(&e.buckets)) }
                            td data-stat="threshold" {
                                @if e.with_threshold == 0 {
                                    "no threshold"
                                } @else {
                                    (e.below) " of " (e.with_threshold) " (" (percent(e.below, e.with_threshold)) ")"
                                }
                            }
                            td data-stat="errors" { (e.errors) }
                        }
                    }
                    @if stats.evaluators.is_empty() {
                        tr class="empty" { td colspan="5" { "No evaluator is loaded." } }
                    }
                }
            }
        }
    }
}

/// Ten bars, 0–0.1 … 0.9–1.0, with the counts in the label and in
/// `data-counts` for the live script.
fn distribution(buckets: &[u32; BUCKETS]) -> Markup {
    let label = buckets
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{}: {c}", bucket_text(i)))
        .collect::<Vec<_>>()
        .join(", ");
    html! {
        svg class="dist" role="img" aria-label={ "Scores by bucket: " (label) } viewBox="0 0 100 20" preserveAspectRatio="none" width="160" height="24"
            data-counts=(data_counts(buckets)) {
            (bars(buckets, 20.0, bucket_text))
        }
    }
}

/// `0.3–0.4`, as ui.js writes it.
fn bucket_text(i: usize) -> String {
    format!("{}–{}", bucket_edge(i), bucket_edge(i + 1))
}

fn bucket_edge(i: usize) -> String {
    format!("{:.1}", i as f64 / BUCKETS as f64)
}

fn percent(part: u32, whole: u32) -> String {
    if whole == 0 {
        return "–".into();
    }
    format!("{:.0} %", 100.0 * f64::from(part) / f64::from(whole))
}

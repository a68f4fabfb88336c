//! The UI's pages through its router (`oneshot`), and its pure parts:
//! escaping, mismatch marks, search validation, the overview's figures.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::json;
use tower::ServiceExt;

use super::explain::repr::{calls_to_dicts, embed, py_repr};
use super::overview::Stats;
use super::search::{self, Parsed};
use crate::api::http::ApiState;
use crate::evaluator::{EvaluatorType, Status};
use crate::span::{SpanId, TraceId};
use crate::store::StoredCall;
use crate::store::{
    Details, ListFilter, MemoryStore, ReadError, ResultOrWait, ResultStore, RootSummary, Score,
    StoredOutcome, StoredResult, TraceStatus,
};

const XSS: &str = "<script>alert(1)</script>";

fn state(store: Arc<dyn ResultStore>) -> Arc<ApiState> {
    crate::api::http::test_state(store, crate::api::ApiConfig::default())
}

fn score(
    id: &str,
    kind: EvaluatorType,
    value: f64,
    passed: Option<bool>,
    details: serde_json::Value,
) -> Score {
    Score {
        evaluator_id: id.into(),
        evaluator_type: kind,
        outcome: StoredOutcome {
            status: Status::Ok,
            score: Some(value),
            score_is_int: false,
            details: Details::from(details),
            error: None,
            passed,
            threshold: passed.map(|_| 0.8),
        },
    }
}

fn call(n: u8, name: &str, args: serde_json::Value, output: &str) -> StoredCall {
    StoredCall::shown(
        name,
        None,
        &args,
        output,
        SpanId([n; 8]),
        (1_000 + u64::from(n) * 100, 1_050 + u64::from(n) * 100),
    )
}

/// A trace whose names, arguments and output carry markup, scored by the
/// args evaluator with one differing argument and one tool not called.
fn record(id: u8) -> StoredResult {
    let mut r = StoredResult::pending(TraceId([id; 16]));
    r.status = TraceStatus::Evaluated;
    r.complete = true;
    r.revision = 1;
    r.evaluated_at = Some(SystemTime::now());
    r.root = Some(RootSummary {
        span_id: SpanId([9; 8]),
        name: XSS.into(),
        service: Some(format!("svc{XSS}")),
        start_time_unix_nano: 1_000,
        end_time_unix_nano: 2_000,
    });
    r.tool_calls = vec![
        call(1, "get_weather", json!({"city": "Paris"}), "sunny"),
        call(2, "get_forecast", json!({"city": "Paris", "days": 3}), XSS),
        call(3, XSS, json!({XSS: XSS}), "x"),
    ]
    .into();
    r.span_count = 4;
    r.scores = vec![score(
        "args<b>",
        EvaluatorType::Args,
        0.3333,
        Some(false),
        json!({
            "expected": "[ToolCall(name='get_weather', args={'city': 'Paris'}, id=None), ToolCall(name='get_forecast', args={'city': 'Paris', 'days': 5}, id=None), ToolCall(name='send_email', args={'to': 'a(b)=c'}, id=None)]",
            "actual": "[ToolCall(name='get_weather', args={'city': 'Paris'}, id=None), ToolCall(name='get_forecast', args={'city': 'Paris', 'days': 3}, id=None)]",
            "explained_tool_calls_args": {
                "get_weather_0": "Actual: {'city': 'Paris'}, Expected: {'city': 'Paris'}, Score: 1.0",
                "get_forecast_0": "Actual: {'city': 'Paris', 'days': 3}, Expected: {'city': 'Paris', 'days': 5}, Score: 0.0"
            }
        }),
    )];
    r
}

fn memory_with(records: Vec<StoredResult>) -> Arc<dyn ResultStore> {
    let store = MemoryStore::new(100, Duration::from_secs(3600), 16);
    for r in records {
        store.put(r, Instant::now());
    }
    Arc::new(store)
}

async fn get(st: Arc<ApiState>, uri: &str) -> (StatusCode, axum::http::HeaderMap, String) {
    let resp = super::router(st)
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let body = axum::body::to_bytes(resp.into_body(), 1 << 24)
        .await
        .unwrap();
    (status, headers, String::from_utf8(body.to_vec()).unwrap())
}

#[tokio::test]
async fn trace_data_is_escaped_on_every_page() {
    let st = state(memory_with(vec![record(1)]));
    let id = TraceId([1; 16]).to_hex();
    for uri in [
        "/ui/".to_owned(),
        format!("/ui/traces/{id}"),
        "/ui/search".to_owned(),
    ] {
        let (status, headers, body) = get(st.clone(), &uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}");
        assert!(!body.contains(XSS), "{uri} has the raw markup");
        assert!(!body.contains("args<b>"), "{uri}");
        assert!(
            body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{uri}"
        );
        let csp = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"));
        assert_eq!(headers[header::CONTENT_TYPE], "text/html; charset=utf-8");
        // No inline script: every <script> has a src.
        assert_eq!(
            body.matches("<script").count(),
            body.matches("<script src=").count()
        );
        assert!(body.contains(r#"<html lang="en">"#));
        assert!(body.contains(r#"<a href="/ui/""#) && body.contains(r#"<a href="/ui/search""#));
    }
}

#[tokio::test]
async fn trace_page_follows_the_dom_contract_and_marks_mismatches() {
    let st = state(memory_with(vec![record(1)]));
    let (status, _, body) = get(st, &format!("/ui/traces/{}", TraceId([1; 16]).to_hex())).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains(r#"<ol id="tool-calls""#));
    let names: Vec<&str> = body
        .split(r#"data-tool-name=""#)
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .collect();
    assert_eq!(
        names,
        [
            "get_weather",
            "get_forecast",
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        ]
    );
    assert!(body.contains(
        r#"<section class="score" data-evaluator-id="args&lt;b&gt;" data-status="ok" data-passed="false""#
    ));
    assert!(body.contains(r#"<strong class="score-value">0.3333</strong>"#));
    // The differing argument, and the tool never called.
    assert!(
        body.contains(r#"<mark class="mismatch"><code>3</code></mark>"#),
        "{body}"
    );
    assert!(body.contains(r#"<mark class="mismatch"><code>send_email</code></mark>"#));
    assert!(body.contains(r#"<mark class="mismatch">not called</mark>"#));
    // The matching call is not marked.
    assert_eq!(body.matches(r#"class="mismatch""#).count(), 3, "{body}");
    assert!(body.contains("<details class=\"raw\">"));
}

#[test]
fn count_and_order_mark_what_differs() {
    let mut r = record(2);
    r.scores = vec![
        score(
            "count",
            EvaluatorType::Count,
            0.5,
            None,
            json!({
                "expected": "{'get_weather': ('=', 1), 'get_forecast': ('>=', 1)}",
                "actual": "{'get_weather': 2, 'get_forecast': 1}",
                "explained_tool_calls_count": {
                    "get_weather": "Actual: 2, Expected: 1, Score: 0.0",
                    "get_forecast": "Actual: 1, Expected: 1, Score: 1.0"
                }
            }),
        ),
        score(
            "order",
            EvaluatorType::Order,
            0.6667,
            None,
            json!({
                "expected": "['get_forecast', 'get_weather', 'send_email']",
                "actual": "['get_weather', 'get_forecast', 'get_weather']",
                "lcs": ["get_forecast", "get_weather"]
            }),
        ),
    ];
    let binder = crate::criteria::Binder::default();
    let html = super::trace::render(&r, &binder).unwrap().into_string();
    assert!(
        html.contains(r#"<mark class="mismatch">get_weather</mark></th>"#),
        "{html}"
    );
    assert!(html.contains(r#"<mark class="mismatch">2</mark>"#));
    assert!(!html.contains(r#"<mark class="mismatch">get_forecast</mark></th>"#));
    assert!(html.contains(r#"<mark class="mismatch">send_email</mark>"#));
    // In the actual order, the first get_weather is outside the LCS.
    let actual = html.split("Actual order").nth(1).unwrap();
    assert!(
        actual.starts_with(
            r#"</h4><ol class="sequence"><li><mark class="mismatch">get_weather</mark>"#
        ),
        "{actual}"
    );
}

#[test]
fn tool_call_reprs_become_literals() {
    let text = "[ToolCall(name='a(b=c)', args={'x': (1, 2), 'y': \"it's\"}, id=None), ToolOutput(name='o', output='ToolCall(x=1)', id='7')]";
    assert_eq!(
        calls_to_dicts(text),
        "[{'name': 'a(b=c)', 'args': {'x': (1, 2), 'y': \"it's\"}, 'id': None}, {'name': 'o', 'output': 'ToolCall(x=1)', 'id': '7'}]"
    );
    let v = py_repr(text).unwrap();
    assert_eq!(v.py_str().matches("'name'").count(), 2);
    assert!(py_repr("{'k': 1e5, 'j': True}").is_some());
    assert_eq!(
        embed(
            &["a".into(), "b".into(), "a".into()],
            &["b".into(), "a".into()]
        ),
        [false, true, true]
    );
}

fn form(pairs: &[(&str, &str)]) -> search::Form {
    let (form, errors) = search::read_form(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    );
    assert!(errors.is_empty());
    form
}

#[test]
fn search_parameters_are_validated_per_field() {
    let Err(errors) = search::parse(
        &form(&[
            ("trace_id", "xyz"),
            ("min_score", "0.9"),
            ("max_score", "0.1"),
            ("status", "done"),
            ("since", "2026-02-01T00:00"),
            ("until", "2026-01-01T00:00"),
            ("limit", "5000"),
        ]),
        1000,
    ) else {
        panic!("accepted");
    };
    let fields: Vec<&str> = errors.keys().copied().collect();
    assert_eq!(
        fields,
        ["limit", "max_score", "status", "trace_id", "until"]
    );
    assert!(search::parse(&form(&[("min_score", "NaN")]), 10).is_err());
    assert!(search::parse(&form(&[("since", "yesterday")]), 10).is_err());

    let (_, repeated) = search::read_form(vec![
        ("limit".into(), "1".into()),
        ("limit".into(), "2".into()),
    ]);
    assert!(repeated.contains_key("limit"));

    let Ok(Parsed::List(f)) = search::parse(
        &form(&[
            ("service", " weather "),
            ("evaluator", ""),
            ("min_score", "0.25"),
            ("since", "2026-01-31T13:45"),
            ("until", "2026-01-31T13:45:30"),
            ("status", "timed_out"),
            ("unknown", "ignored"),
        ]),
        1000,
    ) else {
        panic!("refused");
    };
    assert_eq!(f.service.as_deref(), Some("weather"));
    assert_eq!(f.evaluator, None);
    assert_eq!(f.min_score, Some(0.25));
    assert_eq!(f.status, Some(TraceStatus::TimedOut));
    assert_eq!(f.limit, 50);
    // datetime-local is read as UTC.
    let since = f
        .since
        .unwrap()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap();
    assert_eq!(since.as_secs(), 1_769_867_100);
    assert_eq!(
        f.until
            .unwrap()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
        1_769_867_130
    );

    let id = TraceId([3; 16]);
    assert!(matches!(
        search::parse(&form(&[("trace_id", &id.to_hex()), ("limit", "x")]), 10),
        Ok(Parsed::Trace(t)) if t == id
    ));
}

#[tokio::test]
async fn the_status_field_offers_every_status_and_keeps_the_chosen_one() {
    let st = state(memory_with(vec![record(1)]));
    let (status, _, body) = get(st, "/ui/search?status=timed_out").await;
    assert_eq!(status, StatusCode::OK);
    for name in ["pending", "evaluated", "unbound"] {
        assert!(
            body.contains(&format!(r#"<option value="{name}">{name}</option>"#)),
            "{name}"
        );
    }
    assert!(body.contains(r#"<option value="timed_out" selected>timed_out</option>"#));
}

#[tokio::test]
async fn search_page_answers_400_with_the_form_or_redirects_to_a_trace() {
    let st = state(memory_with(vec![record(1)]));
    let (status, _, body) = get(st.clone(), "/ui/search?min_score=abc&service=%3Cb%3E").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains(r#"<form id="search" method="get" action="/ui/search""#));
    assert!(body.contains(r#"id="f-min_score-error""#));
    assert!(
        body.contains(r#"value="&lt;b&gt;""#),
        "the input is shown again, escaped"
    );
    assert!(!body.contains(r#"id="results""#));
    for name in search::FIELDS {
        assert!(body.contains(&format!(r#"name="{name}""#)), "{name}");
        assert!(
            body.contains(&format!(r#"<label for="f-{name}""#)),
            "{name}"
        );
    }

    let id = TraceId([1; 16]).to_hex();
    let (status, headers, _) = get(st.clone(), &format!("/ui/search?trace_id={id}")).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(
        headers[header::LOCATION],
        format!("/ui/traces/{id}").as_str()
    );

    let (status, _, body) = get(
        st,
        "/ui/search?service=svc%3Cscript%3Ealert(1)%3C%2Fscript%3E",
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains(&format!(r#"<tr data-trace-id="{id}""#)));
    assert!(body.contains(r#"<table id="results">"#));
    assert!(body.contains(
        r#"<a href="/ui/search?service=svc%3Cscript%3Ealert%281%29%3C%2Fscript%3E">Link to this search</a>"#
    ));
}

#[test]
fn the_link_to_a_search_leaves_out_empty_fields() {
    let f = form(&[
        ("max_score", "0.5"),
        ("trace_id", ""),
        ("service", " test agent "),
        ("root_name", "  "),
        ("evaluator", "a&b=c"),
        ("unknown", "x"),
    ]);
    assert_eq!(
        search::canonical_url(&f),
        "/ui/search?service=test+agent&evaluator=a%26b%3Dc&max_score=0.5"
    );
    assert_eq!(search::canonical_url(&form(&[("limit", "")])), "/ui/search");
}

#[tokio::test]
async fn errors_are_html_pages_with_their_status() {
    let st = state(memory_with(vec![]));
    let (status, _, body) = get(st.clone(), "/ui/traces/not-an-id").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("<h1>Bad request</h1>"));
    let (status, _, _) = get(st.clone(), &format!("/ui/traces/{}", "ab".repeat(16))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, headers, _) = get(st.clone(), "/ui").await;
    assert_eq!(status, StatusCode::PERMANENT_REDIRECT);
    assert_eq!(headers[header::LOCATION], "/ui/");

    let broken = state(Arc::new(Unreadable));
    for uri in [
        "/ui/",
        "/ui/search?limit=5",
        "/ui/traces/abababababababababababababababab",
    ] {
        let (status, _, body) = get(broken.clone(), uri).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{uri}");
        assert!(!body.contains("disk on fire"), "no internal detail");
    }
}

#[tokio::test]
async fn assets_have_their_types_and_a_cache_lifetime() {
    let st = state(memory_with(vec![]));
    let (_, _, page) = get(st.clone(), "/ui/").await;
    for (asset, ty) in [
        (super::assets::JS, "text/javascript"),
        (super::assets::CSS, "text/css"),
    ] {
        let url = asset.url();
        assert!(page.contains(&url), "{url}");
        let (status, headers, body) = get(st.clone(), &url).await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            headers[header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with(ty)
        );
        assert!(
            headers[header::CACHE_CONTROL]
                .to_str()
                .unwrap()
                .contains("max-age")
        );
        assert_eq!(body, asset.body);
    }
    let (status, _, _) = get(st, "/ui/assets/secret.txt").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn overview_has_the_tables_and_live_status() {
    let mut failing = record(1);
    failing.evaluated_at = Some(SystemTime::now() - Duration::from_secs(30));
    let mut passing = record(2);
    passing.scores[0].outcome.passed = Some(true);
    let st = state(memory_with(vec![failing, passing]));
    let (status, _, body) = get(st, "/ui/").await;
    assert_eq!(status, StatusCode::OK);
    let recent = body.split(r#"<table id="recent-traces">"#).nth(1).unwrap();
    let failing_table = body
        .split(r#"<table id="failing-traces">"#)
        .nth(1)
        .unwrap()
        .split("</table>")
        .next()
        .unwrap();
    let (one, two) = (TraceId([1; 16]).to_hex(), TraceId([2; 16]).to_hex());
    assert!(recent.contains(&format!(r#"<tr data-trace-id="{two}""#)));
    assert!(recent.contains(&format!(r#"<a href="/ui/traces/{one}">"#)));
    assert!(failing_table.contains(&one) && !failing_table.contains(&two));
    assert!(body.contains(r#"id="live-status""#));
    assert!(body.contains(r#"aria-live="polite""#));
    // The charts' counts, for the live script to redraw from (the two
    // traces are 30 s apart: in one clock minute or two).
    let attr = |text: &str, name: &str| -> String {
        let rest = text.split(&format!(r#"{name}=""#)).nth(1).unwrap();
        rest.split('"').next().unwrap().to_owned()
    };
    let chart = body.split(r#"<svg id="per-minute""#).nth(1).unwrap();
    let counts: Vec<u32> = attr(chart, "data-counts")
        .split(' ')
        .map(|c| c.parse().unwrap())
        .collect();
    assert_eq!((counts.len(), counts.iter().sum::<u32>()), (60, 2));
    let peak = counts.iter().max().unwrap();
    assert!(body.contains(&format!(r#"<span id="peak">{peak}</span>"#)));
    assert!(attr(chart, "data-last-minute").parse::<u64>().is_ok());
    assert!(attr(chart, "data-now-ms").parse::<u64>().is_ok());
    assert!(
        body.contains(r#"data-counts="0 0 0 2 0 0 0 0 0 0""#),
        "both score 0.3333"
    );
    // Each table's caption says more than its section's heading, and names
    // its scrolling region.
    for (id, h2) in [
        (
            "failing-traces",
            r#"<h2 id="h-failing">Newest failing traces</h2>"#,
        ),
        ("recent-traces", r#"<h2 id="h-recent">Newest traces</h2>"#),
    ] {
        assert!(body.contains(h2));
        let heading = h2.split(['>', '<']).nth(2).unwrap();
        assert!(body.contains(&format!(r#"aria-labelledby="{id}-caption""#)));
        let caption = body
            .split(&format!(
                r#"<caption id="{id}-caption" class="visually-hidden">"#
            ))
            .nth(1)
            .and_then(|c| c.split('<').next())
            .unwrap();
        assert_ne!(caption, heading);
    }
}

#[test]
fn overview_figures_bucket_scores_and_minutes() {
    // 30 s into a clock minute: the chart's slots are clock minutes.
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_030);
    let mut a = record(1);
    a.evaluated_at = Some(now - Duration::from_secs(90));
    a.scores[0].outcome.score = Some(1.0);
    a.scores[0].outcome.passed = Some(true);
    let mut b = record(2);
    b.evaluated_at = Some(now - Duration::from_secs(20));
    b.scores[0].outcome.score = Some(0.05);
    let mut c = record(3);
    c.evaluated_at = Some(now + Duration::from_secs(40));
    c.scores[0].outcome.status = Status::Error;
    c.scores[0].outcome.score = None;
    c.scores[0].outcome.passed = None;
    let mut d = record(4);
    d.evaluated_at = Some(now - Duration::from_secs(59 * 60 + 30));
    let mut e = record(5);
    e.evaluated_at = Some(now - Duration::from_secs(59 * 60 + 31));
    let records: Vec<_> = [c, b, a, d, e].into_iter().map(Arc::new).collect();
    let stats = Stats::of(&records, now, false);
    let e = &stats.evaluators["args<b>"];
    assert_eq!((e.count, e.errors, e.with_threshold, e.below), (5, 1, 4, 3));
    assert_eq!(e.buckets[0], 1);
    assert_eq!(e.buckets[3], 2);
    assert_eq!(e.buckets[9], 1);
    assert_eq!(stats.last_minute, 30_000_000);
    assert_eq!(stats.per_minute.len(), 60);
    assert_eq!(
        stats.per_minute[59], 2,
        "20 s ago, and c (evaluated after `now`, in the next minute)"
    );
    assert_eq!(stats.per_minute[58], 1, "90 s ago: the previous minute");
    assert_eq!(stats.per_minute[0], 1, "59½ minutes ago: the first slot");
    assert_eq!(stats.per_minute.iter().sum::<u32>(), 4, "e is before it");
    assert_eq!((stats.traces, stats.failing), (5, 4));
}

#[test]
fn times_read_alike_on_every_page() {
    use super::layout::{Precision, human_time, time_nanos};
    let t = jiff::Timestamp::from_nanosecond(1_763_800_000_123_999_999).unwrap();
    assert_eq!(
        human_time(t, Precision::Millis),
        "2025-11-22 08:26:40.123 UTC"
    );
    assert_eq!(human_time(t, Precision::Seconds), "2025-11-22 08:26:40 UTC");
    assert_eq!(
        time_nanos(1_763_800_000_120_000_000, Precision::Millis).into_string(),
        r#"<time datetime="2025-11-22T08:26:40.12Z" title="2025-11-22T08:26:40.12Z">2025-11-22 08:26:40.120 UTC</time>"#
    );
}

/// A store whose database cannot be read.
struct Unreadable;

impl ResultStore for Unreadable {
    fn mark_pending_many(&self, _: &[TraceId], _: Instant) {}
    fn put(&self, _: StoredResult, _: Instant) -> Option<Arc<StoredResult>> {
        None
    }
    fn get(&self, _: &TraceId) -> Option<Arc<StoredResult>> {
        None
    }
    fn list(&self, _: &ListFilter) -> Vec<Arc<StoredResult>> {
        Vec::new()
    }
    fn try_get(&self, _: &TraceId) -> Result<Option<Arc<StoredResult>>, ReadError> {
        Err(ReadError("disk on fire".into()))
    }
    fn try_list(&self, _: &ListFilter) -> Result<Vec<Arc<StoredResult>>, ReadError> {
        Err(ReadError("disk on fire".into()))
    }
    fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Arc<StoredResult>> {
        tokio::sync::broadcast::channel(1).1
    }
    fn result_or_wait(&self, _: TraceId) -> ResultOrWait {
        ResultOrWait::Wait(tokio::sync::oneshot::channel().1)
    }
    fn evict_expired(&self, _: Instant) -> usize {
        0
    }
    fn evicted(&self) -> u64 {
        0
    }
    fn len(&self) -> usize {
        0
    }
    fn set_on_stored(&self, _: crate::store::OnStored) {}
}

#[test]
fn blocks_are_capped_and_indentation_stops_growing() {
    use super::layout::{cut, pretty};
    // 100 arrays deep: indentation stops at 8 levels.
    let mut v = json!("leaf");
    for _ in 0..100 {
        v = json!([v]);
    }
    let shown = pretty(&v, 1 << 20);
    assert!(!shown.truncated);
    let widest = shown
        .text
        .lines()
        .map(|l| l.len() - l.trim_start().len())
        .max();
    assert_eq!(widest, Some(16));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&shown.text).unwrap(),
        v
    );
    // A large value stops at the cap, at a character boundary.
    let big = json!(vec!["é"; 100_000]);
    let shown = pretty(&big, 1000);
    assert!(shown.truncated && shown.text.len() <= 1000);
    let shown = cut(&"é".repeat(10), 5);
    assert_eq!((shown.text.as_str(), shown.truncated), ("éé", true));
}

#[tokio::test]
async fn a_huge_argument_gives_a_bounded_page_with_a_link_to_the_whole() {
    let mut arg = json!(vec![1234567; 40_000]);
    for _ in 0..100 {
        arg = json!([arg]);
    }
    let mut r = record(7);
    r.tool_calls = (0..100)
        .map(|n| call(n, "big", json!({"x": arg.clone()}), &"o".repeat(100_000)))
        .collect();
    let st = state(memory_with(vec![r]));
    let id = TraceId([7; 16]).to_hex();
    let (status, _, body) = get(st, &format!("/ui/traces/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.len() < 3 << 20, "{} bytes", body.len());
    assert!(body.contains(&format!(
        r#"… truncated: the full value is at <a href="/traces/{id}">GET /traces/{id}</a>"#
    )));
}

fn explained_calls(kind: EvaluatorType, details: serde_json::Value) -> String {
    let mut r = record(3);
    r.scores = vec![score("ev", kind, 0.0, Some(false), details)];
    super::trace::render(&r, &crate::criteria::Binder::default())
        .unwrap()
        .into_string()
}

#[test]
fn strict_output_rows_follow_the_evaluators_entries() {
    // Strict mode stops at the first failed attempt: the later call that
    // agrees was never compared, so the row is not "matches".
    let html = explained_calls(
        EvaluatorType::Output,
        json!({
            "expected": "[ToolOutput(name='get_weather', output='sunny', id=None)]",
            "actual": "[ToolOutput(name='get_weather', output='rain', id=None), ToolOutput(name='get_weather', output='sunny', id=None)]",
            "explained_tool_calls_outputs": {"get_weather_0": "Actual: rain, Expected: sunny, Score: 0.0"}
        }),
    );
    assert!(!html.contains("✓ matches"), "{html}");
    assert!(html.contains("✗ differs"));
    assert!(html.contains(r#"<mark class="mismatch">rain</mark>"#));
    // Strict mode after a passing attempt: only the failure is written,
    // so the entries are listed as they are.
    let html = explained_calls(
        EvaluatorType::Output,
        json!({
            "expected": "[ToolOutput(name='a', output='1', id=None), ToolOutput(name='b', output='2', id=None)]",
            "actual": "[ToolOutput(name='a', output='1', id=None), ToolOutput(name='b', output='3', id=None)]",
            "explained_tool_calls_outputs": {"b_0": "Actual: 3, Expected: 2, Score: 0.0"}
        }),
    );
    assert!(!html.contains("✓ matches"), "{html}");
    assert!(html.contains("<code>b_0</code>"));
    let only = explained_calls(
        EvaluatorType::Output,
        json!({
            "expected": "[ToolOutput(name='a', output='1', id=None)]",
            "actual": "[ToolOutput(name='b', output='1', id=None)]",
            "explained_tool_calls_outputs": {"_result": "No matching actual tool call found for expected a"}
        }),
    );
    assert!(only.contains("ⓘ No matching actual tool call found for expected a"));
    assert!(!only.contains("class=\"compare\""), "{only}");
}

#[test]
fn calls_the_evaluator_compared_are_not_listed_as_other_calls() {
    let html = explained_calls(
        EvaluatorType::Args,
        json!({
            "expected": "[ToolCall(name='get_weather', args={'city': 'Paris'}, id=None)]",
            "actual": "[ToolCall(name='get_weather', args={'city': 'Rome'}, id=None), ToolCall(name='get_weather', args={'city': 'Paris'}, id=None), ToolCall(name='other', args={}, id=None)]",
            "explained_tool_calls_args": {
                "get_weather_0": "Actual: {'city': 'Rome'}, Expected: {'city': 'Paris'}, Score: 0.0",
                "get_weather_1": "Actual: {'city': 'Paris'}, Expected: {'city': 'Paris'}, Score: 1.0"
            }
        }),
    );
    assert!(html.contains("✓ matches"));
    let others = html.split("Other calls").nth(1).unwrap();
    let others = others.split("</p>").next().unwrap();
    assert!(others.contains("<code>other</code>"));
    assert!(!others.contains("get_weather"), "{others}");
}

#[test]
fn count_and_order_match_sanitised_names_as_the_evaluators_do() {
    let mut r = record(4);
    r.tool_calls = vec![call(1, "get_weather", json!({}), "")].into();
    r.scores = vec![
        score(
            "count",
            EvaluatorType::Count,
            1.0,
            None,
            json!({
                "expected": "{'get weather': ('=', 1), 'get forecast': ('=', 0)}",
                "actual": "{'get_weather': 1}",
                "explained_tool_calls_count": {
                    "get weather": "Actual: 1, Expected: 1, Score: 1.0"
                }
            }),
        ),
        score(
            "order",
            EvaluatorType::Order,
            1.0,
            None,
            json!({
                "expected": "['get weather']",
                "actual": "['get_weather']",
                "lcs": ["get weather"]
            }),
        ),
    ];
    let binder = crate::criteria::Binder::default();
    let html = super::trace::render(&r, &binder).unwrap().into_string();
    assert!(
        html.contains(
            r#"<td data-label="Actual">1</td><td class="result" data-label="Result">✓ as expected"#
        ),
        "{html}"
    );
    assert!(!html.contains("count differs"));
    assert!(!html.contains("not in the expected order"), "{html}");
}

#[test]
fn search_times_parse_alike_and_come_back_in_the_inputs_format() {
    use search::{datetime_local, parse_utc};
    let t = |s: &str| parse_utc(s).map(|t| jiff::Timestamp::try_from(t).unwrap().to_string());
    let want = Some("2026-01-31T13:45:00Z".to_owned());
    for s in [
        "2026-01-31T13:45",
        "2026-01-31T13:45:00",
        "2026-01-31T13:45:00Z",
        "2026-01-31T13:45:00z",
        "2026-01-31t13:45:00z",
        "2026-01-31T14:45:00+01:00",
    ] {
        assert_eq!(t(s), want, "{s}");
    }
    assert!(parse_utc("9999-12-31T23:59").is_some());
    assert_eq!(parse_utc("2026-02-31T00:00"), None);
    assert_eq!(
        datetime_local("1732250000").as_deref(),
        Some("2024-11-22T04:33:20")
    );
    assert_eq!(
        datetime_local("2026-01-31T14:45:00+01:00").as_deref(),
        Some("2026-01-31T13:45:00")
    );
    assert_eq!(datetime_local("soon"), None);
    let Err(errors) = search::parse(&form(&[("trace_id", &"0".repeat(32))]), 10) else {
        panic!("accepted");
    };
    assert!(errors["trace_id"].contains("all zeros"), "{errors:?}");
}

#[tokio::test]
async fn search_form_keeps_valid_filters_and_shows_invalid_ones() {
    let st = state(memory_with(vec![]));
    let (_, _, body) = get(st.clone(), "/ui/search?since=1732250000").await;
    assert!(
        body.contains(r#"name="since" type="datetime-local" value="2024-11-22T04:33:20""#),
        "{body}"
    );
    let (status, _, body) = get(st, "/ui/search?min_score=abc&until=soon").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains(r#"name="min_score" type="text" inputmode="decimal" value="abc""#));
    assert!(body.contains(r#"name="until" type="text" value="soon""#));
}

#[tokio::test]
async fn an_unknown_asset_is_not_sniffed() {
    let st = state(memory_with(vec![]));
    let (status, headers, _) = get(st, "/ui/assets/nope.js").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
}

/// The UI behind the HTTP API's token guard, as `app/serve.rs` joins them: a
/// `read` token (`reader`) and an `evaluate`-only one (`writer`).
fn signed_in_ui(ttl: Duration) -> (tempfile::TempDir, axum::Router) {
    use crate::auth::{AuthConfig, Guard, HttpGuard, Scope, Sessions, TokenConfig, Tokens};
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        Some(p)
    };
    let tokens = Tokens::load(&AuthConfig {
        tokens: vec![
            TokenConfig {
                name: "ui".into(),
                file: file("read", "reader\n"),
                env: None,
                scopes: vec![Scope::Read],
            },
            TokenConfig {
                name: "ci".into(),
                file: file("evaluate", "writer\n"),
                env: None,
                scopes: vec![Scope::Evaluate],
            },
        ],
        reload_interval_secs: 30,
    })
    .unwrap();
    let guard = Guard::new(Arc::new(tokens), "api_http", Default::default());
    let sessions = Arc::new(Sessions::new(ttl, 10, false, Default::default()));
    let mut st = state(memory_with(vec![record(1)]));
    Arc::get_mut(&mut st).unwrap().ui_auth = Some(crate::auth::UiAuth {
        guard: guard.clone(),
        sessions: sessions.clone(),
    });
    let http_guard = Arc::new(HttpGuard {
        guard,
        // As security::api_http_scope says: the sign-in page is open,
        // the rest of the UI needs `read`.
        scope_of: Box::new(|_, path| {
            (!matches!(path, "/ui/sign-in" | "/ui/sign-out")).then_some(Scope::Read)
        }),
        refuse: crate::api::http::refuse_auth,
        sessions: Some(sessions),
    });
    let app = super::router(st).layer(axum::middleware::from_fn_with_state(
        http_guard,
        crate::auth::http_guard,
    ));
    (dir, app)
}

async fn send(
    app: &axum::Router,
    req: Request<Body>,
) -> (StatusCode, axum::http::HeaderMap, String) {
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let body = axum::body::to_bytes(resp.into_body(), 1 << 24)
        .await
        .unwrap();
    (status, headers, String::from_utf8(body.to_vec()).unwrap())
}

/// A sign-in form post, with a header saying where it comes from.
fn sign_in(token: &str, from: Option<(&str, &str)>) -> Request<Body> {
    let mut req = Request::post("/ui/sign-in")
        .header(header::HOST, "toolscore.test:8080")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    if let Some((name, value)) = from {
        req = req.header(name, value);
    }
    req.body(Body::from(format!("token={token}"))).unwrap()
}

fn page_with(uri: &str, cookie: &str) -> Request<Body> {
    Request::get(uri)
        .header(header::COOKIE, cookie)
        .body(Body::empty())
        .unwrap()
}

#[tokio::test]
async fn with_tokens_a_browser_signs_in_with_a_read_token_and_out_again() {
    let (_dir, app) = signed_in_ui(Duration::from_secs(600));
    let location = |h: &axum::http::HeaderMap| h[header::LOCATION].to_str().unwrap().to_owned();

    // No session: every page goes to the sign-in page, which is open.
    let (status, h, _) = send(
        &app,
        page_with("/ui/traces/01010101010101010101010101010101", "x=1"),
    )
    .await;
    assert!(status.is_redirection(), "{status}");
    assert_eq!(location(&h), "/ui/sign-in");
    let (status, h, body) = send(
        &app,
        Request::get("/ui/sign-in").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(h[header::CONTENT_SECURITY_POLICY], super::CSP);
    assert!(
        body.contains(r#"type="password""#) && body.contains(r#"action="/ui/sign-in""#),
        "{body}"
    );
    assert!(!body.contains("Sign out"), "not signed in yet: {body}");

    // Wrong token, a token without `read`, an empty form, another site's form.
    for (token, origin, want) in [
        ("nope", None, StatusCode::UNAUTHORIZED),
        ("writer", None, StatusCode::FORBIDDEN),
        ("", None, StatusCode::UNAUTHORIZED),
        (
            "reader",
            Some(("origin", "https://evil.example")),
            StatusCode::FORBIDDEN,
        ),
        ("reader", Some(("origin", "null")), StatusCode::FORBIDDEN),
        (
            "reader",
            Some(("sec-fetch-site", "cross-site")),
            StatusCode::FORBIDDEN,
        ),
        (
            "reader",
            Some(("sec-fetch-site", "same-site")),
            StatusCode::FORBIDDEN,
        ),
    ] {
        let (status, h, body) = send(&app, sign_in(token, origin)).await;
        assert_eq!(status, want, "{token:?} from {origin:?}: {body}");
        assert!(h.get(header::SET_COOKIE).is_none(), "{token:?}: no session");
        assert!(
            body.contains(r#"role="alert""#),
            "{token:?}: the reason is shown: {body}"
        );
    }

    // Not a form.
    let json = Request::post("/ui/sign-in")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(r#"{"token":"reader"}"#))
        .unwrap();
    let (status, h, _) = send(&app, json).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(h.get(header::SET_COOKIE).is_none());
    // Another browser's same-origin post, and a client that is no browser.
    for origin in [
        Some(("sec-fetch-site", "same-origin")),
        Some(("origin", "http://toolscore.test:8080")),
        None,
    ] {
        let (status, _, _) = send(&app, sign_in("reader", origin)).await;
        assert_eq!(status, StatusCode::SEE_OTHER, "{origin:?}");
    }
    // The read token: a session cookie, never the token, then the overview.
    let (status, h, _) = send(
        &app,
        sign_in("reader", Some(("origin", "http://toolscore.test:8080"))),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(location(&h), "/ui/");
    let set = h[header::SET_COOKIE].to_str().unwrap().to_owned();
    assert!(set.starts_with("toolscore_session="), "{set}");
    assert!(
        set.contains("; HttpOnly; SameSite=Strict; Max-Age=600"),
        "{set}"
    );
    assert!(!set.contains("Secure"), "plain HTTP: {set}");
    assert!(!set.contains("reader"), "{set}");
    let cookie = set.split(';').next().unwrap().to_owned();
    let (status, _, body) = send(&app, page_with("/ui/", &cookie)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        body.contains(r#"action="/ui/sign-out""#),
        "a sign-out button: {body}"
    );
    let (status, _, body) = send(
        &app,
        page_with("/ui/traces/01010101010101010101010101010101", &cookie),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // The session is the UI's alone: the JSON API still wants the token.
    let (status, _, _) = send(&app, page_with("/v1/traces", &cookie)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // Signed out: the cookie is cleared and no longer opens a page.
    let out = Request::post("/ui/sign-out")
        .header(header::COOKIE, &cookie)
        .body(Body::empty())
        .unwrap();
    let (status, h, _) = send(&app, out).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(location(&h), "/ui/sign-in");
    assert!(
        h[header::SET_COOKIE]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );
    let (status, h, _) = send(&app, page_with("/ui/", &cookie)).await;
    assert!(status.is_redirection(), "{status}");
    assert_eq!(location(&h), "/ui/sign-in");
}

#[tokio::test]
async fn without_tokens_the_sign_in_page_leads_to_the_overview() {
    let st = state(memory_with(vec![]));
    let (status, h, _) = get(st.clone(), "/ui/sign-in").await;
    assert!(status.is_redirection(), "{status}");
    assert_eq!(h[header::LOCATION], "/ui/");
    let (_, _, body) = get(st, "/ui/").await;
    assert!(!body.contains("Sign out"), "{body}");
}

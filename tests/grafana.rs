//! The Grafana dashboard, `deploy/grafana/toolscore.json`: a dashboard
//! Grafana can load (uid, variables, placed panels), the Helm chart's copy
//! identical to it, and every series its PromQL queries one that exists —
//! on the real service's `/metrics` after traffic of every kind the
//! dashboard shows (spans, deterministic and LLM-judged evaluations, a
//! provider budget spent, results in SQLite and exported), or, for the
//! score metrics toolscore exports over OTLP, among the names the
//! Collector's Prometheus exporter gives what the service really exported.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZero;
use std::path::PathBuf;
use std::time::Duration;

use common::llm_stub::Stub;
use common::service::{self, export};
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::metrics::v1::{Metric, metric};
use regex::Regex;
use serde_json::{Value as Json, json};
use tokio::sync::mpsc;
use toolscore::config::{Config, InlineEvaluator, StoreBackend};
use toolscore::evaluator::Status;
use toolscore::exporter::metrics::{EVALUATIONS_COUNTER, SCORE_HISTOGRAM};
use toolscore::span::TraceId;

const DASHBOARD: &str = "deploy/grafana/toolscore.json";
/// The chart's copy (Helm reads only files inside the chart).
const CHART_COPY: &str = "deploy/helm/toolscore/files/toolscore.json";
const WAIT: Duration = Duration::from_secs(20);

fn path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative)
}

fn dashboard() -> Json {
    let text = std::fs::read_to_string(path(DASHBOARD)).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{DASHBOARD}: {e}"))
}

/// Every panel, those inside rows included.
fn panels(dashboard: &Json) -> Vec<&Json> {
    let mut out = Vec::new();
    for p in dashboard["panels"].as_array().expect("panels") {
        out.push(p);
        out.extend(p["panels"].as_array().into_iter().flatten());
    }
    out
}

/// Every PromQL query: the panels' `targets[].expr` and the query
/// variables' queries, each with where it comes from.
fn queries(dashboard: &Json) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for p in panels(dashboard) {
        for t in p["targets"].as_array().into_iter().flatten() {
            let expr = t["expr"].as_str().unwrap_or_else(|| {
                panic!("panel {}: a target without expr", p["title"]);
            });
            out.push((format!("panel {} {}", p["title"], t["refId"]), expr.into()));
        }
    }
    for v in dashboard["templating"]["list"].as_array().unwrap() {
        if v["type"] == "query" {
            let q = v["query"]["query"]
                .as_str()
                .or(v["query"].as_str())
                .unwrap();
            out.push((format!("variable {}", v["name"]), q.into()));
        }
    }
    out
}

#[test]
fn the_dashboard_has_its_uid_variables_and_placed_panels() {
    let d = dashboard();
    assert_eq!(d["uid"], "toolscore");
    assert_eq!(d["title"], "toolscore");
    let schema = d["schemaVersion"].as_u64().unwrap();
    assert!((36..=41).contains(&schema), "schemaVersion {schema}");
    let vars: BTreeMap<&str, &Json> = d["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["name"].as_str().unwrap(), v))
        .collect();
    assert_eq!(vars["datasource"]["type"], "datasource");
    assert_eq!(vars["datasource"]["query"], "prometheus");
    assert_eq!(vars["evaluator"]["type"], "query");
    assert_eq!(vars["evaluator"]["datasource"]["uid"], "${datasource}");

    let all = panels(&d);
    assert!(all.len() > 20, "only {} panels", all.len());
    let mut ids = BTreeSet::new();
    let mut placed: Vec<(&str, [u64; 4])> = Vec::new();
    for p in &all {
        let title = p["title"].as_str().unwrap_or_default();
        assert!(!title.is_empty(), "a panel without a title: {p}");
        assert!(
            ids.insert(p["id"].as_u64().unwrap()),
            "{title}: id used twice"
        );
        let g = &p["gridPos"];
        let [x, y, w, h] = ["x", "y", "w", "h"].map(|k| {
            g[k].as_u64()
                .unwrap_or_else(|| panic!("{title}: gridPos.{k} missing"))
        });
        assert!(w > 0 && h > 0 && x + w <= 24, "{title}: gridPos {g}");
        for (other, [ox, oy, ow, oh]) in &placed {
            let apart = x + w <= *ox || *ox + ow <= x || y + h <= *oy || *oy + oh <= y;
            assert!(apart, "{title} overlaps {other}");
        }
        placed.push((title, [x, y, w, h]));
        if p["type"] == "row" {
            continue;
        }
        assert_eq!(p["datasource"]["uid"], "${datasource}", "{title}");
        assert!(
            p["description"].as_str().is_some_and(|s| !s.is_empty()),
            "{title}: no description"
        );
        let targets = p["targets"].as_array().unwrap();
        assert!(!targets.is_empty(), "{title}: no targets");
        let refs: BTreeSet<&str> = targets
            .iter()
            .map(|t| t["refId"].as_str().unwrap())
            .collect();
        assert_eq!(refs.len(), targets.len(), "{title}: refIds repeat");
        for t in targets {
            assert_eq!(t["datasource"]["uid"], "${datasource}", "{title}");
        }
    }
    // Every variable a query uses is defined, or one of Grafana's own.
    let var = Regex::new(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)").unwrap();
    for (at, q) in queries(&d) {
        for m in var.captures_iter(&q) {
            let name = &m[1];
            assert!(
                vars.contains_key(name) || name.starts_with("__"),
                "{at}: ${name} is not a variable of the dashboard"
            );
        }
    }
}

#[test]
fn the_charts_copy_is_the_dashboard_byte_for_byte() {
    let original = std::fs::read(path(DASHBOARD)).unwrap();
    let copy = std::fs::read(path(CHART_COPY)).unwrap();
    assert!(
        original == copy,
        "{CHART_COPY} differs from {DASHBOARD}: cp {DASHBOARD} {CHART_COPY}"
    );
}

// ---- what a query names ------------------------------------------------

/// The metric and label names one PromQL expression uses (and the labels
/// its legend shows). Label names are read from matchers (`{a="…"}`),
/// grouping (`by (a, b)`, `without`, `on`, `ignoring`, `group_*`) and
/// `label_values(metric, a)`; metric names are the `toolscore_*` words
/// left once those are taken out.
fn names_in(expr: &str, legend: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let strings = Regex::new(r#""(?:[^"\\]|\\.)*""#).unwrap();
    let matchers = Regex::new(r"\{([^}]*)\}").unwrap();
    let matcher_label = Regex::new(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)").unwrap();
    let grouping =
        Regex::new(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)").unwrap();
    let label_values = Regex::new(
        r"label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)",
    )
    .unwrap();
    let metric = Regex::new(r"\btoolscore_[a-z0-9_]+\b").unwrap();
    let legend_label = Regex::new(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}").unwrap();

    let mut labels = BTreeSet::new();
    let expr = strings.replace_all(expr, "\"\"");
    for m in matchers.captures_iter(&expr) {
        labels.extend(matcher_label.captures_iter(&m[1]).map(|c| c[1].to_owned()));
    }
    let expr = matchers.replace_all(&expr, "");
    for m in grouping.captures_iter(&expr) {
        labels.extend(
            m[1].split(',')
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_owned),
        );
    }
    let expr = grouping.replace_all(&expr, "");
    for m in label_values.captures_iter(&expr) {
        labels.insert(m[2].to_owned());
    }
    let expr = label_values.replace_all(&expr, "$1");
    labels.extend(legend_label.captures_iter(legend).map(|c| c[1].to_owned()));
    let metrics = metric
        .find_iter(&expr)
        .map(|m| m.as_str().to_owned())
        .collect();
    (metrics, labels)
}

#[test]
fn names_are_read_from_promql_as_prometheus_means_them() {
    let (metrics, labels) = names_in(
        r#"histogram_quantile(0.99, sum by (le, provider) (rate(toolscore_llm_request_seconds_bucket{provider=~"toolscore_x", toolscore_evaluation_result!="pass"}[$__rate_interval]))) / on (instance) group_left (toolscore_y) toolscore_z_total"#,
        "{{provider}} {{ gen_ai_evaluation_name }}",
    );
    assert_eq!(
        metrics,
        BTreeSet::from([
            "toolscore_llm_request_seconds_bucket".to_owned(),
            "toolscore_z_total".to_owned()
        ])
    );
    assert_eq!(
        labels,
        [
            "le",
            "provider",
            "toolscore_evaluation_result",
            "instance",
            "toolscore_y",
            "gen_ai_evaluation_name"
        ]
        .map(str::to_owned)
        .into()
    );
    let (metrics, labels) = names_in(
        "label_values(toolscore_evaluation_results_total, evaluator)",
        "",
    );
    assert_eq!(
        metrics,
        BTreeSet::from(["toolscore_evaluation_results_total".to_owned()])
    );
    assert_eq!(labels, BTreeSet::from(["evaluator".to_owned()]));
}

// ---- what the service exposes -------------------------------------------

/// Each sample name of the `/metrics` text with the label names its
/// samples carry.
fn scraped_series(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    let exposition = common::metrics::parse(text).unwrap_or_else(|e| panic!("/metrics: {e}"));
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for sample in exposition.samples {
        out.entry(sample.name)
            .or_default()
            .extend(sample.labels.into_keys());
    }
    out
}

/// The name the Collector's `prometheus` exporter (and
/// `prometheusremotewrite`) gives an OTLP metric or attribute with its
/// defaults (`add_metric_suffixes: true`, no `namespace`): every character
/// outside `[A-Za-z0-9_:]` becomes `_`.
fn underscored(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The Prometheus series of an exported OTLP metric, with their label
/// names: a histogram's `_bucket` (with `le`), `_sum`, `_count`; a
/// monotonic sum's `_total`. Its unit adds no suffix: "1" adds one only to a
/// gauge (`_ratio`), an annotation (`{evaluation}`) none; any other unit
/// would, which this does not translate.
fn exported_series(m: &Metric) -> Vec<(String, BTreeSet<String>)> {
    assert!(
        m.unit.is_empty() || m.unit == "1" || (m.unit.starts_with('{') && m.unit.ends_with('}')),
        "{}: unit {:?} would add a suffix; translate it here",
        m.name,
        m.unit
    );
    let base = underscored(&m.name);
    let keys = |attrs: &[opentelemetry_proto::tonic::common::v1::KeyValue]| -> BTreeSet<String> {
        attrs.iter().map(|kv| underscored(&kv.key)).collect()
    };
    match m.data.as_ref().unwrap() {
        metric::Data::Histogram(h) => {
            let labels: BTreeSet<String> = h
                .data_points
                .iter()
                .flat_map(|p| keys(&p.attributes))
                .collect();
            let mut bucket = labels.clone();
            bucket.insert("le".into());
            vec![
                (format!("{base}_bucket"), bucket),
                (format!("{base}_sum"), labels.clone()),
                (format!("{base}_count"), labels),
            ]
        }
        metric::Data::Sum(s) => {
            assert!(s.is_monotonic, "{}: a non-monotonic sum is a gauge", m.name);
            let labels = s
                .data_points
                .iter()
                .flat_map(|p| keys(&p.attributes))
                .collect();
            let name = base.strip_suffix("_total").unwrap_or(&base);
            vec![(format!("{name}_total"), labels)]
        }
        other => panic!("{}: {other:?} is not translated here", m.name),
    }
}

// ---- an OTLP metrics sink, standing in for the Collector ---------------

struct Sink(mpsc::Sender<ExportMetricsServiceRequest>);

#[tonic::async_trait]
impl MetricsService for Sink {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        let _ = self.0.send(request.into_inner()).await;
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}

/// Serves OTLP metrics on an ephemeral port until the runtime ends.
async fn metrics_sink() -> (String, mpsc::Receiver<ExportMetricsServiceRequest>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel(64);
    let server = tonic::transport::Server::builder()
        .add_service(
            MetricsServiceServer::new(Sink(tx))
                .accept_compressed(tonic::codec::CompressionEncoding::Gzip),
        )
        .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener));
    tokio::spawn(server);
    (endpoint, rx)
}

// ---- traffic -----------------------------------------------------------

/// A tool-call count evaluator and a UiPath LLM judge on every trace, the
/// judge's provider (the stub) allowed 100 tokens a minute (one answer
/// spends it); results in SQLite; results exported, metrics only, to
/// `exporter_endpoint` every 100 ms.
fn config(stub: &Stub, dir: &std::path::Path, exporter_endpoint: String) -> Config {
    let mut config = service::test_config();
    config.store.backend = StoreBackend::Sqlite;
    config.store.sqlite.path = dir.join("results.db");
    config.llm = stub.config(dir);
    config
        .llm
        .providers
        .get_mut("uipath")
        .unwrap()
        .max_tokens_per_minute = Some(NonZero::new(100).unwrap());
    let judge =
        json!({"model": "gpt-4.1", "defaultEvaluationCriteria": {"expectedOutput": "sunny"}});
    config.evaluators.inline = vec![
        InlineEvaluator {
            id: "judge".into(),
            kind: "uipath-llm-judge-output-semantic-similarity".into(),
            config: judge.as_object().cloned().unwrap(),
            apply_to_all_traces: true,
        },
        service::count_evaluator(json!({"get_weather": ["=", 1]})),
    ];
    config.exporter.enabled = true;
    config.exporter.endpoint = exporter_endpoint;
    config.exporter.spans = false;
    config.exporter.logs = false;
    config.exporter.metrics_interval_ms = NonZero::new(100).unwrap();
    config.exporter.flush_timeout_ms = NonZero::new(1_000).unwrap();
    config
}

/// The real service after traffic of every kind the dashboard shows; every
/// series the dashboard queries is on its `/metrics` or among the exported
/// score metrics, with the labels the query uses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_series_the_dashboard_queries_exists() {
    let stub = Stub::start().await;
    stub.load(&json!({"responses": [common::llm_stub::answer(90), common::llm_stub::answer(90), common::llm_stub::answer(90)], "discovery": []}));
    let dir = tempfile::tempdir().unwrap();
    let (endpoint, mut exported) = metrics_sink().await;
    let running = service::start(config(&stub, dir.path(), endpoint)).await;
    let exporter = service::grpc_exporter(&running);

    // One trace judged (its answer spends the minute's 100 tokens), then
    // traces until a judge is refused by the budget: the next one, unless
    // a new minute began in between.
    let mut refused = false;
    for n in 1..=3 {
        export(&exporter, &service::weather_trace(n)).await;
        let r = service::wait_for(&running, TraceId([n; 16]), WAIT, service::judged).await;
        if n > 1 && r.scores.iter().any(|s| s.outcome.status == Status::Skipped) {
            refused = true;
            break;
        }
    }
    assert!(refused, "no judge was refused by the spent token budget");

    // The exported score metrics, once both have been sent.
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut sent: BTreeMap<String, Metric> = BTreeMap::new();
    while !(sent.contains_key(SCORE_HISTOGRAM) && sent.contains_key(EVALUATIONS_COUNTER)) {
        let request = tokio::time::timeout_at(deadline, exported.recv())
            .await
            .expect("the score metrics were not exported")
            .unwrap();
        for rm in request.resource_metrics {
            for sm in rm.scope_metrics {
                sent.extend(sm.metrics.into_iter().map(|m| (m.name.clone(), m)));
            }
        }
    }
    let mut series = BTreeMap::new();
    for m in sent.values() {
        series.extend(exported_series(m));
    }
    // The names the exporter's constants give (dots → underscores).
    for name in [
        format!("{}_bucket", underscored(SCORE_HISTOGRAM)),
        format!("{}_total", underscored(EVALUATIONS_COUNTER)),
    ] {
        assert!(
            series.contains_key(&name),
            "{name} not exported: {series:?}"
        );
    }

    let text = service::metrics_text(&running).await;
    running.stop().await.unwrap();
    let scraped = scraped_series(&text);
    for (name, labels) in scraped {
        assert!(
            !series.contains_key(&name),
            "{name} is both on /metrics and exported over OTLP"
        );
        series.insert(name, labels);
    }

    let d = dashboard();
    let mut legends: BTreeMap<String, String> = BTreeMap::new();
    for p in panels(&d) {
        for t in p["targets"].as_array().into_iter().flatten() {
            legends.insert(
                format!("panel {} {}", p["title"], t["refId"]),
                t["legendFormat"].as_str().unwrap_or_default().into(),
            );
        }
    }
    let mut queried = BTreeSet::new();
    let mut missing = Vec::new();
    for (at, expr) in queries(&d) {
        let legend = legends.get(&at).map_or("", String::as_str);
        let (metrics, labels) = names_in(&expr, legend);
        if metrics.is_empty() {
            missing.push(format!("{at}: queries no toolscore metric: {expr}"));
        }
        // Prometheus adds job and instance to every scraped or exported series.
        let mut known: BTreeSet<String> = ["job", "instance"].map(str::to_owned).into();
        let absent: Vec<&String> = metrics
            .iter()
            .filter(|m| !series.contains_key(*m))
            .collect();
        for m in &absent {
            missing.push(format!("{at}: {m} does not exist"));
        }
        for m in &metrics {
            known.extend(series.get(m).into_iter().flatten().cloned());
        }
        if absent.is_empty() {
            for l in labels.difference(&known) {
                missing.push(format!("{at}: no series of {metrics:?} has the label {l}"));
            }
        }
        queried.extend(metrics);
    }
    assert!(
        missing.is_empty(),
        "{}\n\nseries: {:#?}",
        missing.join("\n"),
        series.keys().collect::<Vec<_>>()
    );
    // The dashboard shows the exported scores, not only the service's own series.
    assert!(queried.contains(&format!("{}_bucket", underscored(SCORE_HISTOGRAM))));
    assert!(queried.contains(&format!("{}_total", underscored(EVALUATIONS_COUNTER))));
    println!(
        "{} series queried, all present: {:?}",
        queried.len(),
        queried
    );
}

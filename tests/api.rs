//! The HTTP API against the real service: traces sent with the SDK's OTLP
//! exporter, read back with an HTTP client, as a user would with curl.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::time::Duration;
use toolscore::listener::Listener;

use common::conformance::{self, Case};
use common::live::{case_otlp_json, case_rule, case_spans, trace_of};
use common::service::{self, export, test_config};
use serde_json::{Value as Json, json};

fn case<'a>(cases: &'a [Case], id: &str) -> &'a Case {
    cases.iter().find(|c| c.id == id).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scores_are_served_by_trace_id_with_long_poll() {
    let cases = conformance::load_cases();
    let picked = [
        case(&cases, "s1-00009-tool-correctness"),
        case(&cases, "s1-00000-tool-call-count"),
    ];
    let mut config = test_config();
    for c in picked {
        let (ev, rule) = case_rule(c);
        config.evaluators.inline.push(ev);
        config.rules.push(rule);
    }
    let running = service::start(config).await;
    let base = format!("http://{}", running.addr(Listener::ApiHttp).unwrap());
    let http = common::http();
    // Ask before sending: the long-poll waits for the result to land.
    let id = trace_of(picked[0]).to_hex();
    let poll = {
        let url = format!("{base}/traces/{id}/scores?wait_ms=10000");
        let http = http.clone();
        tokio::spawn(async move { http.get(url).send().await.unwrap() })
    };
    export(&service::grpc_exporter(&running), &case_spans(picked[0])).await;
    export(&service::http_exporter(&running), &case_spans(picked[1])).await;
    let resp = tokio::time::timeout(Duration::from_secs(15), poll)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: Json = resp.json().await.unwrap();
    assert_eq!(body["trace_id"], id.as_str());
    assert_eq!(body["status"], "evaluated");
    assert_eq!(body["complete"], true);
    assert_eq!(body["revision"], 1);
    assert_eq!(body["binding"]["source"], "rule");
    assert!(body["evaluated_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(body["root"]["service"], "test-agent");
    assert_eq!(
        body["scores"][0]["evaluator_type"],
        "deepeval-tool-correctness"
    );
    conformance::judge_json(picked[0], &body["scores"][0]).unwrap();
    assert_eq!(body["scores"][0]["passed"], false);

    let id1 = trace_of(picked[1]).to_hex();
    let body: Json = http
        .get(format!("{base}/traces/{id1}/scores?wait_ms=10000"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    conformance::judge_json(picked[1], &body["scores"][0]).unwrap();
    assert!(
        body["scores"][0].get("passed").is_none(),
        "no threshold, no passed"
    );

    // The trace view lists its tool calls.
    let trace: Json = http
        .get(format!("{base}/traces/{id1}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let calls = trace["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["name"], "x/y");
    assert_eq!(calls[0]["output"], "Sunny, 21°C");
    assert_eq!(calls[0]["span_id"], "552b82f6be3edc0a");

    // Listing: newest first, filtered.
    let list: Json = http
        .get(format!("{base}/traces?status=evaluated&limit=10"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["traces"].as_array().unwrap().len(), 2);
    let list: Json = http
        .get(format!(
            "{base}/traces?evaluator=ev-s1-00000-tool-call-count&max_score=0.5"
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["traces"].as_array().unwrap().len(), 1);
    assert_eq!(list["traces"][0]["trace_id"], id1.as_str());

    // Errors: unknown 404, malformed 400, in the error shape.
    let resp = http
        .get(format!("{base}/traces/{}/scores", "ab".repeat(16)))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let body: Json = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "not_found");
    let resp = http
        .get(format!("{base}/traces/xyz/scores"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(
        resp.json::<Json>().await.unwrap()["error"]["code"],
        "invalid_argument"
    );
    let resp = http
        .get(format!("{base}/traces?status=done"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    // Issue 15: `since=1e20` closed the connection (a panic in the
    // handler); `max_score=NaN` answered 200 with nothing.
    for (query, names) in [("since=1e20", "since"), ("max_score=NaN", "max_score")] {
        let resp = http
            .get(format!("{base}/traces?{query}"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400, "{query}");
        let body: Json = resp.json().await.unwrap();
        assert_eq!(body["error"]["code"], "invalid_argument", "{query}");
        assert!(
            body["error"]["message"].as_str().unwrap().contains(names),
            "{query}: {body}"
        );
    }
    // And the service still answers.
    let resp = http.get(format!("{base}/traces")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    running.stop().await.unwrap();
}

/// `POST /v1/evaluate` reproduces every conformance case, with the same pass
/// criteria as the core's test (an expected error may be a 400 refusal).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evaluate_endpoint_reproduces_every_conformance_case() {
    let cases = conformance::load_cases();
    let running = service::start(test_config()).await;
    let url = format!(
        "http://{}/v1/evaluate",
        running.addr(Listener::ApiHttp).unwrap()
    );
    let http = common::http();
    let (mut passed, mut failed) = (0, Vec::new());
    for c in &cases {
        let line: Json = serde_json::from_str(&c.line).unwrap();
        let mut body = case_otlp_json(c);
        body["evaluators"] =
            json!([{"id": "e", "type": c.evaluator_type, "config": line["evaluator"]["config"]}]);
        if !line["criteria"].is_null() {
            body["criteria"] = json!({"e": line["criteria"]});
        }
        let resp = http.post(&url).json(&body).send().await.unwrap();
        let status = resp.status().as_u16();
        let got: Json = resp.json().await.unwrap();
        let verdict = match status {
            200 => conformance::judge_json(c, &got["scores"][0]),
            400 if c.expected["score"].is_null() => Ok(()),
            other => Err(format!("HTTP {other}: {got}")),
        };
        match verdict {
            Ok(()) => passed += 1,
            Err(why) => failed.push(format!("{}: {why}", c.id)),
        }
    }
    println!("{passed} passed, {} failed", failed.len());
    assert!(failed.is_empty(), "{failed:#?}");

    // Invalid input names the JSON path.
    let resp = http
        .post(&url)
        .json(&json!({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let msg = resp.json::<Json>().await.unwrap()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        msg.contains("resourceSpans[0].scopeSpans[0].spans[0].traceId"),
        "{msg}"
    );
    let mut body = case_otlp_json(&cases[0]);
    body["evaluators"] = json!([{"id": "e", "type": "tool-call-count"}]);
    body["criteria"] = json!({"e": {"toolCallsCount": {"a": ["=", 1.5]}}});
    let resp = http.post(&url).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    let msg = resp.json::<Json>().await.unwrap()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        msg.contains("criteria.e") && msg.contains("toolCallsCount.a.1"),
        "{msg}"
    );
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_readiness_metrics_and_what_is_loaded() {
    let mut config = test_config();
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/uipath-weather-tools/evaluations"
    );
    config.evaluators.files = vec![format!("{example}/evaluators/*.json")];
    config.eval_sets.files = vec![format!("{example}/eval-sets/*.json")];
    let running = service::start(config).await;
    let base = format!("http://{}", running.addr(Listener::ApiHttp).unwrap());
    let http = common::http();
    assert_eq!(
        http.get(format!("{base}/healthz"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        http.get(format!("{base}/readyz"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );

    let evaluators: Json = http
        .get(format!("{base}/evaluators"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let list = evaluators["evaluators"].as_array().unwrap();
    assert_eq!(list.len(), 5);
    let trajectory = list
        .iter()
        .find(|e| e["id"] == "TrajectoryEvaluator")
        .unwrap();
    assert_eq!(trajectory["status"], "supported");
    assert_eq!(trajectory["llm_judged"], true);
    assert_eq!(trajectory["type"], "uipath-llm-judge-trajectory-similarity");
    let sets: Json = http
        .get(format!("{base}/eval-sets"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(sets["eval_sets"][0]["id"], "WeatherToolsEval");
    assert_eq!(sets["eval_sets"][0]["items"].as_array().unwrap().len(), 5);
    assert_eq!(sets["eval_sets"][0]["skipped_evaluators"], json!([]));

    // A weather trace bound by its item id, through OTLP/HTTP JSON.
    let eval_set: Json = serde_json::from_str(
        &std::fs::read_to_string(format!("{example}/eval-sets/default.json")).unwrap(),
    )
    .unwrap();
    let line = common::weather::traces_jsonl(&eval_set);
    let tokyo = line.lines().nth(4).unwrap().to_owned();
    let resp = http
        .post(format!(
            "http://{}/v1/traces",
            running.addr(Listener::OtlpHttp).unwrap()
        ))
        .header("content-type", "application/json")
        .body(tokyo)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: Json = http
        .get(format!(
            "{base}/traces/{:032x}/scores?wait_ms=10000",
            0x5ea7_0005_u128
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        body["binding"],
        json!({"source": "eval_set", "eval_set": "WeatherToolsEval", "item": "tokyo_forecast"})
    );
    // The sample's LLM judge (trajectory.json) runs too; with no model
    // provider configured its score is an error saying so, at once.
    let scores: Vec<(String, Option<f64>)> = body["scores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["status"].as_str().unwrap().to_owned(),
                s["score"].as_f64(),
            )
        })
        .collect();
    let ok = |v| ("ok".to_owned(), Some(v));
    assert_eq!(
        scores,
        vec![("error".into(), None), ok(1.0), ok(1.0), ok(1.0), ok(1.0)],
        "{body}"
    );
    let judge = &body["scores"][0];
    assert_eq!(
        judge["evaluator_type"],
        "uipath-llm-judge-trajectory-similarity"
    );
    assert!(
        judge["error"]
            .as_str()
            .unwrap()
            .contains("no `uipath` provider is configured"),
        "{judge}"
    );

    // /metrics is Prometheus text and names every pipeline metric.
    let text = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let scrape = common::metrics::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let names = scrape.names();
    for want in [
        "toolscore_spans_received_total",
        "toolscore_spans_accepted_total",
        "toolscore_traces_total",
        "toolscore_assembler_buffered_traces",
        "toolscore_assembler_buffered_bytes",
        "toolscore_assembler_queue_depth",
        "toolscore_evaluation_queue_depth",
        "toolscore_evaluation_seconds_count",
        "toolscore_root_to_scores_seconds_count",
        "toolscore_evaluation_results_total",
        "toolscore_store_evicted_total",
        "toolscore_store_traces",
    ] {
        assert!(
            names.contains(want),
            "{want} missing from /metrics: {names:?}"
        );
    }
    for help in [
        "toolscore_spans_rejected",
        "toolscore_requests_refused",
        "toolscore_spans_duplicate",
    ] {
        assert!(
            scrape.help.get(help).is_some_and(|h| !h.is_empty()),
            "{help} is not described"
        );
    }
    running.stop().await.unwrap();
}

/// A gRPC client watching scores sees a new trace's result and its revision
/// after a late span, from the real service.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_scores_streams_new_and_revised_results() {
    use toolscore::api::grpc::pb;
    let mut config = test_config();
    config
        .evaluators
        .inline
        .push(service::count_evaluator(serde_json::json!({"a": ["=", 1]})));
    let running = service::start(config).await;
    let mut client = pb::scores_service_client::ScoresServiceClient::connect(format!(
        "http://{}",
        running.addr(Listener::ApiGrpc).unwrap()
    ))
    .await
    .unwrap();
    let mut stream = client
        .watch_scores(pb::WatchScoresRequest {
            evaluator: Some("count".into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let t = service::now_ns();
    let span = |id: u8, parent: Option<u8>, start: u64| service::SpanSpec {
        trace_id: [42; 16],
        span_id: [0, 0, 0, 0, 0, 0, 42, id],
        parent: parent.map(|p| [0, 0, 0, 0, 0, 0, 42, p]),
        name: if parent.is_some() {
            "a".into()
        } else {
            "agent".into()
        },
        start_ns: start,
        end_ns: start + 10,
        attributes: if parent.is_some() {
            vec![opentelemetry::KeyValue::new("tool.name", "a")]
        } else {
            vec![]
        },
    };
    let exporter = service::grpc_exporter(&running);
    export(&exporter, &[span(1, None, t), span(2, Some(1), t + 1)]).await;
    let first = tokio::time::timeout(Duration::from_secs(10), stream.message())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(first.trace_id, "2a".repeat(16));
    assert_eq!(first.revision, 1);
    assert_eq!(first.scores[0].score, Some(1.0));
    export(&exporter, &[span(3, Some(1), t + 2)]).await;
    let second = tokio::time::timeout(Duration::from_secs(10), stream.message())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(second.revision, 2);
    assert_eq!(second.scores[0].score, Some(0.0), "two calls to a now");
    // GetScores agrees.
    let got = client
        .get_scores(pb::GetScoresRequest {
            trace_id: "2a".repeat(16),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(got.revision, 2);
    running.stop().await.unwrap();
}

/// The `/metrics` reader the tests share takes the exposition
/// prometheus-client writes and refuses, naming the line, what it does not
/// understand, so a malformed `/metrics` fails the test above.
#[test]
fn the_metrics_reader_refuses_malformed_lines() {
    let good = "# HELP a_seconds Latency.\n# TYPE a_seconds histogram\n# UNIT a_seconds seconds\n\
                a_seconds_sum 1.5\na_seconds_count 2\n\
                a_seconds_bucket{le=\"0.5\",k=\"x\\\"y\"} 1\na_seconds_bucket{le=\"+Inf\",k=\"x\\\"y\"} 2\n\
                # HELP b Refusals.\n# TYPE b counter\nb_total{reason=\"full\"} 3\n# EOF\n";
    let scrape = common::metrics::parse(good).unwrap();
    assert_eq!(
        scrape.names(),
        [
            "a_seconds_bucket",
            "a_seconds_count",
            "a_seconds_sum",
            "b_total"
        ]
        .into()
    );
    assert_eq!(scrape.value("b_total", &[("reason", "full")]), Some(3.0));
    assert_eq!(
        scrape.value("a_seconds_bucket", &[("le", "+Inf"), ("k", "x\"y")]),
        Some(2.0)
    );
    assert_eq!(scrape.help["b"], "Refusals.");
    assert_eq!(scrape.units["a_seconds"], "seconds");

    let refused = |text: &str, why: &str| {
        let err = common::metrics::parse(text).expect_err(text);
        assert!(err.contains(why), "{text:?}: {err}");
    };
    // Each line after `# TYPE b counter`.
    for (bad, why) in [
        ("b_total{reason=\"full} 3", "unterminated"),
        ("b_total{reason=full} 3", "without =\""),
        ("b_total{reason=\"a\"x=\"b\"} 3", "no , or }"),
        ("b_total 3 4 5", "after the timestamp"),
        ("b_total three", "not a number"),
        ("b_total inf", "not a number"),
        ("b_total", "without a value"),
        ("b_total 1\nb_total 2", "same series"),
        ("c_total 1", "not a sample of the counter b"),
        ("b_total 1 # {id=\"x\"} 1", "exemplar"),
        ("# a comment", "not HELP, TYPE or UNIT"),
        ("", "without a value"),
    ] {
        refused(&format!("# TYPE b counter\n{bad}\n# EOF\n"), why);
    }
    refused("b_total 1\n# EOF\n", "a sample before any # TYPE");
    refused("# TYPE b widget\n# EOF\n", "no metric type");
    refused("# TYPE b counter\nb_total 1\n", "no `# EOF`");
    refused("# TYPE b counter\n# EOF\nb_total 1\n", "not the last line");
}

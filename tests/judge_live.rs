//! LLM judges in the live pipeline: spans in over OTLP from the SDK
//! exporter, deterministic scores stored at once with the judges'
//! `pending`, then the judged update of the same revision; against a
//! loopback model server playing each conformance case's script, or
//! answering slowly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::collections::BTreeMap;
use std::time::Duration;
use toolscore::listener::Listener;

use common::llm::{
    LlmCase, check_expected, compare_requests, load_cases, outcome_of_json, with_port,
};
use common::llm_stub::Stub;
use common::service::{self, export};
use serde_json::{Value as Json, json};
use toolscore::config::{Config, InlineEvaluator, RuleConfig, RuleMatch};
use toolscore::evaluator::Status;
use toolscore::span::TraceId;
use toolscore::store::TraceStatus;

/// The case's evaluator inline, and a rule binding it to the case's trace
/// (by an attribute on its root) with the case's criteria.
fn case_config(case: &LlmCase, config: &mut Config) {
    let line: Json = serde_json::from_str(&case.case.line).unwrap();
    config.evaluators.inline = vec![InlineEvaluator {
        id: "e".into(),
        kind: case.type_id().into(),
        config: line["evaluator"]["config"]
            .as_object()
            .cloned()
            .unwrap_or_default(),
        apply_to_all_traces: false,
    }];
    let mut criteria = serde_json::Map::new();
    criteria.insert("e".into(), line["criteria"].clone());
    config.rules = vec![RuleConfig {
        name: case.id().into(),
        matcher: RuleMatch {
            attributes: BTreeMap::from([("conformance.case".to_owned(), case.id().to_owned())]),
            ..RuleMatch::default()
        },
        evaluators: vec!["e".into()],
        criteria,
    }];
}

/// Every conformance case, live: one service per case (UiPath's model
/// discovery is cached per process, as the recordings assume), its spans
/// sent by the OpenTelemetry SDK's OTLP/gRPC exporter. The first record
/// stored has the judge `pending`; the judged update of the same revision
/// has the reference's score, details and error, and the model saw the
/// reference's requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_llm_case_live_over_otlp() {
    let stub = Stub::start().await;
    let dir = tempfile::tempdir().unwrap();
    let llm = stub.config(dir.path());
    let http = common::http();
    let mut failures = Vec::new();
    let mut ran = 0;
    for case in load_cases() {
        if !case.runs_as_configured() {
            continue;
        }
        ran += 1;
        let mut config = service::test_config();
        config.llm = llm.clone();
        case_config(&case, &mut config);
        let running = service::start(config).await;
        let mut updates = running.store.subscribe();
        stub.load(case.script());
        let spans = common::live::case_spans(&case.case);
        let trace = TraceId(spans[0].trace_id);
        export(&service::grpc_exporter(&running), &spans).await;
        let last =
            service::wait_for(&running, trace, Duration::from_secs(60), service::judged).await;
        // Both publications, in order.
        let mut seen = Vec::new();
        while let Ok(r) = updates.try_recv() {
            if r.trace_id == trace && r.status != TraceStatus::Pending {
                seen.push(r.scores[0].outcome.status);
            }
        }
        let body: Json = http
            .get(format!(
                "http://{}/traces/{trace}/scores",
                running.addr(Listener::ApiHttp).unwrap()
            ))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        running.stop().await.unwrap();
        let expected: Json =
            serde_json::from_str(&with_port(&case.expected().to_string(), stub.port)).unwrap();
        let verdict = if seen.first() != Some(&Status::Pending) || seen.len() != 2 {
            Err(format!("publications {seen:?}, not pending then judged"))
        } else if body["revision"] != json!(last.revision) || last.revision != 1 {
            Err(format!(
                "revision {} (stored {})",
                body["revision"], last.revision
            ))
        } else {
            compare_requests(&expected["requests"], &stub.requests()).and_then(|()| {
                check_expected(&case, &expected, &outcome_of_json(&body["scores"][0]))
            })
        };
        if let Err(e) = verdict {
            failures.push(format!("{}: {e}", case.id()));
        }
    }
    println!("{} LLM cases ran live", ran);
    assert!(ran >= 50, "only {ran} cases ran");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A UiPath output judge that answers `score` (and a justification).
fn semantic_judge(config: &mut Config, stub: &Stub, dir: &std::path::Path) {
    config.llm = stub.config(dir);
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
}

/// A model slower than the test: the deterministic score is stored (and
/// readable) at once with the judge `pending`; at shutdown the unanswered
/// judge is stored as `skipped`, saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_model_never_delays_deterministic_scores() {
    let stub = Stub::start().await;
    stub.load(&json!({"responses": [common::llm_stub::answer(90)], "discovery": []}));
    stub.set_delay(Duration::from_secs(600));
    let dir = tempfile::tempdir().unwrap();
    let mut config = service::test_config();
    semantic_judge(&mut config, &stub, dir.path());
    config.shutdown_timeout_ms = 2_000;
    let running = service::start(config).await;
    let trace = TraceId([7; 16]);
    export(
        &service::grpc_exporter(&running),
        &service::weather_trace(7),
    )
    .await;
    let first = service::wait_for(
        &running,
        trace,
        Duration::from_secs(20),
        service::evaluated(1),
    )
    .await;
    assert_eq!(first.scores[0].outcome.status, Status::Pending, "{first:?}");
    assert_eq!(first.scores[1].outcome.status, Status::Ok);
    assert_eq!(first.scores[1].outcome.score, Some(1.0));
    // The judge's first request (model discovery) is in flight: the stub holds it.
    stub.wait_for_requests(1, Duration::from_secs(20)).await;
    let store = running.store.clone();
    running.stop().await.unwrap();
    let last = store.get(&trace).unwrap();
    assert_eq!(last.revision, 1);
    let judge = &last.scores[0].outcome;
    assert_eq!(judge.status, Status::Skipped, "{last:?}");
    assert!(
        judge
            .error
            .as_deref()
            .unwrap()
            .contains("toolscore stopped before the model answered"),
        "{judge:?}"
    );
    assert_eq!(
        last.scores[1], first.scores[1],
        "the deterministic score is kept"
    );
}

/// The judged update: the model's score in the judge's place, same
/// revision, the deterministic score untouched; the metrics count the
/// request (provider, model) and the judgement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn judged_scores_follow_in_the_same_revision() {
    let stub = Stub::start().await;
    stub.load(&json!({"responses": [common::llm_stub::answer(90)], "discovery": []}));
    let dir = tempfile::tempdir().unwrap();
    let mut config = service::test_config();
    semantic_judge(&mut config, &stub, dir.path());
    let running = service::start(config).await;
    let trace = TraceId([8; 16]);
    export(
        &service::http_exporter(&running),
        &service::weather_trace(8),
    )
    .await;
    let last = service::wait_for(&running, trace, Duration::from_secs(20), service::judged).await;
    assert_eq!(last.revision, 1);
    assert_eq!(last.scores[0].outcome.status, Status::Ok, "{last:?}");
    assert_eq!(last.scores[0].outcome.score, Some(0.9));
    assert_eq!(last.scores[1].outcome.score, Some(1.0));
    // The queue's place is given back once the judged record is stored:
    // read the metrics until it has been (or the deadline passes).
    let lines = [
        r#"toolscore_llm_requests_total{provider="uipath",model="gpt-4.1",outcome="2xx"} 1"#,
        r#"toolscore_llm_judgements_total{status="ok"} 1"#,
        r#"toolscore_llm_tokens_total{provider="uipath",direction="input"} 120"#,
        "toolscore_llm_judgement_seconds_count 1",
        "toolscore_llm_queued_traces 0",
    ];
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let text = loop {
        let text = service::metrics_text(&running).await;
        if lines.iter().all(|l| text.contains(l)) || std::time::Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    for line in lines {
        assert!(text.contains(line), "{line} not in\n{text}");
    }
    running.stop().await.unwrap();
}

/// Past `llm.max_queued_traces`, a trace's judges are `skipped` at once
/// (its deterministic scores stored as always), counted; with a
/// `sample_rate` of 0 a judge never asks the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_and_the_sample_skip_judges_with_a_reason() {
    let stub = Stub::start().await;
    stub.load(&json!({"responses": [common::llm_stub::answer(90), common::llm_stub::answer(90)], "discovery": []}));
    stub.set_delay(Duration::from_secs(600));
    let dir = tempfile::tempdir().unwrap();
    let mut config = service::test_config();
    semantic_judge(&mut config, &stub, dir.path());
    config.llm.max_queued_traces = 1;
    config.shutdown_timeout_ms = 1_000;
    let running = service::start(config).await;
    let exporter = service::grpc_exporter(&running);
    export(&exporter, &service::weather_trace(1)).await;
    let first = service::wait_for(
        &running,
        TraceId([1; 16]),
        Duration::from_secs(20),
        service::evaluated(1),
    )
    .await;
    assert_eq!(first.scores[0].outcome.status, Status::Pending);
    export(&exporter, &service::weather_trace(2)).await;
    let second = service::wait_for(
        &running,
        TraceId([2; 16]),
        Duration::from_secs(20),
        service::evaluated(1),
    )
    .await;
    let judge = &second.scores[0].outcome;
    assert_eq!(judge.status, Status::Skipped, "{second:?}");
    assert!(
        judge
            .error
            .as_deref()
            .unwrap()
            .contains("llm.max_queued_traces 1"),
        "{judge:?}"
    );
    assert_eq!(second.scores[1].outcome.score, Some(1.0));
    let text = service::metrics_text(&running).await;
    for line in [
        r#"toolscore_llm_judgements_skipped_total{reason="queue_full"} 1"#,
        "toolscore_llm_queued_traces 1",
    ] {
        assert!(text.contains(line), "{line} not in\n{text}");
    }
    running.stop().await.unwrap();

    // Nothing sampled: no request, the reason names the key.
    stub.load(&json!({"responses": [common::llm_stub::answer(90)], "discovery": []}));
    let mut config = service::test_config();
    semantic_judge(&mut config, &stub, dir.path());
    config.llm.sample_rates.insert("judge".into(), 0.0);
    let running = service::start(config).await;
    export(
        &service::grpc_exporter(&running),
        &service::weather_trace(3),
    )
    .await;
    let r = service::wait_for(
        &running,
        TraceId([3; 16]),
        Duration::from_secs(20),
        service::judged,
    )
    .await;
    let judge = &r.scores[0].outcome;
    assert_eq!(judge.status, Status::Skipped);
    assert!(
        judge
            .error
            .as_deref()
            .unwrap()
            .contains("llm.sample_rates.judge is 0"),
        "{judge:?}"
    );
    assert!(stub.requests().is_empty());
    running.stop().await.unwrap();
}

/// `llm.sample_rates` naming an evaluator that is not loaded (or not a
/// judge) fails start-up with the key, and `validate-config` too.
#[tokio::test]
async fn a_sample_rate_for_an_unknown_judge_fails_start_up() {
    let stub = Stub::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = service::test_config();
    semantic_judge(&mut config, &stub, dir.path());
    config.llm.sample_rates.insert("count".into(), 0.5);
    let listeners = toolscore::app::Listeners::bind(&config).await.unwrap();
    let err = toolscore::app::start(config, None, listeners)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("llm.sample_rates.count"), "{err}");
    assert!(err.contains("names no LLM-judged evaluator"), "{err}");

    let file = dir.path().join("toolscore.yaml");
    std::fs::write(
        &file,
        "evaluators:\n  inline:\n    - id: used\n      type: tool-correctness\n      config:\n        defaultEvaluationCriteria:\n          expected_tools: [{name: a}]\n      apply_to_all_traces: true\nllm:\n  sample_rates: {used: 0.5}\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolscore"))
        .args(["validate-config".as_ref(), file.as_os_str()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("llm.sample_rates.used: names no LLM-judged evaluator"),
        "{stderr}"
    );
}

//! Every LLM conformance case (`../shared/conformance/llm/cases.jsonl`)
//! through the service's own path: the configured providers (`llm:`), the
//! HTTP client, the dispatch of each evaluator to its judge, against a
//! loopback model server playing the case's script. The requests it
//! receives, and the score, details and error, are the reference's.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use common::llm::{
    LlmCase, check_expected, compare_requests, load_cases, outcome_of_json, with_port,
};
use common::llm_stub::Stub;
use toolscore::evaluator::{self, Evaluator, EvaluatorType};
use toolscore::extract::{ExtractConfig, extract};
use toolscore::listener::Listener;
use toolscore::llm::config::LlmConfig;
use toolscore::llm::metrics::LlmMetrics;
use toolscore::llm::{Judges, trace_view};
use toolscore::pyvalue::{Dict, Value};

fn evaluator(case: &LlmCase) -> Evaluator {
    let kind = match case.case.evaluator_type.as_str() {
        "tool-correctness-llm" => EvaluatorType::ToolCorrectness,
        other => EvaluatorType::parse(other).unwrap(),
    };
    let mut ev = Evaluator::with_defaults("case", kind);
    let config = case
        .case
        .config
        .as_dict()
        .cloned()
        .unwrap_or_else(Dict::new);
    ev.config = evaluator::parse_config(kind, &config, "config").unwrap();
    assert!(ev.needs_model() || case.case.evaluator_type == "tool-correctness-llm");
    ev
}

async fn run(case: &LlmCase, stub: &Stub, config: &LlmConfig) -> Result<(), String> {
    stub.load(case.script());
    // A fresh set per case: the discovery cache is per process in the
    // reference, and the recordings reset it per case.
    let judges = Judges::build(config, &LlmMetrics::default()).unwrap();
    let spans = toolscore::record::Spans::from_spans(&case.spans());
    let calls = extract(&spans, &ExtractConfig::default());
    let view = trace_view(&spans, &calls, &ExtractConfig::default());
    let criteria = match &case.case.criteria {
        Value::None => None,
        v => Some(v),
    };
    let ev = evaluator(case);
    if case.case.evaluator_type == "tool-correctness-llm" && criteria.is_none() {
        return Err("a deepeval case without criteria".into());
    }
    let outcome = judges
        .evaluate_value(&ev, criteria, view, &case.simulation_instructions())
        .await;
    let expected: serde_json::Value =
        serde_json::from_str(&with_port(&case.expected().to_string(), stub.port)).unwrap();
    compare_requests(&expected["requests"], &stub.requests())?;
    check_expected(case, &expected, &outcome)
}

#[tokio::test]
async fn every_llm_case_over_http_matches_the_reference() {
    let stub = Stub::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = stub.config(dir.path());
    let cases = load_cases();
    assert!(cases.len() >= 60, "only {} LLM cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        if let Err(e) = run(case, &stub, &config).await {
            failures.push(format!("{}: {e}", case.id()));
        }
    }
    println!(
        "{}/{} LLM cases pass over HTTP",
        cases.len() - failures.len(),
        cases.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

/// `POST /v1/evaluate` runs the same judges: every case as an inline
/// evaluator, the service's providers pointing at the stub.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evaluate_endpoint_runs_the_judges() {
    let stub = Stub::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::service::test_config();
    config.llm = stub.config(dir.path());
    let running = common::service::start(config).await;
    let url = format!(
        "http://{}/v1/evaluate",
        running.addr(Listener::ApiHttp).unwrap()
    );
    let http = common::http();
    let mut failures = Vec::new();
    let cases = load_cases();
    // The simulation cases fill `{{SimulationInstructions}}`, which the
    // service (as the reference's runtime) leaves empty. The service keeps
    // UiPath's model discovery for the process, as the reference does: only
    // the first judge asks, so the GETs are left out of the comparison, and
    // so are the cases whose discovery reply differs from the first's.
    let fresh_discovery = |c: &&LlmCase| {
        c.script()["discovery"]
            .as_array()
            .is_none_or(|d| d.is_empty())
    };
    for case in cases
        .iter()
        .filter(|c| c.simulation_instructions().is_empty())
        .filter(fresh_discovery)
    {
        stub.load(case.script());
        let line: serde_json::Value = serde_json::from_str(&case.case.line).unwrap();
        let ty = case.type_id();
        let mut body = common::live::case_otlp_json(&case.case);
        body["evaluators"] =
            serde_json::json!([{"id": "e", "type": ty, "config": line["evaluator"]["config"]}]);
        if !line["criteria"].is_null() {
            body["criteria"] = serde_json::json!({"e": line["criteria"]});
        }
        let resp = http.post(&url).json(&body).send().await.unwrap();
        let status = resp.status().as_u16();
        let got: serde_json::Value = resp.json().await.unwrap();
        let expected: serde_json::Value =
            serde_json::from_str(&with_port(&case.expected().to_string(), stub.port)).unwrap();
        let posts = |r: &serde_json::Value| r["method"] == "POST";
        let want_posts: Vec<serde_json::Value> = expected["requests"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| posts(r))
            .cloned()
            .collect();
        let sent: Vec<_> = stub
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST")
            .collect();
        let verdict = match status {
            200 => compare_requests(&serde_json::Value::from(want_posts), &sent).and_then(|()| {
                check_expected(case, &expected, &outcome_of_json(&got["scores"][0]))
            }),
            // No criteria and no default: refused before anything runs.
            400 if line["criteria"].is_null() && expected["score"].is_null() => Ok(()),
            other => Err(format!("HTTP {other}: {got}")),
        };
        if let Err(e) = verdict {
            failures.push(format!("{}: {e}", case.id()));
        }
    }
    running.stop().await.unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// `toolscore eval` runs the same judges: each case as a UiPath evaluator
/// file and a one-item eval set, its spans as an OTLP JSON trace file bound
/// to the item, one process per case (so UiPath's discovery cache starts
/// empty, as in the recordings).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_eval_command_runs_the_judges() {
    let stub = Stub::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = stub.config(dir.path());
    let config_file = dir.path().join("toolscore.yaml");
    std::fs::write(
        &config_file,
        serde_saphyr::to_string(&serde_json::json!({"llm": config})).unwrap(),
    )
    .unwrap();
    let mut failures = Vec::new();
    let mut ran = 0;
    for case in load_cases() {
        let line: serde_json::Value = serde_json::from_str(&case.case.line).unwrap();
        let ty = case.type_id();
        let config = &line["evaluator"]["config"];
        if !case.runs_as_configured() {
            continue;
        }
        ran += 1;
        let root = dir.path().join(case.id());
        std::fs::create_dir_all(root.join("evaluators")).unwrap();
        std::fs::create_dir_all(root.join("eval-sets")).unwrap();
        std::fs::write(
            root.join("evaluators/e.json"),
            serde_json::json!({"version": "1.0", "id": "e", "evaluatorTypeId": ty, "evaluatorConfig": config})
                .to_string(),
        )
        .unwrap();
        std::fs::write(
            root.join("eval-sets/set.json"),
            serde_json::json!({"version": "1.0", "id": "set", "name": "set", "evaluatorRefs": ["e"],
                "evaluations": [{"id": "item", "name": "item", "inputs": {},
                    "evaluationCriterias": {"e": line["criteria"]}}]})
            .to_string(),
        )
        .unwrap();
        // The binding attribute on the root span, which no judge reads
        // attributes of but its input and output.
        let mut trace = common::live::case_otlp_json(&case.case);
        let spans = toolscore::record::Spans::from_spans(&case.spans());
        let root_id = toolscore::evaluator::judged::root_span(&spans)
            .or_else(|| spans.iter().next())
            .unwrap()
            .span_id
            .to_hex();
        for span in trace["resourceSpans"][0]["scopeSpans"][0]["spans"]
            .as_array_mut()
            .unwrap()
        {
            if span["spanId"] == root_id.as_str() {
                span["attributes"].as_array_mut().unwrap().push(
                    serde_json::json!({"key": "eval.case.id", "value": {"stringValue": "item"}}),
                );
            }
        }
        std::fs::write(root.join("trace.json"), trace.to_string()).unwrap();
        stub.load(case.script());
        let args = [
            "eval".to_owned(),
            "--eval-set".into(),
            root.join("eval-sets/set.json").display().to_string(),
            "--traces".into(),
            root.join("trace.json").display().to_string(),
            "--config".into(),
            config_file.display().to_string(),
        ];
        let out = tokio::task::spawn_blocking(move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_toolscore"))
                .args(args)
                .env_remove("OPENAI_API_KEY")
                .env_remove("UIPATH_URL")
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let verdict = if out.status.code() == Some(2) {
            Err(format!("exit 2: {stderr}"))
        } else {
            let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let result = &report["evaluationSetResults"][0]["evaluationRunResults"][0]["result"];
            let expected: serde_json::Value =
                serde_json::from_str(&with_port(&case.expected().to_string(), stub.port)).unwrap();
            compare_requests(&expected["requests"], &stub.requests())
                .and_then(|()| check_expected(&case, &expected, &outcome_of_json(result)))
        };
        if let Err(e) = verdict {
            failures.push(format!("{}: {e}", case.id()));
        }
    }
    assert!(ran >= 50, "only {ran} cases ran");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// deepeval's metric configured as its LLM path (a `model`) without
/// `available_tools` (the key absent: `None` in Python) takes the same path
/// as with an empty list, whose recordings are in the cases: every such
/// case again without the key gives the same requests (none), score and
/// details (`score_is_int`, `verbose_logs` with `Available Tools: []`,
/// `evaluation_cost`), not only `reason`, `success` and `threshold`.
#[tokio::test]
async fn deepeval_without_available_tools_answers_as_with_an_empty_list() {
    let stub = Stub::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = stub.config(dir.path());
    let mut cases: Vec<LlmCase> = load_cases()
        .into_iter()
        .filter(|c| {
            c.case.evaluator_type == "tool-correctness-llm"
                && c.case
                    .config
                    .as_dict()
                    .and_then(|d| d.get_str("available_tools"))
                    .is_some_and(|t| matches!(t, Value::List(l) if l.is_empty()))
        })
        .collect();
    assert!(
        !cases.is_empty(),
        "no deepeval case with available_tools: []"
    );
    let mut failures = Vec::new();
    for case in &mut cases {
        let mut without = Dict::new();
        for (k, v) in case.case.config.as_dict().unwrap().iter() {
            if k.as_str() != Some("available_tools") {
                without.insert(k.clone(), v.clone()).unwrap();
            }
        }
        case.case.config = Value::Dict(without);
        if let Err(e) = run(case, &stub, &config).await {
            failures.push(format!("{} without available_tools: {e}", case.id()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

//! Every LLM conformance case (`../shared/conformance/llm/cases.jsonl`)
//! through the service's own path: the configured providers (`llm:`), the
//! HTTP client, the dispatch of each evaluator to its judge, against a
//! loopback model server playing the case's script. The requests it
//! receives, and the score, details and error, are the reference's.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use common::llm::{LlmCase, check_expected, compare_requests, load_cases, with_port};
use common::llm_stub::Stub;
use toolscore::evaluator::{self, Evaluator, EvaluatorType};
use toolscore::extract::{ExtractConfig, extract};
use toolscore::judge::config::LlmConfig;
use toolscore::judge::metrics::LlmMetrics;
use toolscore::judge::{Judges, trace_view};
use toolscore::pyvalue::{Dict, Value};

/// `llm:` pointing both provider kinds at the stub, with the tokens the
/// recordings show, read from files as a deployment would.
pub fn stub_config(stub: &Stub, dir: &std::path::Path) -> LlmConfig {
    std::fs::write(dir.join("openai-key"), "sk-stub\n").unwrap();
    std::fs::write(dir.join("uipath-token"), "stub-token").unwrap();
    let yaml = format!(
        "providers:\n  openai:\n    kind: openai\n    base_url: {0}/v1\n    api_key_file: {1}/openai-key\n  uipath:\n    kind: uipath\n    base_url: {0}/org/tenant\n    api_key_file: {1}/uipath-token\n",
        stub.base_url(),
        dir.display()
    );
    let config: LlmConfig = serde_yaml_ng::from_str(&yaml).unwrap();
    config.validate().unwrap();
    config
}

fn evaluator(case: &LlmCase) -> Evaluator {
    let kind = match case.case.evaluator_type.as_str() {
        "tool-correctness-llm" => EvaluatorType::ToolCorrectness,
        other => EvaluatorType::parse(other).unwrap(),
    };
    let mut ev = Evaluator::with_defaults("case", kind);
    let config = case.case.config.as_dict().cloned().unwrap_or_else(Dict::new);
    ev.config = evaluator::parse_config(kind, &config, "config").unwrap();
    assert!(ev.needs_model() || case.case.evaluator_type == "tool-correctness-llm");
    ev
}

async fn run(case: &LlmCase, stub: &Stub, config: &LlmConfig) -> Result<(), String> {
    stub.load(case.script());
    // A fresh set per case: the discovery cache is per process in the
    // reference, and the recordings reset it per case.
    let judges = Judges::build(config, &LlmMetrics::default()).unwrap();
    let spans = case.spans();
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
    let config = stub_config(&stub, dir.path());
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

//! deepeval's LLM-judged tool selection against the recorded cases
//! (`tool-correctness-llm` in `../shared/conformance/llm/cases.jsonl`): the
//! requests sent, the score, the details and the error, replayed in process.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use common::llm::{LlmCase, Replay, STUB_PORT, check_outcome, compare_requests, load_cases};
use toolscore::evaluator::judged::{Endpoint, deepeval, root_span};
use toolscore::evaluator::{self, Config, EvaluatorType, tool_correctness};
use toolscore::extract::{ExtractConfig, extract};
use toolscore::record::AttrRef;

fn endpoint() -> Endpoint {
    Endpoint {
        base_url: format!("http://127.0.0.1:{STUB_PORT}/v1"),
        token: "sk-stub".into(),
        action_id: None,
    }
}

/// Runs one case; `Err` says what differed.
async fn run(case: &LlmCase) -> Result<(), String> {
    let config = case.case.config.as_dict().ok_or("config is not a dict")?;
    let Config::ToolCorrectness(cfg) =
        evaluator::parse_config(EvaluatorType::ToolCorrectness, config, "config")
            .map_err(|e| format!("config: {e:?}"))?
    else {
        return Err("not a deepeval config".into());
    };
    let criteria = tool_correctness::parse_criteria(&case.case.criteria)
        .map_err(|e| format!("criteria: {e}"))?;
    let spans = toolscore::record::Spans::from_spans(&case.spans());
    let calls = extract(&spans, &ExtractConfig::default());
    let input = match root_span(&spans).and_then(|s| s.attr("input.value")) {
        Some(AttrRef::Str(s)) => s.to_string(),
        _ => String::new(),
    };
    let expected = case.expected();
    if expected["derived"]["input"].as_str() != Some(input.as_str()) {
        return Err(format!(
            "input: expected {}, got {input:?}",
            expected["derived"]["input"]
        ));
    }
    let replay = Replay::new(case.script());
    let outcome = deepeval::evaluate(&replay, &endpoint(), &calls, &criteria, &cfg, &input).await;
    compare_requests(&expected["requests"], &replay.sent())?;
    check_outcome(case, &outcome)
}

#[tokio::test(start_paused = true)]
async fn every_tool_correctness_llm_case_matches_the_reference() {
    let cases: Vec<LlmCase> = load_cases()
        .into_iter()
        .filter(|c| c.case.evaluator_type == "tool-correctness-llm")
        .collect();
    assert!(!cases.is_empty(), "no tool-correctness-llm cases");
    let mut failures = Vec::new();
    for case in &cases {
        match run(case).await {
            Ok(()) => println!("pass {}", case.id()),
            Err(e) => {
                println!("FAIL {}: {e}", case.id());
                failures.push(case.id().to_owned());
            }
        }
    }
    println!(
        "{}/{} tool-correctness-llm cases pass",
        cases.len() - failures.len(),
        cases.len()
    );
    assert!(failures.is_empty(), "failing: {failures:?}");
}

/// A reply that never comes is deepeval's per-attempt timeout, retried once
/// (after a wait of 1 to 3 s), then tenacity's `RetryError`.
#[tokio::test(start_paused = true)]
async fn connection_failures_are_retried_then_reported() {
    use toolscore::evaluator::judged::{Reply, Request, Transport};
    struct Refused(std::sync::Mutex<u32>);
    impl Transport for Refused {
        fn send(&self, _: Request) -> impl std::future::Future<Output = Reply> + Send {
            *self.0.lock().unwrap() += 1;
            std::future::ready(Reply::Failed {
                message: "connection refused".into(),
                timed_out: false,
            })
        }
    }
    let cfg = tool_correctness::DeepevalConfig {
        available_tools: Some(vec![tool_correctness::DeepevalTool {
            name: "a".into(),
            input_parameters: None,
            output: None,
            description: None,
            reasoning: None,
        }]),
        ..Default::default()
    };
    assert_eq!(
        toolscore::evaluator::Config::ToolCorrectness(cfg.clone()).judged(),
        toolscore::evaluator::kind::Judged::Yes { asks: true }
    );
    let criteria = tool_correctness::ExpectedTools { tools: vec![] };
    let t = Refused(std::sync::Mutex::new(0));
    let out = deepeval::evaluate(&t, &endpoint(), &[], &criteria, &cfg, "hi").await;
    assert_eq!(*t.0.lock().unwrap(), 2);
    let err = out.error.unwrap();
    assert!(
        err.starts_with("RetryError: RetryError[<Future at 0x"),
        "{err}"
    );
    assert!(
        err.ends_with("state=finished raised APIConnectionError>]"),
        "{err}"
    );
}

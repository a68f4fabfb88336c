//! `toolscore eval` end to end: the real binary on the UiPath weather_tools
//! files, with the traces the sample agent emits.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value as Json;

fn example_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/uipath-weather-tools")
}

fn eval_set_path(root: &Path) -> PathBuf {
    root.join("evaluations/eval-sets/default.json")
}

fn traces_fixture() -> PathBuf {
    example_dir().join("traces.jsonl")
}

fn toolscore(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolscore"))
        .args(args)
        // No model provider from the environment: the LLM judge is skipped.
        .env_remove("OPENAI_API_KEY")
        .env_remove("UIPATH_URL")
        .output()
        .unwrap()
}

fn eval_set_json() -> Json {
    serde_json::from_str(&std::fs::read_to_string(eval_set_path(&example_dir())).unwrap()).unwrap()
}

/// The committed fixture is exactly what the generator produces, so the
/// commands of docs/evaluators.md and docs/configuration.md run on the
/// traces this test describes.
/// Regenerate with `TOOLSCORE_BLESS=1 cargo test --test cli_eval`.
#[test]
fn committed_traces_fixture_is_current() {
    let want = common::weather::traces_jsonl(&eval_set_json());
    if std::env::var_os("TOOLSCORE_BLESS").is_some() {
        std::fs::write(traces_fixture(), &want).unwrap();
    }
    let have = std::fs::read_to_string(traces_fixture()).unwrap_or_default();
    assert!(
        have == want,
        "examples/uipath-weather-tools/traces.jsonl is stale: run TOOLSCORE_BLESS=1 cargo test --test cli_eval"
    );
}

/// The example files are the shared UiPath files, unchanged.
#[test]
fn example_files_are_the_unchanged_uipath_files() {
    let shared =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/examples/uipath-weather-tools");
    if !shared.exists() {
        eprintln!("../shared not present; skipping the byte comparison");
        return;
    }
    for rel in [
        "evaluations/eval-sets/default.json",
        "evaluations/evaluators/tool-call-args.json",
        "evaluations/evaluators/tool-call-count.json",
        "evaluations/evaluators/tool-call-order.json",
        "evaluations/evaluators/tool-call-output.json",
        "evaluations/evaluators/trajectory.json",
    ] {
        assert_eq!(
            std::fs::read(shared.join(rel)).unwrap(),
            std::fs::read(example_dir().join(rel)).unwrap(),
            "{rel} differs from the shared UiPath file"
        );
    }
}

#[test]
fn weather_example_scores_one_for_every_evaluator_on_every_item() {
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("traces.jsonl");
    std::fs::write(&traces, common::weather::traces_jsonl(&eval_set_json())).unwrap();
    let out = toolscore(&[
        "eval",
        "--eval-set",
        eval_set_path(&example_dir()).to_str().unwrap(),
        "--traces",
        traces.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert!(
        stderr.contains("TrajectoryEvaluator"),
        "the LLM judge is reported as skipped: {stderr}"
    );
    let report: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["evaluationSetName"],
        "Weather Tools Agent Evaluation"
    );
    let results = report["evaluationSetResults"].as_array().unwrap();
    assert_eq!(results.len(), 5);
    for r in results {
        let item = r["evaluationId"].as_str().unwrap();
        let runs = r["evaluationRunResults"].as_array().unwrap();
        let ids: Vec<&str> = runs
            .iter()
            .map(|x| x["evaluatorId"].as_str().unwrap())
            .collect();
        let mut want = vec![
            "ToolCallCountEvaluator",
            "ToolCallOrderEvaluator",
            "ToolCallArgsEvaluator",
        ];
        if !matches!(item, "basic_weather" | "sunny_weather") {
            want.push("ToolCallOutputEvaluator");
        }
        assert_eq!(ids, want, "item {item}");
        for run in runs {
            assert_eq!(run["result"]["status"], "ok", "{item}: {run}");
            assert_eq!(run["result"]["score"], 1.0, "{item}: {run}");
            assert_eq!(run["result"]["error"], Json::Null);
        }
    }
    // The output evaluator's details match the reference's real run (SEMANTICS §1.7).
    let tokyo = results
        .iter()
        .find(|r| r["evaluationId"] == "tokyo_forecast")
        .unwrap();
    let output = &tokyo["evaluationRunResults"][3]["result"]["details"];
    assert_eq!(
        output["explained_tool_calls_outputs"]["get_temperature_0"],
        "Actual: {'temperature': 25.0, 'unit': 'fahrenheit'}, Expected: {'temperature': 25.0, 'unit': 'fahrenheit'}, Score: 1.0"
    );
}

fn copy_example(to: &Path) {
    for sub in ["evaluations/eval-sets", "evaluations/evaluators"] {
        std::fs::create_dir_all(to.join(sub)).unwrap();
        for e in std::fs::read_dir(example_dir().join(sub)).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), to.join(sub).join(e.file_name())).unwrap();
        }
    }
}

fn run_on_copy(root: &Path) -> Output {
    toolscore(&[
        "eval",
        "--eval-set",
        eval_set_path(root).to_str().unwrap(),
        "--traces",
        traces_fixture().to_str().unwrap(),
    ])
}

#[test]
fn a_corrupted_evaluator_file_exits_2_naming_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    copy_example(dir.path());
    let file = dir
        .path()
        .join("evaluations/evaluators/tool-call-args.json");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replace("\"strict\": false", "\"strict\": \"maybe\""),
    )
    .unwrap();
    let out = run_on_copy(dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.contains("tool-call-args.json"), "{stderr}");
    assert!(stderr.contains("evaluatorConfig.strict"), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn invalid_json_and_bad_criteria_exit_2_naming_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    copy_example(dir.path());
    let file = dir
        .path()
        .join("evaluations/evaluators/tool-call-count.json");
    std::fs::write(&file, "{\"version\": \"1.0\", \"id\": ").unwrap();
    let out = run_on_copy(dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(
        stderr.contains("tool-call-count.json") && stderr.contains("not valid JSON"),
        "{stderr}"
    );

    let dir = tempfile::tempdir().unwrap();
    copy_example(dir.path());
    let set = eval_set_path(dir.path());
    let text = std::fs::read_to_string(&set).unwrap();
    std::fs::write(
        &set,
        text.replacen("\"=\",\n              1\n", "\"=\", 1.5\n", 1),
    )
    .unwrap();
    let out = run_on_copy(dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(
        stderr.contains("evaluations.0.evaluationCriterias.ToolCallCountEvaluator.toolCallsCount.get_temperature.1"),
        "{stderr}"
    );
}

#[test]
fn failing_scores_exit_1() {
    let out = toolscore(&[
        "eval",
        "--eval-set",
        eval_set_path(&example_dir()).to_str().unwrap(),
        "--traces",
        traces_fixture().to_str().unwrap(),
        "--min-score",
        "1.5",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("below --min-score"));
}

#[test]
fn legacy_eval_sets_and_bad_usage_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    copy_example(dir.path());
    let set = eval_set_path(dir.path());
    let text = std::fs::read_to_string(&set).unwrap();
    std::fs::write(&set, text.replacen("\"version\": \"1.0\",", "", 1)).unwrap();
    let out = run_on_copy(dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("legacy") && stderr.contains("default.json"),
        "{stderr}"
    );

    let out = toolscore(&["eval", "--traces", "x.json"]);
    assert_eq!(out.status.code(), Some(2));
}

/// With a model provider, the sample's `trajectory.json` (an LLM judge)
/// runs: one discovery GET, then one chat request per trace whose prompt
/// is the file's, its run history the trace's tool calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weather_example_runs_the_trajectory_judge_with_a_provider() {
    let stub = common::llm_stub::Stub::start().await;
    let answer = serde_json::json!({"status": 200, "body": {
        "id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4.1-2025-04-14",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "t", "name": "submit_evaluation",
                "arguments": {"justification": "Called the expected tools.", "score": 85}}]},
            "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}});
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("traces.jsonl");
    std::fs::write(&traces, common::weather::traces_jsonl(&eval_set_json())).unwrap();
    let eval_set = eval_set_path(&example_dir());
    // Once with a config file naming the provider, once with the
    // environment variables the uipath SDK reads, once more through the
    // HTTP proxy HTTP_PROXY names (a real one, tinyproxy, where installed).
    let proxy = common::proxy::Tinyproxy::start("judge", "s3cret").await;
    let config = dir.path().join("toolscore.yaml");
    std::fs::write(dir.path().join("token"), "stub-token\n").unwrap();
    std::fs::write(
        &config,
        format!(
            "llm:\n  providers:\n    gateway:\n      kind: uipath\n      base_url: {}/org/tenant\n      api_key_file: {}\n",
            stub.base_url(),
            dir.path().join("token").display()
        ),
    )
    .unwrap();
    let with_config = vec![
        "eval".to_owned(),
        "--eval-set".into(),
        eval_set.display().to_string(),
        "--traces".into(),
        traces.display().to_string(),
        "--config".into(),
        config.display().to_string(),
    ];
    let from_env = vec![
        ("UIPATH_URL", format!("{}/org/tenant", stub.base_url())),
        ("UIPATH_ACCESS_TOKEN", "stub-token".to_owned()),
    ];
    let mut runs = vec![
        (with_config.clone(), vec![]),
        (with_config[..5].to_vec(), from_env.clone()),
    ];
    if let Some(proxy) = &proxy {
        let mut env = from_env;
        env.push(("HTTP_PROXY", proxy.url("judge", "s3cret")));
        runs.push((with_config[..5].to_vec(), env));
    }
    for (args, env) in runs {
        stub.load(&serde_json::json!({"responses": vec![answer.clone(); 5], "discovery": []}));
        let out = tokio::task::spawn_blocking(move || {
            Command::new(env!("CARGO_BIN_EXE_toolscore"))
                .args(&args)
                .env_remove("OPENAI_API_KEY")
                .env_remove("NO_PROXY")
                .env_remove("no_proxy")
                .envs(env)
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
        assert!(!stderr.contains("skipped"), "{stderr}");
        let report: Json = serde_json::from_slice(&out.stdout).unwrap();
        for r in report["evaluationSetResults"].as_array().unwrap() {
            let run = &r["evaluationRunResults"][0];
            assert_eq!(run["evaluatorId"], "TrajectoryEvaluator", "{r}");
            assert_eq!(run["result"]["score"], 0.85, "{run}");
            assert_eq!(
                run["result"]["details"]["justification"],
                "Called the expected tools."
            );
        }
        let sent = stub.requests();
        assert_eq!(
            sent.len(),
            6,
            "one discovery GET, five chat POSTs: {sent:?}"
        );
        assert_eq!(sent[0].method, "GET");
        for post in &sent[1..] {
            assert_eq!(
                post.headers["x-uipath-llmgateway-normalizedapi-modelname"],
                "gpt-4.1-2025-04-14"
            );
            assert_eq!(post.headers["authorization"], "Bearer stub-token");
            let prompt = post.body["messages"][1]["content"].as_str().unwrap();
            assert!(
                prompt.starts_with("Evaluate the agent's execution trajectory")
                    && prompt.contains("Tool: get_temperature")
                    && prompt.contains("Expected Agent Behavior: The agent should "),
                "{prompt}"
            );
        }
    }
    if let Some(proxy) = proxy {
        let log = proxy.log();
        let chat = format!(
            "POST {}/org/tenant/agenthub_/llm/api/chat/completions",
            stub.base_url()
        );
        assert_eq!(log.matches(&chat).count(), 5, "{chat} in {log}");
    }
}

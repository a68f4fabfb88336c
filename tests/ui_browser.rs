//! The web UI (`/ui/`) in a real browser: the real service on ephemeral
//! ports, traces from the OpenTelemetry SDK's OTLP/gRPC exporter, and
//! tests/browser/ui.mjs driving Debian's chromium through Playwright. The
//! script checks the overview's live rows, the trace page, the search form,
//! axe-core's accessibility rules and a phone-sized viewport, and leaves
//! screenshots in target/ui-artifacts/.
//!
//! `the_ui_behind_tokens_in_a_real_browser` runs tests/browser/sign-in.mjs
//! against services with tokens on the HTTP API: signed out, a wrong
//! token, signed in, signed out again, an expired session.
//!
//! Needs chromium and the script's node modules (.ci/browser/install.sh):
//! missing, the test fails under `CI=true` and is skipped otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;
use toolscore::listener::Listener;

use common::service::{self, SpanSpec, export};
use opentelemetry::KeyValue;
use serde_json::{Value as Json, json};
use tokio::sync::mpsc;
use toolscore::config::InlineEvaluator;
use toolscore::span::TraceId;

/// Exported before the browser opens; every score passes.
const SEEDED: [u8; 16] = 0x0af7_6519_16cd_43dd_8448_eb21_1c80_319c_u128.to_be_bytes();
/// From another service, failing as the live trace does: outside the search.
const OTHER_SERVICE: [u8; 16] = 0x7c3e_9a10_52d4_4f88_9b61_d2c0_aa35_e817_u128.to_be_bytes();
/// Exported while the overview is open; its second call's `unit` differs.
const LIVE: [u8; 16] = 0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736_u128.to_be_bytes();
/// The argument value the live trace gets wrong, as the UI must flag it.
const WRONG_UNIT: &str = "fahrenheit";

/// A trace's evaluation.
const WAIT: Duration = Duration::from_secs(20);
/// Chromium's start, the page loads and the script's own deadlines (20 s a
/// step) fit well within these on a loaded two-core machine.
const READY_WITHIN: Duration = Duration::from_secs(90);
const FINISH_WITHIN: Duration = Duration::from_secs(180);

/// The browser and the script's modules; `None` (skipped) when missing,
/// unless `CI=true`.
fn browser_setup() -> Option<(PathBuf, PathBuf)> {
    browser_and(|root| root.join("tests/browser/ui.mjs"))
}

/// [`browser_setup`] for another script of tests/browser/.
fn browser_and(script: impl Fn(&Path) -> PathBuf) -> Option<(PathBuf, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let chromium = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    let modules = root.join("tests/browser/node_modules/playwright-core");
    let node = Command::new("node").arg("--version").output().is_ok();
    let missing: Vec<String> = [
        (!chromium.exists()).then(|| format!("chromium at {}", chromium.display())),
        (!modules.exists()).then(|| modules.display().to_string()),
        (!node).then(|| "node".to_owned()),
    ]
    .into_iter()
    .flatten()
    .collect();
    if missing.is_empty() {
        return Some((chromium, script(root)));
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "missing {}: run .ci/browser/install.sh",
        missing.join(", ")
    );
    println!(
        "skipped: missing {} (.ci/browser/install.sh installs them)",
        missing.join(", ")
    );
    None
}

/// An evaluator for every trace, with a threshold (so each score has
/// `passed`) that is no score's value, so a page showing the threshold does
/// not pass for one showing the score.
fn evaluator(id: &str, kind: &str, criteria: Json) -> InlineEvaluator {
    let config = json!({"threshold": 0.75, "defaultEvaluationCriteria": criteria});
    InlineEvaluator {
        id: id.into(),
        kind: kind.into(),
        config: config.as_object().cloned().unwrap(),
        apply_to_all_traces: true,
    }
}

/// Three evaluators: the live trace fails only `args` (0.5), on one value
/// of its second call.
fn config() -> toolscore::config::Config {
    let mut config = service::test_config();
    config.evaluators.inline = vec![
        evaluator(
            "args",
            "uipath-tool-call-args",
            json!({"toolCalls": [
                {"name": "get_weather", "args": {"city": "Paris"}},
                {"name": "get_forecast", "args": {"city": "Paris", "unit": "celsius"}},
            ]}),
        ),
        evaluator(
            "order",
            "uipath-tool-call-order",
            json!({"toolCallsOrder": ["get_weather", "get_forecast"]}),
        ),
        evaluator(
            "count",
            "uipath-tool-call-count",
            json!({"toolCallsCount": {"get_weather": ["=", 1], "get_forecast": ["=", 1]}}),
        ),
    ];
    config
}

/// An agent's trace: a root span and one TOOL span per `(name, args JSON)`.
fn agent_trace(trace_id: [u8; 16], calls: &[(&str, Json)]) -> Vec<SpanSpec> {
    let now = service::now_ns();
    let root = SpanSpec {
        trace_id,
        span_id: [trace_id[0], 0, 0, 0, 0, 0, 0, 1],
        parent: None,
        name: "weather-agent".into(),
        start_ns: now,
        end_ns: now + 1_000_000,
        attributes: vec![KeyValue::new("input.value", "the forecast for Paris?")],
    };
    let mut spans = Vec::new();
    for (i, (name, args)) in (1u8..).zip(calls) {
        spans.push(SpanSpec {
            trace_id,
            span_id: [trace_id[0], 0, 0, 0, 0, 0, 1, i],
            parent: Some(root.span_id),
            name: (*name).into(),
            start_ns: now + u64::from(i) * 1_000,
            end_ns: now + u64::from(i) * 1_000 + 500,
            attributes: vec![
                KeyValue::new("openinference.span.kind", "TOOL"),
                KeyValue::new("tool.name", (*name).to_owned()),
                KeyValue::new("input.value", args.to_string()),
                KeyValue::new("output.value", "ok"),
            ],
        });
    }
    spans.push(root);
    spans
}

fn forecast_trace(trace_id: [u8; 16], unit: &str) -> Vec<SpanSpec> {
    agent_trace(
        trace_id,
        &[
            ("get_weather", json!({"city": "Paris"})),
            ("get_forecast", json!({"city": "Paris", "unit": unit})),
        ],
    )
}

/// What the script checks on the live trace's pages.
fn expectations() -> Json {
    json!({
        "trace_id": TraceId(LIVE).to_string(),
        "tool_calls": ["get_weather", "get_forecast"],
        "scores": [
            {"evaluator_id": "args", "status": "ok", "passed": false, "score": 0.5},
            {"evaluator_id": "order", "status": "ok", "passed": true, "score": 1.0},
            {"evaluator_id": "count", "status": "ok", "passed": true, "score": 1.0},
        ],
        "mismatch": WRONG_UNIT,
        "search": {"service": "test-agent", "evaluator": "args", "max_score": "0.5"},
        // Passing, or from another service.
        "not_found": [TraceId(SEEDED).to_string(), TraceId(OTHER_SERVICE).to_string()],
    })
}

fn artifacts_dir() -> PathBuf {
    artifacts_dir_named("ui-artifacts")
}

fn artifacts_dir_named(name: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    let dir = target.join(name);
    // No screenshot of an earlier run left to mislead.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The script as a child process, killed if the test ends before it does.
struct Script {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Its stdout and stderr, line by line (stderr's prefixed).
    lines: mpsc::Receiver<String>,
}

impl Script {
    fn spawn(chromium: &Path, script: &Path, args: &[String]) -> Script {
        let mut child = Command::new("node")
            .arg(script)
            .args(args)
            .env("CHROMIUM", chromium)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("node runs");
        let (tx, lines) = mpsc::channel(256);
        forward(child.stdout.take().unwrap(), "", tx.clone());
        forward(child.stderr.take().unwrap(), "stderr: ", tx);
        Script {
            stdin: child.stdin.take(),
            child,
            lines,
        }
    }

    /// Echoes the script's lines until `wanted`; `false` if its output ends first.
    async fn until_line(&mut self, wanted: &str) -> bool {
        while let Some(line) = self.lines.recv().await {
            println!("node: {line}");
            if line == wanted {
                return true;
            }
        }
        false
    }

    /// Writes the go-ahead line and closes stdin.
    fn go_ahead(&mut self) {
        let mut stdin = self.stdin.take().unwrap();
        writeln!(stdin, "exported").unwrap();
    }

    /// Echoes the rest of the output (it ends when the script exits) and
    /// returns the exit status and what it wrote to stderr (its failures).
    async fn finish(&mut self) -> (std::process::ExitStatus, Vec<String>) {
        let mut stderr = Vec::new();
        while let Some(line) = self.lines.recv().await {
            println!("node: {line}");
            if let Some(line) = line.strip_prefix("stderr: ") {
                stderr.push(line.to_owned());
            }
        }
        // Both pipes closed: the script has exited or is about to.
        let status = tokio::task::block_in_place(|| self.child.wait()).unwrap();
        (status, stderr)
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A thread that sends `pipe`'s lines to `tx`.
fn forward(pipe: impl Read + Send + 'static, prefix: &'static str, tx: mpsc::Sender<String>) {
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if tx.blocking_send(format!("{prefix}{line}")).is_err() {
                break;
            }
        }
    });
}

/// A trace exported while the overview is open arrives live; its page shows
/// the calls, the scores and the failing argument; the search form finds it
/// by service, evaluator and score, in a shareable URL; no serious axe
/// violation; the trace page fits a phone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ui_in_a_real_browser() {
    let Some((chromium, script)) = browser_setup() else {
        return;
    };
    let running = service::start(config()).await;
    let base = format!("http://{}", running.addr(Listener::ApiHttp).unwrap());
    let exporter = service::grpc_exporter(&running);
    export(&exporter, &forecast_trace(SEEDED, "celsius")).await;
    let other = service::grpc_exporter_for_service(&running, "other-agent");
    export(&other, &forecast_trace(OTHER_SERVICE, WRONG_UNIT)).await;
    for trace in [SEEDED, OTHER_SERVICE] {
        service::wait_for(&running, TraceId(trace), WAIT, service::evaluated(1)).await;
    }
    let seeded = toolscore::store::get(&running.store, TraceId(SEEDED))
        .await
        .unwrap()
        .unwrap();
    assert!(
        seeded.scores.iter().all(|s| s.outcome.score == Some(1.0)),
        "the seeded trace should pass every evaluator: {seeded:?}"
    );

    let artifacts = artifacts_dir();
    println!("screenshots in {}", artifacts.display());
    let mut node = Script::spawn(
        &chromium,
        &script,
        &[
            base,
            TraceId(SEEDED).to_string(),
            artifacts.display().to_string(),
            expectations().to_string(),
        ],
    );
    let ready = tokio::time::timeout(READY_WITHIN, node.until_line("READY"))
        .await
        .unwrap_or_else(|_| panic!("ui.mjs printed no READY within {READY_WITHIN:?}"));
    if ready {
        export(&exporter, &forecast_trace(LIVE, WRONG_UNIT)).await;
        let live = service::wait_for(&running, TraceId(LIVE), WAIT, service::evaluated(1)).await;
        let args = live.scores.iter().find(|s| &*s.evaluator_id == "args");
        assert_eq!(args.and_then(|s| s.outcome.score), Some(0.5), "{live:?}");
        node.go_ahead();
    }
    let (status, stderr) = tokio::time::timeout(FINISH_WITHIN, node.finish())
        .await
        .unwrap_or_else(|_| panic!("ui.mjs did not finish within {FINISH_WITHIN:?}"));
    println!("screenshots in {}", artifacts.display());
    assert!(
        status.success(),
        "ui.mjs failed ({status}):\n{}",
        stderr.join("\n")
    );
    running.stop().await.unwrap();
}

/// Tokens on the HTTP API: `reader-token` has the `read` scope. A session
/// lasts `ttl_secs`.
fn with_tokens(dir: &Path, ttl_secs: u64) -> toolscore::config::Config {
    use toolscore::auth::{AuthConfig, Scope, TokenConfig};
    let file = dir.join(format!("read-tokens-{ttl_secs}"));
    std::fs::write(&file, "reader-token\n").unwrap();
    let mut config = service::test_config();
    config.api.http.auth.enabled = true;
    config.api.ui.session_ttl_secs = std::num::NonZeroU64::new(ttl_secs).unwrap();
    config.auth = AuthConfig {
        tokens: vec![TokenConfig {
            name: "dashboards".into(),
            file: Some(file),
            env: None,
            scopes: vec![Scope::Read],
        }],
        reload_interval_secs: 30,
    };
    config
}

/// With tokens on the HTTP API the UI is used through its sign-in page: a
/// wrong token is refused, the read token opens a session (an HttpOnly,
/// SameSite=Strict cookie) that the pages and the live stream accept,
/// signing out ends it, and a session past its lifetime opens nothing, in
/// the browser or on the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ui_behind_tokens_in_a_real_browser() {
    let Some((chromium, script)) = browser_and(|root| root.join("tests/browser/sign-in.mjs"))
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let running = service::start(with_tokens(dir.path(), 3600)).await;
    let short = service::start(with_tokens(dir.path(), 1)).await;
    let base =
        |r: &toolscore::app::Running| format!("http://{}", r.addr(Listener::ApiHttp).unwrap());
    let artifacts = artifacts_dir_named("ui-sign-in-artifacts");
    let mut node = Script::spawn(
        &chromium,
        &script,
        &[
            base(&running),
            base(&short),
            "reader-token".to_owned(),
            artifacts.display().to_string(),
        ],
    );
    let (status, stderr) = tokio::time::timeout(FINISH_WITHIN, node.finish())
        .await
        .unwrap_or_else(|_| panic!("sign-in.mjs did not finish within {FINISH_WITHIN:?}"));
    assert!(
        status.success(),
        "sign-in.mjs failed ({status}):\n{}",
        stderr.join("\n")
    );
    running.stop().await.unwrap();
    short.stop().await.unwrap();
}

//! The OpenAPI description served at `GET /openapi.json`: equal to the
//! committed docs/openapi.json, covering every route of the router, and
//! checked against the real service by schemathesis.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use toolscore::listener::Listener;

use common::service::{self, export, test_config};
use serde_json::{Value as Json, json};
use toolscore::span::TraceId;

const REGENERATE: &str = "TOOLSCORE_BLESS=1 cargo test --test openapi served_document";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A service that scores every trace, so listings have scores to show.
async fn start() -> toolscore::app::Running {
    let mut config = test_config();
    config.evaluators.inline = vec![service::count_evaluator(json!({"get_weather": [">=", 1]}))];
    service::start(config).await
}

async fn served_text(base: &str) -> String {
    let response = common::http()
        .get(format!("{base}/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    response.text().await.unwrap()
}

/// docs/openapi.json is the document the service serves; with
/// `TOOLSCORE_BLESS=1` the test rewrites it instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn served_document_equals_docs_openapi_json() {
    let running = start().await;
    let base = format!("http://{}", running.addr(Listener::ApiHttp).unwrap());
    let served = served_text(&base).await;
    assert_eq!(served, served_text(&base).await, "not deterministic");
    running.stop().await.unwrap();
    let path = root().join("docs/openapi.json");
    if std::env::var("TOOLSCORE_BLESS").as_deref() == Ok("1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &served).unwrap();
        println!("wrote {}", path.display());
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != served {
        let line = committed
            .lines()
            .zip(served.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(served.lines().count()));
        panic!(
            "docs/openapi.json differs from the document the service serves (first at line {}): \
             regenerate it with `{REGENERATE}` and commit it",
            line + 1
        );
    }
}

/// Every `.route("…", get(…))` of the HTTP API's router: src/api/http.rs's
/// endpoints and those src/api/mod.rs adds.
fn router_routes() -> Vec<(String, String)> {
    let source = ["src/api/http.rs", "src/api/mod.rs"]
        .map(|f| std::fs::read_to_string(root().join(f)).unwrap())
        .join("\n");
    let re =
        regex::Regex::new(r#"\.route\(\s*"([^"]+)",\s*(get|post|put|delete|patch)\("#).unwrap();
    let routes: Vec<_> = re
        .captures_iter(&source)
        .map(|c| (c[1].to_owned(), c[2].to_owned()))
        .collect();
    assert!(
        routes.len() >= 10,
        "the router's routes not found: {routes:?}"
    );
    routes
}

/// The document is OpenAPI 3.1, names every route of the router with its
/// method (and nothing else), and says what each answers and needs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn document_is_openapi_3_1_and_covers_every_route() {
    let running = start().await;
    let base = format!("http://{}", running.addr(Listener::ApiHttp).unwrap());
    let doc: Json = serde_json::from_str(&served_text(&base).await).unwrap();
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1."),
        "{}",
        doc["openapi"]
    );
    assert_eq!(doc["info"]["title"], "toolscore");
    assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(doc["info"]["license"]["identifier"], "Apache-2.0");
    let paths = doc["paths"].as_object().unwrap();
    let routes = router_routes();
    for (path, method) in &routes {
        assert!(
            paths.get(path).and_then(|p| p.get(method)).is_some(),
            "{} {path} is served but not in the document",
            method.to_uppercase()
        );
    }
    for (path, item) in paths {
        for method in item.as_object().unwrap().keys() {
            assert!(
                routes.iter().any(|(p, m)| p == path && m == method),
                "{method} {path} is in the document but not served"
            );
        }
    }
    let op = |path: &str, method: &str| &paths[path][method];
    let content = |path: &str, method: &str, status: &str| {
        let c = op(path, method)["responses"][status]["content"]
            .as_object()
            .unwrap();
        c.keys().cloned().collect::<Vec<_>>()
    };
    assert_eq!(
        content("/metrics", "get", "200"),
        ["application/openmetrics-text"]
    );
    assert_eq!(content("/v1/watch", "get", "200"), ["text/event-stream"]);
    assert_eq!(content("/v1/watch", "get", "429"), ["application/json"]);
    assert_eq!(content("/v1/evaluate", "post", "413"), ["application/json"]);
    for probe in ["/healthz", "/readyz"] {
        assert!(op(probe, "get").get("security").is_none(), "{probe}");
        assert!(
            op(probe, "get")["responses"].get("401").is_none(),
            "{probe}"
        );
    }
    assert_eq!(
        op("/v1/evaluate", "post")["security"],
        json!([{"bearer": ["evaluate"]}])
    );
    assert_eq!(
        op("/traces", "get")["security"],
        json!([{"bearer": ["read"]}])
    );
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    let params: Vec<_> = op("/traces", "get")["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for name in [
        "min_score",
        "max_score",
        "service",
        "root_name",
        "since",
        "until",
    ] {
        assert!(params.contains(&name), "{name} not in {params:?}");
    }
    running.stop().await.unwrap();
}

/// `GET /traces`'s score and time filters are checked before the store is
/// asked: NaN, a minimum above the maximum and an unreadable time are 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_filters_refuse_nonsense() {
    let running = start().await;
    let base = format!("http://{}", running.addr(Listener::ApiHttp).unwrap());
    let http = common::http();
    for (query, message) in [
        ("min_score=NaN", "min_score must be a number, got NaN"),
        ("max_score=NaN", "max_score must be a number, got NaN"),
        (
            "min_score=0.8&max_score=0.2",
            "min_score (0.8) must not be above max_score (0.2)",
        ),
        (
            "until=yesterday",
            "until must be unix seconds or RFC 3339 with an offset (2026-11-22T06:02:36Z), got \"yesterday\"",
        ),
    ] {
        let r = http
            .get(format!("{base}/traces?{query}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{query}");
        let body: Json = r.json().await.unwrap();
        assert_eq!(
            body,
            json!({"error": {"code": "invalid_argument", "message": message}}),
            "{query}"
        );
    }
    // A misspelt filter is refused, not ignored (which listed everything).
    for path in [
        "/traces?servce=x",
        "/traces/5b8efff798038103d269b633813fc60c/scores?wait=10",
    ] {
        let r = http.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(r.status(), 400, "{path}");
        let body: Json = r.json().await.unwrap();
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("unknown field"), "{path}: {message}");
    }
    for query in [
        "min_score=0.5&max_score=0.5",
        "service=test-agent&root_name=agent",
        "since=0&until=2100-01-01T00:00:00Z",
    ] {
        let r = http
            .get(format!("{base}/traces?{query}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{query}");
    }
    running.stop().await.unwrap();
}

/// schemathesis's venv (.ci/schemathesis/install.sh). Missing: the test
/// fails under CI=true, else it is skipped with a message.
fn schemathesis() -> Option<PathBuf> {
    let path = root().join("target/tmp/schemathesis/bin/schemathesis");
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "schemathesis is missing at {}: run .ci/schemathesis/install.sh",
        path.display()
    );
    println!(
        "skipped: no schemathesis at {} (.ci/schemathesis/install.sh)",
        path.display()
    );
    None
}

/// schemathesis generates requests from the served document and checks
/// each answer against it: no 5xx, every status, content type and body as
/// documented. Two traces are stored first so that the listings have data.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn schemathesis_finds_nothing() {
    let Some(schemathesis) = schemathesis() else {
        return;
    };
    let running = start().await;
    let exporter = service::grpc_exporter(&running);
    for n in [1, 2] {
        export(&exporter, &service::weather_trace(n)).await;
        service::wait_for(
            &running,
            TraceId([n; 16]),
            Duration::from_secs(10),
            service::evaluated(1),
        )
        .await;
    }
    let base = format!("http://{}", running.addr(Listener::ApiHttp).unwrap());
    // Its Hypothesis database and any report stay out of the work tree.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("schemathesis.log");
    let mut child = Command::new(&schemathesis)
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .args(["run", &format!("{base}/openapi.json")])
        .args([
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
            "--phases",
            "examples,coverage,fuzzing",
            "--max-examples",
            "25",
            "--seed",
            "1",
            "--workers",
            "2",
            "--request-timeout",
            "10",
            "--generation-database",
            "none",
            // An endless stream: every request would time out. Its filters
            // are those of GET /traces, and tests/watch_sse.rs reads it.
            "--exclude-path",
            "/v1/watch",
        ])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(Stdio::from(std::fs::File::create(dir.path().join("stderr")).unwrap()))
        .spawn()
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if tokio::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!(
                "schemathesis ran over 180 s:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    let stderr = std::fs::read_to_string(dir.path().join("stderr")).unwrap_or_default();
    assert!(
        status.success(),
        "schemathesis found problems ({status}):\n{output}\n{stderr}"
    );
    println!("{output}");
    running.stop().await.unwrap();
}

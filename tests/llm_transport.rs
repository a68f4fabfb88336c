//! The model providers' HTTP client against the loopback stub: at most
//! `max_concurrency` requests in flight, each attempt under `timeout_ms`,
//! requests counted in `toolscore_llm_*`, and configuration errors that
//! name their key.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::llm_stub::Stub;
use common::pki;
use common::proxy::Tinyproxy;
use toolscore::evaluator::judged::{Method, Reply, Request, Transport};
use toolscore::llm::config::LlmConfig;
use toolscore::llm::http::Provider;
use toolscore::llm::metrics::LlmMetrics;

fn provider_config(yaml: &str) -> LlmConfig {
    let config: LlmConfig =
        serde_saphyr::from_str_with_options(yaml, toolscore::config::yaml_options()).unwrap();
    config.validate().unwrap();
    config
}

fn chat(stub: &Stub) -> Request {
    Request {
        method: Method::Post,
        url: format!("{}/v1/chat/completions", stub.base_url()),
        headers: vec![("authorization".into(), "Bearer k".into())],
        body: Some(serde_json::json!({"model": "m"})),
        attempt: 1,
    }
}

fn ok() -> serde_json::Value {
    serde_json::json!({"status": 200, "body": {"ok": true,
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_in_flight_are_bounded_and_slow_ones_time_out() {
    let stub = Stub::start().await;
    stub.load(&serde_json::json!({"responses": vec![ok(); 6]}));
    stub.set_delay(Duration::from_millis(300));
    let config = provider_config(&format!(
        "providers:\n  p:\n    kind: openai\n    base_url: {}/v1\n    max_concurrency: 2\n    timeout_ms: 5000\n",
        stub.base_url()
    ));
    let mut registry = prometheus_client::registry::Registry::with_prefix("toolscore");
    let metrics = LlmMetrics::register(&mut registry);
    let p = Provider::build("p", &config.providers["p"], metrics.clone()).unwrap();
    let replies =
        futures_util::future::join_all((0..6).map(|_| p.transport.send(chat(&stub)))).await;
    for r in &replies {
        assert!(matches!(r, Reply::Response { status: 200, .. }), "{r:?}");
    }
    assert_eq!(stub.max_in_flight(), 2, "max_concurrency 2");

    // An answer slower than timeout_ms is a timed-out attempt (here a
    // judge's second attempt: a retry).
    stub.set_delay(Duration::from_secs(3));
    let config = provider_config(&format!(
        "providers:\n  p:\n    kind: openai\n    base_url: {}/v1\n    timeout_ms: 100\n",
        stub.base_url()
    ));
    let slow = Provider::build("p", &config.providers["p"], metrics).unwrap();
    let retry = Request {
        attempt: 2,
        ..chat(&stub)
    };
    match slow.transport.send(retry).await {
        Reply::Failed { timed_out, .. } => assert!(timed_out),
        other => panic!("{other:?}"),
    }

    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(
        text.contains(r#"toolscore_llm_requests_total{provider="p",model="m",outcome="2xx"} 6"#),
        "{text}"
    );
    assert!(
        text.contains(
            r#"toolscore_llm_requests_total{provider="p",model="m",outcome="timeout"} 1"#
        ),
        "{text}"
    );
    assert!(
        text.contains(r#"toolscore_llm_retries_total{provider="p"} 1"#),
        "{text}"
    );
    assert!(
        text.contains("toolscore_llm_request_seconds_count"),
        "{text}"
    );
    assert!(
        text.contains(r#"toolscore_llm_tokens_total{provider="p",direction="input"} 600"#),
        "{text}"
    );
    assert!(
        text.contains(r#"toolscore_llm_tokens_total{provider="p",direction="output"} 120"#),
        "{text}"
    );
}

#[tokio::test]
async fn a_refused_connection_is_a_failed_attempt() {
    // A port that was bound and released: nothing listens there.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let config = provider_config(&format!(
        "providers:\n  p:\n    kind: uipath\n    base_url: http://127.0.0.1:{port}/org/tenant\n"
    ));
    let p = Provider::build("p", &config.providers["p"], LlmMetrics::default()).unwrap();
    let request = Request {
        method: Method::Get,
        url: format!("http://127.0.0.1:{port}/org/tenant/agenthub_/llm/api/discovery"),
        headers: vec![],
        body: None,
        attempt: 1,
    };
    match p.transport.send(request).await {
        Reply::Failed { timed_out, message } => {
            assert!(!timed_out);
            assert!(!message.is_empty());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn configuration_errors_name_the_key() {
    let bad = |yaml: &str| -> (String, String) {
        let config: LlmConfig =
            serde_saphyr::from_str_with_options(yaml, toolscore::config::yaml_options()).unwrap();
        let e = config.validate().unwrap_err();
        (e.key, e.message)
    };
    assert_eq!(
        bad("providers:\n  p:\n    kind: openai\n    base_url: ftp://x\n").0,
        "llm.providers.p.base_url"
    );
    assert_eq!(
        bad("providers:\n  p:\n    kind: openai\n    base_url: http://x\n    max_concurrency: 0\n")
            .0,
        "llm.providers.p.max_concurrency"
    );
    assert_eq!(
        bad("providers:\n  p:\n    kind: openai\n    base_url: http://x\n    api_key_file: /a\n    api_key_env: B\n").0,
        "llm.providers.p.api_key_file"
    );
    assert_eq!(
        bad("providers:\n  p:\n    kind: openai\n    base_url: http://x\n    tls:\n      insecure_skip_verify: true\n").0,
        "llm.providers.p.tls"
    );
    for proxy in [
        "https://proxy:3128",
        "socks5://proxy:1080",
        "http://proxy:3128/path",
        "http://",
    ] {
        let (key, message) = bad(&format!(
            "providers:\n  p:\n    kind: openai\n    base_url: http://x\n    proxy: {proxy}\n"
        ));
        assert_eq!(key, "llm.providers.p.proxy", "{proxy}: {message}");
    }
    let (key, message) =
        bad("providers:\n  p:\n    kind: openai\n    base_url: http://x\nuipath_provider: p\n");
    assert_eq!(key, "llm.uipath_provider");
    assert!(message.contains("openai"), "{message}");
    assert_eq!(bad("deepeval_provider: nope\n").0, "llm.deepeval_provider");
    // Files are read when the provider is built.
    let config = provider_config(
        "providers:\n  p:\n    kind: openai\n    base_url: http://x\n    api_key_file: /nonexistent/key\n",
    );
    let e = Provider::build("p", &config.providers["p"], LlmMetrics::default()).unwrap_err();
    assert_eq!(e.key, "llm.providers.p.api_key_file");
    // Two providers of a kind and none named: the judges say which key to set.
    let two = provider_config(
        "providers:\n  a:\n    kind: openai\n    base_url: http://x\n  b:\n    kind: openai\n    base_url: http://y\n",
    );
    let why = two
        .provider_for(toolscore::llm::config::ProviderKind::Openai)
        .unwrap_err();
    assert!(why.contains("llm.deepeval_provider"), "{why}");
}

/// A provider behind an HTTP proxy (tinyproxy, asking for credentials):
/// `proxy` sends an http:// base URL's requests to it in absolute form and
/// tunnels an https:// one's through `CONNECT` (TLS end to end, the CA the
/// provider's `tls` names), with the URL's credentials each time; wrong
/// credentials are the proxy's refusal, and nothing reaches the model.
#[tokio::test]
async fn a_provider_reaches_its_model_through_a_proxy() {
    let Some(proxy) = Tinyproxy::start("judge", "s3cret").await else {
        return;
    };
    let ca = pki::Ca::new("proxy test CA");
    let files = pki::Files::new();
    let ca_file = files.write("ca.pem", &ca.pem());
    let plain = Stub::start().await;
    let tls = Stub::start_https(&ca.server()).await;
    for (stub, password) in [
        (&plain, "s3cret"),
        (&tls, "s3cret"),
        (&plain, "wrong"),
        (&tls, "wrong"),
    ] {
        stub.load(&serde_json::json!({"responses": [ok()]}));
        let mut yaml = format!(
            "providers:\n  p:\n    kind: openai\n    base_url: {}/v1\n    proxy: {}\n",
            stub.base_url(),
            proxy.url("judge", password)
        );
        if stub.base_url().starts_with("https://") {
            yaml += &format!("    tls:\n      ca_file: {}\n", ca_file.display());
        }
        let config = provider_config(&yaml);
        let p = Provider::build("p", &config.providers["p"], LlmMetrics::default()).unwrap();
        let reply = p.transport.send(chat(stub)).await;
        let through = format!("{} with {password:?}", stub.base_url());
        if password == "s3cret" {
            assert!(
                matches!(reply, Reply::Response { status: 200, .. }),
                "{through}: {reply:?}"
            );
            assert_eq!(stub.requests().len(), 1, "{through}");
        } else {
            // http://: tinyproxy answers 401 and closes (before reading the
            // body, so the answer may be lost to the reset); https://: the
            // tunnel is refused, a failed attempt that says so.
            match &reply {
                Reply::Response { status, .. } => assert_eq!(*status, 401, "{through}"),
                Reply::Failed { message, .. } if stub.base_url().starts_with("https://") => {
                    assert!(message.contains("tunnel"), "{through}: {message}")
                }
                Reply::Failed { .. } => {}
            }
            assert!(stub.requests().is_empty(), "{through}");
        }
    }
    // The proxy saw both routes: absolute-form and CONNECT.
    let log = proxy.log();
    assert!(
        log.contains(&format!("POST {}/v1/chat/completions", plain.base_url())),
        "{log}"
    );
    assert!(
        log.contains(&format!("CONNECT localhost:{}", tls.port)),
        "{log}"
    );
}

/// The references' environment variables give providers where none of
/// that kind is configured, and never replace a configured one.
#[test]
fn providers_from_the_environment() {
    let env = |k: &str| match k {
        "OPENAI_API_KEY" => Some("sk".to_owned()),
        "UIPATH_URL" => Some("https://cloud.uipath.com/org/tenant".to_owned()),
        _ => None,
    };
    let config = LlmConfig::default().with_environment(env);
    assert_eq!(
        config.providers["openai"].base_url,
        "https://api.openai.com/v1"
    );
    assert_eq!(
        config.providers["uipath"].api_key_env.as_deref(),
        Some("UIPATH_ACCESS_TOKEN")
    );
    let configured =
        provider_config("providers:\n  mine:\n    kind: openai\n    base_url: http://x\n");
    let config = configured.with_environment(env);
    assert!(!config.providers.contains_key("openai"));
    assert!(config.providers.contains_key("uipath"));
}

/// Identical requests within `cache_ttl_secs` are answered once; another
/// body is another request.
#[tokio::test]
async fn identical_requests_are_answered_from_the_cache() {
    let stub = Stub::start().await;
    stub.load(&serde_json::json!({"responses": vec![ok(); 3]}));
    let config = provider_config(&format!(
        "providers:\n  p:\n    kind: openai\n    base_url: {}/v1\n",
        stub.base_url()
    ));
    let mut registry = prometheus_client::registry::Registry::with_prefix("toolscore");
    let metrics = LlmMetrics::register(&mut registry);
    let p = Provider::build("p", &config.providers["p"], metrics).unwrap();
    let first = p.transport.send(chat(&stub)).await;
    let second = p.transport.send(chat(&stub)).await;
    assert_eq!(first, second);
    assert_eq!(stub.requests().len(), 1);
    let mut other = chat(&stub);
    other.body = Some(serde_json::json!({"model": "other"}));
    p.transport.send(other).await;
    assert_eq!(stub.requests().len(), 2);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(
        text.contains(r#"toolscore_llm_cache_hits_total{provider="p"} 1"#),
        "{text}"
    );
}

/// Past a provider's `max_requests_per_minute`, a judge is refused before
/// it sends anything: `skipped`, with a reason naming the limit, counted.
#[tokio::test]
async fn a_spent_budget_refuses_judges_until_the_minute_ends() {
    use toolscore::evaluator::{Evaluator, EvaluatorType, Status};
    let stub = Stub::start().await;
    let answer = serde_json::json!({"status": 200, "body": {
        "id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4.1",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "t", "name": "submit_evaluation",
                "arguments": {"justification": "ok", "score": 90}}]},
            "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}});
    stub.load(&serde_json::json!({"responses": vec![answer; 3], "discovery": []}));
    let config = provider_config(&format!(
        "providers:\n  gw:\n    kind: uipath\n    base_url: {}/org/tenant\n    max_requests_per_minute: 3\n    cache_ttl_secs: 0\n",
        stub.base_url()
    ));
    let mut registry = prometheus_client::registry::Registry::with_prefix("toolscore");
    let metrics = LlmMetrics::register(&mut registry);
    let judges = toolscore::llm::Judges::build(&config, &metrics).unwrap();
    let kind =
        EvaluatorType::Judge(toolscore::evaluator::judged::uipath::Kind::OutputSemanticSimilarity);
    let mut ev = Evaluator::with_defaults("semantic", kind);
    let cfg = toolscore::pyvalue::json::loads(r#"{"model": "gpt-4.1"}"#).unwrap();
    ev.config = toolscore::evaluator::parse_config(kind, cfg.as_dict().unwrap(), "config").unwrap();
    let criteria = toolscore::pyvalue::json::loads(r#"{"expectedOutput": "x"}"#).unwrap();
    let no_spans = toolscore::record::Spans::from_spans(&[]);
    let view = toolscore::evaluator::judged::TraceView {
        spans: &no_spans,
        calls: &[],
        input: None,
        output: None,
    };
    // The first judge sends discovery and a chat request, the second a chat
    // request: three requests, the minute's budget.
    for _ in 0..2 {
        let o = judges.evaluate_value(&ev, Some(&criteria), view, "").await;
        assert_eq!(o.status, Status::Ok, "{o:?}");
        assert_eq!(o.score, Some(0.9));
    }
    let refused = judges.evaluate_value(&ev, Some(&criteria), view, "").await;
    assert_eq!(refused.status, Status::Skipped);
    assert_eq!(refused.score, None);
    let error = refused.error.unwrap();
    assert!(
        error.contains("llm.providers.gw.max_requests_per_minute (3) is spent"),
        "{error}"
    );
    assert_eq!(stub.requests().len(), 3, "nothing sent once refused");
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(
        text.contains(
            r#"toolscore_llm_budget_refusals_total{provider="gw",limit="max_requests_per_minute"} 1"#
        ),
        "{text}"
    );
}

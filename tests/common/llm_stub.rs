//! A loopback model server for the tests: OpenAI chat completions and the
//! UiPath gateway routes, answering from a case's script (the same
//! semantics as `llm::Script`) and recording every request. Optional slow
//! answers (`delay`) for the concurrency and timeout tests.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, Response, Uri};
use serde_json::Value as Json;

use super::llm::{Recorded, Script, canned};

struct State {
    script: Mutex<Arc<Script>>,
    requests: Mutex<Vec<Recorded>>,
    delay: Mutex<Duration>,
    in_flight: std::sync::atomic::AtomicUsize,
    max_in_flight: std::sync::atomic::AtomicUsize,
    arrived: tokio::sync::Notify,
}

/// The running stub; stops with the test's runtime.
#[derive(Clone)]
pub struct Stub {
    pub port: u16,
    state: Arc<State>,
    https: bool,
}

impl Stub {
    /// Starts a stub on an ephemeral loopback port on the current runtime.
    pub async fn start() -> Stub {
        let state = Self::state();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let app = Self::app(&state);
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Stub {
            port,
            state,
            https: false,
        }
    }

    /// As [`Stub::start`], over TLS with `leaf` as its certificate.
    pub async fn start_https(leaf: &super::pki::Leaf) -> Stub {
        let state = Self::state();
        let (listener, _failures) = super::tls_listener::TlsListener::bind(leaf).await;
        let port = listener.port();
        let app = Self::app(&state);
        tokio::spawn(async move { axum::serve(listener, app).await });
        Stub {
            port,
            state,
            https: true,
        }
    }

    fn state() -> Arc<State> {
        Arc::new(State {
            script: Mutex::new(Arc::new(Script::new(&Json::Null))),
            requests: Mutex::new(Vec::new()),
            delay: Mutex::new(Duration::ZERO),
            in_flight: Default::default(),
            max_in_flight: Default::default(),
            arrived: tokio::sync::Notify::new(),
        })
    }

    fn app(state: &Arc<State>) -> axum::Router {
        let s = state.clone();
        axum::Router::new().fallback(move |method, uri, headers, body| {
            let s = s.clone();
            async move { handle(s, method, uri, headers, body).await }
        })
    }

    /// Replaces the script and clears the log.
    pub fn load(&self, script: &Json) {
        *self.state.script.lock().unwrap() = Arc::new(Script::new(script));
        self.state.requests.lock().unwrap().clear();
    }

    /// Every answer waits this long first.
    pub fn set_delay(&self, d: Duration) {
        *self.state.delay.lock().unwrap() = d;
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    /// Waits until `n` requests have arrived; panics at `timeout`.
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let arrived = self.state.arrived.notified();
            if self.state.requests.lock().unwrap().len() >= n {
                return;
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                panic!("fewer than {n} requests arrived in {timeout:?}");
            }
        }
    }

    /// The most requests that were in flight at once.
    pub fn max_in_flight(&self) -> usize {
        self.state
            .max_in_flight
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// `http://127.0.0.1:<port>`, or `https://localhost:<port>` (the name
    /// its certificate has).
    pub fn base_url(&self) -> String {
        if self.https {
            format!("https://localhost:{}", self.port)
        } else {
            format!("http://127.0.0.1:{}", self.port)
        }
    }

    /// `llm:` pointing both provider kinds at the stub, with the tokens the
    /// recordings show, read from files (in `dir`) as a deployment would; no
    /// reply cache (every case's script answers its own requests).
    pub fn config(&self, dir: &std::path::Path) -> toolscore::llm::config::LlmConfig {
        std::fs::write(dir.join("openai-key"), "sk-stub\n").unwrap();
        std::fs::write(dir.join("uipath-token"), "stub-token").unwrap();
        let yaml = format!(
            "providers:\n  openai:\n    kind: openai\n    base_url: {0}/v1\n    api_key_file: {1}/openai-key\n    cache_ttl_secs: 0\n  uipath:\n    kind: uipath\n    base_url: {0}/org/tenant\n    api_key_file: {1}/uipath-token\n    cache_ttl_secs: 0\n",
            self.base_url(),
            dir.display()
        );
        let config: toolscore::llm::config::LlmConfig =
            serde_saphyr::from_str_with_options(&yaml, toolscore::config::yaml_options()).unwrap();
        config.validate().unwrap();
        config
    }
}

async fn handle(
    state: Arc<State>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    use std::sync::atomic::Ordering::SeqCst;
    let sent: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                v.to_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let path_and_query = uri.path_and_query().map_or("/", |p| p.as_str());
    let rec = Recorded::from_parts(method.as_str(), path_and_query, &sent, &body);
    let path = rec.path.clone();
    state.requests.lock().unwrap().push(rec);
    state.arrived.notify_waiters();
    let now = state.in_flight.fetch_add(1, SeqCst) + 1;
    state.max_in_flight.fetch_max(now, SeqCst);
    let delay = *state.delay.lock().unwrap();
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let script = state.script.lock().unwrap().clone();
    let answer = script.answer(method.as_str(), &path);
    state.in_flight.fetch_sub(1, SeqCst);
    let (status, headers, bytes) = canned(&answer);
    let mut resp = Response::builder().status(status);
    for (k, v) in headers {
        resp = resp.header(k, v);
    }
    resp.body(Body::from(bytes)).unwrap()
}

/// A UiPath gateway answer: the `submit_evaluation` tool call scoring
/// `score`, reporting 150 tokens (120 in, 30 out).
pub fn answer(score: u32) -> Json {
    serde_json::json!({"status": 200, "body": {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4.1-2025-04-14",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "t", "name": "submit_evaluation",
                "arguments": {"justification": "close enough", "score": score}}]},
            "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}}})
}

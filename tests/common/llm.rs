//! The LLM-judged conformance cases (`../shared/conformance/llm/cases.jsonl`)
//! and a model that replays a case's script: each chat POST takes the next
//! canned response, discovery GETs are answered from the script's
//! `discovery`, an exhausted queue answers 599 (as the recording stub did).
//! The same script drives the loopback HTTP stub in `llm_stub.rs`.

use std::path::PathBuf;
use std::sync::Mutex;

use serde_json::Value as Json;
use toolscore::evaluator::judged::{Method, Reply, Request, Transport};
use toolscore::evaluator::{Outcome, Status};

use super::conformance::{self, Case, canonical_reason};

/// The stub's port placeholder in the recorded requests and error texts.
pub const STUB_PORT: &str = "{STUB_PORT}";

pub fn cases_path() -> PathBuf {
    if let Ok(p) = std::env::var("TOOLSCORE_LLM_CONFORMANCE_CASES") {
        return PathBuf::from(p);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/llm/cases.jsonl")
}

/// One LLM case: the deterministic case's fields, plus the script and the
/// execution inputs.
pub struct LlmCase {
    pub case: Case,
    pub json: Json,
}

impl LlmCase {
    pub fn id(&self) -> &str {
        &self.case.id
    }

    /// The case's `llm` script.
    pub fn script(&self) -> &Json {
        &self.json["llm"]
    }

    pub fn expected(&self) -> &Json {
        &self.json["expected"]
    }

    /// `execution.simulation_instructions` (uipath), `""` when absent.
    pub fn simulation_instructions(&self) -> String {
        self.json["execution"]["simulation_instructions"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    }

    pub fn spans(&self) -> Vec<toolscore::span::Span> {
        conformance::spans(&self.case)
    }

    /// The evaluator type id a config names (the recordings call deepeval's
    /// LLM path `tool-correctness-llm`).
    pub fn type_id(&self) -> &str {
        match self.case.evaluator_type.as_str() {
            "tool-correctness-llm" => "deepeval-tool-correctness",
            other => other,
        }
    }

    /// Whether the case runs as configured evaluation does (an eval set,
    /// a rule): criteria given or a default to take (else the file is
    /// refused at load), and no `{{SimulationInstructions}}` (empty in
    /// UiPath's evaluation runtime, and in toolscore's).
    pub fn runs_as_configured(&self) -> bool {
        let line: Json = serde_json::from_str(&self.case.line).unwrap_or_default();
        let config = &line["evaluator"]["config"];
        let has_default = config.get("defaultEvaluationCriteria").is_some()
            || config.get("default_evaluation_criteria").is_some();
        (!line["criteria"].is_null() || has_default) && self.simulation_instructions().is_empty()
    }
}

/// The project's own recorded cases (tests/llm/README.md): shapes the
/// shared cases lack, recorded from the reference library.
pub fn own_cases_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/llm/recorded.jsonl")
}

/// The shared cases, then the project's own.
pub fn load_cases() -> Vec<LlmCase> {
    let mut cases = load_cases_at(&cases_path());
    cases.extend(load_cases_at(&own_cases_path()));
    cases
}

fn load_cases_at(path: &std::path::Path) -> Vec<LlmCase> {
    let cases = conformance::load_cases_from(path);
    let text = std::fs::read_to_string(path).unwrap();
    let jsons: Vec<Json> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(cases.len(), jsons.len());
    cases
        .into_iter()
        .zip(jsons)
        .map(|(case, json)| LlmCase { case, json })
        .collect()
}

/// A request as the recording stub logged it: method, path, query,
/// whitelisted headers, body.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: serde_json::Map<String, Json>,
    pub headers: serde_json::Map<String, Json>,
    pub body: Json,
}

/// The headers the recordings keep (`stub_llm.py`'s `KEEP_HEADERS`).
pub const KEEP_HEADERS: &[&str] = &[
    "authorization",
    "content-type",
    "x-uipath-streaming-enabled",
    "x-uipath-llmgateway-requestingproduct",
    "x-uipath-llmgateway-requestingfeature",
    "x-uipath-agenthub-config",
    "x-uipath-llmgateway-actionid",
    "x-uipath-llmgateway-normalizedapi-modelname",
    "x-uipath-llmgateway-allowfull4xxresponse",
];

impl Recorded {
    /// From the recording's JSON form.
    pub fn from_json(j: &Json) -> Recorded {
        Recorded {
            method: j["method"].as_str().unwrap().to_owned(),
            path: j["path"].as_str().unwrap().to_owned(),
            query: j["query"].as_object().cloned().unwrap_or_default(),
            headers: j["headers"].as_object().cloned().unwrap_or_default(),
            body: j["body"].clone(),
        }
    }

    /// What the stub would log for `method`, a URL's path and query (split
    /// by the caller), the sent headers and the body bytes.
    pub fn from_parts(
        method: &str,
        path_and_query: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Recorded {
        let (path, query) = path_and_query
            .split_once('?')
            .unwrap_or((path_and_query, ""));
        let mut q = serde_json::Map::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            q.insert(k.to_owned(), Json::String(v.to_owned()));
        }
        let mut h = serde_json::Map::new();
        for (k, v) in headers {
            let k = k.to_ascii_lowercase();
            if KEEP_HEADERS.contains(&k.as_str()) {
                h.insert(k, Json::String(v.clone()));
            }
        }
        let body = if body.is_empty() {
            Json::Null
        } else {
            serde_json::from_slice(body)
                .unwrap_or_else(|_| serde_json::json!({"_unparsed": String::from_utf8_lossy(body)}))
        };
        Recorded {
            method: method.to_owned(),
            path: path.to_owned(),
            query: q,
            headers: h,
            body,
        }
    }

    /// A request a judge built, as the stub would log it.
    pub fn from_request(r: &Request) -> Recorded {
        let rest = r
            .url
            .split_once("://")
            .map(|(_, rest)| rest)
            .unwrap_or(&r.url);
        let path_and_query = rest.find('/').map(|i| &rest[i..]).unwrap_or("/");
        let mut headers = r.headers.clone();
        let body = match &r.body {
            Some(b) => {
                headers.push(("content-type".into(), "application/json".into()));
                serde_json::to_vec(b).unwrap()
            }
            None => Vec::new(),
        };
        Recorded::from_parts(r.method.as_str(), path_and_query, &headers, &body)
    }
}

/// Compares what was sent with what the reference sent, in order: bodies
/// as JSON values (key order too), whitelisted headers, method, path, query.
pub fn compare_requests(expected: &Json, got: &[Recorded]) -> Result<(), String> {
    let want: Vec<Recorded> = expected
        .as_array()
        .unwrap()
        .iter()
        .map(Recorded::from_json)
        .collect();
    if want.len() != got.len() {
        return Err(format!(
            "{} requests expected, {} sent: expected {:?}, sent {:?}",
            want.len(),
            got.len(),
            want.iter()
                .map(|r| (&r.method, &r.path))
                .collect::<Vec<_>>(),
            got.iter().map(|r| (&r.method, &r.path)).collect::<Vec<_>>()
        ));
    }
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        if w.method != g.method || w.path != g.path || w.query != g.query {
            return Err(format!(
                "request {i}: expected {} {} {:?}, sent {} {} {:?}",
                w.method, w.path, w.query, g.method, g.path, g.query
            ));
        }
        if w.headers != g.headers {
            return Err(format!(
                "request {i} headers:\nexpected {:?}\n    sent {:?}",
                w.headers, g.headers
            ));
        }
        // As text, so that key order counts.
        let (wb, gb) = (
            serde_json::to_string(&w.body).unwrap(),
            serde_json::to_string(&g.body).unwrap(),
        );
        if wb != gb {
            return Err(format!("request {i} body:\nexpected {wb}\n    sent {gb}"));
        }
    }
    Ok(())
}

/// A canned response's bytes, status and headers, as the stub sends them:
/// `body` through Python's `json.dumps(ensure_ascii=False)`, `body_text`
/// as is.
pub fn canned(resp: &Json) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let status = resp["status"].as_u64().unwrap_or(200) as u16;
    let mut headers: Vec<(String, String)> = resp["headers"]
        .as_object()
        .map(|h| {
            h.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default();
    let body = if let Some(t) = resp.get("body_text") {
        t.as_str().unwrap().as_bytes().to_vec()
    } else {
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        {
            headers.push(("Content-Type".into(), "application/json".into()));
        }
        py_dumps(&resp["body"]).into_bytes()
    };
    (status, headers, body)
}

/// The stub's answer to an exhausted queue.
pub fn exhausted() -> Json {
    serde_json::json!({"status": 599, "body": {"error": "stub: no scripted response left"}})
}

/// The script's state: the queue of chat responses and the discovery reply.
pub struct Script {
    responses: Mutex<std::collections::VecDeque<Json>>,
    discovery: Json,
}

impl Script {
    pub fn new(script: &Json) -> Script {
        Script {
            responses: Mutex::new(
                script["responses"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .into(),
            ),
            discovery: script
                .get("discovery")
                .cloned()
                .unwrap_or(Json::Array(vec![])),
        }
    }

    /// The canned response for a request to `path` (with `method`).
    pub fn answer(&self, method: &str, path: &str) -> Json {
        if method == "GET" && path.ends_with("/llm/api/discovery") {
            return serde_json::json!({"status": 200, "body": self.discovery});
        }
        if method == "POST" && path.ends_with("/chat/completions") {
            return self
                .responses
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or_else(exhausted);
        }
        serde_json::json!({"status": 404, "body": {"error": format!("stub: no route {method} {path}")}})
    }
}

/// A [`Transport`] replaying a case's script in process, recording every
/// request. The integration tests also run the same cases over HTTP.
pub struct Replay {
    script: Script,
    pub sent: Mutex<Vec<Recorded>>,
}

impl Replay {
    pub fn new(script: &Json) -> Replay {
        Replay {
            script: Script::new(script),
            sent: Mutex::new(Vec::new()),
        }
    }

    pub fn sent(&self) -> Vec<Recorded> {
        self.sent.lock().unwrap().clone()
    }
}

impl Transport for Replay {
    fn send(&self, request: Request) -> impl std::future::Future<Output = Reply> + Send {
        let rec = Recorded::from_request(&request);
        let method = match request.method {
            Method::Get => "GET",
            Method::Post => "POST",
        };
        let resp = self.script.answer(method, &rec.path);
        self.sent.lock().unwrap().push(rec);
        let (status, headers, body) = canned(&resp);
        let headers = headers
            .into_iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect();
        std::future::ready(Reply::Response {
            status,
            headers,
            body,
        })
    }
}

/// The stub's base URL with the port placeholder replaced.
pub fn with_port(text: &str, port: u16) -> String {
    text.replace(STUB_PORT, &port.to_string())
}

/// Python's `json.dumps(v, ensure_ascii=False)`: `", "` and `": "`
/// separators, floats as `repr`.
pub fn py_dumps(v: &Json) -> String {
    let mut out = String::new();
    dump(v, &mut out);
    out
}

fn dump(v: &Json, out: &mut String) {
    match v {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => {
            if n.is_f64() {
                let f = n.as_f64().unwrap();
                toolscore::pyvalue::repr::float_repr(f, out);
            } else {
                out.push_str(&n.to_string());
            }
        }
        Json::String(s) => {
            out.push_str(&serde_json::to_string(s).unwrap());
        }
        Json::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                dump(x, out);
            }
            out.push(']');
        }
        Json::Object(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&serde_json::to_string(k).unwrap());
                out.push_str(": ");
                dump(x, out);
            }
            out.push('}');
        }
    }
}

/// Checks an outcome against the case's expected score, details and error
/// (the stub's port placeholder already replaced by the caller).
pub fn check_outcome(case: &LlmCase, got: &Outcome) -> Result<(), String> {
    check_expected(case, case.expected(), got)
}

/// [`check_outcome`] against `expected` (a copy of the case's with the
/// port filled in, for the HTTP runs).
pub fn check_expected(case: &LlmCase, expected: &Json, got: &Outcome) -> Result<(), String> {
    if case.case.evaluator_type == "tool-correctness-llm" {
        check_deepeval(expected, got)
    } else {
        check_uipath(expected, got)
    }
}

/// deepeval: an exception is the error text; otherwise the score, its int
/// flag, and every detail exactly (the reason modulo the set order of its
/// deterministic part, as in `conformance.rs`).
fn check_deepeval(expected: &Json, got: &Outcome) -> Result<(), String> {
    if let Some(err) = expected["error"].as_str() {
        return match &got.error {
            Some(e) if e == err => Ok(()),
            other => Err(format!("error:\nexpected {err:?}\n     got {other:?}")),
        };
    }
    if let Some(e) = &got.error {
        return Err(format!("unexpected error {e}"));
    }
    let want = expected["score"].as_f64().ok_or("no expected score")?;
    let score = got.score.ok_or("no score")?;
    if score.to_bits() != want.to_bits() {
        return Err(format!("score: expected {want}, got {score}"));
    }
    let ed = &expected["details"];
    if ed["score_is_int"].as_bool() != Some(got.score_is_int) {
        return Err(format!("score_is_int: expected {}", ed["score_is_int"]));
    }
    let details = got.details.to_json();
    let (Some(want), Some(have)) = (ed.as_object(), details.as_object()) else {
        return Err(format!("details are not objects: {details}"));
    };
    let want_keys: Vec<&String> = want.keys().collect();
    let have_keys: Vec<&String> = have.keys().collect();
    if want_keys != have_keys {
        return Err(format!(
            "detail keys: expected {want_keys:?}, got {have_keys:?}"
        ));
    }
    for (k, v) in want {
        let h = &have[k];
        let same = if k == "reason" {
            canonical_reason(v.as_str().unwrap_or("")) == canonical_reason(h.as_str().unwrap_or(""))
        } else {
            serde_json::to_string(v).ok() == serde_json::to_string(h).ok()
        };
        if !same {
            return Err(format!("details.{k}:\nexpected {v}\n     got {h}"));
        }
    }
    Ok(())
}

/// uipath: status, score (an `ErrorEvaluationResult`'s 0.0 is no score
/// here), details as JSON text (key order counts) and error.
fn check_uipath(expected: &Json, got: &Outcome) -> Result<(), String> {
    let want_error = expected["score_type"] == "error" || expected["score"].is_null();
    if want_error != (got.status == Status::Error) {
        return Err(format!(
            "status: expected error={want_error}, got {:?} ({:?})",
            got.status, got.error
        ));
    }
    let want_score = expected["score"].as_f64();
    let got_score = match (&expected["score_type"], got.status) {
        // An ErrorEvaluationResult's score is 0.0; toolscore reports none.
        (Json::String(t), Status::Error) if t == "error" => Some(0.0),
        _ => got.score,
    };
    if want_score.map(f64::to_bits) != got_score.map(f64::to_bits) {
        return Err(format!("score: expected {want_score:?}, got {got_score:?}"));
    }
    let want_details = serde_json::to_string(&expected["details"]).unwrap();
    let got_details = got.details.to_string();
    if want_details != got_details {
        return Err(format!(
            "details:\nexpected {want_details}\n     got {got_details}"
        ));
    }
    let want_err = expected["error"].as_str();
    if want_err != got.error.as_deref() {
        return Err(format!(
            "error:\nexpected {want_err:?}\n     got {:?}",
            got.error
        ));
    }
    Ok(())
}

/// A score as the HTTP API shows it, as an [`Outcome`] for the checks.
pub fn outcome_of_json(score: &Json) -> Outcome {
    Outcome {
        status: score["status"]
            .as_str()
            .and_then(Status::parse)
            .unwrap_or(Status::Ok),
        score: score["score"].as_f64(),
        score_is_int: score["score"].is_i64() || score["score"].is_u64(),
        details: toolscore::evaluator::OutcomeDetails::Value(score["details"].clone()),
        error: score["error"].as_str().map(str::to_owned),
        passed: None,
        threshold: None,
    }
}

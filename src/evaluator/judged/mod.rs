//! The LLM-judged evaluators: deepeval's tool selection and UiPath's LLM
//! judges, reproducing the requests the reference libraries send and the
//! scores they derive from the model's answers (`conformance/llm/README.md`).
//!
//! A judge is an async function of a trace, its evaluator's config and
//! criteria, and a [`Transport`]: it builds the reference's exact requests,
//! applies the reference's retry rules to the replies, and turns the answer
//! (or the failure) into an [`Outcome`](super::Outcome) as the reference
//! would. The transport only moves bytes, so the same judge runs against the
//! real HTTP client (`llm/http.rs`) and a recorded script in tests.

pub mod deepeval;
mod deepeval_prompt;
mod deepeval_reply;
mod jiter_check;
mod openai_models;
pub mod uipath;

use std::future::Future;

use serde_json::Value as Json;

use crate::extract::ToolCall;
use crate::record::{AttrRef, SpanRef, Spans};

/// The HTTP methods the references use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
        }
    }
}

/// One request a judge sends, as the reference sends it.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub method: Method,
    /// The full URL, query string included.
    pub url: String,
    /// Header names as the reference writes them; the transport adds
    /// `content-type: application/json` when there is a body.
    pub headers: Vec<(String, String)>,
    /// The JSON body, key order as the reference writes it (sent compact).
    pub body: Option<Json>,
    /// 1 for a first attempt, then 2, 3… as the judge retries it (the
    /// retries metric); not sent.
    pub attempt: u32,
}

/// What came back for one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Response {
        status: u16,
        /// Header names lower-cased.
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// No response: the connection failed or the attempt timed out. The
    /// message names the cause (`connection refused`, `timed out`).
    Failed { message: String, timed_out: bool },
}

impl Reply {
    /// A header's value (names compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        match self {
            Reply::Response { headers, .. } => headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str()),
            Reply::Failed { .. } => None,
        }
    }
}

/// Moves a judge's requests to the model and back. One call is one
/// attempt: retries are the judge's (they follow each reference's rules).
pub trait Transport: Send + Sync {
    fn send(&self, request: Request) -> impl Future<Output = Reply> + Send;
}

/// A model endpoint as a judge sees it: where to send and the credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The base URL without a trailing slash: `https://api.openai.com/v1`
    /// for an OpenAI-compatible endpoint, `https://cloud.uipath.com/org/tenant`
    /// for the UiPath gateway.
    pub base_url: String,
    /// The API key or bearer token (`Authorization: Bearer …`).
    pub token: String,
    /// UiPath only: `X-UiPath-LlmGateway-ActionId` (the eval set run id)
    /// when set.
    pub action_id: Option<String>,
}

/// The attributes `trace_to_str` reads (the reference's fixed keys): kept
/// whatever the conventions say.
pub const TRACE_ATTRIBUTES: [&str; 3] = ["tool.name", "input.value", "output.value"];

/// What the judges read from a trace.
#[derive(Debug, Clone, Copy)]
pub struct TraceView<'a> {
    /// Every span of the trace, in the order received.
    pub spans: &'a Spans,
    /// The tool calls extraction made (the deterministic evaluators' input).
    pub calls: &'a [ToolCall],
    /// The root span's input attribute (`input.value` unless configured):
    /// deepeval's `LLMTestCase.input`, UiPath's `agent_input`.
    pub input: Option<AttrRef<'a>>,
    /// The root span's output attribute (`output.value` unless configured):
    /// UiPath's `workload_output`.
    pub output: Option<AttrRef<'a>>,
}

/// The root span: the earliest-starting span without a parent (ties: the
/// smaller span id).
pub fn root_span(spans: &Spans) -> Option<SpanRef<'_>> {
    spans
        .iter()
        .filter(|s| s.is_root())
        .min_by_key(|s| (s.start_time_unix_nano, s.span_id))
}

//! A transport that notes the model call a judge made, for the `gen_ai.*`
//! attributes of its exported result span.

use std::sync::Mutex;

use serde_json::Value as Json;

use super::http::{Provider, model_of};
use crate::evaluator::judged::{Reply, Request, Transport};
use crate::store::ModelCall;

/// The last chat request of a judge, and what its answer said.
#[derive(Debug, Default)]
pub struct CallLog(Mutex<Option<ModelCall>>);

impl CallLog {
    pub fn take(self) -> Option<ModelCall> {
        self.0.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, call: ModelCall) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(call);
    }
}

/// The provider's transport, noting each chat request (one with a body;
/// UiPath's model discovery has none) in the log.
pub struct Traced<'a> {
    provider: &'a Provider,
    log: &'a CallLog,
}

impl<'a> Traced<'a> {
    pub fn new(provider: &'a Provider, log: &'a CallLog) -> Traced<'a> {
        Traced { provider, log }
    }
}

impl Transport for Traced<'_> {
    async fn send(&self, request: Request) -> Reply {
        let Some(body) = &request.body else {
            return self.provider.transport.send(request).await;
        };
        let uri = request.url.parse::<http::Uri>().ok();
        let mut call = ModelCall {
            provider: self.provider.kind.as_str(),
            model: model_of(&request).to_owned(),
            server_address: uri.as_ref().and_then(|u| u.host()).map(str::to_owned),
            server_port: uri.as_ref().and_then(|u| {
                u.port_u16().or(match u.scheme_str() {
                    Some("https") => Some(443),
                    Some("http") => Some(80),
                    _ => None,
                })
            }),
            temperature: body.get("temperature").and_then(Json::as_f64),
            max_tokens: body
                .get("max_tokens")
                .or_else(|| body.get("max_completion_tokens"))
                .and_then(Json::as_u64),
            ..ModelCall::default()
        };
        let reply = self.provider.transport.send(request).await;
        if let Reply::Response {
            status: 200..=299,
            body,
            ..
        } = &reply
            && let Ok(answer) = serde_json::from_slice::<Answer>(body)
        {
            call.response_id = answer.id;
            call.response_model = answer.model;
            call.input_tokens = answer.usage.as_ref().and_then(|u| u.prompt_tokens);
            call.output_tokens = answer.usage.as_ref().and_then(|u| u.completion_tokens);
        }
        self.log.set(call);
        reply
    }
}

/// The parts of a chat-completions answer (OpenAI's and the UiPath
/// gateway's alike) the attributes report; the rest is ignored.
#[derive(serde::Deserialize)]
struct Answer {
    id: Option<String>,
    model: Option<String>,
    usage: Option<Usage>,
}

#[derive(serde::Deserialize)]
struct Usage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

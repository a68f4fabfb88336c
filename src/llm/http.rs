//! The real transport: HTTP(S) to a configured provider, at most
//! `max_concurrency` requests in flight, each attempt under `timeout_ms`,
//! answers bounded in bytes.

use crate::key_error::KeyError;
use std::num::NonZeroU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::Semaphore;

use super::budget::{Budget, Spent};
use super::cache::ReplyCache;
use super::config::{ProviderConfig, ProviderKind};
use super::metrics::LlmMetrics;
use crate::evaluator::judged::{Endpoint, Method, Reply, Request, Transport};
use crate::http_client::{HttpClient, HttpError, Proxies};

/// The largest answer read from a model; a chat completion is kilobytes.
pub const MAX_RESPONSE_BYTES: usize = 8 << 20;

/// A configured provider, ready to call.
#[derive(Debug, Clone)]
pub struct Provider {
    pub name: Arc<str>,
    pub kind: ProviderKind,
    pub endpoint: Endpoint,
    pub transport: HttpTransport,
}

impl Provider {
    /// Reads the provider's key and TLS files and builds its client.
    pub fn build(
        name: &str,
        config: &ProviderConfig,
        metrics: LlmMetrics,
    ) -> Result<Provider, KeyError> {
        let at = |key: &str| format!("llm.providers.{name}.{key}");
        let token = if let Some(path) = &config.api_key_file {
            std::fs::read_to_string(path)
                .map_err(|e| KeyError {
                    key: at("api_key_file"),
                    message: format!("cannot read {}: {e}", path.display()),
                })?
                .trim()
                .to_owned()
        } else if let Some(var) = &config.api_key_env {
            std::env::var(var).map_err(|_| KeyError {
                key: at("api_key_env"),
                message: format!("the environment variable {var} is not set"),
            })?
        } else {
            String::new()
        };
        let tls = if config.base_url.starts_with("https://") {
            let tls = crate::tls::keyed::build(&at("tls"), &config.tls, &[b"h2", b"http/1.1"])?;
            Some(tls)
        } else {
            None
        };
        let proxies = match &config.proxy {
            Some(url) => Proxies::all(url),
            None => Proxies::from_env(),
        };
        let client = HttpClient::with_proxies(
            tls,
            Duration::from_millis(config.timeout_ms),
            MAX_RESPONSE_BYTES,
            Some(proxies),
        )
        .map_err(|e| KeyError {
            key: format!("llm.providers.{name}"),
            message: e.to_string(),
        })?;
        let name: Arc<str> = Arc::from(name);
        Ok(Provider {
            name: name.clone(),
            kind: config.kind,
            endpoint: Endpoint {
                base_url: config.base_url.trim_end_matches('/').to_owned(),
                token,
                action_id: config.action_id.clone(),
            },
            transport: HttpTransport {
                client,
                slots: Arc::new(Semaphore::new(config.max_concurrency)),
                budget: Arc::new(Budget::new(
                    config.max_requests_per_minute.map(NonZeroU64::get),
                    config.max_tokens_per_minute.map(NonZeroU64::get),
                )),
                cache: Arc::new(ReplyCache::new(
                    Duration::from_secs(config.cache_ttl_secs),
                    config.cache_max_bytes,
                )),
                provider: name,
                metrics,
            },
        })
    }
}

/// The pooled client of `crate::http_client` behind a semaphore of
/// `max_concurrency` slots.
#[derive(Debug, Clone)]
pub struct HttpTransport {
    client: HttpClient,
    slots: Arc<Semaphore>,
    budget: Arc<Budget>,
    cache: Arc<ReplyCache>,
    provider: Arc<str>,
    metrics: LlmMetrics,
}

impl HttpTransport {
    async fn attempt(&self, request: Request) -> Reply {
        let method = match request.method {
            Method::Get => http::Method::GET,
            Method::Post => http::Method::POST,
        };
        let mut builder = http::Request::builder().method(method).uri(&request.url);
        for (k, v) in &request.headers {
            builder = builder.header(k, v);
        }
        let body = match &request.body {
            Some(body) => {
                builder = builder.header(http::header::CONTENT_TYPE, "application/json");
                Bytes::from(body.to_string())
            }
            None => Bytes::new(),
        };
        let response = match builder.body(body) {
            Ok(request) => self.client.send(request).await,
            Err(e) => Err(HttpError::from(e)),
        };
        let response = match response {
            Ok(r) => r,
            Err(e) => {
                return Reply::Failed {
                    message: e.to_string(),
                    timed_out: e.is_timeout(),
                };
            }
        };
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        Reply::Response {
            status: response.status().as_u16(),
            headers,
            body: response.into_body().into(),
        }
    }
}

impl HttpTransport {
    /// Whether a judge may start: `Err` names the limit spent this minute
    /// (and counts the refusal).
    pub fn admit(&self) -> Result<(), Spent> {
        self.budget.check(Instant::now()).inspect_err(|spent| {
            self.metrics.budget_refused(&self.provider, spent.key);
        })
    }
}

impl Transport for HttpTransport {
    async fn send(&self, request: Request) -> Reply {
        let key = self.cache.key(&request);
        if let Some(hit) = key.as_ref().and_then(|k| self.cache.get(k, Instant::now())) {
            self.metrics.cache_hit(&self.provider);
            return hit;
        }
        // The semaphore is never closed, so acquiring only waits.
        let _slot = self.slots.acquire().await;
        let started = Instant::now();
        let labels = (model_of(&request).to_owned(), request.attempt);
        let reply = self.attempt(request).await;
        let tokens = self
            .metrics
            .observe(&self.provider, labels, &reply, started.elapsed());
        self.budget.spend(Instant::now(), tokens);
        if let Some(key) = key {
            self.cache.put(key, &reply, Instant::now());
        }
        reply
    }
}

/// The model a request asks: the body's `model` (OpenAI-compatible), the
/// model header (the UiPath gateway), or nothing (UiPath's discovery).
pub fn model_of(request: &Request) -> &str {
    request
        .body
        .as_ref()
        .and_then(|b| b.get("model"))
        .and_then(serde_json::Value::as_str)
        .or_else(|| {
            request
                .headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(MODEL_HEADER))
                .map(|(_, v)| v.as_str())
        })
        .unwrap_or("")
}

/// Where the UiPath gateway's requests name their model.
const MODEL_HEADER: &str = "X-UiPath-LlmGateway-NormalizedApi-ModelName";

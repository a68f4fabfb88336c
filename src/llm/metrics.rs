//! The model calls' metrics: requests by provider and outcome, and their
//! latency. Registered under `toolscore_llm_*` by the service; `toolscore
//! eval` keeps an unregistered set.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

use crate::evaluator::judged::Reply;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabel {
    pub provider: Arc<str>,
    /// The model asked (the body's `model`, the UiPath gateway's model
    /// header); empty for UiPath's model discovery.
    pub model: String,
    /// The HTTP status class (`2xx`, `4xx`, `5xx`), `timeout` or `error`.
    pub outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ProviderLabel {
    pub provider: Arc<str>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BudgetLabel {
    pub provider: Arc<str>,
    /// The limit that was spent: `max_requests_per_minute` or `max_tokens_per_minute`.
    pub limit: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TokenLabel {
    pub provider: Arc<str>,
    /// `input` (the prompt) or `output` (the completion).
    pub direction: &'static str,
}

/// The part of an answer the token counters read (OpenAI's and the UiPath
/// gateway's `usage` alike); anything else in the body is ignored.
#[derive(serde::Deserialize)]
struct Usage {
    usage: Option<Tokens>,
}

#[derive(serde::Deserialize)]
struct Tokens {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

/// Cheap to clone: every clone updates the same series.
#[derive(Clone, Debug)]
pub struct LlmMetrics {
    requests: Family<RequestLabel, Counter>,
    latency: Family<ProviderLabel, Histogram>,
    tokens: Family<TokenLabel, Counter>,
    cache_hits: Family<ProviderLabel, Counter>,
    budget_refusals: Family<BudgetLabel, Counter>,
    retries: Family<ProviderLabel, Counter>,
}

impl Default for LlmMetrics {
    fn default() -> Self {
        LlmMetrics {
            requests: Family::default(),
            latency: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.05, 2.0, 12))
            }),
            tokens: Family::default(),
            cache_hits: Family::default(),
            budget_refusals: Family::default(),
            retries: Family::default(),
        }
    }
}

impl LlmMetrics {
    /// A set registered in `registry` (whose prefix is `toolscore`).
    pub fn register(registry: &mut Registry) -> LlmMetrics {
        let m = LlmMetrics::default();
        let sub = registry.sub_registry_with_prefix("llm");
        sub.register(
            "requests",
            "Model requests (attempts) by provider, model and outcome",
            m.requests.clone(),
        );
        sub.register_with_unit(
            "request",
            "Model request latency, connection included",
            Unit::Seconds,
            m.latency.clone(),
        );
        sub.register(
            "tokens",
            "Tokens the providers reported using, by direction",
            m.tokens.clone(),
        );
        sub.register(
            "cache_hits",
            "Requests answered from the reply cache, without a call",
            m.cache_hits.clone(),
        );
        sub.register(
            "retries",
            "Model requests that retried a failed attempt (the references' retry rules)",
            m.retries.clone(),
        );
        sub.register(
            "budget_refusals",
            "Judges refused because a provider's budget for the minute was spent",
            m.budget_refusals.clone(),
        );
        m
    }

    pub(super) fn budget_refused(&self, provider: &Arc<str>, limit: &'static str) {
        self.budget_refusals
            .get_or_create(&BudgetLabel {
                provider: provider.clone(),
                limit,
            })
            .inc();
    }

    pub(super) fn cache_hit(&self, provider: &Arc<str>) {
        self.cache_hits
            .get_or_create(&ProviderLabel {
                provider: provider.clone(),
            })
            .inc();
    }

    /// Counts one request (`attempt` > 1: a retry); returns the tokens its
    /// answer reported.
    pub(super) fn observe(
        &self,
        provider: &Arc<str>,
        (model, attempt): (String, u32),
        reply: &Reply,
        took: Duration,
    ) -> u64 {
        if attempt > 1 {
            self.retries
                .get_or_create(&ProviderLabel {
                    provider: provider.clone(),
                })
                .inc();
        }
        let outcome = match reply {
            Reply::Response { status, .. } => match status {
                200..=299 => "2xx",
                400..=499 => "4xx",
                500..=599 => "5xx",
                _ => "other",
            },
            Reply::Failed {
                timed_out: true, ..
            } => "timeout",
            Reply::Failed { .. } => "error",
        };
        self.requests
            .get_or_create(&RequestLabel {
                provider: provider.clone(),
                model,
                outcome,
            })
            .inc();
        self.latency
            .get_or_create(&ProviderLabel {
                provider: provider.clone(),
            })
            .observe(took.as_secs_f64());
        let mut used = 0u64;
        if let Reply::Response {
            status: 200..=299,
            body,
            ..
        } = reply
            && let Ok(Usage {
                usage: Some(tokens),
            }) = serde_json::from_slice::<Usage>(body)
        {
            for (direction, n) in [
                ("input", tokens.prompt_tokens),
                ("output", tokens.completion_tokens),
            ] {
                self.tokens
                    .get_or_create(&TokenLabel {
                        provider: provider.clone(),
                        direction,
                    })
                    .inc_by(n.unwrap_or(0));
                used = used.saturating_add(n.unwrap_or(0));
            }
        }
        used
    }
}

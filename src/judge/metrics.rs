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

use crate::evaluator::llm::Reply;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabel {
    pub provider: Arc<str>,
    /// The HTTP status class (`2xx`, `4xx`, `5xx`), `timeout` or `error`.
    pub outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ProviderLabel {
    pub provider: Arc<str>,
}

/// Cheap to clone: every clone updates the same series.
#[derive(Clone, Debug)]
pub struct LlmMetrics {
    requests: Family<RequestLabel, Counter>,
    latency: Family<ProviderLabel, Histogram>,
}

impl Default for LlmMetrics {
    fn default() -> Self {
        LlmMetrics {
            requests: Family::default(),
            latency: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.05, 2.0, 12))
            }),
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
            "Model requests (attempts) by provider and outcome",
            m.requests.clone(),
        );
        sub.register_with_unit(
            "request",
            "Model request latency, connection included",
            Unit::Seconds,
            m.latency.clone(),
        );
        m
    }

    pub(super) fn observe(&self, provider: &Arc<str>, reply: &Reply, took: Duration) {
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
                outcome,
            })
            .inc();
        self.latency
            .get_or_create(&ProviderLabel {
                provider: provider.clone(),
            })
            .observe(took.as_secs_f64());
    }
}

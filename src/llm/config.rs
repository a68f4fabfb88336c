//! `llm:` — the model providers the LLM-judged evaluators call.

use crate::key_error::KeyError;
use std::collections::BTreeMap;
use std::num::NonZeroU64;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::http_client::Proxies;
use crate::tls::ClientTlsConfig;

/// The providers, which one each reference's judges use, and how the
/// service schedules live judgements (`llm::live`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlmConfig {
    /// Model providers by name.
    pub providers: BTreeMap<String, ProviderConfig>,
    /// The provider deepeval's tool selection calls (an `openai` one).
    /// Unset: the only `openai` provider.
    pub deepeval_provider: Option<String>,
    /// The provider UiPath's LLM judges call (a `uipath` one). Unset: the
    /// only `uipath` provider.
    pub uipath_provider: Option<String>,
    /// Traces waiting for, or in, their LLM judgement in `serve`, at most:
    /// past it a trace's judges are `skipped` and counted, while its
    /// deterministic scores are stored as always.
    pub max_queued_traces: usize,
    /// The same bound in bytes (the queued traces' spans and records,
    /// estimated).
    pub max_queued_bytes: usize,
    /// The share of traces the LLM judges score, 0 to 1, chosen by trace ID
    /// (its random low 56 bits, as OpenTelemetry's ratio samplers do): every
    /// judge and every replica picks the same traces. The others' judge
    /// scores are `skipped`.
    pub sample_rate: f64,
    /// Per evaluator ID, overriding `sample_rate`.
    pub sample_rates: BTreeMap<String, f64>,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            providers: BTreeMap::new(),
            deepeval_provider: None,
            uipath_provider: None,
            max_queued_traces: 256,
            max_queued_bytes: 32 << 20,
            sample_rate: 1.0,
            sample_rates: BTreeMap::new(),
        }
    }
}

/// The wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI chat completions: OpenAI, Azure OpenAI's v1 API, vLLM,
    /// Ollama, LiteLLM.
    Openai,
    /// The UiPath LLM gateway (normalized API), as the uipath SDK calls it.
    Uipath,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Openai => "openai",
            ProviderKind::Uipath => "uipath",
        }
    }
}

/// One model provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// `https://api.openai.com/v1` (requests go to `…/chat/completions`),
    /// or the UiPath `https://cloud.uipath.com/<org>/<tenant>`.
    pub base_url: String,
    /// A file holding the API key or token (surrounding whitespace is
    /// trimmed), so the secret stays out of the config file.
    #[serde(default)]
    pub api_key_file: Option<PathBuf>,
    /// An environment variable holding the API key or token.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// UiPath: `X-UiPath-LlmGateway-ActionId` (the eval set run id).
    #[serde(default)]
    pub action_id: Option<String>,
    /// TLS for an `https://` base URL.
    #[serde(default)]
    pub tls: ClientTlsConfig,
    /// The HTTP proxy to reach the provider through
    /// (`http://[user:password@]host:port`); left out, the environment's
    /// `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY` / `NO_PROXY` decide.
    #[serde(default)]
    pub proxy: Option<String>,
    /// Requests in flight to this provider at once.
    #[serde(default = "default_max_concurrency")]
    pub max_concurrency: usize,
    /// One attempt's deadline, connection included.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Identical requests within this window are answered once (0: off).
    #[serde(default = "default_cache_ttl_secs")]
    pub cache_ttl_secs: u64,
    /// The answers the cache keeps, in bytes.
    #[serde(default = "default_cache_max_bytes")]
    pub cache_max_bytes: usize,
    /// Requests a minute; past it, judges are refused until the minute ends.
    /// Left out: no limit.
    #[serde(default)]
    pub max_requests_per_minute: Option<NonZeroU64>,
    /// Tokens a minute (as the answers report them); past it, judges are
    /// refused until the minute ends. Left out: no limit.
    #[serde(default)]
    pub max_tokens_per_minute: Option<NonZeroU64>,
}

fn default_cache_ttl_secs() -> u64 {
    300
}

fn default_cache_max_bytes() -> usize {
    16 << 20
}

fn default_max_concurrency() -> usize {
    8
}

/// deepeval's per-attempt timeout.
fn default_timeout_ms() -> u64 {
    30_000
}

impl LlmConfig {
    /// Checks what can be checked without reading files; the error is (key
    /// path, message).
    pub fn validate(&self) -> Result<(), KeyError> {
        if self.max_queued_traces == 0 || self.max_queued_traces > 1_000_000 {
            return Err(KeyError::new(
                "llm.max_queued_traces".into(),
                "must be 1 to 1000000".into(),
            ));
        }
        if self.max_queued_bytes < 1 << 16 || self.max_queued_bytes > 1 << 34 {
            return Err(KeyError::new(
                "llm.max_queued_bytes".into(),
                "must be 64 KiB to 16 GiB".into(),
            ));
        }
        let rates = std::iter::once(("llm.sample_rate".to_owned(), self.sample_rate)).chain(
            self.sample_rates
                .iter()
                .map(|(id, r)| (format!("llm.sample_rates.{id}"), *r)),
        );
        for (key, rate) in rates {
            if !(0.0..=1.0).contains(&rate) {
                return Err(KeyError::new(key, format!("must be 0 to 1, got {rate}")));
            }
        }
        for (name, p) in &self.providers {
            let at = |key: &str| format!("llm.providers.{name}.{key}");
            let https = p.base_url.starts_with("https://");
            if !https && !p.base_url.starts_with("http://") {
                return Err(KeyError::new(
                    at("base_url"),
                    "must be an http:// or https:// URL".into(),
                ));
            }
            if let Err(e) = p.base_url.parse::<http::Uri>() {
                return Err(KeyError::new(at("base_url"), e.to_string()));
            }
            if p.api_key_file.is_some() && p.api_key_env.is_some() {
                return Err(KeyError::new(
                    at("api_key_file"),
                    "set api_key_file or api_key_env, not both".into(),
                ));
            }
            if let Some(Err(e)) = p.proxy.as_deref().map(Proxies::check_url) {
                return Err(KeyError::new(at("proxy"), e));
            }
            if p.max_concurrency == 0 || p.max_concurrency > 10_000 {
                return Err(KeyError::new(
                    at("max_concurrency"),
                    "must be 1 to 10000".into(),
                ));
            }
            if p.timeout_ms == 0 || p.timeout_ms > 3_600_000 {
                return Err(KeyError::new(
                    at("timeout_ms"),
                    "must be 1 to 3600000".into(),
                ));
            }
            if p.cache_ttl_secs > 86_400 {
                return Err(KeyError::new(
                    at("cache_ttl_secs"),
                    "must be at most 86400".into(),
                ));
            }
            if p.cache_max_bytes > 1 << 30 {
                return Err(KeyError::new(
                    at("cache_max_bytes"),
                    "must be at most 1 GiB".into(),
                ));
            }
            crate::tls::keyed::validate(&format!("llm.providers.{name}.tls"), https, &p.tls)?;
        }
        for (key, name, kind) in [
            (
                "llm.deepeval_provider",
                &self.deepeval_provider,
                ProviderKind::Openai,
            ),
            (
                "llm.uipath_provider",
                &self.uipath_provider,
                ProviderKind::Uipath,
            ),
        ] {
            if let Some(name) = name {
                match self.providers.get(name) {
                    None => {
                        return Err(KeyError::new(
                            key.into(),
                            format!("no provider named {name:?}"),
                        ));
                    }
                    Some(p) if p.kind != kind => {
                        return Err(KeyError::new(
                            key.into(),
                            format!(
                                "{name:?} is a {} provider, not {}",
                                p.kind.as_str(),
                                kind.as_str()
                            ),
                        ));
                    }
                    Some(_) => {}
                }
            }
        }
        Ok(())
    }

    /// Checks that each `sample_rates` key names an LLM-judged evaluator
    /// (`is_judge`: whether a loaded evaluator ID is one); the error is
    /// (key path, message).
    pub fn check_sample_rates(&self, is_judge: impl Fn(&str) -> bool) -> Result<(), KeyError> {
        match self.sample_rates.keys().find(|id| !is_judge(id)) {
            Some(id) => Err(KeyError::new(
                format!("llm.sample_rates.{id}"),
                "names no LLM-judged evaluator that is loaded".into(),
            )),
            None => Ok(()),
        }
    }

    /// The name of the provider judges of `kind` call: the configured one,
    /// else the only provider of that kind.
    pub fn provider_for(&self, kind: ProviderKind) -> Result<&str, String> {
        let chosen = match kind {
            ProviderKind::Openai => &self.deepeval_provider,
            ProviderKind::Uipath => &self.uipath_provider,
        };
        if let Some(name) = chosen {
            return Ok(name);
        }
        let mut of_kind = self.providers.iter().filter(|(_, p)| p.kind == kind);
        match (of_kind.next(), of_kind.next()) {
            (Some((name, _)), None) => Ok(name),
            (None, _) => Err(format!(
                "no `{}` provider is configured under llm.providers",
                kind.as_str()
            )),
            (Some(_), Some(_)) => Err(format!(
                "several `{0}` providers: name one in llm.{0}_provider",
                match kind {
                    ProviderKind::Openai => "deepeval",
                    ProviderKind::Uipath => "uipath",
                }
            )),
        }
    }
}

impl LlmConfig {
    /// The configuration with the providers the reference libraries find in
    /// the environment added where none of that kind is configured, so
    /// `toolscore eval` in CI works with the variables a deepeval or uipath
    /// run already has: `OPENAI_API_KEY` (and `OPENAI_BASE_URL`, default
    /// `https://api.openai.com/v1`) gives an `openai` provider;
    /// `UIPATH_URL` with `UIPATH_ACCESS_TOKEN` a `uipath` one.
    pub fn with_environment(mut self, env: impl Fn(&str) -> Option<String>) -> LlmConfig {
        let has = |c: &LlmConfig, k: ProviderKind| c.providers.values().any(|p| p.kind == k);
        if !has(&self, ProviderKind::Openai) && env("OPENAI_API_KEY").is_some() {
            let base_url =
                env("OPENAI_BASE_URL").unwrap_or_else(|| "https://api.openai.com/v1".to_owned());
            self.providers
                .entry("openai".to_owned())
                .or_insert_with(|| {
                    ProviderConfig::from_env(ProviderKind::Openai, base_url, "OPENAI_API_KEY")
                });
        }
        if !has(&self, ProviderKind::Uipath)
            && let Some(base_url) = env("UIPATH_URL")
        {
            self.providers
                .entry("uipath".to_owned())
                .or_insert_with(|| {
                    ProviderConfig::from_env(ProviderKind::Uipath, base_url, "UIPATH_ACCESS_TOKEN")
                });
        }
        self
    }
}

impl ProviderConfig {
    fn from_env(kind: ProviderKind, base_url: String, key_var: &str) -> ProviderConfig {
        ProviderConfig {
            kind,
            base_url,
            api_key_file: None,
            api_key_env: Some(key_var.to_owned()),
            action_id: None,
            tls: ClientTlsConfig::default(),
            proxy: None,
            max_concurrency: default_max_concurrency(),
            timeout_ms: default_timeout_ms(),
            cache_ttl_secs: default_cache_ttl_secs(),
            cache_max_bytes: default_cache_max_bytes(),
            max_requests_per_minute: None,
            max_tokens_per_minute: None,
        }
    }
}

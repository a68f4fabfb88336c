//! Bearer tokens: `Authorization: Bearer <token>`, the convention of the
//! Collector's `bearertokenauth` extension and of the OTel SDKs' headers.
//!
//! Tokens come from files (one per line, re-read so a rotated Secret takes
//! effect) or environment variables, each with the scopes it grants. Only
//! their SHA-256 digests are kept, compared in constant time; a token is
//! never logged.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

mod grpc;
mod http;
mod session;

pub use grpc::GrpcAuthLayer;
pub use http::{HttpGuard, http_guard};
pub use session::{COOKIE, Sessions, UiAuth};

/// What a token lets its holder do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Send spans to the OTLP receivers.
    Ingest,
    /// Read scores, traces, listings, and watch.
    Read,
    /// `POST /v1/evaluate`.
    Evaluate,
    /// `GET /metrics`, when `api.http.auth.public_metrics` is off.
    Metrics,
}

/// `auth:`: the tokens every listener with `auth.enabled` accepts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    pub tokens: Vec<TokenConfig>,
    /// How often token files are read again.
    pub reload_interval_secs: u64,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            tokens: Vec::new(),
            reload_interval_secs: 30,
        }
    }
}

/// One source of tokens: a file or an environment variable, not both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// Names the source in errors and logs (never the token).
    pub name: String,
    /// Tokens, one per line; blank lines and lines starting with `#` are
    /// skipped. Several lines let an old and a new token work at once.
    #[serde(default)]
    pub file: Option<PathBuf>,
    /// An environment variable holding one token.
    #[serde(default)]
    pub env: Option<String>,
    pub scopes: Vec<Scope>,
}

/// `auth:` of a listener.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ListenerAuthConfig {
    /// Requests need a token with the listener's scope.
    pub enabled: bool,
    /// The HTTP API only: `/metrics` answers without a token (Prometheus
    /// scrapes it); off, it needs the `metrics` scope.
    pub public_metrics: bool,
}

impl Default for ListenerAuthConfig {
    fn default() -> Self {
        ListenerAuthConfig {
            enabled: false,
            public_metrics: true,
        }
    }
}

/// Tokens that cannot be loaded; the message names the key path.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("auth.tokens[{index}].file: cannot read {}: {source}", path.display())]
    Read {
        index: usize,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("auth.tokens[{index}].env: {var} is not set or not UTF-8")]
    Env { index: usize, var: String },
    #[error("auth.tokens[{index}]: {message}")]
    Invalid { index: usize, message: String },
}

/// Why a request was refused: the `reason` label of the failure counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// No `Authorization` header.
    Missing,
    /// Not `Bearer <token>`.
    Malformed,
    /// A token no source holds.
    Invalid,
    /// A known token without the scope.
    Forbidden,
}

impl Failure {
    pub const ALL: [Failure; 4] = [
        Failure::Missing,
        Failure::Malformed,
        Failure::Invalid,
        Failure::Forbidden,
    ];

    pub fn reason(self) -> &'static str {
        match self {
            Failure::Missing => "missing",
            Failure::Malformed => "malformed",
            Failure::Invalid => "invalid",
            Failure::Forbidden => "forbidden",
        }
    }
}

type Digest = [u8; 32];

fn digest(token: &[u8]) -> Digest {
    let d = ring::digest::digest(&ring::digest::SHA256, token);
    let mut out = [0; 32];
    out.copy_from_slice(d.as_ref());
    out
}

/// The accepted tokens, as digests with their scopes.
pub struct Tokens {
    config: AuthConfig,
    known: RwLock<Vec<(Digest, Vec<Scope>)>>,
}

impl Tokens {
    /// Reads every source; an unreadable file or unset variable is an error.
    pub fn load(config: &AuthConfig) -> Result<Tokens, AuthError> {
        let known = read_all(config)?;
        Ok(Tokens {
            config: config.clone(),
            known: RwLock::new(known),
        })
    }

    /// Reads the sources again. On an error the previous tokens stay.
    pub fn reload(&self) -> Result<(), AuthError> {
        let known = read_all(&self.config)?;
        *self.known.write().unwrap_or_else(|e| e.into_inner()) = known;
        Ok(())
    }

    pub fn reload_interval(&self) -> Duration {
        Duration::from_secs(self.config.reload_interval_secs.max(1))
    }

    /// Checks an `Authorization` header's value for `scope`.
    pub fn check(&self, authorization: Option<&[u8]>, scope: Scope) -> Result<(), Failure> {
        let value = authorization.ok_or(Failure::Missing)?;
        let token = bearer(value).ok_or(Failure::Malformed)?;
        self.check_digest(&digest(token), scope)
    }

    /// Checks a token by its digest (a signed-in session's) for `scope`:
    /// a token since revoked no longer passes.
    fn check_digest(&self, presented: &Digest, scope: Scope) -> Result<(), Failure> {
        let known = self.known.read().unwrap_or_else(|e| e.into_inner());
        // Every entry is compared, so the time taken does not say which
        // (or whether one) matched.
        let mut matched = false;
        let mut allowed = false;
        for (d, scopes) in known.iter() {
            let hit: bool = d.ct_eq(presented).into();
            matched |= hit;
            allowed |= hit && scopes.contains(&scope);
        }
        match (matched, allowed) {
            (_, true) => Ok(()),
            (true, false) => Err(Failure::Forbidden),
            (false, _) => Err(Failure::Invalid),
        }
    }
}

/// The token of `Bearer <token>` (the scheme in any case, RFC 7235).
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(7)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    let token = rest.trim_ascii();
    (!token.is_empty()).then_some(token)
}

fn read_all(config: &AuthConfig) -> Result<Vec<(Digest, Vec<Scope>)>, AuthError> {
    let mut known = Vec::new();
    for (index, source) in config.tokens.iter().enumerate() {
        let text = match (&source.file, &source.env) {
            (Some(path), None) => std::fs::read_to_string(path).map_err(|e| AuthError::Read {
                index,
                path: path.clone(),
                source: e,
            })?,
            (None, Some(var)) => std::env::var(var).map_err(|_| AuthError::Env {
                index,
                var: var.clone(),
            })?,
            _ => {
                return Err(AuthError::Invalid {
                    index,
                    message: "set exactly one of `file` and `env`".into(),
                });
            }
        };
        if source.scopes.is_empty() {
            return Err(AuthError::Invalid {
                index,
                message: "`scopes` is empty: the tokens would allow nothing".into(),
            });
        }
        let lines = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'));
        for token in lines {
            if token.chars().any(char::is_whitespace) {
                return Err(AuthError::Invalid {
                    index,
                    message: format!(
                        "a token of `{}` has whitespace inside; one token per line",
                        source.name
                    ),
                });
            }
            known.push((digest(token.as_bytes()), source.scopes.clone()));
        }
    }
    Ok(known)
}

/// One listener's check: the tokens, and its failure counters.
#[derive(Clone)]
pub struct Guard {
    tokens: Arc<Tokens>,
    pub listener: &'static str,
    /// By [`Failure::ALL`]'s order.
    failures: [Counter; 4],
}

impl Guard {
    pub fn new(tokens: Arc<Tokens>, listener: &'static str, failures: [Counter; 4]) -> Guard {
        Guard {
            tokens,
            listener,
            failures,
        }
    }

    pub fn check(&self, authorization: Option<&[u8]>, scope: Scope) -> Result<(), Failure> {
        self.count(self.tokens.check(authorization, scope))
    }

    /// [`check`](Self::check) of a token as typed (the UI's sign-in form).
    pub fn check_token(&self, token: &[u8], scope: Scope) -> Result<(), Failure> {
        let token = token.trim_ascii();
        if token.is_empty() {
            return self.count(Err(Failure::Missing));
        }
        self.count(self.tokens.check_digest(&digest(token), scope))
    }

    /// [`check`](Self::check) of a request's signed-in session.
    pub fn check_session(
        &self,
        sessions: &Sessions,
        headers: &http_types::HeaderMap,
        scope: Scope,
    ) -> Result<(), Failure> {
        self.count(sessions.check(headers, &self.tokens, scope, std::time::Instant::now()))
    }

    fn count(&self, r: Result<(), Failure>) -> Result<(), Failure> {
        r.inspect_err(|f| {
            let i = Failure::ALL.iter().position(|x| x == f).unwrap_or(0);
            self.failures[i].inc();
        })
    }
}

use ::http as http_types;

#[cfg(test)]
mod tests;

//! Signed-in browser sessions, for the web UI on a listener with tokens: a
//! browser cannot send a bearer token with a page request, so the UI's
//! sign-in page takes a token (with the `read` scope) once and gives the
//! browser a session cookie instead.
//!
//! The cookie holds a random session ID, never the token; the server keeps,
//! per session, the token's digest and when the session ends. Each request
//! checks the token again, so a token revoked from its file ends its
//! sessions at once. The cookie is `HttpOnly` (no script reads it),
//! `SameSite=Strict` (no other site's page sends it), `Secure` over TLS, and
//! lives as long as the session. Sessions are this process's: at most
//! `max` (the oldest ends first past it), each for `ttl`.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use http::{HeaderMap, header};

use super::{Digest, Failure, Scope, Tokens, digest};

/// The session cookie's name.
pub const COOKIE: &str = "toolscore_session";

/// What the UI's sign-in page checks a token with, and where it opens the
/// session.
#[derive(Clone)]
pub struct UiAuth {
    pub guard: super::Guard,
    pub sessions: std::sync::Arc<Sessions>,
}

pub struct Sessions {
    ttl: Duration,
    max: usize,
    /// Over TLS: the cookie is `Secure`.
    secure: bool,
    /// Sessions held, expired ones not yet dropped among them.
    held: prometheus_client::metrics::gauge::Gauge,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// By the session ID's digest: the token's digest and the session's end.
    by_id: HashMap<Digest, (Digest, Instant)>,
    /// Session IDs' digests, oldest first (may hold ended ones).
    order: VecDeque<Digest>,
}

impl Sessions {
    pub fn new(
        ttl: Duration,
        max: usize,
        secure: bool,
        held: prometheus_client::metrics::gauge::Gauge,
    ) -> Sessions {
        Sessions {
            ttl,
            max: max.max(1),
            secure,
            held,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// A session for `token` (already checked by the caller), from `now`:
    /// the `Set-Cookie` value that hands it to the browser.
    pub fn open(&self, token: &[u8], now: Instant) -> Option<String> {
        let mut id = [0u8; 32];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut id).ok()?;
        let id = const_hex::encode(id);
        let key = digest(id.as_bytes());
        let mut inner = self.lock();
        let Inner { by_id, order } = &mut *inner;
        by_id.retain(|_, (_, end)| *end > now);
        order.retain(|k| by_id.contains_key(k));
        while by_id.len() >= self.max {
            let Some(oldest) = order.pop_front() else {
                break;
            };
            by_id.remove(&oldest);
        }
        by_id.insert(key, (digest(token), now + self.ttl));
        order.push_back(key);
        self.count(by_id.len());
        Some(self.cookie(&id, self.ttl.as_secs()))
    }

    /// Ends the session the request's cookie names, if any: the `Set-Cookie`
    /// value that clears it in the browser.
    pub fn close(&self, headers: &HeaderMap) -> String {
        if let Some(id) = session_id(headers) {
            let mut inner = self.lock();
            inner.by_id.remove(&digest(id.as_bytes()));
            self.count(inner.by_id.len());
        }
        self.cookie("", 0)
    }

    /// Whether the request's session cookie names a live session whose
    /// token has `scope`.
    pub fn check(
        &self,
        headers: &HeaderMap,
        tokens: &Tokens,
        scope: Scope,
        now: Instant,
    ) -> Result<(), Failure> {
        let id = session_id(headers).ok_or(Failure::Missing)?;
        let key = digest(id.as_bytes());
        let token = {
            let mut inner = self.lock();
            match inner.by_id.get(&key) {
                Some(&(token, end)) if end > now => token,
                Some(_) => {
                    inner.by_id.remove(&key);
                    self.count(inner.by_id.len());
                    return Err(Failure::Invalid);
                }
                None => return Err(Failure::Invalid),
            }
        };
        tokens.check_digest(&token, scope)
    }

    fn count(&self, held: usize) {
        self.held.set(i64::try_from(held).unwrap_or(i64::MAX));
    }

    fn cookie(&self, value: &str, max_age: u64) -> String {
        let secure = if self.secure { "; Secure" } else { "" };
        format!("{COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}")
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The session ID a request's `Cookie` headers carry.
fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| c.trim().strip_prefix(COOKIE)?.strip_prefix('='))
        .filter(|id| !id.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{AuthConfig, TokenConfig};

    fn tokens(dir: &std::path::Path, text: &str) -> Tokens {
        let file = dir.join("tokens");
        std::fs::write(&file, text).unwrap();
        Tokens::load(&AuthConfig {
            tokens: vec![TokenConfig {
                name: "ui".into(),
                file: Some(file),
                env: None,
                scopes: vec![Scope::Read],
            }],
            reload_interval_secs: 30,
        })
        .unwrap()
    }

    fn with_cookie(set_cookie: &str) -> HeaderMap {
        let pair = set_cookie.split(';').next().unwrap();
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, format!("other=1; {pair}").parse().unwrap());
        h
    }

    #[test]
    fn a_session_lives_its_ttl_and_its_token_and_ends_when_closed() {
        let dir = tempfile::tempdir().unwrap();
        let t = tokens(dir.path(), "secret-read\n");
        let s = Sessions::new(Duration::from_secs(60), 10, true, Default::default());
        let now = Instant::now();
        let set = s.open(b"secret-read", now).unwrap();
        assert!(
            set.contains("; HttpOnly; SameSite=Strict; Max-Age=60; Secure"),
            "{set}"
        );
        assert!(
            !set.contains("secret-read"),
            "the cookie never holds the token"
        );
        let h = with_cookie(&set);
        assert_eq!(s.check(&h, &t, Scope::Read, now), Ok(()));
        assert_eq!(
            s.check(&h, &t, Scope::Evaluate, now),
            Err(Failure::Forbidden)
        );
        // Expired.
        assert_eq!(
            s.check(&h, &t, Scope::Read, now + Duration::from_secs(61)),
            Err(Failure::Invalid)
        );
        // Revoked: the token is gone from its file.
        let set = s.open(b"secret-read", now).unwrap();
        let h = with_cookie(&set);
        std::fs::write(dir.path().join("tokens"), "another\n").unwrap();
        t.reload().unwrap();
        assert_eq!(s.check(&h, &t, Scope::Read, now), Err(Failure::Invalid));
        // Closed.
        let t = tokens(dir.path(), "secret-read\n");
        let set = s.open(b"secret-read", now).unwrap();
        let h = with_cookie(&set);
        let cleared = s.close(&h);
        assert!(
            cleared.starts_with(&format!("{COOKIE}=;")) && cleared.contains("Max-Age=0"),
            "{cleared}"
        );
        assert_eq!(s.check(&h, &t, Scope::Read, now), Err(Failure::Invalid));
        assert_eq!(
            s.check(&HeaderMap::new(), &t, Scope::Read, now),
            Err(Failure::Missing)
        );
    }

    #[test]
    fn past_max_the_oldest_session_ends() {
        let dir = tempfile::tempdir().unwrap();
        let t = tokens(dir.path(), "secret-read\n");
        let held = prometheus_client::metrics::gauge::Gauge::default();
        let s = Sessions::new(Duration::from_secs(60), 2, false, held.clone());
        let now = Instant::now();
        let first = with_cookie(&s.open(b"secret-read", now).unwrap());
        let second = with_cookie(&s.open(b"secret-read", now).unwrap());
        let third = with_cookie(&s.open(b"secret-read", now).unwrap());
        assert_eq!(s.check(&first, &t, Scope::Read, now), Err(Failure::Invalid));
        assert_eq!(s.check(&second, &t, Scope::Read, now), Ok(()));
        assert_eq!(s.check(&third, &t, Scope::Read, now), Ok(()));
        assert_eq!(held.get(), 2);
        s.close(&third);
        assert_eq!(held.get(), 1);
    }
}

//! Identical requests within a window are answered once: a judge that sees
//! the same prompt again (a retried CI run, the same trace evaluated twice)
//! gets the answer the model gave, without a second call. Only successful
//! answers are kept; the cache is bounded in bytes and forgets the oldest
//! entry first.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::evaluator::judged::{Reply, Request};

/// The request as the cache compares it: method, URL, headers, body.
fn key_of(request: &Request) -> String {
    let mut key = format!("{} {}\n", request.method.as_str(), request.url);
    for (k, v) in &request.headers {
        key.push_str(k);
        key.push_str(": ");
        key.push_str(v);
        key.push('\n');
    }
    if let Some(body) = &request.body {
        key.push_str(&body.to_string());
    }
    key
}

struct Entry {
    stored: Instant,
    reply: Reply,
    bytes: usize,
}

#[derive(Default)]
struct State {
    entries: HashMap<String, Entry>,
    /// Keys in the order they were stored, oldest first.
    order: VecDeque<String>,
    bytes: usize,
}

/// `ttl` zero turns the cache off.
pub struct ReplyCache {
    ttl: Duration,
    max_bytes: usize,
    state: Mutex<State>,
}

impl std::fmt::Debug for ReplyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplyCache")
            .field("ttl", &self.ttl)
            .field("max_bytes", &self.max_bytes)
            .finish_non_exhaustive()
    }
}

impl ReplyCache {
    pub fn new(ttl: Duration, max_bytes: usize) -> ReplyCache {
        ReplyCache {
            ttl,
            max_bytes,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every update leaves the maps consistent before it can panic.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The key to look up and later store under; `None` when the cache is off.
    pub fn key(&self, request: &Request) -> Option<String> {
        (!self.ttl.is_zero()).then(|| key_of(request))
    }

    /// A stored answer to the same request, younger than the window.
    pub fn get(&self, key: &str, now: Instant) -> Option<Reply> {
        let state = self.lock();
        let entry = state.entries.get(key)?;
        (now.saturating_duration_since(entry.stored) < self.ttl).then(|| entry.reply.clone())
    }

    /// Keeps a successful answer, forgetting expired and then oldest entries
    /// to stay within `max_bytes`.
    pub fn put(&self, key: String, reply: &Reply, now: Instant) {
        let Reply::Response {
            status: 200..=299,
            body,
            headers,
        } = reply
        else {
            return;
        };
        let bytes = key.len()
            + body.len()
            + headers
                .iter()
                .map(|(k, v)| k.len() + v.len())
                .sum::<usize>();
        if bytes > self.max_bytes {
            return;
        }
        let mut state = self.lock();
        if let Some(old) = state.entries.remove(&key) {
            state.bytes -= old.bytes;
            state.order.retain(|k| k != &key);
        }
        while state.bytes + bytes > self.max_bytes
            || state.order.front().is_some_and(|k| {
                state
                    .entries
                    .get(k)
                    .is_none_or(|e| now.saturating_duration_since(e.stored) >= self.ttl)
            })
        {
            let Some(oldest) = state.order.pop_front() else {
                break;
            };
            if let Some(e) = state.entries.remove(&oldest) {
                state.bytes -= e.bytes;
            }
        }
        state.bytes += bytes;
        state.order.push_back(key.clone());
        state.entries.insert(
            key,
            Entry {
                stored: now,
                reply: reply.clone(),
                bytes,
            },
        );
    }

    /// Bytes held (for tests).
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluator::judged::Method;

    fn request(body: &str) -> Request {
        Request {
            method: Method::Post,
            url: "http://m/v1/chat/completions".into(),
            headers: vec![("authorization".into(), "Bearer k".into())],
            body: Some(serde_json::json!({ "prompt": body })),
            attempt: 1,
        }
    }

    fn ok(body: &[u8]) -> Reply {
        Reply::Response {
            status: 200,
            headers: vec![],
            body: body.to_vec(),
        }
    }

    #[test]
    fn answers_within_the_window_only_successes_and_within_its_bytes() {
        let cache = ReplyCache::new(Duration::from_secs(60), 600);
        let t0 = Instant::now();
        let k = cache.key(&request("a")).unwrap();
        assert_eq!(cache.get(&k, t0), None);
        cache.put(k.clone(), &ok(b"first"), t0);
        assert_eq!(
            cache.get(&k, t0 + Duration::from_secs(59)),
            Some(ok(b"first"))
        );
        assert_eq!(cache.get(&k, t0 + Duration::from_secs(60)), None);
        // A different prompt is a different request.
        let other = cache.key(&request("b")).unwrap();
        assert_eq!(cache.get(&other, t0), None);
        // Failures are not kept.
        let failed = Reply::Response {
            status: 503,
            headers: vec![],
            body: vec![],
        };
        cache.put(other.clone(), &failed, t0);
        assert_eq!(cache.get(&other, t0), None);
        // Past max_bytes, the oldest entry goes first.
        cache.put(other.clone(), &ok(&[b'x'; 500]), t0);
        assert_eq!(cache.get(&k, t0), None, "the older entry made room");
        assert!(cache.bytes() <= 600);
        // An answer larger than the whole cache is not kept.
        let big = cache.key(&request("c")).unwrap();
        cache.put(big.clone(), &ok(&[b'y'; 700]), t0);
        assert_eq!(cache.get(&big, t0), None);
    }

    #[test]
    fn a_zero_window_turns_it_off() {
        let cache = ReplyCache::new(Duration::ZERO, 1 << 20);
        assert_eq!(cache.key(&request("a")), None);
    }
}

//! A provider's budget per minute: requests and tokens. A judge is refused
//! before it starts once the minute's budget is spent (its score is an
//! error saying so, counted); one already running finishes, retries
//! included, so a budget can be overrun by what was in flight.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

const WINDOW: Duration = Duration::from_secs(60);

#[derive(Debug, Default)]
struct Window {
    started: Option<Instant>,
    requests: u64,
    tokens: u64,
}

/// `None` limits are unlimited.
#[derive(Debug)]
pub struct Budget {
    max_requests: Option<u64>,
    max_tokens: Option<u64>,
    window: Mutex<Window>,
}

/// The limit a refused judge ran into: its config key and value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spent {
    pub key: &'static str,
    pub limit: u64,
}

impl Budget {
    pub fn new(max_requests: Option<u64>, max_tokens: Option<u64>) -> Budget {
        Budget {
            max_requests,
            max_tokens,
            window: Mutex::new(Window::default()),
        }
    }

    /// The current minute's counts (a minute starts at its first request).
    fn window(&self, now: Instant) -> MutexGuard<'_, Window> {
        // Counters only: nothing half-written to poison.
        let mut w = self.window.lock().unwrap_or_else(|p| p.into_inner());
        if w.started
            .is_none_or(|s| now.saturating_duration_since(s) >= WINDOW)
        {
            *w = Window {
                started: Some(now),
                requests: 0,
                tokens: 0,
            };
        }
        w
    }

    /// Whether a judge may start now.
    pub fn check(&self, now: Instant) -> Result<(), Spent> {
        if self.max_requests.is_none() && self.max_tokens.is_none() {
            return Ok(());
        }
        let w = self.window(now);
        if let Some(limit) = self.max_requests
            && w.requests >= limit
        {
            return Err(Spent {
                key: "max_requests_per_minute",
                limit,
            });
        }
        if let Some(limit) = self.max_tokens
            && w.tokens >= limit
        {
            return Err(Spent {
                key: "max_tokens_per_minute",
                limit,
            });
        }
        Ok(())
    }

    /// Counts one request sent, and the tokens its answer reported.
    pub fn spend(&self, now: Instant, tokens: u64) {
        let mut w = self.window(now);
        w.requests = w.requests.saturating_add(1);
        w.tokens = w.tokens.saturating_add(tokens);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_once_spent_until_the_minute_is_over() {
        let b = Budget::new(Some(2), Some(1000));
        let t0 = Instant::now();
        assert_eq!(b.check(t0), Ok(()));
        b.spend(t0, 10);
        b.spend(t0, 10);
        assert_eq!(
            b.check(t0 + Duration::from_secs(59)),
            Err(Spent {
                key: "max_requests_per_minute",
                limit: 2
            })
        );
        assert_eq!(b.check(t0 + Duration::from_secs(60)), Ok(()));
        let t1 = t0 + Duration::from_secs(61);
        b.spend(t1, 1000);
        assert_eq!(
            b.check(t1),
            Err(Spent {
                key: "max_tokens_per_minute",
                limit: 1000
            })
        );
    }

    #[test]
    fn no_limits_never_refuse() {
        let b = Budget::new(None, None);
        let t0 = Instant::now();
        for _ in 0..1000 {
            b.spend(t0, u64::MAX);
        }
        assert_eq!(b.check(t0), Ok(()));
    }
}

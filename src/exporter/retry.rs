//! Which failed exports are retried, and how long to wait in between.
//!
//! The codes are the OTLP/gRPC specification's retryable ones: CANCELLED,
//! DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE, UNAVAILABLE, DATA_LOSS, and
//! RESOURCE_EXHAUSTED only when the server sent `RetryInfo` (it can recover).
//! A server's `RetryInfo` delay is honoured (capped at [`MAX_HINT`]);
//! otherwise the wait doubles from the initial backoff up to the cap, with
//! "equal jitter" (half fixed, half random) so many exporters do not retry
//! in step.

use std::future::Future;
use std::time::Duration;

use tonic::{Code, Status};
use tonic_types::StatusExt;

use super::ExporterStats;

/// The longest a server's `RetryInfo` can make us wait between attempts.
pub(crate) const MAX_HINT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Verdict {
    /// Retry, after the server's delay if it gave one.
    Retry(Option<Duration>),
    GiveUp,
}

pub(crate) fn classify(status: &Status) -> Verdict {
    let hint = || status.get_details_retry_info().and_then(|r| r.retry_delay);
    match status.code() {
        Code::Cancelled
        | Code::DeadlineExceeded
        | Code::Aborted
        | Code::OutOfRange
        | Code::Unavailable
        | Code::DataLoss => Verdict::Retry(hint()),
        Code::ResourceExhausted => match status.get_details_retry_info() {
            Some(info) => Verdict::Retry(info.retry_delay),
            None => Verdict::GiveUp,
        },
        _ => Verdict::GiveUp,
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RetryPolicy {
    pub max_retries: u32,
    pub initial: Duration,
    pub max: Duration,
}

impl RetryPolicy {
    /// The wait before retry number `retry` (0-based); `unit` in [0, 1) is
    /// the jitter draw.
    pub(crate) fn delay(&self, retry: u32, hint: Option<Duration>, unit: f64) -> Duration {
        if let Some(hint) = hint {
            return hint.min(MAX_HINT);
        }
        let exp = self
            .initial
            .saturating_mul(1u32 << retry.min(31))
            .min(self.max);
        exp.mul_f64(0.5 + 0.5 * unit.clamp(0.0, 1.0))
    }
}

/// A uniform draw in [0, 1).
fn jitter_unit() -> f64 {
    rand::random::<f64>()
}

/// Calls `attempt` until it succeeds, fails with a code that is not
/// retryable, or `max_retries` retries have failed; counts every failed
/// attempt and every retry. Returns the last error.
pub(crate) async fn with_retry<T, F, Fut>(
    policy: &RetryPolicy,
    stats: &ExporterStats,
    mut attempt: F,
) -> Result<T, Status>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Status>>,
{
    let mut retry = 0;
    loop {
        let status = match attempt().await {
            Ok(v) => return Ok(v),
            Err(status) => status,
        };
        stats.requests_failed.inc();
        match classify(&status) {
            Verdict::Retry(hint) if retry < policy.max_retries => {
                let wait = policy.delay(retry, hint, jitter_unit());
                tracing::debug!(code = ?status.code(), retry, ?wait, "export failed; retrying");
                stats.retries.inc();
                tokio::time::sleep(wait).await;
                retry += 1;
            }
            _ => return Err(status),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use tonic_types::ErrorDetails;

    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_retries: 3,
            initial: Duration::from_millis(100),
            max: Duration::from_millis(500),
        }
    }

    #[test]
    fn the_spec_codes_are_retried() {
        for code in [
            Code::Cancelled,
            Code::DeadlineExceeded,
            Code::Aborted,
            Code::OutOfRange,
            Code::Unavailable,
            Code::DataLoss,
        ] {
            assert_eq!(
                classify(&Status::new(code, "x")),
                Verdict::Retry(None),
                "{code:?}"
            );
        }
        for code in [
            Code::InvalidArgument,
            Code::Unauthenticated,
            Code::PermissionDenied,
            Code::Unimplemented,
            Code::Internal,
            Code::ResourceExhausted,
        ] {
            assert_eq!(
                classify(&Status::new(code, "x")),
                Verdict::GiveUp,
                "{code:?}"
            );
        }
    }

    #[test]
    fn resource_exhausted_with_retry_info_is_retried_after_its_delay() {
        let status = Status::with_error_details(
            Code::ResourceExhausted,
            "busy",
            ErrorDetails::with_retry_info(Some(Duration::from_secs(2))),
        );
        assert_eq!(
            classify(&status),
            Verdict::Retry(Some(Duration::from_secs(2)))
        );
        assert_eq!(
            policy().delay(0, Some(Duration::from_secs(2)), 0.3),
            Duration::from_secs(2)
        );
        assert_eq!(
            policy().delay(0, Some(Duration::from_secs(600)), 0.3),
            MAX_HINT
        );
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_with_jitter() {
        let p = policy();
        assert_eq!(p.delay(0, None, 1.0), Duration::from_millis(100));
        assert_eq!(p.delay(0, None, 0.0), Duration::from_millis(50));
        assert_eq!(p.delay(1, None, 1.0), Duration::from_millis(200));
        assert_eq!(p.delay(2, None, 1.0), Duration::from_millis(400));
        assert_eq!(p.delay(3, None, 1.0), Duration::from_millis(500));
        assert_eq!(p.delay(100, None, 1.0), Duration::from_millis(500));
        let u = jitter_unit();
        assert!((0.0..1.0).contains(&u), "{u}");
    }

    #[tokio::test]
    async fn gives_up_after_max_retries_and_counts() {
        let stats = ExporterStats::default();
        let p = RetryPolicy {
            max_retries: 2,
            initial: Duration::from_millis(1),
            max: Duration::from_millis(2),
        };
        let calls = AtomicU32::new(0);
        let res: Result<(), _> = with_retry(&p, &stats, || {
            calls.fetch_add(1, Ordering::Relaxed);
            async { Err(Status::unavailable("down")) }
        })
        .await;
        assert_eq!(res.unwrap_err().code(), Code::Unavailable);
        assert_eq!(calls.load(Ordering::Relaxed), 3);
        assert_eq!((stats.requests_failed.get(), stats.retries.get()), (3, 2));

        let calls = AtomicU32::new(0);
        let res = with_retry(&p, &stats, || {
            let n = calls.fetch_add(1, Ordering::Relaxed);
            async move {
                if n == 0 {
                    Err(Status::unavailable("down"))
                } else {
                    Ok(n)
                }
            }
        })
        .await;
        assert_eq!(res.unwrap(), 1);

        let res: Result<(), _> = with_retry(&p, &stats, || async {
            Err(Status::invalid_argument("bad"))
        })
        .await;
        assert_eq!(res.unwrap_err().code(), Code::InvalidArgument);
        assert_eq!(stats.retries.get(), 3, "not retried");
    }
}

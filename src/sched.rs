//! Scheduling policies: optionally, the I/O threads yield the CPU to
//! evaluation.
//!
//! The async I/O threads wake for every few kilobytes of input. On a CPU
//! they share with evaluation, each wakeup preempts the evaluation thread
//! to read a little and sleep again.
//!
//! With `runtime.sched_batch` ([`RuntimeConfig`]) the runtime's threads run
//! under Linux's `SCHED_BATCH` ([`io_thread`]), and the evaluation threads
//! under the normal policy while they evaluate ([`Evaluating`]).
//! `SCHED_BATCH` keeps the thread's CPU share (its nice value is unchanged);
//! it only stops a waking thread from preempting the one running, so a
//! waking I/O thread runs when the evaluation thread's time slice ends, or
//! at once on an idle CPU. The cost is up to a time slice of added latency
//! for every request, health probes included, while the CPU is busy: that
//! is why it is off unless configured (bench/README.md has the A/B).
//!
//! The project's only `unsafe`: libc's `sched_getscheduler` and
//! `sched_setscheduler`, which no maintained safe wrapper exposes without
//! also changing the nice value.
#![allow(unsafe_code)]

use serde::{Deserialize, Serialize};

/// How the service's own threads are scheduled (`runtime`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RuntimeConfig {
    /// Run the async I/O threads under `SCHED_BATCH` (Linux only; ignored
    /// elsewhere).
    pub sched_batch: bool,
}

/// Puts the calling thread under `SCHED_BATCH` if it runs under the normal
/// policy (`SCHED_OTHER`); for the runtime's `on_thread_start`. Never fails:
/// a thread whose policy cannot change (an OS or sandbox that refuses it)
/// keeps its own, which is correct, only slower.
pub fn io_thread() {
    #[cfg(target_os = "linux")]
    if policy() == libc::SCHED_OTHER {
        set_policy(libc::SCHED_BATCH);
    }
}

/// Puts the calling thread back under the normal policy until dropped, if
/// [`io_thread`] put it under `SCHED_BATCH`: the evaluation threads come from
/// the runtime's blocking pool, and go back to it.
pub struct Evaluating {
    #[cfg(target_os = "linux")]
    restore: bool,
}

impl Evaluating {
    pub fn enter() -> Evaluating {
        #[cfg(target_os = "linux")]
        return Evaluating {
            restore: policy() == libc::SCHED_BATCH && set_policy(libc::SCHED_OTHER),
        };
        #[cfg(not(target_os = "linux"))]
        Evaluating {}
    }
}

impl Drop for Evaluating {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if self.restore {
            set_policy(libc::SCHED_BATCH);
        }
    }
}

/// The calling thread's policy.
#[cfg(target_os = "linux")]
fn policy() -> libc::c_int {
    // SAFETY: takes no pointers; pid 0 is the calling thread.
    unsafe { libc::sched_getscheduler(0) }
}

/// Sets the calling thread's policy (static priority 0, nice value kept).
#[cfg(target_os = "linux")]
fn set_policy(policy: libc::c_int) -> bool {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid sched_param that outlives the call, which
    // only reads it; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, policy, &param) };
    if rc != 0 {
        tracing::debug!(
            error = %std::io::Error::last_os_error(),
            policy,
            "thread keeps its scheduling policy"
        );
    }
    rc == 0
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn io_threads_batch_evaluation_normal_then_batch_again() {
        let seen = std::thread::spawn(|| {
            let mut seen = vec![policy()];
            io_thread();
            seen.push(policy());
            let evaluating = Evaluating::enter();
            seen.push(policy());
            drop(evaluating);
            seen.push(policy());
            seen
        })
        .join()
        .unwrap();
        assert_eq!(
            seen,
            [
                libc::SCHED_OTHER,
                libc::SCHED_BATCH,
                libc::SCHED_OTHER,
                libc::SCHED_BATCH
            ]
        );
    }

    #[test]
    fn a_thread_not_made_batch_is_left_alone() {
        std::thread::spawn(|| {
            drop(Evaluating::enter());
            assert_eq!(policy(), libc::SCHED_OTHER);
        })
        .join()
        .unwrap();
    }
}

//! Watching the pipeline's tasks: a stage that panics (a bug) is logged,
//! counted (`toolscore_stage_panics_total`) and marks the service failed,
//! so `/readyz` and `/healthz` answer 503 and the orchestrator restarts it,
//! instead of a dead shard behind a service that looks healthy.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::task::JoinHandle;

use crate::telemetry::Metrics;

/// Whether a stage has died; shared with the HTTP API's health endpoints.
#[derive(Clone, Default)]
pub struct Failed(Arc<AtomicBool>);

impl Failed {
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    pub(crate) fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Aborts the task when dropped: aborting the supervising task aborts the
/// stage too.
struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs `stage` as a task and returns its supervisor's handle, which yields
/// the stage's output, or `on_panic()` after a panic is reported.
pub fn spawn<T, F>(
    name: &'static str,
    stage: F,
    on_panic: impl FnOnce() -> T + Send + 'static,
    failed: &Failed,
    metrics: &Arc<Metrics>,
) -> JoinHandle<T>
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    watch(name, tokio::spawn(stage), on_panic, failed, metrics)
}

/// [`spawn`] for a task already running.
pub fn watch<T: Send + 'static>(
    name: &'static str,
    task: JoinHandle<T>,
    on_panic: impl FnOnce() -> T + Send + 'static,
    failed: &Failed,
    metrics: &Arc<Metrics>,
) -> JoinHandle<T> {
    let (failed, metrics) = (failed.clone(), metrics.clone());
    // Wrapped before the supervisor starts: aborted before its first poll,
    // it still aborts the stage.
    let mut task = AbortOnDrop(task);
    tokio::spawn(async move {
        match (&mut task.0).await {
            Ok(v) => v,
            Err(e) => {
                if e.is_panic() {
                    tracing::error!(
                        stage = name,
                        "a pipeline stage panicked: the service reports itself failed (/readyz, /healthz)"
                    );
                    metrics.stage_panicked(name);
                    failed.set();
                }
                on_panic()
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_stage_is_counted_and_marks_the_service_failed() {
        let (failed, metrics) = (Failed::default(), Arc::new(Metrics::new()));
        let ok = spawn("evaluation", async { 7 }, || 0, &failed, &metrics);
        assert_eq!(ok.await.unwrap(), 7);
        assert!(!failed.is_set());

        let stage = spawn(
            "assembler",
            async {
                let v: Vec<u8> = Vec::new();
                v[1]
            },
            || 42,
            &failed,
            &metrics,
        );
        assert_eq!(stage.await.unwrap(), 42, "the supervisor's value");
        assert!(failed.is_set());
        let text = metrics.encode();
        assert!(
            text.contains("toolscore_stage_panics_total{stage=\"assembler\"} 1"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn aborting_the_supervisor_aborts_the_stage() {
        let (failed, metrics) = (Failed::default(), Arc::new(Metrics::new()));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let supervisor = spawn(
            "otlp_http",
            async move {
                let _tx = tx;
                std::future::pending::<()>().await;
            },
            || (),
            &failed,
            &metrics,
        );
        supervisor.abort();
        // The stage's end drops its sender.
        assert!(rx.await.is_err());
        assert!(!failed.is_set(), "an abort is no failure");
    }
}

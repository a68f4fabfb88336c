//! The scoring stage (configured under `evaluation:`): ready traces from
//! the assembler in, stored results out. It sits above the pure evaluators
//! (`evaluator/`), the criteria and the store, so none of those depends on
//! it.

use std::num::{NonZero, NonZeroUsize};

use serde::{Deserialize, Serialize};

pub mod pool;
pub mod ready;

pub use pool::run;
pub use ready::{Evaluated, Judging, evaluate_ready};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EvaluationConfig {
    /// Threads evaluating complete traces, off the async I/O threads; 0 = one per CPU.
    pub workers: usize,
    /// Complete traces queued for evaluation.
    pub queue_capacity: NonZeroUsize,
}

impl Default for EvaluationConfig {
    fn default() -> Self {
        EvaluationConfig {
            workers: 0,
            queue_capacity: const { NonZero::new(1024).unwrap() },
        }
    }
}

impl crate::bounds::Bounded for EvaluationConfig {
    const MAXIMA: &'static [(&'static str, u64)] = &[
        // Workers are threads of the async runtime's blocking pool (512
        // threads): above this, they would take all of it.
        ("workers", 256),
        ("queue_capacity", 1_000_000),
    ];
}

//! The evaluation stage: ready traces from the assembler in, stored results
//! out. It sits above the pure evaluators (`evaluator/`), the criteria and
//! the store, so none of those depends on it.

pub mod pool;
pub mod ready;

pub use pool::run;
pub use ready::{Evaluated, Judging, evaluate_ready};

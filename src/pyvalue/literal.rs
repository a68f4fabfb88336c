//! Python's `ast.literal_eval` for the literals tool arguments contain.
use super::{Unhashable, Value};

/// Why `ast.literal_eval` failed: the reference catches `SyntaxError` and
/// `ValueError` (args fall back to `{}`) but not `TypeError`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LiteralError {
    #[error("invalid syntax: {0}")]
    Syntax(String),
    #[error("malformed node or string: {0}")]
    Value(String),
    #[error(transparent)]
    Type(#[from] Unhashable),
}

/// Evaluates `s` as `ast.literal_eval(s)` would.
pub fn literal_eval(s: &str) -> Result<Value, LiteralError> {
    unimplemented!("{s}")
}

//! Python's `json.loads`.
use super::Value;

/// `json.JSONDecodeError`: Python's message, e.g. `Expecting value: line 1 column 1 (char 0)`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{msg}: line {line} column {column} (char {pos})")]
pub struct JsonError {
    pub msg: String,
    pub line: usize,
    pub column: usize,
    pub pos: usize,
}

/// Parses `s` exactly as Python's `json.loads(s)` would.
pub fn loads(s: &str) -> Result<Value, JsonError> {
    unimplemented!("{s}")
}

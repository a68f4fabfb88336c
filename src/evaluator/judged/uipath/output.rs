//! The output judges' `actual` and `expected` values: `target_output_key`
//! resolution (`eval/_helpers/output_path.py`) and number normalisation
//! (`eval/evaluators/output_evaluator.py`, `BaseOutputEvaluator`).
//!
//! Errors are the `str()` of the exception the reference raises inside
//! `evaluate()`, which becomes the error result's detail.

use crate::pyvalue::json::loads;
use crate::pyvalue::repr::str_repr;
use crate::pyvalue::{Dict, Value};

/// `target_output_key`: `"*"`, one path, or a list of paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetKey {
    All,
    Key(String),
    Keys(Vec<String>),
}

/// `_get_actual_output`. Known gap: a job-attachment URI
/// (`urn:uipath:cas:file:orchestrator:…`) is not downloaded.
pub fn actual(output: &Value, key: &TargetKey) -> Result<Value, String> {
    let value = match key {
        TargetKey::All => output.clone(),
        TargetKey::Key(k) => resolve(output, k).map_err(|e| e.caught())?,
        TargetKey::Keys(keys) => {
            if !matches!(output, Value::Dict(_)) {
                return Err(format!("Got {}", output.type_name()));
            }
            by_keys(output, keys)?
        }
    };
    normalize(&value)
}

/// `_get_expected_output`: a string is parsed as JSON first when a key is
/// targeted.
pub fn expected(expected: &Value, key: &TargetKey) -> Result<Value, String> {
    let parsed = |v: &Value| -> Result<Value, String> {
        match v {
            Value::Str(s) => loads(s).map_err(|e| format!("Error: {e}")),
            other => Ok(other.clone()),
        }
    };
    let value = match key {
        TargetKey::All => expected.clone(),
        TargetKey::Key(k) => resolve(&parsed(expected)?, k).map_err(|e| e.caught())?,
        TargetKey::Keys(keys) => {
            let v = parsed(expected)?;
            if !matches!(v, Value::Dict(_)) {
                return Err(format!("Got {}", v.type_name()));
            }
            by_keys(&v, keys)?
        }
    };
    normalize(&value)
}

/// `{k: resolve_output_path(v, k) for k in keys}`.
fn by_keys(v: &Value, keys: &[String]) -> Result<Value, String> {
    let mut d = Dict::with_capacity(keys.len());
    for k in keys {
        d.insert_str(k.clone(), resolve(v, k).map_err(|e| e.caught())?);
    }
    Ok(Value::Dict(d))
}

/// An exception `resolve_output_path` raises.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PathError {
    /// `KeyError`, `IndexError` or `TypeError`: caught and wrapped as
    /// `Error: {e}`.
    Lookup(String),
    /// `ValueError: Invalid path`: not caught, so raised as is.
    Invalid(String),
}

impl PathError {
    fn caught(self) -> String {
        match self {
            PathError::Lookup(m) => format!("Error: {m}"),
            PathError::Invalid(m) => m,
        }
    }
}

enum Token {
    Key(String),
    /// An index: its decimal digits (as `int()` prints them) and its value,
    /// `None` when it does not fit in a machine integer.
    Index(String, Option<usize>),
}

/// `_tokenize_path`: `re.finditer(r"([^.\[\]]+)|\[(\d+)\]", path)`, other
/// characters skipped. Known gap: `\d` here is ASCII only.
fn tokenize(path: &str) -> Vec<Token> {
    let b = path.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let special = |c: u8| matches!(c, b'.' | b'[' | b']');
        if !special(b[i]) {
            let start = i;
            while i < b.len() && !special(b[i]) {
                i += 1;
            }
            tokens.push(Token::Key(path[start..i].to_owned()));
            continue;
        }
        if b[i] == b'[' {
            let mut j = i + 1;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            if j > i + 1 && b.get(j) == Some(&b']') {
                let digits = path[i + 1..j].trim_start_matches('0');
                let digits = if digits.is_empty() { "0" } else { digits };
                tokens.push(Token::Index(digits.to_owned(), digits.parse().ok()));
                i = j + 1;
                continue;
            }
        }
        i += 1;
    }
    tokens
}

/// `resolve_output_path(output, path)`.
fn resolve(output: &Value, path: &str) -> Result<Value, PathError> {
    if path == "*" {
        return Ok(output.clone());
    }
    let tokens = tokenize(path);
    if tokens.is_empty() {
        return Err(PathError::Invalid(format!("Invalid path: '{path}'")));
    }
    let mut current = output;
    for token in &tokens {
        current = match token {
            Token::Index(digits, index) => {
                let (Value::List(items) | Value::Tuple(items)) = current else {
                    return Err(PathError::Lookup(format!(
                        "Cannot index into {} with integer index [{digits}]",
                        current.type_name()
                    )));
                };
                let Some(index) = index else {
                    return Err(PathError::Lookup(
                        "cannot fit 'int' into an index-sized integer".into(),
                    ));
                };
                items.get(*index).ok_or_else(|| {
                    PathError::Lookup(format!("{} index out of range", current.type_name()))
                })?
            }
            Token::Key(key) => {
                let Value::Dict(d) = current else {
                    return Err(PathError::Lookup(format!(
                        "Cannot access key '{key}' on {}",
                        current.type_name()
                    )));
                };
                d.get_str(key).ok_or_else(|| {
                    let mut m = String::new();
                    str_repr(key, &mut m);
                    PathError::Lookup(m)
                })?
            }
        };
    }
    Ok(current.clone())
}

/// `_normalize_numbers`: every int and float (not bool) becomes a float,
/// tuples become lists. An int too large for a float raises `OverflowError`.
fn normalize(v: &Value) -> Result<Value, String> {
    Ok(match v {
        Value::Int(i) => Value::Float(
            i.to_f64()
                .ok_or_else(|| "int too large to convert to float".to_owned())?,
        ),
        Value::Dict(d) => {
            let mut out = Dict::with_capacity(d.len());
            for (k, x) in d.iter() {
                // Keys come from an existing dict: they are hashable.
                let _ = out.insert(k.clone(), normalize(x)?);
            }
            Value::Dict(out)
        }
        Value::List(items) | Value::Tuple(items) => {
            Value::List(items.iter().map(normalize).collect::<Result<_, _>>()?)
        }
        other => other.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Value {
        loads(s).unwrap()
    }

    fn key(k: &str) -> TargetKey {
        TargetKey::Key(k.into())
    }

    #[test]
    fn normalizes_numbers() {
        let got = actual(
            &v(r#"{"a": 42, "b": [1, true, 2.5], "c": null}"#),
            &TargetKey::All,
        )
        .unwrap();
        assert_eq!(got.repr(), "{'a': 42.0, 'b': [1.0, True, 2.5], 'c': None}");
        assert_eq!(
            actual(&Value::str("x"), &TargetKey::All).unwrap().py_str(),
            "x"
        );
    }

    #[test]
    fn resolves_paths() {
        let out = v(r#"{"items": [{"name": "a"}, {"name": "b"}], "r": {"v": 5}}"#);
        assert_eq!(actual(&out, &key("items[1].name")).unwrap().repr(), "'b'");
        assert_eq!(actual(&out, &key("r.v")).unwrap().repr(), "5.0");
        assert_eq!(actual(&out, &key("nope")).unwrap_err(), "Error: 'nope'");
        assert_eq!(
            actual(&out, &key("items[5]")).unwrap_err(),
            "Error: list index out of range"
        );
        assert_eq!(
            actual(&out, &key("r[0]")).unwrap_err(),
            "Error: Cannot index into dict with integer index [0]"
        );
        assert_eq!(
            actual(&Value::str("t"), &key("answer")).unwrap_err(),
            "Error: Cannot access key 'answer' on str"
        );
        assert_eq!(actual(&out, &key(".")).unwrap_err(), "Invalid path: '.'");
        let keys = TargetKey::Keys(vec!["r.v".into(), "items[0].name".into()]);
        assert_eq!(
            actual(&out, &keys).unwrap().repr(),
            "{'r.v': 5.0, 'items[0].name': 'a'}"
        );
        assert_eq!(actual(&Value::str("t"), &keys).unwrap_err(), "Got str");
    }

    #[test]
    fn expected_strings_are_json_when_keyed() {
        assert_eq!(
            expected(&Value::str("plain"), &key("a")).unwrap_err(),
            "Error: Expecting value: line 1 column 1 (char 0)"
        );
        assert_eq!(
            expected(&Value::str(r#"{"a": 1}"#), &key("a"))
                .unwrap()
                .repr(),
            "1.0"
        );
        assert_eq!(
            expected(&Value::str("[1]"), &TargetKey::Keys(vec!["a".into()])).unwrap_err(),
            "Got list"
        );
        assert_eq!(
            expected(&Value::str("{\"a\": 1}"), &TargetKey::All)
                .unwrap()
                .py_str(),
            "{\"a\": 1}"
        );
    }
}

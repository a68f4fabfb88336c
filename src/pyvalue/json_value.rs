//! Python values as `serde_json` values and back: how the API shows them,
//! and how configuration and request bodies become what the evaluators read.

use serde_json::Value as Json;

use super::{Dict, Int, Value};

/// [`py_to_json`] of a dict (keys as their `str()`).
pub fn py_dict_to_json(d: &Dict) -> Json {
    Json::Object(d.iter().map(|(k, v)| (k.py_str(), py_to_json(v))).collect())
}

/// A JSON view of a Python value for the API (ints beyond i64 and
/// non-finite floats as strings, tuples and sets as arrays).
pub fn py_to_json(v: &Value) -> Json {
    match v {
        Value::None => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(Int::Small(i)) => Json::from(*i),
        Value::Float(f) => {
            serde_json::Number::from_f64(*f).map_or_else(|| Json::String(v.repr()), Json::Number)
        }
        Value::Str(s) => Json::String(s.clone()),
        Value::List(items) | Value::Tuple(items) | Value::Set(items) => {
            Json::Array(items.iter().map(py_to_json).collect())
        }
        Value::Dict(d) => py_dict_to_json(d),
        other => Json::String(other.repr()),
    }
}

/// A JSON value (from YAML config or an API body) as Python's `json.loads` would see it.
pub fn json_to_py(v: &Json) -> Value {
    // Via text so ints, floats and big numbers keep Python's distinctions.
    super::json::loads(&v.to_string()).unwrap_or(Value::None)
}

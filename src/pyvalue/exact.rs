//! A Python value as JSON text that reads back as the same value: what a
//! stored tool call keeps so that its details can be rendered again, byte
//! for byte, long after it was scored (`store/rows.rs`).
//!
//! JSON as Python's `json` module reads it (ints, floats with their point,
//! big ints, `NaN` and `Infinity`) covers most values as they are; what
//! JSON has no form for is a one-key object naming its type: `{"$tuple":
//! [...]}`, `{"$set": [...]}` (in the set's own order), `{"$bytes": hex}`,
//! `{"$complex": [re, im]}`, and `{"$dict": [[k, v], ...]}` for a dict with
//! a key that is not a string, or whose one key starts with `$`.

use super::json::loads;
use super::{Dict, Int, Value};

/// Why stored text did not read back as a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a stored Python value: {0}")]
pub struct ExactError(String);

/// Writes `v` as exact JSON text.
pub fn write(v: &Value, out: &mut String) {
    match v {
        Value::None => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(Int::Small(i)) => out.push_str(itoa::Buffer::new().format(*i)),
        Value::Int(Int::Big(b)) => out.push_str(&b.to_string()),
        Value::Float(f) => write_float(*f, out),
        Value::Str(s) => write_str(s, out),
        Value::List(items) => write_list(items, out),
        Value::Tuple(items) => tagged("$tuple", out, |out| write_list(items, out)),
        Value::Set(items) => tagged("$set", out, |out| write_list(items, out)),
        Value::Bytes(b) => tagged("$bytes", out, |out| {
            out.push('"');
            out.push_str(&const_hex::encode(b));
            out.push('"');
        }),
        Value::Complex(re, im) => tagged("$complex", out, |out| {
            out.push('[');
            write_float(*re, out);
            out.push(',');
            write_float(*im, out);
            out.push(']');
        }),
        Value::Dict(d) => write_dict(d, out),
    }
}

/// Writes a dict: an object when every key is a string and it cannot be
/// taken for a tagged value, else its entries under `$dict`.
pub fn write_dict(d: &Dict, out: &mut String) {
    let plain = d.keys().all(|k| matches!(k, Value::Str(_)))
        && !(d.len() == 1
            && d.keys()
                .any(|k| matches!(k, Value::Str(s) if s.starts_with('$'))));
    if plain {
        out.push('{');
        for (i, (k, v)) in d.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write(k, out);
            out.push(':');
            write(v, out);
        }
        out.push('}');
    } else {
        tagged("$dict", out, |out| {
            out.push('[');
            for (i, (k, v)) in d.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push('[');
                write(k, out);
                out.push(',');
                write(v, out);
                out.push(']');
            }
            out.push(']');
        });
    }
}

/// Whether `v` is written as plain JSON that `serde_json` also reads (no
/// tag, no `NaN`, no big int), as the API shows arguments: such a dict is
/// stored once, in the form the API serves.
pub fn is_plain(v: &Value) -> bool {
    match v {
        Value::None | Value::Bool(_) | Value::Str(_) | Value::Int(Int::Small(_)) => true,
        Value::Float(f) => f.is_finite(),
        Value::List(items) => items.iter().all(is_plain),
        Value::Dict(d) => is_plain_dict(d),
        Value::Int(Int::Big(_))
        | Value::Tuple(_)
        | Value::Set(_)
        | Value::Bytes(_)
        | Value::Complex(..) => false,
    }
}

/// [`is_plain`] of a dict.
pub fn is_plain_dict(d: &Dict) -> bool {
    d.iter()
        .all(|(k, v)| matches!(k, Value::Str(s) if !s.starts_with('$')) && is_plain(v))
}

/// Reads text [`write`] wrote.
pub fn read(text: &str) -> Result<Value, ExactError> {
    let v = loads(text).map_err(|e| ExactError(e.to_string()))?;
    untag(v)
}

fn write_float(f: f64, out: &mut String) {
    if f.is_nan() {
        out.push_str("NaN");
    } else if f.is_infinite() {
        out.push_str(if f > 0.0 { "Infinity" } else { "-Infinity" });
    } else {
        // Python's repr: the shortest text that reads back as `f`, always
        // with a point or an exponent, so it reads back as a float.
        out.push_str(&Value::Float(f).repr());
    }
}

/// A JSON string literal, as `serde_json` writes it (this module is below
/// `json_text`, which reads Python values).
fn write_str(s: &str, out: &mut String) {
    match serde_json::to_string(s) {
        Ok(text) => out.push_str(&text),
        // Writing a string cannot fail; an empty one stands in if it did.
        Err(_) => out.push_str("\"\""),
    }
}

fn write_list(items: &[Value], out: &mut String) {
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write(item, out);
    }
    out.push(']');
}

fn tagged(tag: &str, out: &mut String, body: impl FnOnce(&mut String)) {
    out.push_str("{\"");
    out.push_str(tag);
    out.push_str("\":");
    body(out);
    out.push('}');
}

fn bad(what: &str) -> ExactError {
    ExactError(what.to_owned())
}

fn untag(v: Value) -> Result<Value, ExactError> {
    Ok(match v {
        Value::List(items) => Value::List(untag_all(items)?),
        Value::Dict(d) => {
            let tag = match (d.len(), d.iter().next()) {
                (1, Some((Value::Str(k), _))) if k.starts_with('$') => Some(k.clone()),
                _ => None,
            };
            match tag {
                Some(tag) => {
                    let body = d
                        .into_entries()
                        .pop()
                        .map(|(_, v)| v)
                        .ok_or_else(|| bad(&tag))?;
                    untag_tagged(&tag, body)?
                }
                None => {
                    let mut out = Dict::with_capacity(d.len());
                    for (k, v) in d.into_entries() {
                        out.insert(k, untag(v)?)
                            .map_err(|_| bad("unhashable key"))?;
                    }
                    Value::Dict(out)
                }
            }
        }
        other => other,
    })
}

fn untag_all(items: Vec<Value>) -> Result<Vec<Value>, ExactError> {
    items.into_iter().map(untag).collect()
}

fn untag_tagged(tag: &str, body: Value) -> Result<Value, ExactError> {
    let list = |body: Value| match body {
        Value::List(items) => untag_all(items),
        _ => Err(bad(tag)),
    };
    Ok(match tag {
        "$tuple" => Value::Tuple(list(body)?),
        "$set" => Value::Set(list(body)?),
        "$bytes" => match body {
            Value::Str(hex) => Value::Bytes(const_hex::decode(&hex).map_err(|_| bad(tag))?),
            _ => return Err(bad(tag)),
        },
        "$complex" => match list(body)?.as_slice() {
            [Value::Float(re), Value::Float(im)] => Value::Complex(*re, *im),
            _ => return Err(bad(tag)),
        },
        "$dict" => {
            let entries = list(body)?;
            let mut d = Dict::with_capacity(entries.len());
            for entry in entries {
                let Value::List(pair) = entry else {
                    return Err(bad(tag));
                };
                let [k, v]: [Value; 2] = pair.try_into().map_err(|_| bad(tag))?;
                d.insert(k, v).map_err(|_| bad("unhashable key"))?;
            }
            Value::Dict(d)
        }
        _ => return Err(bad(tag)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn text(v: &Value) -> String {
        let mut out = String::new();
        write(v, &mut out);
        out
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::None),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|i| Value::Int(Int::Small(i))),
            any::<i128>().prop_map(|i| Value::Int(Int::Big(i.into()))),
            any::<f64>().prop_map(Value::Float),
            (any::<f64>(), any::<f64>()).prop_map(|(a, b)| Value::Complex(a, b)),
            ".{0,6}".prop_map(Value::Str),
            "\\$[a-z]{0,5}".prop_map(Value::Str),
            prop::collection::vec(any::<u8>(), 0..4).prop_map(Value::Bytes),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::List),
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Tuple),
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Set),
                prop::collection::vec(("\\$?[a-z]{0,3}", inner.clone()), 0..4).prop_map(|kv| {
                    let mut d = Dict::new();
                    for (k, v) in kv {
                        d.insert_str(k, v);
                    }
                    Value::Dict(d)
                }),
                prop::collection::vec((any::<i64>(), inner), 0..3).prop_map(|kv| {
                    let mut d = Dict::new();
                    for (k, v) in kv {
                        let _ = d.insert(Value::Int(Int::Small(k)), v);
                    }
                    Value::Dict(d)
                }),
            ]
        })
    }

    proptest! {
        /// Every value reads back as itself: the same text written again
        /// (which tells types, float bits but NaN's, and orders apart) and
        /// the same `repr`.
        #[test]
        fn every_value_reads_back_as_itself(v in value()) {
            let written = text(&v);
            let back = read(&written).map_err(|e| TestCaseError::fail(format!("{e}: {written}")))?;
            prop_assert_eq!(text(&back), written);
            prop_assert_eq!(back.repr(), v.repr());
        }

        /// A plain value's text is JSON `serde_json` reads.
        #[test]
        fn plain_values_are_json(v in value()) {
            if is_plain(&v) {
                let written = text(&v);
                prop_assert!(serde_json::from_str::<serde_json::Value>(&written).is_ok(), "{}", written);
            }
        }
    }

    #[test]
    fn a_dict_that_looks_tagged_is_written_as_entries() {
        let mut d = Dict::new();
        d.insert_str("$tuple", Value::List(vec![]));
        let v = Value::Dict(d);
        assert_eq!(text(&v), r#"{"$dict":[["$tuple",[]]]}"#);
        assert_eq!(read(&text(&v)).map(|b| b.repr()), Ok(v.repr()));
    }

    #[test]
    fn damaged_text_is_an_error() {
        for t in [
            "{",
            r#"{"$bytes":"abc"}"#,
            r#"{"$dict":[[1]]}"#,
            r#"{"$what":1}"#,
        ] {
            assert!(read(t).is_err(), "{t}");
        }
    }
}

//! JSON text as `serde_json` writes it (compact), written without building
//! a `serde_json::Value` where the caller has the parts: result details are
//! stored as this text, and the UiPath evaluators write their justification
//! (the output evaluator's possibly thousands of explained attempts
//! included) straight to it.

/// Text written through a per-thread buffer, returned in an exact
/// allocation: a typical text (a few kilobytes) does not grow by
/// reallocation, and no slack is kept (`into_boxed_str` after it copies
/// nothing). A text longer than the buffer keeps is handed over instead of
/// copied (details run to a megabyte).
pub(crate) fn exact(write: impl FnOnce(&mut String)) -> String {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            buf.clear();
            write(&mut buf);
            if buf.capacity() > SCRATCH_KEPT {
                // Not kept anyway: handed over, its slack given back (in
                // place, for an allocation this large) instead of copied.
                let mut text = std::mem::take(&mut *buf);
                text.shrink_to_fit();
                return text;
            }
            String::from(buf.as_str())
        }
        // Only if a writer itself called `exact`: no buffer to share then.
        Err(_) => {
            let mut text = String::new();
            write(&mut text);
            text.shrink_to_fit();
            text
        }
    })
}

/// The most a thread's buffer keeps between uses: typical details are a few
/// kilobytes; a rare huge one is not kept.
const SCRATCH_KEPT: usize = 256 * 1024;

thread_local! {
    static SCRATCH: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Deepest nesting [`parse_stored`] reads: arguments are accepted up to
/// `pyvalue::json::MAX_DEPTH` (200) levels, and a tool call or a
/// justification wraps them in a few more.
const MAX_STORED_DEPTH: usize = 256;

/// Parses JSON text this service wrote (result details, stored tool calls).
pub(crate) fn parse_stored(text: &str) -> Result<serde_json::Value, serde_json::Error> {
    deserialize_stored(text)
}

/// JSON text this service wrote, checked and handed on as it is (no tree is
/// built): what the API serves a result's details as.
pub(crate) fn raw_stored(
    text: &str,
) -> Result<Box<serde_json::value::RawValue>, serde_json::Error> {
    deserialize_stored(text)
}

/// Reads JSON text this service wrote. It may nest deeper than
/// `serde_json`'s default limit of 128, which would make an accepted trace
/// unreadable, so when a parse within that limit fails, the limit is lifted
/// once a scan has shown the nesting within [`MAX_STORED_DEPTH`] (what keeps
/// the recursive parse off the end of the stack). The scan costs as much as
/// the parse, and nearly all text is shallow.
pub(crate) fn deserialize_stored<'de, T: serde::Deserialize<'de>>(
    text: &'de str,
) -> Result<T, serde_json::Error> {
    if let Ok(v) = serde_json::from_str(text) {
        return Ok(v);
    }
    if nesting(text) > MAX_STORED_DEPTH {
        return Err(serde::de::Error::custom(format!(
            "nested more than {MAX_STORED_DEPTH} deep"
        )));
    }
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let v = T::deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// The deepest nesting of arrays and objects in JSON text (brackets inside
/// strings do not count).
fn nesting(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for b in text.bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// `serde_json::to_string`, byte for byte (a property test checks it), but
/// copying the runs of characters that need no escaping in one go: details
/// are mostly long Python reprs, and serde_json escapes byte by byte.
pub(crate) fn write_value(v: &serde_json::Value, out: &mut String) {
    use serde_json::Value as J;
    match v {
        J::Null => out.push_str("null"),
        J::Bool(true) => out.push_str("true"),
        J::Bool(false) => out.push_str("false"),
        J::Number(n) => out.push_str(&n.to_string()),
        J::String(s) => write_str(s, out),
        J::Array(items) => write_seq('[', items, ']', out, write_value),
        J::Object(map) => write_seq('{', map, '}', out, |(k, item), out| {
            write_str(k, out);
            out.push(':');
            write_value(item, out);
        }),
    }
}

/// `open`, each item as `write` writes it, commas between, `close`.
fn write_seq<T>(
    open: char,
    items: impl IntoIterator<Item = T>,
    close: char,
    out: &mut String,
    mut write: impl FnMut(T, &mut String),
) {
    out.push(open);
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write(item, out);
    }
    out.push(close);
}

/// [`write_py`] of a dict.
pub(crate) fn write_py_dict(d: &crate::pyvalue::Dict, out: &mut String) {
    if d.keys().all(|k| matches!(k, crate::pyvalue::Value::Str(_))) {
        write_seq('{', d.iter(), '}', out, |(k, item), out| {
            write_str(k.as_str().unwrap_or_default(), out);
            out.push(':');
            write_py(item, out);
        });
    } else {
        // Other keys' `str()` may collide: the tree resolves that as
        // `serde_json` does.
        write_value(&crate::pyvalue::py_dict_to_json(d), out);
    }
}

/// `serde_json::to_string(&py_to_json(v))`, byte for byte (a property test
/// checks it), without building the tree: how a stored tool call's
/// arguments are written once, when its trace is evaluated.
pub(crate) fn write_py(v: &crate::pyvalue::Value, out: &mut String) {
    use crate::pyvalue::{Int, Value};
    match v {
        Value::None => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(Int::Small(i)) => out.push_str(itoa::Buffer::new().format(*i)),
        Value::Str(s) => write_str(s, out),
        Value::List(items) | Value::Tuple(items) | Value::Set(items) => {
            write_seq('[', items, ']', out, write_py)
        }
        Value::Dict(d) => write_py_dict(d, out),
        other => write_value(&crate::pyvalue::py_to_json(other), out),
    }
}

/// A JSON string literal, escaped as serde_json escapes: `"` and `\`, the
/// short forms `\b \f \n \r \t`, other control characters as `\u00xx`
/// (lower-case hex); everything else, non-ASCII included, as is. Eight
/// bytes at a time are tested, and runs that need no escaping copied at once.
pub(crate) fn write_str(s: &str, out: &mut String) {
    out.reserve(s.len() + 2);
    out.push('"');
    write_str_content(s, out);
    out.push('"');
}

/// [`write_str`] without the quotes: for a string literal written in parts.
pub(crate) fn write_str_content(s: &str, out: &mut String) {
    use crate::pyvalue::repr::{has_byte, has_control, word_at};
    let bytes = s.as_bytes();
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        // Eight bytes at a time while eight remain, then byte by byte.
        if word_at(bytes, i)
            .is_some_and(|w| has_control(w) | has_byte(w, b'"') | has_byte(w, b'\\') == 0)
        {
            i += 8;
            continue;
        }
        let b = bytes[i];
        let escaped = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f => "",
            _ => {
                i += 1;
                continue;
            }
        };
        // Every byte escaped is ASCII, so `start..i` lies on char boundaries.
        out.push_str(&s[start..i]);
        if escaped.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        } else {
            out.push_str(escaped);
        }
        i += 1;
        start = i;
    }
    out.push_str(&s[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_skips_brackets_in_strings() {
        assert_eq!(nesting(r#"{"a": [1, {"b": "[[[\"{"}]}"#), 3);
        assert_eq!(nesting(r#""\\" []"#), 1);
        assert_eq!(nesting("1"), 0);
    }

    #[test]
    fn stored_text_parses_past_128_levels_up_to_the_cap() {
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(serde_json::from_str::<serde_json::Value>(&nested(200)).is_err());
        assert!(parse_stored(&nested(200)).is_ok());
        assert!(parse_stored(&nested(MAX_STORED_DEPTH + 1)).is_err());
        assert!(parse_stored("[] x").is_err(), "trailing characters");
    }

    mod python_values {
        use crate::pyvalue::{Dict, Int, Value, py_dict_to_json, py_to_json};
        use proptest::prelude::*;

        fn value() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::None),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(Value::int),
                (any::<i64>(), 64u32..200).prop_map(|(i, shift)| Value::Int(Int::from_bigint(
                    num_bigint::BigInt::from(i) << shift
                ))),
                any::<f64>().prop_map(Value::Float),
                prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(-0.0), Just(1e300)]
                    .prop_map(Value::Float),
                (any::<f64>(), any::<f64>()).prop_map(|(a, b)| Value::Complex(a, b)),
                "\\PC{0,8}".prop_map(Value::str),
                "[a-z'\"\\\\\\n\\x00-\\x1f\\x7f]{0,6}".prop_map(Value::str),
                prop::collection::vec(any::<u8>(), 0..4).prop_map(Value::Bytes),
            ];
            leaf.prop_recursive(3, 24, 4, |inner| {
                // Keys whose `str()` collide ('1' and 1, 'None' and None)
                // as well as plain strings.
                let key = prop_oneof![
                    "[a-z\"]{0,3}".prop_map(Value::str),
                    Just(Value::str("1")),
                    Just(Value::int(1)),
                    Just(Value::None),
                    Just(Value::str("None")),
                ];
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::List),
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Tuple),
                    prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Set),
                    prop::collection::vec((key, inner), 0..4).prop_map(|kvs| {
                        let mut d = Dict::new();
                        for (k, v) in kvs {
                            let _ = d.insert(k, v);
                        }
                        Value::Dict(d)
                    }),
                ]
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(3000))]
            #[test]
            fn python_values_are_written_as_serde_json_writes_their_json(v in value()) {
                let mut out = String::new();
                super::super::write_py(&v, &mut out);
                prop_assert_eq!(&out, &serde_json::to_string(&py_to_json(&v)).unwrap());
                if let Value::Dict(d) = &v {
                    prop_assert_eq!(crate::json_text::parse_stored(&out).unwrap(), py_dict_to_json(d));
                }
            }
        }
    }
}

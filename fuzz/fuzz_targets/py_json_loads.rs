//! The port of Python's `json.loads` (`pyvalue::json::loads`: tool-call
//! arguments and outputs, evaluator and eval-set files, API bodies), with
//! the properties its callers rely on:
//!
//! - `repr` of what it returns reads back through `ast.literal_eval`
//!   (`pyvalue::literal`) as an equal value with the same repr (NaN and
//!   infinities aside: their reprs are not literals), with equal `eq_hash`;
//! - a value equals itself (`py_eq`; a top-level NaN aside);
//! - what serde_json (the service's other JSON reader) accepts, it accepts,
//!   as the same value (serde_json refuses more: NaN, lone surrogates, deep
//!   nesting, numbers out of range); and the value the service makes of a
//!   JSON document it read with serde_json (`/v1/evaluate`'s inline
//!   evaluator configs and criteria, the YAML config's: through
//!   `pyvalue::json_to_py`) is the one `json.loads` makes of the
//!   text, to the repr;
//! - the output rule's fast path (`json::dict_content_str`, behind
//!   `extract::output_text`) decides only what `loads` would decide, alike.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolscore::pyvalue::{Value, eq::eq_hash, json, literal};
use toolscore::record::AttrRef;
use toolscore::pyvalue::json_to_py;
use toolscore_fuzz::{agrees_with_serde, all_finite, serde_double_for_int};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let loaded = json::loads(text);
    if let Ok(j) = serde_json::from_str::<serde_json::Value>(text) {
        let v = loaded.as_ref().unwrap_or_else(|e| panic!("serde_json reads it, json.loads refuses: {e}"));
        assert!(agrees_with_serde(v, &j), "json.loads and serde_json differ: {v:?} vs {j:?}");
        // serde_json makes `-0` and integers past 64 bits floats; its values
        // reach `json_to_py` only from the YAML config, where YAML decides
        // what a number is (the HTTP API reads its criteria with `loads`).
        if !serde_double_for_int(v, &j) {
            let via_serde = json_to_py(&j);
            assert_eq!(via_serde.repr(), v.repr(), "json_to_py(serde_json) vs json.loads of {text:?}");
        }
    }
    // The output rule: the fast path against the value tree.
    let slow = match &loaded {
        Ok(Value::Dict(d)) => Some(match d.get_str("content") {
            Some(c) if c.truthy() => c.py_str(),
            _ => String::new(),
        }),
        _ => None,
    };
    if let Some(fast) = json::dict_content_str(text) {
        assert_eq!(Some(&fast), slow.as_ref(), "dict_content_str");
    }
    let output = toolscore::extract::output_text(Some(AttrRef::Str(text)));
    assert_eq!(output, slow.unwrap_or_else(|| text.to_owned()), "output_text");

    let Ok(v) = loaded else { return };
    if !matches!(v, Value::Float(f) if f.is_nan()) {
        assert!(v.py_eq(&v), "a value equals itself: {v:?}");
    }
    if !all_finite(&v) {
        return;
    }
    let printed = v.repr();
    let back = literal::literal_eval(&printed)
        .unwrap_or_else(|e| panic!("repr of a json.loads value does not read back: {e}: {printed}"));
    assert_eq!(back.repr(), printed, "repr → literal_eval → repr");
    assert!(back.py_eq(&v) && v.py_eq(&back), "literal_eval(repr(v)) == v: {printed}");
    assert_eq!(eq_hash(&back), eq_hash(&v), "equal values, equal eq_hash: {printed}");
});

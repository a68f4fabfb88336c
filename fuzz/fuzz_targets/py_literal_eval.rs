//! The port of Python's `ast.literal_eval` (`pyvalue::literal`, with its
//! tokenizer and parser `pytoken`/`pyparse`: Python-literal tool arguments
//! such as `{'city': 'Paris'}`), and `repr` of what it returns: never a
//! panic; a value equals itself; and `repr` reads back as an equal value
//! with the same repr and `eq_hash` (values with a NaN, an infinity or a
//! complex number aside: Python's own reprs of those do not read back; a
//! set's repr may read back in another order, as in CPython, so values
//! holding one are compared by `==` only).
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolscore::pyvalue::{eq::eq_hash, literal};
use toolscore_fuzz::{all_finite, has_complex, has_set};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(v) = literal::literal_eval(text) else { return };
    let printed = v.repr();
    let _ = v.py_str();
    if !all_finite(&v) {
        return;
    }
    assert!(v.py_eq(&v), "a value equals itself: {printed}");
    // Known gap (pyvalue/repr.rs): CPython refuses to render an int of more
    // than 4300 digits (ValueError); the port renders it, and its text does
    // not read back. Reached through a hex, octal or binary literal.
    if has_complex(&v) || has_huge_int(&v) {
        return;
    }
    let back = literal::literal_eval(&printed)
        .unwrap_or_else(|e| panic!("repr of a literal_eval value does not read back: {e}: {printed}"));
    if !has_set(&v) {
        assert_eq!(back.repr(), printed, "repr → literal_eval → repr");
    }
    assert!(back.py_eq(&v) && v.py_eq(&back), "literal_eval(repr(v)) == v: {printed}");
    assert_eq!(eq_hash(&back), eq_hash(&v), "equal values, equal eq_hash: {printed}");
});

/// Whether `v` holds an int of more than 4300 decimal digits.
fn has_huge_int(v: &toolscore::pyvalue::Value) -> bool {
    use toolscore::pyvalue::{Int, Value};
    match v {
        Value::Int(Int::Big(b)) => b.bits() > 14_000 && b.to_string().trim_start_matches('-').len() > 4300,
        Value::List(xs) | Value::Tuple(xs) | Value::Set(xs) => xs.iter().any(has_huge_int),
        Value::Dict(d) => d.iter().any(|(k, v)| has_huge_int(k) || has_huge_int(v)),
        _ => false,
    }
}

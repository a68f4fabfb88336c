//! Python's `==` and the hash that agrees with it (`eq.rs`), checked
//! against CPython's answers on values written as Python literals and as
//! JSON. Beside `eq.rs` rather than in it: the values are read with the
//! parsers, which themselves build on `eq.rs`.
use num_bigint::BigInt;

use super::eq::{check_hashable, eq_hash};
use super::json::loads;
use super::literal::literal_eval;
use super::*;

fn lit(s: &str) -> Value {
    match literal_eval(s) {
        Ok(v) => v,
        Err(e) => panic!("literal_eval({s:?}): {e}"),
    }
}

fn js(s: &str) -> Value {
    match loads(s) {
        Ok(v) => v,
        Err(e) => panic!("loads({s:?}): {e}"),
    }
}

fn big(s: &str) -> Value {
    Value::Int(Int::from_bigint(s.parse::<BigInt>().unwrap_or_default()))
}

/// (a, b, Python's `a == b`) — expected values from CPython.
const LITERAL_CASES: &[(&str, &str, bool)] = &[
    ("1", "1.0", true),
    ("1", "True", true),
    ("1.0", "True", true),
    ("0", "False", true),
    ("0", "-0.0", true),
    ("0.0", "-0.0", true),
    ("2", "True", false),
    ("1", "1+0j", true),
    ("1.5", "1.5+0j", true),
    ("True", "1+0j", true),
    ("1j", "1j", true),
    ("1", "1j", false),
    ("0", "0j", true),
    ("(1, 2)", "[1, 2]", false),
    ("(1, 2)", "(1.0, 2)", true),
    ("[1, 2]", "[1, 2]", true),
    ("[1, 2]", "[2, 1]", false),
    ("[1, [2, 3]]", "[True, [2.0, 3]]", true),
    ("{'a': 1}", "{'a': 1.0}", true),
    ("{'a': 1, 'b': 2}", "{'b': 2, 'a': 1}", true),
    ("{'a': 1}", "{'a': 1, 'b': 2}", false),
    ("{1: 'x'}", "{1.0: 'x'}", true),
    ("{1: 'x'}", "{True: 'x'}", true),
    ("{(1, 2): 'x'}", "{(1.0, 2): 'x'}", true),
    ("{1, 2}", "{2, 1}", true),
    ("{1, 2}", "{2.0, True}", true),
    ("{1, 2}", "{1, 3}", false),
    ("{1, 2}", "[1, 2]", false),
    ("set()", "set()", true),
    ("set()", "{}", false),
    ("None", "None", true),
    ("None", "0", false),
    ("None", "False", false),
    ("''", "None", false),
    ("'a'", "'a'", true),
    ("'a'", "b'a'", false),
    ("b'a'", "b'a'", true),
    ("'1'", "1", false),
    ("()", "[]", false),
    ("()", "()", true),
    ("[]", "{}", false),
    ("9007199254740993", "9007199254740992.0", false),
    ("9007199254740992", "9007199254740992.0", true),
    (
        "123456789012345678901234567890",
        "123456789012345678901234567890",
        true,
    ),
    (
        "123456789012345678901234567890",
        "1.2345678901234568e+29",
        false,
    ),
    ("1e400", "1e400", true),
    ("{1: {2: [3]}}", "{1: {2: [3.0]}}", true),
];

#[test]
fn literal_equality() {
    for &(a, b, expected) in LITERAL_CASES {
        let (va, vb) = (lit(a), lit(b));
        assert_eq!(va.py_eq(&vb), expected, "{a} == {b}");
        assert_eq!(vb.py_eq(&va), expected, "{b} == {a}");
    }
}

#[test]
fn eq_hash_agrees_with_equality() {
    for &(a, b, expected) in LITERAL_CASES {
        let (va, vb) = (lit(a), lit(b));
        if expected {
            assert_eq!(eq_hash(&va), eq_hash(&vb), "{a} == {b}");
        }
        for v in [&va, &vb] {
            let wrapped = Value::List(vec![v.clone(), v.clone()]);
            assert_eq!(eq_hash(&wrapped), eq_hash(&wrapped.clone()));
        }
    }
    for (a, b) in [
        (
            "{\"a\": 1, \"b\": [1, 2]}",
            "{\"b\": [1.0, 2], \"a\": true}",
        ),
        ("[NaN]", "[NaN]"),
        (
            "{\"x\": {\"p\": 1, \"q\": 2}}",
            "{\"x\": {\"q\": 2.0, \"p\": true}}",
        ),
    ] {
        assert!(js(a).py_eq(&js(b)) || a.contains("NaN"));
        assert_eq!(eq_hash(&js(a)), eq_hash(&js(b)), "{a} == {b}");
    }
    assert_ne!(eq_hash(&js("{\"a\": 1}")), eq_hash(&js("{\"a\": 2}")));
    assert_ne!(eq_hash(&lit("(1, 2)")), eq_hash(&lit("[1, 2]")));
    let (da, db) = (js("{\"a\": 1, \"b\": 2}"), js("{\"b\": 2, \"a\": 1.0}"));
    if let (Some(x), Some(y)) = (da.as_dict(), db.as_dict()) {
        assert!(x.py_eq(y));
        assert!(!x.py_eq(&Dict::new()));
    }
}

#[test]
fn big_ints_and_floats() {
    assert!(big("340282366920938463463374607431768211456").py_eq(&Value::Float(2f64.powi(128))));
    assert!(!big("340282366920938463463374607431768211457").py_eq(&Value::Float(2f64.powi(128))));
    assert!(!big("-9223372036854775809").py_eq(&Value::int(i64::MIN)));
    assert!(big("-9223372036854775808").py_eq(&Value::int(i64::MIN)));
    assert!(Value::int(i64::MIN).py_eq(&Value::Float(-9223372036854775808.0)));
    assert!(!Value::int(i64::MAX).py_eq(&Value::Float(9223372036854775807.0)));
    assert!(!Value::int(1).py_eq(&Value::Float(f64::NAN)));
    assert!(!Value::int(1).py_eq(&Value::Float(f64::INFINITY)));
    assert!(Value::Float(0.5).py_eq(&Value::Complex(0.5, 0.0)));
    assert!(Value::Complex(0.5, -0.0).py_eq(&Value::Float(0.5)));
}

#[test]
fn nan_identity_in_containers() {
    let nan = js("NaN");
    assert!(!nan.py_eq(&nan));
    assert!(!nan.py_eq(&js("NaN")));
    assert!(js("[NaN]").py_eq(&js("[NaN]")));
    assert!(js("{\"x\": NaN}").py_eq(&js("{\"x\": NaN}")));
    assert!(js("[[1, NaN]]").py_eq(&js("[[1, NaN]]")));
    assert!(!js("[NaN]").py_eq(&js("[1]")));
    assert!(!js("[NaN]").py_eq(&js("[Infinity]")));
    assert!(js("[Infinity, -Infinity]").py_eq(&js("[1e999, -1e999]")));
    assert!(!Value::Complex(f64::NAN, 0.0).py_eq(&Value::Complex(f64::NAN, 0.0)));
    assert!(
        Value::List(vec![Value::Complex(f64::NAN, 0.0)])
            .py_eq(&Value::List(vec![Value::Complex(f64::NAN, 0.0)]))
    );
}

#[test]
fn json_equality() {
    assert!(js("{\"a\": 1, \"b\": [1, 2]}").py_eq(&js("{\"b\": [1.0, 2], \"a\": true}")));
    assert!(!js("{\"a\": 1}").py_eq(&js("{\"a\": \"1\"}")));
    assert!(js("12345678901234567890123").py_eq(&lit("12345678901234567890123")));
    assert!(!js("[1, 2]").py_eq(&lit("(1, 2)")));
    assert!(js("1e3").py_eq(&js("1000")));
    assert!(js("null").py_eq(&Value::None));
}

#[test]
fn hashable() {
    assert_eq!(check_hashable(&lit("(1, [2])")), Err(Unhashable("list")));
    assert_eq!(
        check_hashable(&lit("(1, (2, {}))")),
        Err(Unhashable("dict"))
    );
    assert_eq!(check_hashable(&lit("{1}")), Err(Unhashable("set")));
    assert_eq!(
        check_hashable(&lit("(1, (2, 'a'), b'x', None, 1.5, 1j)")),
        Ok(())
    );
    assert_eq!(Unhashable("list").to_string(), "unhashable type: 'list'");
}

#[test]
fn dict_keys_collapse() {
    let mut d = Dict::new();
    for (k, v) in [
        (Value::int(1), "a"),
        (Value::Float(1.0), "b"),
        (Value::Bool(true), "c"),
        (Value::Complex(1.0, 0.0), "d"),
        (Value::int(0), "e"),
        (Value::Float(-0.0), "f"),
        (Value::Bool(false), "g"),
        (big("18446744073709551616"), "h"),
        (Value::Float(18446744073709551616.0), "i"),
        (Value::Tuple(vec![Value::int(1), Value::int(2)]), "j"),
        (Value::Tuple(vec![Value::Float(1.0), Value::int(2)]), "k"),
        (Value::str("1"), "l"),
    ] {
        assert_eq!(d.insert(k, Value::str(v)), Ok(()));
    }
    assert_eq!(
        Value::Dict(d.clone()).repr(),
        "{1: 'd', 0: 'g', 18446744073709551616: 'i', (1, 2): 'k', '1': 'l'}"
    );
    assert!(d.get(&Value::Float(1.0)).is_some());
    assert!(d.get_str("1").is_some());
    assert!(d.get_str("2").is_none());
    assert!(d.contains_key(&Value::Bool(false)));
    assert!(!d.contains_key(&Value::List(vec![])));
    assert_eq!(
        d.insert(Value::List(vec![]), Value::None),
        Err(Unhashable("list"))
    );
}

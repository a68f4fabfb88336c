//! Python `==` and `hash()` for [`Value`].
//!
//! Two flavours of equality exist because CPython's container comparisons
//! (`PyObject_RichCompareBool`) short-circuit on identity: `nan == nan` is
//! `False`, but `[nan] == [nan]` is `True` when both hold the same NaN
//! object — and every NaN `json.loads` produces is one shared constant. So
//! [`Value::py_eq`] treats NaN as unequal at the top level only; nested
//! comparisons (and dict keys / set elements) treat a NaN as equal to a NaN
//! of the same type.
use std::hash::{Hash, Hasher};

use indexmap::Equivalent;

use super::hash::f64_to_bigint;
use super::{Dict, Int, Key, Unhashable, Value};

/// Errors unless `v` may be a dict key or set element in Python.
pub fn check_hashable(v: &Value) -> Result<(), Unhashable> {
    match v {
        Value::List(_) => Err(Unhashable("list")),
        Value::Dict(_) => Err(Unhashable("dict")),
        Value::Set(_) => Err(Unhashable("set")),
        Value::Tuple(items) => items.iter().try_for_each(check_hashable),
        _ => Ok(()),
    }
}

impl Value {
    /// Python `a == b` at the top level (a NaN float is never equal here).
    pub fn py_eq(&self, other: &Value) -> bool {
        eq_impl(self, other, false)
    }
}

impl Dict {
    /// Python `a == b` for two dicts: exactly `Value::Dict(a).py_eq(&Value::Dict(b))`,
    /// without wrapping (cloning) them.
    pub fn py_eq(&self, other: &Dict) -> bool {
        dict_eq(self, other)
    }

    /// [`eq_hash`] of the dict as a value.
    pub fn eq_hash(&self) -> u64 {
        let mut h = hasher();
        hash_dict(self, &mut h);
        h.finish()
    }
}

/// A 64-bit hash of any value, hashable in Python or not (lists, dicts,
/// sets included), consistent with Python equality: `a.py_eq(b)` (or `a ==
/// b` inside a container) implies `eq_hash(a) == eq_hash(b)`. It is not
/// CPython's `hash()` and orders nothing: it only rules pairs out before
/// `py_eq` decides, so that matching loops need not compare every pair.
pub fn eq_hash(v: &Value) -> u64 {
    let mut h = hasher();
    hash_any(v, &mut h);
    h.finish()
}

fn hash_any<H: Hasher>(v: &Value, state: &mut H) {
    match v {
        Value::List(items) => {
            state.write_u8(20);
            state.write_usize(items.len());
            items.iter().for_each(|i| hash_any(i, state));
        }
        // A tuple never equals a list; its items compare as nested values.
        Value::Tuple(items) => {
            state.write_u8(4);
            state.write_usize(items.len());
            items.iter().for_each(|i| hash_any(i, state));
        }
        // Dicts and sets are equal regardless of order: sum the entries' hashes.
        Value::Dict(d) => hash_dict(d, state),
        Value::Set(items) => {
            state.write_u8(22);
            state.write_usize(items.len());
            let acc = items
                .iter()
                .fold(0u64, |acc, i| acc.wrapping_add(eq_hash(i)));
            state.write_u64(acc);
        }
        // Numbers (equal across bool/int/float/complex), None, str, bytes.
        other => hash_value(other, state),
    }
}

fn hash_dict<H: Hasher>(d: &Dict, state: &mut H) {
    state.write_u8(21);
    state.write_usize(d.len());
    let mut acc = 0u64;
    for (k, val) in d.iter() {
        let mut h = hasher();
        hash_any(k, &mut h);
        hash_any(val, &mut h);
        acc = acc.wrapping_add(h.finish());
    }
    state.write_u64(acc);
}

/// A fast, unkeyed hasher for [`eq_hash`]: fixed-seeded so a value hashes
/// alike everywhere in the process; collisions only cost an extra `py_eq`.
fn hasher() -> foldhash::fast::FoldHasher<'static> {
    std::hash::BuildHasher::build_hasher(&foldhash::fast::FixedState::default())
}

/// `a == b` as seen from inside a container (`x is y or x == y`).
pub(crate) fn nested_eq(a: &Value, b: &Value) -> bool {
    eq_impl(a, b, true)
}

/// A number as Python compares it.
enum Num<'a> {
    Int(&'a Int),
    Bool(bool),
    Float(f64),
    Complex(f64, f64),
}

fn as_num(v: &Value) -> Option<Num<'_>> {
    match v {
        Value::Bool(b) => Some(Num::Bool(*b)),
        Value::Int(i) => Some(Num::Int(i)),
        Value::Float(f) => Some(Num::Float(*f)),
        Value::Complex(re, im) => Some(Num::Complex(*re, *im)),
        _ => None,
    }
}

fn int_eq(a: &Int, b: &Int) -> bool {
    match (a, b) {
        (Int::Small(x), Int::Small(y)) => x == y,
        (Int::Big(x), Int::Big(y)) => x == y,
        // Not normalised by the invariant, but compare exactly anyway.
        _ => a.to_bigint() == b.to_bigint(),
    }
}

/// Exact `int == float`.
fn int_eq_float(i: &Int, f: f64) -> bool {
    if !f.is_finite() || f.fract() != 0.0 {
        return false;
    }
    match i {
        // |f| < 2**63: the cast is exact.
        Int::Small(x) if f.abs() < 9_223_372_036_854_775_808.0 => *x == f as i64,
        _ => f64_to_bigint(f).is_some_and(|b| b == i.to_bigint()),
    }
}

fn float_eq(a: f64, b: f64, nan_equal: bool) -> bool {
    a == b || (nan_equal && a.is_nan() && b.is_nan())
}

/// Exact comparison of a real number with a float.
fn real_eq_float(a: &Num<'_>, f: f64) -> bool {
    match a {
        Num::Int(i) => int_eq_float(i, f),
        Num::Bool(b) => f == f64::from(u8::from(*b)),
        Num::Float(x) => *x == f,
        Num::Complex(re, im) => *im == 0.0 && *re == f,
    }
}

fn num_eq(a: &Num<'_>, b: &Num<'_>, nan_equal: bool) -> bool {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => int_eq(x, y),
        (Num::Bool(x), Num::Bool(y)) => x == y,
        (Num::Bool(x), Num::Int(y)) | (Num::Int(y), Num::Bool(x)) => {
            int_eq(&Int::Small(i64::from(*x)), y)
        }
        (Num::Float(x), Num::Float(y)) => float_eq(*x, *y, nan_equal),
        (Num::Complex(r1, i1), Num::Complex(r2, i2)) => {
            float_eq(*r1, *r2, nan_equal) && float_eq(*i1, *i2, nan_equal)
        }
        (Num::Complex(re, im), other) | (other, Num::Complex(re, im)) => {
            *im == 0.0 && real_eq_float(other, *re)
        }
        (Num::Float(f), other) | (other, Num::Float(f)) => real_eq_float(other, *f),
    }
}

fn seq_eq(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| nested_eq(x, y))
}

fn dict_eq(a: &Dict, b: &Dict) -> bool {
    a.len() == b.len()
        && a.iter()
            .all(|(k, v)| b.get(k).is_some_and(|bv| nested_eq(v, bv)))
}

fn set_eq(a: &[Value], b: &[Value]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    if a.len() <= 8 {
        return a.iter().all(|x| b.iter().any(|y| nested_eq(x, y)));
    }
    let lookup: indexmap::IndexSet<Key> = b.iter().cloned().map(Key).collect();
    a.iter().all(|x| lookup.contains(&KeyRef(x)))
}

fn eq_impl(a: &Value, b: &Value, nan_equal: bool) -> bool {
    if let (Some(x), Some(y)) = (as_num(a), as_num(b)) {
        return num_eq(&x, &y, nan_equal);
    }
    match (a, b) {
        (Value::None, Value::None) => true,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Bytes(x), Value::Bytes(y)) => x == y,
        (Value::List(x), Value::List(y)) | (Value::Tuple(x), Value::Tuple(y)) => seq_eq(x, y),
        (Value::Set(x), Value::Set(y)) => set_eq(x, y),
        (Value::Dict(x), Value::Dict(y)) => dict_eq(x, y),
        _ => false,
    }
}

/// Feeds a hash consistent with [`nested_eq`] into `state`. Numbers that are
/// equal across bool/int/float/complex feed the same data (an integral value
/// as its integer, anything else as its float bits), and distinct numbers
/// feed distinct data, so that keys Python hashes alike (`0` and
/// `2**61 - 1`) do not all collide here.
fn hash_value<H: Hasher>(v: &Value, state: &mut H) {
    match v {
        Value::Bool(b) => hash_i64(i64::from(*b), state),
        Value::Int(Int::Small(i)) => hash_i64(*i, state),
        Value::Int(Int::Big(b)) => match i64::try_from(b) {
            Ok(i) => hash_i64(i, state),
            Err(_) => hash_bigint(b, state),
        },
        Value::Float(f) => hash_real(*f, state),
        Value::Complex(re, im) if *im == 0.0 => hash_real(*re, state),
        Value::Complex(re, im) => {
            state.write_u8(12);
            state.write_u64(float_bits(*re));
            state.write_u64(float_bits(*im));
        }
        other => hash_non_number(other, state),
    }
}

fn hash_i64<H: Hasher>(i: i64, state: &mut H) {
    state.write_u8(10);
    state.write_i64(i);
}

fn hash_bigint<H: Hasher>(b: &num_bigint::BigInt, state: &mut H) {
    state.write_u8(11);
    state.write(&b.to_signed_bytes_le());
}

/// Bits identifying a float up to Python equality of non-integral values
/// (all NaNs alike, as NaN keys are treated as equal to each other).
fn float_bits(f: f64) -> u64 {
    if f.is_nan() {
        f64::NAN.to_bits()
    } else if f == 0.0 {
        0
    } else {
        f.to_bits()
    }
}

fn hash_real<H: Hasher>(f: f64, state: &mut H) {
    if f.is_finite() && f.fract() == 0.0 {
        // -2**63 <= f < 2**63: the cast is exact.
        if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f) {
            return hash_i64(f as i64, state);
        }
        if let Some(b) = f64_to_bigint(f) {
            return hash_bigint(&b, state);
        }
    }
    state.write_u8(13);
    state.write_u64(float_bits(f));
}

fn hash_non_number<H: Hasher>(v: &Value, state: &mut H) {
    match v {
        Value::None => state.write_u8(1),
        Value::Str(s) => hash_str(s, state),
        Value::Bytes(b) => {
            state.write_u8(3);
            b.hash(state);
        }
        Value::Tuple(items) => {
            state.write_u8(4);
            state.write_usize(items.len());
            for item in items {
                hash_value(item, state);
            }
        }
        // Unhashable (never stored as keys) or numbers (handled above).
        _ => state.write_u8(5),
    }
}

fn hash_str<H: Hasher>(s: &str, state: &mut H) {
    state.write_u8(2);
    s.hash(state);
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        nested_eq(&self.0, &other.0)
    }
}
impl Eq for Key {}
impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        hash_value(&self.0, state);
    }
}

/// A borrowed [`Key`] for lookups without cloning.
pub(crate) struct KeyRef<'a>(pub &'a Value);

impl Hash for KeyRef<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        hash_value(self.0, state);
    }
}
impl Equivalent<Key> for KeyRef<'_> {
    fn equivalent(&self, key: &Key) -> bool {
        nested_eq(self.0, &key.0)
    }
}

/// A borrowed string [`Key`] for lookups without allocating.
pub(crate) struct StrRef<'a>(pub &'a str);

impl Hash for StrRef<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        hash_str(self.0, state);
    }
}
impl Equivalent<Key> for StrRef<'_> {
    fn equivalent(&self, key: &Key) -> bool {
        matches!(&key.0, Value::Str(s) if s == self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pyvalue::json::loads;
    use crate::pyvalue::literal::literal_eval;
    use num_bigint::BigInt;

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
        assert!(
            big("340282366920938463463374607431768211456").py_eq(&Value::Float(2f64.powi(128)))
        );
        assert!(
            !big("340282366920938463463374607431768211457").py_eq(&Value::Float(2f64.powi(128)))
        );
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
}

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

/// Exact value of an integral finite float as a `BigInt`.
fn f64_to_bigint(f: f64) -> Option<num_bigint::BigInt> {
    num_traits::FromPrimitive::from_f64(f)
}

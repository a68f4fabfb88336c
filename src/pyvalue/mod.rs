//! Values the way the reference Python implementations see them.
//!
//! Scores and every details string depend on Python semantics: `1 == 1.0 ==
//! True`, tuples that never equal lists, arbitrary-precision integers, NaN,
//! dicts in insertion order, and `repr()`/`str()` renderings. This module is
//! the single place those rules live:
//!
//! - [`json::loads`] behaves like Python's `json.loads`;
//! - [`literal::literal_eval`] behaves like `ast.literal_eval` for what tool
//!   arguments contain;
//! - [`Value::py_eq`] is Python `==` (and [`Key`] hashes/compares like a
//!   Python dict key);
//! - [`Value::repr`] / [`Value::py_str`] are `repr()` / `str()`;
//! - [`Value::set_from`] builds a set in CPython 3.12's iteration order.
//!
//! The private `hash` module holds CPython's `hash()` for ints, floats,
//! complex numbers, `None` and tuples, and an emulation of CPython's set
//! table; `pytoken`/`pyparse` are the Python expression tokenizer and parser
//! behind `literal_eval`.

pub mod eq;
mod hash;
pub mod json;
pub mod literal;
mod pyparse;
mod pytoken;
pub mod repr;

use indexmap::IndexMap;
use num_bigint::BigInt;
use num_traits::{Signed, ToPrimitive, Zero};

/// A Python integer: small values inline, larger ones arbitrary precision.
///
/// Invariant: `Big` never holds a value that fits in an `i64` (constructors
/// normalise), so equal integers have equal representations.
#[derive(Debug, Clone)]
pub enum Int {
    Small(i64),
    Big(BigInt),
}

impl Int {
    /// Wraps a `BigInt`, normalising values that fit in an `i64` to `Small`.
    pub fn from_bigint(b: BigInt) -> Int {
        match i64::try_from(&b) {
            Ok(i) => Int::Small(i),
            Err(_) => Int::Big(b),
        }
    }

    /// The value as a `BigInt`.
    pub fn to_bigint(&self) -> BigInt {
        match self {
            Int::Small(i) => BigInt::from(*i),
            Int::Big(b) => b.clone(),
        }
    }

    pub fn is_zero(&self) -> bool {
        match self {
            Int::Small(i) => *i == 0,
            Int::Big(b) => b.is_zero(),
        }
    }

    pub fn is_negative(&self) -> bool {
        match self {
            Int::Small(i) => *i < 0,
            Int::Big(b) => b.is_negative(),
        }
    }

    /// `-self` (exact).
    pub fn neg(&self) -> Int {
        match self {
            Int::Small(i) => match i.checked_neg() {
                Some(n) => Int::Small(n),
                None => Int::from_bigint(-BigInt::from(*i)),
            },
            Int::Big(b) => Int::from_bigint(-b),
        }
    }

    /// Python `float(self)`: correctly rounded, `None` where Python raises
    /// `OverflowError: int too large to convert to float`.
    pub fn to_f64(&self) -> Option<f64> {
        let f = match self {
            Int::Small(i) => *i as f64,
            Int::Big(b) => b.to_f64()?,
        };
        f.is_finite().then_some(f)
    }
}

impl From<i64> for Int {
    fn from(i: i64) -> Int {
        Int::Small(i)
    }
}

impl From<BigInt> for Int {
    fn from(b: BigInt) -> Int {
        Int::from_bigint(b)
    }
}

impl std::fmt::Display for Int {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Int::Small(i) => write!(f, "{i}"),
            Int::Big(b) => write!(f, "{b}"),
        }
    }
}

/// A Python value as produced by `json.loads`, `ast.literal_eval` or the
/// OpenTelemetry SDK's attribute conversion.
#[derive(Debug, Clone)]
pub enum Value {
    None,
    Bool(bool),
    Int(Int),
    /// A Python float. A NaN here stands for CPython's shared `json` NaN
    /// constant: equal to itself inside containers (identity), never at the
    /// top level of `==` (see [`eq`]).
    Float(f64),
    /// A Python complex number `(real, imag)` (only `ast.literal_eval` makes these).
    Complex(f64, f64),
    Str(String),
    Bytes(Vec<u8>),
    List(Vec<Value>),
    Tuple(Vec<Value>),
    /// A set, elements in the order CPython would iterate them (build it with
    /// [`Value::set_from`]).
    Set(Vec<Value>),
    Dict(Dict),
}

/// A Python dict: insertion-ordered, keys compared and hashed the Python way
/// (`1`, `1.0` and `True` are the same key; re-inserting a key keeps its first
/// position and takes the new value).
#[derive(Debug, Clone, Default)]
pub struct Dict {
    map: IndexMap<Key, Value>,
}

/// A hashable Python value used as a dict key (see [`eq`] for its `Hash`/`Eq`).
#[derive(Debug, Clone)]
pub struct Key(pub Value);

/// `TypeError: unhashable type: '<type>'` — raised by Python when a list,
/// dict or set is used as a dict key or set element.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unhashable type: '{0}'")]
pub struct Unhashable(pub &'static str);

impl Value {
    /// Convenience constructor for strings.
    pub fn str(s: impl Into<String>) -> Value {
        Value::Str(s.into())
    }

    /// Convenience constructor for integers.
    pub fn int(i: i64) -> Value {
        Value::Int(Int::Small(i))
    }

    /// Python truthiness (`bool(x)`).
    pub fn truthy(&self) -> bool {
        match self {
            Value::None => false,
            Value::Bool(b) => *b,
            Value::Int(Int::Small(i)) => *i != 0,
            Value::Int(Int::Big(_)) => true,
            Value::Float(f) => *f != 0.0,
            Value::Complex(re, im) => *re != 0.0 || *im != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Bytes(b) => !b.is_empty(),
            Value::List(v) | Value::Tuple(v) | Value::Set(v) => !v.is_empty(),
            Value::Dict(d) => !d.is_empty(),
        }
    }

    /// Python's `type(x).__name__`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::None => "NoneType",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Complex(..) => "complex",
            Value::Str(_) => "str",
            Value::Bytes(_) => "bytes",
            Value::List(_) => "list",
            Value::Tuple(_) => "tuple",
            Value::Set(_) => "set",
            Value::Dict(_) => "dict",
        }
    }

    /// Python `set(items)`: elements deduplicated by Python equality (the
    /// first of equal elements is kept) and ordered the way CPython 3.12
    /// iterates the resulting set.
    ///
    /// The order is CPython's exactly when every element's hash is
    /// deterministic (ints, bools, floats, complex numbers, `None`, tuples of
    /// those). `str`/`bytes` hash with a per-process random seed in CPython,
    /// so a set holding any (even inside a tuple) keeps insertion order, as
    /// does a set whose elements collide so much in CPython's table that
    /// emulating it would take quadratic time.
    pub fn set_from(items: impl IntoIterator<Item = Value>) -> Result<Value, Unhashable> {
        let mut b = hash::SetBuilder::new();
        for v in items {
            b.add(v)?;
        }
        Ok(Value::Set(b.finish()))
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_dict(&self) -> Option<&Dict> {
        match self {
            Value::Dict(d) => Some(d),
            _ => None,
        }
    }
}

impl Dict {
    pub fn new() -> Dict {
        Dict::default()
    }

    pub fn with_capacity(n: usize) -> Dict {
        Dict {
            map: IndexMap::with_capacity(n),
        }
    }

    /// `d[key] = value`: an existing equal key keeps its position (and its
    /// original key object, as in CPython) and takes the new value.
    pub fn insert(&mut self, key: Value, value: Value) -> Result<(), Unhashable> {
        eq::check_hashable(&key)?;
        // IndexMap keeps an existing key (and its position) and updates the value.
        self.map.insert(Key(key), value);
        Ok(())
    }

    /// `d[key] = value` for a string key (cannot be unhashable).
    pub fn insert_str(&mut self, key: impl Into<String>, value: Value) {
        self.map.insert(Key(Value::Str(key.into())), value);
    }

    /// `d.get(key)`; `None` for an absent or unhashable key.
    pub fn get(&self, key: &Value) -> Option<&Value> {
        if eq::check_hashable(key).is_err() {
            return None;
        }
        self.map.get(&eq::KeyRef(key))
    }

    /// `d.get(key)` for a string key, without allocating.
    pub fn get_str(&self, key: &str) -> Option<&Value> {
        self.map.get(&eq::StrRef(key))
    }

    pub fn contains_key(&self, key: &Value) -> bool {
        self.get(key).is_some()
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Entries in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&Value, &Value)> {
        self.map.iter().map(|(k, v)| (&k.0, v))
    }

    pub fn keys(&self) -> impl Iterator<Item = &Value> {
        self.map.keys().map(|k| &k.0)
    }
}

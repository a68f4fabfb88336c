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
#[cfg(test)]
mod eq_tests;
pub mod exact;
mod hash;
pub mod json;
mod json_value;
pub mod literal;
mod pyparse;
mod pytoken;
pub mod repr;

pub use json_value::{json_to_py, py_dict_to_json, py_to_json};

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

impl Value {
    /// CPython's `hash(v)` where it is the same in every process; `None` for
    /// str and bytes (seeded per process), NaN (hashed by identity), values
    /// holding those, and unhashable values. Sets iterate in this order.
    pub fn py_hash(&self) -> Option<i64> {
        hash::py_hash(self)
    }
}

/// A Python dict: insertion-ordered, keys compared and hashed the Python way
/// (`1`, `1.0` and `True` are the same key; re-inserting a key keeps its first
/// position and takes the new value).
#[derive(Debug, Clone, Default)]
pub struct Dict {
    entries: Entries,
}

/// A dict's entries: a few in a plain list found by a linear scan (tool
/// arguments and outputs are small dicts; hashing them costs more than
/// comparing), more in a hash map. Both keep insertion order and treat
/// equal keys alike.
#[derive(Debug, Clone)]
enum Entries {
    Small(Vec<(Key, Value)>),
    Large(IndexMap<Key, Value>),
}

/// Entries up to which a dict stays a list.
const SMALL_DICT: usize = 8;

impl Default for Entries {
    fn default() -> Entries {
        Entries::Small(Vec::new())
    }
}

/// Iterator over a dict's entries in insertion order.
enum DictIter<'a> {
    Small(std::slice::Iter<'a, (Key, Value)>),
    Large(indexmap::map::Iter<'a, Key, Value>),
}

impl<'a> Iterator for DictIter<'a> {
    type Item = (&'a Value, &'a Value);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            DictIter::Small(it) => it.next().map(|(k, v)| (&k.0, v)),
            DictIter::Large(it) => it.next().map(|(k, v)| (&k.0, v)),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            DictIter::Small(it) => it.size_hint(),
            DictIter::Large(it) => it.size_hint(),
        }
    }
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
            entries: if n <= SMALL_DICT {
                Entries::Small(Vec::with_capacity(n))
            } else {
                Entries::Large(IndexMap::with_capacity(n))
            },
        }
    }

    /// `d[key] = value`: an existing equal key keeps its position (and its
    /// original key object, as in CPython) and takes the new value.
    pub fn insert(&mut self, key: Value, value: Value) -> Result<(), Unhashable> {
        eq::check_hashable(&key)?;
        let found = match &self.entries {
            Entries::Small(list) => list.iter().position(|(k, _)| eq::nested_eq(&k.0, &key)),
            Entries::Large(_) => None,
        };
        self.put(Key(key), value, found);
        Ok(())
    }

    /// `d[key] = value` for a string key (cannot be unhashable).
    pub fn insert_str(&mut self, key: impl Into<String>, value: Value) {
        let key = key.into();
        let found = match &self.entries {
            Entries::Small(list) => list
                .iter()
                .position(|(k, _)| matches!(&k.0, Value::Str(s) if *s == key)),
            Entries::Large(_) => None,
        };
        self.put(Key(Value::Str(key)), value, found);
    }

    /// Stores an entry; `found` is the position of an equal key in a small dict.
    fn put(&mut self, key: Key, value: Value, found: Option<usize>) {
        match &mut self.entries {
            Entries::Small(list) => {
                if let Some(slot) = found.and_then(|i| list.get_mut(i)) {
                    slot.1 = value;
                } else if list.len() < SMALL_DICT {
                    list.push((key, value));
                } else {
                    let mut map = IndexMap::with_capacity(2 * SMALL_DICT);
                    map.extend(list.drain(..));
                    // IndexMap keeps an existing key (and its position) and updates the value.
                    map.insert(key, value);
                    self.entries = Entries::Large(map);
                }
            }
            Entries::Large(map) => {
                map.insert(key, value);
            }
        }
    }

    /// `d.get(key)`; `None` for an absent or unhashable key.
    pub fn get(&self, key: &Value) -> Option<&Value> {
        if eq::check_hashable(key).is_err() {
            return None;
        }
        match &self.entries {
            Entries::Small(list) => list
                .iter()
                .find(|(k, _)| eq::nested_eq(&k.0, key))
                .map(|(_, v)| v),
            Entries::Large(map) => map.get(&eq::KeyRef(key)),
        }
    }

    /// `d.get(key)` for a string key, without allocating.
    pub fn get_str(&self, key: &str) -> Option<&Value> {
        match &self.entries {
            Entries::Small(list) => list
                .iter()
                .find(|(k, _)| matches!(&k.0, Value::Str(s) if s == key))
                .map(|(_, v)| v),
            Entries::Large(map) => map.get(&eq::StrRef(key)),
        }
    }

    pub fn contains_key(&self, key: &Value) -> bool {
        self.get(key).is_some()
    }

    pub fn len(&self) -> usize {
        match &self.entries {
            Entries::Small(list) => list.len(),
            Entries::Large(map) => map.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&Value, &Value)> {
        match &self.entries {
            Entries::Small(list) => DictIter::Small(list.iter()),
            Entries::Large(map) => DictIter::Large(map.iter()),
        }
    }

    pub fn keys(&self) -> impl Iterator<Item = &Value> {
        self.iter().map(|(k, _)| k)
    }

    /// The entries, moved out, in insertion order.
    pub fn into_entries(self) -> Vec<(Value, Value)> {
        match self.entries {
            Entries::Small(list) => list.into_iter().map(|(k, v)| (k.0, v)).collect(),
            Entries::Large(map) => map.into_iter().map(|(k, v)| (k.0, v)).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Keys that collide the Python way (`1 == 1.0 == True`, `0 == False`).
    fn key(i: u8) -> Value {
        match i % 12 {
            0 => Value::int(1),
            1 => Value::Float(1.0),
            2 => Value::Bool(true),
            3 => Value::int(0),
            4 => Value::Bool(false),
            5 => Value::Tuple(vec![Value::int(1), Value::str("x")]),
            6 => Value::Tuple(vec![Value::Float(1.0), Value::str("x")]),
            7 => Value::None,
            n => Value::str(format!("k{}", n + u8::from(i > 100))),
        }
    }

    proptest! {
        /// A dict behaves as the IndexMap it used to be, small or large.
        #[test]
        fn dict_matches_an_indexmap(ops in prop::collection::vec((any::<u8>(), any::<i64>(), any::<bool>()), 0..40)) {
            let mut d = Dict::new();
            let mut model: IndexMap<Key, Value> = IndexMap::new();
            for (k, v, as_str) in ops {
                let k = key(k);
                match (&k, as_str) {
                    (Value::Str(s), true) => d.insert_str(s.clone(), Value::int(v)),
                    _ => prop_assert!(d.insert(k.clone(), Value::int(v)).is_ok()),
                }
                model.insert(Key(k), Value::int(v));
            }
            prop_assert_eq!(d.len(), model.len());
            let got: Vec<String> = d.iter().map(|(k, v)| format!("{}:{}", k.repr(), v.repr())).collect();
            let want: Vec<String> = model.iter().map(|(k, v)| format!("{}:{}", k.0.repr(), v.repr())).collect();
            prop_assert_eq!(got, want);
            for i in 0..=255u8 {
                let k = key(i);
                let got = d.get(&k).map(Value::repr);
                let want = model.get(&eq::KeyRef(&k)).map(Value::repr);
                prop_assert_eq!(got, want);
                if let Value::Str(s) = &k {
                    prop_assert_eq!(d.get_str(s).map(Value::repr), model.get(&eq::StrRef(s)).map(Value::repr));
                }
            }
            prop_assert!(d.get(&Value::List(vec![])).is_none());
        }
    }
}

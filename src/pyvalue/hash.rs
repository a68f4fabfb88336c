//! CPython 3.12's `hash()` for the values whose hash is deterministic, and an
//! emulation of CPython's set table so that sets iterate in CPython's order.
//!
//! `str` and `bytes` hash with SipHash under a per-process random seed in
//! CPython, so a set holding any of them (directly or inside a tuple) has no
//! reproducible order; such sets keep insertion order here.
use indexmap::IndexSet;
use num_traits::ToPrimitive;

use super::eq::{KeyRef, check_hashable};
use super::{Int, Key, Unhashable, Value};

/// `_PyHASH_BITS` on 64-bit builds.
const HASH_BITS: u32 = 61;
/// `_PyHASH_MODULUS` = 2**61 - 1.
const MODULUS: u64 = (1 << HASH_BITS) - 1;
/// `_PyHASH_INF`.
const HASH_INF: i64 = 314_159;
/// `_PyHASH_IMAG`.
const HASH_IMAG: u64 = 1_000_003;
/// `hash(None)` since CPython 3.12 (`none_hash` returns `0xFCA86420`).
const HASH_NONE: i64 = 0xFCA8_6420;

fn fix_minus_one(h: i64) -> i64 {
    if h == -1 { -2 } else { h }
}

/// `hash(n)` for a Python int.
pub(crate) fn hash_int(i: &Int) -> i64 {
    let (neg, m) = match i {
        Int::Small(v) => (*v < 0, v.unsigned_abs() % MODULUS),
        Int::Big(b) => {
            let m = (b.magnitude() % MODULUS).to_u64().unwrap_or(0);
            (b.sign() == num_bigint::Sign::Minus, m)
        }
    };
    // m < 2**61, so the cast is lossless.
    let h = m as i64;
    fix_minus_one(if neg { -h } else { h })
}

/// `frexp(v)` for a finite non-zero `v`: `(m, e)` with `v = m * 2**e` and
/// `0.5 <= |m| < 1`.
fn frexp(v: f64) -> (f64, i32) {
    let bits = v.to_bits();
    let exp_field = ((bits >> 52) & 0x7ff) as i32;
    if exp_field == 0 {
        // Subnormal: scale into the normal range first.
        let (m, e) = frexp(v * f64::from_bits(0x43f0_0000_0000_0000)); // 2**64
        return (m, e - 64);
    }
    let e = exp_field - 1022;
    let m_bits = (bits & !(0x7ff << 52)) | (1022 << 52);
    (f64::from_bits(m_bits), e)
}

/// `_Py_HashDouble`; `None` for a NaN (hashed by identity in CPython).
pub(crate) fn hash_f64(v: f64) -> Option<i64> {
    if v.is_nan() {
        return None;
    }
    if v.is_infinite() {
        return Some(if v > 0.0 { HASH_INF } else { -HASH_INF });
    }
    if v == 0.0 {
        return Some(0);
    }
    let (mut m, mut e) = frexp(v);
    let mut sign: i64 = 1;
    if m < 0.0 {
        sign = -1;
        m = -m;
    }
    let mut x: u64 = 0;
    while m != 0.0 {
        x = ((x << 28) & MODULUS) | (x >> (HASH_BITS - 28));
        m *= 268_435_456.0; // 2**28
        e -= 28;
        let y = m as u64; // integer part, < 2**28
        m -= y as f64;
        x += y;
        if x >= MODULUS {
            x -= MODULUS;
        }
    }
    let bits = HASH_BITS as i32;
    let e = if e >= 0 {
        e % bits
    } else {
        bits - 1 - ((-1 - e) % bits)
    } as u32;
    x = ((x << e) & MODULUS) | (x >> (HASH_BITS - e));
    let h = (x as i64).wrapping_mul(sign);
    Some(fix_minus_one(h))
}

/// `hash(complex(re, im))`; `None` if a part is a NaN.
pub(crate) fn hash_complex(re: f64, im: f64) -> Option<i64> {
    let hr = hash_f64(re)? as u64;
    let hi = hash_f64(im)? as u64;
    let h = hr.wrapping_add(HASH_IMAG.wrapping_mul(hi)) as i64;
    Some(fix_minus_one(h))
}

/// CPython's `hash(v)` when it does not depend on the per-process string
/// hash seed or object identity; `None` otherwise (str, bytes, NaN, tuples
/// containing those, and unhashable values).
pub(crate) fn py_hash(v: &Value) -> Option<i64> {
    match v {
        Value::None => Some(HASH_NONE),
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Int(i) => Some(hash_int(i)),
        Value::Float(f) => hash_f64(*f),
        Value::Complex(re, im) => hash_complex(*re, *im),
        Value::Tuple(items) => hash_tuple(items),
        Value::Str(_) | Value::Bytes(_) | Value::List(_) | Value::Set(_) | Value::Dict(_) => None,
    }
}

/// CPython's xxHash-based `tuplehash` (64-bit).
fn hash_tuple(items: &[Value]) -> Option<i64> {
    const PRIME_1: u64 = 11_400_714_785_074_694_791;
    const PRIME_2: u64 = 14_029_467_366_897_019_727;
    const PRIME_5: u64 = 2_870_177_450_012_600_261;
    let mut acc = PRIME_5;
    for item in items {
        let lane = py_hash(item)? as u64;
        acc = acc.wrapping_add(lane.wrapping_mul(PRIME_2));
        acc = acc.rotate_left(31);
        acc = acc.wrapping_mul(PRIME_1);
    }
    acc = acc.wrapping_add((items.len() as u64) ^ (PRIME_5 ^ 3_527_539));
    if acc == u64::MAX {
        return Some(1_546_275_796);
    }
    Some(acc as i64)
}

/// `LINEAR_PROBES` in `Objects/setobject.c`.
const LINEAR_PROBES: usize = 9;
/// `PERTURB_SHIFT`.
const PERTURB_SHIFT: u32 = 5;
/// `PySet_MINSIZE`.
const SET_MINSIZE: usize = 8;

/// CPython's open-addressing set table, holding indexes into the builder's
/// insertion-ordered elements.
struct Table {
    slots: Vec<Option<(u64, usize)>>,
    fill: usize,
    used: usize,
    /// Probes left before giving up: elements whose hashes collide on
    /// purpose (`{0, 2**61 - 1, 2 * (2**61 - 1), …}`) make CPython's probing
    /// quadratic; past this budget the emulation is abandoned (insertion
    /// order) rather than spend quadratic time.
    budget: usize,
}

/// Probe budget: a base plus an allowance per element.
const PROBE_BUDGET_BASE: usize = 200_000;
const PROBE_BUDGET_PER_ELEMENT: usize = 64;

impl Table {
    fn new() -> Table {
        Table {
            slots: vec![None; SET_MINSIZE],
            fill: 0,
            used: 0,
            budget: PROBE_BUDGET_BASE,
        }
    }

    /// The probe sequence of `set_add_entry` / `set_insert_clean`: the first
    /// free slot for `hash` (the table never holds dummies here); `None` once
    /// the probe budget is spent.
    fn free_slot(slots: &[Option<(u64, usize)>], hash: u64, budget: &mut usize) -> Option<usize> {
        let mask = slots.len() - 1;
        let mut perturb = hash as usize;
        let mut i = (hash as usize) & mask;
        loop {
            *budget = budget.checked_sub(1 + LINEAR_PROBES)?;
            if slots[i].is_none() {
                return Some(i);
            }
            if i + LINEAR_PROBES <= mask
                && let Some(off) = slots[i + 1..=i + LINEAR_PROBES]
                    .iter()
                    .position(Option::is_none)
            {
                return Some(i + 1 + off);
            }
            perturb >>= PERTURB_SHIFT;
            i = i.wrapping_mul(5).wrapping_add(1).wrapping_add(perturb) & mask;
        }
    }

    /// Adds a new (not yet present) element; `false` if the probe budget
    /// ran out.
    #[must_use]
    fn insert(&mut self, hash: u64, idx: usize) -> bool {
        self.budget = self.budget.saturating_add(PROBE_BUDGET_PER_ELEMENT);
        let Some(slot) = Table::free_slot(&self.slots, hash, &mut self.budget) else {
            return false;
        };
        self.slots[slot] = Some((hash, idx));
        self.fill += 1;
        self.used += 1;
        let mask = self.slots.len() - 1;
        if self.fill * 5 >= mask * 3 {
            let minused = if self.used > 50_000 {
                self.used * 2
            } else {
                self.used * 4
            };
            return self.resize(minused);
        }
        true
    }

    #[must_use]
    fn resize(&mut self, minused: usize) -> bool {
        let mut newsize = SET_MINSIZE;
        while newsize <= minused {
            newsize <<= 1;
        }
        let mut slots = vec![None; newsize];
        for &(hash, idx) in self.slots.iter().flatten() {
            let Some(slot) = Table::free_slot(&slots, hash, &mut self.budget) else {
                return false;
            };
            slots[slot] = Some((hash, idx));
        }
        self.slots = slots;
        self.fill = self.used;
        true
    }
}

/// Builds a Python set element by element (`set.add`), tracking CPython's
/// iteration order while every element's hash is deterministic.
pub(crate) struct SetBuilder {
    elems: IndexSet<Key>,
    table: Option<Table>,
}

impl SetBuilder {
    pub(crate) fn new() -> SetBuilder {
        SetBuilder {
            elems: IndexSet::new(),
            table: Some(Table::new()),
        }
    }

    /// `s.add(v)`: an element equal to one already present is dropped (the
    /// first one stays).
    pub(crate) fn add(&mut self, v: Value) -> Result<(), Unhashable> {
        check_hashable(&v)?;
        if self.elems.contains(&KeyRef(&v)) {
            return Ok(());
        }
        let hash = py_hash(&v);
        let idx = self.elems.len();
        self.elems.insert(Key(v));
        let tracked = match (hash, &mut self.table) {
            (Some(h), Some(t)) => t.insert(h as u64, idx),
            _ => false,
        };
        if !tracked {
            self.table = None;
        }
        Ok(())
    }

    /// The elements in CPython's iteration order (insertion order when that
    /// order is not reproducible).
    pub(crate) fn finish(self) -> Vec<Value> {
        let elems: Vec<Value> = self.elems.into_iter().map(|k| k.0).collect();
        match self.table {
            None => elems,
            Some(t) => {
                let mut slots: Vec<Option<Value>> = elems.into_iter().map(Some).collect();
                t.slots
                    .iter()
                    .flatten()
                    .filter_map(|&(_, idx)| slots.get_mut(idx).and_then(Option::take))
                    .collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_bigint::BigInt;

    fn big(s: &str) -> Int {
        Int::from_bigint(s.parse::<BigInt>().unwrap_or_default())
    }

    #[test]
    fn int_hashes() {
        // Expected values from CPython: hash(x).
        assert_eq!(hash_int(&Int::Small(0)), 0);
        assert_eq!(hash_int(&Int::Small(-1)), -2);
        assert_eq!(hash_int(&Int::Small(-2)), -2);
        assert_eq!(hash_int(&Int::Small(12345)), 12345);
        assert_eq!(hash_int(&Int::Small(i64::MAX)), 3);
        assert_eq!(hash_int(&Int::Small(i64::MIN)), -4);
        assert_eq!(hash_int(&Int::Small(2305843009213693951)), 0);
        assert_eq!(hash_int(&Int::Small(2305843009213693952)), 1);
        assert_eq!(
            hash_int(&big("12345678901234567890123")),
            195429904450476469
        );
        assert_eq!(
            hash_int(&big("-12345678901234567890123")),
            -195429904450476469
        );
    }

    #[test]
    fn float_hashes() {
        // Expected values from CPython: hash(x).
        let cases: &[(f64, i64)] = &[
            (0.5, 1152921504606846976),
            (1.5, 1152921504606846977),
            (-0.5, -1152921504606846976),
            (0.1, 230584300921369408),
            (1e100, 1822893315824342674),
            (1e-100, 1735222877707689105),
            (123.456, 1051464412201451643),
            (5e-324, 16777216),
            (-1.0, -2),
            (2.0f64.powi(64), 8),
            (3.0, 3),
            (1e308, 156575653125701),
            (f64::INFINITY, 314159),
            (f64::NEG_INFINITY, -314159),
        ];
        for &(f, h) in cases {
            assert_eq!(hash_f64(f), Some(h), "{f}");
        }
        assert_eq!(hash_f64(f64::NAN), None);
        assert_eq!(hash_complex(1.0, 2.0), Some(2000007));
        assert_eq!(hash_complex(0.0, -1.0), Some(-2000006));
        assert_eq!(hash_complex(1.5, 0.0), hash_f64(1.5));
    }

    #[test]
    fn tuple_hashes() {
        // Expected values from CPython: hash(x).
        let t = |v: Vec<Value>| py_hash(&Value::Tuple(v));
        assert_eq!(t(vec![]), Some(5740354900026072187));
        assert_eq!(
            t(vec![Value::int(1), Value::int(2)]),
            Some(-3550055125485641917)
        );
        assert_eq!(
            t(vec![Value::Float(1.5), Value::Bool(true)]),
            Some(1767087712303363268)
        );
        assert_eq!(t(vec![Value::str("a")]), None);
    }

    fn set_repr(items: Vec<Value>) -> String {
        Value::set_from(items).map(|v| v.repr()).unwrap_or_default()
    }

    fn ints(v: &[i64]) -> Vec<Value> {
        v.iter().map(|&i| Value::int(i)).collect()
    }

    #[test]
    fn set_order_matches_cpython() {
        // Expected strings from CPython: repr(set(map(int, ...))).
        assert_eq!(set_repr(ints(&[2, 1])), "{1, 2}");
        assert_eq!(set_repr(ints(&[10, 3])), "{10, 3}");
        assert_eq!(set_repr(ints(&[3, 10])), "{10, 3}");
        assert_eq!(set_repr(ints(&[8, 16, 0])), "{8, 16, 0}");
        assert_eq!(set_repr(ints(&[100, 5, 37, 2, 9])), "{2, 100, 37, 5, 9}");
        assert_eq!(
            set_repr(ints(&[-1, -2, 7, 15, 23, 31, 1000, 64])),
            "{64, 7, 1000, 15, -2, 23, -1, 31}"
        );
        assert_eq!(
            set_repr((0..30).rev().map(Value::int).collect()),
            "{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29}"
        );
        assert_eq!(
            set_repr(vec![Value::Float(2.5), Value::int(1), Value::Float(0.1)]),
            "{0.1, 1, 2.5}"
        );
        assert_eq!(
            set_repr(vec![Value::int(1), Value::Bool(true), Value::Float(1.0)]),
            "{1}"
        );
        assert_eq!(
            set_repr(vec![
                Value::Tuple(ints(&[1, 2])),
                Value::Tuple(ints(&[3])),
                Value::int(7)
            ]),
            "{(1, 2), (3,), 7}"
        );
        let mixed = vec![
            Value::int(-5),
            Value::Int(big("2305843009213693952")),
            Value::int(2305843009213693951),
            Value::Int(big("18446744073709551616")),
            Value::Int(big("-18446744073709551616")),
            Value::Float(0.5),
            Value::Float(1e300),
            Value::Float(1e-300),
            Value::Float(12.75),
            Value::int(99),
            Value::int(1024),
            Value::int(4096),
        ];
        assert_eq!(
            set_repr(mixed),
            "{2305843009213693951, 2305843009213693952, 0.5, 99, 1024, 4096, 18446744073709551616, 12.75, 1e-300, -18446744073709551616, -5, 1e+300}"
        );
        // Elements CPython hashes alike: still linear time (the emulation
        // gives up, keeping insertion order).
        let modulus = BigInt::from(MODULUS);
        let colliding: Vec<Value> = (0..20_000i64)
            .map(|k| Value::Int(Int::from_bigint(&modulus * k)))
            .collect();
        let start = std::time::Instant::now();
        let set = Value::set_from(colliding.clone());
        assert!(start.elapsed().as_secs() < 5);
        assert!(matches!(&set, Ok(Value::Set(v)) if v.len() == 20_000));
        let mut d = crate::pyvalue::Dict::new();
        for v in colliding {
            assert_eq!(d.insert(v, Value::None), Ok(()));
        }
        assert_eq!(d.len(), 20_000);
        assert!(start.elapsed().as_secs() < 5);
        // Strings: insertion order.
        assert_eq!(
            set_repr(vec![Value::str("b"), Value::int(1), Value::str("a")]),
            "{'b', 1, 'a'}"
        );
    }
}

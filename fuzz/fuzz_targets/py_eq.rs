//! Python `==` and the hashes consistent with it (`pyvalue::eq`: how
//! criteria are matched against tool-call arguments and outputs), on up to
//! three values read from the input (parts split at NUL bytes; each part is
//! a Python literal, or else JSON): `==` is symmetric and transitive, equal
//! values have equal `eq_hash`, and a set or dict built from them (CPython's
//! `hash()` and set table, `pyvalue::hash`) merges exactly the equal ones.
//! Values holding a NaN are left out (`==` on NaN is identity-dependent).
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolscore::pyvalue::{Dict, Value, eq::check_hashable, eq::eq_hash, json, literal};

fn read(part: &str) -> Option<Value> {
    literal::literal_eval(part).ok().or_else(|| json::loads(part).ok())
}

fn no_nan(v: &Value) -> bool {
    match v {
        Value::Float(f) => !f.is_nan(),
        Value::Complex(re, im) => !re.is_nan() && !im.is_nan(),
        Value::List(items) | Value::Tuple(items) | Value::Set(items) => items.iter().all(no_nan),
        Value::Dict(d) => d.iter().all(|(k, v)| no_nan(k) && no_nan(v)),
        _ => true,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let values: Vec<Value> = text.splitn(3, '\0').filter_map(read).filter(no_nan).collect();
    for a in &values {
        assert!(a.py_eq(a), "reflexive: {}", a.repr());
        for b in &values {
            let ab = a.py_eq(b);
            assert_eq!(ab, b.py_eq(a), "symmetric: {} vs {}", a.repr(), b.repr());
            if ab {
                assert_eq!(eq_hash(a), eq_hash(b), "eq_hash: {} == {}", a.repr(), b.repr());
                for c in &values {
                    if b.py_eq(c) {
                        assert!(a.py_eq(c), "transitive: {} == {} == {}", a.repr(), b.repr(), c.repr());
                    }
                }
            }
            if check_hashable(a).is_ok() && check_hashable(b).is_ok() {
                let set = Value::set_from([a.clone(), b.clone()]).expect("hashable values make a set");
                let Value::Set(items) = &set else { panic!("set_from made {set:?}") };
                assert_eq!(items.len(), if ab { 1 } else { 2 }, "set of {} and {}", a.repr(), b.repr());
                let mut d = Dict::new();
                d.insert(a.clone(), Value::int(1)).expect("hashable key");
                d.insert(b.clone(), Value::int(2)).expect("hashable key");
                assert_eq!(d.len(), if ab { 1 } else { 2 }, "dict keyed by {} and {}", a.repr(), b.repr());
                assert!(d.contains_key(a) && d.contains_key(b));
                let _ = set.repr();
            }
        }
    }
});

//! Python `==` and `hash()` for [`Value`].
use super::{Key, Unhashable, Value};

/// Errors unless `v` may be a dict key or set element in Python.
pub fn check_hashable(v: &Value) -> Result<(), Unhashable> {
    unimplemented!("{v:?}")
}

impl Value {
    /// Python `a == b` at the top level (a NaN float is never equal here).
    pub fn py_eq(&self, other: &Value) -> bool {
        unimplemented!("{self:?} {other:?}")
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        unimplemented!("{self:?} {other:?}")
    }
}
impl Eq for Key {}
impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, _state: &mut H) {
        unimplemented!()
    }
}

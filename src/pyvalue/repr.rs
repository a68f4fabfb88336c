//! Python `repr()` and `str()`.
use super::Value;

impl Value {
    /// Python `repr(self)`.
    pub fn repr(&self) -> String {
        let mut out = String::new();
        self.write_repr(&mut out);
        out
    }

    /// Appends Python `repr(self)` to `out`.
    pub fn write_repr(&self, out: &mut String) {
        unimplemented!("{self:?} {out}")
    }

    /// Python `str(self)`: a string as is, anything else as its repr.
    pub fn py_str(&self) -> String {
        match self {
            Value::Str(s) => s.clone(),
            other => other.repr(),
        }
    }
}

/// Python `repr()` of a string.
pub fn str_repr(s: &str, out: &mut String) {
    unimplemented!("{s} {out}")
}

/// Python `repr()` of a float (shortest round-trip digits, Python's notation rules).
pub fn float_repr(f: f64, out: &mut String) {
    unimplemented!("{f} {out}")
}

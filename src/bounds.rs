//! The largest accepted value of every duration, size and count in the
//! config, so that no arithmetic on a configured value (an `Instant` plus a
//! duration, a byte budget split over shards) can overflow at run time.
//!
//! Each stage declares its section's maxima beside its config struct
//! ([`Bounded`]), by field; the key paths come from the config's own
//! structure (`Config::validate` names each section by its field path, and
//! each key is the field's serde name), so no path is written twice. A test
//! in `config.rs` holds every number of every bounded section to a maximum
//! (or to [`Bounded::UNBOUNDED`]), so a new one cannot go unchecked.

use serde::Serialize;
use serde_json::Value;

use crate::key_error::KeyError;

pub const HOUR_MS: u64 = 3_600_000;
pub const DAY_SECS: u64 = 86_400;
pub const GIB: u64 = 1 << 30;

/// A config section whose numbers have maxima.
pub trait Bounded: Serialize {
    /// (key, largest accepted value), the key as the config file names it.
    const MAXIMA: &'static [(&'static str, u64)];
    /// Numeric keys that need no maximum, with why in a comment where declared.
    const UNBOUNDED: &'static [&'static str] = &[];
}

/// One section of the config as [`Bounded`] sees it: its key path, its
/// keys' values, and its declarations.
pub struct Section {
    pub path: &'static str,
    pub values: serde_json::Map<String, Value>,
    pub maxima: &'static [(&'static str, u64)],
    pub unbounded: &'static [&'static str],
}

impl Section {
    /// `section` at `path` (`""`: the top level).
    pub fn of<T: Bounded>(path: &'static str, section: &T) -> Section {
        let values = match serde_json::to_value(section) {
            Ok(Value::Object(m)) => m,
            // A section serialises to a map; nothing to check otherwise.
            _ => serde_json::Map::new(),
        };
        Section {
            path,
            values,
            maxima: T::MAXIMA,
            unbounded: T::UNBOUNDED,
        }
    }

    /// A key's full path.
    pub fn key(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// Each bounded key's (path, value, maximum). A value that is not a
    /// number below 2^64 is the largest one, so it is refused.
    pub fn maxima(&self) -> impl Iterator<Item = (String, u64, u64)> + '_ {
        self.maxima.iter().map(|&(key, max)| {
            let value = self
                .values
                .get(key)
                .and_then(Value::as_u64)
                .unwrap_or(u64::MAX);
            (self.key(key), value, max)
        })
    }

    /// The first key over its maximum, as the config error.
    pub fn check(&self) -> Result<(), KeyError> {
        for (path, value, max) in self.maxima() {
            if value > max {
                return Err(KeyError::new(
                    path,
                    format!("must be at most {max}, got {value}"),
                ));
            }
        }
        Ok(())
    }

    /// What is wrong with the declarations, against the section's keys:
    /// numbers with no maximum, and declared keys that are no number.
    pub fn undeclared(&self) -> Vec<String> {
        let declared =
            |k: &str| self.maxima.iter().any(|m| m.0 == k) || self.unbounded.contains(&k);
        let mut out: Vec<String> = self
            .values
            .iter()
            .filter(|(k, v)| v.is_number() && !declared(k))
            .map(|(k, _)| format!("{}: a number with no maximum", self.key(k)))
            .collect();
        let names = self
            .maxima
            .iter()
            .map(|m| m.0)
            .chain(self.unbounded.iter().copied());
        for k in names {
            if !self.values.get(k).is_some_and(Value::is_number) {
                out.push(format!(
                    "{}: declared, but no number of the section",
                    self.key(k)
                ));
            }
        }
        out
    }
}

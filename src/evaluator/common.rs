//! Pieces every UiPath evaluator shares: name sanitising, the call-matching
//! rule, and pydantic-style lax validation of config and criteria values.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::extract::ToolCall;
use crate::pyvalue::{Dict, Int, Value};

/// The LangChain runtime's tool-name sanitiser the reference uses: split on
/// whitespace runs, join with `_`, keep ASCII `[A-Za-z0-9_-]`, first 64 chars.
pub fn sanitize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let parts = name.split(is_py_space).filter(|p| !p.is_empty());
    for (i, part) in parts.enumerate() {
        if i > 0 {
            out.push('_');
        }
        out.extend(
            part.chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-'),
        );
    }
    out.truncate(64);
    out
}

/// Python's `str.isspace()`: Unicode White_Space plus the ASCII information
/// separators U+001C..U+001F, which Python splits on and Rust does not.
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// The reference's match of an actual call against an expected name/id
/// (SEMANTICS §1.2): a call with an id matches by id only (the expected id if
/// given, else the expected name); otherwise sanitised names are compared.
pub fn call_matches(actual: &ToolCall, expected_name: &str, expected_id: Option<&str>) -> bool {
    match &actual.id {
        Some(id) => expected_id.unwrap_or(expected_name) == id,
        None => sanitize(expected_name) == sanitize(&actual.name),
    }
}

/// [`sanitize`] without allocating when the name is already clean (every
/// character ASCII `[A-Za-z0-9_-]`, at most 64 of them), the common case.
pub fn sanitize_cow(name: &str) -> Cow<'_, str> {
    let clean = name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if clean {
        Cow::Borrowed(name)
    } else {
        Cow::Owned(sanitize(name))
    }
}

/// Small ids for strings, so that matching inside O(n·m) loops compares
/// integers instead of strings (and sanitises each name once). Ids are
/// `0..len` in first-seen order. A few strings are found by a linear scan;
/// past [`SMALL`] a hash index is built.
#[derive(Default)]
pub(crate) struct Interner<'a> {
    strings: Vec<Cow<'a, str>>,
    index: Option<HashMap<Cow<'a, str>, u32>>,
}

/// Up to this many entries, a linear scan beats hashing.
const SMALL: usize = 16;

/// The id of a string that was never interned: equal to no interned id.
pub(crate) const ABSENT: u32 = u32::MAX;

impl<'a> Interner<'a> {
    pub(crate) fn with_capacity(n: usize) -> Interner<'a> {
        Interner {
            strings: Vec::with_capacity(n.min(SMALL)),
            index: None,
        }
    }

    /// How many distinct strings were interned (ids are `0..len`).
    pub(crate) fn len(&self) -> usize {
        self.strings.len()
    }

    /// The interned strings, by id.
    pub(crate) fn strings(&self) -> &[Cow<'a, str>] {
        &self.strings
    }

    /// The id of `s`, interning it if new.
    pub(crate) fn intern(&mut self, s: Cow<'a, str>) -> u32 {
        let found = self.get(&s);
        if found != ABSENT {
            return found;
        }
        let id = u32::try_from(self.strings.len()).unwrap_or(ABSENT - 1);
        match &mut self.index {
            Some(index) => {
                index.insert(s.clone(), id);
            }
            None if self.strings.len() >= SMALL => {
                let mut index: HashMap<Cow<'a, str>, u32> =
                    HashMap::with_capacity(2 * self.strings.len());
                for (i, k) in self.strings.iter().enumerate() {
                    index.insert(k.clone(), u32::try_from(i).unwrap_or(ABSENT - 1));
                }
                index.insert(s.clone(), id);
                self.index = Some(index);
            }
            None => {}
        }
        self.strings.push(s);
        id
    }

    /// The id of `s`, or [`ABSENT`].
    pub(crate) fn get(&self, s: &str) -> u32 {
        match &self.index {
            Some(index) => index.get(s).copied().unwrap_or(ABSENT),
            None => self
                .strings
                .iter()
                .position(|k| k == s)
                .and_then(|i| u32::try_from(i).ok())
                .unwrap_or(ABSENT),
        }
    }
}

/// A call's side of the §1.2 match, precomputed once per call: its id in
/// the raw-string table if it has a `tool.id`, else its sanitised name's id
/// in the sanitised table.
#[derive(Clone, Copy)]
pub(crate) struct CallKey {
    pub(crate) has_id: bool,
    pub(crate) key: u32,
}

/// An expected item's side of the match: the id of `expected_id or name`
/// among the calls' ids, and of its sanitised name among the calls' names.
#[derive(Clone, Copy)]
pub(crate) struct ExpectedKey {
    pub(crate) raw: u32,
    pub(crate) san: u32,
}

impl CallKey {
    /// Exactly [`call_matches`] for the strings these keys were made from.
    #[inline]
    pub(crate) fn matches(self, e: ExpectedKey) -> bool {
        if self.has_id {
            self.key == e.raw
        } else {
            self.key == e.san
        }
    }
}

/// Precomputed match keys for a trace's calls, against which expected
/// names/ids are looked up once each.
pub(crate) struct Matcher<'a> {
    raw: Interner<'a>,
    san: Interner<'a>,
    pub(crate) calls: Vec<CallKey>,
}

impl<'a> Matcher<'a> {
    pub(crate) fn new(calls: &'a [ToolCall]) -> Matcher<'a> {
        let mut raw = Interner::default();
        let mut san = Interner::with_capacity(calls.len());
        let calls = calls
            .iter()
            .map(|c| match &c.id {
                Some(id) => CallKey {
                    has_id: true,
                    key: raw.intern(Cow::Borrowed(id.as_str())),
                },
                None => CallKey {
                    has_id: false,
                    key: san.intern(sanitize_cow(&c.name)),
                },
            })
            .collect();
        Matcher { raw, san, calls }
    }

    pub(crate) fn expected(&self, name: &str, id: Option<&str>) -> ExpectedKey {
        ExpectedKey {
            raw: self.raw.get(id.unwrap_or(name)),
            san: self.san.get(&sanitize_cow(name)),
        }
    }

    /// The calls grouped by key, for evaluators that look up many expected
    /// items: scanning every call for each of them is quadratic (40,000
    /// checks for 200 against 200), a group holds only the calls that can
    /// match.
    pub(crate) fn groups(&self) -> CallGroups {
        // Group g: raw key g for calls with an id, sanitised key
        // g - raw.len() for the others. Counted, then filled in call order.
        let raw_len = self.raw.len();
        let group = |c: &CallKey| {
            if c.has_id {
                c.key as usize
            } else {
                raw_len + c.key as usize
            }
        };
        let mut starts = vec![0u32; raw_len + self.san.len() + 1];
        for c in &self.calls {
            if let Some(n) = starts.get_mut(group(c) + 1) {
                *n += 1;
            }
        }
        for g in 1..starts.len() {
            starts[g] += starts[g - 1];
        }
        let mut next = starts.clone();
        let mut members = vec![0u32; self.calls.len()];
        for (idx, c) in self.calls.iter().enumerate() {
            if let Some(at) = next.get_mut(group(c)) {
                if let Some(slot) = members.get_mut(*at as usize) {
                    *slot = u32::try_from(idx).unwrap_or(u32::MAX);
                }
                *at += 1;
            }
        }
        CallGroups {
            raw_len,
            starts,
            members,
        }
    }
}

/// The calls of a trace grouped by their [`CallKey`] (see
/// [`Matcher::groups`]), each group in call order.
pub(crate) struct CallGroups {
    raw_len: usize,
    /// Group g's members are `members[starts[g]..starts[g + 1]]`.
    starts: Vec<u32>,
    members: Vec<u32>,
}

impl CallGroups {
    fn group(&self, g: usize) -> &[u32] {
        match (self.starts.get(g), self.starts.get(g + 1)) {
            (Some(&a), Some(&b)) => self.members.get(a as usize..b as usize).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// The indices of the calls `e` matches, in call order: exactly those
    /// for which [`CallKey::matches`] holds. They are the calls with an id
    /// equal to `e.raw` and those without one whose sanitised name is
    /// `e.san`, two groups merged.
    pub(crate) fn matching(&self, e: ExpectedKey) -> impl Iterator<Item = usize> + '_ {
        let by_id = if e.raw == ABSENT {
            &[][..]
        } else {
            self.group(e.raw as usize)
        };
        let by_name = if e.san == ABSENT {
            &[][..]
        } else {
            self.group(self.raw_len + e.san as usize)
        };
        Merge {
            a: by_id,
            b: by_name,
        }
        .map(|i| i as usize)
    }
}

/// Two ascending lists of distinct indices merged into one ascending list.
struct Merge<'a> {
    a: &'a [u32],
    b: &'a [u32],
}

impl Iterator for Merge<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        match (self.a.split_first(), self.b.split_first()) {
            (Some((&x, rest)), Some((&y, _))) if x < y => {
                self.a = rest;
                Some(x)
            }
            (_, Some((&y, rest))) => {
                self.b = rest;
                Some(y)
            }
            (Some((&x, rest)), None) => {
                self.a = rest;
                Some(x)
            }
            (None, None) => None,
        }
    }
}

/// Ids of the calls' raw names (`{name}_{counter}` counters are per raw name).
pub(crate) fn name_ids(calls: &[ToolCall]) -> (Vec<u32>, usize) {
    let mut names = Interner::with_capacity(calls.len());
    let ids: Vec<u32> = calls
        .iter()
        .map(|c| names.intern(Cow::Borrowed(c.name.as_str())))
        .collect();
    (ids, names.len())
}

/// `{name}_{n}`, the justification key of an attempt.
pub(crate) fn attempt_key(name: &str, n: usize) -> String {
    let mut key = String::with_capacity(name.len() + 4);
    key.push_str(name);
    key.push('_');
    push_usize(n, &mut key);
    key
}

/// One explained attempt as JSON object text, the entry `attempt_key` →
/// `attempt_line` that `serde_json` would write (escaped), after a comma
/// unless it is the first.
pub(crate) fn write_attempt(
    out: &mut String,
    first: bool,
    name: &str,
    n: usize,
    actual: &str,
    expected: &str,
    ok: bool,
) {
    use crate::json_text::write_str_content;
    if !first {
        out.push(',');
    }
    out.push('"');
    write_str_content(name, out);
    out.push('_');
    push_usize(n, out);
    out.push_str("\":\"Actual: ");
    write_str_content(actual, out);
    out.push_str(", Expected: ");
    write_str_content(expected, out);
    out.push_str(if ok {
        ", Score: 1.0\""
    } else {
        ", Score: 0.0\""
    });
}

/// Appends the decimal digits of `n`.
pub(crate) fn push_usize(n: usize, out: &mut String) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// `Actual: {actual}, Expected: {expected}, Score: {1.0|0.0}`.
pub(crate) fn attempt_line(actual: &str, expected: &str, ok: bool) -> String {
    let score = if ok { "1.0" } else { "0.0" };
    let mut s = String::with_capacity(actual.len() + expected.len() + 32);
    s.push_str("Actual: ");
    s.push_str(actual);
    s.push_str(", Expected: ");
    s.push_str(expected);
    s.push_str(", Score: ");
    s.push_str(score);
    s
}

/// The key a call is counted and listed under: its id, else its raw name.
pub fn call_key(call: &ToolCall) -> &str {
    call.id.as_deref().unwrap_or(&call.name)
}

/// A validation failure with the path of the offending value (`a.b.0`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct Invalid {
    pub path: String,
    pub message: String,
}

impl Invalid {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Invalid {
        Invalid {
            path: path.into(),
            message: message.into(),
        }
    }
}

pub fn join(path: &str, key: impl std::fmt::Display) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The value under `snake` or its camelCase alias (pydantic's
/// `populate_by_name` with an alias generator: the alias wins when both exist).
pub fn field<'a>(d: &'a Dict, snake: &str, camel: &str) -> Option<(&'a Value, &'static str)> {
    if let Some(v) = d.get_str(camel) {
        return Some((v, "camel"));
    }
    d.get_str(snake).map(|v| (v, "snake"))
}

pub fn expect_dict<'a>(v: &'a Value, path: &str) -> Result<&'a Dict, Invalid> {
    v.as_dict().ok_or_else(|| {
        Invalid::new(
            path,
            format!("Input should be a valid dictionary, got {}", v.type_name()),
        )
    })
}

pub fn expect_list<'a>(v: &'a Value, path: &str) -> Result<&'a [Value], Invalid> {
    match v {
        Value::List(items) | Value::Tuple(items) => Ok(items),
        other => Err(Invalid::new(
            path,
            format!("Input should be a valid list, got {}", other.type_name()),
        )),
    }
}

/// pydantic's `str` field: only a string is accepted (no coercion).
pub fn expect_str(v: &Value, path: &str) -> Result<String, Invalid> {
    match v {
        Value::Str(s) => Ok(s.clone()),
        other => Err(Invalid::new(
            path,
            format!("Input should be a valid string, got {}", other.type_name()),
        )),
    }
}

/// The config of the UiPath tool-call evaluators that take only `strict`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Strict {
    pub strict: bool,
}

impl Strict {
    pub fn parse(config: &Dict, path: &str) -> Result<Strict, Invalid> {
        Ok(Strict {
            strict: flag(config, path, "strict")?,
        })
    }
}

/// A config's boolean `key` (pydantic's lax bool), `false` when absent.
pub fn flag(config: &Dict, path: &str, key: &str) -> Result<bool, Invalid> {
    match config.get_str(key) {
        Some(v) => lax_bool(v, &join(path, key)),
        None => Ok(false),
    }
}

/// pydantic's lax `bool`: bools, 0/1, and the usual yes/no strings.
pub fn lax_bool(v: &Value, path: &str) -> Result<bool, Invalid> {
    let bad = || {
        Invalid::new(
            path,
            format!("Input should be a valid boolean, got {}", v.repr()),
        )
    };
    match v {
        Value::Bool(b) => Ok(*b),
        Value::Int(Int::Small(0)) => Ok(false),
        Value::Int(Int::Small(1)) => Ok(true),
        Value::Float(f) if *f == 0.0 => Ok(false),
        Value::Float(f) if *f == 1.0 => Ok(true),
        Value::Str(s) => match s.trim().to_ascii_lowercase().as_str() {
            "0" | "off" | "f" | "false" | "n" | "no" => Ok(false),
            "1" | "on" | "t" | "true" | "y" | "yes" => Ok(true),
            _ => Err(bad()),
        },
        _ => Err(bad()),
    }
}

/// pydantic's lax `int`: ints, bools, integral floats, integer strings.
pub fn lax_int(v: &Value, path: &str) -> Result<Int, Invalid> {
    match v {
        Value::Int(i) => Ok(i.clone()),
        Value::Bool(b) => Ok(Int::Small(i64::from(*b))),
        Value::Float(f) if f.is_finite() && f.fract() == 0.0 => {
            if f.abs() < 9.0e18 {
                // The guard keeps the cast exact.
                #[allow(clippy::cast_possible_truncation)]
                Ok(Int::Small(*f as i64))
            } else {
                Err(Invalid::new(
                    path,
                    "Input should be a valid integer, got a number too large to convert",
                ))
            }
        }
        Value::Float(_) => Err(Invalid::new(
            path,
            "Input should be a valid integer, got a number with a fractional part",
        )),
        Value::Str(s) => {
            let t = s.trim();
            let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
            if !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit() || b == b'_')
                && let Ok(i) = t.replace('_', "").parse::<i64>()
            {
                return Ok(Int::Small(i));
            }
            Err(Invalid::new(
                path,
                "Input should be a valid integer, unable to parse string as an integer",
            ))
        }
        other => Err(Invalid::new(
            path,
            format!("Input should be a valid integer, got {}", other.type_name()),
        )),
    }
}

/// pydantic's lax `float`: numbers and numeric strings.
pub fn lax_float(v: &Value, path: &str) -> Result<f64, Invalid> {
    match v {
        Value::Float(f) => Ok(*f),
        Value::Int(Int::Small(i)) => Ok(*i as f64),
        Value::Int(Int::Big(_)) => Err(Invalid::new(path, "Input should be a finite number")),
        Value::Bool(b) => Ok(if *b { 1.0 } else { 0.0 }),
        Value::Str(s) => s.trim().parse::<f64>().map_err(|_| {
            Invalid::new(
                path,
                "Input should be a valid number, unable to parse string as a number",
            )
        }),
        other => Err(Invalid::new(
            path,
            format!("Input should be a valid number, got {}", other.type_name()),
        )),
    }
}

/// Python's `str(float)` for a score in a justification (`1.0`, `0.0`).
pub fn py_float(f: f64) -> String {
    let mut s = String::new();
    crate::pyvalue::repr::float_repr(f, &mut s);
    s
}

#[cfg(test)]
mod tests;

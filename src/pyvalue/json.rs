//! Python's `json.loads`.
//!
//! A port of CPython 3.12's C scanner (`Modules/_json.c`) with the default
//! options (`strict=True`, `parse_float=float`, `parse_int=int`,
//! `parse_constant` accepting `NaN`, `Infinity`, `-Infinity`), including its
//! error messages and positions.
//!
//! Deviations, all on input CPython accepts but a Rust `String` cannot hold
//! or that CPython would only reject through the interpreter's limits:
//! - a `\uXXXX` escape of a lone surrogate (e.g. `"\ud800"`) becomes U+FFFD;
//! - nesting deeper than [`MAX_DEPTH`] arrays/objects is an error (CPython
//!   raises `RecursionError` at about 1000 levels);
//! - an integer of more than 4300 digits is an error, as in CPython, but
//!   reported as a [`JsonError`] with the position of the number (CPython
//!   raises a plain `ValueError`).
use num_bigint::BigInt;

use super::{Dict, Int, Value};

/// `json.JSONDecodeError`: Python's message, e.g. `Expecting value: line 1 column 1 (char 0)`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{msg}: line {line} column {column} (char {pos})")]
pub struct JsonError {
    pub msg: String,
    pub line: usize,
    pub column: usize,
    pub pos: usize,
}

/// Deepest nesting of arrays and objects accepted.
pub const MAX_DEPTH: usize = 200;

/// `sys.get_int_max_str_digits()` default.
const MAX_INT_DIGITS: usize = 4300;

/// Parses `s` exactly as Python's `json.loads(s)` would.
pub fn loads(s: &str) -> Result<Value, JsonError> {
    let mut p = Parser {
        s,
        b: s.as_bytes(),
        depth: 0,
    };
    p.decode().map_err(|e| e.into_error(s))
}

/// A failure at a byte offset; converted to code points and line/column at
/// the end.
struct Fail {
    msg: String,
    at: usize,
}

impl Fail {
    fn new(msg: impl Into<String>, at: usize) -> Fail {
        Fail {
            msg: msg.into(),
            at,
        }
    }

    fn into_error(self, s: &str) -> JsonError {
        let prefix = s.get(..self.at).unwrap_or(s);
        let pos = prefix.chars().count();
        let line = prefix.matches('\n').count() + 1;
        let column = match prefix.rfind('\n') {
            Some(nl) => prefix[nl + 1..].chars().count() + 1,
            None => pos + 1,
        };
        JsonError {
            msg: self.msg,
            line,
            column,
            pos,
        }
    }
}

/// What the C scanner's `scan_once` reports: a value, or `StopIteration`
/// (no value starts here), or an error already raised.
enum Scan {
    Stop(usize),
    Err(Fail),
}

impl From<Fail> for Scan {
    fn from(f: Fail) -> Scan {
        Scan::Err(f)
    }
}

struct Parser<'a> {
    s: &'a str,
    b: &'a [u8],
    depth: usize,
}

fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

impl Parser<'_> {
    fn skip_ws(&self, mut idx: usize) -> usize {
        while idx < self.b.len() && is_ws(self.b[idx]) {
            idx += 1;
        }
        idx
    }

    fn at(&self, idx: usize) -> Option<u8> {
        self.b.get(idx).copied()
    }

    /// `JSONDecoder.decode`.
    fn decode(&mut self) -> Result<Value, Fail> {
        if self.s.starts_with('\u{feff}') {
            return Err(Fail::new(
                "Unexpected UTF-8 BOM (decode using utf-8-sig)",
                0,
            ));
        }
        let idx = self.skip_ws(0);
        let (v, end) = match self.scan_once(idx) {
            Ok(r) => r,
            Err(Scan::Stop(at)) => return Err(Fail::new("Expecting value", at)),
            Err(Scan::Err(f)) => return Err(f),
        };
        let end = self.skip_ws(end);
        if end != self.b.len() {
            return Err(Fail::new("Extra data", end));
        }
        Ok(v)
    }

    fn has(&self, idx: usize, lit: &[u8]) -> bool {
        self.b.get(idx..idx + lit.len()) == Some(lit)
    }

    /// `scan_once_unicode`.
    fn scan_once(&mut self, idx: usize) -> Result<(Value, usize), Scan> {
        let Some(c) = self.at(idx) else {
            return Err(Scan::Stop(idx));
        };
        match c {
            b'"' => {
                let (s, end) = self.scan_string(idx + 1)?;
                return Ok((Value::Str(s), end));
            }
            b'{' | b'[' => {
                if self.depth >= MAX_DEPTH {
                    let what = if c == b'{' { "object" } else { "array" };
                    return Err(Scan::Err(Fail::new(
                        format!(
                            "maximum recursion depth exceeded while decoding a JSON {what} from a unicode string"
                        ),
                        idx,
                    )));
                }
                self.depth += 1;
                let r = if c == b'{' {
                    self.parse_object(idx + 1)
                } else {
                    self.parse_array(idx + 1)
                };
                self.depth -= 1;
                return r;
            }
            b'n' if self.has(idx, b"null") => return Ok((Value::None, idx + 4)),
            b't' if self.has(idx, b"true") => return Ok((Value::Bool(true), idx + 4)),
            b'f' if self.has(idx, b"false") => return Ok((Value::Bool(false), idx + 5)),
            b'N' if self.has(idx, b"NaN") => return Ok((Value::Float(f64::NAN), idx + 3)),
            b'I' if self.has(idx, b"Infinity") => {
                return Ok((Value::Float(f64::INFINITY), idx + 8));
            }
            b'-' if self.has(idx, b"-Infinity") => {
                return Ok((Value::Float(f64::NEG_INFINITY), idx + 9));
            }
            _ => {}
        }
        self.match_number(idx)
    }

    /// `_parse_object_unicode`; `idx` is just past the `{`.
    fn parse_object(&mut self, mut idx: usize) -> Result<(Value, usize), Scan> {
        let mut d = Dict::new();
        idx = self.skip_ws(idx);
        if self.at(idx) != Some(b'}') {
            loop {
                if self.at(idx) != Some(b'"') {
                    return Err(Scan::Err(Fail::new(
                        "Expecting property name enclosed in double quotes",
                        idx,
                    )));
                }
                let (key, next) = self.scan_string(idx + 1)?;
                idx = self.skip_ws(next);
                if self.at(idx) != Some(b':') {
                    return Err(Scan::Err(Fail::new("Expecting ':' delimiter", idx)));
                }
                idx = self.skip_ws(idx + 1);
                let (val, next) = self.scan_once(idx)?;
                d.insert_str(key, val);
                idx = self.skip_ws(next);
                match self.at(idx) {
                    Some(b'}') => break,
                    Some(b',') => {}
                    _ => return Err(Scan::Err(Fail::new("Expecting ',' delimiter", idx))),
                }
                idx = self.skip_ws(idx + 1);
            }
        }
        Ok((Value::Dict(d), idx + 1))
    }

    /// `_parse_array_unicode`; `idx` is just past the `[`.
    fn parse_array(&mut self, mut idx: usize) -> Result<(Value, usize), Scan> {
        let mut items = Vec::new();
        idx = self.skip_ws(idx);
        if self.at(idx) != Some(b']') {
            loop {
                let (val, next) = self.scan_once(idx)?;
                items.push(val);
                idx = self.skip_ws(next);
                match self.at(idx) {
                    Some(b']') => break,
                    Some(b',') => {}
                    _ => return Err(Scan::Err(Fail::new("Expecting ',' delimiter", idx))),
                }
                idx = self.skip_ws(idx + 1);
            }
        }
        Ok((Value::List(items), idx + 1))
    }

    fn is_digit(&self, idx: usize) -> bool {
        self.at(idx).is_some_and(|c| c.is_ascii_digit())
    }

    /// `_match_number_unicode`.
    fn match_number(&self, start: usize) -> Result<(Value, usize), Scan> {
        let mut idx = start;
        if self.at(idx) == Some(b'-') {
            idx += 1;
        }
        match self.at(idx) {
            Some(b'1'..=b'9') => {
                idx += 1;
                while self.is_digit(idx) {
                    idx += 1;
                }
            }
            Some(b'0') => idx += 1,
            _ => return Err(Scan::Stop(start)),
        }
        let int_end = idx;
        let mut is_float = false;
        if self.at(idx) == Some(b'.') && self.is_digit(idx + 1) {
            is_float = true;
            idx += 2;
            while self.is_digit(idx) {
                idx += 1;
            }
        }
        if matches!(self.at(idx), Some(b'e' | b'E')) {
            let e_start = idx;
            idx += 1;
            if matches!(self.at(idx), Some(b'-' | b'+')) {
                idx += 1;
            }
            let digits_start = idx;
            while self.is_digit(idx) {
                idx += 1;
            }
            if idx > digits_start {
                is_float = true;
            } else {
                idx = e_start;
            }
        }
        let text = &self.s[start..idx];
        if is_float {
            // Rust's parser is correctly rounded and overflows to inf like Python's.
            let f: f64 = text
                .parse()
                .map_err(|_| Scan::Err(Fail::new("Expecting value", start)))?;
            return Ok((Value::Float(f), idx));
        }
        debug_assert_eq!(idx, int_end);
        Ok((Value::Int(parse_decimal_int(text, start)?), idx))
    }

    /// `scanstring_unicode`; `begin` is just past the opening quote.
    fn scan_string(&self, begin: usize) -> Result<(String, usize), Scan> {
        let b = self.b;
        let len = b.len();
        let quote_at = begin.saturating_sub(1);
        let mut out = String::new();
        let mut end = begin;
        loop {
            // Find the end of the string or the next escape.
            let mut next = end;
            while next < len && b[next] != b'"' && b[next] != b'\\' {
                if b[next] <= 0x1f {
                    return Err(Scan::Err(Fail::new("Invalid control character at", next)));
                }
                next += 1;
            }
            if next >= len {
                return Err(Scan::Err(Fail::new(
                    "Unterminated string starting at",
                    quote_at,
                )));
            }
            // Chunk boundaries are ASCII bytes, so this slice is valid UTF-8.
            if b[next] == b'"' && out.is_empty() {
                // No escape: one allocation of the exact size.
                return Ok((self.s[end..next].to_owned(), next + 1));
            }
            out.push_str(&self.s[end..next]);
            if b[next] == b'"' {
                return Ok((out, next + 1));
            }
            // A backslash.
            next += 1;
            if next == len {
                return Err(Scan::Err(Fail::new(
                    "Unterminated string starting at",
                    quote_at,
                )));
            }
            let c = b[next];
            if c != b'u' {
                end = next + 1;
                let ch = match c {
                    b'"' => '"',
                    b'\\' => '\\',
                    b'/' => '/',
                    b'b' => '\u{8}',
                    b'f' => '\u{c}',
                    b'n' => '\n',
                    b'r' => '\r',
                    b't' => '\t',
                    _ => {
                        return Err(Scan::Err(Fail::new("Invalid \\escape", end - 2)));
                    }
                };
                out.push(ch);
                continue;
            }
            next += 1;
            end = next + 4;
            if end >= len {
                return Err(Scan::Err(Fail::new("Invalid \\uXXXX escape", next - 1)));
            }
            let mut cp = hex4(&b[next..end])
                .ok_or_else(|| Scan::Err(Fail::new("Invalid \\uXXXX escape", end - 5)))?;
            if (0xd800..0xdc00).contains(&cp)
                && end + 6 < len
                && b[end] == b'\\'
                && b[end + 1] == b'u'
            {
                let c2 = hex4(&b[end + 2..end + 6])
                    .ok_or_else(|| Scan::Err(Fail::new("Invalid \\uXXXX escape", end + 1)))?;
                if (0xdc00..0xe000).contains(&c2) {
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (c2 - 0xdc00);
                    end += 6;
                }
            }
            // A lone surrogate cannot live in a Rust string: U+FFFD instead.
            out.push(char::from_u32(cp).unwrap_or('\u{fffd}'));
        }
    }
}

/// The reference's output rule for a string that `json.loads` parses to a
/// dict (SEMANTICS §1.2): `str()` of its `content` value when present and
/// truthy, else `""`, rendered straight from the text without building the
/// value tree.
///
/// `None` means "not decided here": the text is not a dict, is not valid
/// JSON, or has something this fast path leaves to [`loads`] (a repeated
/// key inside `content`, deep nesting, big objects). Whenever it returns
/// `Some`, `loads` accepts the text and the result is what rendering its
/// value would give.
pub fn dict_content_str(s: &str) -> Option<String> {
    let p = Parser {
        s,
        b: s.as_bytes(),
        depth: 0,
    };
    Render {
        p: &p,
        keys: [(0, 0); RENDER_MAX_KEYS],
        nkeys: 0,
    }
    .top()
    .ok()
}

/// The fast path gave up; the caller takes the exact one.
struct Bail;

impl From<Scan> for Bail {
    fn from(_: Scan) -> Bail {
        Bail
    }
}

/// Nesting past which the fast path gives up (well under [`MAX_DEPTH`]).
const RENDER_MAX_DEPTH: usize = 64;

/// Keys (over all the objects being rendered) past which the fast path
/// gives up (the repeated-key check is quadratic).
const RENDER_MAX_KEYS: usize = 32;

struct Render<'p, 'a> {
    p: &'p Parser<'a>,
    /// Byte ranges of the keys of the objects being rendered (innermost
    /// last); only keys without escapes, so equal keys have equal text.
    keys: [(usize, usize); RENDER_MAX_KEYS],
    nkeys: usize,
}

impl<'a> Render<'_, 'a> {
    fn top(&mut self) -> Result<String, Bail> {
        let p = self.p;
        let mut idx = p.skip_ws(0);
        if p.at(idx) != Some(b'{') {
            return Err(Bail);
        }
        idx = p.skip_ws(idx + 1);
        let mut content = String::new();
        if p.at(idx) != Some(b'}') {
            loop {
                if p.at(idx) != Some(b'"') {
                    return Err(Bail);
                }
                let (key, next) = self.string(idx + 1)?;
                idx = p.skip_ws(next);
                if p.at(idx) != Some(b':') {
                    return Err(Bail);
                }
                idx = p.skip_ws(idx + 1);
                if key == "content" {
                    // The last `content` wins, as in the dict.
                    let mut out = String::with_capacity(p.b.len());
                    let (next, truthy) = if p.at(idx) == Some(b'"') {
                        // `str()` of a string is the string itself.
                        let (v, next) = self.string(idx + 1)?;
                        out.push_str(&v);
                        (next, !v.is_empty())
                    } else {
                        self.value(idx, &mut out, 1)?
                    };
                    content = if truthy { out } else { String::new() };
                    idx = next;
                } else {
                    idx = self.skip(idx, 1)?;
                }
                idx = p.skip_ws(idx);
                match p.at(idx) {
                    Some(b'}') => break,
                    Some(b',') => {}
                    _ => return Err(Bail),
                }
                idx = p.skip_ws(idx + 1);
            }
        }
        if p.skip_ws(idx + 1) != p.b.len() {
            return Err(Bail);
        }
        Ok(content)
    }

    /// A string's value (borrowed when it has no escapes); `begin` is just
    /// past the opening quote.
    fn string(&self, begin: usize) -> Result<(std::borrow::Cow<'a, str>, usize), Bail> {
        let b = self.p.b;
        let mut i = begin;
        while i < b.len() {
            match b[i] {
                b'"' => {
                    // Both ends are ASCII bytes: character boundaries.
                    let s: &'a str = self.p.s;
                    return Ok((std::borrow::Cow::Borrowed(&s[begin..i]), i + 1));
                }
                b'\\' => {
                    let (owned, next) = self.p.scan_string(begin)?;
                    return Ok((std::borrow::Cow::Owned(owned), next));
                }
                0..=0x1f => return Err(Bail),
                _ => i += 1,
            }
        }
        Err(Bail)
    }

    /// Appends `repr()` of the value at `idx` (inside `depth` containers);
    /// returns the index past it and the value's truthiness.
    fn value(&mut self, idx: usize, out: &mut String, depth: usize) -> Result<(usize, bool), Bail> {
        let p = self.p;
        let lit = |out: &mut String, text: &str, len: usize, truthy: bool| {
            out.push_str(text);
            Ok((idx + len, truthy))
        };
        match p.at(idx) {
            Some(b'"') => {
                let (v, next) = self.string(idx + 1)?;
                super::repr::str_repr(&v, out);
                Ok((next, !v.is_empty()))
            }
            Some(b'{') if depth < RENDER_MAX_DEPTH => self.object(idx + 1, out, depth + 1),
            Some(b'[') if depth < RENDER_MAX_DEPTH => self.array(idx + 1, out, depth + 1),
            Some(b'{' | b'[') => Err(Bail),
            Some(b'n') if p.has(idx, b"null") => lit(out, "None", 4, false),
            Some(b't') if p.has(idx, b"true") => lit(out, "True", 4, true),
            Some(b'f') if p.has(idx, b"false") => lit(out, "False", 5, false),
            Some(b'N') if p.has(idx, b"NaN") => lit(out, "nan", 3, true),
            Some(b'I') if p.has(idx, b"Infinity") => lit(out, "inf", 8, true),
            Some(b'-') if p.has(idx, b"-Infinity") => lit(out, "-inf", 9, true),
            _ => {
                let (v, end) = p.match_number(idx)?;
                v.write_repr(out);
                Ok((end, v.truthy()))
            }
        }
    }

    /// `idx` is just past the `{`.
    fn object(
        &mut self,
        mut idx: usize,
        out: &mut String,
        depth: usize,
    ) -> Result<(usize, bool), Bail> {
        let p = self.p;
        let base = self.nkeys;
        out.push('{');
        idx = p.skip_ws(idx);
        let mut any = false;
        if p.at(idx) != Some(b'}') {
            loop {
                if p.at(idx) != Some(b'"') {
                    return Err(Bail);
                }
                let (key, next) = self.string(idx + 1)?;
                let std::borrow::Cow::Borrowed(key) = key else {
                    // An escaped key could equal another spelled differently.
                    return Err(Bail);
                };
                let text = &p.s;
                let seen = self.keys.get(base..self.nkeys).unwrap_or_default();
                if self.nkeys >= RENDER_MAX_KEYS
                    || seen.iter().any(|&(a, b)| text.get(a..b) == Some(key))
                {
                    // A repeated key keeps its first position with its last
                    // value: left to the exact path.
                    return Err(Bail);
                }
                self.keys[self.nkeys] = (idx + 1, next - 1);
                self.nkeys += 1;
                if any {
                    out.push_str(", ");
                }
                any = true;
                super::repr::str_repr(key, out);
                idx = p.skip_ws(next);
                if p.at(idx) != Some(b':') {
                    return Err(Bail);
                }
                idx = p.skip_ws(idx + 1);
                out.push_str(": ");
                let (next, _) = self.value(idx, out, depth)?;
                idx = p.skip_ws(next);
                match p.at(idx) {
                    Some(b'}') => break,
                    Some(b',') => {}
                    _ => return Err(Bail),
                }
                idx = p.skip_ws(idx + 1);
            }
        }
        self.nkeys = base;
        out.push('}');
        Ok((idx + 1, any))
    }

    /// `idx` is just past the `[`.
    fn array(
        &mut self,
        mut idx: usize,
        out: &mut String,
        depth: usize,
    ) -> Result<(usize, bool), Bail> {
        let p = self.p;
        out.push('[');
        idx = p.skip_ws(idx);
        let mut any = false;
        if p.at(idx) != Some(b']') {
            loop {
                if any {
                    out.push_str(", ");
                }
                any = true;
                let (next, _) = self.value(idx, out, depth)?;
                idx = p.skip_ws(next);
                match p.at(idx) {
                    Some(b']') => break,
                    Some(b',') => {}
                    _ => return Err(Bail),
                }
                idx = p.skip_ws(idx + 1);
            }
        }
        out.push(']');
        Ok((idx + 1, any))
    }

    /// Checks the value at `idx` as `loads` would, without rendering it;
    /// the index past it.
    fn skip(&mut self, mut idx: usize, depth: usize) -> Result<usize, Bail> {
        let p = self.p;
        let (close, is_object) = match p.at(idx) {
            Some(b'"') => return Ok(self.string(idx + 1)?.1),
            Some(b'{') if depth < RENDER_MAX_DEPTH => (b'}', true),
            Some(b'[') if depth < RENDER_MAX_DEPTH => (b']', false),
            Some(b'{' | b'[') => return Err(Bail),
            Some(b'n') if p.has(idx, b"null") => return Ok(idx + 4),
            Some(b't') if p.has(idx, b"true") => return Ok(idx + 4),
            Some(b'f') if p.has(idx, b"false") => return Ok(idx + 5),
            Some(b'N') if p.has(idx, b"NaN") => return Ok(idx + 3),
            Some(b'I') if p.has(idx, b"Infinity") => return Ok(idx + 8),
            Some(b'-') if p.has(idx, b"-Infinity") => return Ok(idx + 9),
            _ => return Ok(p.match_number(idx)?.1),
        };
        idx = p.skip_ws(idx + 1);
        if p.at(idx) == Some(close) {
            return Ok(idx + 1);
        }
        loop {
            if is_object {
                if p.at(idx) != Some(b'"') {
                    return Err(Bail);
                }
                idx = p.skip_ws(self.string(idx + 1)?.1);
                if p.at(idx) != Some(b':') {
                    return Err(Bail);
                }
                idx = p.skip_ws(idx + 1);
            }
            idx = p.skip_ws(self.skip(idx, depth + 1)?);
            match p.at(idx) {
                Some(c) if c == close => return Ok(idx + 1),
                Some(b',') => {}
                _ => return Err(Bail),
            }
            idx = p.skip_ws(idx + 1);
        }
    }
}

fn hex4(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |acc, &d| {
        let v = char::from(d).to_digit(16)?;
        Some(acc << 4 | v)
    })
}

/// `int(text)` for JSON's `-?(0|[1-9][0-9]*)`.
fn parse_decimal_int(text: &str, start: usize) -> Result<Int, Scan> {
    let digits = text.trim_start_matches('-').len();
    if digits <= 18
        && let Ok(i) = text.parse::<i64>()
    {
        return Ok(Int::Small(i));
    }
    if digits > MAX_INT_DIGITS {
        return Err(Scan::Err(Fail::new(
            format!(
                "Exceeds the limit ({MAX_INT_DIGITS} digits) for integer string conversion: value has {digits} digits; use sys.set_int_max_str_digits() to increase the limit"
            ),
            start,
        )));
    }
    text.parse::<BigInt>()
        .map(Int::from_bigint)
        .map_err(|_| Scan::Err(Fail::new("Expecting value", start)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ok(s: &str) -> String {
        match loads(s) {
            Ok(v) => v.repr(),
            Err(e) => panic!("loads({s:?}) failed: {e}"),
        }
    }

    fn err(s: &str) -> String {
        match loads(s) {
            Ok(v) => panic!("loads({s:?}) succeeded: {}", v.repr()),
            Err(e) => e.to_string(),
        }
    }

    /// (input, repr(json.loads(input))) — expected strings from CPython.
    const OK_CASES: &[(&str, &str)] = &[
        (
            "{\"limit\": 1, \"query\": \"x\", \"limit\": 2}",
            "{'limit': 2, 'query': 'x'}",
        ),
        ("1e3", "1000.0"),
        ("1000", "1000"),
        ("-0.0", "-0.0"),
        ("-0", "0"),
        ("0", "0"),
        ("12345678901234567890123", "12345678901234567890123"),
        ("-12345678901234567890123", "-12345678901234567890123"),
        ("9223372036854775807", "9223372036854775807"),
        ("9223372036854775808", "9223372036854775808"),
        ("-9223372036854775808", "-9223372036854775808"),
        ("-9223372036854775809", "-9223372036854775809"),
        ("1e400", "inf"),
        ("-1e400", "-inf"),
        ("1E+2", "100.0"),
        ("1.5e-7", "1.5e-07"),
        ("0.1", "0.1"),
        ("123456789.123", "123456789.123"),
        ("2.5e-310", "2.5e-310"),
        ("NaN", "nan"),
        ("Infinity", "inf"),
        ("-Infinity", "-inf"),
        ("[NaN, Infinity, -Infinity]", "[nan, inf, -inf]"),
        ("true", "True"),
        ("false", "False"),
        ("null", "None"),
        (" \t\n\r[1, 2 ,3 ] \r\n\t ", "[1, 2, 3]"),
        ("[]", "[]"),
        ("{}", "{}"),
        ("[ ]", "[]"),
        ("{ }", "{}"),
        ("\"\"", "''"),
        (
            "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"",
            "'a\"b\\\\c/d\\x08\\x0c\\n\\r\\t'",
        ),
        ("\"\\u00e9\\u0041\"", "'éA'"),
        ("\"\\ud83d\\udd27\"", "'🔧'"),
        ("\"\\uD83D\\uDD27\"", "'🔧'"),
        ("\"🔧 é 検索\"", "'🔧 é 検索'"),
        ("\"it's\"", "\"it's\""),
        ("\"\u{7f}\u{2028}\"", "'\\x7f\\u2028'"),
        (
            "{\"a\": {\"b\": [1, {\"c\": null}]}}",
            "{'a': {'b': [1, {'c': None}]}}",
        ),
        ("{\"b\": 1, \"a\": 2}", "{'b': 1, 'a': 2}"),
        ("[1.0, 1, true]", "[1.0, 1, True]"),
        ("{\"x\": 1}   ", "{'x': 1}"),
        ("\"\\u0000\"", "'\\x00'"),
        ("[-0, -0.5, 0.5e1, 1e-5]", "[0, -0.5, 5.0, 1e-05]"),
        ("1.7976931348623157e308", "1.7976931348623157e+308"),
        ("5e-324", "5e-324"),
        ("1e-400", "0.0"),
    ];

    #[test]
    fn accepts() {
        for &(s, expected) in OK_CASES {
            assert_eq!(ok(s), expected, "{s:?}");
        }
    }

    #[test]
    fn lone_surrogates_become_replacement_chars() {
        assert_eq!(ok("\"\\ud800\""), "'\u{fffd}'");
        assert_eq!(ok("\"\\udc00x\""), "'\u{fffd}x'");
        assert_eq!(ok("\"\\ud800\\u0041\""), "'\u{fffd}A'");
        assert_eq!(ok("\"\\ud800\\n\""), "'\u{fffd}\\n'");
    }

    /// (input, str(JSONDecodeError)) — expected strings from CPython.
    const ERR_CASES: &[(&str, &str)] = &[
        ("", "Expecting value: line 1 column 1 (char 0)"),
        ("   ", "Expecting value: line 1 column 4 (char 3)"),
        ("01", "Extra data: line 1 column 2 (char 1)"),
        ("+1", "Expecting value: line 1 column 1 (char 0)"),
        ("-", "Expecting value: line 1 column 1 (char 0)"),
        ("-a", "Expecting value: line 1 column 1 (char 0)"),
        (".5", "Expecting value: line 1 column 1 (char 0)"),
        ("1.", "Extra data: line 1 column 2 (char 1)"),
        ("1.e5", "Extra data: line 1 column 2 (char 1)"),
        ("1e", "Extra data: line 1 column 2 (char 1)"),
        ("1e+", "Extra data: line 1 column 2 (char 1)"),
        ("[1,]", "Expecting value: line 1 column 4 (char 3)"),
        ("[1,", "Expecting value: line 1 column 4 (char 3)"),
        ("[", "Expecting value: line 1 column 2 (char 1)"),
        ("[1", "Expecting ',' delimiter: line 1 column 3 (char 2)"),
        ("[1 2]", "Expecting ',' delimiter: line 1 column 4 (char 3)"),
        (
            "{",
            "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        ),
        (
            "{\"a\": 1,}",
            "Expecting property name enclosed in double quotes: line 1 column 9 (char 8)",
        ),
        (
            "{'a': 1}",
            "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        ),
        (
            "{\"a\" 1}",
            "Expecting ':' delimiter: line 1 column 6 (char 5)",
        ),
        ("{\"a\": }", "Expecting value: line 1 column 7 (char 6)"),
        (
            "{\"a\": 1",
            "Expecting ',' delimiter: line 1 column 8 (char 7)",
        ),
        (
            "{\"a\": 1 \"b\": 2}",
            "Expecting ',' delimiter: line 1 column 9 (char 8)",
        ),
        (
            "\"abc",
            "Unterminated string starting at: line 1 column 1 (char 0)",
        ),
        (
            "\"abc\\",
            "Unterminated string starting at: line 1 column 1 (char 0)",
        ),
        (
            "[\"a\tb\"]",
            "Invalid control character at: line 1 column 4 (char 3)",
        ),
        (
            "\"a\nb\"",
            "Invalid control character at: line 1 column 3 (char 2)",
        ),
        ("\"\\x41\"", "Invalid \\escape: line 1 column 2 (char 1)"),
        (
            "\"\\u12\"",
            "Invalid \\uXXXX escape: line 1 column 3 (char 2)",
        ),
        (
            "\"\\u12G4\"",
            "Invalid \\uXXXX escape: line 1 column 3 (char 2)",
        ),
        (
            "\"\\u0041",
            "Invalid \\uXXXX escape: line 1 column 3 (char 2)",
        ),
        (
            "\"\\ud800\\u12G4\"",
            "Invalid \\uXXXX escape: line 1 column 9 (char 8)",
        ),
        ("nul", "Expecting value: line 1 column 1 (char 0)"),
        ("True", "Expecting value: line 1 column 1 (char 0)"),
        ("nan", "Expecting value: line 1 column 1 (char 0)"),
        ("inf", "Expecting value: line 1 column 1 (char 0)"),
        ("-NaN", "Expecting value: line 1 column 1 (char 0)"),
        ("[1]x", "Extra data: line 1 column 4 (char 3)"),
        ("{} {}", "Extra data: line 1 column 4 (char 3)"),
        (
            "\u{feff}{}",
            "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)",
        ),
        ("\u{a0}1", "Expecting value: line 1 column 1 (char 0)"),
        ("[\n1,\n]", "Expecting value: line 3 column 1 (char 5)"),
        (
            "{\"é\": 1,\n  \"検\": }",
            "Expecting value: line 2 column 8 (char 16)",
        ),
        ("\"é\" x", "Extra data: line 1 column 5 (char 4)"),
        (
            "query=paris&limit=3",
            "Expecting value: line 1 column 1 (char 0)",
        ),
    ];

    #[test]
    fn rejects() {
        for &(s, expected) in ERR_CASES {
            assert_eq!(err(s), expected, "{s:?}");
        }
    }

    #[test]
    fn nesting_is_capped() {
        let ok_depth = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(loads(&ok_depth).is_ok());
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(loads(&deep).is_err());
        let deep_obj = "{\"a\":".repeat(100_000);
        assert!(loads(&deep_obj).is_err());
    }

    /// The output rule on a loads-parsed value, the way it was before the fast path.
    fn content_slow(s: &str) -> Option<String> {
        match loads(s) {
            Ok(Value::Dict(d)) => Some(match d.get_str("content") {
                Some(v) if v.truthy() => v.py_str(),
                _ => String::new(),
            }),
            _ => None,
        }
    }

    fn check_content(s: &str) {
        if let Some(fast) = dict_content_str(s) {
            assert_eq!(Some(fast), content_slow(s), "{s:?}");
        }
    }

    #[test]
    fn content_fast_path_cases() {
        let decided = [
            "{\"content\": {\"tool\": \"t\", \"value\": 21.5, \"n\": 3, \"ok\": true, \"x\": null}}",
            "{\"content\": \"hi\"}",
            "{\"content\": \"\"}",
            "{\"content\": 0}",
            "{\"content\": -0}",
            "{\"content\": 0.0}",
            "{\"content\": 1e-400}",
            "{\"content\": false}",
            "{\"content\": null}",
            "{\"content\": {}}",
            "{\"content\": []}",
            "{\"content\": [NaN, Infinity, -Infinity, 1e20, 1E+2, -0.0]}",
            "{\"content\": 12345678901234567890123}",
            "{\"content\": {\"content\": \"x\"}}",
            "{\"content\": [\"it's \\\"q\\\"\"]}",
            "{\"content\": [\"a\\u0001b\\tc\", \"\\u00e9\\ud83d\\udd27\", \"\\ud800\"]}",
            "{\"result\": \"hello\"}",
            "{}",
            " \t{\"a\": [1, {\"b\": 2, \"b\": 3}], \"content\": \"first\", \"content\": [1, 2]}\r\n",
            "{\"content\": \"{\\\"a\\\": 1}\"}",
            "{\"c\\u006fntent\": 5}",
            "{\"content\": {\"é\": \"São Paulo\", \"q\": \"it's \\\"fine\\\"\\n\"}}",
        ];
        for s in decided {
            assert!(dict_content_str(s).is_some(), "{s:?}");
            check_content(s);
        }
        let undecided = [
            "[1, 2]",
            "\"hi\"",
            "42",
            "hello world",
            "{'content': 'x'}",
            "{\"content\": {\"a\": 1, \"a\": 2}}",
            "{\"content\": 1,}",
            "{\"content\": 1} x",
            "{\"content\": \"a\nb\"}",
            "{\"content\": \"\\x\"}",
            "\u{feff}{\"content\": 1}",
            "{\"content\": 01}",
            "{\"content\": [1,]}",
            "{\"a\": tru}",
            "{\"a\": \"\\uZZZZ\"}",
        ];
        for s in undecided {
            check_content(s);
        }
        assert_eq!(
            dict_content_str("{\"content\": {\"a\": 1, \"a\": 2}}"),
            None
        );
        let deep = format!("{{\"content\": {}{}}}", "[".repeat(100), "]".repeat(100));
        check_content(&deep);
        let too_deep = format!("{{\"a\": {}{}}}", "[".repeat(300), "]".repeat(300));
        assert_eq!(dict_content_str(&too_deep), None);
        let big = format!("{{\"content\": {}}}", "7".repeat(4301));
        assert_eq!(dict_content_str(&big), None);
    }

    fn json_text() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("false".to_owned()),
            Just("NaN".to_owned()),
            Just("-Infinity".to_owned()),
            "-?(0|[1-9][0-9]{0,25})(\\.[0-9]{1,5})?([eE][-+]?[0-9]{1,3})?",
            "\"([ -!#-\\[\\]-~é€😀]|\\\\[\"\\\\/bfnrt]|\\\\u00[0-9a-f]{2}|\\\\ud83d\\\\ude00|\\\\ud800)*\"",
            Just("\"\"".to_owned()),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            let key = prop_oneof![
                Just("\"a\"".to_owned()),
                Just("\"b\"".to_owned()),
                Just("\"content\"".to_owned()),
                Just("\"c\\u006fntent\"".to_owned()),
                Just("\"é\"".to_owned()),
            ];
            let ws = prop_oneof![Just(""), Just(" "), Just("\n\t ")];
            prop_oneof![
                (prop::collection::vec((inner.clone(), ws.clone()), 0..5)).prop_map(|items| {
                    let parts: Vec<String> = items
                        .into_iter()
                        .map(|(v, w)| format!("{w}{v}{w}"))
                        .collect();
                    format!("[{}]", parts.join(","))
                }),
                (prop::collection::vec((key, inner, ws), 0..5)).prop_map(|members| {
                    let parts: Vec<String> = members
                        .into_iter()
                        .map(|(k, v, w)| format!("{w}{k}{w}:{w}{v}{w}"))
                        .collect();
                    format!("{{{}}}", parts.join(","))
                }),
            ]
        })
    }

    proptest! {
        #[test]
        fn content_fast_path_agrees(v in json_text(), other in json_text(), before in any::<bool>()) {
            let doc = if before {
                format!("{{\"other\": {other}, \"content\": {v}}}")
            } else {
                format!(" {{\"content\":{v} , \"other\" :{other}}} ")
            };
            check_content(&doc);
            check_content(&v);
            if content_slow(&doc).is_some() && !doc.contains("\"a\"") && !doc.contains("\"b\"")
                && !doc.contains("\"é\"") && !doc.contains("ntent\"") {
                prop_assert!(dict_content_str(&doc).is_some(), "{}", doc);
            }
        }

        #[test]
        fn content_fast_path_never_wrong_on_noise(s in "[{}\\[\\]\":, a-z0-9.eE+\\-\\\\]{0,40}") {
            check_content(&s);
            check_content(&format!("{{\"content\": {s}}}"));
        }
    }

    #[test]
    fn huge_ints() {
        let s = "7".repeat(4300);
        assert_eq!(ok(&s), s);
        assert!(err(&"7".repeat(4301)).starts_with("Exceeds the limit (4300 digits)"));
    }

    #[test]
    fn large_input_is_fast() {
        let mut s = String::from("{");
        for i in 0..50_000 {
            if i > 0 {
                s.push(',');
            }
            s.push_str(&format!("\"k{i}\": [{i}, \"v\", 1.5, null]"));
        }
        s.push('}');
        let v = loads(&s).map(|v| v.as_dict().map(|d| d.len()));
        assert_eq!(v, Ok(Some(50_000)));
    }
}

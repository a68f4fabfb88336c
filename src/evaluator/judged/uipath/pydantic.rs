//! pydantic 2.14's `ValidationError` text, for the models the judges
//! validate (the gateway's `ChatCompletion`, the evaluation criteria), and
//! the lax-mode checks of the field types those models use.

use crate::pyvalue::{Dict, Int, Value};

/// The version in pydantic's error URLs.
const DOCS_VERSION: &str = "2.14";

/// One step of an error location: a dict key or a list index.
#[derive(Debug, Clone)]
pub enum Loc {
    Key(String),
    Index(usize),
}

/// One line of a `ValidationError`.
#[derive(Debug, Clone)]
pub struct LineError {
    pub loc: Vec<Loc>,
    /// pydantic's error type (`missing`, `string_type`, …).
    pub kind: &'static str,
    pub message: String,
    /// `repr()` of the offending input, untruncated.
    pub input_repr: String,
    pub input_type: &'static str,
}

impl LineError {
    pub fn new(loc: &[Loc], kind: &'static str, message: impl Into<String>, input: &Value) -> Self {
        LineError {
            loc: loc.to_vec(),
            kind,
            message: message.into(),
            input_repr: input.repr(),
            input_type: input.type_name(),
        }
    }
}

/// `str(ValidationError)`: `N validation error(s) for Title`, then each line.
pub fn display(title: &str, errors: &[LineError]) -> String {
    let n = errors.len();
    let mut out = format!(
        "{n} validation error{} for {title}",
        if n == 1 { "" } else { "s" }
    );
    for e in errors {
        out.push('\n');
        if !e.loc.is_empty() {
            for (i, step) in e.loc.iter().enumerate() {
                if i > 0 {
                    out.push('.');
                }
                match step {
                    // pydantic quotes keys that contain a dot.
                    Loc::Key(k) if k.contains('.') => {
                        out.push('`');
                        out.push_str(k);
                        out.push('`');
                    }
                    Loc::Key(k) => out.push_str(k),
                    Loc::Index(i) => out.push_str(&i.to_string()),
                }
            }
            out.push('\n');
        }
        out.push_str("  ");
        out.push_str(&e.message);
        out.push_str(" [type=");
        out.push_str(e.kind);
        out.push_str(", input_value=");
        out.push_str(&truncated(&e.input_repr));
        out.push_str(", input_type=");
        out.push_str(e.input_type);
        out.push_str("]\n    For further information visit https://errors.pydantic.dev/");
        out.push_str(DOCS_VERSION);
        out.push_str("/v/");
        out.push_str(e.kind);
    }
    out
}

/// pydantic-core's `write_truncated_to_limited_bytes(repr, 50)`: over 50
/// bytes, the first 25 and the last 24 (on character boundaries) around `...`.
pub fn truncated(repr: &str) -> String {
    const MAX: usize = 50;
    if repr.len() <= MAX {
        return repr.to_owned();
    }
    let mid = MAX.div_ceil(2);
    let mut head = mid;
    while !repr.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = repr.len() - (mid - 1);
    while !repr.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}...{}", &repr[..head], &repr[tail..])
}

/// Collects the line errors of one model validation.
#[derive(Default)]
pub struct Errors {
    pub lines: Vec<LineError>,
}

impl Errors {
    pub fn push(
        &mut self,
        loc: &[Loc],
        kind: &'static str,
        message: impl Into<String>,
        input: &Value,
    ) {
        self.lines.push(LineError::new(loc, kind, message, input));
    }

    /// A model's input: a dict, else `model_type`.
    pub fn model<'v>(&mut self, v: &'v Value, class: &str, loc: &[Loc]) -> Option<&'v Dict> {
        match v {
            Value::Dict(d) => Some(d),
            other => {
                self.push(
                    loc,
                    "model_type",
                    format!("Input should be a valid dictionary or instance of {class}"),
                    other,
                );
                None
            }
        }
    }

    /// A required field: `missing` (with the whole model input) when absent.
    pub fn required<'v>(
        &mut self,
        d: &'v Dict,
        whole: &Value,
        key: &str,
        loc: &[Loc],
    ) -> Option<&'v Value> {
        let v = d.get_str(key);
        if v.is_none() {
            self.push(&at(loc, key), "missing", "Field required", whole);
        }
        v
    }

    /// A `str` field.
    pub fn string<'v>(&mut self, v: &'v Value, loc: &[Loc]) -> Option<&'v str> {
        match v {
            Value::Str(s) => Some(s),
            other => {
                self.push(loc, "string_type", "Input should be a valid string", other);
                None
            }
        }
    }

    /// An `Optional[str]` field that is present.
    pub fn optional_string(&mut self, v: &Value, loc: &[Loc]) -> Option<Option<String>> {
        match v {
            Value::None => Some(None),
            other => self.string(other, loc).map(|s| Some(s.to_owned())),
        }
    }

    /// A lax-mode `int` field.
    pub fn int(&mut self, v: &Value, loc: &[Loc]) -> Option<()> {
        match lax_int(v) {
            Ok(()) => Some(()),
            Err((kind, message)) => {
                self.push(loc, kind, message, v);
                None
            }
        }
    }

    /// An `Optional[int]` field that is present.
    pub fn optional_int(&mut self, v: &Value, loc: &[Loc]) -> Option<()> {
        match v {
            Value::None => Some(()),
            other => self.int(other, loc),
        }
    }

    /// A `List[...]` field (lax mode also takes tuples).
    pub fn list<'v>(&mut self, v: &'v Value, loc: &[Loc]) -> Option<&'v [Value]> {
        match v {
            Value::List(items) | Value::Tuple(items) => Some(items),
            other => {
                self.push(loc, "list_type", "Input should be a valid list", other);
                None
            }
        }
    }

    /// A `Dict[str, Any]` field.
    pub fn dict<'v>(&mut self, v: &'v Value, loc: &[Loc]) -> Option<&'v Dict> {
        match v {
            Value::Dict(d) => Some(d),
            other => {
                self.push(
                    loc,
                    "dict_type",
                    "Input should be a valid dictionary",
                    other,
                );
                None
            }
        }
    }
}

/// `loc` extended by a key.
pub fn at(loc: &[Loc], key: &str) -> Vec<Loc> {
    let mut l = loc.to_vec();
    l.push(Loc::Key(key.to_owned()));
    l
}

/// `loc` extended by an index.
pub fn at_index(loc: &[Loc], i: usize) -> Vec<Loc> {
    let mut l = loc.to_vec();
    l.push(Loc::Index(i));
    l
}

type Refusal = (&'static str, &'static str);

const INT_TYPE: Refusal = ("int_type", "Input should be a valid integer");
const INT_PARSING: Refusal = (
    "int_parsing",
    "Input should be a valid integer, unable to parse string as an integer",
);
const INT_PARSING_SIZE: Refusal = (
    "int_parsing_size",
    "Unable to parse input string as an integer, exceeded maximum size",
);

/// pydantic-core's Python-mode lax `int`: ints and bools, integral finite
/// floats within i64, integer strings (`validate_int`, `str_as_int`,
/// `float_as_int`).
fn lax_int(v: &Value) -> Result<(), Refusal> {
    match v {
        Value::Int(_) | Value::Bool(_) => Ok(()),
        Value::Float(f) => {
            if !f.is_finite() {
                Err(("finite_number", "Input should be a finite number"))
            } else if f % 1.0 != 0.0 {
                Err((
                    "int_from_float",
                    "Input should be a valid integer, got a number with a fractional part",
                ))
            } else if (i64::MIN as f64) < *f && *f < (i64::MAX as f64) {
                Ok(())
            } else {
                Err(INT_PARSING_SIZE)
            }
        }
        Value::Str(s) => str_as_int(s),
        _ => Err(INT_TYPE),
    }
}

/// `str_as_int`: a JSON integer as is, else after `clean_int_str`.
fn str_as_int(s: &str) -> Result<(), Refusal> {
    // jiter refuses integers past 4300 digits as out of range.
    let digits = s.trim_start_matches('-');
    if is_json_int(s) {
        return if digits.len() > 4300 {
            Err(INT_PARSING_SIZE)
        } else {
            Ok(())
        };
    }
    match clean_int_str(s) {
        Some(c) if is_json_int(&c) => Ok(()),
        _ => Err(INT_PARSING),
    }
}

/// `-?(0|[1-9][0-9]*)`.
fn is_json_int(s: &str) -> bool {
    let d = s.strip_prefix('-').unwrap_or(s);
    match d.as_bytes() {
        [b'0'] => true,
        [first, rest @ ..] => (b'1'..=b'9').contains(first) && rest.iter().all(u8::is_ascii_digit),
        [] => false,
    }
}

/// pydantic-core's `clean_int_str`: whitespace, one `+`, leading zeros,
/// a `.0…` suffix and underscores between digits removed; `None` when
/// nothing changed or the text cannot be an integer.
fn clean_int_str(s: &str) -> Option<String> {
    let len_before = s.len();
    let mut s = s.trim();
    if let Some(rest) = s.strip_prefix('+') {
        if rest.starts_with('-') {
            return None;
        }
        s = rest;
    }
    let mut negative = false;
    if let Some(rest) = s.strip_prefix('-') {
        if rest.starts_with('-') || rest.starts_with('+') {
            return None;
        }
        negative = true;
        s = rest;
    }
    s = strip_leading_zeros(s)?;
    if let Some(i) = s.find('.') {
        let decimals = &s[i + 1..];
        if !decimals.is_empty() && decimals.chars().all(|c| c == '0') {
            s = &s[..i];
        }
    }
    let sign = if negative { "-" } else { "" };
    if !(s.starts_with('_') || s.ends_with('_') || !s.contains('_') || s.contains("__")) {
        return Some(format!("{sign}{}", s.replace('_', "")));
    }
    if len_before == s.len() {
        return None;
    }
    Some(format!("{sign}{s}"))
}

fn strip_leading_zeros(s: &str) -> Option<&str> {
    let mut chars = s.char_indices();
    match chars.next() {
        Some((_, '0')) => {}
        Some((_, c)) if c.is_ascii_digit() || c == '-' => return Some(s),
        _ => return None,
    }
    for (i, c) in chars {
        match c {
            '0' | '_' => {}
            '1'..='9' | '-' => return Some(&s[i..]),
            '.' => return s.get(i - 1..),
            _ => return None,
        }
    }
    s.get(s.len() - 1..)
}

/// Python's `int` values a lax `int` field accepts, for callers that need
/// the number (the config's `max_tokens`).
pub fn lax_int_value(v: &Value) -> Option<Int> {
    lax_int(v).ok()?;
    match v {
        Value::Int(i) => Some(i.clone()),
        Value::Bool(b) => Some(Int::Small(i64::from(*b))),
        // Checked integral and within i64 above.
        #[allow(clippy::cast_possible_truncation)]
        Value::Float(f) => Some(Int::Small(*f as i64)),
        Value::Str(s) => {
            let t = if is_json_int(s) {
                s.clone()
            } else {
                clean_int_str(s)?
            };
            t.parse::<num_bigint::BigInt>().ok().map(Int::from_bigint)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_25_and_24_bytes() {
        let s = "{'id': 'call_x', 'type': 'function', 'function': {'name': 'submit_evaluation', 'arguments': '{\"justification\": \"Followed the expected behaviour.\", \"score\": 12.5}'}}";
        assert_eq!(
            truncated(s),
            "{'id': 'call_x', 'type': ...our.\", \"score\": 12.5}'}}"
        );
        assert_eq!(truncated(&"x".repeat(50)), "x".repeat(50));
        let t = truncated(&"é".repeat(40));
        assert!(
            t.starts_with(&"é".repeat(12)) && t.ends_with(&"é".repeat(12)),
            "{t}"
        );
    }

    #[test]
    fn lax_ints() {
        for ok in [
            Value::int(3),
            Value::Bool(true),
            Value::Float(2.0),
            Value::str("12"),
            Value::str(" 0012 "),
            Value::str("1_000"),
            Value::str("7.000"),
            Value::str("+5"),
        ] {
            assert_eq!(lax_int(&ok), Ok(()), "{ok:?}");
        }
        assert_eq!(lax_int(&Value::Float(1.5)).unwrap_err().0, "int_from_float");
        assert_eq!(
            lax_int(&Value::Float(f64::NAN)).unwrap_err().0,
            "finite_number"
        );
        assert_eq!(
            lax_int(&Value::Float(1e20)).unwrap_err().0,
            "int_parsing_size"
        );
        assert_eq!(lax_int(&Value::str("1e3")).unwrap_err().0, "int_parsing");
        assert_eq!(lax_int(&Value::str("1__0")).unwrap_err().0, "int_parsing");
        assert_eq!(lax_int(&Value::None).unwrap_err().0, "int_type");
        assert_eq!(
            lax_int_value(&Value::str(" 0012 ")).map(|i| i.to_string()),
            Some("12".into())
        );
    }

    #[test]
    fn display_matches_pydantic() {
        let mut e = Errors::default();
        let whole = crate::pyvalue::json::loads(r#"{"id": "x"}"#).unwrap();
        let d = e.model(&whole, "ChatCompletion", &[]).unwrap();
        let _ = e.required(d, &whole, "usage", &[]);
        assert_eq!(
            display("ChatCompletion", &e.lines),
            "1 validation error for ChatCompletion\nusage\n  Field required [type=missing, input_value={'id': 'x'}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing"
        );
        let mut e = Errors::default();
        let _ = e.model(&Value::int(1), "ChatCompletion", &[]);
        let _ = e.string(&Value::None, &[Loc::Key("a.b".into()), Loc::Index(0)]);
        assert_eq!(
            display("ChatCompletion", &e.lines),
            "2 validation errors for ChatCompletion\n  Input should be a valid dictionary or instance of ChatCompletion [type=model_type, input_value=1, input_type=int]\n    For further information visit https://errors.pydantic.dev/2.14/v/model_type\n`a.b`.0\n  Input should be a valid string [type=string_type, input_value=None, input_type=NoneType]\n    For further information visit https://errors.pydantic.dev/2.14/v/string_type"
        );
    }
}

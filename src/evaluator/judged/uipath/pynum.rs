//! The few Python number and time rules the judges' results depend on:
//! `float(x)`, `round(x, 2)`, the score clamp, and the second that
//! `datetime.fromtimestamp(ns / 1e9)` prints.

use crate::pyvalue::Value;
use crate::pyvalue::repr::str_repr;

/// A Python exception as the judges report it: its type name and `str()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyExc {
    pub kind: &'static str,
    pub message: String,
}

impl PyExc {
    pub fn new(kind: &'static str, message: impl Into<String>) -> PyExc {
        PyExc {
            kind,
            message: message.into(),
        }
    }
}

/// Python's `str.isspace()`: Unicode White_Space plus the ASCII information
/// separators U+001C..U+001F, which Python strips and Rust does not.
pub fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `s.strip()`.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(is_py_space)
}

/// Python's `float(v)` for the values a JSON document holds.
pub fn py_float(v: &Value) -> Result<f64, PyExc> {
    match v {
        Value::Float(f) => Ok(*f),
        Value::Bool(b) => Ok(if *b { 1.0 } else { 0.0 }),
        Value::Int(i) => i
            .to_f64()
            .ok_or_else(|| PyExc::new("OverflowError", "int too large to convert to float")),
        Value::Str(s) => float_from_str(s).ok_or_else(|| {
            let mut m = String::from("could not convert string to float: ");
            str_repr(s, &mut m);
            PyExc::new("ValueError", m)
        }),
        other => Err(PyExc::new(
            "TypeError",
            format!(
                "float() argument must be a string or a real number, not '{}'",
                other.type_name()
            ),
        )),
    }
}

/// `float(s)` for a string: surrounding whitespace, underscores between
/// digits, `inf`/`infinity`/`nan` in any case, an optional sign, and any
/// script's decimal digits (`"١٢"` is 12.0).
pub fn float_from_str(s: &str) -> Option<f64> {
    let ascii;
    let s = if s.is_ascii() {
        s
    } else {
        ascii = ascii_digits(s);
        &ascii
    };
    let t = py_strip(s);
    let cleaned;
    let t = if t.contains('_') {
        cleaned = without_underscores(t)?;
        cleaned.as_str()
    } else {
        t
    };
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    let lower = unsigned.to_ascii_lowercase();
    if matches!(lower.as_str(), "inf" | "infinity" | "nan") {
        let neg = t.starts_with('-');
        let v = if lower == "nan" {
            f64::NAN
        } else {
            f64::INFINITY
        };
        return Some(if neg { -v } else { v });
    }
    if !is_decimal(unsigned) {
        return None;
    }
    t.parse::<f64>().ok()
}

/// CPython's `_PyUnicode_TransformDecimalAndSpaceToASCII` for digits:
/// every Unicode decimal digit (category Nd) becomes its ASCII digit.
/// Nd characters come in runs of ten, 0 to 9, so a digit's value is its
/// distance from the start of its run of consecutive Nd characters, mod 10.
fn ascii_digits(s: &str) -> String {
    use unicode_general_category::{GeneralCategory, get_general_category};
    let is_nd = |c: char| get_general_category(c) == GeneralCategory::DecimalNumber;
    s.chars()
        .map(|c| {
            if c.is_ascii() || !is_nd(c) {
                return c;
            }
            let mut n = 0u32;
            let mut prev = u32::from(c);
            while let Some(p) = prev.checked_sub(1).and_then(char::from_u32) {
                if !is_nd(p) {
                    break;
                }
                n += 1;
                prev -= 1;
            }
            char::from_digit(n % 10, 10).unwrap_or(c)
        })
        .collect()
}

/// CPython's `_Py_string_to_number_with_underscores`: each underscore must
/// sit between two digits; they are then dropped.
fn without_underscores(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut prev: Option<char> = None;
    for c in s.chars() {
        if c == '_' {
            if !prev.is_some_and(|p| p.is_ascii_digit()) {
                return None;
            }
        } else {
            if prev == Some('_') && !c.is_ascii_digit() {
                return None;
            }
            out.push(c);
        }
        prev = Some(c);
    }
    if prev == Some('_') {
        return None;
    }
    Some(out)
}

/// `digits [. digits] [e [sign] digits]` with at least one mantissa digit.
fn is_decimal(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    let mut mantissa = digits(&mut i);
    if b.get(i) == Some(&b'.') {
        i += 1;
        mantissa += digits(&mut i);
    }
    if mantissa == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Python's `round(x, 2)` on a binary float: the exact value rounded to two
/// decimals (ties, which only exactly representable values have, to even),
/// read back as the nearest double. NaN and infinities come back unchanged.
pub fn round2(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    // Rust's fixed-precision formatting is exact with ties to even, as
    // CPython's `_Py_dg_dtoa(x, 3, 2)`.
    format!("{x:.2}").parse().unwrap_or(x)
}

/// The judges' score: `max(0.0, min(1.0, round(llm_score / 100.0, 2)))`
/// with Python's `min`/`max`, which keep the first argument unless the
/// second compares strictly smaller/greater (so NaN becomes 1.0).
pub fn clamp_score(llm_score: f64) -> f64 {
    let r = round2(llm_score / 100.0);
    let low = if r < 1.0 { r } else { 1.0 };
    if low > 0.0 { low } else { 0.0 }
}

/// `datetime.fromtimestamp(ns / 1e9).strftime("%Y-%m-%d %H:%M:%S")` in UTC:
/// the float seconds are split and the microseconds rounded half to even
/// (`_PyTime_ROUND_HALF_EVEN`), which can carry into the next second.
pub fn timestamp_str(ns: u64) -> String {
    let t = ns as f64 / 1e9;
    let int_part = t.trunc();
    let us = round_half_even((t - int_part) * 1e6);
    let secs = if us >= 1e6 { int_part + 1.0 } else { int_part };
    // An u64 of nanoseconds is at most about 1.8e10 seconds: exact in i64.
    #[allow(clippy::cast_possible_truncation)]
    let secs = secs as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// CPython's `_PyTime_RoundHalfEven`.
fn round_half_even(x: f64) -> f64 {
    let r = x.round();
    if (x - r).abs() == 0.5 {
        2.0 * (x / 2.0).round()
    } else {
        r
    }
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day)
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round2_is_pythons_round() {
        // Expected values from CPython 3.12.
        let cases = [
            (0.005, 0.01),
            (0.125, 0.12),
            (0.375, 0.38),
            (2.675, 2.67),
            (0.285, 0.28),
            (28.5 / 100.0, 0.28),
            (12.5 / 100.0, 0.12),
            (62.5 / 100.0, 0.62),
            (87.456 / 100.0, 0.87),
            (0.5 / 100.0, 0.01),
            (-0.001, -0.0),
            (1e300, 1e300),
        ];
        for (x, want) in cases {
            let got = round2(x);
            assert_eq!(got.to_bits(), f64::to_bits(want), "round({x}, 2) = {got}");
        }
        assert!(round2(f64::NAN).is_nan());
        assert_eq!(round2(f64::INFINITY), f64::INFINITY);
        assert_eq!(round2(f64::NEG_INFINITY), f64::NEG_INFINITY);
    }

    #[test]
    fn clamp_follows_python_min_max() {
        assert_eq!(clamp_score(28.5), 0.28);
        assert_eq!(clamp_score(150.0), 1.0);
        assert_eq!(clamp_score(-5.0), 0.0);
        assert_eq!(clamp_score(f64::NAN), 1.0);
        assert_eq!(clamp_score(f64::INFINITY), 1.0);
        assert_eq!(clamp_score(f64::NEG_INFINITY), 0.0);
        assert_eq!(clamp_score(-0.1).to_bits(), 0.0f64.to_bits());
        assert_eq!(clamp_score(0.5), 0.01);
    }

    #[test]
    fn float_of_strings() {
        let ok = [
            (" 42 ", 42.0),
            ("1e2", 100.0),
            ("85", 85.0),
            ("\t-1.5\n", -1.5),
            ("1_000.5", 1000.5),
            (".5", 0.5),
            ("5.", 5.0),
            ("+3", 3.0),
            ("Infinity", f64::INFINITY),
            ("-inf", f64::NEG_INFINITY),
            ("1e999", f64::INFINITY),
            ("\u{a0}7\u{2003}", 7.0),
            ("１２", 12.0),
            ("١٢.٥", 12.5),
            ("𝟏𝟐", 12.0),
            ("𝟗", 9.0),
        ];
        for (s, want) in ok {
            assert_eq!(float_from_str(s), Some(want), "{s:?}");
        }
        assert!(float_from_str("nan").is_some_and(f64::is_nan));
        assert!(float_from_str("-NaN").is_some_and(f64::is_nan));
        for bad in [
            "", " ", "eighty", "1e", "e5", "1__0", "_1", "1_", "1_.5", "0x10", "1.5.2", "++1",
            "in f", "nanx",
        ] {
            assert_eq!(float_from_str(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn float_errors_are_pythons() {
        let e = py_float(&Value::str("eighty")).unwrap_err();
        assert_eq!(
            (e.kind, e.message.as_str()),
            ("ValueError", "could not convert string to float: 'eighty'")
        );
        let e = py_float(&Value::None).unwrap_err();
        assert_eq!(
            e.message,
            "float() argument must be a string or a real number, not 'NoneType'"
        );
        assert_eq!(py_float(&Value::Bool(true)), Ok(1.0));
        assert_eq!(py_float(&Value::int(85)), Ok(85.0));
        let big = crate::pyvalue::json::loads(&"9".repeat(400)).unwrap();
        assert_eq!(py_float(&big).unwrap_err().kind, "OverflowError");
    }

    #[test]
    fn timestamps_round_half_even_into_the_next_second() {
        assert_eq!(timestamp_str(0), "1970-01-01 00:00:00");
        assert_eq!(
            timestamp_str(1_700_000_000_000_000_000),
            "2023-11-14 22:13:20"
        );
        // .9999996 s rounds to 1,000,000 µs: the next second.
        assert_eq!(
            timestamp_str(1_700_000_059_999_999_600),
            "2023-11-14 22:14:20"
        );
        // .9999992 s is 999,999 µs: the same second.
        assert_eq!(
            timestamp_str(1_700_000_059_999_999_200),
            "2023-11-14 22:14:19"
        );
        assert_eq!(
            timestamp_str(1_000_000_000_999_999_499),
            "2001-09-09 01:46:41"
        );
        assert_eq!(
            timestamp_str(951_782_400_000_000_000),
            "2000-02-29 00:00:00"
        );
        assert_eq!(
            timestamp_str(4_102_444_799_000_000_000),
            "2099-12-31 23:59:59"
        );
    }
}

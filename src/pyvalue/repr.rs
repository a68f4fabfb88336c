//! Python `repr()` and `str()`.
use std::fmt::Write as _;

use unicode_general_category::{GeneralCategory, get_general_category};

use super::{Dict, Value};

impl Value {
    /// Python `repr(self)`.
    pub fn repr(&self) -> String {
        let mut out = String::new();
        self.write_repr(&mut out);
        out
    }

    /// Appends Python `repr(self)` to `out`.
    ///
    /// Known gap: CPython refuses (`ValueError`) to render an int of more than
    /// 4300 decimal digits; here it is rendered in full.
    pub fn write_repr(&self, out: &mut String) {
        match self {
            Value::None => out.push_str("None"),
            Value::Bool(true) => out.push_str("True"),
            Value::Bool(false) => out.push_str("False"),
            Value::Int(super::Int::Small(i)) => push_i64(*i, out),
            Value::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Value::Float(f) => float_repr(*f, out),
            Value::Complex(re, im) => complex_repr(*re, *im, out),
            Value::Str(s) => str_repr(s, out),
            Value::Bytes(b) => bytes_repr(b, out),
            Value::List(items) => {
                out.push('[');
                write_items(items, out);
                out.push(']');
            }
            Value::Tuple(items) => {
                out.push('(');
                write_items(items, out);
                if items.len() == 1 {
                    out.push(',');
                }
                out.push(')');
            }
            Value::Set(items) => {
                if items.is_empty() {
                    out.push_str("set()");
                } else {
                    out.push('{');
                    write_items(items, out);
                    out.push('}');
                }
            }
            Value::Dict(d) => d.write_repr(out),
        }
    }

    /// Python `str(self)`: a string as is, anything else as its repr.
    pub fn py_str(&self) -> String {
        match self {
            Value::Str(s) => s.clone(),
            other => other.repr(),
        }
    }
}

impl Dict {
    /// Python `repr()` of the dict (no need to wrap it in a [`Value`]).
    pub fn repr(&self) -> String {
        let mut out = String::new();
        self.write_repr(&mut out);
        out
    }

    /// Appends Python `repr()` of the dict to `out`.
    pub fn write_repr(&self, out: &mut String) {
        out.push('{');
        for (n, (k, v)) in self.iter().enumerate() {
            if n > 0 {
                out.push_str(", ");
            }
            k.write_repr(out);
            out.push_str(": ");
            v.write_repr(out);
        }
        out.push('}');
    }
}

/// Appends the decimal digits of `i` (what `{i}` would write), without
/// `fmt`'s machinery: counters and `{name}_{n}` keys are written often.
pub(crate) fn push_i64(i: i64, out: &mut String) {
    out.push_str(itoa::Buffer::new().format(i));
}

fn write_items(items: &[Value], out: &mut String) {
    for (n, v) in items.iter().enumerate() {
        if n > 0 {
            out.push_str(", ");
        }
        v.write_repr(out);
    }
}

/// Code points assigned in the general-category tables we use (Unicode
/// 16.0) but not in CPython 3.12's database (Unicode 15.0), where they are
/// unassigned (`Cn`): neither printable nor identifier characters there. Computed by comparing the two databases
/// (every difference between them is of this kind). Right for Unicode 16.0
/// only, so Cargo.toml pins `unicode-general-category` and a test checks it.
const ASSIGNED_AFTER_15_0: &[(u32, u32)] = &[
    (0x897, 0x897),
    (0x1B4E, 0x1B4F),
    (0x1B7F, 0x1B7F),
    (0x1C89, 0x1C8A),
    (0x2427, 0x2429),
    (0x2FFC, 0x2FFF),
    (0x31E4, 0x31E5),
    (0x31EF, 0x31EF),
    (0xA7CB, 0xA7CD),
    (0xA7DA, 0xA7DC),
    (0x105C0, 0x105F3),
    (0x10D40, 0x10D65),
    (0x10D69, 0x10D85),
    (0x10D8E, 0x10D8F),
    (0x10EC2, 0x10EC4),
    (0x10EFC, 0x10EFC),
    (0x11380, 0x11389),
    (0x1138B, 0x1138B),
    (0x1138E, 0x1138E),
    (0x11390, 0x113B5),
    (0x113B7, 0x113C0),
    (0x113C2, 0x113C2),
    (0x113C5, 0x113C5),
    (0x113C7, 0x113CA),
    (0x113CC, 0x113D5),
    (0x113D7, 0x113D8),
    (0x113E1, 0x113E2),
    (0x116D0, 0x116E3),
    (0x11BC0, 0x11BE1),
    (0x11BF0, 0x11BF9),
    (0x11F5A, 0x11F5A),
    (0x13460, 0x143FA),
    (0x16100, 0x16139),
    (0x16D40, 0x16D79),
    (0x18CFF, 0x18CFF),
    (0x1CC00, 0x1CCF9),
    (0x1CD00, 0x1CEB3),
    (0x1E5D0, 0x1E5FA),
    (0x1E5FF, 0x1E5FF),
    (0x1F8B2, 0x1F8BB),
    (0x1F8C0, 0x1F8C1),
    (0x1FA89, 0x1FA89),
    (0x1FA8F, 0x1FA8F),
    (0x1FABE, 0x1FABE),
    (0x1FAC6, 0x1FAC6),
    (0x1FADC, 0x1FADC),
    (0x1FADF, 0x1FADF),
    (0x1FAE9, 0x1FAE9),
    (0x1FBCB, 0x1FBEF),
    (0x2EBF0, 0x2EE5D),
];

/// The general category of `c` in CPython 3.12's database (Unicode 15.0):
/// the crate's (16.0), except that what 15.0 had not assigned yet is
/// `Unassigned`. Both `repr` and identifiers read it.
pub(crate) fn general_category(c: char) -> GeneralCategory {
    let cp = u32::from(c);
    let newer = ASSIGNED_AFTER_15_0
        .binary_search_by(|&(lo, hi)| {
            if hi < cp {
                std::cmp::Ordering::Less
            } else if lo > cp {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok();
    if newer {
        GeneralCategory::Unassigned
    } else {
        get_general_category(c)
    }
}

/// Python's `str.isprintable()` for one character.
pub(crate) fn is_printable(c: char) -> bool {
    if c.is_ascii() {
        return (' '..='~').contains(&c);
    }
    !matches!(
        general_category(c),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::Surrogate
            | GeneralCategory::PrivateUse
            | GeneralCategory::Unassigned
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
            | GeneralCategory::SpaceSeparator
    )
}

/// Python `repr()` of a string.
///
/// Runs of printable ASCII other than the backslash and the quote are
/// copied at once; everything else goes character by character.
pub fn str_repr(s: &str, out: &mut String) {
    // Common case: printable ASCII without a single quote or a backslash is quoted as is.
    if plain(s.as_bytes(), b'\'') {
        out.reserve(s.len() + 2);
        out.push('\'');
        out.push_str(s);
        out.push('\'');
        return;
    }
    let (single, double) = if s.len() < 32 {
        s.bytes().fold((false, false), |(sq, dq), b| {
            (sq || b == b'\'', dq || b == b'"')
        })
    } else {
        (s.contains('\''), s.contains('"'))
    };
    let quote = if single && !double { b'"' } else { b'\'' };
    out.reserve(s.len() + 2);
    out.push(char::from(quote));
    let bytes = s.as_bytes();
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        // Eight plain bytes at a time while eight remain, then byte by byte.
        if word_at(bytes, i).is_some_and(|w| plain_word(w, quote)) {
            i += 8;
            continue;
        }
        let b = bytes[i];
        if (0x20..0x7f).contains(&b) && b != b'\\' && b != quote {
            i += 1;
            continue;
        }
        out.push_str(&s[start..i]);
        if b < 0x80 {
            match b {
                b'\\' => out.push_str("\\\\"),
                b'\n' => out.push_str("\\n"),
                b'\r' => out.push_str("\\r"),
                b'\t' => out.push_str("\\t"),
                _ if b == quote => {
                    out.push('\\');
                    out.push(char::from(b));
                }
                // Other controls and DEL.
                _ => push_hex_escape(u32::from(b), out),
            }
            i += 1;
        } else {
            // `i` is on a character boundary: only whole characters were skipped.
            let Some(c) = s[i..].chars().next() else {
                break;
            };
            if is_printable(c) {
                out.push(c);
            } else {
                push_hex_escape(u32::from(c), out);
            }
            i += c.len_utf8();
        }
        start = i;
    }
    out.push_str(&s[start..]);
    out.push(char::from(quote));
}

/// Whether every byte is printable ASCII other than the backslash and `quote`.
fn plain(bytes: &[u8], quote: u8) -> bool {
    let words = bytes.chunks_exact(8);
    let tail = words.remainder();
    words
        .into_iter()
        .all(|word| word_at(word, 0).is_some_and(|w| plain_word(w, quote)))
        && tail
            .iter()
            .all(|&b| (0x20..0x7f).contains(&b) && b != b'\\' && b != quote)
}

/// Whether all eight bytes of `w` are printable ASCII other than the
/// backslash and `quote` (SWAR: a byte that fails a test gets its high bit set).
#[inline]
fn plain_word(w: u64, quote: u8) -> bool {
    let special = has_byte(w, b'\\') | has_byte(w, quote) | has_byte(w, 0x7f);
    (w & HIGH) | has_control(w) | special == 0
}

/// The eight bytes at `i` as one word, if eight remain (a fixed-size read:
/// a padded copy of a shorter tail cost a `memcpy` call).
#[inline]
pub(crate) fn word_at(bytes: &[u8], i: usize) -> Option<u64> {
    let word: [u8; 8] = bytes.get(i..i.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(word))
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Non-zero iff a byte of `w` equals `b` (SWAR).
#[inline]
pub(crate) fn has_byte(w: u64, b: u8) -> u64 {
    let v = w ^ (u64::from(b) * ONES);
    v.wrapping_sub(ONES) & !v & HIGH
}

/// Non-zero iff a byte of `w` is below 0x20 (SWAR: such a byte borrows into
/// its high bit; a byte of 0x80 or more never does, nor flags).
#[inline]
pub(crate) fn has_control(w: u64) -> u64 {
    w.wrapping_sub(0x20 * ONES) & !w & HIGH
}

/// `\xNN`, `\uNNNN` or `\UNNNNNNNN` for a non-printable code point.
fn push_hex_escape(cp: u32, out: &mut String) {
    let _ = if cp < 0x100 {
        write!(out, "\\x{cp:02x}")
    } else if cp < 0x10000 {
        write!(out, "\\u{cp:04x}")
    } else {
        write!(out, "\\U{cp:08x}")
    };
}

/// Python `repr()` of a bytes object.
pub fn bytes_repr(b: &[u8], out: &mut String) {
    let quote = if b.contains(&b'\'') && !b.contains(&b'"') {
        b'"'
    } else {
        b'\''
    };
    out.push('b');
    out.push(char::from(quote));
    for &c in b {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(char::from(c));
            }
            0x20..=0x7e => out.push(char::from(c)),
            c => {
                let _ = write!(out, "\\x{c:02x}");
            }
        }
    }
    out.push(char::from(quote));
}

/// Python `repr()` of a float (shortest round-trip digits, Python's notation rules).
pub fn float_repr(f: f64, out: &mut String) {
    format_r(f, true, false, out);
}

/// Python `repr()` of a complex number.
pub fn complex_repr(re: f64, im: f64, out: &mut String) {
    if re == 0.0 && re.is_sign_positive() {
        format_r(im, false, false, out);
        out.push('j');
    } else {
        out.push('(');
        format_r(re, false, false, out);
        format_r(im, false, true, out);
        out.push_str("j)");
    }
}

/// `f` (finite, non-negative) in scientific notation with the fewest
/// significant digits that round-trip, choosing among candidates of that
/// length the one nearest to `f` (ties to even), as David Gay's `dtoa` mode 0
/// does. Rust's `{:e}` finds the shortest length but may break an exact tie
/// the other way (`1629824278314106.3` for CPython's `1629824278314106.2`),
/// so the digits are redone by correct rounding to that length.
fn shortest_sci(f: f64) -> String {
    let shortest = format!("{f:e}");
    let ndigits = shortest
        .split('e')
        .next()
        .map_or(1, |m| m.chars().filter(char::is_ascii_digit).count());
    if ndigits <= 1 {
        return shortest;
    }
    let rounded = format!("{:.*e}", ndigits - 1, f);
    if rounded.parse::<f64>().ok() == Some(f) {
        rounded
    } else {
        shortest
    }
}

/// A small stack buffer for formatting a float without allocating.
struct StackBuf {
    bytes: [u8; 40],
    len: usize,
}

impl StackBuf {
    fn new() -> StackBuf {
        StackBuf {
            bytes: [0; 40],
            len: 0,
        }
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl std::fmt::Write for StackBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.bytes.len() {
            return Err(std::fmt::Error);
        }
        self.bytes[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Whether `f` (finite, positive) could lie exactly halfway between two
/// decimals of `n` significant digits, the one case where Rust's shortest
/// digits may differ from `dtoa`'s (see [`shortest_sci`]). Such a midpoint
/// has exactly `n + 1` significant digits, so `f`'s exact decimal expansion
/// must too; `true` whenever that cannot be ruled out cheaply.
fn tie_possible(f: f64, n: usize) -> bool {
    let bits = f.to_bits();
    let exp_bits = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (mut m, mut e) = if exp_bits == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), exp_bits - 1075)
    };
    if m == 0 {
        return true;
    }
    let tz = m.trailing_zeros();
    m >>= tz;
    e += tz as i32;
    let want = n + 1;
    if e >= 0 {
        // An integer: count its significant digits exactly when it fits.
        // e < 64 here, so the shifts are in range; lost bits mean >= 2^64.
        if e >= 64 || (m << e) >> e != m {
            return true;
        }
        let mut v = m << e;
        while v % 10 == 0 {
            v /= 10;
        }
        return v.ilog10() as usize + 1 == want;
    }
    // f = m / 2^k = m * 5^k / 10^k: its significant digits are those of
    // m * 5^k (odd, so no trailing zeros). Past k = 27 that is at least
    // 5^28 > 10^19, more than the n + 1 <= 18 digits of a tie.
    let k = e.unsigned_abs();
    if k > 27 {
        return false;
    }
    let v = u128::from(m) * 5u128.pow(k);
    v.ilog10() as usize + 1 == want
}

/// `f` (finite, non-negative) as shortest round-trip digits and a decimal
/// exponent (`d.ddd × 10^exp`), as [`shortest_sci`] gives them, without
/// allocating unless an exact tie is possible.
fn shortest_digits(f: f64, digits: &mut StackBuf) -> i32 {
    let mut sci = StackBuf::new();
    let fast = write!(sci, "{f:e}").is_ok();
    let parsed = fast
        .then(|| sci.as_str().split_once('e'))
        .flatten()
        .and_then(|(mantissa, exp)| Some((mantissa, exp.parse::<i32>().ok()?)));
    if let Some((mantissa, exp)) = parsed {
        let n = mantissa.bytes().filter(u8::is_ascii_digit).count();
        if n <= 1 || f == 0.0 || !tie_possible(f, n) {
            for c in mantissa.chars().filter(char::is_ascii_digit) {
                let _ = digits.write_char(c);
            }
            return exp;
        }
    }
    let sci = shortest_sci(f);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    for c in mantissa.chars().filter(char::is_ascii_digit) {
        let _ = digits.write_char(c);
    }
    exp.parse().unwrap_or(0)
}

/// CPython's `PyOS_double_to_string(f, 'r', 0, flags)`: shortest round-trip
/// digits, fixed notation for decimal exponents in `-4..16`, scientific
/// otherwise. `add_dot_0` is `Py_DTSF_ADD_DOT_0`, `always_sign` is
/// `Py_DTSF_SIGN` (never applied to a NaN's own sign, as in CPython).
fn format_r(f: f64, add_dot_0: bool, always_sign: bool, out: &mut String) {
    if f.is_nan() {
        out.push_str(if always_sign { "+nan" } else { "nan" });
        return;
    }
    if f.is_sign_negative() {
        out.push('-');
    } else if always_sign {
        out.push('+');
    }
    if f.is_infinite() {
        out.push_str("inf");
        return;
    }
    let mut buf = StackBuf::new();
    let exp = shortest_digits(f.abs(), &mut buf);
    let digits = buf.as_str();
    let ndigits = digits.len() as i32;
    if (-4..16).contains(&exp) {
        let decpt = exp + 1;
        if decpt <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-decpt) as usize));
            out.push_str(digits);
        } else if decpt >= ndigits {
            out.push_str(digits);
            out.extend(std::iter::repeat_n('0', (decpt - ndigits) as usize));
            if add_dot_0 {
                out.push_str(".0");
            }
        } else {
            let (int_part, frac) = digits.split_at(decpt as usize);
            out.push_str(int_part);
            out.push('.');
            out.push_str(frac);
        }
    } else {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let a = exp.unsigned_abs();
        if a < 10 {
            out.push('0');
        }
        let _ = write!(out, "{a}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pyvalue::{Dict, Int};
    use proptest::prelude::*;

    #[test]
    fn the_category_tables_are_the_unicode_version_the_correction_table_assumes() {
        assert_eq!(
            unicode_general_category::UNICODE_VERSION,
            (16, 0, 0),
            "unicode-general-category's Unicode version changed: recompute \
             ASSIGNED_AFTER_15_0 against CPython 3.12's Unicode 15.0, then update this test \
             and the exact version pin in Cargo.toml"
        );
    }

    fn fr(f: f64) -> String {
        let mut s = String::new();
        float_repr(f, &mut s);
        s
    }

    fn sr(s: &str) -> String {
        let mut out = String::new();
        str_repr(s, &mut out);
        out
    }

    #[test]
    fn floats() {
        // Expected strings from CPython: repr(float(x)).
        let cases: &[(f64, &str)] = &[
            (25.0, "25.0"),
            (0.0001, "0.0001"),
            (1e-05, "1e-05"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1.2345678901234568e+17, "1.2345678901234568e+17"),
            (2.5e-310, "2.5e-310"),
            (1e20, "1e+20"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
            (-f64::NAN, "nan"),
            (1.5e-07, "1.5e-07"),
            (123456789.123, "123456789.123"),
            (1000.0, "1000.0"),
            (123.456, "123.456"),
            (-1.5, "-1.5"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
            (0.3, "0.3"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1.0 / 3.0, "0.3333333333333333"),
            (2.0 / 3.0, "0.6666666666666666"),
            (9007199254740993.0, "9007199254740992.0"),
            (1234567890123456.7, "1234567890123456.8"),
            (12345678901234567.0, "1.2345678901234568e+16"),
            (0.00012345, "0.00012345"),
            (0.000012345, "1.2345e-05"),
            (1e100, "1e+100"),
            (1.5e300, "1.5e+300"),
            (-2.5e-5, "-2.5e-05"),
            (100.0, "100.0"),
            (3.25, "3.25"),
            (1e22, "1e+22"),
            (1e23, "1e+23"),
            (1629824278314106.2, "1629824278314106.2"),
        ];
        for &(f, expected) in cases {
            assert_eq!(fr(f), expected, "{f:e}");
        }
    }

    #[test]
    fn complexes() {
        // Expected strings from CPython: repr(complex(re, im)).
        let cases: &[((f64, f64), &str)] = &[
            ((0.0, 1.0), "1j"),
            ((1.0, 2.0), "(1+2j)"),
            ((-0.0, -1.0), "(-0-1j)"),
            ((1.5, -2.0), "(1.5-2j)"),
            ((0.0, 2.5), "2.5j"),
            ((0.0, f64::INFINITY), "infj"),
            ((f64::NAN, f64::NAN), "(nan+nanj)"),
            ((1.0, f64::NAN), "(1+nanj)"),
            ((1.0, -f64::NAN), "(1+nanj)"),
            ((-f64::NAN, 1.0), "(nan+1j)"),
            ((0.0, -f64::NAN), "nanj"),
            ((1.0, 0.0), "(1+0j)"),
            ((-0.0, 0.0), "(-0+0j)"),
            ((0.0, -0.0), "-0j"),
            ((0.0, 0.0), "0j"),
            ((0.0, 1e16), "1e+16j"),
            ((1e-5, 1e20), "(1e-05+1e+20j)"),
            ((-0.0, f64::NEG_INFINITY), "(-0-infj)"),
            ((2.0, f64::INFINITY), "(2+infj)"),
        ];
        for &((re, im), expected) in cases {
            assert_eq!(Value::Complex(re, im).repr(), expected);
        }
    }

    #[test]
    fn strings() {
        // Expected strings from CPython: repr(s).
        let cases: &[(&str, &str)] = &[
            ("", "''"),
            ("abc", "'abc'"),
            ("it's", "\"it's\""),
            ("say \"hi\"", "'say \"hi\"'"),
            ("it's \"x\"", "'it\\'s \"x\"'"),
            ("a\nb\tc\rd", "'a\\nb\\tc\\rd'"),
            ("\u{1}", "'\\x01'"),
            ("\u{7f}", "'\\x7f'"),
            ("\u{0}", "'\\x00'"),
            ("\u{a0}", "'\\xa0'"),
            ("\u{ad}", "'\\xad'"),
            ("\u{85}", "'\\x85'"),
            ("\u{200b}", "'\\u200b'"),
            ("\u{2028}", "'\\u2028'"),
            ("\u{3000}", "'\\u3000'"),
            ("\u{feff}", "'\\ufeff'"),
            ("\u{e000}", "'\\ue000'"),
            ("\u{fffd}", "'\u{fffd}'"),
            ("\u{f0000}", "'\\U000f0000'"),
            ("\u{e0001}", "'\\U000e0001'"),
            ("🔧", "'🔧'"),
            ("é", "'é'"),
            ("検索結果", "'検索結果'"),
            ("back\\slash", "'back\\\\slash'"),
            ("'", "\"'\""),
            ("\"", "'\"'"),
            ("'\"", "'\\'\"'"),
            (" ", "' '"),
            ("\u{301}", "'\u{301}'"),
            ("x\u{378}", "'x\\u0378'"),
            // Assigned in Unicode 15.1/16.0, unassigned for CPython 3.12.
            ("\u{1fa89}", "'\\U0001fa89'"),
            ("\u{2ffc}", "'\\u2ffc'"),
            ("\u{897}", "'\\u0897'"),
            // Assigned in 15.0.
            ("\u{1fa88}", "'\u{1fa88}'"),
        ];
        for &(s, expected) in cases {
            assert_eq!(sr(s), expected, "{s:?}");
        }
    }

    #[test]
    fn bytes() {
        // Expected strings from CPython: repr(b).
        let cases: &[(&[u8], &str)] = &[
            (b"", "b''"),
            (b"ab", "b'ab'"),
            (b"it's", "b\"it's\""),
            (b"'\"", "b'\\'\"'"),
            (b"\x00\x7f\xff\t\n\r\\", "b'\\x00\\x7f\\xff\\t\\n\\r\\\\'"),
        ];
        for &(b, expected) in cases {
            assert_eq!(Value::Bytes(b.to_vec()).repr(), expected);
        }
    }

    #[test]
    fn containers() {
        let mut d = Dict::new();
        d.insert_str("limit", Value::int(2));
        d.insert_str("query", Value::str("x"));
        d.insert_str("nested", Value::List(vec![Value::None, Value::Bool(true)]));
        assert_eq!(
            Value::Dict(d).repr(),
            "{'limit': 2, 'query': 'x', 'nested': [None, True]}"
        );
        assert_eq!(Value::Dict(Dict::new()).repr(), "{}");
        assert_eq!(Value::List(vec![]).repr(), "[]");
        assert_eq!(Value::Tuple(vec![]).repr(), "()");
        assert_eq!(Value::Tuple(vec![Value::int(1)]).repr(), "(1,)");
        assert_eq!(
            Value::Tuple(vec![Value::int(1), Value::str("a")]).repr(),
            "(1, 'a')"
        );
        assert_eq!(Value::Set(vec![]).repr(), "set()");
        assert_eq!(
            Value::Set(vec![Value::int(1), Value::int(2)]).repr(),
            "{1, 2}"
        );
        assert_eq!(
            Value::Int(Int::from_bigint(
                "-12345678901234567890123".parse().unwrap_or_default()
            ))
            .repr(),
            "-12345678901234567890123"
        );
        assert_eq!(Value::Float(1e3).repr(), "1000.0");
        assert_eq!(Value::int(1000).repr(), "1000");
        assert_eq!(Value::str("a'b").py_str(), "a'b");
        assert_eq!(Value::List(vec![Value::str("a'b")]).py_str(), "[\"a'b\"]");
        assert_eq!(Value::None.py_str(), "None");
        assert_eq!(Value::Float(0.5).py_str(), "0.5");
    }

    /// The shortest-digits rule: no representation with fewer significant
    /// digits parses back to `f`.
    fn significant_digits(repr: &str) -> String {
        let mantissa = repr.split('e').next().unwrap_or(repr);
        let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
        let trimmed = digits.trim_start_matches('0').trim_end_matches('0');
        trimmed.to_string()
    }

    /// The character-by-character `str_repr` the run-copying one replaced.
    fn str_repr_by_char(s: &str) -> String {
        let mut out = String::new();
        let quote = if s.contains('\'') && !s.contains('"') {
            '"'
        } else {
            '\''
        };
        out.push(quote);
        for c in s.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c == quote => {
                    out.push('\\');
                    out.push(c);
                }
                c if is_printable(c) => out.push(c),
                c => {
                    let cp = u32::from(c);
                    let _ = if cp < 0x100 {
                        write!(out, "\\x{cp:02x}")
                    } else if cp < 0x10000 {
                        write!(out, "\\u{cp:04x}")
                    } else {
                        write!(out, "\\U{cp:08x}")
                    };
                }
            }
        }
        out.push(quote);
        out
    }

    #[test]
    fn str_repr_fixed_cases() {
        for s in [
            "",
            "plain",
            "it's",
            "say \"hi\"",
            "both ' and \"",
            "back\\slash",
            "a\u{1}b\tc\nd\re\u{7f}",
            "caf\u{e9} \u{a0} \u{2028} \u{1f527} \u{e000} \u{10ffff}",
            "\u{897}",
        ] {
            assert_eq!(sr(s), str_repr_by_char(s), "{s:?}");
        }
    }

    proptest! {
        #[test]
        fn str_repr_matches_char_by_char(s in any::<String>()) {
            prop_assert_eq!(sr(&s), str_repr_by_char(&s));
        }

        #[test]
        fn str_repr_matches_char_by_char_ascii(s in "[ -~\\t\\n\\x00-\\x1f\\x7f'\"\\\\]{0,40}") {
            prop_assert_eq!(sr(&s), str_repr_by_char(&s));
        }

        #[test]
        fn float_digits_match_the_exact_path(bits in any::<u64>()) {
            let f = f64::from_bits(bits).abs();
            prop_assume!(f.is_finite());
            let mut buf = StackBuf::new();
            let exp = shortest_digits(f, &mut buf);
            let slow = shortest_sci(f);
            let (m, e) = slow.split_once('e').unwrap_or((&slow, "0"));
            let digits: String = m.chars().filter(char::is_ascii_digit).collect();
            prop_assert_eq!((buf.as_str(), exp), (digits.as_str(), e.parse::<i32>().unwrap_or(0)));
        }

        #[test]
        fn float_digits_match_the_exact_path_short_decimals(m in 0u64..100_000_000, p in -30i32..30) {
            for f in [m as f64 * 10f64.powi(p), m as f64 / 10f64.powi(p), (m as f64 + 0.5) / 4.0] {
                prop_assume!(f.is_finite());
                let mut buf = StackBuf::new();
                let exp = shortest_digits(f, &mut buf);
                let slow = shortest_sci(f);
                let (mm, e) = slow.split_once('e').unwrap_or((&slow, "0"));
                let digits: String = mm.chars().filter(char::is_ascii_digit).collect();
                prop_assert_eq!((buf.as_str(), exp), (digits.as_str(), e.parse::<i32>().unwrap_or(0)), "{}", f);
            }
        }

        #[test]
        fn float_repr_round_trips(bits in any::<u64>()) {
            let f = f64::from_bits(bits);
            prop_assume!(f.is_finite());
            let r = fr(f);
            let back: f64 = r.parse().unwrap_or(f64::NAN);
            prop_assert_eq!(back.to_bits(), f.to_bits(), "{}", r);
            let sig = significant_digits(&r);
            let n = sig.len().max(1);
            if n > 1 {
                // One digit fewer never round-trips.
                let shorter = format!("{:.*e}", n - 2, f);
                let back_short: f64 = shorter.parse().unwrap_or(f64::NAN);
                prop_assert_ne!(back_short.to_bits(), f.to_bits(), "{} vs {}", r, shorter);
            }
            // Notation rule.
            let exp = if f == 0.0 { 0 } else { format!("{:e}", f).split('e').nth(1).and_then(|e| e.parse::<i32>().ok()).unwrap_or(0) };
            prop_assert_eq!(r.contains('e'), !(-4..16).contains(&exp), "{}", r);
            prop_assert!(r.contains('e') || r.contains('.'), "{}", r);
        }

        #[test]
        fn float_repr_round_trips_normal_range(f in -1e20f64..1e20f64) {
            let r = fr(f);
            let back: f64 = r.parse().unwrap_or(f64::NAN);
            prop_assert_eq!(back.to_bits(), f.to_bits(), "{}", r);
        }
    }
}

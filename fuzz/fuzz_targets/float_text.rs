//! Decimal text → double, differential over every path the project reads
//! numbers by, against Rust's `str::parse::<f64>` (correctly rounded):
//!
//! - the `json.loads` port (`pyvalue::json`): a float literal gives the
//!   correctly rounded double (infinity past the range, as Python);
//!   an integer literal gives an int whose `float()` (`Int::to_f64`) is the
//!   correctly rounded double, or `None` past the range (Python's
//!   `OverflowError`);
//! - the `ast.literal_eval` port (`pyvalue::literal`, underscores and
//!   Python's float syntax: `1_0.5`, `.5`, `5.`);
//! - serde_json (built with `float_roundtrip`): every number it reads as a
//!   double, big integers included;
//! - and back: `repr` of each double (`pyvalue::repr::float_repr`) reads
//!   back as the same double, with the fewest significant digits that do
//!   (as CPython's `repr`), in CPython's notation (`1e+16`, `1e-05`,
//!   `100.0`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolscore::pyvalue::{Value, json, literal, repr::float_repr};

/// The same double (any NaN is a NaN).
fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

/// CPython's float `repr`, checked against its definition.
fn check_repr(f: f64) {
    let mut out = String::new();
    float_repr(f, &mut out);
    if f.is_nan() {
        assert_eq!(out, "nan");
        return;
    }
    if f.is_infinite() {
        assert_eq!(out, if f > 0.0 { "inf" } else { "-inf" });
        return;
    }
    let back: f64 = out.parse().unwrap_or_else(|e| panic!("repr {out:?} of {f:e} does not parse: {e}"));
    assert_eq!(back.to_bits(), f.to_bits(), "repr {out:?} does not read back as {f:e}");
    // The shortest round-trip digit count (Rust's `{:e}` is shortest too).
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').expect("`{:e}` has an exponent");
    let shortest = mantissa.bytes().filter(u8::is_ascii_digit).count();
    let exp: i32 = exp.parse().expect("an exponent");
    let body = out.trim_start_matches('-');
    let (digits_part, exp_part) = match body.split_once('e') {
        Some((m, e)) => (m, Some(e)),
        None => (body, None),
    };
    let digits: String = digits_part.chars().filter(char::is_ascii_digit).collect();
    let significant = digits.trim_start_matches('0');
    let significant = if exp_part.is_none() && digits_part.ends_with(".0") {
        significant.strip_suffix('0').unwrap_or(significant)
    } else {
        significant
    };
    let significant = if exp_part.is_none() { significant.trim_end_matches('0') } else { significant };
    let n = significant.len().max(1);
    assert_eq!(n, shortest, "repr {out:?} of {f:e}: {n} significant digits, shortest is {shortest}");
    // Notation: fixed for decimal exponents -4..16, else d.ddde±XX.
    if (-4..16).contains(&exp) {
        assert!(exp_part.is_none(), "repr {out:?}: fixed notation expected");
        assert!(body.contains('.'), "repr {out:?}: a float's repr has a point");
    } else {
        let e = exp_part.unwrap_or_else(|| panic!("repr {out:?}: exponent expected"));
        assert!(e.starts_with('+') || e.starts_with('-'), "repr {out:?}: signed exponent");
        assert!(e.len() >= 3, "repr {out:?}: at least two exponent digits");
        assert_eq!(e.parse::<i32>().ok(), Some(exp), "repr {out:?}: exponent");
    }
    assert_eq!(out.starts_with('-'), f.is_sign_negative(), "repr {out:?}: sign");
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let trimmed = text.trim_matches([' ', '\t', '\n', '\r']);
    let expected = trimmed.parse::<f64>().ok();

    // json.loads: only JSON number syntax reaches the number parser.
    match json::loads(text) {
        Ok(Value::Float(f)) => {
            if let Some(e) = expected {
                assert!(same(f, e), "json.loads({text:?}) = {f:e}, correctly rounded {e:e}");
            }
            check_repr(f);
        }
        Ok(Value::Int(i)) => {
            if let Some(e) = expected {
                match i.to_f64() {
                    // An int has no sign of zero: `-0` is 0.
                    Some(f) => assert!(f == e, "float(json.loads({text:?})) = {f:e}, correctly rounded {e:e}"),
                    None => assert!(e.is_infinite(), "float(json.loads({text:?})) overflows but {e:e} is finite"),
                }
                if let Some(f) = i.to_f64() {
                    check_repr(f);
                }
            }
        }
        _ => {}
    }

    // ast.literal_eval: Python's syntax (underscores between digits).
    match literal::literal_eval(text) {
        Ok(Value::Float(f)) => {
            let plain: String = trimmed.chars().filter(|&c| c != '_').collect();
            if let Ok(e) = plain.parse::<f64>() {
                assert!(same(f, e), "literal_eval({text:?}) = {f:e}, correctly rounded {e:e}");
            }
            check_repr(f);
        }
        Ok(Value::Int(i)) => {
            let plain: String = trimmed.chars().filter(|&c| c != '_').collect();
            if plain.bytes().all(|b| b.is_ascii_digit() || b == b'-' || b == b'+') {
                if let Ok(e) = plain.parse::<f64>() {
                    match i.to_f64() {
                        Some(f) => assert!(f == e, "float(literal_eval({text:?})) = {f:e}, correctly rounded {e:e}"),
                        None => assert!(e.is_infinite(), "float(literal_eval({text:?})) overflows"),
                    }
                }
            }
        }
        _ => {}
    }

    // serde_json: any number it reads as a double.
    if let Ok(n) = serde_json::from_str::<serde_json::Number>(text) {
        if n.is_f64() {
            let f = n.as_f64().expect("an f64 number");
            let e = expected.unwrap_or_else(|| panic!("serde_json reads {text:?}, str::parse does not"));
            assert!(same(f, e), "serde_json({text:?}) = {f:e}, correctly rounded {e:e}");
        }
    }

    if let Some(e) = expected {
        check_repr(e);
    }
});

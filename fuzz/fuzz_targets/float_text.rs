//! Decimal text to a double, differential: the `json.loads` port and
//! serde_json must give the correctly rounded double Rust's `str::parse`
//! gives, for every JSON number with a fraction or an exponent.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolscore::pyvalue::{Value, json};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let is_float = text.contains(['.', 'e', 'E']);
    let Ok(number) = serde_json::from_str::<serde_json::Number>(text) else { return };
    if !is_float {
        return;
    }
    let Ok(expected) = text.trim().parse::<f64>() else { return };
    if !expected.is_finite() {
        return;
    }
    assert_eq!(number.as_f64().map(f64::to_bits), Some(expected.to_bits()), "serde_json: {text}");
    match json::loads(text) {
        Ok(Value::Float(f)) => assert_eq!(f.to_bits(), expected.to_bits(), "json.loads: {text}"),
        other => panic!("json.loads({text:?}) = {other:?}"),
    }
});

//! Every path that turns decimal text into a double rounds correctly
//! (issue 15): JSON criteria and eval-set files (serde_json), span arguments
//! (the Python `json.loads` port), Python literals (`literal_eval`), the YAML
//! config (serde-saphyr), OTLP/JSON `doubleValue` (serde_json into the
//! OTLP types) — each against Rust's `str::parse::<f64>`, which is correctly
//! rounded, on random doubles' shortest and 17-digit forms.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use toolscore::pyvalue::{Value, json, literal};

/// The double each path makes of `text`, by path name.
fn parsed(text: &str) -> Vec<(&'static str, f64)> {
    let float = |v: Value| match v {
        Value::Float(f) => f,
        other => panic!("{text}: {other:?}"),
    };
    let otlp: opentelemetry_proto::tonic::common::v1::AnyValue =
        serde_json::from_str(&format!("{{\"doubleValue\": {text}}}")).unwrap();
    let otlp = match otlp.value {
        Some(opentelemetry_proto::tonic::common::v1::any_value::Value::DoubleValue(d)) => d,
        other => panic!("{text}: {other:?}"),
    };
    vec![
        ("serde_json f64", serde_json::from_str::<f64>(text).unwrap()),
        (
            "serde_json Value",
            serde_json::from_str::<serde_json::Value>(text)
                .unwrap()
                .as_f64()
                .unwrap(),
        ),
        ("json.loads", float(json::loads(text).unwrap())),
        ("literal_eval", float(literal::literal_eval(text).unwrap())),
        (
            "YAML",
            serde_saphyr::from_str_with_options::<f64>(text, toolscore::config::yaml_options())
                .unwrap(),
        ),
        ("OTLP/JSON doubleValue", otlp),
    ]
}

/// Python's `repr` of a float, from Rust's shortest round-trip digits.
fn python_repr(x: f64) -> String {
    let e = format!("{x:e}");
    let (mantissa, exp) = e.split_once('e').unwrap();
    let exp: i32 = exp.parse().unwrap();
    if (-5..16).contains(&exp) {
        let s = format!("{x}");
        if s.contains('.') { s } else { format!("{s}.0") }
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}

fn check(text: &str) {
    let expected: f64 = text.parse().unwrap();
    for (path, got) in parsed(text) {
        assert_eq!(
            got.to_bits(),
            expected.to_bits(),
            "{path} read {text} as {got:e}, not {expected:e}"
        );
    }
}

#[test]
fn the_issues_examples_round_correctly() {
    for text in [
        "-6.3603751849933156e+38",
        "113.45854122794005",
        "3.283440687306677e-299",
    ] {
        check(text);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn every_path_rounds_random_doubles_correctly(bits in any::<u64>()) {
        let x = f64::from_bits(bits);
        prop_assume!(x.is_finite());
        for text in [python_repr(x), format!("{x:e}"), format!("{x:.16e}")] {
            check(&text);
        }
    }

    #[test]
    fn every_path_rounds_uniform_doubles_correctly(x in -1000.0f64..1000.0) {
        for text in [python_repr(x), format!("{x:.16e}"), format!("{x:.17}")] {
            check(&text);
        }
    }
}

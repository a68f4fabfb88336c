//! The shared pieces: name sanitising, the call-matching rule, lax validation.

use super::*;

use crate::evaluator::common;
use crate::evaluator::tests::named;

#[test]
fn sanitize_matches_the_reference() {
    assert_eq!(sanitize("get weather"), "get_weather");
    assert_eq!(sanitize("  get   weather  "), "get_weather");
    assert_eq!(sanitize("a.b"), "ab");
    assert_eq!(sanitize("café"), "caf");
    assert_eq!(sanitize("get-weather"), "get-weather");
    assert_eq!(sanitize("!!!"), "");
    assert_eq!(sanitize(&"x".repeat(70)).len(), 64);
    assert_eq!(sanitize("Get_Weather"), "Get_Weather");
    assert_eq!(sanitize("a\tb\nc"), "a_b_c");
    assert_eq!(sanitize("a\u{1f}b"), "a_b");
}

#[test]
fn sanitize_cow_agrees_with_sanitize() {
    let long = "x".repeat(70);
    for name in [
        "get_weather",
        "get weather",
        "a.b",
        "café",
        "get-weather",
        "!!!",
        "",
        long.as_str(),
        "Get_Weather",
        "a\u{1f}b",
    ] {
        assert_eq!(sanitize_cow(name), sanitize(name), "{name:?}");
    }
}

#[test]
fn push_usize_writes_decimal() {
    for n in [0usize, 7, 10, 99, 12345, usize::MAX] {
        let mut s = String::new();
        push_usize(n, &mut s);
        assert_eq!(s, n.to_string());
    }
    assert_eq!(attempt_key("a", 12), "a_12");
}

#[test]
fn lax_values() {
    assert!(lax_bool(&Value::str("yes"), "").unwrap());
    assert!(!lax_bool(&Value::str("off"), "").unwrap());
    assert!(lax_bool(&Value::str("maybe"), "").is_err());
    assert!(lax_bool(&Value::int(2), "").is_err());
    assert!(matches!(lax_int(&Value::str("1"), ""), Ok(Int::Small(1))));
    assert!(matches!(lax_int(&Value::Float(1.0), ""), Ok(Int::Small(1))));
    assert!(matches!(lax_int(&Value::Bool(true), ""), Ok(Int::Small(1))));
    assert!(lax_int(&Value::Float(1.5), "").is_err());
    assert!(lax_int(&Value::str("1.5"), "").is_err());
    assert!(lax_int(&Value::None, "").is_err());
}

proptest::proptest! {
    /// The grouped lookup the args and output evaluators use yields exactly
    /// the calls the reference's rule (`call_matches`) accepts, in call
    /// order: ids and names, raw and sanitised, mixed.
    #[test]
    fn grouped_matching_is_the_reference_rule_in_call_order(
        calls in proptest::collection::vec(("[ab _.]{0,3}", proptest::option::of("[ab_]{0,2}")), 0..12),
        expected in proptest::collection::vec(("[ab _.]{0,3}", proptest::option::of("[ab_]{0,2}")), 1..6),
    ) {
        let mut tool_calls = named(&calls.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>());
        for (call, (_, id)) in tool_calls.iter_mut().zip(&calls) {
            call.id.clone_from(id);
        }
        let matcher = common::Matcher::new(&tool_calls);
        let groups = matcher.groups();
        for (name, id) in &expected {
            let grouped: Vec<usize> = groups.matching(matcher.expected(name, id.as_deref())).collect();
            let scanned: Vec<usize> = (0..tool_calls.len())
                .filter(|&i| common::call_matches(&tool_calls[i], name, id.as_deref()))
                .collect();
            proptest::prop_assert_eq!(grouped, scanned, "expected {:?} {:?}", name, id);
        }
    }
}

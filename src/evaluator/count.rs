//! UiPath `ToolCallCountEvaluator` (`uipath-tool-call-count`).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt::Write as _;

use num_bigint::BigInt;
use serde_json::{Map, Value as Json};

use super::common::{
    ABSENT, Interner, Invalid, call_key, expect_dict, expect_list, expect_str, field, join,
    lax_int, sanitize_cow,
};
use super::{Outcome, justification, result_message};
use crate::extract::ToolCall;
use crate::pyvalue::repr::str_repr;
use crate::pyvalue::{Dict, Int, Value};

/// `tool_calls_count`: key → (operator, count), in the criteria's key order.
#[derive(Debug, Clone)]
pub struct CountCriteria {
    pub entries: Vec<(String, String, Int)>,
}

pub fn parse_criteria(v: &Value) -> Result<CountCriteria, Invalid> {
    let d = expect_dict(v, "")?;
    let Some((map, which)) = field(d, "tool_calls_count", "toolCallsCount") else {
        return Err(Invalid::new("toolCallsCount", "Field required"));
    };
    let path = if which == "camel" {
        "toolCallsCount"
    } else {
        "tool_calls_count"
    };
    let map = expect_dict(map, path)?;
    let mut entries = Vec::with_capacity(map.len());
    for (k, pair) in map.iter() {
        let key = expect_str(k, path)?;
        let p = join(path, &key);
        let items = expect_list(pair, &p)?;
        if items.len() != 2 {
            return Err(Invalid::new(
                p,
                format!("Tuple should have exactly 2 items, got {}", items.len()),
            ));
        }
        let op = expect_str(&items[0], &join(&p, 0))?;
        let n = lax_int(&items[1], &join(&p, 1))?;
        entries.push((key, op, n));
    }
    Ok(CountCriteria { entries })
}

fn compare(actual: i64, expected: &Int) -> Ordering {
    match expected {
        Int::Small(e) => actual.cmp(e),
        Int::Big(b) => BigInt::from(actual).cmp(b),
    }
}

/// `actual OP expected`, or the reference's KeyError for an unknown operator.
fn apply(op: &str, actual: i64, expected: &Int) -> Result<bool, String> {
    let ord = compare(actual, expected);
    Ok(match op {
        "=" | "==" => ord == Ordering::Equal,
        "!=" => ord != Ordering::Equal,
        ">" => ord == Ordering::Greater,
        "<" => ord == Ordering::Less,
        ">=" => ord != Ordering::Less,
        "<=" => ord != Ordering::Greater,
        other => {
            // str(KeyError(op)) is the repr of the key.
            let mut s = String::new();
            crate::pyvalue::repr::str_repr(other, &mut s);
            return Err(s);
        }
    })
}

/// `repr()` of the expected map with tuple values, `{'a': ('=', 2)}`,
/// written directly (criteria keys come from a dict, so they are distinct;
/// should a caller build criteria with a repeated key, the dict is built as
/// the reference would).
fn expected_repr(entries: &[(String, String, Int)]) -> String {
    let distinct = if entries.len() <= 16 {
        entries
            .iter()
            .enumerate()
            .all(|(i, (k, _, _))| entries[..i].iter().all(|(o, _, _)| o != k))
    } else {
        let mut seen = std::collections::HashSet::with_capacity(entries.len());
        entries.iter().all(|(k, _, _)| seen.insert(k.as_str()))
    };
    if !distinct {
        let mut d = Dict::with_capacity(entries.len());
        for (k, op, n) in entries {
            d.insert_str(
                k.clone(),
                Value::Tuple(vec![Value::str(op.clone()), Value::Int(n.clone())]),
            );
        }
        return d.repr();
    }
    let mut out = String::with_capacity(2 + entries.len() * 32);
    out.push('{');
    for (i, (k, op, n)) in entries.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        str_repr(k, &mut out);
        out.push_str(": (");
        str_repr(op, &mut out);
        out.push_str(", ");
        let _ = write!(out, "{n}");
        out.push(')');
    }
    out.push('}');
    out
}

/// `repr()` of the actual count map, `{'a': 2, 'b': 1}` (keys are distinct).
fn actual_repr(keys: &Interner<'_>, counts: &[i64]) -> String {
    let mut out = String::with_capacity(2 + counts.len() * 24);
    out.push('{');
    for (i, (k, n)) in keys.strings().iter().zip(counts).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        str_repr(k, &mut out);
        out.push_str(": ");
        let _ = write!(out, "{n}");
    }
    out.push('}');
    out
}

pub fn evaluate(calls: &[ToolCall], criteria: &CountCriteria, strict: bool) -> Outcome {
    // One bucket per call key, in first-seen order.
    let mut keys = Interner::with_capacity(calls.len());
    let mut counts: Vec<i64> = Vec::new();
    for c in calls {
        let id = keys.intern(Cow::Borrowed(call_key(c))) as usize;
        match counts.get_mut(id) {
            Some(n) => *n += 1,
            None => counts.push(1),
        }
    }
    let count_of = |key: &str| {
        let id = keys.get(key);
        (id != ABSENT).then(|| counts.get(id as usize).copied().unwrap_or(0))
    };
    let expected_repr = expected_repr(&criteria.entries);
    let actual_repr = actual_repr(&keys, &counts);
    let done = |score: f64, explained: Json| {
        Outcome::ok(
            score,
            justification(
                expected_repr,
                actual_repr,
                "explained_tool_calls_count",
                explained,
            ),
        )
    };
    match (criteria.entries.is_empty(), counts.is_empty()) {
        (true, true) => {
            return done(
                1.0,
                result_message("Both expected and actual tool calls are empty"),
            );
        }
        (true, false) | (false, true) => {
            return done(
                0.0,
                result_message("Either expected or actual tool calls are empty"),
            );
        }
        (false, false) => {}
    }
    let mut explained = Map::with_capacity(criteria.entries.len());
    let mut total = 0.0;
    for (key, op, n) in &criteria.entries {
        let actual = match count_of(key) {
            Some(a) => a,
            None => match sanitize_cow(key) {
                // Already clean: the same lookup again would miss too.
                Cow::Borrowed(_) => 0,
                Cow::Owned(s) => count_of(&s).unwrap_or(0),
            },
        };
        let ok = match apply(op, actual, n) {
            Ok(ok) => ok,
            Err(key_error) => return Outcome::thrown(key_error),
        };
        let mut line = String::with_capacity(48);
        let _ = write!(
            line,
            "Actual: {actual}, Expected: {n}, Score: {}",
            if ok { "1.0" } else { "0.0" }
        );
        let line = Json::String(line);
        if strict && !ok {
            let mut only = Map::new();
            only.insert(key.clone(), line);
            return done(0.0, Json::Object(only));
        }
        explained.insert(key.clone(), line);
        total += if ok { 1.0 } else { 0.0 };
    }
    done(
        total / criteria.entries.len() as f64,
        Json::Object(explained),
    )
}

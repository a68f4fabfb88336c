//! UiPath `ToolCallCountEvaluator` (`uipath-tool-call-count`).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt::Write as _;

use num_bigint::BigInt;
use serde_json::{Map, Value as Json};

use super::common::{
    ABSENT, Interner, Invalid, Strict, call_key, expect_dict, expect_list, expect_str, field, join,
    lax_int, sanitize_cow,
};
use super::kind::{Explanation, Judged, Kind, Layout};
use super::{
    CriteriaError, Explain, Outcome, justification, justification_with, result_message,
    uipath_alias,
};
use crate::extract::ToolCall;
use crate::json_text;
use crate::pyvalue::repr::{push_i64, str_repr};
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

/// Whether no expected key repeats: criteria parsed from JSON come from a
/// dict, so their keys are distinct; only criteria built by hand can
/// repeat one.
fn distinct_keys(entries: &[(String, String, Int)]) -> bool {
    if entries.len() <= 16 {
        entries
            .iter()
            .enumerate()
            .all(|(i, (k, _, _))| entries[..i].iter().all(|(o, _, _)| o != k))
    } else {
        let mut seen = std::collections::HashSet::with_capacity(entries.len());
        entries.iter().all(|(k, _, _)| seen.insert(k.as_str()))
    }
}

/// `repr()` of the expected map with tuple values, `{'a': ('=', 2)}`,
/// written directly when the keys are distinct; with a repeated key (criteria
/// built by hand) the dict is built as the reference would.
fn expected_repr(entries: &[(String, String, Int)], distinct: bool) -> String {
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

pub fn evaluate(
    calls: &[ToolCall],
    criteria: &CountCriteria,
    strict: bool,
    explain: Explain,
) -> Outcome {
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
    let distinct = distinct_keys(&criteria.entries);
    let reprs = || {
        (
            expected_repr(&criteria.entries, distinct),
            actual_repr(&keys, &counts),
        )
    };
    let done = |score: f64, explained: &[Line<'_>], distinct: bool| {
        Outcome::ok(
            score,
            explain.details(|| {
                let (expected, actual) = reprs();
                justification_with(&expected, &actual, "explained_tool_calls_count", |out| {
                    write_explained(explained, distinct, out)
                })
            }),
        )
    };
    let message = |score: f64, message: &str| {
        Outcome::ok(
            score,
            explain.details(|| {
                let (expected, actual) = reprs();
                justification(
                    &expected,
                    &actual,
                    "explained_tool_calls_count",
                    &result_message(message),
                )
            }),
        )
    };
    match (criteria.entries.is_empty(), counts.is_empty()) {
        (true, true) => {
            return message(1.0, "Both expected and actual tool calls are empty");
        }
        (true, false) | (false, true) => {
            return message(0.0, "Either expected or actual tool calls are empty");
        }
        (false, false) => {}
    }
    let mut explained = Vec::with_capacity(criteria.entries.len());
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
        let line = Line {
            key,
            actual,
            expected: n,
            ok,
        };
        if strict && !ok {
            return done(0.0, &[line], true);
        }
        explained.push(line);
        total += if ok { 1.0 } else { 0.0 };
    }
    done(total / criteria.entries.len() as f64, &explained, distinct)
}

/// One expected entry's explanation: `key: "Actual: 2, Expected: 2, Score: 1.0"`.
struct Line<'a> {
    key: &'a str,
    actual: i64,
    expected: &'a Int,
    ok: bool,
}

impl Line<'_> {
    fn write_text(&self, out: &mut String) {
        out.push_str("Actual: ");
        push_i64(self.actual, out);
        out.push_str(", Expected: ");
        match self.expected {
            Int::Small(n) => push_i64(*n, out),
            Int::Big(n) => {
                let _ = write!(out, "{n}");
            }
        }
        out.push_str(if self.ok {
            ", Score: 1.0"
        } else {
            ", Score: 0.0"
        });
    }
}

/// The explained entries as the JSON object text serde_json would write.
/// The reference builds a dict: a repeated key (criteria built by hand)
/// keeps its first place and its last line, so that case goes through a map.
fn write_explained(lines: &[Line<'_>], distinct: bool, out: &mut String) {
    if !distinct {
        let mut map = Map::with_capacity(lines.len());
        for line in lines {
            let mut text = String::new();
            line.write_text(&mut text);
            map.insert(line.key.to_owned(), Json::String(text));
        }
        json_text::write_value(&Json::Object(map), out);
        return;
    }
    out.push('{');
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        json_text::write_str(line.key, out);
        // The line is digits and ASCII words: nothing in it needs escaping.
        out.push_str(":\"");
        line.write_text(out);
        out.push('"');
    }
    out.push('}');
}

/// The kind's declaration (`evaluator::kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Count;

impl Kind for Count {
    type Config = Strict;
    type Criteria = CountCriteria;
    const LAYOUT: Layout = Layout::ToolCounts;
    const EXPLANATION: Explanation = Explanation::Details;

    fn id(self) -> &'static str {
        "uipath-tool-call-count"
    }
    fn alias(self) -> &'static str {
        uipath_alias(self.id())
    }
    fn default_name(self) -> &'static str {
        "ToolCallCountEvaluator"
    }
    fn default_config(self) -> Strict {
        Strict::default()
    }
    fn parse_config(self, config: &Dict, path: &str) -> Result<Strict, Invalid> {
        Strict::parse(config, path)
    }
    fn parse_criteria(self, criteria: &Value) -> Result<CountCriteria, CriteriaError> {
        parse_criteria(criteria).map_err(|e| CriteriaError::Invalid(e, self.default_name()))
    }
    fn missing_criteria(self) -> CriteriaError {
        CriteriaError::Missing
    }
    fn judged(_: &Strict) -> Judged {
        Judged::No
    }
    fn reads_content(_: &Strict) -> Option<&'static str> {
        None
    }
    fn score(
        self,
        calls: &[ToolCall],
        config: &Strict,
        criteria: &CountCriteria,
        explain: Explain,
    ) -> Outcome {
        evaluate(calls, criteria, config.strict, explain)
    }
}

#[cfg(test)]
mod tests;

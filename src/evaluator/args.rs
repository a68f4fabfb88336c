//! UiPath `ToolCallArgsEvaluator` (`uipath-tool-call-args`).
//!
//! `subset` is accepted and ignored: in the reference both modes test "every
//! expected key is present with an equal value" (SEMANTICS §1.5).

use std::collections::HashMap;

use serde_json::{Map, Value as Json};

use super::common::{
    Invalid, call_matches, expect_dict, expect_list, expect_str, field, join, py_float,
};
use super::{Outcome, justification, ratio, result_message};
use crate::extract::ToolCall;
use crate::pyvalue::{Dict, Value};

/// One expected call: `{"name", "args", "id"?}`.
#[derive(Debug, Clone)]
pub struct ExpectedCall {
    pub name: String,
    pub args: Dict,
    pub id: Option<String>,
}

#[derive(Debug, Clone)]
pub struct ArgsCriteria {
    pub calls: Vec<ExpectedCall>,
}

pub fn parse_criteria(v: &Value) -> Result<ArgsCriteria, Invalid> {
    let d = expect_dict(v, "")?;
    let Some((list, which)) = field(d, "tool_calls", "toolCalls") else {
        return Err(Invalid::new("toolCalls", "Field required"));
    };
    let path = if which == "camel" {
        "toolCalls"
    } else {
        "tool_calls"
    };
    let mut calls = Vec::new();
    for (i, item) in expect_list(list, path)?.iter().enumerate() {
        let p = join(path, i);
        let item = expect_dict(item, &p)?;
        let name = match item.get_str("name") {
            Some(n) => expect_str(n, &join(&p, "name"))?,
            None => return Err(Invalid::new(join(&p, "name"), "Field required")),
        };
        let args = match item.get_str("args") {
            Some(a) => expect_dict(a, &join(&p, "args"))?.clone(),
            None => return Err(Invalid::new(join(&p, "args"), "Field required")),
        };
        calls.push(ExpectedCall {
            name,
            args,
            id: optional_id(item, &p)?,
        });
    }
    Ok(ArgsCriteria { calls })
}

/// An optional `id: str | None` field.
pub(crate) fn optional_id(item: &Dict, path: &str) -> Result<Option<String>, Invalid> {
    match item.get_str("id") {
        None | Some(Value::None) => Ok(None),
        Some(v) => expect_str(v, &join(path, "id")).map(Some),
    }
}

/// Python repr of an optional string (`None` or `'x'`).
pub(crate) fn repr_opt(s: Option<&str>, out: &mut String) {
    match s {
        Some(s) => crate::pyvalue::repr::str_repr(s, out),
        None => out.push_str("None"),
    }
}

fn repr_tool_call(name: &str, args: &Dict, id: Option<&str>, out: &mut String) {
    out.push_str("ToolCall(name=");
    crate::pyvalue::repr::str_repr(name, out);
    out.push_str(", args=");
    // A Dict is rendered through Value to share the repr code.
    Value::Dict(args.clone()).write_repr(out);
    out.push_str(", id=");
    repr_opt(id, out);
    out.push(')');
}

fn repr_list<T>(items: &[T], mut one: impl FnMut(&T, &mut String)) -> String {
    let mut out = String::from("[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        one(item, &mut out);
    }
    out.push(']');
    out
}

/// Every expected key present in `actual` with a Python-equal value.
fn args_match(expected: &Dict, actual: &Dict) -> bool {
    expected
        .iter()
        .all(|(k, v)| actual.get(k).is_some_and(|a| a.py_eq(v)))
}

pub fn evaluate(calls: &[ToolCall], criteria: &ArgsCriteria, strict: bool) -> Outcome {
    // The reference builds every call (and so validates every args dict)
    // before scoring: one invalid call fails the whole evaluation.
    let mut actual_args = Vec::with_capacity(calls.len());
    for c in calls {
        match c.args.dict() {
            Ok(d) => actual_args.push(d),
            Err(e) => return Outcome::thrown(e),
        }
    }
    let expected = &criteria.calls;
    let expected_repr = repr_list(expected, |e, out| {
        repr_tool_call(&e.name, &e.args, e.id.as_deref(), out)
    });
    let actual_repr = repr_list(calls, |c, out| {
        if let Ok(d) = c.args.dict() {
            repr_tool_call(&c.name, d, c.id.as_deref(), out);
        }
    });
    let done = |score: f64, explained: Json| {
        Outcome::ok(
            score,
            justification(
                expected_repr.clone(),
                actual_repr.clone(),
                "explained_tool_calls_args",
                explained,
            ),
        )
    };
    match (expected.is_empty(), calls.is_empty()) {
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
    let mut consumed = vec![false; calls.len()];
    let mut attempts: HashMap<&str, usize> = HashMap::new();
    let mut explained = Map::new();
    let mut matched = 0usize;
    for exp in expected {
        for (idx, call) in calls.iter().enumerate() {
            if consumed[idx] || !call_matches(call, &exp.name, exp.id.as_deref()) {
                continue;
            }
            let n = attempts.entry(call.name.as_str()).or_insert(0);
            let key = format!("{}_{}", call.name, n);
            *n += 1;
            let ok = args_match(&exp.args, actual_args[idx]);
            explained.insert(
                key,
                Json::String(format!(
                    "Actual: {}, Expected: {}, Score: {}",
                    Value::Dict(actual_args[idx].clone()).repr(),
                    Value::Dict(exp.args.clone()).repr(),
                    py_float(if ok { 1.0 } else { 0.0 })
                )),
            );
            if ok {
                matched += 1;
                consumed[idx] = true;
                break;
            }
        }
    }
    let score = if strict {
        if matched == expected.len() { 1.0 } else { 0.0 }
    } else {
        ratio(matched, expected.len())
    };
    done(score, Json::Object(explained))
}

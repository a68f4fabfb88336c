//! UiPath `ToolCallArgsEvaluator` (`uipath-tool-call-args`).
//!
//! `subset` is accepted and ignored: in the reference both modes test "every
//! expected key is present with an equal value" (SEMANTICS §1.5).

use super::common::{
    Invalid, Matcher, expect_dict, expect_list, expect_str, field, flag, join, name_ids,
    write_attempt,
};
use super::kind::{Explanation, Judged, Kind, Layout};
use super::{
    CriteriaError, Explain, Outcome, justification, justification_with, ratio, result_message,
    uipath_alias,
};
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

/// Appends `ToolCall(name=…, args=…, id=…)` and returns where the args
/// repr lies in `out`, so each args repr is rendered once per evaluation.
fn repr_tool_call(
    name: &str,
    args: &Dict,
    id: Option<&str>,
    out: &mut String,
) -> std::ops::Range<usize> {
    out.push_str("ToolCall(name=");
    crate::pyvalue::repr::str_repr(name, out);
    out.push_str(", args=");
    let start = out.len();
    args.write_repr(out);
    let end = out.len();
    out.push_str(", id=");
    repr_opt(id, out);
    out.push(')');
    start..end
}

/// The list repr of `items`, and the range of each item's args repr in it.
fn repr_list<'a>(
    items: impl ExactSizeIterator<Item = (&'a str, &'a Dict, Option<&'a str>)>,
) -> (String, Vec<std::ops::Range<usize>>) {
    let mut ranges = Vec::with_capacity(items.len());
    let mut out = String::with_capacity(64 * items.len() + 2);
    out.push('[');
    for (i, (name, args, id)) in items.enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        ranges.push(repr_tool_call(name, args, id, &mut out));
    }
    out.push(']');
    (out, ranges)
}

/// Every expected key present in `actual` with a Python-equal value.
fn args_match(expected: &Dict, actual: &Dict) -> bool {
    expected
        .iter()
        .all(|(k, v)| actual.get(k).is_some_and(|a| a.py_eq(v)))
}

pub fn evaluate(
    calls: &[ToolCall],
    criteria: &ArgsCriteria,
    strict: bool,
    explain: Explain,
) -> Outcome {
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
    let reprs = || {
        let expected = repr_list(
            expected
                .iter()
                .map(|e| (e.name.as_str(), &e.args, e.id.as_deref())),
        );
        let actual = repr_list(
            calls
                .iter()
                .zip(&actual_args)
                .map(|(c, d)| (c.name.as_str(), *d, c.id.as_deref())),
        );
        (expected, actual)
    };
    let empty = match (expected.is_empty(), calls.is_empty()) {
        (true, true) => Some((1.0, "Both expected and actual tool calls are empty")),
        (true, false) | (false, true) => {
            Some((0.0, "Either expected or actual tool calls are empty"))
        }
        (false, false) => None,
    };
    if let Some((score, message)) = empty {
        return Outcome::ok(
            score,
            explain.details(|| {
                let ((expected_repr, _), (actual_repr, _)) = reprs();
                justification(
                    &expected_repr,
                    &actual_repr,
                    "explained_tool_calls_args",
                    &result_message(message),
                )
            }),
        );
    }
    let matcher = Matcher::new(calls);
    let (name_ids, names) = name_ids(calls);
    let groups = matcher.groups();
    // The reference's matching: for each expected call, the unconsumed calls
    // of its key in order until one has its arguments. `attempt` sees each
    // try (expected index, call index, the try's number for that call's
    // name, whether it matched); returns how many expected calls matched.
    let run = |attempt: &mut dyn FnMut(usize, usize, usize, bool)| {
        let mut consumed = vec![false; calls.len()];
        let mut attempts = vec![0usize; names];
        let mut matched = 0usize;
        for (e, exp) in expected.iter().enumerate() {
            let key = matcher.expected(&exp.name, exp.id.as_deref());
            for idx in groups.matching(key) {
                if consumed[idx] {
                    continue;
                }
                let n = &mut attempts[name_ids[idx] as usize];
                let ok = args_match(&exp.args, actual_args[idx]);
                attempt(e, idx, *n, ok);
                *n += 1;
                if ok {
                    matched += 1;
                    consumed[idx] = true;
                    break;
                }
            }
        }
        matched
    };
    let mut matched = 0usize;
    let details = match explain {
        Explain::No => {
            matched = run(&mut |_, _, _, _| {});
            super::OutcomeDetails::Unwritten
        }
        // The explained attempts are written straight into the
        // justification's text: keys are `name_n` with a counter per name,
        // so they never repeat.
        Explain::Yes => {
            let ((expected_repr, expected_ranges), (actual_repr, actual_ranges)) = reprs();
            justification_with(
                &expected_repr,
                &actual_repr,
                "explained_tool_calls_args",
                |out| {
                    out.push('{');
                    let mut first = true;
                    matched = run(&mut |e, idx, n, ok| {
                        write_attempt(
                            out,
                            first,
                            &calls[idx].name,
                            n,
                            actual_repr.get(actual_ranges[idx].clone()).unwrap_or(""),
                            expected_repr.get(expected_ranges[e].clone()).unwrap_or(""),
                            ok,
                        );
                        first = false;
                    });
                    out.push('}');
                },
            )
        }
    };
    let score = if strict {
        if matched == expected.len() { 1.0 } else { 0.0 }
    } else {
        ratio(matched, expected.len())
    };
    Outcome::ok(score, details)
}

/// The config: `strict`, and `subset`, which the reference accepts and
/// ignores (above).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ArgsConfig {
    pub strict: bool,
    pub subset: bool,
}

impl ArgsConfig {
    pub fn parse(config: &Dict, path: &str) -> Result<ArgsConfig, Invalid> {
        Ok(ArgsConfig {
            strict: flag(config, path, "strict")?,
            subset: flag(config, path, "subset")?,
        })
    }
}

/// The kind's declaration (`evaluator::kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Args;

impl Kind for Args {
    type Config = ArgsConfig;
    type Criteria = ArgsCriteria;
    const LAYOUT: Layout = Layout::CallArguments;
    const EXPLANATION: Explanation = Explanation::Details;

    fn id(self) -> &'static str {
        "uipath-tool-call-args"
    }
    fn alias(self) -> &'static str {
        uipath_alias(self.id())
    }
    fn default_name(self) -> &'static str {
        "ToolCallArgsEvaluator"
    }
    fn default_config(self) -> ArgsConfig {
        ArgsConfig::default()
    }
    fn parse_config(self, config: &Dict, path: &str) -> Result<ArgsConfig, Invalid> {
        ArgsConfig::parse(config, path)
    }
    fn parse_criteria(self, criteria: &Value) -> Result<ArgsCriteria, CriteriaError> {
        parse_criteria(criteria).map_err(|e| CriteriaError::Invalid(e, self.default_name()))
    }
    fn missing_criteria(self) -> CriteriaError {
        CriteriaError::Missing
    }
    fn judged(_: &ArgsConfig) -> Judged {
        Judged::No
    }
    fn reads_content(_: &ArgsConfig) -> Option<&'static str> {
        Some("arguments")
    }
    fn score(
        self,
        calls: &[ToolCall],
        config: &ArgsConfig,
        criteria: &ArgsCriteria,
        explain: Explain,
    ) -> Outcome {
        evaluate(calls, criteria, config.strict, explain)
    }
}

#[cfg(test)]
mod tests;

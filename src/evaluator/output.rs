//! UiPath `ToolCallOutputEvaluator` (`uipath-tool-call-output`).

use serde_json::{Map, Value as Json};

use super::args::{optional_id, repr_opt};
use super::common::{
    ExpectedKey, Invalid, Matcher, attempt_key, attempt_line, expect_dict, expect_list, expect_str,
    field, join, name_ids,
};
use super::{Outcome, justification, ratio, result_message};
use crate::extract::ToolCall;
use crate::pyvalue::Value;
use crate::pyvalue::repr::str_repr;

/// One expected output: `{"name", "output", "id"?}`; `output` must be a string.
#[derive(Debug, Clone)]
pub struct ExpectedOutput {
    pub name: String,
    pub output: String,
    pub id: Option<String>,
}

#[derive(Debug, Clone)]
pub struct OutputCriteria {
    pub outputs: Vec<ExpectedOutput>,
}

pub fn parse_criteria(v: &Value) -> Result<OutputCriteria, Invalid> {
    let d = expect_dict(v, "")?;
    let Some((list, which)) = field(d, "tool_outputs", "toolOutputs") else {
        return Err(Invalid::new("toolOutputs", "Field required"));
    };
    let path = if which == "camel" {
        "toolOutputs"
    } else {
        "tool_outputs"
    };
    let mut outputs = Vec::new();
    for (i, item) in expect_list(list, path)?.iter().enumerate() {
        let p = join(path, i);
        let item = expect_dict(item, &p)?;
        let required = |key: &str| match item.get_str(key) {
            Some(v) => expect_str(v, &join(&p, key)),
            None => Err(Invalid::new(join(&p, key), "Field required")),
        };
        let name = required("name")?;
        let output = required("output")?;
        outputs.push(ExpectedOutput {
            name,
            output,
            id: optional_id(item, &p)?,
        });
    }
    Ok(OutputCriteria { outputs })
}

fn repr_tool_output(name: &str, output: &str, id: Option<&str>, out: &mut String) {
    out.push_str("ToolOutput(name=");
    str_repr(name, out);
    out.push_str(", output=");
    str_repr(output, out);
    out.push_str(", id=");
    repr_opt(id, out);
    out.push(')');
}

fn repr_outputs<'a>(
    items: impl ExactSizeIterator<Item = (&'a str, &'a str, Option<&'a str>)>,
) -> String {
    let mut out = String::with_capacity(64 * items.len() + 2);
    out.push('[');
    for (i, (name, output, id)) in items.enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        repr_tool_output(name, output, id, &mut out);
    }
    out.push(']');
    out
}

pub fn evaluate(calls: &[ToolCall], criteria: &OutputCriteria, strict: bool) -> Outcome {
    let expected = &criteria.outputs;
    let expected_repr = repr_outputs(
        expected
            .iter()
            .map(|e| (e.name.as_str(), e.output.as_str(), e.id.as_deref())),
    );
    let actual_repr = repr_outputs(
        calls
            .iter()
            .map(|c| (c.name.as_str(), c.output.as_str(), c.id.as_deref())),
    );
    let done = |score: f64, explained: Json| {
        Outcome::ok(
            score,
            justification(
                expected_repr,
                actual_repr,
                "explained_tool_calls_outputs",
                explained,
            ),
        )
    };
    match (expected.is_empty(), calls.is_empty()) {
        (true, true) => {
            return done(
                1.0,
                result_message("Both expected and actual tool calls outputs are empty"),
            );
        }
        (true, false) | (false, true) => {
            return done(
                0.0,
                result_message("Either expected or actual tool calls outputs are empty"),
            );
        }
        (false, false) => {}
    }
    let matcher = Matcher::new(calls);
    let (name_ids, names) = name_ids(calls);
    let keys: Vec<ExpectedKey> = expected
        .iter()
        .map(|e| matcher.expected(&e.name, e.id.as_deref()))
        .collect();
    let mut consumed = vec![false; calls.len()];
    // A dry run counts the entries, so that the map is allocated once.
    let mut entries = 0usize;
    for (exp, &key) in expected.iter().zip(&keys) {
        for (idx, call_key) in matcher.calls.iter().enumerate() {
            if consumed[idx] || !call_key.matches(key) {
                continue;
            }
            entries += 1;
            if calls[idx].output == exp.output {
                consumed[idx] = true;
                break;
            }
            if strict {
                break;
            }
        }
    }
    consumed.fill(false);
    let mut attempts = vec![0usize; names];
    let mut explained = Map::with_capacity(entries);
    let mut matched = 0usize;
    for (exp, &key) in expected.iter().zip(&keys) {
        let mut found = false;
        for (idx, call_key) in matcher.calls.iter().enumerate() {
            if consumed[idx] || !call_key.matches(key) {
                continue;
            }
            let call = &calls[idx];
            let n = &mut attempts[name_ids[idx] as usize];
            let entry = attempt_key(&call.name, *n);
            *n += 1;
            let ok = call.output == exp.output;
            let line = Json::String(attempt_line(&call.output, &exp.output, ok));
            if ok {
                explained.insert(entry, line);
                matched += 1;
                consumed[idx] = true;
                found = true;
                break;
            }
            if strict {
                let mut only = Map::new();
                only.insert(entry, line);
                return done(0.0, Json::Object(only));
            }
            explained.insert(entry, line);
        }
        if strict && !found {
            return done(
                0.0,
                result_message(&format!(
                    "No matching actual tool call found for expected {}",
                    exp.name
                )),
            );
        }
    }
    let score = if strict {
        if matched == expected.len() { 1.0 } else { 0.0 }
    } else {
        ratio(matched, expected.len())
    };
    done(score, Json::Object(explained))
}

//! UiPath `ToolCallOutputEvaluator` (`uipath-tool-call-output`).

use serde_json::{Map, Value as Json};

use super::args::{optional_id, repr_opt};
use super::common::{
    ExpectedKey, Invalid, Matcher, attempt_key, attempt_line, expect_dict, expect_list, expect_str,
    field, join, name_ids, push_usize,
};
use super::{Outcome, OutcomeDetails, justification, ratio, result_message};
use crate::extract::ToolCall;
use crate::json_text;
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
    // The reprs are moved in by the early returns only.
    let done = |expected_repr: String, actual_repr: String, score: f64, explained: Json| {
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
                expected_repr,
                actual_repr,
                1.0,
                result_message("Both expected and actual tool calls outputs are empty"),
            );
        }
        (true, false) | (false, true) => {
            return done(
                expected_repr,
                actual_repr,
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
    let mut attempts = vec![0usize; names];
    // Each attempt's entry, `"name_n":"Actual: …, Expected: …, Score: 1.0"`,
    // from pieces escaped once: `"name_` and `":"Actual: output` per call,
    // `, Expected: output, Score: ` per expected output. When none match,
    // each call is tried against every expected output of its name (6,668
    // attempts for 200 calls).
    let mut escaped = String::new();
    let mut ranges = Vec::with_capacity(2 * calls.len() + expected.len());
    let mut piece = |before: &str, text: &str, after: &str| {
        let start = escaped.len();
        escaped.push_str(before);
        json_text::write_str_content(text, &mut escaped);
        escaped.push_str(after);
        ranges.push(start..escaped.len());
    };
    for c in calls {
        piece("\"", &c.name, "_");
        piece("\":\"Actual: ", &c.output, "");
    }
    for e in expected {
        piece(", Expected: ", &e.output, ", Score: ");
    }
    let part = |i: usize| {
        ranges
            .get(i)
            .and_then(|r| escaped.get(r.clone()))
            .unwrap_or("")
    };
    let (key_prefix, actual) = (|i: usize| part(2 * i), |i: usize| part(2 * i + 1));
    let expected_part = |i: usize| part(2 * calls.len() + i);
    // The justification is written as the JSON text `serde_json` would
    // write for it (see `OutcomeDetails`): expected, actual, then one
    // explained entry an attempt. Keys are `name_n` with a counter per name,
    // so they never repeat (the dict the reference builds has them all).
    let mut matched = 0usize;
    let mut failed: Option<Json> = None;
    let text = json_text::exact(|out| {
        out.push_str("{\"expected\":");
        json_text::write_str(&expected_repr, out);
        out.push_str(",\"actual\":");
        json_text::write_str(&actual_repr, out);
        out.push_str(",\"explained_tool_calls_outputs\":{");
        let mut first = true;
        for (e, (exp, &key)) in expected.iter().zip(&keys).enumerate() {
            let mut found = false;
            for (idx, call_key) in matcher.calls.iter().enumerate() {
                if consumed[idx] || !call_key.matches(key) {
                    continue;
                }
                let call = &calls[idx];
                let n = &mut attempts[name_ids[idx] as usize];
                let ok = call.output == exp.output;
                if strict && !ok {
                    let mut only = Map::new();
                    only.insert(
                        attempt_key(&call.name, *n),
                        Json::String(attempt_line(&call.output, &exp.output, ok)),
                    );
                    failed = Some(Json::Object(only));
                    return;
                }
                if !first {
                    out.push(',');
                }
                first = false;
                out.push_str(key_prefix(idx));
                push_usize(*n, out);
                out.push_str(actual(idx));
                out.push_str(expected_part(e));
                out.push_str(if ok { "1.0\"" } else { "0.0\"" });
                *n += 1;
                if ok {
                    matched += 1;
                    consumed[idx] = true;
                    found = true;
                    break;
                }
            }
            if strict && !found {
                failed = Some(result_message(&format!(
                    "No matching actual tool call found for expected {}",
                    exp.name
                )));
                return;
            }
        }
        out.push_str("}}");
    });
    if let Some(explained) = failed {
        return done(expected_repr, actual_repr, 0.0, explained);
    }
    let score = if strict {
        if matched == expected.len() { 1.0 } else { 0.0 }
    } else {
        ratio(matched, expected.len())
    };
    Outcome::ok(score, OutcomeDetails::Text(text))
}

//! UiPath `ToolCallOutputEvaluator` (`uipath-tool-call-output`).

use serde_json::{Map, Value as Json};

use super::args::{optional_id, repr_opt};
use super::common::{
    Invalid, Matcher, Strict, attempt_key, attempt_line, expect_dict, expect_list, expect_str,
    field, join, name_ids, push_usize, write_attempt,
};
use super::kind::{Explanation, Judged, Kind, Layout};
use super::{
    CriteriaError, Explain, Outcome, OutcomeDetails, justification, ratio, result_message,
    uipath_alias,
};
use crate::extract::ToolCall;
use crate::json_text;
use crate::pyvalue::repr::str_repr;
use crate::pyvalue::{Dict, Value};

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

pub fn evaluate(
    calls: &[ToolCall],
    criteria: &OutputCriteria,
    strict: bool,
    explain: Explain,
) -> Outcome {
    let expected = &criteria.outputs;
    let reprs = || {
        let expected = repr_outputs(
            expected
                .iter()
                .map(|e| (e.name.as_str(), e.output.as_str(), e.id.as_deref())),
        );
        let actual = repr_outputs(
            calls
                .iter()
                .map(|c| (c.name.as_str(), c.output.as_str(), c.id.as_deref())),
        );
        (expected, actual)
    };
    // For the early returns.
    let done = |score: f64, explained: &dyn Fn() -> Json| {
        Outcome::ok(
            score,
            explain.details(|| {
                let (expected_repr, actual_repr) = reprs();
                justification(
                    &expected_repr,
                    &actual_repr,
                    "explained_tool_calls_outputs",
                    &explained(),
                )
            }),
        )
    };
    match (expected.is_empty(), calls.is_empty()) {
        (true, true) => {
            return done(1.0, &|| {
                result_message("Both expected and actual tool calls outputs are empty")
            });
        }
        (true, false) | (false, true) => {
            return done(0.0, &|| {
                result_message("Either expected or actual tool calls outputs are empty")
            });
        }
        (false, false) => {}
    }
    let matcher = Matcher::new(calls);
    let (name_ids, names) = name_ids(calls);
    let groups = matcher.groups();
    // First the matching, as the reference does it: for each expected
    // output, the unconsumed calls it matches in call order, until one has
    // the same output. Every attempt is recorded; the text is written after
    // (`write_details`), since a worst case, where nothing matches, runs to
    // 6,668 attempts and over a megabyte for 200 calls.
    let mut consumed = vec![false; calls.len()];
    let mut tried = vec![0usize; names];
    let mut attempts: Vec<Attempt> = Vec::with_capacity(expected.len());
    let mut matched = 0usize;
    for (e, exp) in expected.iter().enumerate() {
        let key = matcher.expected(&exp.name, exp.id.as_deref());
        let mut found = false;
        for idx in groups.matching(key) {
            if consumed[idx] {
                continue;
            }
            let call = &calls[idx];
            let n = &mut tried[name_ids[idx] as usize];
            let ok = call.output == exp.output;
            if strict && !ok {
                let n = *n;
                return done(0.0, &|| {
                    let mut only = Map::new();
                    only.insert(
                        attempt_key(&call.name, n),
                        Json::String(attempt_line(&call.output, &exp.output, ok)),
                    );
                    Json::Object(only)
                });
            }
            attempts.push(Attempt {
                call: idx,
                expected: e,
                n: *n,
                ok,
            });
            *n += 1;
            if ok {
                matched += 1;
                consumed[idx] = true;
                found = true;
                break;
            }
        }
        if strict && !found {
            return done(0.0, &|| {
                result_message(&format!(
                    "No matching actual tool call found for expected {}",
                    exp.name
                ))
            });
        }
    }
    let score = if strict {
        if matched == expected.len() { 1.0 } else { 0.0 }
    } else {
        ratio(matched, expected.len())
    };
    let details = explain.details(|| {
        let (expected_repr, actual_repr) = reprs();
        OutcomeDetails::Text(write_details(
            calls,
            expected,
            &expected_repr,
            &actual_repr,
            &attempts,
        ))
    });
    Outcome::ok(score, details)
}

/// One attempt to match an expected output against a call.
struct Attempt {
    call: usize,
    expected: usize,
    /// The attempt's number among those of its call's name.
    n: usize,
    ok: bool,
}

/// The number of decimal digits of `n`.
fn decimal_len(mut n: usize) -> usize {
    let mut len = 1;
    while n >= 10 {
        n /= 10;
        len += 1;
    }
    len
}

/// The justification as the JSON text `serde_json` would write for it (see
/// `OutcomeDetails`): expected, actual, then one explained entry an
/// attempt, `"name_n":"Actual: …, Expected: …, Score: 1.0"`. Keys carry a
/// counter per name, so they never repeat (the dict the reference builds
/// has them all).
fn write_details(
    calls: &[ToolCall],
    expected: &[ExpectedOutput],
    expected_repr: &str,
    actual_repr: &str,
    attempts: &[Attempt],
) -> String {
    let head = [
        "{\"expected\":",
        ",\"actual\":",
        ",\"explained_tool_calls_outputs\":{",
    ];
    // Few attempts (one or two an expected output, the usual case): each
    // is written as it comes, through the thread's buffer. Many (an
    // expected output tried against many calls of its name) are copied
    // from pieces escaped once, into an allocation of the exact length.
    if attempts.len() <= calls.len() {
        return json_text::exact(|out| {
            out.push_str(head[0]);
            json_text::write_str(expected_repr, out);
            out.push_str(head[1]);
            json_text::write_str(actual_repr, out);
            out.push_str(head[2]);
            for (i, a) in attempts.iter().enumerate() {
                if let (Some(call), Some(exp)) = (calls.get(a.call), expected.get(a.expected)) {
                    write_attempt(
                        out,
                        i == 0,
                        &call.name,
                        a.n,
                        &call.output,
                        &exp.output,
                        a.ok,
                    );
                }
            }
            out.push_str("}}");
        });
    }
    // Entries are copied from pieces escaped once: `"name_` and
    // `":"Actual: output` per call, `, Expected: output, Score: ` per
    // expected output.
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
    let (mut expected_text, mut actual_text) = (String::new(), String::new());
    json_text::write_str(expected_repr, &mut expected_text);
    json_text::write_str(actual_repr, &mut actual_text);
    let pieces: Vec<&str> = ranges
        .iter()
        .map(|r| escaped.get(r.clone()).unwrap_or(""))
        .collect();
    let (call_pieces, expected_pieces) = pieces.split_at(2 * calls.len());
    // An attempt's pieces: the call's key prefix and actual output, the
    // expected output's part.
    let parts = |a: &Attempt| {
        (
            call_pieces.get(2 * a.call).copied().unwrap_or(""),
            call_pieces.get(2 * a.call + 1).copied().unwrap_or(""),
            expected_pieces.get(a.expected).copied().unwrap_or(""),
        )
    };
    // `"1.0"` closes each entry, a comma separates them, `}}` ends it all.
    let entries: usize = attempts
        .iter()
        .map(|a| {
            let (key, actual, expected) = parts(a);
            key.len() + actual.len() + expected.len()
        })
        .sum();
    let len = head.iter().map(|h| h.len()).sum::<usize>()
        + expected_text.len()
        + actual_text.len()
        + entries
        + attempts.iter().map(|a| decimal_len(a.n)).sum::<usize>()
        + 4 * attempts.len()
        + attempts.len().saturating_sub(1)
        + 2;
    let mut out = String::with_capacity(len);
    out.push_str(head[0]);
    out.push_str(&expected_text);
    out.push_str(head[1]);
    out.push_str(&actual_text);
    out.push_str(head[2]);
    for (i, a) in attempts.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let (key, actual, expected) = parts(a);
        out.push_str(key);
        push_usize(a.n, &mut out);
        out.push_str(actual);
        out.push_str(expected);
        out.push_str(if a.ok { "1.0\"" } else { "0.0\"" });
    }
    out.push_str("}}");
    debug_assert_eq!(out.len(), len, "the details' length was computed exactly");
    out
}

/// The kind's declaration (`evaluator::kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Output;

impl Kind for Output {
    type Config = Strict;
    type Criteria = OutputCriteria;
    const LAYOUT: Layout = Layout::CallOutputs;
    const EXPLANATION: Explanation = Explanation::Details;

    fn id(self) -> &'static str {
        "uipath-tool-call-output"
    }
    fn alias(self) -> &'static str {
        uipath_alias(self.id())
    }
    fn default_name(self) -> &'static str {
        "ToolCallOutputEvaluator"
    }
    fn default_config(self) -> Strict {
        Strict::default()
    }
    fn parse_config(self, config: &Dict, path: &str) -> Result<Strict, Invalid> {
        Strict::parse(config, path)
    }
    fn parse_criteria(self, criteria: &Value) -> Result<OutputCriteria, CriteriaError> {
        parse_criteria(criteria).map_err(|e| CriteriaError::Invalid(e, self.default_name()))
    }
    fn missing_criteria(self) -> CriteriaError {
        CriteriaError::Missing
    }
    fn judged(_: &Strict) -> Judged {
        Judged::No
    }
    fn reads_content(_: &Strict) -> Option<&'static str> {
        Some("outputs")
    }
    fn score(
        self,
        calls: &[ToolCall],
        config: &Strict,
        criteria: &OutputCriteria,
        explain: Explain,
    ) -> Outcome {
        evaluate(calls, criteria, config.strict, explain)
    }
}

#[cfg(test)]
mod tests;

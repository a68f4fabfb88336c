//! UiPath `ToolCallOrderEvaluator` (`uipath-tool-call-order`).

use super::common::{
    CallKey, ExpectedKey, Invalid, Matcher, Strict, call_key, expect_dict, expect_list, expect_str,
    field, join,
};
use super::kind::{Explanation, Judged, Kind, Layout};
use super::{
    CriteriaError, Explain, Outcome, justification_with, ratio, repr_str_list, uipath_alias,
};
use crate::extract::ToolCall;
use crate::json_text;
use crate::pyvalue::{Dict, Value};

/// `tool_calls_order`: the expected sequence of names (or ids). May be empty.
#[derive(Debug, Clone)]
pub struct OrderCriteria {
    pub order: Vec<String>,
}

pub fn parse_criteria(v: &Value) -> Result<OrderCriteria, Invalid> {
    let d = expect_dict(v, "")?;
    let Some((list, which)) = field(d, "tool_calls_order", "toolCallsOrder") else {
        return Err(Invalid::new("toolCallsOrder", "Field required"));
    };
    let path = if which == "camel" {
        "toolCallsOrder"
    } else {
        "tool_calls_order"
    };
    let order = expect_list(list, path)?
        .iter()
        .enumerate()
        .map(|(i, v)| expect_str(v, &join(path, i)))
        .collect::<Result<_, _>>()?;
    Ok(OrderCriteria { order })
}

pub fn evaluate(
    calls: &[ToolCall],
    criteria: &OrderCriteria,
    strict: bool,
    explain: Explain,
) -> Outcome {
    let expected = &criteria.order;
    let details = |lcs: &[&str]| {
        explain.details(|| {
            justification_with(
                &repr_str_list(expected.iter().map(String::as_str)),
                &repr_str_list(calls.iter().map(call_key)),
                "lcs",
                |out| {
                    out.push('[');
                    for (i, s) in lcs.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        json_text::write_str(s, out);
                    }
                    out.push(']');
                },
            )
        })
    };
    match (expected.is_empty(), calls.is_empty()) {
        (true, true) => return Outcome::ok(1.0, details(&[])),
        (true, false) | (false, true) => return Outcome::ok(0.0, details(&[])),
        (false, false) => {}
    }
    // Each call's and each expected key's side of the match, computed once.
    let matcher = Matcher::new(calls);
    let keys: Vec<ExpectedKey> = expected.iter().map(|e| matcher.expected(e, None)).collect();
    if strict {
        let all = expected.len() == calls.len()
            && matcher.calls.iter().zip(&keys).all(|(c, e)| c.matches(*e));
        if all {
            let lcs: Vec<&str> = expected.iter().map(String::as_str).collect();
            return Outcome::ok(1.0, details(&lcs));
        }
        return Outcome::ok(0.0, details(&[]));
    }
    let lcs = lcs(&matcher.calls, &keys, expected);
    Outcome::ok(ratio(lcs.len(), expected.len()), details(&lcs))
}

/// The reference's LCS: rows are actual calls, columns expected keys; the
/// walk back prefers stepping left (dropping the expected key) on a tie.
fn lcs<'a>(calls: &[CallKey], keys: &[ExpectedKey], expected: &'a [String]) -> Vec<&'a str> {
    let (n, m) = (calls.len(), keys.len());
    let w = m + 1;
    // The expected keys a call compares against: ids for a call with an
    // id, sanitised names otherwise (`CallKey::matches`).
    let raw: Vec<u32> = keys.iter().map(|k| k.raw).collect();
    let san: Vec<u32> = keys.iter().map(|k| k.san).collect();
    let column = |c: CallKey| if c.has_id { &raw } else { &san };
    let mut dp = vec![0u32; (n + 1) * w];
    for (i, &c) in calls.iter().enumerate() {
        let col = column(c);
        let (prev, cur) = dp.split_at_mut((i + 1) * w);
        let prev = &prev[i * w..];
        let cur = &mut cur[..w];
        for j in 1..=m {
            cur[j] = if col[j - 1] == c.key {
                prev[j - 1] + 1
            } else {
                prev[j].max(cur[j - 1])
            };
        }
    }
    let mut out = Vec::new();
    let (mut i, mut j) = (n, m);
    while i > 0 && j > 0 {
        let c = calls[i - 1];
        if column(c)[j - 1] == c.key {
            out.push(expected[j - 1].as_str());
            i -= 1;
            j -= 1;
        } else if dp[(i - 1) * w + j] > dp[i * w + j - 1] {
            i -= 1;
        } else {
            j -= 1;
        }
    }
    out.reverse();
    out
}

/// The kind's declaration (`evaluator::kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Order;

impl Kind for Order {
    type Config = Strict;
    type Criteria = OrderCriteria;
    const LAYOUT: Layout = Layout::ToolSequence;
    const EXPLANATION: Explanation = Explanation::Details;

    fn id(self) -> &'static str {
        "uipath-tool-call-order"
    }
    fn alias(self) -> &'static str {
        uipath_alias(self.id())
    }
    fn default_name(self) -> &'static str {
        "ToolCallOrderEvaluator"
    }
    fn default_config(self) -> Strict {
        Strict::default()
    }
    fn parse_config(self, config: &Dict, path: &str) -> Result<Strict, Invalid> {
        Strict::parse(config, path)
    }
    fn parse_criteria(self, criteria: &Value) -> Result<OrderCriteria, CriteriaError> {
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
        criteria: &OrderCriteria,
        explain: Explain,
    ) -> Outcome {
        evaluate(calls, criteria, config.strict, explain)
    }
}

#[cfg(test)]
mod tests;

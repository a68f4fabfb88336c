//! Loading `../shared/conformance/cases.jsonl` and judging results against it
//! with the pass criteria of `conformance/README.md`.

use std::path::PathBuf;

use serde_json::Value as Json;
use toolscore::evaluator::{Outcome, Status};
use toolscore::pyvalue::{self, Value};
use toolscore::span::{AttrValue, Span, SpanId, TraceId};

pub fn cases_path() -> PathBuf {
    if let Ok(p) = std::env::var("TOOLSCORE_CONFORMANCE_CASES") {
        return PathBuf::from(p);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/cases.jsonl")
}

/// One conformance case: parsed twice, as Python values (criteria, spans)
/// and as plain JSON (expected results).
pub struct Case {
    pub id: String,
    pub evaluator_type: String,
    pub config: Value,
    pub criteria: Value,
    pub spans_json: Json,
    pub py: Value,
    pub expected: Json,
    pub line: String,
}

pub fn load_cases() -> Vec<Case> {
    load_cases_from(&cases_path())
}

/// The cases of a `cases.jsonl` file (the LLM cases share the format).
pub fn load_cases_from(path: &std::path::Path) -> Vec<Case> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "conformance cases not found at {} ({e}); the repository expects ../shared beside it \
             or TOOLSCORE_CONFORMANCE_CASES",
            path.display()
        )
    });
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let json: Json = serde_json::from_str(line).unwrap();
            let py = pyvalue::json::loads(line).unwrap();
            let d = py.as_dict().unwrap();
            let ev = d.get_str("evaluator").unwrap().as_dict().unwrap();
            Case {
                id: json["id"].as_str().unwrap().to_owned(),
                evaluator_type: json["evaluator"]["type"].as_str().unwrap().to_owned(),
                config: ev.get_str("config").cloned().unwrap_or(Value::None),
                criteria: d.get_str("criteria").cloned().unwrap_or(Value::None),
                spans_json: json["spans"].clone(),
                expected: json["expected"].clone(),
                py: py.clone(),
                line: line.to_owned(),
            }
        })
        .collect()
}

fn attr(v: &Value) -> AttrValue {
    match v {
        Value::Str(s) => AttrValue::Str(s.clone()),
        Value::Bool(b) => AttrValue::Bool(*b),
        Value::Int(pyvalue::Int::Small(i)) => AttrValue::Int(*i),
        Value::Float(f) => AttrValue::Double(*f),
        Value::None => AttrValue::Empty,
        other => panic!("unexpected attribute value {other:?}"),
    }
}

/// The case's spans in the internal model, listed in the case's order.
pub fn spans(case: &Case) -> Vec<Span> {
    let d = case.py.as_dict().unwrap();
    let Value::List(items) = d.get_str("spans").unwrap() else {
        panic!("spans")
    };
    items
        .iter()
        .map(|s| {
            let s = s.as_dict().unwrap();
            let get = |k: &str| s.get_str(k).unwrap();
            let u64_of = |k: &str| match get(k) {
                Value::Int(pyvalue::Int::Small(i)) => *i as u64,
                other => panic!("{k}: {other:?}"),
            };
            Span {
                trace_id: TraceId::parse_hex(get("trace_id").as_str().unwrap()).unwrap(),
                span_id: SpanId::parse_hex(get("span_id").as_str().unwrap()).unwrap(),
                parent_span_id: get("parent_span_id")
                    .as_str()
                    .map(|p| SpanId::parse_hex(p).unwrap()),
                name: get("name").as_str().unwrap().to_owned(),
                start_time_unix_nano: u64_of("start_time_unix_nano"),
                end_time_unix_nano: u64_of("end_time_unix_nano"),
                attributes: get("attributes")
                    .as_dict()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.as_str().unwrap().into(), attr(v)))
                    .collect(),
                service_name: None,
                scope_name: None,
            }
        })
        .collect()
}

/// The toolscore evaluator type for a case's evaluator type (an alias).
pub fn evaluator_type(case: &Case) -> toolscore::evaluator::EvaluatorType {
    toolscore::evaluator::EvaluatorType::parse(&case.evaluator_type).unwrap()
}

/// The pass criteria of `conformance/README.md`; `Err` says what differed.
pub fn judge(case: &Case, got: &Outcome) -> Result<(), String> {
    judge_parts(
        case,
        got.status == Status::Error,
        got.score,
        got.score_is_int,
        &got.details.to_json(),
    )
}

/// The pass criteria on result parts (shared with the HTTP API test).
/// [`judge_parts`] of a score as the HTTP API shows it.
pub fn judge_json(case: &Case, score: &Json) -> Result<(), String> {
    let is_error = score["status"] == "error";
    judge_parts(
        case,
        is_error,
        score["score"].as_f64(),
        score["score"].is_i64() || score["score"].is_u64(),
        &score["details"],
    )
}

pub fn judge_parts(
    case: &Case,
    is_error: bool,
    score: Option<f64>,
    score_is_int: bool,
    details: &Json,
) -> Result<(), String> {
    let exp = &case.expected;
    let exp_error = exp["score"].is_null() || exp["score_type"] == "error";
    if exp_error {
        if !is_error {
            return Err(format!(
                "expected an error ({}), got score {score:?}",
                exp["error"]
            ));
        }
        if exp["score_type"] == "error" && details != &exp["details"] {
            return Err(format!(
                "error details: expected {}, got {details}",
                exp["details"]
            ));
        }
        return Ok(());
    }
    if is_error {
        return Err(format!(
            "expected score {}, got an error: {details}",
            exp["score"]
        ));
    }
    let want = exp["score"].as_f64().unwrap();
    let Some(score) = score else {
        return Err("no score".into());
    };
    if (score - want).abs() > 1e-12 {
        return Err(format!("score: expected {want}, got {score}"));
    }
    if case.evaluator_type == "tool-correctness" {
        let ed = &exp["details"];
        if ed["score_is_int"].as_bool().unwrap() != score_is_int {
            return Err(format!("score_is_int: expected {}", ed["score_is_int"]));
        }
        for k in ["success", "threshold"] {
            if ed[k] != details[k] {
                return Err(format!("{k}: expected {}, got {}", ed[k], details[k]));
            }
        }
        let (a, b) = (
            ed["reason"].as_str().unwrap(),
            details["reason"].as_str().unwrap_or(""),
        );
        if canonical_reason(a) != canonical_reason(b) {
            return Err(format!("reason:\nexpected {a:?}\n     got {b:?}"));
        }
        return Ok(());
    }
    // As text, so that key order counts too (`Map`'s equality ignores it).
    if serde_json::to_string(details).ok() != serde_json::to_string(&exp["details"]).ok() {
        return Err(format!(
            "details:\nexpected {}\n     got {details}",
            exp["details"]
        ));
    }
    Ok(())
}

/// deepeval's reason with the set-derived lists sorted, so that lists
/// Python built from sets compare as unordered.
pub fn canonical_reason(reason: &str) -> String {
    let mut out = String::new();
    let mut rest = reason;
    while let Some(pos) = [
        "missing tools [",
        "out-of-order tools [",
        "tool type mismatches [",
    ]
    .iter()
    .filter_map(|m| rest.find(m).map(|p| (p, m.len())))
    .min()
    {
        let (p, len) = pos;
        out.push_str(&rest[..p + len - 1]);
        let list = &rest[p + len - 1..];
        let end = matching_bracket(list).unwrap_or(list.len() - 1);
        let mut items = split_top_level(&list[1..end]);
        items.sort();
        out.push('[');
        out.push_str(&items.join(", "));
        out.push(']');
        rest = &list[end + 1..];
    }
    out.push_str(rest);
    out
}

fn matching_bracket(s: &str) -> Option<usize> {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '[' | '(' | '{' => depth += 1,
            ']' | ')' | '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn split_top_level(s: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '[' | '(' | '{' => depth += 1,
            ']' | ')' | '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(s[start..i].trim().to_owned());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !s[start..].trim().is_empty() {
        items.push(s[start..].trim().to_owned());
    }
    items
}

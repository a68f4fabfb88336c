//! Reading the UiPath evaluators' details: their Python reprs as values,
//! and which actual call each expected one was compared with, the
//! reference implementations' way.

use crate::evaluator::common::sanitize;
use crate::pyvalue::{Dict, Value};

/// A value from a Python repr in the details. Tool calls and outputs are
/// written as `ToolCall(name=…, args=…, id=…)`, which is not a literal:
/// those calls are rewritten to dicts first.
pub fn py_repr(text: &str) -> Option<Value> {
    crate::pyvalue::literal::literal_eval(&calls_to_dicts(text)).ok()
}

/// Rewrites `Name(k=v, …)` to `{'k': v, …}` outside string literals.
pub fn calls_to_dicts(text: &str) -> String {
    #[derive(PartialEq)]
    enum Frame {
        Call,
        Other,
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 16);
    let mut frames: Vec<Frame> = Vec::new();
    let mut i = 0;
    let mut prev_word = false;
    while let Some(&c) = chars.get(i) {
        if c == '\'' || c == '"' {
            // A string literal, copied whole (escapes included).
            out.push(c);
            i += 1;
            while let Some(&d) = chars.get(i) {
                out.push(d);
                i += 1;
                if d == '\\' {
                    if let Some(&e) = chars.get(i) {
                        out.push(e);
                        i += 1;
                    }
                } else if d == c {
                    break;
                }
            }
            prev_word = false;
            continue;
        }
        if (c.is_alphabetic() || c == '_') && !prev_word {
            let start = i;
            while chars
                .get(i)
                .is_some_and(|d| d.is_alphanumeric() || *d == '_')
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            match chars.get(i) {
                Some('(') if word.chars().next().is_some_and(char::is_uppercase) => {
                    out.push('{');
                    frames.push(Frame::Call);
                    i += 1;
                }
                Some('=')
                    if chars.get(i + 1) != Some(&'=') && frames.last() == Some(&Frame::Call) =>
                {
                    out.push('\'');
                    out.push_str(&word);
                    out.push_str("': ");
                    i += 1;
                }
                _ => {
                    out.push_str(&word);
                    prev_word = true;
                }
            }
            continue;
        }
        match c {
            '(' | '[' | '{' => frames.push(Frame::Other),
            ')' | ']' | '}' => {
                let closes_call = frames.pop() == Some(Frame::Call);
                if closes_call {
                    out.push('}');
                    i += 1;
                    prev_word = false;
                    continue;
                }
            }
            _ => {}
        }
        prev_word = c.is_alphanumeric() || c == '.';
        out.push(c);
        i += 1;
    }
    out
}

/// Which items of `items` the subsequence `sub` takes, leftmost first.
pub fn embed(items: &[String], sub: &[String]) -> Vec<bool> {
    embed_by(items, sub, |_, a, b| a == b)
}

/// [`embed`] with `same(index, item, sub_item)` deciding a match.
pub fn embed_by(
    items: &[String],
    sub: &[String],
    same: impl Fn(usize, &str, &str) -> bool,
) -> Vec<bool> {
    let mut next = sub.iter().peekable();
    items
        .iter()
        .enumerate()
        .map(|(i, it)| {
            let take = next.peek().is_some_and(|s| same(i, it, s));
            if take {
                next.next();
            }
            take
        })
        .collect()
}

/// One side of a comparison: a tool call as an evaluator saw it.
#[derive(Debug, Clone)]
pub struct Call {
    pub name: String,
    pub id: Option<String>,
    pub args: Option<Dict>,
    pub output: Option<String>,
}

/// The calls of a repr'd list (`[{'name': …, 'args': …}, …]`); `None`
/// when it is not one.
pub fn calls_of(v: &Value) -> Option<Vec<Call>> {
    let Value::List(items) = v else { return None };
    items
        .iter()
        .map(|it| {
            let d = it.as_dict()?;
            Some(Call {
                name: d.get_str("name")?.as_str()?.to_owned(),
                id: d.get_str("id").and_then(Value::as_str).map(str::to_owned),
                args: d.get_str("args").and_then(Value::as_dict).cloned(),
                output: d.get_str("output").map(|o| match o {
                    Value::Str(s) => s.clone(),
                    other => other.py_str(),
                }),
            })
        })
        .collect()
}

/// The reference's match of an actual call to an expected one: a call
/// with an id by id (the expected id, else its name), else by sanitised
/// name.
pub fn key_matches(actual: &Call, expected: &Call) -> bool {
    match &actual.id {
        Some(id) => expected.id.as_deref().unwrap_or(&expected.name) == id,
        None => sanitize(&expected.name) == sanitize(&actual.name),
    }
}

/// What became of one expected call, read from the evaluator's entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// `call` (an index into the actual calls) agreed, after the calls
    /// in `before` did not.
    Matched { call: usize, before: Vec<usize> },
    /// These calls were compared and none agreed.
    Rejected(Vec<usize>),
    /// No unconsumed call has its name (or id).
    NoCall,
    /// The evaluator stopped before reaching it.
    NotReached,
}

/// The evaluator's attempts, replayed from its own explained entries
/// (`name_n` → `"…, Score: x"`, `n` counting attempts per call name):
/// each expected call tries, in call order, the unconsumed calls that
/// match it ([`key_matches`]) until one's entry scores 1. Nothing is
/// compared here: the verdicts are the evaluator's. `None` when some
/// entry is not accounted for (strict mode, which writes only the
/// failing attempt after the ones that passed): the page then lists the
/// entries as they are.
pub fn replay(
    expected: &[Call],
    actual: &[Call],
    explained: &serde_json::Map<String, serde_json::Value>,
) -> Option<Vec<Fate>> {
    let mut consumed = vec![false; actual.len()];
    let mut tried: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut used = 0usize;
    let mut stopped = false;
    let fates = expected
        .iter()
        .map(|e| {
            if stopped {
                return Fate::NotReached;
            }
            let mut rejected = Vec::new();
            for (i, a) in actual.iter().enumerate() {
                if consumed[i] || !key_matches(a, e) {
                    continue;
                }
                let n = tried.entry(a.name.as_str()).or_insert(0);
                let key = format!("{}_{n}", a.name);
                let Some(ok) = explained
                    .get(&key)
                    .and_then(serde_json::Value::as_str)
                    .and_then(explained_ok)
                else {
                    stopped = true;
                    return if rejected.is_empty() {
                        Fate::NotReached
                    } else {
                        Fate::Rejected(rejected)
                    };
                };
                *n += 1;
                used += 1;
                if ok {
                    consumed[i] = true;
                    return Fate::Matched {
                        call: i,
                        before: rejected,
                    };
                }
                rejected.push(i);
            }
            if rejected.is_empty() {
                Fate::NoCall
            } else {
                Fate::Rejected(rejected)
            }
        })
        .collect();
    let entries = explained.keys().filter(|k| *k != "_result").count();
    (used == entries).then_some(fates)
}

/// `"…, Score: 1.0"` in an explained entry: whether it matched.
pub fn explained_ok(line: &str) -> Option<bool> {
    let score = line.rsplit_once("Score: ")?.1;
    score.trim().parse::<f64>().ok().map(|v| v >= 1.0)
}

//! How deepeval writes tools and values into its reasons and logs: the
//! multi-line `ToolCall.__repr__`, `json.dumps(indent=4)` of a dict,
//! Python's `str.splitlines()` and the metric's `verbose_logs`.

use super::{DeepevalTool, ExpectedTools, Tool};
use crate::extract::ToolCall;
use crate::pyvalue::{Dict, Value};

/// deepeval's multi-line `ToolCall.__repr__`.
pub(super) fn tool_repr(t: &Tool<'_>) -> String {
    let mut fields = Vec::new();
    if !t.name.is_empty() {
        fields.push(format!("name=\"{}\"", t.name));
    }
    fields.push("type=\"FUNCTION\"".to_owned());
    if let Some(d) = t.description.filter(|d| !d.is_empty()) {
        fields.push(format!("description=\"{d}\""));
    }
    if let Some(r) = t.reasoning.filter(|r| !r.is_empty()) {
        fields.push(format!("reasoning=\"{r}\""));
    }
    if let Some(p) = t.input_parameters.filter(|p| !p.is_empty()) {
        fields.push(indent_field("input_parameters", &json_dumps_dict(p)));
    }
    match t.output {
        Some(Value::Dict(d)) => fields.push(indent_field("output", &json_dumps_dict(d))),
        Some(v) => fields.push(format!("output={}", v.repr())),
        None => {}
    }
    format!("ToolCall(\n    {}\n)", fields.join(",\n    "))
}

fn indent_field(name: &str, formatted: &str) -> String {
    let mut lines = py_splitlines(formatted).into_iter();
    let first = lines.next().unwrap_or("");
    let rest: Vec<String> = lines.map(|l| format!("    {l}")).collect();
    format!("{name}={first}\n{}", rest.join("\n"))
}

/// Python's `json.dumps(d, indent=4, ensure_ascii=False)` for a JSON-like dict.
fn json_dumps_dict(d: &Dict) -> String {
    let mut out = String::new();
    dump_dict(d, 0, false, &mut out);
    out
}

/// Python's `json.dumps(v, indent=4, ensure_ascii=…)` for a JSON-like value.
pub(crate) fn json_dumps_indented(v: &Value, ensure_ascii: bool) -> String {
    let mut out = String::new();
    dump(v, 0, ensure_ascii, &mut out);
    out
}

/// A new line indented to `d` levels of `json.dumps(indent=4)`.
pub(crate) fn pad(out: &mut String, d: usize) {
    out.push('\n');
    out.extend(std::iter::repeat_n(' ', 4 * d));
}

fn dump(v: &Value, depth: usize, ascii: bool, out: &mut String) {
    match v {
        Value::None => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Float(f) if f.is_nan() => out.push_str("NaN"),
        Value::Float(f) if f.is_infinite() => {
            out.push_str(if *f > 0.0 { "Infinity" } else { "-Infinity" })
        }
        Value::Int(_) | Value::Float(_) => v.write_repr(out),
        Value::Str(s) => py_json_str(s, ascii, out),
        Value::List(items) | Value::Tuple(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                pad(out, depth + 1);
                dump(item, depth + 1, ascii, out);
            }
            pad(out, depth);
            out.push(']');
        }
        Value::Dict(d) => dump_dict(d, depth, ascii, out),
        // Not JSON-serialisable in Python; only reachable from Python-literal args.
        other => py_json_str(&other.repr(), ascii, out),
    }
}

fn dump_dict(d: &Dict, depth: usize, ascii: bool, out: &mut String) {
    if d.is_empty() {
        out.push_str("{}");
        return;
    }
    out.push('{');
    for (i, (k, val)) in d.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        pad(out, depth + 1);
        match k {
            Value::Str(s) => py_json_str(s, ascii, out),
            other => {
                let mut key = String::new();
                dump(other, 0, ascii, &mut key);
                py_json_str(&key, ascii, out);
            }
        }
        out.push_str(": ");
        dump(val, depth + 1, ascii, out);
    }
    pad(out, depth);
    out.push('}');
}

/// A string as Python's `json.dumps` writes it: `ensure_ascii` escapes
/// everything outside printable ASCII (as UTF-16 units), else only the
/// quote, the backslash and control characters.
pub(crate) fn py_json_str(s: &str, ensure_ascii: bool, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            c if ensure_ascii || (c as u32) < 0x20 => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `measure()`'s `verbose_logs`: the expected, called and available tools
/// as deepeval's `ToolCall.__repr__` writes them (indented by 4), then the
/// selection score and reason. `calls` must have passed [`tool_calling`].
pub fn verbose_logs(
    calls: &[ToolCall],
    criteria: &ExpectedTools,
    available: Option<&[DeepevalTool]>,
    selection_score: f64,
    selection_reason: &str,
) -> String {
    fn listing<'a>(title: &str, tools: impl Iterator<Item = Tool<'a>>) -> String {
        let items: Vec<String> = tools
            .map(|t| {
                let repr = tool_repr(&t);
                let lines: Vec<String> = py_splitlines(&repr)
                    .into_iter()
                    .map(|l| format!("    {l}"))
                    .collect();
                lines.join("\n")
            })
            .collect();
        format!("{title}:\n[\n{}\n]", items.join(",\n"))
    }
    let expected = listing("Expected Tools", criteria.tools.iter().map(Tool::expected));
    let called = listing(
        "Tools Called",
        calls.iter().filter_map(|c| Tool::called(c).ok()),
    );
    let available = match available {
        Some(tools) if !tools.is_empty() => {
            listing("Available Tools", tools.iter().map(Tool::expected))
        }
        _ => "Available Tools: []".to_owned(),
    };
    let mut score = String::new();
    crate::pyvalue::repr::float_repr(selection_score, &mut score);
    format!(
        "{expected} \n \n{called} \n \n{available} \n \nTool Selection Score: {score} \n \nTool Selection Reason: {selection_reason}"
    )
}

/// Python's `str.splitlines()`: every Unicode line boundary, no trailing
/// empty line.
pub fn py_splitlines(s: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let boundary = matches!(
            c,
            '\n' | '\r'
                | '\u{b}'
                | '\u{c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if !boundary {
            continue;
        }
        lines.push(&s[start..i]);
        let mut end = i + c.len_utf8();
        if c == '\r'
            && let Some(&(j, '\n')) = chars.peek()
        {
            chars.next();
            end = j + 1;
        }
        start = end;
    }
    if start < s.len() {
        lines.push(&s[start..]);
    }
    lines
}

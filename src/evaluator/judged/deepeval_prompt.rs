//! The tool-selection prompt deepeval 4.3.1 sends, and its message content.
//!
//! The prompt is `templates/metrics/templates.json` →
//! `ToolCorrectnessMetric.get_tool_selection_score` rendered by Jinja2
//! (no autoescape, the template's final newline dropped); the tool lists are
//! `print_tools_called` (`metrics/utils/verbose.py`).

use serde_json::{Value as Json, json};

use crate::evaluator::tool_correctness::DeepevalTool;
use crate::evaluator::tool_correctness::json_dumps_indented;
use crate::pyvalue::{Dict, Value};

/// The template up to its first placeholder (`{{ user_input }}`), verbatim.
const PROMPT_HEAD: &str = r#"You are an expert evaluator assessing the **Tool Selection** quality of an AI agent.

You are given:
- The **user input** that defines the user's goal / task.
- A list of **available tools**, each with a name and description.
- A list of **tool calls made** by the agent during execution, including tool name and parameters.

Your job is to assign a **Tool Selection score** from 0.0 to 1.0 based on how appropriate and well-matched the agent's chosen tools were to the task's requirements.

---

DEFINITION:

Tool Selection evaluates how suitable the agent's tool choices were in addressing the task and sub-tasks.

This metric does **not** consider:
- How well the tools were used (execution quality)
- Whether the agent adhered to a plan
- Whether the output was correct or efficient

It only assesses whether the **right tools** were selected, based on their stated descriptions and the demands of the task.

---

INSTRUCTIONS:

Step 1: Read the **user task** to understand what needed to be accomplished.

Step 2: Examine the **available tools** and their descriptions to understand the intended purpose of each.

Step 3: Review the **tool calls made by the agent**:
- Were the selected tools well-aligned with the task?
- Were any obviously better-suited tools ignored?
- Were any tools misapplied or used unnecessarily?

Step 4: Identify selection issues:
- **Correct Selection**: Tool(s) chosen directly and appropriately matched the subtask.
- **Over-selection**: More tools were selected than necessary, despite availability of a simpler or more direct option.
- **Under-selection**: Key tools that were well-suited were omitted.
- **Mis-selection**: Tools were chosen that were poorly matched to their purpose or the subtask.

---

SCORING GUIDE:

- **1.0** → All selected tools were appropriate and necessary. No better-suited tools were omitted.
- **0.75** → Tool choices were mostly appropriate, with minor omissions or unnecessary use.
- **0.5** → Mixed tool selection. Some useful tools ignored or some inappropriate ones used.
- **0.25** → Poor tool selection. Better alternatives were available and ignored.
- **0.0** → Tool selection was clearly misaligned with task requirements.

---

OUTPUT FORMAT:

Return a valid JSON object with this exact structure:
{
  "score": float between 0.0 and 1.0,
  "reason": "1-3 concise, factual sentences explaining the score. Reference specific tool names and descriptions when relevant."
}

Do not include any additional commentary or output outside the JSON object.

---

USER INPUT:
"#;

/// The rendered prompt.
pub fn prompt(user_input: &str, available: &[DeepevalTool], called: &[DeepevalTool]) -> String {
    format!(
        "{PROMPT_HEAD}{user_input}\n\nALL AVAILABLE TOOLS:\n{}\n\nTOOL CALLS MADE BY AGENT:\n{}\n\nJSON:",
        print_tools_called(available),
        print_tools_called(called)
    )
}

/// `print_tools_called`: `""` for no tools, else each tool as
/// `json.dumps(make_json_serializable(tool), indent=4)` with every line
/// indented by two spaces, in a bracketed list.
pub fn print_tools_called(tools: &[DeepevalTool]) -> String {
    if tools.is_empty() {
        return String::new();
    }
    let items: Vec<String> = tools
        .iter()
        .map(|t| {
            let dumped = json_dumps_indented(&serializable_tool(t), true);
            // ensure_ascii leaves no line boundary but the indent's `\n`.
            dumped
                .split('\n')
                .map(|l| format!("  {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    format!("[\n{}\n]", items.join(",\n"))
}

/// The `ToolCall` model's fields in declaration order, `type` as its
/// value, as `make_json_serializable` leaves them.
fn serializable_tool(t: &DeepevalTool) -> Value {
    let opt_str = |s: &Option<String>| s.as_ref().map_or(Value::None, |s| Value::Str(strip_nul(s)));
    let mut d = Dict::new();
    d.insert_str("name", Value::Str(strip_nul(&t.name)));
    d.insert_str("type", Value::Str("FUNCTION".into()));
    d.insert_str("description", opt_str(&t.description));
    d.insert_str("reasoning", opt_str(&t.reasoning));
    d.insert_str(
        "output",
        t.output.as_ref().map_or(Value::None, serializable),
    );
    d.insert_str(
        "input_parameters",
        t.input_parameters
            .as_ref()
            .map_or(Value::None, serializable_dict),
    );
    Value::Dict(d)
}

fn strip_nul(s: &str) -> String {
    s.replace('\0', "")
}

/// `make_json_serializable`: NUL stripped from strings, non-finite floats
/// to None, keys through `str()`, sequences and sets to lists, anything else
/// through `str()`.
fn serializable(v: &Value) -> Value {
    match v {
        Value::None | Value::Bool(_) | Value::Int(_) => v.clone(),
        Value::Float(f) if f.is_finite() => v.clone(),
        Value::Float(_) => Value::None,
        Value::Str(s) => Value::Str(strip_nul(s)),
        Value::List(items) | Value::Tuple(items) | Value::Set(items) => {
            Value::List(items.iter().map(serializable).collect())
        }
        Value::Dict(d) => serializable_dict(d),
        other => Value::Str(strip_nul(&other.py_str())),
    }
}

/// A later key with the same `str()` replaces the value in place.
fn serializable_dict(d: &Dict) -> Value {
    let mut out = Dict::new();
    for (k, val) in d.iter() {
        out.insert_str(k.py_str(), serializable(val));
    }
    Value::Dict(out)
}

/// One part of the message content: text, or an image URL.
#[derive(Debug, Clone, PartialEq)]
enum Part<'a> {
    Text(&'a str),
    Image(&'a str),
}

/// `[DEEPEVAL:IMAGE:…]`/`[DEEPEVAL:PDF:…]` markers (the regex
/// `\[DEEPEVAL:(?:IMAGE|PDF):(.*?)\]`, no newline inside) and the text
/// between them.
fn split_markers(s: &str) -> Vec<Part<'_>> {
    let mut parts = Vec::new();
    let mut last = 0;
    let mut from = 0;
    while let Some(rel) = s[from..].find("[DEEPEVAL:") {
        let at = from + rel;
        let after = &s[at + "[DEEPEVAL:".len()..];
        let id_start = if after.starts_with("IMAGE:") {
            Some("IMAGE:".len())
        } else if after.starts_with("PDF:") {
            Some("PDF:".len())
        } else {
            None
        };
        let found = id_start.and_then(|k| {
            let rest = &after[k..];
            let end = rest.find([']', '\n'])?;
            (rest.as_bytes().get(end) == Some(&b']')).then(|| (&rest[..end], end))
        });
        match (id_start, found) {
            (Some(k), Some((id, end))) => {
                if at > last {
                    parts.push(Part::Text(&s[last..at]));
                }
                parts.push(Part::Image(id));
                last = at + "[DEEPEVAL:".len() + k + end + 1;
                from = last;
            }
            _ => from = at + 1,
        }
    }
    if last < s.len() {
        parts.push(Part::Text(&s[last..]));
    }
    parts
}

/// Whether `s` holds a multimodal marker (`LLMTestCase.multimodal`).
pub fn is_multimodal(s: &str) -> bool {
    split_markers(s).iter().any(|p| matches!(p, Part::Image(_)))
}

/// `to_openai_content(prompt)`: one text part, or text and image parts when
/// the prompt carries markers. `Err` is the message of `MLLMImage`'s
/// ValueError for a marker whose id is not an http(s) URL (local files are
/// not read).
pub fn content(prompt: &str) -> Result<Json, String> {
    let parts = split_markers(prompt);
    if !parts.iter().any(|p| matches!(p, Part::Image(_))) {
        return Ok(json!([{"type": "text", "text": prompt}]));
    }
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            Part::Text(t) => out.push(json!({"type": "text", "text": t})),
            Part::Image(url) if url.starts_with("http://") || url.starts_with("https://") => {
                out.push(json!({"type": "image_url", "image_url": {"url": url}}));
            }
            Part::Image(url) => {
                return Err(format!(
                    "Invalid remote URL format: {url}. URL must start with http:// or https://"
                ));
            }
        }
    }
    Ok(Json::Array(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_split_the_content() {
        assert!(is_multimodal("a [DEEPEVAL:IMAGE:https://x/cat.png] b"));
        assert!(!is_multimodal("a [DEEPEVAL:IMAGE:x\n] b"));
        assert!(!is_multimodal("[DEEPEVAL:AUDIO:x]"));
        let c = content("a [DEEPEVAL:PDF:https://x/a.pdf]").unwrap_or_default();
        assert_eq!(c[1]["image_url"]["url"], "https://x/a.pdf");
        assert!(content("[DEEPEVAL:IMAGE:abc]").is_err());
    }

    #[test]
    fn ascii_escapes() {
        let s = json_dumps_indented(&Value::Str("ü🔧\u{7f}".into()), true);
        assert_eq!(s, "\"\\u00fc\\ud83d\\udd27\\u007f\"");
    }
}

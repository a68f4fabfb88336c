//! The judges' prompts: the reference's templates
//! (`eval/models/llm_judge_types.py`, `LLMJudgePromptTemplates`), the
//! placeholder auto-append done at construction, and `trace_to_str`
//! (`eval/_helpers/evaluators_helpers.py` 637–708).

use std::collections::HashSet;

use super::pynum::{py_strip, timestamp_str};
use crate::record::{SpanRef, Spans};

pub(super) const LLM_JUDGE_SYSTEM_PROMPT: &str = "You are an expert evaluator tasked with assessing text based on specific criteria. You will be given:\n1. An evaluation criterion or question.\n2. A text to evaluate.\nYour task is to carefully analyze the given text according to the specified criterion.\nIf the criterion asks for a degree or extent, respond with a numerical score from 0 to 100:\n0 means the text does not meet the criterion at all.\n100 means the text fully meets the criterion.\nIf the criterion is a yes/no question or can be answered with true/false, respond with a boolean: true or false.\nTo submit your evaluation, use the correct tool for the score type.\nNever answer using text. Only use the tool to submit your score.\n";

pub(super) const LLM_JUDGE_DEFAULT_USER_PROMPT: &str = "As an expert evaluator, analyze the semantic similarity of these JSON contents to determine a score from 0-100. Focus on comparing the meaning and contextual equivalence of corresponding fields, accounting for alternative valid expressions, synonyms, and reasonable variations in language while maintaining high standards for accuracy and completeness. Provide your score with a justification, explaining briefly and concisely why you gave that score.\n----\nExpectedOutput:\n{{ExpectedOutput}}\n----\nActualOutput:\n{{ActualOutput}}";

pub(super) const LLM_JUDGE_STRICT_JSON_SIMILARITY_SYSTEM_PROMPT: &str = "You are an impartial grading agent.\n\n⚠️ STEP 1: MANDATORY KEY INVENTORY (EXACT COUNTING)\nList the exact top-level keys by copying them character-for-character:\n\nExpected keys: ['key1', 'key2', 'key3', ...]\nActual keys: ['key1', 'key2', ...]\nN (total expected keys): [exact integer]\n\n⚠️ STEP 2: DETERMINISTIC KEY MATCHING\nFor each expected key, check if EXACTLY THE SAME key name exists in actual output:\n\nExpected Key 'KeyName1': EXISTS in actual? [YES/NO]\nExpected Key 'KeyName2': EXISTS in actual? [YES/NO]\n[Continue for all expected keys]\n\n⚠️ STEP 3: EXTRA KEY IDENTIFICATION\nList any actual keys not in expected:\nExtra keys: ['extrakey1', 'extrakey2', ...] or [NONE]\n\n⚠️ STEP 4: CONTENT ASSESSMENT (ONLY FOR MATCHING KEYS)\nFor keys that exist in both (from Step 2), assess content:\nKey 'KeyName': Content assessment [IDENTICAL/SIMILAR/DIFFERENT]\n[Only assess keys that showed YES in Step 2]\n\n⚠️ STEP 5: MECHANICAL SCORING\nApply these exact penalties:\n- Missing key (not in actual): 100/N points each\n- Similar key (exists with similar content): 50/N points each\n- Wrong key (exists but SIGNIFICANTLY different content): 100/N points each\n- Identical key (exists with IDENTICAL content): 0 points each\n- Extra key (in actual but not expected): 10/N points each\n\n⚠️ MECHANICAL CATEGORIZATION:\nBased on Steps 1-4, categorize each expected key:\n\n1. 'ExpectedKey1' → [MISSING/WRONG/SIMILAR/IDENTICAL] → Penalty: [calculation]\n2. 'ExpectedKey2' → [MISSING/WRONG/SIMILAR/IDENTICAL] → Penalty: [calculation]\n[Continue for all expected keys]\n\nExtra keys: [count] × (10/N) = [calculation]\n\n⚠️ EXACT ARITHMETIC:\nPenalty calculations (show all work):\n- N = [number]\n- Missing keys: [count] × (100/[N]) = [count] × [decimal] = [total]\n- Wrong keys: [count] × (100/[N]) = [count] × [decimal] = [total]\n- Similar keys: [count] × (50/[N]) = [count] × [decimal] = [total]\n- Extra keys: [count] × (10/[N]) = [count] × [decimal] = [total]\n\nTotal penalty: [sum all penalties] = [final penalty]\nFinal score: 100 - [final penalty] = [score] (minimum 0)\n\n⚠️ VERIFICATION CHECKLIST:\n- Did I count N correctly by listing all expected keys?\n- Did I check EXACT key name matches (character-for-character)?\n- Did I only assess content for keys that exist in both?\n- Did I calculate exact penalty fractions (100/N, not 100)?\n- Did I show all arithmetic work step by step?\n- Is my final score between 0 and 100?\n\n⚠️ CRITICAL RULES FOR CONSISTENCY:\n- NEVER use semantic interpretation for key names (must be exact match)\n- NEVER assess content for missing keys\n- ALWAYS calculate penalties as fractions of N\n- ALWAYS show exact arithmetic work\n- IDENTICAL inputs MUST produce IDENTICAL outputs.\n\n⚠️ DETERMINISTIC REQUIREMENTS:\n• Key matching is purely textual (character-by-character comparison)\n• Content assessment is only for keys that exist in both outputs\n• All arithmetic must be shown with exact fractions";

pub(super) const LLM_JUDGE_STRICT_JSON_SIMILARITY_DEFAULT_USER_PROMPT: &str = "ExpectedOutput (ground truth):\n{{ExpectedOutput}}\n\nActualOutput (model answer):\n{{ActualOutput}}";

pub(super) const LLM_JUDGE_SIMULATION_TRAJECTORY_SYSTEM_PROMPT: &str = "You are an expert evaluator tasked with assessing an agent running through a simulation.\nThe simulation engine was used to mock the tool responses given during the agent run based on the simulation instructions.\nThe agent did not know that the tool responses are simulated.\nYou will be given:\n1. The instructions the simulation engine was given to mock the tool responses given during the agent run.\n2. Expected behavior for the agent during the simulation.\n3. A trace/history of the agent run.\n4. The agent configuration used during the run.\nYour task is to carefully analyze the agent run trace and it's output according to the specified criterion.\n0 means the agent did not meet the criterion at all.\n100 means the agent fully met the criterion.\nTo submit your evaluation, use the correct tool for the score type.\nNever answer using text. Only use the tool to submit your score.\n";

pub(super) const LLM_JUDGE_SIMULATION_TRAJECTORY_DEFAULT_USER_PROMPT: &str = "As an expert evaluator, determine how well the agent did on a scale of 0-100. Focus on if the simulation was successful and if the agent behaved according to the expected output accounting for alternative valid expressions, and reasonable variations in language while maintaining high standards for accuracy and completeness. Provide your score with a justification, explaining briefly and concisely why you gave that score.\n----\nAgentInput:\n{{UserOrSyntheticInput}}\n----\nSimulationInstructions:\n{{SimulationInstructions}}\n----\nExpectedAgentBehavior:\n{{ExpectedAgentBehavior}}\n----\nAgentRunHistory:\n{{AgentRunHistory}}\n";

pub(super) const LLM_JUDGE_TRAJECTORY_SYSTEM_PROMPT: &str = "You are an expert evaluator tasked with assessing an agent's behavior based on its execution trajectory in a simulation or real environment.\nYou will be given:\n1.\tExpected behavior for the agent during the run.\n2.\tA trace/history of the agent's actions and outputs.\n3.\tThe agent configuration used during the run.\nYour task is to carefully analyze the agent's trajectory and output according to the specified criterion.\nA score of 0 means the agent did not meet the criterion at all, while 100 means the agent fully met the criterion.\nTo submit your evaluation, use the correct tool for the score type.\nNever answer using text. Only use the tool to submit your score.\n";

pub(super) const LLM_JUDGE_TRAJECTORY_DEFAULT_USER_PROMPT: &str = "As an expert evaluator, determine how well the agent performed on a scale of 0-100. Focus on whether the agent's actions and outputs matched the expected behavior, while allowing for alternative valid expressions and reasonable variations in language. Maintain high standards for accuracy and completeness. Provide your score with a brief and clear justification explaining your reasoning.\n----\nAgentInput:\n{{UserOrSyntheticInput}}\n----\nExpectedAgentBehavior:\n{{ExpectedAgentBehavior}}\n----\nAgentRunHistory:\n{{AgentRunHistory}}\n";

/// `LLMJudgeMixin.validate_prompt_placeholders`: a prompt lacking the
/// actual or expected placeholder gets a tagged section appended for each.
pub fn auto_append(prompt: &str, actual: &str, expected: &str) -> String {
    let mut out = prompt.to_owned();
    if !prompt.contains(actual) {
        out.push_str("\n\n## Actual Output\n<ActualOutput>\n");
        out.push_str(actual);
        out.push_str("\n</ActualOutput>");
    }
    if !prompt.contains(expected) {
        out.push_str("\n\n## Expected Output\n<ExpectedOutput>\n");
        out.push_str(expected);
        out.push_str("\n</ExpectedOutput>");
    }
    out
}

/// `trace_to_str`: every span with a truthy `tool.name` (synthesized ones
/// too), once per span id, as a tool selection and its response. Lines are
/// joined with `\n`; an empty trace gives `""`.
///
/// The reference renders its list in order; the conformance cases handed
/// it the spans sorted by start time. Spans arrive here in any order, so
/// they are sorted by (start, end, span id), as the tool-call extraction
/// does: the prompt does not depend on arrival order.
pub fn trace_to_str(spans: &Spans) -> String {
    let mut tools: Vec<SpanRef<'_>> = spans
        .iter()
        .filter(|s| s.attr("tool.name").is_some_and(|v| v.truthy()))
        .collect();
    tools.sort_by_key(|s| (s.start_time_unix_nano, s.end_time_unix_nano, s.span_id));
    let mut lines: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    for span in tools {
        let Some(name) = span.attr("tool.name").filter(|v| v.truthy()) else {
            continue;
        };
        if !seen.insert(span.span_id) {
            continue;
        }
        let name = name.py_str();
        let start = timestamp_str(span.start_time_unix_nano);
        let end = timestamp_str(span.end_time_unix_nano);
        let args = span
            .attr("input.value")
            .map_or_else(|| "{}".to_owned(), |v| v.py_str());
        let result = span
            .attr("output.value")
            .map_or_else(|| "{}".to_owned(), |v| py_strip(&v.py_str()).to_owned());
        lines.push(format!("[{start}] LLM Response:"));
        lines.push("  Agent Selected 1 Tool(s):".to_owned());
        lines.push(String::new());
        lines.push(format!("  Tool: {name}"));
        lines.push(format!("  Arguments: {args}"));
        lines.push(String::new());
        lines.push(format!("[{end}] Tool Call Response - {name}:"));
        lines.push(result);
        lines.push(String::new());
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::span::{AttrValue, Span, SpanId, TraceId};

    fn span(id: u8, attrs: Vec<(&str, AttrValue)>) -> Span {
        Span {
            trace_id: TraceId([1; 16]),
            span_id: SpanId([id; 8]),
            parent_span_id: None,
            name: "s".into(),
            start_time_unix_nano: 1_700_000_059_999_999_600,
            end_time_unix_nano: 1_700_000_061_000_000_000,
            attributes: attrs.into_iter().map(|(k, v)| (Arc::from(k), v)).collect(),
            service_name: None,
            scope_name: None,
        }
    }

    #[test]
    fn appends_missing_placeholders_only() {
        assert_eq!(auto_append("{{A}} {{E}}", "{{A}}", "{{E}}"), "{{A}} {{E}}");
        assert_eq!(
            auto_append("x", "{{A}}", "{{E}}"),
            "x\n\n## Actual Output\n<ActualOutput>\n{{A}}\n</ActualOutput>\n\n## Expected Output\n<ExpectedOutput>\n{{E}}\n</ExpectedOutput>"
        );
        assert_eq!(
            auto_append("{{E}}", "{{A}}", "{{E}}"),
            "{{E}}\n\n## Actual Output\n<ActualOutput>\n{{A}}\n</ActualOutput>"
        );
    }

    #[test]
    fn renders_tool_spans_once_each() {
        let spans = vec![
            span(1, vec![("tool.name", AttrValue::Str("get".into()))]),
            span(2, vec![("tool.name", AttrValue::Int(0))]),
            span(
                3,
                vec![
                    ("tool.name", AttrValue::Int(7)),
                    ("input.value", AttrValue::Empty),
                    ("output.value", AttrValue::Str("  ok \n".into())),
                ],
            ),
            span(1, vec![("tool.name", AttrValue::Str("dup".into()))]),
        ];
        assert_eq!(
            trace_to_str(&Spans::from_spans(&spans)),
            "[2023-11-14 22:14:20] LLM Response:\n  Agent Selected 1 Tool(s):\n\n  Tool: get\n  Arguments: {}\n\n[2023-11-14 22:14:21] Tool Call Response - get:\n{}\n\n\
             [2023-11-14 22:14:20] LLM Response:\n  Agent Selected 1 Tool(s):\n\n  Tool: 7\n  Arguments: None\n\n[2023-11-14 22:14:21] Tool Call Response - 7:\nok\n"
        );
        assert_eq!(trace_to_str(&Spans::from_spans(&[])), "");
    }
}

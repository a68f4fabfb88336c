//! The gateway's answer: `ChatCompletion.model_validate(response.json())`
//! (`platform/chat/llm_gateway.py`) and `_extract_tool_call_response`
//! (`llm_as_judge_evaluator.py` 359–458).

use super::pydantic::{Errors, Loc, at, at_index, display};
use super::pynum::py_float;
use crate::pyvalue::{Dict, Value};

/// What the judges read of a validated `ChatCompletion`.
#[derive(Debug)]
pub struct Completion {
    pub choices: Vec<Message>,
}

/// A choice's message.
#[derive(Debug)]
pub struct Message {
    pub content: Option<String>,
    /// Each tool call's `arguments` (a dict, as the normalized API sends it).
    pub tool_calls: Option<Vec<Dict>>,
}

/// Validates a parsed body as `ChatCompletion`; `Err` is the text of the
/// pydantic `ValidationError`.
pub fn validate(body: &Value) -> Result<Completion, String> {
    let mut e = Errors::default();
    let completion = chat_completion(body, &mut e);
    match completion {
        Some(c) if e.lines.is_empty() => Ok(c),
        _ => Err(display("ChatCompletion", &e.lines)),
    }
}

/// The fields in declaration order, each checked even after an error (pydantic
/// reports every failing field).
fn chat_completion(v: &Value, e: &mut Errors) -> Option<Completion> {
    let d = e.model(v, "ChatCompletion", &[])?;
    for key in ["id", "object"] {
        if let Some(x) = e.required(d, v, key, &[]) {
            e.string(x, &at(&[], key));
        }
    }
    if let Some(x) = e.required(d, v, "created", &[]) {
        e.int(x, &at(&[], "created"));
    }
    if let Some(x) = e.required(d, v, "model", &[]) {
        e.string(x, &at(&[], "model"));
    }
    let mut choices = None;
    if let Some(x) = e.required(d, v, "choices", &[]) {
        let loc = at(&[], "choices");
        if let Some(items) = e.list(x, &loc) {
            let parsed: Vec<Option<Message>> = items
                .iter()
                .enumerate()
                .map(|(i, c)| choice(c, &at_index(&loc, i), e))
                .collect();
            choices = parsed.into_iter().collect::<Option<Vec<_>>>();
        }
    }
    if let Some(x) = e.required(d, v, "usage", &[]) {
        usage(x, &at(&[], "usage"), e);
    }
    Some(Completion { choices: choices? })
}

fn choice(v: &Value, loc: &[Loc], e: &mut Errors) -> Option<Message> {
    let d = e.model(v, "ChatCompletionChoice", loc)?;
    if let Some(x) = e.required(d, v, "index", loc) {
        e.int(x, &at(loc, "index"));
    }
    let message = e
        .required(d, v, "message", loc)
        .and_then(|x| message(x, &at(loc, "message"), e));
    if let Some(x) = d.get_str("finish_reason") {
        e.optional_string(x, &at(loc, "finish_reason"));
    }
    message
}

fn message(v: &Value, loc: &[Loc], e: &mut Errors) -> Option<Message> {
    let d = e.model(v, "ChatMessage", loc)?;
    // `role` defaults to "assistant" but may not be null.
    if let Some(x) = d.get_str("role") {
        e.string(x, &at(loc, "role"));
    }
    let content = match d.get_str("content") {
        Some(x) => e.optional_string(x, &at(loc, "content")),
        None => Some(None),
    };
    let tool_calls = match d.get_str("tool_calls") {
        None | Some(Value::None) => Some(None),
        Some(x) => {
            let tl = at(loc, "tool_calls");
            e.list(x, &tl).and_then(|items| {
                let calls: Vec<Option<Dict>> = items
                    .iter()
                    .enumerate()
                    .map(|(i, c)| tool_call(c, &at_index(&tl, i), e))
                    .collect();
                calls.into_iter().collect::<Option<Vec<_>>>().map(Some)
            })
        }
    };
    Some(Message {
        content: content?,
        tool_calls: tool_calls?,
    })
}

fn tool_call(v: &Value, loc: &[Loc], e: &mut Errors) -> Option<Dict> {
    let d = e.model(v, "ToolCall", loc)?;
    for key in ["id", "name"] {
        if let Some(x) = e.required(d, v, key, loc) {
            e.string(x, &at(loc, key));
        }
    }
    e.required(d, v, "arguments", loc)
        .and_then(|x| e.dict(x, &at(loc, "arguments")))
        .cloned()
}

fn usage(v: &Value, loc: &[Loc], e: &mut Errors) {
    let Some(d) = e.model(v, "ChatCompletionUsage", loc) else {
        return;
    };
    for key in ["prompt_tokens", "completion_tokens", "total_tokens"] {
        if let Some(x) = e.required(d, v, key, loc) {
            e.int(x, &at(loc, key));
        }
    }
    if let Some(x) = d.get_str("cache_read_input_tokens") {
        e.optional_int(x, &at(loc, "cache_read_input_tokens"));
    }
}

/// The judge's reading of the model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub score: f64,
    pub justification: String,
}

/// Why an answer could not be read: the reference's error code and the
/// exception's `str()` (its detail).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub code: &'static str,
    pub detail: String,
}

/// `_extract_tool_call_response`: the first choice's first tool call's
/// `score` (Python `float()`) and `justification` (`str()`). The tool name,
/// later tool calls and extra argument keys are not checked.
pub fn extract(c: &Completion) -> Result<Answer, Refused> {
    let refused = |code, detail| Err(Refused { code, detail });
    let Some(message) = c.choices.first() else {
        return refused(
            "INVALID_LLM_RESPONSE",
            "The LLM response contained no choices".into(),
        );
    };
    let Some(args) = message.tool_calls.as_ref().and_then(|t| t.first()) else {
        let content = message.content.as_deref().unwrap_or("None");
        return refused(
            "NO_TOOL_CALL",
            format!("Expected tool call but got text response: {content}"),
        );
    };
    let args_repr = || {
        let mut s = String::new();
        args.write_repr(&mut s);
        s
    };
    let (Some(score), Some(justification)) = (args.get_str("score"), args.get_str("justification"))
    else {
        let code = if args.get_str("score").is_none() {
            "MISSING_SCORE"
        } else {
            "MISSING_JUSTIFICATION"
        };
        return refused(code, format!("Tool arguments: {}", args_repr()));
    };
    match py_float(score) {
        Ok(score) => Ok(Answer {
            score,
            justification: justification.py_str(),
        }),
        Err(exc) if exc.kind == "ValueError" || exc.kind == "TypeError" => refused(
            "INVALID_TOOL_ARGUMENTS",
            format!("Error: {}, Arguments: {}", exc.message, args_repr()),
        ),
        // Any other exception is wrapped by the outer handler.
        Err(exc) => refused(
            "FAILED_TO_EXTRACT_TOOL_CALL",
            format!("Error: {}: {}", exc.kind, exc.message),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pyvalue::json::loads;

    fn answer(body: &str) -> Result<Answer, String> {
        let c = validate(&loads(body).unwrap())?;
        extract(&c).map_err(|r| format!("{}: {}", r.code, r.detail))
    }

    const HEAD: &str = r#""id": "c", "object": "chat.completion", "created": 1, "model": "m", "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}"#;

    fn with_message(message: &str) -> String {
        format!(r#"{{{HEAD}, "choices": [{{"index": 0, "message": {message}}}]}}"#)
    }

    fn with_args(args: &str) -> String {
        with_message(&format!(
            r#"{{"role": "assistant", "tool_calls": [{{"id": "t", "name": "submit_evaluation", "arguments": {args}}}]}}"#
        ))
    }

    #[test]
    fn reads_score_and_justification() {
        let a = answer(&with_args(r#"{"justification": 5, "score": " 42 "}"#)).unwrap();
        assert_eq!(a.score, 42.0);
        assert_eq!(a.justification, "5");
        let a = answer(&with_args(r#"{"justification": null, "score": true}"#)).unwrap();
        assert_eq!((a.score, a.justification.as_str()), (1.0, "None"));
        assert!(
            answer(&with_args(r#"{"justification": "", "score": NaN}"#))
                .unwrap()
                .score
                .is_nan()
        );
    }

    #[test]
    fn refusals_in_the_reference_order() {
        assert_eq!(
            answer(&format!(r#"{{{HEAD}, "choices": []}}"#)).unwrap_err(),
            "INVALID_LLM_RESPONSE: The LLM response contained no choices"
        );
        assert_eq!(
            answer(&with_message(r#"{"content": "hi", "tool_calls": []}"#)).unwrap_err(),
            "NO_TOOL_CALL: Expected tool call but got text response: hi"
        );
        assert_eq!(
            answer(&with_message(r#"{"role": "assistant"}"#)).unwrap_err(),
            "NO_TOOL_CALL: Expected tool call but got text response: None"
        );
        assert_eq!(
            answer(&with_args(r#"{"justification": "j"}"#)).unwrap_err(),
            "MISSING_SCORE: Tool arguments: {'justification': 'j'}"
        );
        assert_eq!(
            answer(&with_args(r#"{"score": 1}"#)).unwrap_err(),
            "MISSING_JUSTIFICATION: Tool arguments: {'score': 1}"
        );
        assert_eq!(
            answer(&with_args(r#"{"score": "eighty", "justification": "j"}"#)).unwrap_err(),
            "INVALID_TOOL_ARGUMENTS: Error: could not convert string to float: 'eighty', Arguments: {'score': 'eighty', 'justification': 'j'}"
        );
        assert_eq!(
            answer(&with_args(r#"{"score": [1], "justification": "j"}"#)).unwrap_err(),
            "INVALID_TOOL_ARGUMENTS: Error: float() argument must be a string or a real number, not 'list', Arguments: {'score': [1], 'justification': 'j'}"
        );
        let big = format!(r#"{{"score": {}, "justification": "j"}}"#, "9".repeat(400));
        assert_eq!(
            answer(&with_args(&big)).unwrap_err(),
            "FAILED_TO_EXTRACT_TOOL_CALL: Error: OverflowError: int too large to convert to float"
        );
    }

    #[test]
    fn schema_errors_are_pydantics() {
        let e = answer(&with_args(r#""{\"score\": 1}""#)).unwrap_err();
        assert_eq!(
            e,
            "1 validation error for ChatCompletion\nchoices.0.message.tool_calls.0.arguments\n  Input should be a valid dictionary [type=dict_type, input_value='{\"score\": 1}', input_type=str]\n    For further information visit https://errors.pydantic.dev/2.14/v/dict_type"
        );
        let e = answer(r#"{"id": 1, "choices": [{"message": null}]}"#).unwrap_err();
        assert!(e.starts_with("7 validation errors for ChatCompletion\nid\n  Input should be a valid string [type=string_type, input_value=1, input_type=int]"), "{e}");
        assert!(e.contains("\nchoices.0.index\n  Field required [type=missing, input_value={'message': None}, input_type=dict]"), "{e}");
        assert!(e.contains("\nchoices.0.message\n  Input should be a valid dictionary or instance of ChatMessage [type=model_type, input_value=None, input_type=NoneType]"), "{e}");
        let e = answer("[]").unwrap_err();
        assert_eq!(
            e,
            "1 validation error for ChatCompletion\n  Input should be a valid dictionary or instance of ChatCompletion [type=model_type, input_value=[], input_type=list]\n    For further information visit https://errors.pydantic.dev/2.14/v/model_type"
        );
    }

    /// Bodies and the errors pydantic 2.14.4 gave for them (`None`: valid).
    const PYDANTIC: &[(&str, Option<&str>)] = &[
        (
            "{\"id\": 1, \"choices\": [{\"message\": null}]}",
            Some(
                "7 validation errors for ChatCompletion\nid\n  Input should be a valid string [type=string_type, input_value=1, input_type=int]\n    For further information visit https://errors.pydantic.dev/2.14/v/string_type\nobject\n  Field required [type=missing, input_value={'id': 1, 'choices': [{'message': None}]}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing\ncreated\n  Field required [type=missing, input_value={'id': 1, 'choices': [{'message': None}]}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing\nmodel\n  Field required [type=missing, input_value={'id': 1, 'choices': [{'message': None}]}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing\nchoices.0.index\n  Field required [type=missing, input_value={'message': None}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing\nchoices.0.message\n  Input should be a valid dictionary or instance of ChatMessage [type=model_type, input_value=None, input_type=NoneType]\n    For further information visit https://errors.pydantic.dev/2.14/v/model_type\nusage\n  Field required [type=missing, input_value={'id': 1, 'choices': [{'message': None}]}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing",
            ),
        ),
        (
            "[]",
            Some(
                "1 validation error for ChatCompletion\n  Input should be a valid dictionary or instance of ChatCompletion [type=model_type, input_value=[], input_type=list]\n    For further information visit https://errors.pydantic.dev/2.14/v/model_type",
            ),
        ),
        (
            "{\"id\": \"c\", \"object\": \"o\", \"created\": \"0012\", \"model\": \"m\", \"choices\": [{\"index\": 1.0, \"message\": {\"role\": null, \"content\": 5, \"tool_calls\": {\"a\":1}}, \"finish_reason\": 3}], \"usage\": {\"prompt_tokens\": 1.5, \"completion_tokens\": \"1e3\", \"total_tokens\": 1e20, \"cache_read_input_tokens\": NaN}}",
            Some(
                "8 validation errors for ChatCompletion\nchoices.0.message.role\n  Input should be a valid string [type=string_type, input_value=None, input_type=NoneType]\n    For further information visit https://errors.pydantic.dev/2.14/v/string_type\nchoices.0.message.content\n  Input should be a valid string [type=string_type, input_value=5, input_type=int]\n    For further information visit https://errors.pydantic.dev/2.14/v/string_type\nchoices.0.message.tool_calls\n  Input should be a valid list [type=list_type, input_value={'a': 1}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/list_type\nchoices.0.finish_reason\n  Input should be a valid string [type=string_type, input_value=3, input_type=int]\n    For further information visit https://errors.pydantic.dev/2.14/v/string_type\nusage.prompt_tokens\n  Input should be a valid integer, got a number with a fractional part [type=int_from_float, input_value=1.5, input_type=float]\n    For further information visit https://errors.pydantic.dev/2.14/v/int_from_float\nusage.completion_tokens\n  Input should be a valid integer, unable to parse string as an integer [type=int_parsing, input_value='1e3', input_type=str]\n    For further information visit https://errors.pydantic.dev/2.14/v/int_parsing\nusage.total_tokens\n  Unable to parse input string as an integer, exceeded maximum size [type=int_parsing_size, input_value=1e+20, input_type=float]\n    For further information visit https://errors.pydantic.dev/2.14/v/int_parsing_size\nusage.cache_read_input_tokens\n  Input should be a finite number [type=finite_number, input_value=nan, input_type=float]\n    For further information visit https://errors.pydantic.dev/2.14/v/finite_number",
            ),
        ),
        (
            "{\"id\": \"c\", \"object\": \"o\", \"created\": true, \"model\": \"m\", \"choices\": [{\"index\": 0, \"message\": {\"tool_calls\": [{\"id\": \"x\", \"name\": \"n\", \"arguments\": {}}, 5]}}], \"usage\": {\"prompt_tokens\": \" 1_0 \", \"completion_tokens\": \"-0\", \"total_tokens\": \"+-1\"}}",
            Some(
                "2 validation errors for ChatCompletion\nchoices.0.message.tool_calls.1\n  Input should be a valid dictionary or instance of ToolCall [type=model_type, input_value=5, input_type=int]\n    For further information visit https://errors.pydantic.dev/2.14/v/model_type\nusage.total_tokens\n  Input should be a valid integer, unable to parse string as an integer [type=int_parsing, input_value='+-1', input_type=str]\n    For further information visit https://errors.pydantic.dev/2.14/v/int_parsing",
            ),
        ),
        (
            "{\"id\": \"c\", \"object\": \"o\", \"created\": 1, \"model\": \"m\", \"choices\": {}, \"usage\": 5}",
            Some(
                "2 validation errors for ChatCompletion\nchoices\n  Input should be a valid list [type=list_type, input_value={}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/list_type\nusage\n  Input should be a valid dictionary or instance of ChatCompletionUsage [type=model_type, input_value=5, input_type=int]\n    For further information visit https://errors.pydantic.dev/2.14/v/model_type",
            ),
        ),
        (
            "{\"a.b\": 1, \"choices\": [{\"message\": {\"tool_calls\": [{\"arguments\": []}]}}]}",
            Some(
                "9 validation errors for ChatCompletion\nid\n  Field required [type=missing, input_value={'a.b': 1, 'choices': [{'... [{'arguments': []}]}}]}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing\nobject\n  Field required [type=missing, input_value={'a.b': 1, 'choices': [{'... [{'arguments': []}]}}]}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing\ncreated\n  Field required [type=missing, input_value={'a.b': 1, 'choices': [{'... [{'arguments': []}]}}]}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing\nmodel\n  Field required [type=missing, input_value={'a.b': 1, 'choices': [{'... [{'arguments': []}]}}]}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing\nchoices.0.index\n  Field required [type=missing, input_value={'message': {'tool_calls': [{'arguments': []}]}}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing\nchoices.0.message.tool_calls.0.id\n  Field required [type=missing, input_value={'arguments': []}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing\nchoices.0.message.tool_calls.0.name\n  Field required [type=missing, input_value={'arguments': []}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing\nchoices.0.message.tool_calls.0.arguments\n  Input should be a valid dictionary [type=dict_type, input_value=[], input_type=list]\n    For further information visit https://errors.pydantic.dev/2.14/v/dict_type\nusage\n  Field required [type=missing, input_value={'a.b': 1, 'choices': [{'... [{'arguments': []}]}}]}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing",
            ),
        ),
        (
            "{\"id\": \"c\", \"object\": \"o\", \"created\": \"1.000\", \"model\": \"m\", \"choices\": [], \"usage\": {\"prompt_tokens\": \"00\", \"completion_tokens\": \"1__0\", \"total_tokens\": \"_1\", \"cache_read_input_tokens\": null}}",
            Some(
                "2 validation errors for ChatCompletion\nusage.completion_tokens\n  Input should be a valid integer, unable to parse string as an integer [type=int_parsing, input_value='1__0', input_type=str]\n    For further information visit https://errors.pydantic.dev/2.14/v/int_parsing\nusage.total_tokens\n  Input should be a valid integer, unable to parse string as an integer [type=int_parsing, input_value='_1', input_type=str]\n    For further information visit https://errors.pydantic.dev/2.14/v/int_parsing",
            ),
        ),
        (
            "{\"id\": \"c\", \"object\": \"o\", \"created\": \"-007\", \"model\": \"m\", \"choices\": [{\"index\": \"x\", \"message\": {\"content\": null, \"tool_calls\": null}}], \"usage\": {\"prompt_tokens\": \"0.5\", \"completion_tokens\": [], \"total_tokens\": {}}}",
            Some(
                "4 validation errors for ChatCompletion\nchoices.0.index\n  Input should be a valid integer, unable to parse string as an integer [type=int_parsing, input_value='x', input_type=str]\n    For further information visit https://errors.pydantic.dev/2.14/v/int_parsing\nusage.prompt_tokens\n  Input should be a valid integer, unable to parse string as an integer [type=int_parsing, input_value='0.5', input_type=str]\n    For further information visit https://errors.pydantic.dev/2.14/v/int_parsing\nusage.completion_tokens\n  Input should be a valid integer [type=int_type, input_value=[], input_type=list]\n    For further information visit https://errors.pydantic.dev/2.14/v/int_type\nusage.total_tokens\n  Input should be a valid integer [type=int_type, input_value={}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/int_type",
            ),
        ),
        (
            "{\"id\": \"検索検索検索検索検索検索検索検索検索検索検索検索検索\", \"choices\": null}",
            Some(
                "5 validation errors for ChatCompletion\nobject\n  Field required [type=missing, input_value={'id': '検索検索検...索', 'choices': None}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing\ncreated\n  Field required [type=missing, input_value={'id': '検索検索検...索', 'choices': None}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing\nmodel\n  Field required [type=missing, input_value={'id': '検索検索検...索', 'choices': None}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing\nchoices\n  Input should be a valid list [type=list_type, input_value=None, input_type=NoneType]\n    For further information visit https://errors.pydantic.dev/2.14/v/list_type\nusage\n  Field required [type=missing, input_value={'id': '検索検索検...索', 'choices': None}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing",
            ),
        ),
        (
            "{\"id\": \"c\", \"object\": \"o\", \"created\": -1e300, \"model\": \"m\", \"choices\": [{\"index\": 0, \"message\": {\"tool_calls\": [{\"id\": 1, \"name\": null, \"arguments\": \"{}\"}]}}], \"usage\": {\"prompt_tokens\": Infinity, \"completion_tokens\": 9223372036854775807.0, \"total_tokens\": 123456789012345678901234567890}}",
            Some(
                "6 validation errors for ChatCompletion\ncreated\n  Unable to parse input string as an integer, exceeded maximum size [type=int_parsing_size, input_value=-1e+300, input_type=float]\n    For further information visit https://errors.pydantic.dev/2.14/v/int_parsing_size\nchoices.0.message.tool_calls.0.id\n  Input should be a valid string [type=string_type, input_value=1, input_type=int]\n    For further information visit https://errors.pydantic.dev/2.14/v/string_type\nchoices.0.message.tool_calls.0.name\n  Input should be a valid string [type=string_type, input_value=None, input_type=NoneType]\n    For further information visit https://errors.pydantic.dev/2.14/v/string_type\nchoices.0.message.tool_calls.0.arguments\n  Input should be a valid dictionary [type=dict_type, input_value='{}', input_type=str]\n    For further information visit https://errors.pydantic.dev/2.14/v/dict_type\nusage.prompt_tokens\n  Input should be a finite number [type=finite_number, input_value=inf, input_type=float]\n    For further information visit https://errors.pydantic.dev/2.14/v/finite_number\nusage.completion_tokens\n  Unable to parse input string as an integer, exceeded maximum size [type=int_parsing_size, input_value=9.223372036854776e+18, input_type=float]\n    For further information visit https://errors.pydantic.dev/2.14/v/int_parsing_size",
            ),
        ),
        (
            "\"text\"",
            Some(
                "1 validation error for ChatCompletion\n  Input should be a valid dictionary or instance of ChatCompletion [type=model_type, input_value='text', input_type=str]\n    For further information visit https://errors.pydantic.dev/2.14/v/model_type",
            ),
        ),
        (
            "null",
            Some(
                "1 validation error for ChatCompletion\n  Input should be a valid dictionary or instance of ChatCompletion [type=model_type, input_value=None, input_type=NoneType]\n    For further information visit https://errors.pydantic.dev/2.14/v/model_type",
            ),
        ),
    ];

    #[test]
    fn validation_matches_pydantic_2_14() {
        for (body, want) in PYDANTIC {
            let got = validate(&loads(body).unwrap()).err();
            assert_eq!(got.as_deref(), *want, "{body}");
        }
    }
}

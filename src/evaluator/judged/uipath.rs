//! uipath 2.14.44's LLM-judge evaluators (coded, `version: "1.0"`):
//! trajectory similarity and simulation, output semantic similarity and
//! strict-JSON similarity (`conformance/llm/README.md` §2).
//!
//! A judge renders one prompt from the trace (or the workload output) and
//! the criteria, asks the UiPath LLM gateway for a `submit_evaluation` tool
//! call, and scores `round(score / 100, 2)` clamped to [0, 1]. Everything
//! the reference does on the way is reproduced: the discovery lookup that
//! may drop `temperature`, the request's headers and body key order, the
//! retries, and the exact text of every error (pydantic's included).
//!
//! Errors raised before the reference's `evaluate()` (missing or invalid
//! criteria) are [`Outcome::error`] with `code: title: detail`; errors inside
//! it are [`Outcome::thrown`] with the exception's detail.
//!
//! Layout: `prompt` (templates, `trace_to_str`), `output` (target keys),
//! `gateway` (discovery, request, retries), `completion` (the answer's
//! schema and tool call), `pydantic` (validation error text), `pynum`
//! (Python's `float()`, `round()`, `fromtimestamp`).

mod completion;
mod gateway;
mod output;
mod prompt;
mod pydantic;
mod pynum;

use serde_json::{Map, Value as Json};

pub use gateway::Discovery;
pub use output::TargetKey;

use crate::evaluator::common::{Invalid, field, join, lax_bool, lax_float};
use crate::evaluator::judged::{Endpoint, TraceView, Transport};
use crate::evaluator::{CriteriaError, Outcome, kind};
use crate::pyvalue::{Dict, Int, Value};
use crate::record::AttrRef;
use pydantic::{Errors, LineError, Loc};

/// The four dispatchable `evaluatorTypeId`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    TrajectorySimilarity,
    TrajectorySimulation,
    OutputSemanticSimilarity,
    OutputStrictJsonSimilarity,
}

impl Kind {
    pub const ALL: [Kind; 4] = [
        Kind::TrajectorySimilarity,
        Kind::TrajectorySimulation,
        Kind::OutputSemanticSimilarity,
        Kind::OutputStrictJsonSimilarity,
    ];

    /// The kind of an `evaluatorTypeId`; `None` for any other id (the
    /// enum's non-dispatchable `uipath-llm-judge-trajectory`/`-output` too).
    pub fn parse(type_id: &str) -> Option<Kind> {
        Self::ALL.into_iter().find(|k| k.id() == type_id)
    }

    /// The `evaluatorTypeId`.
    pub fn id(self) -> &'static str {
        match self {
            Kind::TrajectorySimilarity => "uipath-llm-judge-trajectory-similarity",
            Kind::TrajectorySimulation => "uipath-llm-judge-trajectory-simulation",
            Kind::OutputSemanticSimilarity => "uipath-llm-judge-output-semantic-similarity",
            Kind::OutputStrictJsonSimilarity => "uipath-llm-judge-output-strict-json-similarity",
        }
    }

    /// The reference's class name, also its config's default `name`.
    pub fn default_name(self) -> &'static str {
        match self {
            Kind::TrajectorySimilarity => "LLMJudgeTrajectoryEvaluator",
            Kind::TrajectorySimulation => "LLMJudgeTrajectorySimulationEvaluator",
            Kind::OutputSemanticSimilarity => "LLMJudgeOutputEvaluator",
            Kind::OutputStrictJsonSimilarity => "LLMJudgeStrictJSONSimilarityOutputEvaluator",
        }
    }

    /// Whether the judge reads the trace (else the workload output).
    pub fn is_trajectory(self) -> bool {
        matches!(
            self,
            Kind::TrajectorySimilarity | Kind::TrajectorySimulation
        )
    }

    fn system_prompt(self) -> &'static str {
        match self {
            Kind::TrajectorySimilarity => prompt::LLM_JUDGE_TRAJECTORY_SYSTEM_PROMPT,
            Kind::TrajectorySimulation => prompt::LLM_JUDGE_SIMULATION_TRAJECTORY_SYSTEM_PROMPT,
            Kind::OutputSemanticSimilarity => prompt::LLM_JUDGE_SYSTEM_PROMPT,
            Kind::OutputStrictJsonSimilarity => {
                prompt::LLM_JUDGE_STRICT_JSON_SIMILARITY_SYSTEM_PROMPT
            }
        }
    }

    fn default_prompt(self) -> &'static str {
        match self {
            Kind::TrajectorySimilarity => prompt::LLM_JUDGE_TRAJECTORY_DEFAULT_USER_PROMPT,
            Kind::TrajectorySimulation => {
                prompt::LLM_JUDGE_SIMULATION_TRAJECTORY_DEFAULT_USER_PROMPT
            }
            Kind::OutputSemanticSimilarity => prompt::LLM_JUDGE_DEFAULT_USER_PROMPT,
            Kind::OutputStrictJsonSimilarity => {
                prompt::LLM_JUDGE_STRICT_JSON_SIMILARITY_DEFAULT_USER_PROMPT
            }
        }
    }

    /// The actual and expected placeholders.
    fn placeholders(self) -> (&'static str, &'static str) {
        if self.is_trajectory() {
            ("{{AgentRunHistory}}", "{{ExpectedAgentBehavior}}")
        } else {
            ("{{ActualOutput}}", "{{ExpectedOutput}}")
        }
    }

    /// The criteria model: class name and module, for error texts.
    fn criteria_class(self) -> (&'static str, &'static str) {
        if self.is_trajectory() {
            (
                "TrajectoryEvaluationCriteria",
                "uipath.eval.evaluators.llm_judge_trajectory_evaluator",
            )
        } else {
            (
                "OutputEvaluationCriteria",
                "uipath.eval.evaluators.output_evaluator",
            )
        }
    }
}

/// Validated evaluation criteria.
#[derive(Debug, Clone)]
pub enum Criteria {
    /// `{"expectedAgentBehavior": str}`.
    Trajectory { expected_agent_behavior: String },
    /// `{"expectedOutput": dict | str}`.
    Output { expected_output: Value },
}

/// An LLM judge's `evaluatorConfig`, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeConfig {
    pub kind: Kind,
    pub name: String,
    pub description: String,
    /// The user prompt, placeholders already auto-appended.
    pub prompt: String,
    /// Sent as is, in a header only; `""` by default.
    pub model: String,
    pub temperature: f64,
    /// `None`: 8000 for Claude 4.5 models, else the gateway service's 4096.
    pub max_tokens: Option<i64>,
    /// Output judges only (`"*"` for trajectory judges).
    pub target_output_key: TargetKey,
    pub default_criteria: Option<Criteria>,
}

impl kind::Family for Kind {
    const ALL: &'static [Kind] = &Kind::ALL;
}

/// The judges' declaration (`evaluator::kind`): a model scores them
/// (`llm/` runs [`evaluate`]), and their criteria are kept as given, read at
/// evaluation as the reference does.
impl kind::Kind for Kind {
    type Config = Box<JudgeConfig>;
    type Criteria = Value;
    const LAYOUT: kind::Layout = kind::Layout::JudgeReason;
    const EXPLANATION: kind::Explanation = kind::Explanation::Details;

    fn id(self) -> &'static str {
        Kind::id(self)
    }
    fn alias(self) -> &'static str {
        crate::evaluator::uipath_alias(Kind::id(self))
    }
    fn default_name(self) -> &'static str {
        Kind::default_name(self)
    }
    fn default_config(self) -> Box<JudgeConfig> {
        Box::new(JudgeConfig::defaults(self))
    }
    fn parse_config(self, config: &Dict, path: &str) -> Result<Box<JudgeConfig>, Invalid> {
        parse_config(self, config, path).map(Box::new)
    }
    fn parse_criteria(self, criteria: &Value) -> Result<Value, CriteriaError> {
        parse_criteria(self, criteria).map_err(CriteriaError::Judge)?;
        Ok(criteria.clone())
    }
    fn missing_criteria(self) -> CriteriaError {
        CriteriaError::Missing
    }
    fn judged(_: &Box<JudgeConfig>) -> kind::Judged {
        kind::Judged::Yes { asks: true }
    }
    fn reads_content(_: &Box<JudgeConfig>) -> Option<&'static str> {
        None
    }
    /// Never reached: an evaluator that needs a model is refused before
    /// scoring without one (`Evaluator::evaluate`).
    fn score(
        self,
        _: &[crate::extract::ToolCall],
        _: &Box<JudgeConfig>,
        _: &Value,
        _: crate::evaluator::Explain,
    ) -> Outcome {
        Outcome::error(format!("{} is scored by its model", Kind::id(self)))
    }
}

/// Python's `==` on the criteria values (`Config` is compared in tests).
impl PartialEq for Criteria {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                Criteria::Trajectory {
                    expected_agent_behavior: a,
                },
                Criteria::Trajectory {
                    expected_agent_behavior: b,
                },
            ) => a == b,
            (Criteria::Output { expected_output: a }, Criteria::Output { expected_output: b }) => {
                a.py_eq(b)
            }
            _ => false,
        }
    }
}

impl JudgeConfig {
    /// The config of an empty `evaluatorConfig`.
    pub fn defaults(kind: Kind) -> JudgeConfig {
        let (actual, expected) = kind.placeholders();
        JudgeConfig {
            kind,
            name: kind.default_name().to_owned(),
            description: String::new(),
            prompt: prompt::auto_append(kind.default_prompt(), actual, expected),
            model: String::new(),
            temperature: 0.0,
            max_tokens: None,
            target_output_key: TargetKey::All,
            default_criteria: None,
        }
    }
}

/// Validates `evaluatorConfig` (camelCase or snake_case keys; unknown keys
/// ignored, as pydantic does). The prompt gets its missing placeholders
/// appended here, as the reference does at construction.
///
/// Refused: `lineByLineEvaluator: true` with a single target key (the
/// reference's one-call-per-line mode, not implemented).
pub fn parse_config(kind: Kind, config: &Dict, path: &str) -> Result<JudgeConfig, Invalid> {
    let get = |snake: &'static str, camel: &'static str| {
        field(config, snake, camel).map(|(v, which)| {
            let key = if which == "camel" { camel } else { snake };
            (v, join(path, key))
        })
    };
    let string = |snake, camel, default: &str| -> Result<String, Invalid> {
        match get(snake, camel) {
            None => Ok(default.to_owned()),
            Some((Value::Str(s), _)) => Ok(s.clone()),
            Some((other, p)) => Err(Invalid::new(
                p,
                format!("Input should be a valid string, got {}", other.type_name()),
            )),
        }
    };
    let (actual, expected) = kind.placeholders();
    let prompt = prompt::auto_append(
        &string("prompt", "prompt", kind.default_prompt())?,
        actual,
        expected,
    );
    let temperature = match get("temperature", "temperature") {
        None => 0.0,
        Some((v, p)) => lax_float(v, &p)?,
    };
    let max_tokens = match get("max_tokens", "maxTokens") {
        None | Some((Value::None, _)) => None,
        Some((v, p)) => match pydantic::lax_int_value(v) {
            Some(Int::Small(i)) => Some(i),
            Some(Int::Big(_)) => return Err(Invalid::new(p, "max_tokens is too large")),
            None => return Err(Invalid::new(p, "Input should be a valid integer")),
        },
    };
    let target_output_key = if kind.is_trajectory() {
        TargetKey::All
    } else {
        match get("target_output_key", "targetOutputKey") {
            None => TargetKey::All,
            Some((Value::Str(s), _)) if s == "*" => TargetKey::All,
            Some((Value::Str(s), _)) => TargetKey::Key(s.clone()),
            Some((Value::List(items), p)) => TargetKey::Keys(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| match v {
                        Value::Str(s) => Ok(s.clone()),
                        _ => Err(Invalid::new(join(&p, i), "Input should be a valid string")),
                    })
                    .collect::<Result<_, _>>()?,
            ),
            Some((_, p)) => {
                return Err(Invalid::new(
                    p,
                    "Input should be a valid string or a list of strings",
                ));
            }
        }
    };
    if !kind.is_trajectory()
        && !matches!(target_output_key, TargetKey::Keys(_))
        && let Some((v, p)) = get("line_by_line_evaluator", "lineByLineEvaluator")
        && lax_bool(v, &p)?
    {
        return Err(Invalid::new(
            p,
            "line-by-line evaluation (one LLM call per line) is not supported",
        ));
    }
    let default_criteria = match get("default_evaluation_criteria", "defaultEvaluationCriteria") {
        None | Some((Value::None, _)) => None,
        Some((v, p)) => Some(validate_criteria(kind, v).map_err(|lines| {
            Invalid::new(p, pydantic::display(kind.criteria_class().0, &lines))
        })?),
    };
    Ok(JudgeConfig {
        kind,
        name: string("name", "name", kind.default_name())?,
        description: string("description", "description", "")?,
        prompt,
        model: string("model", "model", "")?,
        temperature,
        max_tokens,
        target_output_key,
        default_criteria,
    })
}

/// `validate_evaluation_criteria`: `Err` is the reference's
/// `CANNOT_VALIDATE_EVALUATION_CRITERIA` error, `code: title: detail`.
pub fn parse_criteria(kind: Kind, criteria: &Value) -> Result<Criteria, String> {
    validate_criteria(kind, criteria).map_err(|lines| {
        let (class, module) = kind.criteria_class();
        format!(
            "Python.CANNOT_VALIDATE_EVALUATION_CRITERIA: Cannot validate <class '{}'> to <class '{module}.{class}'>: Error: {}",
            criteria.type_name(),
            pydantic::display(class, &lines)
        )
    })
}

/// The criteria model's validation, pydantic's line errors on failure.
fn validate_criteria(kind: Kind, v: &Value) -> Result<Criteria, Vec<LineError>> {
    let mut e = Errors::default();
    let (class, _) = kind.criteria_class();
    let Some(d) = e.model(v, class, &[]) else {
        return Err(e.lines);
    };
    let (snake, alias) = if kind.is_trajectory() {
        ("expected_agent_behavior", "expectedAgentBehavior")
    } else {
        ("expected_output", "expectedOutput")
    };
    let Some((value, which)) = field(d, snake, alias) else {
        e.push(&[Loc::Key(alias.into())], "missing", "Field required", v);
        return Err(e.lines);
    };
    let loc = [Loc::Key(
        if which == "camel" { alias } else { snake }.into(),
    )];
    if kind.is_trajectory() {
        match e.string(value, &loc) {
            Some(s) => Ok(Criteria::Trajectory {
                expected_agent_behavior: s.to_owned(),
            }),
            None => Err(e.lines),
        }
    } else {
        match value {
            Value::Dict(_) | Value::Str(_) => Ok(Criteria::Output {
                expected_output: value.clone(),
            }),
            other => {
                // `dict[str, Any] | str`: each choice's error, labelled.
                let mut l = loc.to_vec();
                l.push(Loc::Key("dict[str,any]".into()));
                e.push(&l, "dict_type", "Input should be a valid dictionary", other);
                let mut l = loc.to_vec();
                l.push(Loc::Key("str".into()));
                e.push(&l, "string_type", "Input should be a valid string", other);
                Err(e.lines)
            }
        }
    }
}

/// `validate_and_evaluate_criteria` then `evaluate`.
///
/// `criteria: None` (or a Python `None`) means the config's default
/// criteria. `simulation_instructions` fills `{{SimulationInstructions}}`.
#[allow(clippy::too_many_arguments)]
pub async fn evaluate<T: Transport>(
    transport: &T,
    endpoint: &Endpoint,
    discovery: &Discovery,
    kind: Kind,
    cfg: &JudgeConfig,
    criteria: Option<&Value>,
    trace: TraceView<'_>,
    simulation_instructions: &str,
) -> Outcome {
    if cfg.kind != kind {
        return Outcome::error(format!(
            "the judge's config was parsed for {}, not {}",
            cfg.kind.id(),
            kind.id()
        ));
    }
    let parsed;
    let criteria = match criteria.filter(|v| !matches!(v, Value::None)) {
        Some(v) => match parse_criteria(kind, v) {
            Ok(c) => {
                parsed = c;
                &parsed
            }
            Err(message) => return Outcome::error(message),
        },
        None => match &cfg.default_criteria {
            Some(c) => c,
            None if kind.is_trajectory() => {
                return Outcome::error(
                    "Python.NO_EVALUATION_CRITERIA_PROVIDED: No evaluation criteria provided and no default evaluation criteria configured: No evaluation criteria provided and no default evaluation criteria configured",
                );
            }
            None => {
                return Outcome::error(
                    "Python.MISSING_EVALUATION_CRITERIA: No evaluation criteria provided: Evaluation criteria must be provided either in the request or as default in config",
                );
            }
        },
    };
    let judged = judge(
        transport,
        endpoint,
        discovery,
        kind,
        cfg,
        criteria,
        trace,
        simulation_instructions,
    )
    .await;
    match judged {
        Ok((score, details)) => Outcome::ok(score, details),
        Err(raised) => {
            tracing::debug!(code = raised.code, "uipath LLM judge raised");
            Outcome::thrown(raised.detail)
        }
    }
}

/// An exception raised inside `evaluate()`: the reference's error code
/// (for logs) and its `str()`.
struct Raised {
    code: &'static str,
    detail: String,
}

impl Raised {
    fn new(code: &'static str, detail: impl Into<String>) -> Raised {
        Raised {
            code,
            detail: detail.into(),
        }
    }
}

/// The body of `LLMJudgeMixin.evaluate`.
#[allow(clippy::too_many_arguments)]
async fn judge<T: Transport>(
    transport: &T,
    endpoint: &Endpoint,
    discovery: &Discovery,
    kind: Kind,
    cfg: &JudgeConfig,
    criteria: &Criteria,
    trace: TraceView<'_>,
    simulation_instructions: &str,
) -> Result<(f64, Json), Raised> {
    // Expected first: `_create_evaluation_prompt` computes it before actual.
    let (expected, actual) = match (kind.is_trajectory(), criteria) {
        (
            true,
            Criteria::Trajectory {
                expected_agent_behavior,
            },
        ) => (
            expected_agent_behavior.clone(),
            prompt::trace_to_str(trace.spans),
        ),
        (false, Criteria::Output { expected_output }) => {
            let raised = |d| Raised::new("OUTPUT", d);
            let expected =
                output::expected(expected_output, &cfg.target_output_key).map_err(raised)?;
            let actual = output::actual(&workload_output(trace.output), &cfg.target_output_key)
                .map_err(raised)?;
            (expected.py_str(), actual.py_str())
        }
        _ => {
            return Err(Raised::new(
                "CRITERIA_KIND",
                format!(
                    "criteria of another evaluator type were bound to {}",
                    kind.id()
                ),
            ));
        }
    };
    let (actual_ph, expected_ph) = kind.placeholders();
    let mut user = cfg
        .prompt
        .replace(actual_ph, &actual)
        .replace(expected_ph, &expected);
    if kind.is_trajectory() {
        user = user
            .replace("{{UserOrSyntheticInput}}", &agent_input(trace.input))
            .replace("{{SimulationInstructions}}", simulation_instructions);
    }

    let model = cfg.model.as_str();
    let claude_45 = model.contains("claude-haiku-4-5") || model.contains("claude-sonnet-4-5");
    let chat = gateway::Chat {
        model,
        system: kind.system_prompt(),
        user: &user,
        temperature: cfg.temperature,
        max_tokens: cfg.max_tokens.or(claude_45.then_some(8000)),
    };
    let failed = |e: String| {
        Raised::new(
            "FAILED_TO_GET_LLM_RESPONSE",
            format!("Model: {model}, Error: {e}"),
        )
    };
    let body = gateway::chat(transport, endpoint, discovery, &chat)
        .await
        .map_err(failed)?;
    let completion =
        completion::validate(&body).map_err(|e| failed(format!("ValidationError: {e}")))?;
    let answer = completion::extract(&completion).map_err(|r| Raised::new(r.code, r.detail))?;

    let mut details = Map::with_capacity(3);
    details.insert("expected".into(), Json::String(expected));
    details.insert("actual".into(), Json::String(actual));
    details.insert("justification".into(), Json::String(answer.justification));
    Ok((pynum::clamp_score(answer.score), Json::Object(details)))
}

/// `agent_input` as the prompt shows it: `str()` of the root input parsed
/// as a JSON object, else `None`.
fn agent_input(input: Option<AttrRef<'_>>) -> String {
    match input {
        Some(AttrRef::Str(s)) => match crate::pyvalue::json::loads(s) {
            Ok(v @ Value::Dict(_)) => v.repr(),
            _ => "None".to_owned(),
        },
        _ => "None".to_owned(),
    }
}

/// `workload_output`, by the conformance cases' convention: the root output
/// parsed as a JSON object, else the raw string; `{}` when absent or not a
/// string. (The reference's own runtime passes the agent's output object,
/// `{}` when it is falsy.)
fn workload_output(output: Option<AttrRef<'_>>) -> Value {
    match output {
        Some(AttrRef::Str(s)) => match crate::pyvalue::json::loads(s) {
            Ok(v @ Value::Dict(_)) => v,
            _ => Value::Str(s.to_owned()),
        },
        _ => Value::Dict(Dict::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pyvalue::json::loads;

    fn dict(s: &str) -> Dict {
        match loads(s) {
            Ok(Value::Dict(d)) => d,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn kinds_round_trip() {
        for k in Kind::ALL {
            assert_eq!(Kind::parse(k.id()), Some(k));
        }
        assert_eq!(Kind::parse("uipath-llm-judge-output"), None);
    }

    #[test]
    fn config_defaults_and_auto_append() {
        let c = parse_config(Kind::TrajectorySimilarity, &dict("{}"), "").unwrap();
        assert_eq!(c.prompt, prompt::LLM_JUDGE_TRAJECTORY_DEFAULT_USER_PROMPT);
        assert_eq!(
            (c.model.as_str(), c.temperature, c.max_tokens),
            ("", 0.0, None)
        );
        let c = parse_config(
            Kind::OutputSemanticSimilarity,
            &dict(r#"{"prompt": "p {{ExpectedOutput}}", "temperature": 1, "maxTokens": "50", "targetOutputKey": ["a"]}"#),
            "",
        )
        .unwrap();
        assert_eq!(
            c.prompt,
            "p {{ExpectedOutput}}\n\n## Actual Output\n<ActualOutput>\n{{ActualOutput}}\n</ActualOutput>"
        );
        assert_eq!((c.temperature, c.max_tokens), (1.0, Some(50)));
        assert_eq!(c.target_output_key, TargetKey::Keys(vec!["a".into()]));
        let e = parse_config(
            Kind::OutputSemanticSimilarity,
            &dict(r#"{"prompt": 3}"#),
            "cfg",
        )
        .unwrap_err();
        assert_eq!(e.path, "cfg.prompt");
        assert!(
            parse_config(
                Kind::OutputSemanticSimilarity,
                &dict(r#"{"line_by_line_evaluator": true}"#),
                ""
            )
            .is_err()
        );
    }

    #[test]
    fn criteria_errors_are_the_references() {
        assert_eq!(
            parse_criteria(Kind::TrajectorySimilarity, &loads("{}").unwrap()).unwrap_err(),
            "Python.CANNOT_VALIDATE_EVALUATION_CRITERIA: Cannot validate <class 'dict'> to <class 'uipath.eval.evaluators.llm_judge_trajectory_evaluator.TrajectoryEvaluationCriteria'>: Error: 1 validation error for TrajectoryEvaluationCriteria\nexpectedAgentBehavior\n  Field required [type=missing, input_value={}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing"
        );
        assert_eq!(
            parse_criteria(
                Kind::OutputStrictJsonSimilarity,
                &loads(r#"{"expected_output": 5}"#).unwrap()
            )
            .unwrap_err(),
            "Python.CANNOT_VALIDATE_EVALUATION_CRITERIA: Cannot validate <class 'dict'> to <class 'uipath.eval.evaluators.output_evaluator.OutputEvaluationCriteria'>: Error: 2 validation errors for OutputEvaluationCriteria\nexpected_output.dict[str,any]\n  Input should be a valid dictionary [type=dict_type, input_value=5, input_type=int]\n    For further information visit https://errors.pydantic.dev/2.14/v/dict_type\nexpected_output.str\n  Input should be a valid string [type=string_type, input_value=5, input_type=int]\n    For further information visit https://errors.pydantic.dev/2.14/v/string_type"
        );
        assert!(
            parse_criteria(Kind::TrajectorySimulation, &Value::str("x"))
                .unwrap_err()
                .contains("Input should be a valid dictionary or instance of TrajectoryEvaluationCriteria [type=model_type, input_value='x', input_type=str]")
        );
    }

    #[test]
    fn execution_inputs() {
        let s = AttrRef::Str;
        assert_eq!(agent_input(Some(s(r#"{"q": 1}"#))), "{'q': 1}");
        assert_eq!(agent_input(Some(s("[1]"))), "None");
        assert_eq!(agent_input(None), "None");
        assert_eq!(workload_output(Some(s("plain"))).repr(), "'plain'");
        assert_eq!(workload_output(Some(s("[1]"))).repr(), "'[1]'");
        assert_eq!(workload_output(Some(s(""))).repr(), "''");
        assert_eq!(workload_output(Some(AttrRef::Int(3))).repr(), "{}");
    }
}

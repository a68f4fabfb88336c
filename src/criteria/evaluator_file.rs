//! UiPath evaluator files (version "1.0", the coded format).

use std::path::Path;

use super::{LoadError, Unsupported, read_json};
use crate::evaluator::common::{Invalid, expect_str, field, join, lax_float};
use crate::evaluator::{self, Evaluator, EvaluatorType};
use crate::pyvalue::{Dict, Value};

/// An evaluator file's content: one toolscore runs, or one it skips.
#[derive(Debug, Clone)]
pub enum LoadedEvaluator {
    Supported(Evaluator),
    Unsupported(Unsupported),
}

impl LoadedEvaluator {
    pub fn id(&self) -> &str {
        match self {
            LoadedEvaluator::Supported(e) => &e.id,
            LoadedEvaluator::Unsupported(u) => &u.id,
        }
    }
}

pub fn load_evaluator_file(file: &Path) -> Result<LoadedEvaluator, LoadError> {
    parse_evaluator_file(&read_json(file)?, file)
}

/// Validates an evaluator file's JSON. Legacy (unversioned) files are
/// refused with a clear message; LLM-judged and custom evaluators load as
/// [`LoadedEvaluator::Unsupported`].
pub fn parse_evaluator_file(v: &Value, file: &Path) -> Result<LoadedEvaluator, LoadError> {
    let err = |e: Invalid| LoadError::new(file, e.path, e.message);
    let Some(d) = v.as_dict() else {
        return Err(LoadError::new(
            file,
            "",
            "an evaluator file must hold a JSON object",
        ));
    };
    match d.get_str("version") {
        Some(Value::Str(s)) if s == "1.0" => {}
        None => {
            return Err(LoadError::new(
                file,
                "version",
                "legacy (unversioned) UiPath evaluator files are not supported; \
                 use the version \"1.0\" format with `evaluatorTypeId`",
            ));
        }
        Some(other) => {
            return Err(LoadError::new(
                file,
                "version",
                format!(
                    "unsupported evaluator file version {}; expected \"1.0\"",
                    other.repr()
                ),
            ));
        }
    }
    let id = required_str(d, "id").map_err(err)?;
    let type_id = required_str(d, "evaluatorTypeId").map_err(err)?;
    let config = match d.get_str("evaluatorConfig") {
        None | Some(Value::None) => Dict::new(),
        Some(Value::Dict(c)) => c.clone(),
        Some(other) => {
            return Err(LoadError::new(
                file,
                "evaluatorConfig",
                format!("must be an object, got {}", other.type_name()),
            ));
        }
    };
    let unsupported = |reason: String| {
        Ok(LoadedEvaluator::Unsupported(Unsupported {
            id: id.clone(),
            type_id: type_id.clone(),
            file: file.to_owned(),
            reason,
        }))
    };
    if d.get_str("evaluatorSchema").is_some() || type_id.starts_with("file://") {
        return unsupported(
            "a custom Python evaluator; toolscore runs only its built-in evaluators".into(),
        );
    }
    let Some(kind) = EvaluatorType::parse(&type_id) else {
        if type_id.starts_with("uipath-") {
            return unsupported(format!(
                "{type_id} is not an evaluator toolscore runs (it runs the tool-call evaluators and the LLM judges `uipath-llm-judge-trajectory-similarity`, `-trajectory-simulation`, `-output-semantic-similarity` and `-output-strict-json-similarity`)"
            ));
        }
        return Err(LoadError::new(
            file,
            "evaluatorTypeId",
            format!(
                "unknown evaluator type {type_id:?}; supported: {}",
                supported_types()
            ),
        ));
    };
    let mut ev = build(&id, kind, &config, "evaluatorConfig").map_err(err)?;
    // A top-level name/description overrides the one in evaluatorConfig.
    for (key, slot) in [("name", &mut ev.name), ("description", &mut ev.description)] {
        if let Some(v) = d.get_str(key).filter(|v| !matches!(v, Value::None)) {
            *slot = expect_str(v, key).map_err(err)?;
        }
    }
    Ok(LoadedEvaluator::Supported(ev))
}

pub(crate) fn supported_types() -> String {
    EvaluatorType::all()
        .map(|t| format!("{} ({})", t.id(), t.alias()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn required_str(d: &Dict, key: &str) -> Result<String, Invalid> {
    match d.get_str(key) {
        Some(v) => expect_str(v, key),
        None => Err(Invalid::new(key, "required key is missing")),
    }
}

/// Builds an evaluator from its type and config object (UiPath's
/// `evaluatorConfig`, or toolscore's inline `config`), validating the config
/// and its `defaultEvaluationCriteria`. Errors carry paths under `prefix`.
pub fn build(
    id: &str,
    kind: EvaluatorType,
    config: &Dict,
    prefix: &str,
) -> Result<Evaluator, Invalid> {
    let mut ev = Evaluator::with_defaults(id, kind);
    ev.config = evaluator::parse_config(kind, config, prefix)?;
    ev.config_source = std::sync::Arc::new(config.clone());
    for (key, slot) in [("name", &mut ev.name), ("description", &mut ev.description)] {
        if let Some(v) = config.get_str(key).filter(|v| !matches!(v, Value::None)) {
            *slot = expect_str(v, &join(prefix, key))?;
        }
    }
    if let Some((v, which)) = field(
        config,
        "default_evaluation_criteria",
        "defaultEvaluationCriteria",
    ) {
        let key = if which == "camel" {
            "defaultEvaluationCriteria"
        } else {
            "default_evaluation_criteria"
        };
        let path = join(prefix, key);
        if !matches!(v, Value::None) {
            let c = ev
                .parse_criteria(v)
                .map_err(|e| criteria_invalid(e, &path))?;
            ev.default_criteria = Some(c);
        }
    }
    if kind != EvaluatorType::ToolCorrectness
        && let Some(t) = config.get_str("threshold")
    {
        ev.threshold = Some(lax_float(t, &join(prefix, "threshold"))?);
    }
    Ok(ev)
}

/// A criteria error as a validation failure under `path`.
pub(crate) fn criteria_invalid(e: evaluator::CriteriaError, path: &str) -> Invalid {
    use evaluator::CriteriaError as C;
    match e {
        C::Invalid(inner, _) | C::InvalidExpectedTool(inner) => Invalid::new(
            join(path, &inner.path),
            format!("invalid criteria: {}", inner.message),
        ),
        other => Invalid::new(path, other.to_string()),
    }
}

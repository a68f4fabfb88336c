//! The evaluators: pure functions of a trace's tool calls, an evaluator's
//! config and the bound criteria. No I/O, no clock — except the LLM judges
//! (`llm/`), which call a model through a `Transport` their caller supplies
//! (`llm/`).
//!
//! Each evaluator lives in its own file with its config, its criteria and
//! its scoring, reproducing the reference implementation (uipath 2.14.44,
//! deepeval 4.3.1) score for score, quirks included (`reference/SEMANTICS.md`),
//! and declares itself there ([`kind::Kind`]); `kinds!` below lists them.

pub mod args;
pub mod common;
pub mod count;
pub mod judged;
pub mod kind;
pub mod order;
pub mod output;
pub mod tool_correctness;

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value as Json};

use crate::extract::ToolCall;
use crate::pyvalue::{Dict, Value};
pub use args::ArgsConfig;
use common::Invalid;
pub use common::Strict;
use kind::Judged;

kind::kinds! {
    units {
        Count => count::Count,
        Order => order::Order,
        Args => args::Args,
        Output => output::Output,
        ToolCorrectness => tool_correctness::ToolCorrectness,
    }
    families {
        // The UiPath LLM judges (`judged::uipath`).
        Judge => judged::uipath::Kind,
    }
}

impl Serialize for EvaluatorType {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.id())
    }
}

impl EvaluatorType {
    /// The UiPath LLM judge this type is, if it is one.
    pub fn judge_kind(self) -> Option<judged::uipath::Kind> {
        if let EvaluatorType::Judge(kind) = self {
            Some(kind)
        } else {
            None
        }
    }

    /// Accepts the canonical id or the alias.
    pub fn parse(s: &str) -> Option<EvaluatorType> {
        Self::all().find(|t| t.id() == s || t.alias() == s)
    }
}

/// The alias of a UiPath type: its id without `uipath-`.
pub(crate) fn uipath_alias(id: &'static str) -> &'static str {
    id.strip_prefix("uipath-").unwrap_or(id)
}

/// Why criteria could not be bound; the messages follow the reference's
/// error codes so users can search for them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CriteriaError {
    #[error(
        "Python.NO_EVALUATION_CRITERIA_PROVIDED: No evaluation criteria provided and no default evaluation criteria configured"
    )]
    Missing,
    #[error("Python.CANNOT_VALIDATE_EVALUATION_CRITERIA: invalid criteria for {evaluator} at {0}", evaluator = .1)]
    Invalid(Invalid, &'static str),
    /// deepeval refuses a test case without `expected_tools`.
    #[error(
        "MissingTestCaseParamsError: 'expected_tools' cannot be None for the 'Tool Correctness' metric"
    )]
    MissingExpectedTools,
    /// deepeval's pydantic `ToolCall` refused an expected tool.
    #[error("ValidationError: invalid expected tool at {0}")]
    InvalidExpectedTool(Invalid),
    /// A UiPath LLM judge refused them (the reference's `code: title: detail`).
    #[error("{0}")]
    Judge(String),
}

/// A configured evaluator, ready to run.
#[derive(Debug, Clone)]
pub struct Evaluator {
    pub id: Arc<str>,
    pub name: String,
    pub description: String,
    pub kind: EvaluatorType,
    pub config: Config,
    /// `defaultEvaluationCriteria`, validated when the evaluator was loaded.
    pub default_criteria: Option<Criteria>,
    /// A `threshold` in a UiPath evaluator's config: `passed = score >= threshold`.
    /// (deepeval's threshold lives in its own config.)
    pub threshold: Option<f64>,
    /// The config object it was built from (empty for the defaults): a
    /// database keeps it to render stored scores' details again
    /// (`criteria::Source`).
    pub config_source: Arc<Dict>,
}

impl Evaluator {
    /// An evaluator with the reference's default config and no default criteria.
    pub fn with_defaults(id: impl Into<Arc<str>>, kind: EvaluatorType) -> Evaluator {
        Evaluator {
            id: id.into(),
            name: kind.default_name().to_owned(),
            description: String::new(),
            kind,
            config: default_config(kind),
            default_criteria: None,
            threshold: None,
            config_source: Arc::default(),
        }
    }

    /// Validates `criteria` for this evaluator's type.
    pub fn parse_criteria(&self, criteria: &Value) -> Result<Criteria, CriteriaError> {
        parse_criteria(self.kind, criteria)
    }

    /// The reference's `validate_and_evaluate_criteria`: `None` means "use
    /// the default criteria"; invalid or missing criteria are an error outcome.
    pub fn evaluate_value(&self, calls: &[ToolCall], criteria: Option<&Value>) -> Outcome {
        match self.bind_criteria(criteria) {
            Ok(c) => self.evaluate(calls, &c),
            Err(e) => Outcome::error(e.to_string()),
        }
    }

    /// Criteria as given, validated, or (`None`) the evaluator's default.
    pub fn bind_criteria(
        &self,
        criteria: Option<&Value>,
    ) -> Result<std::borrow::Cow<'_, Criteria>, CriteriaError> {
        use std::borrow::Cow;
        match criteria {
            Some(v) => self.parse_criteria(v).map(Cow::Owned),
            None => match &self.default_criteria {
                Some(c) => Ok(Cow::Borrowed(c)),
                None => Err(self.kind.missing_criteria()),
            },
        }
    }

    /// Whether scoring calls a model (`llm/` runs these).
    pub fn needs_model(&self) -> bool {
        self.config.judged() == Judged::Yes { asks: true }
    }

    /// Whether the evaluator is configured as an LLM judge, whether or not
    /// it has a request to make (deepeval with `available_tools: []` makes
    /// none, but reports the LLM path's details).
    pub fn is_llm_judged(&self) -> bool {
        matches!(self.config.judged(), Judged::Yes { .. })
    }

    /// Scores `calls` against validated criteria, without a model, and
    /// explains the score: an evaluator that [needs one](Self::needs_model)
    /// gives an error outcome.
    pub fn evaluate(&self, calls: &[ToolCall], criteria: &Criteria) -> Outcome {
        self.evaluate_as(calls, criteria, Explain::Yes)
    }

    /// [`evaluate`](Self::evaluate), with the details written only when
    /// `explain` says so: the pipeline scores with [`Explain::No`] and the
    /// store renders the details when they are read, by this same code.
    pub fn evaluate_as(
        &self,
        calls: &[ToolCall],
        criteria: &Criteria,
        explain: Explain,
    ) -> Outcome {
        let mut outcome = self.score(calls, criteria, explain);
        if let (Some(t), Some(score)) = (self.threshold, outcome.score)
            && outcome.threshold.is_none()
        {
            outcome.threshold = Some(t);
            outcome.passed = Some(score >= t);
        }
        outcome
    }

    fn score(&self, calls: &[ToolCall], criteria: &Criteria, explain: Explain) -> Outcome {
        if let Some(what) = self.config.reads_content()
            && let Some(call) = calls.iter().find(|c| c.content_missing)
        {
            return Outcome::skipped(format!(
                "{} ({}) needs the tool calls' {what}, which the instrumentation did not \
                 capture (for `{}` and others): turn its content capture on",
                self.id,
                self.kind.id(),
                call.name
            ));
        }
        if self.needs_model() {
            return Outcome::error(format!(
                "{} ({}) is LLM-judged and was run without a model provider",
                self.id,
                self.kind.id()
            ));
        }
        score_kind(self.kind, &self.config, criteria, calls, explain).unwrap_or_else(|| {
            Outcome::error(format!(
                "criteria of another evaluator type were bound to {} ({})",
                self.id,
                self.kind.id()
            ))
        })
    }
}

/// Whether an evaluation writes its details. A result's details are a pure
/// function of its tool calls, criteria and config, so the pipeline scores
/// without them and the store renders them, through the same evaluator,
/// when someone reads them (ARCHITECTURE.md, "A stored result").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Explain {
    No,
    Yes,
}

impl Explain {
    /// `details()` when explaining, else [`OutcomeDetails::Unwritten`]:
    /// scoring alone never builds them.
    pub(crate) fn details<D: Into<OutcomeDetails>>(
        self,
        details: impl FnOnce() -> D,
    ) -> OutcomeDetails {
        match self {
            Explain::Yes => details().into(),
            Explain::No => OutcomeDetails::Unwritten,
        }
    }
}

/// Whether an evaluation ran to a score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Error,
    /// An LLM judge's score, asked for and not answered yet: the trace's
    /// record is stored again, same revision, when the model answers.
    Pending,
    /// An LLM judge that did not run (not sampled, its provider's budget or
    /// the judge queue full, shut down first): `error` says why.
    Skipped,
}

impl Status {
    /// The status as the API and the results database write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Error => "error",
            Status::Pending => "pending",
            Status::Skipped => "skipped",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        [Status::Ok, Status::Error, Status::Pending, Status::Skipped]
            .into_iter()
            .find(|st| st.as_str() == s)
    }
}

/// The result of one evaluator on one trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub status: Status,
    /// `None` exactly when `status` is `Error`.
    pub score: Option<f64>,
    /// deepeval's strict mode turns a failing score into the int `0`.
    pub score_is_int: bool,
    /// The reference's details: UiPath's justification object, deepeval's
    /// reason/success/threshold, or the reference's error string.
    pub details: OutcomeDetails,
    pub error: Option<String>,
    /// `score >= threshold` where the evaluator has a threshold.
    pub passed: Option<bool>,
    pub threshold: Option<f64>,
}

impl Outcome {
    pub fn ok(score: f64, details: impl Into<OutcomeDetails>) -> Outcome {
        Outcome {
            status: Status::Ok,
            score: Some(score),
            score_is_int: false,
            details: details.into(),
            error: None,
            passed: None,
            threshold: None,
        }
    }

    pub fn error(message: impl Into<String>) -> Outcome {
        let message = message.into();
        Outcome {
            status: Status::Error,
            score: None,
            score_is_int: false,
            details: OutcomeDetails::Value(Json::Null),
            error: Some(message),
            passed: None,
            threshold: None,
        }
    }

    /// An LLM judge's placeholder until its model answers.
    pub fn pending() -> Outcome {
        Outcome {
            status: Status::Pending,
            error: None,
            ..Outcome::error(String::new())
        }
    }

    /// An LLM judge that did not run, and why.
    pub fn skipped(reason: impl Into<String>) -> Outcome {
        Outcome {
            status: Status::Skipped,
            ..Outcome::error(reason)
        }
    }

    /// uipath's `ErrorEvaluationResult` for an exception caught inside the
    /// evaluator: details and error are `Exception thrown by evaluator: …`.
    pub fn thrown(exception: impl std::fmt::Display) -> Outcome {
        let msg = format!("Exception thrown by evaluator: {exception}");
        let mut o = Outcome::error(msg.clone());
        o.details = OutcomeDetails::Value(Json::String(msg));
        o
    }
}

/// An outcome's details: a JSON value, or the text `serde_json::to_string`
/// writes for one, written directly. The UiPath evaluators write their
/// justification as text (results are stored as text anyway), since a
/// `serde_json` map of a long trace's attempts cost more than the
/// evaluation itself (perf/README.md). Equality is that of the JSON values.
#[derive(Debug, Clone)]
pub enum OutcomeDetails {
    Value(Json),
    /// Compact JSON text, exactly as `serde_json::to_string` of its value.
    Text(String),
    /// Scored with [`Explain::No`]: the same evaluation with
    /// [`Explain::Yes`] writes them.
    Unwritten,
}

impl OutcomeDetails {
    /// The details as a JSON value (text is parsed; it always parses;
    /// unwritten details are `null`).
    pub fn to_json(&self) -> std::borrow::Cow<'_, Json> {
        match self {
            OutcomeDetails::Value(v) => std::borrow::Cow::Borrowed(v),
            OutcomeDetails::Text(t) => {
                std::borrow::Cow::Owned(serde_json::from_str(t).unwrap_or(Json::Null))
            }
            OutcomeDetails::Unwritten => std::borrow::Cow::Owned(Json::Null),
        }
    }
}

impl From<Json> for OutcomeDetails {
    fn from(v: Json) -> Self {
        OutcomeDetails::Value(v)
    }
}

impl PartialEq for OutcomeDetails {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (OutcomeDetails::Unwritten, OutcomeDetails::Unwritten) => true,
            (OutcomeDetails::Unwritten, _) | (_, OutcomeDetails::Unwritten) => false,
            _ => self.to_json() == other.to_json(),
        }
    }
}

impl std::fmt::Display for OutcomeDetails {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OutcomeDetails::Value(v) => v.fmt(f),
            OutcomeDetails::Text(t) => f.write_str(t),
            OutcomeDetails::Unwritten => f.write_str("null"),
        }
    }
}

/// A UiPath justification object: `expected`, `actual`, then the extra key.
pub(crate) fn justification(
    expected: &str,
    actual: &str,
    extra_key: &str,
    extra: &Json,
) -> OutcomeDetails {
    justification_with(expected, actual, extra_key, |out| {
        crate::json_text::write_value(extra, out);
    })
}

/// [`justification`] with the extra value written by `write_extra`, as the
/// JSON text `serde_json` would write for it: every trace's details are
/// stored as text, and a `serde_json` map for each of them (three keys,
/// hashed, then serialised, then dropped) cost more than writing the text.
pub(crate) fn justification_with(
    expected: &str,
    actual: &str,
    extra_key: &str,
    write_extra: impl FnOnce(&mut String),
) -> OutcomeDetails {
    use crate::json_text::write_str;
    OutcomeDetails::Text(crate::json_text::exact(|out| {
        out.push_str("{\"expected\":");
        write_str(expected, out);
        out.push_str(",\"actual\":");
        write_str(actual, out);
        out.push(',');
        write_str(extra_key, out);
        out.push(':');
        write_extra(out);
        out.push('}');
    }))
}

/// A one-entry `{"_result": message}` explanation.
pub(crate) fn result_message(message: &str) -> Json {
    let mut m = Map::with_capacity(1);
    m.insert("_result".into(), Json::String(message.into()));
    Json::Object(m)
}

/// Python `repr()` of a list of strings.
pub(crate) fn repr_str_list<'a, I>(items: I) -> String
where
    I: IntoIterator<Item = &'a str>,
    I::IntoIter: Clone,
{
    let items = items.into_iter();
    // Sized once: quotes and separators take 4 bytes per item.
    let mut out = String::with_capacity(2 + items.clone().map(|s| s.len() + 4).sum::<usize>());
    out.push('[');
    for (i, s) in items.enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        crate::pyvalue::repr::str_repr(s, &mut out);
    }
    out.push(']');
    out
}

/// `score / total` as Python computes `len(a) / len(b)`.
pub(crate) fn ratio(n: usize, total: usize) -> f64 {
    n as f64 / total as f64
}

#[cfg(test)]
pub(crate) mod tests;

#[cfg(test)]
mod evaluator_tests;

#[cfg(test)]
mod type_tests {
    use super::*;

    /// Each type found by its id and alias, every UiPath judge kind among
    /// them, no id twice.
    #[test]
    fn every_type_parses_from_its_id_and_alias() {
        for t in EvaluatorType::all() {
            assert_eq!(EvaluatorType::parse(t.id()), Some(t), "{t:?}");
            assert_eq!(EvaluatorType::parse(t.alias()), Some(t), "{t:?}");
            assert_eq!(
                serde_json::to_value(t).ok(),
                Some(Json::String(t.id().into()))
            );
        }
        for kind in judged::uipath::Kind::ALL {
            assert!(EvaluatorType::all().any(|t| t == EvaluatorType::Judge(kind)));
        }
        let ids: std::collections::HashSet<_> = EvaluatorType::all().map(|t| t.id()).collect();
        assert_eq!(ids.len(), EvaluatorType::all().count());
        assert_eq!(ids.len(), 9);
    }
}

//! Calling the models of the LLM-judged evaluators: the configured
//! providers (`llm:`), their HTTP client, and the dispatch of an evaluator
//! to its judge (`crate::evaluator::judged`).

pub mod budget;
pub mod cache;
pub mod config;
pub mod http;
pub mod live;
pub mod metrics;
mod traced;

use crate::evaluator::judged::uipath::Discovery;
use crate::evaluator::judged::{self, TraceView};
use crate::evaluator::{Config, Criteria, Evaluator, Outcome};
use crate::pyvalue::Value;
use crate::record::{AttrRef, Spans};
use crate::store::ModelCall;
use traced::{CallLog, Traced};

use crate::key_error::KeyError;
use config::{LlmConfig, ProviderKind};
use http::Provider;
use metrics::LlmMetrics;

/// The providers the judges call, built once for the process: deepeval's
/// tool selection calls the `openai` one, UiPath's judges the `uipath` one.
/// A judge whose provider is missing gives an error outcome naming why.
pub struct Judges {
    openai: Result<Provider, String>,
    uipath: Result<Provider, String>,
    /// UiPath's model discovery, cached for the process as the reference does.
    discovery: Discovery,
}

impl Judges {
    /// Reads every configured provider's key and TLS files.
    pub fn build(config: &LlmConfig, metrics: &LlmMetrics) -> Result<Judges, KeyError> {
        let mut built = Vec::with_capacity(config.providers.len());
        for (name, p) in &config.providers {
            built.push(Provider::build(name, p, metrics.clone())?);
        }
        let pick = |kind: ProviderKind| -> Result<Provider, String> {
            let name = config.provider_for(kind)?;
            built
                .iter()
                .find(|p| &*p.name == name)
                .cloned()
                .ok_or_else(|| format!("no provider named {name:?}"))
        };
        Ok(Judges {
            openai: pick(ProviderKind::Openai),
            uipath: pick(ProviderKind::Uipath),
            discovery: Discovery::new(),
        })
    }

    /// Why `ev` cannot run: it needs a model and its provider is missing.
    pub fn missing_provider(&self, ev: &Evaluator) -> Option<&str> {
        if !ev.needs_model() {
            return None;
        }
        let provider = match ev.config {
            Config::Judge(_) => &self.uipath,
            _ => &self.openai,
        };
        provider.as_ref().err().map(String::as_str)
    }

    /// Scores one evaluator against bound criteria, calling its model if it
    /// has one.
    pub async fn evaluate(
        &self,
        ev: &Evaluator,
        criteria: &Criteria,
        view: TraceView<'_>,
    ) -> Outcome {
        self.evaluate_logged(ev, criteria, view, &CallLog::default())
            .await
    }

    /// [`evaluate`](Self::evaluate), and the model call the score came
    /// from (its last attempt), if one was made.
    pub async fn judge(
        &self,
        ev: &Evaluator,
        criteria: &Criteria,
        view: TraceView<'_>,
    ) -> (Outcome, Option<ModelCall>) {
        let log = CallLog::default();
        let outcome = self.evaluate_logged(ev, criteria, view, &log).await;
        (outcome, log.take())
    }

    async fn evaluate_logged(
        &self,
        ev: &Evaluator,
        criteria: &Criteria,
        view: TraceView<'_>,
        log: &CallLog,
    ) -> Outcome {
        match (&ev.config, criteria) {
            // The reference's evaluation runtime never sets simulation
            // instructions (uipath `eval/runtime/runtime.py`): "".
            (Config::Judge(_), Criteria::Judge(v)) => self.uipath(ev, Some(v), view, "", log).await,
            // With the key present, even empty, deepeval reports the
            // LLM path's details (`verbose_logs`, `evaluation_cost`); a
            // request is made only for a non-empty list.
            (Config::ToolCorrectness(cfg), Criteria::ToolCorrectness(expected))
                if cfg.available_tools.is_some() =>
            {
                let input = deepeval_input(view.input);
                let admitted = match &self.openai {
                    Ok(p) if ev.needs_model() => p.transport.admit(),
                    _ => Ok(()),
                };
                match &self.openai {
                    Ok(p) if admitted.is_err() => over_budget(ev, p, admitted),
                    Ok(p) => {
                        judged::deepeval::evaluate(
                            &Traced::new(p, log),
                            &p.endpoint,
                            view.calls,
                            expected,
                            cfg,
                            &input,
                        )
                        .await
                    }
                    Err(why) if ev.needs_model() => no_provider(ev, why),
                    Err(why) => {
                        let none = NoProvider(why.clone());
                        let endpoint = judged::Endpoint {
                            base_url: String::new(),
                            token: String::new(),
                            action_id: None,
                        };
                        judged::deepeval::evaluate(
                            &none, &endpoint, view.calls, expected, cfg, &input,
                        )
                        .await
                    }
                }
            }
            _ => ev.evaluate(view.calls, criteria),
        }
    }

    /// [`evaluate`](Self::evaluate) with criteria as given (`None`: the
    /// evaluator's default), as `POST /v1/evaluate` and the conformance
    /// cases pass them: criteria errors are error outcomes.
    /// `simulation_instructions` fill UiPath's `{{SimulationInstructions}}`
    /// (the reference's runtime passes `""`).
    pub async fn evaluate_value(
        &self,
        ev: &Evaluator,
        criteria: Option<&Value>,
        view: TraceView<'_>,
        simulation_instructions: &str,
    ) -> Outcome {
        if matches!(ev.config, Config::Judge(_)) {
            // The judge applies its own default and raises as the reference does.
            return self
                .uipath(
                    ev,
                    criteria,
                    view,
                    simulation_instructions,
                    &CallLog::default(),
                )
                .await;
        }
        match ev.bind_criteria(criteria) {
            Ok(bound) => self.evaluate(ev, &bound, view).await,
            Err(e) => Outcome::error(e.to_string()),
        }
    }

    async fn uipath(
        &self,
        ev: &Evaluator,
        criteria: Option<&Value>,
        view: TraceView<'_>,
        simulation_instructions: &str,
        log: &CallLog,
    ) -> Outcome {
        let (Config::Judge(cfg), Some(kind)) = (&ev.config, ev.kind.judge_kind()) else {
            return ev.evaluate(view.calls, &Criteria::Judge(Value::None));
        };
        let provider = match &self.uipath {
            Ok(p) => p,
            Err(why) => return no_provider(ev, why),
        };
        let admitted = provider.transport.admit();
        if admitted.is_err() {
            return over_budget(ev, provider, admitted);
        }
        judged::uipath::evaluate(
            &Traced::new(provider, log),
            &provider.endpoint,
            &self.discovery,
            kind,
            cfg,
            criteria,
            view,
            simulation_instructions,
        )
        .await
    }
}

/// The transport of a judge that has no provider but needs no request
/// either (deepeval with an empty `available_tools`).
struct NoProvider(String);

impl judged::Transport for NoProvider {
    fn send(&self, _: judged::Request) -> impl std::future::Future<Output = judged::Reply> + Send {
        std::future::ready(judged::Reply::Failed {
            message: self.0.clone(),
            timed_out: false,
        })
    }
}

/// A judge refused for its provider's budget: an error that says which
/// limit, so it is not mistaken for the model's verdict.
fn over_budget(ev: &Evaluator, p: &Provider, admitted: Result<(), budget::Spent>) -> Outcome {
    let why = match admitted {
        Err(spent) => format!(
            "llm.providers.{}.{} ({}) is spent for this minute",
            p.name, spent.key, spent.limit
        ),
        Ok(()) => "its provider's budget is spent for this minute".to_owned(),
    };
    Outcome::skipped(format!("{} was not judged: {why}", ev.id))
}

fn no_provider(ev: &Evaluator, why: &str) -> Outcome {
    Outcome::error(format!(
        "{} ({}) calls a model, but {why}",
        ev.id,
        ev.kind.id()
    ))
}

/// deepeval's `LLMTestCase.input`: the root span's input as a string, `""`
/// when there is none.
fn deepeval_input(input: Option<AttrRef<'_>>) -> String {
    input.map(|v| v.py_str()).unwrap_or_default()
}

/// The judges' view of a trace: its spans, its tool calls, and the root
/// span's input and output attributes as `extract` names them.
pub fn trace_view<'a>(
    spans: &'a Spans,
    calls: &'a [crate::extract::ToolCall],
    extract: &crate::extract::ExtractConfig,
) -> TraceView<'a> {
    let root = judged::root_span(spans);
    TraceView {
        spans,
        calls,
        input: root.and_then(|r| r.attr(&extract.root_input_attribute)),
        output: root.and_then(|r| r.attr(&extract.root_output_attribute)),
    }
}

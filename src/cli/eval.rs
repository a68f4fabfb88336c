//! `toolscore eval`: offline evaluation of OTLP JSON trace files against a
//! UiPath eval set, for CI. Prints UiPath's results JSON.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::{Map, Value as Json, json};

use super::Exit;
use crate::criteria::{BindingConfig, Catalog, EvalItem, EvalSet, LoadError, find_binding_value};
use crate::evaluator::{Outcome, Status};
use crate::extract::{self, ExtractConfig};
use crate::llm::Judges;
use crate::otlp_json;
use crate::record::{Records, Spans};
use crate::span::{KeepAttributes, TraceId};

/// What `toolscore eval` was asked to do.
#[derive(Debug, Clone)]
pub struct EvalArgs {
    pub eval_set: PathBuf,
    /// Defaults to `<eval-set dir>/../evaluators` (UiPath's layout).
    pub evaluators: Option<PathBuf>,
    pub traces: Vec<PathBuf>,
    pub output: Option<PathBuf>,
    pub min_score: Option<f64>,
    /// Overrides the binding attributes (default: `eval.case.id`, `eval_item_id`, `evalId`).
    pub binding_attributes: Vec<String>,
    /// A toolscore config file: its `llm` providers (the LLM judges') and
    /// `extract` settings are used.
    pub config: Option<PathBuf>,
}

/// Why the run could not start (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error("{0}")]
    Provider(#[from] crate::key_error::KeyError),
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
    #[error("{file}: {message}")]
    Traces { file: String, message: String },
    #[error("cannot write {file}: {source}")]
    Output {
        file: String,
        source: std::io::Error,
    },
}

/// One trace's results against the item it is bound to.
#[derive(Debug)]
pub struct TraceResult<'a> {
    pub trace_id: TraceId,
    pub item: &'a EvalItem,
    pub outcomes: Vec<(Arc<crate::evaluator::Evaluator>, Outcome)>,
}

/// A finished run: the results JSON and the exit code it earns.
#[derive(Debug)]
pub struct Report {
    pub json: Json,
    pub exit: Exit,
    /// Human-readable lines for stderr (warnings, failures, a summary).
    pub messages: Vec<String>,
}

pub fn load_catalog(args: &EvalArgs) -> Result<(Catalog, Arc<EvalSet>), LoadError> {
    let dir = match &args.evaluators {
        Some(d) => d.clone(),
        None => args
            .eval_set
            .parent()
            .unwrap_or(Path::new("."))
            .join("../evaluators"),
    };
    let mut catalog = Catalog::default();
    catalog.load_evaluator_dir(&dir)?;
    let set = catalog.load_eval_set(&args.eval_set)?;
    Ok((catalog, set))
}

/// Reads every trace file and groups the spans by trace ID (first-seen order).
pub fn load_traces(
    files: &[PathBuf],
    keep: &Arc<KeepAttributes>,
    messages: &mut Vec<String>,
) -> Result<IndexMap<TraceId, Spans>, UsageError> {
    let mut records = Records::default();
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|e| UsageError::Traces {
            file: f.display().to_string(),
            message: format!("cannot read: {e}"),
        })?;
        let parsed = otlp_json::parse_file_text(&text, keep).map_err(|e| UsageError::Traces {
            file: f.display().to_string(),
            message: e.to_string(),
        })?;
        for r in &parsed.rejected {
            messages.push(format!("warning: {}: {r}; skipped", f.display()));
        }
        records.append(parsed.spans);
    }
    records.traces(keep).map_err(|e| UsageError::Traces {
        file: "(every file)".into(),
        message: format!("internal error: {e}"),
    })
}

/// Traces whose LLM judges are awaited at once; each provider's
/// `max_concurrency` bounds the requests in flight.
const TRACES_IN_FLIGHT: usize = 64;

/// Evaluates each trace against the eval-set item it is bound to, calling
/// the models of LLM-judged evaluators through `judges`.
pub async fn evaluate<'a>(
    set: &'a EvalSet,
    catalog: &'a Catalog,
    traces: &IndexMap<TraceId, Spans>,
    binding: &BindingConfig,
    extract_cfg: &ExtractConfig,
    judges: &Judges,
    messages: &mut Vec<String>,
) -> Vec<TraceResult<'a>> {
    use futures_util::StreamExt;
    let progress = progress_bar(traces.len());
    let mut bound = Vec::new();
    for (trace_id, spans) in traces {
        let Some(item_id) = find_binding_value(spans, binding) else {
            messages.push(format!(
                "warning: trace {trace_id} has none of the binding attributes {:?}; not evaluated",
                binding.attributes
            ));
            continue;
        };
        let item = match catalog.item(&item_id) {
            Some((s, item)) if s.id == set.id => item,
            _ => {
                messages.push(format!(
                    "warning: trace {trace_id} names item {item_id:?}, which eval set {:?} does not have; not evaluated",
                    set.id
                ));
                continue;
            }
        };
        bound.push((*trace_id, spans, item));
    }
    let progress = &progress;
    let results = futures_util::stream::iter(bound)
        .map(|(trace_id, spans, item)| async move {
            let calls = extract::extract(spans, extract_cfg);
            let view = crate::llm::trace_view(spans, &calls, extract_cfg);
            // LLM judges without a provider are skipped (`run` warns).
            let runnable: Vec<_> = item
                .evaluators
                .iter()
                .filter(|ie| judges.missing_provider(&ie.evaluator).is_none())
                .collect();
            let outcomes = futures_util::future::join_all(
                runnable
                    .iter()
                    .map(|ie| judges.evaluate(&ie.evaluator, &ie.criteria, view)),
            )
            .await;
            progress.inc(1);
            TraceResult {
                trace_id,
                item,
                outcomes: runnable
                    .iter()
                    .map(|ie| ie.evaluator.clone())
                    .zip(outcomes)
                    .collect(),
            }
        })
        .buffered(TRACES_IN_FLIGHT)
        .collect()
        .await;
    progress.finish_and_clear();
    results
}

/// A progress bar on stderr for long runs in a terminal; hidden otherwise.
fn progress_bar(len: usize) -> indicatif::ProgressBar {
    if len < 200 || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    indicatif::ProgressBar::new(len as u64)
}

/// The results JSON in UiPath's `--output-file` shape, and the exit code.
pub fn report(
    set: &EvalSet,
    results: &[TraceResult<'_>],
    min_score: Option<f64>,
    mut messages: Vec<String>,
) -> Report {
    let mut failed = 0usize;
    let mut errors = 0usize;
    let mut total = 0usize;
    let mut set_results = Vec::new();
    for r in results {
        let mut runs = Vec::new();
        for (ev, o) in &r.outcomes {
            total += 1;
            let below_min = matches!((o.score, min_score), (Some(s), Some(m)) if s < m);
            // A judge that did not run has no score to pass: an error here.
            if o.status != Status::Ok {
                errors += 1;
                messages.push(format!(
                    "{}: {} / {} (trace {}): {}",
                    o.status.as_str(),
                    r.item.id,
                    ev.id,
                    r.trace_id,
                    o.error.as_deref().unwrap_or("error")
                ));
            } else if below_min || o.passed == Some(false) {
                failed += 1;
                messages.push(format!(
                    "fail: {} / {} (trace {}): score {}{}",
                    r.item.id,
                    ev.id,
                    r.trace_id,
                    o.score.map_or("-".into(), |s| s.to_string()),
                    if below_min {
                        " is below --min-score"
                    } else {
                        " is below the evaluator's threshold"
                    }
                ));
            }
            runs.push(json!({
                "evaluatorName": ev.name,
                "evaluatorId": ev.id,
                "result": result_json(o),
            }));
        }
        set_results.push(json!({
            "evaluationName": r.item.name,
            "evaluationId": r.item.id,
            "traceId": r.trace_id.to_hex(),
            "evaluationRunResults": runs,
        }));
    }
    for item in &set.items {
        if !results.iter().any(|r| r.item.id == item.id) {
            messages.push(format!("warning: no trace is bound to item {:?}", item.id));
        }
    }
    messages.push(format!(
        "{} traces evaluated, {total} results: {} passed, {failed} failed, {errors} errors",
        results.len(),
        total - failed - errors
    ));
    let exit = if failed + errors > 0 {
        Exit::Failed
    } else {
        Exit::Ok
    };
    Report {
        json: json!({
            "evaluationSetName": set.name,
            "evaluationSetResults": set_results,
        }),
        exit,
        messages,
    }
}

/// `{score, details, status, error}`; a strict deepeval failure keeps its int 0.
pub fn result_json(o: &Outcome) -> Json {
    let mut m = Map::new();
    let score = match o.score {
        None => Json::Null,
        Some(s) if o.score_is_int => json!(s as i64),
        Some(s) => serde_json::Number::from_f64(s).map_or(Json::Null, Json::Number),
    };
    m.insert("score".into(), score);
    m.insert("details".into(), o.details.to_json().into_owned());
    m.insert("status".into(), json!(o.status));
    m.insert(
        "error".into(),
        o.error.clone().map_or(Json::Null, Json::String),
    );
    Json::Object(m)
}

/// Runs `toolscore eval`, writing the results and messages.
pub fn run(args: &EvalArgs) -> Exit {
    match run_inner(args) {
        Ok(exit) => exit,
        Err(e) => {
            eprintln!("error: {e}");
            Exit::Usage
        }
    }
}

fn run_inner(args: &EvalArgs) -> Result<Exit, UsageError> {
    let config = match &args.config {
        Some(path) => crate::config::Config::load(path)?,
        None => crate::config::Config::default(),
    };
    let llm = config
        .llm
        .clone()
        .with_environment(|k| std::env::var(k).ok());
    let judges = Judges::build(&llm, &crate::llm::metrics::LlmMetrics::default())?;
    let (catalog, set) = load_catalog(args)?;
    let mut messages = Vec::new();
    for skipped in &set.skipped {
        if let Some(u) = catalog.unsupported.get(skipped) {
            messages.push(format!(
                "warning: evaluator {:?} ({}) is skipped: {}",
                u.id, u.type_id, u.reason
            ));
        }
    }
    // Without a provider, an LLM judge is skipped (one warning) rather than
    // reported as an error on every trace.
    // (`evaluate` leaves them out.)
    for ev in &set.evaluators {
        if let Some(why) = judges.missing_provider(ev) {
            messages.push(format!(
                "warning: evaluator {:?} ({}) is skipped: it calls a model, but {why} (use --config with llm.providers, or set OPENAI_API_KEY / UIPATH_URL and UIPATH_ACCESS_TOKEN)",
                ev.id,
                ev.kind.id()
            ));
        }
    }
    let binding = if args.binding_attributes.is_empty() {
        BindingConfig::default()
    } else {
        BindingConfig {
            attributes: args.binding_attributes.clone(),
        }
    };
    // The attributes the service would keep: offline scores are live scores.
    let keep = Arc::new(crate::config::kept_attributes(
        &config.extract,
        &binding,
        [],
    ));
    let traces = load_traces(&args.traces, &keep, &mut messages)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(UsageError::Runtime)?;
    let results = runtime.block_on(evaluate(
        &set,
        &catalog,
        &traces,
        &binding,
        &config.extract,
        &judges,
        &mut messages,
    ));
    let report = report(&set, &results, args.min_score, messages);
    let mut text = serde_json::to_string_pretty(&report.json).unwrap_or_default();
    text.push('\n');
    match &args.output {
        Some(path) => std::fs::write(path, text).map_err(|source| UsageError::Output {
            file: path.display().to_string(),
            source,
        })?,
        None => write_stdout(&text),
    }
    for m in &report.messages {
        eprintln!("{m}");
    }
    Ok(report.exit)
}

/// The CLI's output path: the one place allowed to print to stdout.
#[allow(clippy::print_stdout)]
fn write_stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    // A closed pipe (`| head`) is not an error worth reporting.
    let _ = out.write_all(text.as_bytes());
}

//! One ready trace evaluated into the record the store keeps: bind its
//! criteria, extract its tool calls, score them. A plain function, so the
//! API's `POST /v1/evaluate`, the benchmarks and the fuzz targets run exactly
//! what the worker pool (`pool.rs`) runs.

use std::sync::Arc;
use std::time::SystemTime;

use crate::assembler::Ready;
use crate::criteria::{Binder, ItemEvaluator};
use crate::evaluator::Explain;
use crate::evaluator::judged::root_span;
use crate::extract::{self, ExtractConfig, ToolCall};
use crate::record::Spans;
use crate::store::{
    Calls, Explainer, RootSummary, Score, StoredCall, StoredOutcome, StoredResult, TraceStatus,
};

/// A trace evaluated: the record to store now, with a `pending` score in
/// the place of each evaluator that calls a model, and those evaluators
/// with their places (their scores follow, `llm/live.rs`).
#[derive(Debug)]
pub struct Evaluated {
    pub record: StoredResult,
    pub judges: Vec<(usize, ItemEvaluator)>,
    /// The trace's tool calls for those evaluators (empty when there are
    /// none), so that extraction runs once a trace.
    pub calls: Vec<ToolCall>,
}

/// Where the LLM judges of an evaluated trace go (`llm/live.rs`, behind
/// this trait so that `evaluation` does not depend on `judge`).
pub trait Judging: Send + Sync {
    /// Settles, in `record`, the judges that will not run; returns what
    /// starts the others, to call once `record` is stored.
    fn prepare(
        &self,
        record: &mut StoredResult,
        judges: Vec<(usize, ItemEvaluator)>,
        spans: &Arc<Spans>,
        calls: Vec<ToolCall>,
    ) -> Option<Box<dyn FnOnce() + Send>>;
}

/// Evaluates one ready trace into the record the store keeps.
pub fn evaluate_ready(
    binder: &Binder,
    extract_cfg: &ExtractConfig,
    ready: &Ready,
    now: SystemTime,
) -> Evaluated {
    let spans = &*ready.spans;
    let calls = extract::extract(spans, extract_cfg);
    let root = root_span(spans).map(|r| RootSummary {
        span_id: r.span_id,
        name: r.name().to_owned(),
        service: r.service_name().map(str::to_owned),
        start_time_unix_nano: r.start_time_unix_nano,
        end_time_unix_nano: r.end_time_unix_nano,
    });
    let bound = if agent_definition(spans) {
        None
    } else {
        binder.bind(spans)
    };
    let status = match (&bound, ready.complete) {
        (None, _) => TraceStatus::Unbound,
        (Some(_), true) => TraceStatus::Evaluated,
        (Some(_), false) => TraceStatus::TimedOut,
    };
    let mut judges = Vec::new();
    // Scored first, without their details; the record then keeps the calls
    // (moved, in a list of exactly their number) and, for each score, what
    // renders its details from them when they are read.
    let outcomes: Vec<Option<crate::evaluator::Outcome>> = bound
        .as_ref()
        .map(|b| {
            b.evaluators
                .iter()
                .enumerate()
                .map(|(i, ie)| {
                    if ie.evaluator.is_llm_judged() {
                        judges.push((i, ie.clone()));
                        None
                    } else {
                        Some(ie.evaluator.evaluate_as(&calls, &ie.criteria, Explain::No))
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let content_captured = calls.iter().all(|c| c.content_captured);
    let judge_calls = match judges.is_empty() {
        true => Vec::new(),
        false => calls.clone(),
    };
    let kept: Calls = calls.into_iter().map(StoredCall::from).collect();
    let scores = bound
        .as_ref()
        .map(|b| {
            b.evaluators
                .iter()
                .zip(outcomes)
                .map(|(ie, outcome)| Score {
                    evaluator_id: ie.evaluator.id.clone(),
                    evaluator_type: ie.evaluator.kind,
                    outcome: match outcome {
                        None => crate::evaluator::Outcome::pending().into(),
                        Some(o) => StoredOutcome::scored(o, || Explainer {
                            calls: kept.clone(),
                            by: ie.clone(),
                        }),
                    },
                })
                .collect()
        })
        .unwrap_or_default();
    let record = StoredResult {
        trace_id: ready.trace_id,
        status,
        complete: ready.complete,
        revision: ready.revision,
        evaluated_at: Some(now),
        root,
        binding: bound.map(|b| b.binding),
        content_captured,
        tool_calls: kept,
        scores,
        // The records the trace was evaluated from, events included: a
        // restart's replay compares the log's records against it.
        span_count: spans.len() + spans.event_count(),
        judged: None,
    };
    Evaluated {
        record,
        judges,
        calls: judge_calls,
    }
}

/// A trace of one span that only defines an agent (OpenLLMetry's
/// LangChain instrumentation exports the building of an agent as a trace
/// of its own, `gen_ai.operation.name = create_agent`): not an agent's
/// run, so nothing binds evaluators to it (it is stored as `unbound`).
fn agent_definition(spans: &Spans) -> bool {
    let mut it = spans.iter();
    match (it.next(), it.next()) {
        (Some(only), None) => {
            only.attr("gen_ai.operation.name").and_then(|v| v.as_str()) == Some("create_agent")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::span::SpanId;

    /// OpenLLMetry's LangChain instrumentation exports an agent's building
    /// as a trace of its own: not a run, so unbound (it scored 0.0 on every
    /// evaluator applied to all traces); a run's root of the same kind is.
    #[test]
    fn a_trace_that_only_defines_an_agent_is_not_bound() {
        use crate::criteria::{BinderConfig, BindingConfig, EvalSetsConfig, EvaluatorsConfig};
        use crate::span::{AttrValue, Span, TraceId};
        let cfg =
            serde_json::json!({"defaultEvaluationCriteria": {"toolCallsCount": {"x": [">=", 1]}}});
        let evaluators = EvaluatorsConfig {
            inline: vec![crate::criteria::InlineEvaluator {
                id: "count".into(),
                kind: "tool-call-count".into(),
                config: cfg.as_object().cloned().unwrap_or_default(),
                apply_to_all_traces: true,
            }],
            ..EvaluatorsConfig::default()
        };
        let config = BinderConfig {
            evaluators: &evaluators,
            eval_sets: &EvalSetsConfig::default(),
            rules: &[],
            binding: &BindingConfig::default(),
        };
        let binder = Binder::load(config, None).expect("binder");
        let span = |id: u8, op: &str| Span {
            trace_id: TraceId([3; 16]),
            span_id: SpanId([id; 8]),
            parent_span_id: (id > 1).then_some(SpanId([1; 8])),
            name: op.into(),
            start_time_unix_nano: 1,
            end_time_unix_nano: 2,
            attributes: vec![(
                Arc::from("gen_ai.operation.name"),
                AttrValue::Str(op.into()),
            )],
            service_name: None,
            scope_name: None,
        };
        let ready = |spans: &[Span]| Ready {
            trace_id: TraceId([3; 16]),
            spans: Arc::new(Spans::from_spans(spans)),
            complete: true,
            revision: 1,
            reason: crate::assembler::Reason::Complete,
            root_arrived: None,
            due: std::time::Instant::now(),
            pin: Default::default(),
            ticket: Default::default(),
        };
        let extract = ExtractConfig::default();
        let alone = evaluate_ready(
            &binder,
            &extract,
            &ready(&[span(1, "create_agent")]),
            SystemTime::now(),
        );
        assert_eq!(alone.record.status, TraceStatus::Unbound);
        assert!(alone.record.scores.is_empty());
        let run = [span(1, "create_agent"), span(2, "chat")];
        let run = evaluate_ready(&binder, &extract, &ready(&run), SystemTime::now());
        assert_eq!(run.record.status, TraceStatus::Evaluated);
        assert_eq!(run.record.scores.len(), 1);
    }
}

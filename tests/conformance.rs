//! Every case of `../shared/conformance/cases.jsonl`, through the code path
//! the service uses: spans → tool calls (`extract`) → evaluator.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::collections::BTreeMap;

use common::conformance::{self, Case};
use std::sync::Arc;

use toolscore::criteria::ItemEvaluator;
use toolscore::evaluator::{self, Evaluator, Explain, Outcome};
use toolscore::extract::{self, ExtractConfig, ToolCall};
use toolscore::pyvalue::{Dict, Value};
use toolscore::record::Spans;
use toolscore::store::{Explainer, StoredCall, StoredOutcome};

/// A case's evaluator and tool calls, or the outcome of a config refused.
fn setup(case: &Case) -> Result<(Evaluator, Vec<ToolCall>), Box<Outcome>> {
    let kind = conformance::evaluator_type(case);
    let mut ev = Evaluator::with_defaults("conformance", kind);
    let config = case.config.as_dict().cloned().unwrap_or_else(Dict::new);
    match evaluator::parse_config(kind, &config, "config") {
        Ok(c) => ev.config = c,
        Err(e) => return Err(Box::new(Outcome::error(e.to_string()))),
    }
    let calls = extract::extract(
        &Spans::from_spans(&conformance::spans(case)),
        &ExtractConfig::default(),
    );
    Ok((ev, calls))
}

fn criteria(case: &Case) -> Option<&Value> {
    match &case.criteria {
        Value::None => None,
        other => Some(other),
    }
}

fn run(case: &Case) -> Outcome {
    match setup(case) {
        Ok((ev, calls)) => ev.evaluate_value(&calls, criteria(case)),
        Err(refused) => *refused,
    }
}

#[test]
fn every_conformance_case_matches_the_reference() {
    let cases = conformance::load_cases();
    assert!(!cases.is_empty(), "no conformance cases loaded");
    let mut tally: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    for case in &cases {
        let got = run(case);
        let entry = tally.entry(case.evaluator_type.clone()).or_default();
        match conformance::judge(case, &got) {
            Ok(()) => entry.0 += 1,
            Err(why) => {
                entry.1 += 1;
                failures.push(format!("{}: {why}", case.id));
            }
        }
    }
    for (ty, (p, f)) in &tally {
        println!("{ty}: {p} passed, {f} failed");
    }
    for f in failures.iter().take(40) {
        println!("FAIL {f}\n");
    }
    assert!(
        failures.is_empty(),
        "{} conformance cases failed",
        failures.len()
    );
}

/// The pipeline scores without details and the store renders them when
/// they are read: put together, the two are the outcome the evaluator
/// gives when it explains as it scores, byte for byte, on every case.
#[test]
fn details_rendered_on_read_are_the_evaluations_own() {
    let mut rendered = 0;
    for case in &conformance::load_cases() {
        let Ok((ev, calls)) = setup(case) else {
            continue;
        };
        let Ok(bound) = ev.bind_criteria(criteria(case)) else {
            continue;
        };
        let explained = StoredOutcome::from(ev.evaluate(&calls, &bound));
        let scored = ev.evaluate_as(&calls, &bound, Explain::No);
        let by = ItemEvaluator {
            criteria: Arc::new(bound.into_owned()),
            evaluator: Arc::new(ev),
            source: None,
        };
        let stored = StoredOutcome::scored(scored, || Explainer {
            calls: calls.into_iter().map(StoredCall::from).collect(),
            by,
        });
        rendered += usize::from(stored.details.is_rendered());
        assert_eq!(stored, explained, "{}", case.id);
        assert_eq!(
            stored.details.text(),
            explained.details.text(),
            "{}",
            case.id
        );
    }
    assert!(rendered > 100, "only {rendered} cases rendered on read");
}

/// Scores do not depend on the order a trace's spans are listed in.
#[test]
fn scores_do_not_depend_on_span_order() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    let cases = conformance::load_cases();
    let mut runner = TestRunner::new(Config {
        cases: 64,
        ..Config::default()
    });
    runner
        .run(&(0..cases.len(), any::<u64>()), |(idx, seed)| {
            let case = &cases[idx];
            let base = run(case);
            let mut spans = conformance::spans(case);
            // Fisher-Yates with a deterministic generator from the seed.
            let mut s = seed | 1;
            for i in (1..spans.len()).rev() {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                spans.swap(i, (s % (i as u64 + 1)) as usize);
            }
            let kind = conformance::evaluator_type(case);
            let mut ev = Evaluator::with_defaults("conformance", kind);
            if let Some(cfg) = case.config.as_dict()
                && let Ok(c) = evaluator::parse_config(kind, cfg, "config")
            {
                ev.config = c;
            }
            let calls = extract::extract(&Spans::from_spans(&spans), &ExtractConfig::default());
            let criteria = match &case.criteria {
                Value::None => None,
                other => Some(other),
            };
            let shuffled = ev.evaluate_value(&calls, criteria);
            prop_assert_eq!(base.score, shuffled.score, "case {}", case.id);
            prop_assert_eq!(base.status, shuffled.status);
            if case.evaluator_type != "tool-correctness" {
                prop_assert_eq!(base.details, shuffled.details);
            }
            Ok(())
        })
        .unwrap();
}

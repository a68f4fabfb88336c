//! Records for the store's tests, and checks every database backend must pass.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use toolscore::evaluator::{EvaluatorType, Outcome, Status};
use toolscore::span::TraceId;
use toolscore::store::{
    DbStore, ListFilter, MemoryStore, ResultStore, Score, TraceRecord, TraceStatus,
};

use super::process::WAIT;

/// A record: trace `[n; 16]`, evaluated (timed out when `n % 3 == 0`),
/// with these scores (`None`: an error).
pub fn record(n: u8, revision: u32, scores: &[(&str, Option<f64>)]) -> TraceRecord {
    let mut r = TraceRecord::pending(TraceId([n; 16]));
    r.status = if n.is_multiple_of(3) {
        TraceStatus::TimedOut
    } else {
        TraceStatus::Evaluated
    };
    r.revision = revision;
    r.complete = !n.is_multiple_of(3);
    r.evaluated_at = Some(SystemTime::now());
    r.scores = scores
        .iter()
        .map(|(id, score)| Score {
            evaluator_id: (*id).into(),
            evaluator_type: EvaluatorType::Count,
            outcome: Outcome {
                status: if score.is_some() {
                    Status::Ok
                } else {
                    Status::Error
                },
                score: *score,
                score_is_int: false,
                details: serde_json::json!({"n": n, "r": revision}).into(),
                error: score.is_none().then(|| "boom".to_owned()),
                passed: None,
                threshold: None,
            }
            .into(),
        })
        .collect();
    r
}

/// The filters of `GET /traces` give on a database store what the memory
/// store gives for the same records: written through one store, read
/// through another (`open` opens the same database each time).
pub fn filters_agree_with_the_memory_store(open: impl Fn() -> DbStore) {
    let memory = MemoryStore::new(1000, Duration::from_secs(3600), 8);
    let mut records = Vec::new();
    for n in 1..=40u8 {
        let score = |k: u8| (n % k != 0).then(|| f64::from(n % 7) / 7.0);
        records.push(record(
            n,
            1,
            &[("a", score(5)), ("b", score(4)), ("c", Some(f64::NAN))],
        ));
    }
    for r in &records {
        memory.put(r.clone(), Instant::now());
    }
    let db = open();
    for r in records {
        db.put(r, Instant::now());
    }
    assert!(db.close(WAIT));
    let db = open();
    let ids = |v: Vec<Arc<TraceRecord>>| v.iter().map(|r| r.trace_id).collect::<Vec<_>>();
    let mut checked = 0;
    for status in [
        None,
        Some(TraceStatus::Evaluated),
        Some(TraceStatus::TimedOut),
    ] {
        for evaluator in [None, Some("a"), Some("b"), Some("c"), Some("zz")] {
            for max_score in [None, Some(0.0), Some(0.5), Some(1.0), Some(-1.0)] {
                for limit in [0, 3, 100] {
                    let f = ListFilter {
                        status,
                        evaluator: evaluator.map(str::to_owned),
                        max_score,
                        limit,
                        ..ListFilter::default()
                    };
                    assert_eq!(ids(db.list(&f)), ids(memory.list(&f)), "{f:?}");
                    checked += 1;
                }
            }
        }
    }
    assert!(db.close(WAIT));
    println!("{checked} filters agree");
}

/// A judged update (same revision, the `pending` judge's score filled in)
/// replaces the evaluation's record and its score rows, through a store
/// that then closes; `open` reads it back as written.
pub fn a_judged_update_replaces_its_revision(open: impl Fn() -> DbStore) {
    let mut first = record(9, 1, &[("judge", None), ("count", Some(1.0))]);
    first.scores[0].outcome = Outcome::pending().into();
    let mut update = first.clone();
    update.scores[0].outcome = Outcome::ok(0.75, serde_json::json!("close")).into();
    update.judged = Some(Box::default());
    let mut skipped = record(10, 1, &[("judge", None)]);
    skipped.scores[0].outcome = Outcome::skipped("not sampled").into();
    let db = open();
    db.put(first, Instant::now());
    db.put(update.clone(), Instant::now());
    db.put(skipped.clone(), Instant::now());
    assert!(db.close(WAIT));
    let db = open();
    update.judged = None;
    assert_eq!(*db.get(&TraceId([9; 16])).unwrap(), update);
    assert_eq!(*db.get(&TraceId([10; 16])).unwrap(), skipped);
    assert!(db.close(WAIT));
}

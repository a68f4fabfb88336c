//! Records for the store's tests, and checks every database backend must pass.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use toolscore::evaluator::{EvaluatorType, Outcome, Status};
use toolscore::span::{SpanId, TraceId};
use toolscore::store::{
    Database, DbStore, ListFilter, MemoryStore, Prepared, ResultStore, Retention, RootSummary,
    Score, StoredResult, TraceStatus,
};

use super::process::WAIT;

/// A record: trace `[n; 16]`, evaluated (timed out when `n % 3 == 0`),
/// with these scores (`None`: an error).
pub fn record(n: u8, revision: u32, scores: &[(&str, Option<f64>)]) -> StoredResult {
    let mut r = StoredResult::pending(TraceId([n; 16]));
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

/// A record stored in the filters' comparison: trace `[n; 16]`, two
/// evaluators' scores that differ (`a` and `b`; either may be an error) and
/// a NaN, and a root that varies in service and name (or is missing).
fn varied_record(n: u8) -> StoredResult {
    let score = |k: u8, m: u8| (!n.is_multiple_of(k)).then(|| f64::from((n * m) % 7) / 7.0);
    let mut r = record(
        n,
        1,
        &[
            ("a", score(5, 1)),
            ("b", score(4, 3)),
            ("c", Some(f64::NAN)),
        ],
    );
    r.root = (!n.is_multiple_of(6)).then(|| RootSummary {
        span_id: SpanId([n; 8]),
        // A NUL, which a PostgreSQL `text` could not hold.
        name: ["agent.run", "plan", "plan\0b"][usize::from(n % 3)].to_owned(),
        service: [None, Some("checkout"), Some("search"), Some("Checkout")][usize::from(n % 4)]
            .map(str::to_owned),
        start_time_unix_nano: 1,
        end_time_unix_nano: 2,
    });
    r
}

/// A time after every record stored so far, at or before every one stored
/// from now on (the clock read until it moves on by a microsecond: a
/// database gives the records of one batch successive nanoseconds).
fn cut() -> SystemTime {
    let t = SystemTime::now() + Duration::from_micros(1);
    while SystemTime::now() <= t {
        std::hint::spin_loop();
    }
    t
}

/// The filters of `GET /traces` give on a database store what the memory
/// store gives for the same records: written through one store, read
/// through another (`open` opens the same database each time). Records are
/// stored in three groups, times cut between them, then two traces are
/// marked pending (local to the reading store, newer than every result).
pub fn filters_agree_with_the_memory_store(open: impl Fn() -> DbStore) {
    let memory = MemoryStore::new(1000, Duration::from_secs(3600), 8);
    let mut cuts = Vec::new();
    for group in [1..=13u8, 14..=26, 27..=40] {
        let db = open();
        for r in group.map(varied_record) {
            memory.put(r.clone(), Instant::now());
            db.put(r, Instant::now());
        }
        assert!(db.close(WAIT));
        cuts.push(cut());
    }
    let db = open();
    for n in [200, 201] {
        memory.mark_pending(TraceId([n; 16]), Instant::now());
        db.mark_pending(TraceId([n; 16]), Instant::now());
    }
    let ids = |v: Vec<Arc<StoredResult>>| v.iter().map(|r| r.trace_id).collect::<Vec<_>>();
    let (t1, t2) = (cuts[0], cuts[1]);
    let dims = Dims {
        status: vec![
            None,
            Some(TraceStatus::Evaluated),
            Some(TraceStatus::TimedOut),
            Some(TraceStatus::Pending),
        ],
        evaluator: vec![None, Some("a"), Some("b"), Some("c"), Some("zz")],
        max_score: vec![
            None,
            Some(0.0),
            Some(0.5),
            Some(1.0),
            Some(-1.0),
            Some(f64::NAN),
        ],
        min_score: vec![None, Some(0.0), Some(0.3), Some(5.0 / 7.0), Some(f64::NAN)],
        service: vec![None, Some("checkout"), Some("search"), Some("zz")],
        root_name: vec![None, Some("plan"), Some("plan\0b"), Some("zz")],
        window: vec![
            (None, None),
            (Some(t1), None),
            (None, Some(t2)),
            (Some(t1), Some(t2)),
            (Some(t2), Some(t1)),
        ],
        limit: vec![0, 3, 100],
    };
    let mut checked = 0;
    let mut nonempty = 0;
    for f in dims.filters() {
        let want = ids(memory.list(&f));
        assert_eq!(ids(db.list(&f)), want, "{f:?}");
        checked += 1;
        nonempty += usize::from(!want.is_empty());
    }
    // The comparison means something: many filters find records (many by
    // design find none: limit 0, evaluator `zz`, a NaN bound, since > until).
    assert!(nonempty * 10 > checked, "{nonempty} of {checked}");
    assert!(db.close(WAIT));
    println!("{checked} filters agree ({nonempty} find records)");
}

/// The values each `ListFilter` field takes in the comparison.
struct Dims {
    status: Vec<Option<TraceStatus>>,
    evaluator: Vec<Option<&'static str>>,
    max_score: Vec<Option<f64>>,
    min_score: Vec<Option<f64>>,
    service: Vec<Option<&'static str>>,
    root_name: Vec<Option<&'static str>>,
    window: Vec<(Option<SystemTime>, Option<SystemTime>)>,
    limit: Vec<usize>,
}

impl Dims {
    /// Every combination of the score fields, every combination of the
    /// root and time fields, and a spread sample of all fields together
    /// (the whole product is too many queries).
    fn filters(&self) -> Vec<ListFilter> {
        let sizes = [
            self.status.len(),
            self.evaluator.len(),
            self.max_score.len(),
            self.min_score.len(),
            self.service.len(),
            self.root_name.len(),
            self.window.len(),
            self.limit.len(),
        ];
        let at = |mut pick: [usize; 8]| {
            for (p, n) in pick.iter_mut().zip(sizes) {
                *p %= n;
            }
            let (since, until) = self.window[pick[6]];
            ListFilter {
                status: self.status[pick[0]],
                evaluator: self.evaluator[pick[1]].map(str::to_owned),
                max_score: self.max_score[pick[2]],
                min_score: self.min_score[pick[3]],
                service: self.service[pick[4]].map(str::to_owned),
                root_name: self.root_name[pick[5]].map(str::to_owned),
                since,
                until,
                limit: self.limit[pick[7]],
            }
        };
        let product = |dims: &[usize]| {
            let mut out = vec![[0usize; 8]];
            for &d in dims {
                out = out
                    .into_iter()
                    .flat_map(|p| {
                        (0..sizes[d]).map(move |i| {
                            let mut p = p;
                            p[d] = i;
                            p
                        })
                    })
                    .collect();
            }
            out
        };
        let mut picks = product(&[0, 1, 2, 3, 7]);
        picks.extend(product(&[0, 4, 5, 6, 7]));
        // Successive mixed-radix numbers far apart: every field's values
        // come up, in ever-changing company.
        let all: usize = sizes.iter().product();
        picks.extend((0..1500).map(|k| {
            let mut i = (k * 7919 + 13) % all;
            let mut p = [0; 8];
            for (p, n) in p.iter_mut().zip(sizes) {
                *p = i % n;
                i /= n;
            }
            p
        }));
        picks.into_iter().map(at).collect()
    }
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

/// Retention that deletes nothing.
pub const KEEP_ALL: Retention = Retention {
    older_than: SystemTime::UNIX_EPOCH,
    max_traces: usize::MAX,
    chunk: 0,
};

/// Writes traces 1 to `n` one commit each, trace `k` at `t0 + k` s, with
/// these scores.
pub fn write_in_order(db: &dyn Database, t0: SystemTime, n: u8, scores: &[(&str, Option<f64>)]) {
    for k in 1..=n {
        let r = Prepared::new(Arc::new(record(k, 1, scores)));
        db.write(&[r], t0 + Duration::from_secs(u64::from(k)), &KEEP_ALL)
            .unwrap();
    }
}

/// Retention deletes the oldest traces with their scores (`scores` counts
/// the score rows), up to the chunk given per call for each bound, and a
/// revision replaced by a newer one leaves no score rows behind.
pub fn pruning_deletes_the_oldest_traces_with_their_scores(
    db: &dyn Database,
    scores: impl Fn() -> i64,
) {
    let t0 = SystemTime::now();
    write_in_order(db, t0, 200, &[("a", Some(1.0)), ("b", Some(0.5))]);
    // A newer revision of the first trace: stored last, so kept.
    let newer = Prepared::new(Arc::new(record(1, 2, &[("a", Some(0.0))])));
    db.write(&[newer], t0 + Duration::from_secs(1000), &KEEP_ALL)
        .unwrap();
    assert_eq!(scores(), 199 * 2 + 1);
    // Past max_traces (50): 150 to delete, 100 at most a call.
    assert_eq!(db.prune(t0, 50, 100).unwrap(), 100);
    assert_eq!(db.prune(t0, 50, 100).unwrap(), 50);
    assert_eq!(db.prune(t0, 50, 100).unwrap(), 0);
    assert_eq!(db.count().unwrap(), 50);
    assert_eq!(scores(), 49 * 2 + 1);
    assert_eq!(db.get(&TraceId([1; 16])).unwrap().unwrap().revision, 2);
    assert!(db.get(&TraceId([151; 16])).unwrap().is_none());
    assert!(db.get(&TraceId([152; 16])).unwrap().is_some());
    // Stored before the retention cut (trace 170 at t0 + 170 s): gone.
    assert_eq!(
        db.prune(t0 + Duration::from_secs(171), 1000, 100).unwrap(),
        19
    );
    assert!(db.get(&TraceId([170; 16])).unwrap().is_none());
    assert!(db.get(&TraceId([171; 16])).unwrap().is_some());
    assert_eq!(scores(), 30 * 2 + 1);
}

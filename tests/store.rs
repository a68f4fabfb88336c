//! The durable store: results in SQLite survive `kill -9` and a restart byte
//! for byte; an older revision never replaces a newer one; `GET /traces`
//! filters agree with the memory store's; retention and `max_traces` are
//! enforced in the database; a database from a newer toolscore is refused.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::num::NonZero;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolscore::listener::Listener;

use common::outage::{all_evaluated, send_until_refused, small_queues};
use common::process::{WAIT, results_survive_kill_9};
use common::records::{filters_agree_with_the_memory_store, record};
use common::service::test_config;
use toolscore::api::grpc::pb;
use toolscore::api::grpc::pb::scores_service_client::ScoresServiceClient;
use toolscore::config::{StoreBackend, StoreConfig};
use toolscore::span::TraceId;
use toolscore::store::Retention;
use toolscore::store::sqlite::Sqlite;
use toolscore::store::{DbStore, Prepared, ResultStore, StoredResult};

/// Every conformance case through live OTLP into `toolscore serve` on
/// SQLite, `kill -9`, a restart on the same file: the same bytes
/// ([`results_survive_kill_9`]); then the bytes on disk a result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_survive_kill_9_and_a_restart_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let config = sqlite_config(dir.path().join("results.db"));
    let n = results_survive_kill_9(&config, dir.path()).await;
    println!("{n} results survived kill -9");
    let size = |f: &str| std::fs::metadata(dir.path().join(f)).map_or(0, |m| m.len());
    // Bytes on disk a result, once the WAL is checkpointed into the file.
    let db = rusqlite::Connection::open(dir.path().join("results.db")).unwrap();
    db.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
    let bytes = size("results.db");
    println!("checkpointed: {bytes} bytes, {} a result", bytes / n as u64);
    // The deterministic scores' details were rendered, after the restart,
    // from what the file keeps: the calls and one row an evaluator config.
    let count = |q: &str| -> i64 { db.query_row(q, [], |r| r.get(0)).unwrap() };
    let rendered = count("SELECT count(*) FROM scores WHERE details IS NULL");
    let sources = count("SELECT count(*) FROM explainers");
    println!("{rendered} scores rendered on read, from {sources} stored configs");
    assert!(rendered > 100, "{rendered}");
    assert!(sources > 0 && sources < rendered, "{sources}");
    assert_eq!(
        count(
            "SELECT count(*) FROM scores s WHERE s.details IS NULL AND NOT EXISTS
               (SELECT 1 FROM explainers e WHERE e.hash = s.explainer)"
        ),
        0
    );
}

/// The test configuration with its results in the SQLite file at `path`.
fn sqlite_config(path: PathBuf) -> toolscore::config::Config {
    let mut config = test_config();
    config.store.backend = StoreBackend::Sqlite;
    config.store.sqlite.path = path;
    config
}

fn sqlite_store(dir: &Path, max_traces: usize) -> DbStore {
    let mut config = StoreConfig {
        backend: StoreBackend::Sqlite,
        max_traces: NonZero::new(max_traces).unwrap(),
        ..StoreConfig::default()
    };
    config.sqlite.path = dir.join("results.db");
    config.writer.max_batch = NonZero::new(7).unwrap();
    let db = Arc::new(Sqlite::open(&config.sqlite).unwrap());
    DbStore::start(db, &config).unwrap()
}

/// Puts and waits until the writer has committed them (close drains it).
fn put_all(store: DbStore, records: Vec<StoredResult>) {
    for r in records {
        store.put(r, Instant::now());
    }
    assert!(store.close(WAIT), "the writer did not drain");
}

#[test]
fn an_older_revision_never_replaces_a_newer_one_and_reopening_reads_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let newer = record(1, 2, &[("a", Some(1.0)), ("b", Some(-0.0))]);
    let older = record(1, 1, &[("a", Some(0.0))]);
    put_all(sqlite_store(dir.path(), 100), vec![newer.clone(), older]);
    let store = sqlite_store(dir.path(), 100);
    let got = store.get(&TraceId([1; 16])).unwrap();
    assert_eq!(*got, newer);
    // -0.0 kept as itself, not as 0.
    assert!(got.scores[1].outcome.score.unwrap().is_sign_negative());
}

/// A read of a result this process committed, while memory keeps it, is
/// answered on the calling thread: it does not wait for the blocking pool
/// (held here by a task that ends only when the test lets it). A trace
/// memory does not know needs the file, and so the pool.
#[test]
fn a_result_in_memory_is_read_without_the_blocking_pool() {
    use toolscore::store::ResultOrWait;
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn ResultStore> = Arc::new(sqlite_store(dir.path(), 100));
    let r = record(1, 1, &[("a", Some(1.0))]);
    let id = r.trace_id;
    let ResultOrWait::Wait(committed) = store.result_or_wait(id) else {
        panic!("stored before it was put")
    };
    store.put(r, Instant::now());
    let rt = tokio::runtime::Builder::new_current_thread()
        .max_blocking_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        tokio::time::timeout(WAIT, committed)
            .await
            .unwrap()
            .unwrap();
        let (release, held) = std::sync::mpsc::channel::<()>();
        let busy = tokio::task::spawn_blocking(move || held.recv());
        let read = tokio::time::timeout(WAIT, toolscore::store::get(&store, id));
        assert!(read.await.unwrap().unwrap().is_some());
        let waited = toolscore::store::result_or_wait(&store, id);
        let waited = tokio::time::timeout(WAIT, waited).await.unwrap().unwrap();
        assert!(matches!(waited, ResultOrWait::Ready(_)));
        // Not in memory: it needs the pool, so it cannot be answered
        // before the pool's one thread is let go.
        let unknown = toolscore::store::get(&store, TraceId([9; 16]));
        tokio::pin!(unknown);
        let early = tokio::time::timeout(Duration::from_millis(50), &mut unknown).await;
        assert!(early.is_err(), "answered without the blocking pool");
        release.send(()).unwrap();
        assert!(unknown.await.unwrap().is_none());
        busy.await.unwrap().unwrap();
    });
}

/// An LLM judge's update of a revision replaces it, pending score and all.
#[test]
fn a_judged_update_replaces_its_revision() {
    let dir = tempfile::tempdir().unwrap();
    common::records::a_judged_update_replaces_its_revision(|| sqlite_store(dir.path(), 100));
}

/// A judge still `pending` when the process stopped (killed before its
/// model answered) is `skipped` when the file is opened again: no one else
/// uses the file, so no one would ever answer it.
#[test]
fn judges_pending_at_a_stop_are_skipped_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = record(4, 1, &[("judge", None), ("count", Some(1.0))]);
    r.scores[0].outcome = toolscore::evaluator::Outcome::pending().into();
    put_all(sqlite_store(dir.path(), 100), vec![r.clone()]);
    let store = sqlite_store(dir.path(), 100);
    let got = store.get(&TraceId([4; 16])).unwrap();
    let judge = &got.scores[0].outcome;
    assert_eq!(judge.status, toolscore::evaluator::Status::Skipped);
    assert_eq!(
        judge.error.as_deref(),
        Some("judge was not judged: toolscore stopped before the model answered")
    );
    assert_eq!(got.scores[1], r.scores[1], "the other scores are untouched");
}

/// The filters of `GET /traces` on SQLite give what the memory store gives
/// for the same records.
#[test]
fn list_filters_agree_with_the_memory_store() {
    let dir = tempfile::tempdir().unwrap();
    filters_agree_with_the_memory_store(|| sqlite_store(dir.path(), 1000));
}

/// `max_traces` is enforced in the database (by each commit, and by the
/// writer's once-a-second pass).
#[test]
fn max_traces_is_enforced_in_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_store(dir.path(), 10);
    for n in 1..=50u8 {
        store.put(record(n, 1, &[("a", Some(1.0))]), Instant::now());
    }
    // Wait for the commits (and the pass) with a deadline.
    let deadline = Instant::now() + WAIT;
    while store.evicted() < 40 {
        assert!(Instant::now() < deadline, "{} pruned", store.evicted());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(store.evicted(), 40);
    assert!(
        store.get(&TraceId([50; 16])).is_some(),
        "the newest is kept"
    );
    assert!(store.close(WAIT));
    let reopened = Sqlite::open(&toolscore::config::SqliteConfig {
        path: dir.path().join("results.db"),
        ..Default::default()
    })
    .unwrap();
    use toolscore::store::Database;
    assert_eq!(reopened.count().unwrap(), 10);
}

/// A write deletes, in its own transaction, as many of the oldest rows as
/// it adds past `max_traces` (the table never outgrows it under load), plus
/// a chunk of an excess or of aged rows left before, never more.
#[test]
fn a_write_keeps_the_table_at_its_bound_and_works_off_a_backlog_by_chunks() {
    use toolscore::store::Database;
    let dir = tempfile::tempdir().unwrap();
    let (path, db) = open_sqlite(dir.path());
    let t0 = std::time::SystemTime::now();
    let at = |n: u8| t0 + Duration::from_secs(u64::from(n));
    let scores = || count_rows(&path, "SELECT count(*) FROM scores");
    let bounded = Retention {
        older_than: std::time::SystemTime::UNIX_EPOCH,
        max_traces: 50,
        chunk: 10,
    };
    let mut pruned = 0;
    for n in 1..=120u8 {
        let r = Prepared::new(Arc::new(record(
            n,
            1,
            &[("a", Some(1.0)), ("b", Some(0.5))],
        )));
        pruned += db.write(&[r], at(n), &bounded).unwrap().pruned;
        assert!(db.count().unwrap() <= 50, "after write {n}");
    }
    assert_eq!(pruned, 120 - 50);
    assert_eq!(db.count().unwrap(), 50);
    assert_eq!(scores(), 50 * 2);
    assert!(db.get(&TraceId([70; 16])).unwrap().is_none());
    assert!(db.get(&TraceId([71; 16])).unwrap().is_some());

    // A backlog (the bound lowered to 20): each write deletes the row it
    // adds and a chunk of 10 more.
    let lowered = Retention {
        max_traces: 20,
        ..bounded
    };
    let one = |n: u8| vec![Prepared::new(Arc::new(record(n, 1, &[("a", Some(1.0))])))];
    assert_eq!(db.write(&one(121), at(121), &lowered).unwrap().pruned, 11);
    assert_eq!(db.count().unwrap(), 40);
    assert_eq!(db.write(&one(122), at(122), &lowered).unwrap().pruned, 11);
    assert_eq!(db.write(&one(123), at(123), &lowered).unwrap().pruned, 11);
    assert_eq!(db.count().unwrap(), 20);
    // At its bound: one in, one out.
    assert_eq!(db.write(&one(124), at(124), &lowered).unwrap().pruned, 1);
    assert_eq!(db.count().unwrap(), 20);

    // Aged rows (stored up to t0 + 110 s) go by the chunk as well, and only
    // those: the count is below its bound.
    let aged = Retention {
        older_than: at(111),
        max_traces: 1000,
        chunk: 3,
    };
    // Rows 105..=124 are left; 105..=110 are aged: 6, by 1 + 3 a write.
    assert_eq!(db.write(&one(125), at(125), &aged).unwrap().pruned, 4);
    assert_eq!(db.write(&one(126), at(126), &aged).unwrap().pruned, 2);
    assert_eq!(db.write(&one(127), at(127), &aged).unwrap().pruned, 0);
    assert!(db.get(&TraceId([110; 16])).unwrap().is_none());
    assert!(db.get(&TraceId([111; 16])).unwrap().is_some());
    assert_eq!(db.count().unwrap(), 17);

    // A batch that replaces a revision (not added) and adds two: past a bound
    // of 16 by three, which also covers the rows aged before 113.
    let batch = [
        Prepared::new(Arc::new(record(120, 2, &[("a", Some(0.0))]))),
        Prepared::new(Arc::new(record(128, 1, &[("a", Some(1.0))]))),
        Prepared::new(Arc::new(record(129, 1, &[("a", Some(1.0))]))),
    ];
    let both = Retention {
        older_than: at(113),
        max_traces: 16,
        chunk: 1,
    };
    let written = db.write(&batch, at(129), &both).unwrap();
    assert_eq!(written.stored, [true, true, true]);
    assert_eq!(written.pruned, 3);
    assert_eq!(db.get(&TraceId([120; 16])).unwrap().unwrap().revision, 2);
    assert!(db.get(&TraceId([113; 16])).unwrap().is_none());
    assert_eq!(db.count().unwrap(), 16);
    // Aged rows past the excess: one over the bound, two aged (114, 115),
    // and a limit of 1 + 1.
    let aged_more = Retention {
        older_than: at(116),
        ..both
    };
    assert_eq!(db.write(&one(130), at(130), &aged_more).unwrap().pruned, 2);
    assert!(db.get(&TraceId([115; 16])).unwrap().is_none());
    assert!(db.get(&TraceId([116; 16])).unwrap().is_some());

    // The kept count is the table's, and no score outlives its trace.
    assert_eq!(db.count().unwrap(), 15);
    assert_eq!(count_rows(&path, "SELECT count(*) FROM traces"), 15);
    let orphans =
        "SELECT count(*) FROM scores WHERE stored_at NOT IN (SELECT stored_at FROM traces)";
    assert_eq!(count_rows(&path, orphans), 0);
}

/// The writer checkpoints the WAL itself (SQLite's automatic checkpoint
/// is off on its connection): the log restarts, so it never holds much more
/// than `CHECKPOINT_FRAMES` pages, however many commits go through.
#[test]
fn the_write_ahead_log_stays_at_its_checkpoint_bound() {
    use toolscore::store::Database;
    use toolscore::store::sqlite::CHECKPOINT_FRAMES;
    let dir = tempfile::tempdir().unwrap();
    let (path, db) = open_sqlite(dir.path());
    let keep = Retention {
        older_than: std::time::SystemTime::UNIX_EPOCH,
        max_traces: 1000,
        chunk: 10,
    };
    let now = std::time::SystemTime::now();
    // Each commit replaces a trace's revision: a few pages (its row, its
    // scores, the indexes), 3 × CHECKPOINT_FRAMES commits at least that
    // many frames.
    for revision in 1..=3 * CHECKPOINT_FRAMES as u32 {
        let n = (revision % 200) as u8;
        let r = Prepared::new(Arc::new(record(n, revision, &[("a", Some(1.0))])));
        db.write(&[r], now, &keep).unwrap();
    }
    let frames = || {
        let mut wal = path.clone().into_os_string();
        wal.push("-wal");
        (std::fs::metadata(&wal).unwrap().len() - 32) / (16_384 + 24)
    };
    let at_most = |bound: i32| bound as u64 + 50;
    assert!(
        frames() <= at_most(CHECKPOINT_FRAMES),
        "{} frames",
        frames()
    );
    assert_eq!(db.count().unwrap(), 200);

    // Nothing written, retention deleting one row a commit: the log is
    // checkpointed at twice the bound.
    let batch: Vec<Prepared> = (0..1000u32)
        .map(|k| {
            let mut r = record(1, 1, &[("a", Some(1.0))]);
            r.trace_id = TraceId(u128::from(k + 1000).to_be_bytes());
            Prepared::new(Arc::new(r))
        })
        .collect();
    for chunk in batch.chunks(250) {
        db.write(chunk, now, &keep).unwrap();
    }
    for _ in 0..990 {
        assert_eq!(db.prune(now, 0, 1).unwrap(), 1);
    }
    assert!(frames() > at_most(CHECKPOINT_FRAMES));
    assert!(
        frames() <= at_most(2 * CHECKPOINT_FRAMES),
        "{} frames",
        frames()
    );
}

/// A new SQLite database in `dir`: its path and the backend.
fn open_sqlite(dir: &Path) -> (std::path::PathBuf, Sqlite) {
    let config = toolscore::config::SqliteConfig {
        path: dir.join("results.db"),
        ..Default::default()
    };
    (config.path.clone(), Sqlite::open(&config).unwrap())
}

/// The one number `query` gives, read on a connection of its own.
fn count_rows(path: &Path, query: &str) -> i64 {
    rusqlite::Connection::open(path)
        .unwrap()
        .query_row(query, [], |r| r.get(0))
        .unwrap()
}

/// Retention deletes the oldest traces with their scores, and a replaced
/// revision leaves no score rows behind (no foreign key does it for us).
#[test]
fn pruning_deletes_the_oldest_traces_with_their_scores() {
    let dir = tempfile::tempdir().unwrap();
    let (path, db) = open_sqlite(dir.path());
    common::records::pruning_deletes_the_oldest_traces_with_their_scores(&db, || {
        count_rows(&path, "SELECT count(*) FROM scores")
    });
}

/// A file of schema version 2 (every score's details stored as text) is
/// migrated: its results read back as they were written.
#[test]
fn schema_2_is_migrated_keeping_its_results() {
    use toolscore::store::Database;
    let dir = tempfile::tempdir().unwrap();
    let t0 = std::time::SystemTime::now();
    let (path, db) = open_sqlite(dir.path());
    let scores = [("a", Some(1.0)), ("b", Some(0.5))];
    common::records::write_in_order(&db, t0, 3, &scores);
    let stored: Vec<_> = (1..=3)
        .map(|k| db.get(&TraceId([k; 16])).unwrap().unwrap())
        .collect();
    drop(db);
    // Back to version 2's form.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(
            "DROP TABLE explainers;
             CREATE TABLE scores_v2 (
                 stored_at INTEGER NOT NULL, idx INTEGER NOT NULL,
                 evaluator_id TEXT NOT NULL, evaluator_type TEXT NOT NULL,
                 status TEXT NOT NULL, score REAL, score_bits INTEGER,
                 score_is_int INTEGER NOT NULL, passed INTEGER, threshold_bits INTEGER,
                 details TEXT NOT NULL, error TEXT, PRIMARY KEY (stored_at, idx));
             INSERT INTO scores_v2 SELECT stored_at, idx, evaluator_id, evaluator_type, status,
                 score, score_bits, score_is_int, passed, threshold_bits, details, error
                 FROM scores;
             DROP TABLE scores;
             ALTER TABLE scores_v2 RENAME TO scores;
             CREATE INDEX scores_pending ON scores (stored_at) WHERE status = 'pending';
             PRAGMA user_version = 2;",
        )
        .unwrap();
    let (_, db) = open_sqlite(dir.path());
    assert_eq!(count_rows(&path, "PRAGMA user_version"), 3);
    for (k, before) in (1..=3).zip(&stored) {
        assert_eq!(db.get(&TraceId([k; 16])).unwrap().as_ref(), Some(before));
    }
    assert_eq!(
        count_rows(&path, "SELECT count(*) FROM scores WHERE details IS NULL"),
        0
    );
}

#[test]
fn a_database_from_a_newer_toolscore_is_refused_with_its_versions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    let e = Sqlite::open(&toolscore::config::SqliteConfig {
        path: path.clone(),
        ..Default::default()
    })
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains("schema version 99") && e.contains("newer"),
        "{e}"
    );
    // And `toolscore serve` refuses to start, naming it.
    let config = sqlite_config(path);
    let file = dir.path().join("config.yaml");
    std::fs::write(&file, serde_saphyr::to_string(&config).unwrap()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolscore"))
        .args(["serve", "--config"])
        .arg(&file)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("schema version 99"), "{stderr}");
}

/// The database cannot be written (another process holds its lock): the
/// writer retries, `/readyz` says why, the queues fill and the receiver
/// refuses with 503 + Retry-After; once the lock is released every trace
/// that was acknowledged has its result, stored once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_the_database_cannot_be_written_receivers_refuse_and_nothing_acknowledged_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = sqlite_config(dir.path().join("results.db"));
    config.store.sqlite.busy_timeout_ms = 20;
    let config = small_queues(config);
    let running = common::service::start(config).await;
    let otlp = format!(
        "http://{}/v1/traces",
        running.addr(Listener::OtlpHttp).unwrap()
    );
    let api = running.addr(Listener::ApiHttp).unwrap();
    // A request held instead of answered fails the test rather than hanging it.
    let http = common::http_builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();

    // Another connection takes the write lock and keeps it.
    let lock = rusqlite::Connection::open(dir.path().join("results.db")).unwrap();
    lock.execute_batch("BEGIN EXCLUSIVE").unwrap();

    let mut accepted = Vec::new();
    send_until_refused(&http, &otlp, api, &mut accepted).await;

    lock.execute_batch("COMMIT").unwrap();
    all_evaluated(&http, api, &accepted).await;
    let rows: i64 = lock
        .query_row("SELECT count(*) FROM traces", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        rows as usize,
        accepted.len(),
        "each acknowledged trace stored once"
    );
    println!(
        "{} accepted while the database was locked, all stored",
        accepted.len()
    );
    running.stop().await.unwrap();
}

/// The database file deleted under the running service (by hand, by a
/// cleanup job): everything written to it would be gone at the next start,
/// so the service notices (within a second, idle or not), goes unready
/// saying why, stores nothing more there, and refuses intake once its
/// queues are full, rather than acknowledging results that would be lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_file_deleted_under_the_service_makes_it_unready() {
    let dir = tempfile::tempdir().unwrap();
    let config = sqlite_config(dir.path().join("results.db"));
    let config = small_queues(config);
    let running = common::service::start(config).await;
    let otlp = format!(
        "http://{}/v1/traces",
        running.addr(Listener::OtlpHttp).unwrap()
    );
    let api = running.addr(Listener::ApiHttp).unwrap();
    let http = common::http_builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let mut accepted = Vec::new();
    for n in 1..=3 {
        let r = common::outage::post_one_span_trace(&http, &otlp, n).await;
        assert_eq!(r.status(), 200);
        accepted.push(n);
    }
    all_evaluated(&http, api, &accepted).await;

    std::fs::remove_file(dir.path().join("results.db")).unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        let (status, text) = common::process::body(&http, format!("http://{api}/readyz")).await;
        if status == 503 && text.contains("was deleted or replaced while open") {
            break;
        }
        assert!(Instant::now() < deadline, "still {status} {text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    send_until_refused(&http, &otlp, api, &mut accepted).await;
    // What was taken since cannot be stored: the drain says so.
    let drained = running.stop().await;
    assert!(
        drained
            .as_ref()
            .is_err_and(|e| e.to_string().contains("did not commit every result")),
        "{drained:?}"
    );
}

/// A stored row whose tool calls cannot be read (a damaged file) fails
/// only the reads that need its calls, each with the documented error
/// shape; the list pages, which do not show calls, still load.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_whose_calls_cannot_be_read_fails_only_the_reads_of_its_calls() {
    let dir = tempfile::tempdir().unwrap();
    let config = sqlite_config(dir.path().join("results.db"));
    let running = common::service::start(config.clone()).await;
    let otlp = format!(
        "http://{}/v1/traces",
        running.addr(Listener::OtlpHttp).unwrap()
    );
    let api = running.addr(Listener::ApiHttp).unwrap();
    let http = common::http_builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let r = common::outage::post_one_span_trace(&http, &otlp, 7).await;
    assert_eq!(r.status(), 200);
    let id = format!("{:032x}", 7);
    let (status, body) = common::process::body(
        &http,
        format!("http://{api}/traces/{id}/scores?wait_ms=10000"),
    )
    .await;
    assert!(
        status == 200 && !body.contains("pending"),
        "{status} {body}"
    );
    // Damaged while the service is down: read from the file at the restart.
    running.stop().await.unwrap();
    let db = rusqlite::Connection::open(dir.path().join("results.db")).unwrap();
    assert_eq!(
        db.execute("UPDATE traces SET tool_calls = '[{\"name\":'", [])
            .unwrap(),
        1
    );
    let running = common::service::start(config).await;
    let api = running.addr(Listener::ApiHttp).unwrap();
    for path in [
        format!("/traces/{id}/scores"),
        format!("/traces/{id}"),
        "/traces".into(),
    ] {
        let (status, body) = common::process::body(&http, format!("http://{api}{path}")).await;
        assert_eq!(status, 500, "{path}: {body}");
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["error"]["code"], "internal", "{path}: {body}");
    }
    let (status, body) = common::process::body(&http, format!("http://{api}/ui/traces/{id}")).await;
    assert_eq!(status, 500, "{body}");
    assert!(
        body.contains("This trace&#39;s stored result could not be read.")
            || body.contains("This trace's stored result could not be read."),
        "{body}"
    );
    let (status, body) = common::process::body(&http, format!("http://{api}/ui/")).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(&id), "{body}");
    // The gRPC API likewise: INTERNAL, its detail logged, not sent.
    let channel = tonic::transport::Endpoint::from_shared(format!(
        "http://{}",
        running.addr(Listener::ApiGrpc).unwrap()
    ))
    .unwrap()
    .connect()
    .await
    .unwrap();
    let mut grpc = ScoresServiceClient::new(channel);
    let get = pb::GetScoresRequest {
        trace_id: id.clone(),
    };
    let status = grpc.get_scores(get).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Internal, "{status:?}");
    assert_eq!(status.message(), "a stored result could not be read");
    running.stop().await.unwrap();
}

/// Arguments are accepted nested up to 200 deep, past `serde_json`'s
/// default limit of 128: such a trace must read back (it made every
/// listing that reached it fail with 503), its details too.
#[test]
fn a_trace_with_arguments_nested_200_deep_reads_back() {
    use toolscore::store::{ListFilter, StoredCall};
    let deep = |n: usize| -> serde_json::Value {
        serde_json::from_str::<serde_json::Value>("1")
            .map(|mut v| {
                for _ in 0..n {
                    v = serde_json::json!([v]);
                }
                v
            })
            .unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let mut r = record(1, 1, &[("a", Some(1.0))]);
    r.tool_calls = vec![StoredCall::shown(
        "search",
        None,
        &serde_json::json!({ "q": deep(199) }),
        "ok",
        toolscore::span::SpanId([2; 8]),
        (1, 2),
    )]
    .into();
    let details = serde_json::json!({ "expected": deep(210) });
    r.scores[0].outcome.details = (&details).into();
    put_all(sqlite_store(dir.path(), 100), vec![r.clone()]);
    let store = sqlite_store(dir.path(), 100);
    let got = store.get(&TraceId([1; 16])).unwrap();
    let args = &got.calls().unwrap()[0].args;
    assert_eq!(
        args.as_json_text(),
        r.calls().unwrap()[0].args.as_json_text()
    );
    assert_eq!(args.to_json(), serde_json::json!({ "q": deep(199) }));
    assert_eq!(
        args.to_raw().get(),
        args.as_json_text(),
        "as the API serves it"
    );
    assert_eq!(got.scores[0].outcome.details.to_json(), details);
    let listed = store.list(&ListFilter {
        limit: 10,
        ..ListFilter::default()
    });
    assert_eq!(listed.len(), 1);
}

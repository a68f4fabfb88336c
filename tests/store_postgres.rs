//! The PostgreSQL store, on a real server each test starts
//! (tests/common/pg.rs): results survive `kill -9`; `GET /traces` filters
//! agree with the memory store's; a newer schema is refused, an older one
//! migrated; retention's passes delete what they should; three
//! replicas on one database answer for each other's traces, wake each
//! other's long polls and watchers; an outage of the database makes the
//! receivers refuse and loses nothing acknowledged.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::collections::HashSet;
use std::num::NonZero;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolscore::listener::Listener;

use common::conformance::{self, Case};
use common::live::trace_of;
use common::outage::{all_evaluated, post_one_span_trace, send_until_refused, small_queues};
use common::pg::Pg;
use common::process::{
    WAIT, body, conformance_config, read_case, ready, results_survive_kill_9, send_cases, serve,
};
use common::records::{filters_agree_with_the_memory_store, record};
use common::service::test_config;
use serde_json::Value as Json;
use toolscore::api::grpc::pb;
use toolscore::api::grpc::pb::scores_service_client::ScoresServiceClient;
use toolscore::config::{PostgresConfig, StoreBackend, StoreConfig};
use toolscore::span::TraceId;
use toolscore::store::postgres::Postgres;
use toolscore::store::{DbStore, Prepared, ResultStore};

fn store_config(url: String) -> StoreConfig {
    let mut config = StoreConfig {
        backend: StoreBackend::Postgres,
        ..StoreConfig::default()
    };
    config.postgres.url = url;
    config.writer.max_batch = NonZero::new(7).unwrap();
    config
}

fn postgres_store(url: &str) -> DbStore {
    let config = store_config(url.to_owned());
    let db = Arc::new(Postgres::open(&config.postgres).unwrap());
    DbStore::start(db, &config).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_survive_kill_9_and_a_restart_byte_for_byte() {
    let Some(pg) = Pg::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config();
    config.store = store_config(pg.database("restart"));
    let n = results_survive_kill_9(&config, dir.path()).await;
    println!("{n} results survived kill -9");
}

#[test]
fn list_filters_agree_with_the_memory_store() {
    let Some(pg) = Pg::start() else { return };
    let url = pg.database("filters");
    filters_agree_with_the_memory_store(|| postgres_store(&url));
}

#[test]
fn an_older_revision_never_replaces_a_newer_one() {
    let Some(pg) = Pg::start() else { return };
    let url = pg.database("revisions");
    let newer = record(1, 2, &[("a", Some(1.0)), ("b", Some(-0.0))]);
    let older = record(1, 1, &[("a", Some(0.0))]);
    // Two writers (two replicas): the newer revision first, then the older.
    let (a, b) = (postgres_store(&url), postgres_store(&url));
    a.put(newer.clone(), Instant::now());
    assert!(a.close(WAIT));
    b.put(older, Instant::now());
    assert!(b.close(WAIT));
    let got = postgres_store(&url).get(&TraceId([1; 16])).unwrap();
    assert_eq!(*got, newer);
    assert!(got.scores[1].outcome.score.unwrap().is_sign_negative());
    // A newer revision with fewer scores replaces the row and every score
    // (only replaced traces' scores are deleted first; new ones have none).
    let third = record(1, 3, &[("c", Some(0.25))]);
    let c = postgres_store(&url);
    c.put(third.clone(), Instant::now());
    c.put(record(2, 1, &[("a", Some(1.0))]), Instant::now());
    assert!(c.close(WAIT));
    let reader = postgres_store(&url);
    assert_eq!(*reader.get(&TraceId([1; 16])).unwrap(), third);
    assert_eq!(reader.get(&TraceId([2; 16])).unwrap().scores.len(), 1);
}

/// An LLM judge's update of a revision replaces it, pending score and all.
#[test]
fn a_judged_update_replaces_its_revision() {
    let Some(pg) = Pg::start() else { return };
    let url = pg.database("judged");
    common::records::a_judged_update_replaces_its_revision(|| postgres_store(&url));
}

/// Another replica's judged update (the same revision again) reaches this
/// one's watchers, after the evaluation it completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_replicas_judged_update_is_published_here() {
    let Some(pg) = Pg::start() else { return };
    let url = pg.database("judged_replicas");
    let open = |url: String| tokio::task::spawn_blocking(move || postgres_store(&url));
    let a = open(url.clone()).await.unwrap();
    let b = open(url).await.unwrap();
    let mut updates = a.subscribe();
    let mut first = record(5, 1, &[("judge", None)]);
    first.scores[0].outcome = toolscore::evaluator::Outcome::pending().into();
    let mut update = first.clone();
    update.scores[0].outcome =
        toolscore::evaluator::Outcome::ok(0.5, serde_json::json!("x")).into();
    update.judged = Some(Box::default());
    b.put(first, Instant::now());
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut statuses = Vec::new();
    // The second put after the first is seen: two commits, two announcements.
    while statuses.len() < 2 {
        let r = tokio::time::timeout_at(deadline, updates.recv())
            .await
            .expect("both publications in time")
            .unwrap();
        statuses.push(r.scores[0].outcome.status);
        if statuses.len() == 1 {
            b.put(update.clone(), Instant::now());
        }
    }
    use toolscore::evaluator::Status;
    assert_eq!(statuses, vec![Status::Pending, Status::Ok]);
    tokio::task::spawn_blocking(move || {
        assert!(a.close(WAIT) && b.close(WAIT));
    })
    .await
    .unwrap();
}

/// A commit is published once on every replica: by its writer on its own
/// replica (the listener skips its own announcements), by the listener on
/// the others. Another replica's commit, announced after this one's, is the
/// barrier: once it arrives, every earlier announcement has been handled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_commit_is_published_once_on_every_replica() {
    let Some(pg) = Pg::start() else { return };
    let url = pg.database("once");
    // Opening blocks on the client's own runtime: off the async threads.
    let open = |url: String| tokio::task::spawn_blocking(move || postgres_store(&url));
    let a = open(url.clone()).await.unwrap();
    let mut updates = a.subscribe();
    let mut seen = std::collections::HashMap::<TraceId, usize>::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut next = async |seen: &mut std::collections::HashMap<TraceId, usize>| {
        let r = tokio::time::timeout_at(deadline, updates.recv())
            .await
            .expect("an update in time")
            .unwrap();
        *seen.entry(r.trace_id).or_default() += 1;
        r.trace_id
    };
    for n in 1..=50u8 {
        a.put(record(n, 1, &[("a", Some(1.0))]), Instant::now());
    }
    while seen.len() < 50 {
        next(&mut seen).await;
    }
    let b = open(url).await.unwrap();
    b.put(record(200, 1, &[("a", Some(0.5))]), Instant::now());
    while next(&mut seen).await != TraceId([200; 16]) {}
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n != 1).collect();
    assert!(twice.is_empty(), "published more than once: {twice:?}");
    tokio::task::spawn_blocking(move || {
        assert!(a.close(WAIT) && b.close(WAIT));
    })
    .await
    .unwrap();
}

/// Retention deletes the oldest traces with their scores, and a replaced
/// revision leaves no score rows behind.
#[test]
fn pruning_deletes_the_oldest_traces_with_their_scores() {
    let Some(pg) = Pg::start() else { return };
    let url = pg.database("pruning");
    let db = Postgres::open(&store_config(url).postgres).unwrap();
    common::records::pruning_deletes_the_oldest_traces_with_their_scores(&db, || {
        pg.number("pruning", "SELECT count(*) FROM toolscore_scores")
    });
}

/// Retention skips a row another transaction holds (a writer storing a new
/// revision of it) instead of waiting for it, and takes it on a later pass.
#[test]
fn pruning_skips_a_row_a_writer_holds() {
    use toolscore::store::Database;
    let Some(pg) = Pg::start() else { return };
    let url = pg.database("skiplocked");
    let db = Postgres::open(&store_config(url).postgres).unwrap();
    let t0 = std::time::SystemTime::now();
    common::records::write_in_order(&db, t0, 10, &[("a", Some(1.0))]);
    let held = pg.hold(
        "skiplocked",
        "SELECT 1 FROM toolscore_traces WHERE trace_id = $1 FOR UPDATE",
        [1; 16],
    );
    let later = t0 + Duration::from_secs(100);
    assert_eq!(db.prune(later, usize::MAX, 100).unwrap(), 9);
    assert!(db.get(&TraceId([1; 16])).unwrap().is_some());
    held.release();
    assert_eq!(db.prune(later, usize::MAX, 100).unwrap(), 1);
    assert_eq!(db.count().unwrap(), 0);
}

/// The writer compresses a large details text with lz4 when the server has
/// it (else with the server's default), and reads it back unchanged.
#[test]
fn large_text_is_compressed_with_lz4_where_the_server_has_it() {
    use toolscore::store::Database;
    let Some(pg) = Pg::start() else { return };
    let url = pg.database("compression");
    let db = Postgres::open(&store_config(url).postgres).unwrap();
    let mut r = record(1, 1, &[("a", Some(1.0))]);
    let text: String = (0..4000)
        .map(|i| char::from(b'a' + (i % 7) as u8))
        .collect();
    let mut outcome = r.scores[0].outcome.to_outcome();
    outcome.details = serde_json::json!({ "text": text }).into();
    r.scores[0].outcome = outcome.into();
    let now = std::time::SystemTime::now();
    db.write(
        &[Prepared::new(Arc::new(r.clone()))],
        now,
        &common::records::KEEP_ALL,
    )
    .unwrap();
    assert_eq!(db.get(&TraceId([1; 16])).unwrap().unwrap(), r);
    // Before PostgreSQL 14 there is one method, and no way to ask for it.
    if pg.number(
        "compression",
        "SELECT current_setting('server_version_num')::bigint",
    ) < 140_000
    {
        return;
    }
    let has_lz4 = pg.number(
        "compression",
        "SELECT count(*) FROM pg_settings
         WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)",
    ) == 1;
    let lz4 = pg.number(
        "compression",
        "SELECT count(*) FROM toolscore_scores WHERE pg_column_compression(details) = 'lz4'",
    );
    assert_eq!(lz4, i64::from(has_lz4));
}

/// A shared database's retention runs on a thread of its own, beside the
/// writer's commits: results that age out while a commit waits on another
/// transaction's lock are deleted, with their scores.
#[test]
fn retention_runs_while_the_writer_waits() {
    let Some(pg) = Pg::start() else { return };
    let url = pg.database("retention");
    let mut config = store_config(url);
    config.retention_secs = NonZero::new(1).unwrap();
    let store =
        DbStore::start(Arc::new(Postgres::open(&config.postgres).unwrap()), &config).unwrap();
    // Another transaction inserts trace 99 and holds it uncommitted: the
    // writer's upsert of trace 99 waits for it.
    let held = pg.hold(
        "retention",
        "INSERT INTO toolscore_traces (trace_id, revision, status, complete, stored_at,
           tool_calls, content_captured, span_count)
         VALUES ($1, 1, 'evaluated', true, 0, '[]', true, 1)",
        [99; 16],
    );
    store.put(record(99, 1, &[("a", Some(0.5))]), Instant::now());
    let deadline = Instant::now() + WAIT;
    let waiting = "SELECT count(*) FROM pg_stat_activity
                   WHERE datname = 'retention' AND wait_event_type = 'Lock'";
    while pg.number("retention", waiting) == 0 {
        assert!(
            Instant::now() < deadline,
            "the writer never waited on the lock"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Twenty results stored long ago, with a score each, while it waits.
    pg.sql(
        "retention",
        "INSERT INTO toolscore_traces (trace_id, revision, status, complete, stored_at,
           tool_calls, content_captured, span_count)
         SELECT decode(lpad(to_hex(n), 32, '0'), 'hex'), 1, 'evaluated', true, n, '[]', true, 1
         FROM generate_series(1, 20) AS n;
         INSERT INTO toolscore_scores (trace_id, idx, evaluator_id, evaluator_type, status,
           score_is_int, details)
         SELECT decode(lpad(to_hex(n), 32, '0'), 'hex'), 0, 'a', 'count', 'ok', false, '{}'
         FROM generate_series(1, 20) AS n;",
    );
    while store.evicted() < 20 {
        assert!(
            Instant::now() < deadline,
            "{} pruned while the writer waits",
            store.evicted()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(pg.number("retention", waiting), 1, "the writer still waits");
    assert_eq!(
        pg.number("retention", "SELECT count(*) FROM toolscore_scores"),
        0
    );
    held.release();
    assert!(store.close(WAIT), "every result committed in time");
    let stored = pg.number("retention", "SELECT count(*) FROM toolscore_traces");
    assert_eq!(
        stored + store.evicted() as i64,
        21,
        "trace 99 was committed"
    );
    assert_eq!(
        pg.number("retention", "SELECT count(*) FROM toolscore_scores"),
        stored
    );
}

#[test]
fn a_database_from_a_newer_toolscore_is_refused_with_its_versions() {
    let Some(pg) = Pg::start() else { return };
    let url = pg.database("newer");
    drop(postgres_store(&url));
    pg.sql("newer", "UPDATE toolscore_schema SET version = 99");
    let e = Postgres::open(&PostgresConfig {
        url,
        ..Default::default()
    })
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains("schema version 99") && e.contains("newer"),
        "{e}"
    );
}

/// The replica a trace goes to, by trace ID (as the Collector's
/// `loadbalancing` exporter routes).
#[test]
fn sslmode_require_connects_over_tls_checking_the_servers_certificate() {
    let Some(pg) = Pg::start() else { return };
    let url = pg.database("tls");
    let ca = common::pki::Ca::new("toolscore database CA");
    let leaf = ca.server();
    // Only TLS connections over TCP from here on.
    pg.enable_ssl(&leaf.cert_pem, &leaf.key_pem, true);
    let files = common::pki::Files::new();
    let mut config = store_config(format!("{url}?sslmode=require"));
    config.postgres.tls.ca_file = Some(files.write("ca.crt", &ca.pem()));
    let store =
        DbStore::start(Arc::new(Postgres::open(&config.postgres).unwrap()), &config).unwrap();
    let r = record(7, 1, &[("a", Some(0.5))]);
    store.put(r.clone(), Instant::now());
    assert!(store.close(WAIT));
    assert_eq!(
        *postgres_store_with(&config).get(&TraceId([7; 16])).unwrap(),
        r
    );

    // The system's roots do not know this CA: the handshake fails, named.
    let mut untrusted = config.clone();
    untrusted.postgres.tls.ca_file = None;
    let e = Postgres::open(&untrusted.postgres)
        .err()
        .unwrap()
        .to_string();
    println!("untrusted: {e}");
    assert!(e.contains("certificate"), "{e}");
    // Without sslmode=require the client speaks plaintext, which this
    // server refuses.
    let mut plain = config.clone();
    plain.postgres.url = url;
    let e = Postgres::open(&plain.postgres).err().unwrap().to_string();
    println!("plaintext: {e}");
    assert!(
        e.contains("no encryption") || e.contains("pg_hba.conf"),
        "{e}"
    );
}

fn postgres_store_with(config: &StoreConfig) -> DbStore {
    DbStore::start(Arc::new(Postgres::open(&config.postgres).unwrap()), config).unwrap()
}

fn replica_of(trace: TraceId, n: usize) -> usize {
    usize::from(trace.0[15]) % n
}

/// Three `toolscore serve` on one database, every conformance case sent
/// wholly to one of them: each result is the same bytes through every
/// replica and passes its case; a `WatchScores` stream on replica 1
/// carries the other replicas' results; a long poll on replica 1 wakes
/// when replica 0 commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_on_one_database_answer_for_each_other() {
    let Some(pg) = Pg::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (mut config, cases) = conformance_config();
    config.store = store_config(pg.database("replicas"));
    // Replica-local results hold almost nothing: reads go to the database.
    config.store.max_bytes = NonZero::new(1).unwrap();
    let replicas: Vec<_> = (0..3).map(|_| serve(&config, dir.path())).collect();
    let http = common::http_builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    for r in &replicas {
        ready(&http, r.api).await;
    }
    // Held back: a long poll waits for it on replica 1 before replica 0 has it.
    let (polled, cases) = cases.split_first().unwrap();

    let mut watch = ScoresServiceClient::connect(format!("http://{}", replicas[1].api_grpc))
        .await
        .unwrap();
    // Once the response arrives, the subscription exists.
    let mut stream = watch
        .watch_scores(pb::WatchScoresRequest::default())
        .await
        .unwrap()
        .into_inner();

    let mut by_replica: Vec<Vec<&Case>> = vec![Vec::new(); 3];
    for case in cases {
        by_replica[replica_of(trace_of(case), 3)].push(case);
    }
    for (r, group) in replicas.iter().zip(&by_replica) {
        send_cases(r.otlp_grpc, group).await;
    }
    let mut failed = Vec::new();
    for case in cases {
        let own = replica_of(trace_of(case), 3);
        let (scores, trace) = read_case(&http, replicas[own].api, case).await;
        let json: Json = serde_json::from_str(&scores).unwrap();
        if let Err(why) = conformance::judge_json(case, &json["scores"][0]) {
            failed.push(format!("{}: {why}", case.id));
        }
        for (i, other) in replicas.iter().enumerate().filter(|(i, _)| *i != own) {
            let again = read_case(&http, other.api, case).await;
            assert_eq!(
                again,
                (scores.clone(), trace.clone()),
                "{} via {i}",
                case.id
            );
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
    println!("{} cases through 3 replicas", cases.len());

    // Every result of the other replicas arrives on replica 1's stream.
    let mut expected: HashSet<String> = cases
        .iter()
        .map(trace_of)
        .filter(|t| replica_of(*t, 3) != 1)
        .map(|t| t.to_hex())
        .collect();
    let deadline = tokio::time::Instant::now() + WAIT;
    while !expected.is_empty() {
        let next = tokio::time::timeout_at(deadline, stream.message())
            .await
            .unwrap_or_else(|_| panic!("{} results not streamed", expected.len()))
            .unwrap()
            .unwrap();
        expected.remove(&next.trace_id);
    }

    // A long poll on replica 1 for a trace that replica 0 has not got yet.
    let id = trace_of(polled).to_hex();
    let poll = {
        let (http, api) = (http.clone(), replicas[1].api);
        tokio::spawn(async move {
            body(
                &http,
                format!("http://{api}/traces/{id}/scores?wait_ms=20000"),
            )
            .await
        })
    };
    // The poll's connection is open (and its wait registered a moment
    // later; if the commit came first, the poll would still pass, finding
    // the result at once, so this only makes the check stronger).
    let deadline = Instant::now() + WAIT;
    while !poll_connected(&http, replicas[1].api).await {
        assert!(Instant::now() < deadline, "the long poll never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let started = Instant::now();
    send_cases(replicas[0].otlp_grpc, &[polled]).await;
    let (status, scores) = poll.await.unwrap();
    assert_eq!(status, 200, "{scores}");
    assert!(scores.contains("\"status\":\"evaluated\""), "{scores}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the long poll was not woken by the other replica's commit"
    );
}

/// Whether another connection than this request's is open on the HTTP API.
async fn poll_connected(http: &reqwest::Client, api: std::net::SocketAddr) -> bool {
    let (_, metrics) = body(http, format!("http://{api}/metrics")).await;
    metrics
        .lines()
        .find(|l| l.starts_with("toolscore_connections_open{listener=\"api_http\"}"))
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .is_some_and(|n| n >= 2.0)
}

/// PostgreSQL stops mid-load: the writer retries, `/readyz` says why, the
/// receivers refuse with 503 + Retry-After; once it is back every trace
/// that was acknowledged has its result, stored once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_of_the_database_refuses_spans_and_loses_nothing_acknowledged() {
    let Some(pg) = Pg::start() else { return };
    let mut config = test_config();
    config.store = store_config(pg.database("outage"));
    config.store.postgres.connect_timeout_ms = NonZero::new(500).unwrap();
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
    // Some traces stored before the outage.
    for n in 1..=20 {
        let r = post_one_span_trace(&http, &otlp, n).await;
        assert_eq!(r.status(), 200);
        accepted.push(n);
    }
    pg.stop();
    // Retention fails too while the server is down, and says so (asserted
    // once the results are stored: a test that ends with work in flight
    // does not stop).
    let deadline = Instant::now() + Duration::from_secs(20);
    let prune_failed = loop {
        let (_, text) = body(&http, format!("http://{api}/metrics")).await;
        let scrape = common::metrics::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        if scrape.value("toolscore_store_prune_errors_total", &[]) > Some(0.0) {
            break true;
        }
        if Instant::now() >= deadline {
            break false;
        }
        tokio::task::yield_now().await;
    };
    // A stored trace cannot be read now: 503 (retry), never 404 (unknown).
    let (status, body_text) = body(&http, format!("http://{api}/traces/{:032x}/scores", 1)).await;
    assert_eq!(status, 503, "{body_text}");
    let (status, _) = body(&http, format!("http://{api}/traces?limit=5")).await;
    assert_eq!(status, 503);

    send_until_refused(&http, &otlp, api, &mut accepted).await;

    pg.start_again();
    all_evaluated(&http, api, &accepted).await;
    assert!(
        prune_failed,
        "no failed retention chunk counted while the database was down"
    );
    let count = pg.number("outage", "SELECT count(*) FROM toolscore_traces");
    assert_eq!(
        count as usize,
        accepted.len(),
        "each acknowledged trace stored once"
    );
    println!(
        "{} accepted, {} during the outage, all stored",
        accepted.len(),
        accepted.len() - 20
    );
    running.stop().await.unwrap();
}

/// A retention pass counts the table once, at its first chunk: rows added
/// during the pass are left to the next one, which counts again; and when
/// another replica's chunks delete rows between this pass's, this pass
/// does not delete on as if they were still there.
#[test]
fn a_retention_pass_counts_the_table_once() {
    use toolscore::store::Database;
    let Some(pg) = Pg::start() else { return };
    let url = pg.database("passcount");
    let db = Postgres::open(&store_config(url.clone()).postgres).unwrap();
    let t0 = std::time::SystemTime::now();
    common::records::write_in_order(&db, t0, 200, &[("a", Some(1.0))]);
    // 150 past the bound of 50: a full chunk, so the pass goes on.
    assert_eq!(db.prune(t0, 50, 100).unwrap(), 100);
    // Ten more stored meanwhile (traces 201 to 210).
    for k in 201..=210u8 {
        let r = toolscore::store::Prepared::new(Arc::new(record(k, 1, &[])));
        let at = t0 + Duration::from_secs(u64::from(k));
        db.write(&[r], at, &common::records::KEEP_ALL).unwrap();
    }
    // The rest of what the pass's count found past the bound; the pass ends.
    assert_eq!(db.prune(t0, 50, 100).unwrap(), 50);
    assert_eq!(db.count().unwrap(), 60);
    // The next pass counts again.
    assert_eq!(db.prune(t0, 50, 100).unwrap(), 10);
    assert_eq!(db.count().unwrap(), 50);

    // Two replicas' passes, chunk after chunk.
    let other = Postgres::open(&store_config(url).postgres).unwrap();
    let t1 = t0 + Duration::from_secs(1000);
    common::records::write_in_order(&db, t1, 100, &[("a", Some(1.0))]);
    // 150 rows, 100 past a bound of 50.
    assert_eq!(db.prune(t0, 50, 60).unwrap(), 60);
    assert_eq!(other.prune(t0, 50, 60).unwrap(), 40);
    // What this pass found past the bound is gone: nothing more.
    assert_eq!(db.prune(t0, 50, 60).unwrap(), 0);
    assert_eq!(db.count().unwrap(), 50);
}

/// Scores left behind by a trace row deleted with its triggers disabled
/// (no toolscore does that) do not hold the writer: storing a trace of that
/// ID again replaces them, and the rest of the batch is stored with it.
#[test]
fn scores_left_behind_by_a_deleted_trace_are_replaced() {
    use toolscore::store::Database;
    let Some(pg) = Pg::start() else { return };
    let url = pg.database("orphans");
    let db = Postgres::open(&store_config(url).postgres).unwrap();
    let t0 = std::time::SystemTime::now();
    let three = [("a", Some(1.0)), ("b", Some(0.5)), ("c", None)];
    common::records::write_in_order(&db, t0, 2, &three);
    pg.sql(
        "orphans",
        "ALTER TABLE toolscore_traces DISABLE TRIGGER toolscore_traces_deleted;
         DELETE FROM toolscore_traces WHERE trace_id = '\\x01010101010101010101010101010101';
         ALTER TABLE toolscore_traces ENABLE TRIGGER toolscore_traces_deleted",
    );
    let scores = "SELECT count(*) FROM toolscore_scores";
    assert_eq!(pg.number("orphans", scores), 6);
    let batch = [
        Prepared::new(Arc::new(record(1, 1, &[("a", Some(0.0))]))),
        Prepared::new(Arc::new(record(3, 1, &three))),
    ];
    let later = t0 + Duration::from_secs(10);
    let written = db.write(&batch, later, &common::records::KEEP_ALL).unwrap();
    assert_eq!(written.stored, [true, true]);
    let again = db.get(&TraceId([1; 16])).unwrap().unwrap();
    assert_eq!(again.scores.len(), 1);
    assert_eq!(again.scores[0].outcome.score, Some(0.0));
    assert_eq!(db.get(&TraceId([3; 16])).unwrap().unwrap().scores.len(), 3);
    assert_eq!(pg.number("orphans", scores), 1 + 3 + 3);
}

/// A database of schema version 1 (scores tied to their trace by a
/// cascading foreign key, here under a name of its own) is migrated: its
/// results are kept, the key gives way to triggers, and deleting a trace,
/// as retention does, or emptying the table still takes the scores.
#[test]
fn schema_1_is_migrated_keeping_its_results() {
    use toolscore::store::Database;
    let Some(pg) = Pg::start() else { return };
    let url = pg.database("upgrade");
    let t0 = std::time::SystemTime::now();
    let db = Postgres::open(&store_config(url.clone()).postgres).unwrap();
    let scores = [("a", Some(1.0)), ("b", Some(0.5))];
    common::records::write_in_order(&db, t0, 3, &scores);
    let stored: Vec<_> = (1..=3)
        .map(|k| db.get(&TraceId([k; 16])).unwrap().unwrap())
        .collect();
    drop(db);
    // Back to version 1's form (the tables are the same but for versions
    // 3's and 4's columns and tables).
    pg.sql(
        "upgrade",
        "ALTER TABLE toolscore_scores DROP COLUMN explainer;
         ALTER TABLE toolscore_scores ALTER COLUMN details SET NOT NULL;
         DROP TABLE toolscore_explainers;
         ALTER TABLE toolscore_scores DROP COLUMN pending_owner;
         DROP TABLE toolscore_replicas;
         DROP TRIGGER toolscore_traces_deleted ON toolscore_traces;
         DROP TRIGGER toolscore_traces_truncated ON toolscore_traces;
         DROP FUNCTION toolscore_delete_scores();
         DROP FUNCTION toolscore_truncate_scores();
         ALTER TABLE toolscore_scores ADD CONSTRAINT renamed_by_hand FOREIGN KEY (trace_id)
             REFERENCES toolscore_traces (trace_id) ON DELETE CASCADE;
         UPDATE toolscore_schema SET version = 1",
    );
    let foreign_keys = "SELECT count(*) FROM pg_constraint
                        WHERE conrelid = 'toolscore_scores'::regclass AND contype = 'f'";
    assert_eq!(pg.number("upgrade", foreign_keys), 1);
    let db = Postgres::open(&store_config(url).postgres).unwrap();
    assert_eq!(pg.number("upgrade", foreign_keys), 0);
    assert!(pg.number("upgrade", "SELECT max(version) FROM toolscore_schema") >= 4);
    for (k, before) in (1..=3).zip(&stored) {
        assert_eq!(db.get(&TraceId([k; 16])).unwrap().as_ref(), Some(before));
    }
    let later = t0 + Duration::from_secs(3);
    assert_eq!(db.prune(later, usize::MAX, 100).unwrap(), 2);
    assert_eq!(
        pg.number("upgrade", "SELECT count(*) FROM toolscore_scores"),
        2
    );
    // Emptying the traces, by hand, empties their scores: none is left to
    // collide with a trace stored again.
    pg.sql("upgrade", "TRUNCATE toolscore_traces");
    assert_eq!(
        pg.number("upgrade", "SELECT count(*) FROM toolscore_scores"),
        0
    );
    common::records::write_in_order(&db, t0, 3, &scores);
    assert_eq!(db.count().unwrap(), 3);
    // Both at once, as version 1 needed.
    pg.sql("upgrade", "TRUNCATE toolscore_traces, toolscore_scores");
    assert_eq!(
        pg.number("upgrade", "SELECT count(*) FROM toolscore_scores"),
        0
    );
}

/// Tables in a schema of their own (the URL's search path): a trace deleted
/// from a session with another search path, by hand, still takes its
/// scores, and only its own (not those of a same-named table on that path).
#[test]
fn a_schema_of_its_own_keeps_its_triggers_on_its_tables() {
    use toolscore::store::Database;
    let Some(pg) = Pg::start() else { return };
    let url = pg.database("schemas");
    pg.sql(
        "schemas",
        "CREATE SCHEMA team;
         CREATE TABLE public.toolscore_scores (trace_id bytea);
         INSERT INTO public.toolscore_scores VALUES ('\\x01010101010101010101010101010101')",
    );
    let db = Postgres::open(&store_config(format!("{url}?options=-csearch_path%3Dteam")).postgres)
        .unwrap();
    let t0 = std::time::SystemTime::now();
    common::records::write_in_order(&db, t0, 2, &[("a", Some(1.0))]);
    assert_eq!(
        pg.number("schemas", "SELECT count(*) FROM team.toolscore_scores"),
        2
    );
    pg.sql(
        "schemas",
        "DELETE FROM team.toolscore_traces WHERE trace_id = '\\x01010101010101010101010101010101'",
    );
    assert_eq!(
        pg.number("schemas", "SELECT count(*) FROM team.toolscore_scores"),
        1
    );
    assert_eq!(db.count().unwrap(), 1);
    assert_eq!(
        pg.number("schemas", "SELECT count(*) FROM public.toolscore_scores"),
        1
    );
}

/// The database stops answering at run time, behind a proxy that keeps
/// accepting connections (a half-open load balancer): the writer's
/// reconnects give up at `connect_timeout_ms` each, `/readyz` goes 503
/// saying why, and once the database answers again the trace acknowledged
/// meanwhile is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_stops_answering_makes_the_service_unready_saying_why() {
    let Some(pg) = Pg::start() else { return };
    let url = pg.database("silent");
    let proxy =
        common::silent::SilentProxy::start(Some(format!("127.0.0.1:{}", pg.port).parse().unwrap()))
            .await;
    let mut config = test_config();
    config.store = store_config(url.replace(
        &format!(":{}/", pg.port),
        &format!(":{}/", proxy.addr.port()),
    ));
    config.store.postgres.connect_timeout_ms = NonZero::new(500).unwrap();
    let running = common::service::start(small_queues(config)).await;
    let otlp = format!(
        "http://{}/v1/traces",
        running.addr(Listener::OtlpHttp).unwrap()
    );
    let api = running.addr(Listener::ApiHttp).unwrap();
    let http = common::http_builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let post = |n: u32| post_one_span_trace(&http, &otlp, n);
    assert_eq!(post(1).await.status(), 200);
    all_evaluated(&http, api, &[1]).await;

    proxy.go_silent();
    assert_eq!(post(2).await.status(), 200);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, text) = body(&http, format!("http://{api}/readyz")).await;
        if status == 503 && text.contains("did not answer") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still {status} {text} with a database that does not answer"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    proxy.answer_again();
    all_evaluated(&http, api, &[1, 2]).await;
    ready(&http, api).await;
    running.stop().await.unwrap();
}

/// A replica killed (`kill -9`) before its model answered leaves its
/// judge `pending`; another replica on the same database leaves it alone
/// while the killed one's claim is renewed, and settles it as `skipped`,
/// saying why, once that claim has run out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_judgement_left_pending_by_a_killed_replica_is_settled_by_another() {
    let Some(pg) = Pg::start() else { return };
    let stub = common::llm_stub::Stub::start().await;
    stub.load(&serde_json::json!({"responses": [common::llm_stub::answer(90)], "discovery": []}));
    stub.set_delay(Duration::from_secs(600));
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config();
    config.store = store_config(pg.database("claims"));
    config.store.postgres.judgement_lease_secs = NonZero::new(5).unwrap();
    config.llm = stub.config(dir.path());
    let judge = serde_json::json!({"model": "gpt-4.1", "defaultEvaluationCriteria": {"expectedOutput": "sunny"}});
    config.evaluators.inline = vec![
        toolscore::config::InlineEvaluator {
            id: "judge".into(),
            kind: "uipath-llm-judge-output-semantic-similarity".into(),
            config: judge.as_object().cloned().unwrap(),
            apply_to_all_traces: true,
        },
        common::service::count_evaluator(serde_json::json!({"get_weather": ["=", 1]})),
    ];
    let (dir_a, dir_b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&dir_a).unwrap();
    std::fs::create_dir_all(&dir_b).unwrap();
    let mut a = serve(&config, &dir_a);
    let b = serve(&config, &dir_b);
    let http = common::http();
    ready(&http, a.api).await;
    ready(&http, b.api).await;
    let exporter = common::process::grpc_exporter(a.otlp_grpc);
    common::service::export(&exporter, &common::service::weather_trace(7)).await;
    let id = TraceId([7; 16]).to_hex();
    let scores = |api: std::net::SocketAddr| {
        let http = http.clone();
        let url = format!("http://{api}/traces/{id}/scores?wait_ms=10000");
        async move {
            let (status, text) = body(&http, url).await;
            assert_eq!(status, 200, "{text}");
            serde_json::from_str::<Json>(&text).unwrap()
        }
    };
    let first = scores(a.api).await;
    assert_eq!(first["scores"][0]["status"], "pending", "{first}");
    stub.wait_for_requests(1, Duration::from_secs(20)).await;
    // Two leases on, the live replica's claim holds.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let held = scores(b.api).await;
    assert_eq!(held["scores"][0]["status"], "pending", "{held}");

    a.kill();
    let deadline = Instant::now() + Duration::from_secs(30);
    let settled = loop {
        let now = scores(b.api).await;
        if now["scores"][0]["status"] != "pending" {
            break now;
        }
        assert!(Instant::now() < deadline, "still pending: {now}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(settled["scores"][0]["status"], "skipped", "{settled}");
    let why = settled["scores"][0]["error"].as_str().unwrap();
    assert!(
        why.starts_with("judge was not judged: the replica judging it stopped"),
        "{why}"
    );
    assert_eq!(
        settled["scores"][1], first["scores"][1],
        "the deterministic score is kept"
    );
    assert_eq!(settled["revision"], 1);
    let (_, metrics) = body(&http, format!("http://{}/metrics", b.api)).await;
    assert!(
        metrics.contains("toolscore_store_abandoned_judgements_total 1"),
        "{metrics}"
    );
}

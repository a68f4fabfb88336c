//! The PostgreSQL database behind [`DbStore`](super::DbStore), shared by
//! several replicas: each one writes the traces it evaluated and reads any
//! trace, and a commit is announced to every replica with `NOTIFY` so their
//! long polls and watchers wake (see [`Database::listen`]).
//!
//! A batch is one transaction of four statements whatever its size (rows
//! go in as arrays through `unnest`): the round trips, not the rows, are
//! what a batch costs. Free text (span and evaluator names, errors) is kept
//! as `bytea`, because a PostgreSQL `text` cannot hold the NUL character a
//! span may carry.

use std::str::FromStr;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use postgres::{Client, NoTls, Row};

mod claims;
mod listen;
mod pool;

use pool::Pool;

use super::db::{Database, DbError, Retention, Written};
use super::lock;
use super::rows::{
    self, Explainers, SCORE_COLUMNS, ScoreRowOwned, TRACE_COLUMNS, TraceRowOwned, unix_nanos,
};
use super::{ListFilter, Prepared, StoredResult};
use crate::criteria::Source;
use crate::span::TraceId;
use crate::store::PostgresConfig;

/// The schema, one migration per version (table `toolscore_schema`). A
/// migration is never edited once released: a change is a new one.
const MIGRATIONS: &[&str] = &[
    // 1: traces and their scores.
    "CREATE TABLE toolscore_traces (
        trace_id bytea PRIMARY KEY,
        revision bigint NOT NULL,
        status text NOT NULL,
        complete boolean NOT NULL,
        evaluated_at bigint,
        stored_at bigint NOT NULL,
        root_span_id bytea,
        root_name bytea,
        root_service bytea,
        root_start bigint,
        root_end bigint,
        binding text,
        tool_calls text NOT NULL,
        content_captured boolean NOT NULL,
        span_count bigint NOT NULL
    );
    CREATE INDEX toolscore_traces_by_stored_at ON toolscore_traces (stored_at);
    CREATE INDEX toolscore_traces_by_status ON toolscore_traces (status, stored_at);
    CREATE TABLE toolscore_scores (
        trace_id bytea NOT NULL REFERENCES toolscore_traces (trace_id) ON DELETE CASCADE,
        idx bigint NOT NULL,
        evaluator_id bytea NOT NULL,
        evaluator_type text NOT NULL,
        status text NOT NULL,
        score double precision,
        score_bits bigint,
        score_is_int boolean NOT NULL,
        passed boolean,
        threshold_bits bigint,
        details text NOT NULL,
        error bytea,
        PRIMARY KEY (trace_id, idx)
    );
    CREATE INDEX toolscore_scores_by_evaluator ON toolscore_scores (evaluator_id, score);",
    // 2: a trace's deletion takes its scores by one statement-level trigger
    // instead of the foreign key, whose check on every score row inserted
    // was a third of the writer's server process. Every version deletes
    // scores through traces, so the rows stay consistent during a rolling
    // upgrade; scores are only ever inserted beside their trace's row. The
    // tables are locked first, in the order reads take them, so a read
    // cannot deadlock with the migration; the functions' search path is
    // the tables' schema, so they name these tables from any session. A
    // `TRUNCATE` of both tables leaves the scores to that statement.
    "LOCK TABLE toolscore_traces, toolscore_scores IN ACCESS EXCLUSIVE MODE;
    CREATE OR REPLACE FUNCTION toolscore_delete_scores() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM toolscore_scores s USING gone WHERE s.trace_id = gone.trace_id;
        RETURN NULL;
    END $$;
    CREATE OR REPLACE FUNCTION toolscore_truncate_scores() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        IF EXISTS (SELECT FROM toolscore_scores) THEN
            TRUNCATE toolscore_scores;
        END IF;
        RETURN NULL;
    END $$;
    DO $$
    DECLARE tables text := (SELECT relnamespace::regnamespace::text FROM pg_class
                            WHERE oid = 'toolscore_traces'::regclass);
    BEGIN
        EXECUTE format('ALTER FUNCTION toolscore_delete_scores() SET search_path = %s', tables);
        EXECUTE format('ALTER FUNCTION toolscore_truncate_scores() SET search_path = %s', tables);
    END $$;
    CREATE TRIGGER toolscore_traces_deleted AFTER DELETE ON toolscore_traces
        REFERENCING OLD TABLE AS gone
        FOR EACH STATEMENT EXECUTE FUNCTION toolscore_delete_scores();
    CREATE TRIGGER toolscore_traces_truncated AFTER TRUNCATE ON toolscore_traces
        FOR EACH STATEMENT EXECUTE FUNCTION toolscore_truncate_scores();
    DO $$
    DECLARE key text;
    BEGIN
        FOR key IN SELECT conname FROM pg_constraint
                   WHERE conrelid = 'toolscore_scores'::regclass AND contype = 'f' LOOP
            EXECUTE format('ALTER TABLE toolscore_scores DROP CONSTRAINT %I', key);
        END LOOP;
    END $$;",
    // 3: a pending LLM judgement names the replica running it, and each
    // replica renews its claim in `toolscore_replicas`: any replica settles
    // the judgements of one that stopped renewing (killed mid-judgement).
    "ALTER TABLE toolscore_scores ADD COLUMN pending_owner text;
    CREATE INDEX toolscore_scores_pending ON toolscore_scores (pending_owner)
        WHERE status = 'pending';
    CREATE TABLE toolscore_replicas (
        owner text PRIMARY KEY,
        alive_until bigint NOT NULL
    );",
    // 4: a deterministic evaluator's details are rendered when read, from
    // the trace's tool calls and the evaluator's config and criteria, kept
    // once each in `toolscore_explainers` (rows.rs): `details` may be NULL,
    // and `explainer` names what renders it. A replica of an older version
    // reads such a score as a damaged row: upgrade every replica together.
    "CREATE TABLE toolscore_explainers (
        hash bytea PRIMARY KEY,
        evaluator_type text NOT NULL,
        config text NOT NULL,
        criteria text
    );
    ALTER TABLE toolscore_scores ALTER COLUMN details DROP NOT NULL,
        ADD COLUMN explainer bytea;",
];

/// The channel commits are announced on; the payload is
/// `<trace id hex>:<revision>`.
pub(super) const CHANNEL: &str = "toolscore_results";

/// Advisory lock keys ("toolscore" in ASCII, then one per purpose): the
/// replicas starting together migrate one at a time, and one prunes at a time.
const MIGRATE_LOCK: i64 = 0x746f_6f6c_7363_0001;
const PRUNE_LOCK: i64 = 0x746f_6f6c_7363_0002;

/// How this backend's connections are made: with TLS when the URL asks for
/// it (`sslmode=require`), the server checked per `store.postgres.tls`; the
/// whole start-up exchange (TCP, TLS, authentication) within
/// `connect_timeout_ms`.
#[derive(Clone)]
pub(super) struct Connector {
    config: postgres::Config,
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    timeout: Duration,
    /// Attempts given up on whose threads still wait for the server.
    stuck: Arc<AtomicUsize>,
}

/// Attempts given up on that may still wait for a silent server at once:
/// past it, a connect fails at once rather than start another thread.
const MAX_STUCK: usize = 4;

/// Why [`Connector::bounded`] has no answer.
enum Bounded<E> {
    Failed(E),
    /// No answer in time.
    TimedOut,
    /// Too many earlier attempts still wait, or no thread could start.
    Unable(String),
}

impl Connector {
    /// A connection, once the server has answered its whole start-up
    /// exchange within the timeout. The client's own `connect_timeout`
    /// bounds only the TCP handshake: a server (or a half-open load
    /// balancer, or a firewall dropping packets after the handshake) that
    /// accepts the connection and never answers would hold the caller
    /// forever. So the exchange runs on a thread of its own, and the caller
    /// stops waiting at the deadline; that thread ends when the socket
    /// does (`tcp_user_timeout`, keepalives), and at most [`MAX_STUCK`]
    /// wait at once.
    pub(super) fn connect(&self) -> Result<Client, String> {
        let (config, tls) = (self.config.clone(), self.tls.clone());
        self.bounded(Some(self.timeout), move || {
            let got = match tls {
                Some(tls) => config.connect(tls),
                None => config.connect(NoTls),
            };
            got.map_err(|e| describe(&e))
        })
        .map_err(|e| match e {
            Bounded::Failed(e) | Bounded::Unable(e) => e,
            Bounded::TimedOut => format!(
                "no answer to the connection's start-up within {} ms \
                 (store.postgres.connect_timeout_ms): the server accepted the \
                 connection but did not answer",
                self.timeout.as_millis()
            ),
        })
    }

    /// Runs `f` on a thread of its own and waits for it `timeout` at most
    /// (`None`: as long as it takes).
    fn bounded<T: Send + 'static, E: Send + 'static>(
        &self,
        timeout: Option<Duration>,
        f: impl FnOnce() -> Result<T, E> + Send + 'static,
    ) -> Result<T, Bounded<E>> {
        if self.stuck.load(Ordering::Relaxed) >= MAX_STUCK {
            return Err(Bounded::Unable(format!(
                "{MAX_STUCK} earlier connection attempts are still without an answer from the server"
            )));
        }
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let spawned = std::thread::Builder::new()
            .name("toolscore-pg-connect".into())
            .spawn(move || {
                // The caller may have stopped waiting: what `f` made is dropped.
                let _ = tx.send(f());
            });
        if let Err(e) = spawned {
            return Err(Bounded::Unable(format!(
                "cannot start a connection thread: {e}"
            )));
        }
        let got = match timeout {
            Some(t) => rx.recv_timeout(t).map_err(|_| ()),
            None => rx.recv().map_err(|_| ()),
        };
        match got {
            Ok(got) => got.map_err(Bounded::Failed),
            Err(()) => {
                // The thread counts as stuck until it gives its answer up.
                self.stuck.fetch_add(1, Ordering::Relaxed);
                let stuck = self.stuck.clone();
                let _ = std::thread::Builder::new()
                    .name("toolscore-pg-connect-wait".into())
                    .spawn(move || {
                        let _ = rx.recv();
                        stuck.fetch_sub(1, Ordering::Relaxed);
                    });
                Err(Bounded::TimedOut)
            }
        }
    }
}

pub struct Postgres {
    config: Connector,
    /// Shown in errors and logs: the URL without its password.
    what: String,
    /// The writer's connection (one writer thread; reconnected after a
    /// failure) and the last `stored_at` it wrote (see [`Database::write`]).
    writer: Mutex<(Option<Client>, i64)>,
    /// The writer connection's server process: the listener ignores the
    /// commits it announces (this process has them already).
    writer_pid: Arc<AtomicI32>,
    readers: Pool,
    /// The stored sources read so far, loaded (`rows.rs`).
    explainers: Explainers,
    /// Within a retention pass, where its first chunk found `max_traces`
    /// exceeded: the `stored_at` of the newest row past it then (`None`:
    /// nothing was). Counting is a scan of the table, so it is done once a
    /// pass, not once a chunk; and a cut, unlike a count, stays true when
    /// another replica's chunks delete rows between this pass's. `None`
    /// between passes.
    pass_cut: Mutex<Option<Option<i64>>>,
    /// This replica's claim on the judgements it runs.
    claims: claims::Claims,
}

/// Readies the writer's connection; the server process serving it.
///
/// The rows' text (tool calls, details) is compressed with lz4 where the
/// server has it (PostgreSQL 14 and later, built with lz4), which costs the
/// server much less than `pglz` (perf/README.md); elsewhere the server's
/// default stays.
fn writer_session(client: &mut Client) -> Result<i32, DbError> {
    if let Err(e) = client.batch_execute("SET default_toast_compression = lz4") {
        tracing::info!(error = %describe(&e), "the results database compresses stored text with its default method (lz4 needs PostgreSQL 14 or later, built with it)");
    }
    Ok(client
        .query_one("SELECT pg_backend_pid()", &[])
        .map_err(err)?
        .get(0))
}

pub(super) fn err(e: postgres::Error) -> DbError {
    DbError::Query(describe(&e))
}

/// The server's message when there is one ("db error" alone says
/// nothing), else the error with its causes ("error connecting to server:
/// Connection refused").
pub(super) fn describe(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{}: {}", db.code().code(), db.message());
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text = format!("{text}: {s_text}");
        }
        source = s.source();
    }
    text
}

impl Postgres {
    /// Connects, and brings the schema up to date; refuses a database
    /// written by a newer version.
    pub fn open(config: &PostgresConfig) -> Result<Postgres, DbError> {
        let (pg, what) = client_config(config)?;
        let open = |message| DbError::Open {
            what: what.clone(),
            message,
        };
        let client = pg.connect().map_err(open)?;
        // Then the schema, as the server bounds each statement
        // (`statement_timeout_ms`, 0: no bound) and here the whole.
        let limit = Duration::from_millis(config.statement_timeout_ms);
        let claims = claims::Claims::new(Duration::from_secs(config.judgement_lease_secs.get()));
        let (client, pid, last, claims) = pg
            .bounded((!limit.is_zero()).then_some(limit), {
                let what = what.clone();
                move || {
                    let mut client = client;
                    migrate(&mut client, &what)?;
                    claims.claim(&mut client, SystemTime::now()).map_err(err)?;
                    let pid = writer_session(&mut client)?;
                    let last: i64 = client
                        .query_one(
                            "SELECT coalesce(max(stored_at), 0)::bigint FROM toolscore_traces",
                            &[],
                        )
                        .map_err(err)?
                        .get(0);
                    Ok((client, pid, last, claims))
                }
            })
            .map_err(|e| match e {
                Bounded::Failed(e) => e,
                Bounded::Unable(message) => open(message),
                Bounded::TimedOut => open(format!(
                    "the schema's migration had no answer within {} ms \
                     (store.postgres.statement_timeout_ms)",
                    limit.as_millis()
                )),
            })?;
        let writer_pid = Arc::new(AtomicI32::new(pid));
        Ok(Postgres {
            readers: Pool::new(
                pg.clone(),
                config.pool_size.get(),
                Duration::from_millis(config.connect_timeout_ms.get()),
            ),
            config: pg,
            what,
            writer: Mutex::new((Some(client), last)),
            writer_pid,
            pass_cut: Mutex::new(None),
            claims,
            explainers: Explainers::default(),
        })
    }
}

impl Drop for Postgres {
    /// Closing a connection blocks on the client's runtime, which panics on
    /// an async thread (where the last handle to the store may be dropped):
    /// the connections are closed on a thread of their own.
    fn drop(&mut self) {
        let mut clients: Vec<Client> = std::mem::take(&mut lock(&self.readers.state).idle);
        clients.extend(lock(&self.writer).0.take());
        if clients.is_empty() {
            return;
        }
        let _ = std::thread::spawn(move || drop(clients)).join();
    }
}

/// The client configuration from `store.postgres`: the URL, its password
/// from `password_file` or `PGPASSWORD` when it has none, the timeouts,
/// and TLS when the URL's `sslmode` is `require`. (`prefer`, the default,
/// connects in plain text: a server's certificate that cannot be checked
/// would otherwise fail a connection that libpq would make.)
fn client_config(config: &PostgresConfig) -> Result<(Connector, String), DbError> {
    // libpq's `verify-ca` and `verify-full` are `require` here, which
    // checks the certificate and the host name (the client knows no other).
    let url = config
        .url
        .replace("sslmode=verify-full", "sslmode=require")
        .replace("sslmode=verify-ca", "sslmode=require");
    let mut pg = postgres::Config::from_str(&url).map_err(|e| DbError::Open {
        what: "store.postgres.url".into(),
        message: e.to_string(),
    })?;
    let what = redact(&config.url);
    if let Some(file) = &config.password_file {
        let text = std::fs::read_to_string(file).map_err(|e| DbError::Open {
            what: what.clone(),
            message: format!(
                "cannot read store.postgres.password_file {}: {e}",
                file.display()
            ),
        })?;
        pg.password(text.trim_end_matches(['\r', '\n']));
    } else if pg.get_password().is_none()
        && let Ok(p) = std::env::var("PGPASSWORD")
    {
        pg.password(p);
    }
    let timeout = Duration::from_millis(config.connect_timeout_ms.get());
    // Data the server leaves unacknowledged that long fails the connection
    // (a firewall that drops packets), at start-up or later.
    pg.connect_timeout(timeout)
        .tcp_user_timeout(timeout)
        .application_name("toolscore")
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(30));
    // The statement timeout as a session setting, after the URL's own options.
    let options = format!(
        "{} -c statement_timeout={}",
        pg.get_options().unwrap_or(""),
        config.statement_timeout_ms
    );
    pg.options(options.trim_start());
    let tls =
        match pg.get_ssl_mode() {
            postgres::config::SslMode::Require => {
                let tls = crate::tls::keyed::build("store.postgres.tls", &config.tls, &[])
                    .map_err(|e| DbError::Open {
                        what: e.key,
                        message: e.message,
                    })?;
                Some(tokio_postgres_rustls::MakeRustlsConnect::new(
                    (*tls).clone(),
                ))
            }
            _ => None,
        };
    Ok((
        Connector {
            config: pg,
            tls,
            timeout,
            stuck: Arc::new(AtomicUsize::new(0)),
        },
        what,
    ))
}

/// The URL without its password, for messages.
fn redact(url: &str) -> String {
    match http::Uri::from_str(url) {
        Ok(uri) => {
            let authority = uri.authority().map_or("", |a| a.as_str());
            let shown = match authority.rsplit_once('@') {
                Some((userinfo, host)) => {
                    format!("{}@{host}", userinfo.split(':').next().unwrap_or(""))
                }
                None => authority.to_owned(),
            };
            let scheme = uri.scheme_str().unwrap_or("postgres");
            format!("{scheme}://{shown}{}", uri.path())
        }
        // A key=value connection string: shown without its password.
        Err(_) => url
            .split_whitespace()
            .filter(|kv| !kv.starts_with("password"))
            .collect::<Vec<_>>()
            .join(" "),
    }
}

fn migrate(client: &mut Client, what: &str) -> Result<(), DbError> {
    let open = |e: postgres::Error| DbError::Open {
        what: what.to_owned(),
        message: describe(&e),
    };
    let mut tx = client.transaction().map_err(open)?;
    // Held to the commit: another replica starting now waits here.
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATE_LOCK])
        .map_err(open)?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS toolscore_schema (version bigint NOT NULL)")
        .map_err(open)?;
    let version: i64 = tx
        .query_one(
            "SELECT coalesce(max(version), 0)::bigint FROM toolscore_schema",
            &[],
        )
        .map_err(open)?
        .get(0);
    let known = MIGRATIONS.len() as i64;
    if version > known {
        return Err(DbError::NewerSchema {
            what: what.to_owned(),
            found: version,
            known,
        });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        tx.batch_execute(sql).map_err(open)?;
        tracing::info!(database = %what, version = i + 1, "schema migrated");
    }
    tx.execute("DELETE FROM toolscore_schema", &[])
        .map_err(open)?;
    tx.execute(
        "INSERT INTO toolscore_schema VALUES ($1)",
        &[&version.max(known)],
    )
    .map_err(open)?;
    tx.commit().map_err(open)
}

fn bad_row(e: impl std::fmt::Display) -> DbError {
    DbError::Row(e.to_string())
}

fn text_of(bytes: Option<Vec<u8>>) -> Result<Option<String>, DbError> {
    bytes
        .map(|b| String::from_utf8(b).map_err(bad_row))
        .transpose()
}

fn trace_row_of(r: &Row) -> Result<TraceRowOwned, DbError> {
    let trace_id: Vec<u8> = r.try_get(0).map_err(bad_row)?;
    let root_span_id: Option<Vec<u8>> = r.try_get(6).map_err(bad_row)?;
    Ok(TraceRowOwned {
        trace_id: trace_id
            .try_into()
            .map_err(|_| bad_row("a trace ID that is not 16 bytes"))?,
        revision: r.try_get(1).map_err(bad_row)?,
        status: r.try_get(2).map_err(bad_row)?,
        complete: r.try_get(3).map_err(bad_row)?,
        evaluated_at: r.try_get(4).map_err(bad_row)?,
        root_span_id: root_span_id.and_then(|v| v.try_into().ok()),
        root_name: text_of(r.try_get(7).map_err(bad_row)?)?,
        root_service: text_of(r.try_get(8).map_err(bad_row)?)?,
        root_start: r.try_get(9).map_err(bad_row)?,
        root_end: r.try_get(10).map_err(bad_row)?,
        binding: r.try_get(11).map_err(bad_row)?,
        tool_calls: r.try_get(12).map_err(bad_row)?,
        content_captured: r.try_get(13).map_err(bad_row)?,
        span_count: r.try_get(14).map_err(bad_row)?,
    })
}

/// The sources the stored records' scores name, each once (one stored
/// before is left as it is: its hash is its content).
fn write_sources(
    tx: &mut postgres::Transaction<'_>,
    stored: &[&Prepared],
) -> Result<(), postgres::Error> {
    let mut sources: Vec<&Source> = Vec::new();
    for source in stored.iter().flat_map(|p| &p.sources) {
        if !sources.iter().any(|s| s.hash == source.hash) {
            sources.push(source);
        }
    }
    if sources.is_empty() {
        return Ok(());
    }
    tx.execute(
        "INSERT INTO toolscore_explainers (hash, evaluator_type, config, criteria)
         SELECT * FROM unnest($1::bytea[], $2::text[], $3::text[], $4::text[])
         ON CONFLICT (hash) DO NOTHING",
        &[
            &col(&sources, |s| &s.hash[..]),
            &col(&sources, |s| s.evaluator_type.id()),
            &col(&sources, |s| s.config.as_str()),
            &col(&sources, |s| s.criteria.as_deref()),
        ],
    )?;
    Ok(())
}

/// A score row: the trace ID, then [`SCORE_COLUMNS`] but `idx` and `score`.
fn score_row_of(r: &Row) -> Result<ScoreRowOwned, DbError> {
    Ok(ScoreRowOwned {
        evaluator_id: text_of(r.try_get(1).map_err(bad_row)?)?.unwrap_or_default(),
        evaluator_type: r.try_get(2).map_err(bad_row)?,
        status: r.try_get(3).map_err(bad_row)?,
        score_bits: r.try_get(4).map_err(bad_row)?,
        score_is_int: r.try_get(5).map_err(bad_row)?,
        passed: r.try_get(6).map_err(bad_row)?,
        threshold_bits: r.try_get(7).map_err(bad_row)?,
        details: r.try_get(8).map_err(bad_row)?,
        error: text_of(r.try_get(9).map_err(bad_row)?)?,
        explainer: r.try_get(10).map_err(bad_row)?,
    })
}

const SELECT_SCORES: &str = "SELECT trace_id, evaluator_id, evaluator_type, status, score_bits, \
     score_is_int, passed, threshold_bits, details, error, explainer FROM toolscore_scores \
     WHERE trace_id = ANY($1) ORDER BY trace_id, idx";

/// A read of trace rows and their scores in one snapshot (a repeatable-read,
/// read-only transaction): retention deleting a trace between the two
/// statements cannot leave a record without its scores.
fn in_snapshot<T>(
    client: &mut Client,
    read: impl FnOnce(&mut postgres::Transaction<'_>) -> Result<T, DbError>,
) -> Result<T, DbError> {
    let mut tx = client
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .map_err(err)?;
    let out = read(&mut tx)?;
    tx.commit().map_err(err)?;
    Ok(out)
}

/// The records of these trace rows, with their scores (one query for all).
fn records_of(
    client: &mut impl postgres::GenericClient,
    explainers: &Explainers,
    trace_rows: Vec<Row>,
) -> Result<Vec<StoredResult>, DbError> {
    let mut records = Vec::with_capacity(trace_rows.len());
    for r in &trace_rows {
        records.push(rows::record_of(trace_row_of(r)?)?);
    }
    if records.is_empty() {
        return Ok(records);
    }
    let ids: Vec<&[u8]> = records.iter().map(|r| &r.trace_id.0[..]).collect();
    let scores = client.query(SELECT_SCORES, &[&ids]).map_err(err)?;
    let by_id: std::collections::HashMap<[u8; 16], usize> = records
        .iter()
        .enumerate()
        .map(|(i, r)| (r.trace_id.0, i))
        .collect();
    for s in &scores {
        let id: Vec<u8> = s.try_get(0).map_err(bad_row)?;
        let Some(&i) = <[u8; 16]>::try_from(id).ok().and_then(|id| by_id.get(&id)) else {
            continue;
        };
        let mut explainer = |hash: &[u8]| {
            explainers.get(hash, || {
                let row = client
                    .query_opt(
                        "SELECT evaluator_type, config, criteria FROM toolscore_explainers
                         WHERE hash = $1",
                        &[&hash],
                    )
                    .map_err(err)?;
                row.map(|r| {
                    let kind: String = r.try_get(0).map_err(bad_row)?;
                    Source::stored(
                        hash,
                        &kind,
                        r.try_get(1).map_err(bad_row)?,
                        r.try_get(2).map_err(bad_row)?,
                    )
                    .map_err(|e| DbError::Row(e.to_string()))
                })
                .transpose()
            })
        };
        let score = rows::score_of(&records[i], score_row_of(s)?, &mut explainer)?;
        records[i].scores.push(score);
    }
    Ok(records)
}

/// A new trace's scores collided with scores already stored under its ID:
/// scores left behind by a trace row deleted without its triggers (every
/// version deletes them with their trace otherwise). Retried as it was,
/// the batch would fail forever and hold every result behind it.
fn left_behind(e: &postgres::Error) -> bool {
    e.as_db_error().is_some_and(|db| {
        *db.code() == postgres::error::SqlState::UNIQUE_VIOLATION
            && db.table() == Some("toolscore_scores")
    })
}

/// One column of `rows`, as the array `unnest` takes.
fn col<'a, R, T>(rows: &'a [R], f: impl Fn(&'a R) -> T) -> Vec<T> {
    rows.iter().map(f).collect()
}

/// Each trace's last record in the batch with its highest revision: one
/// statement cannot upsert a row twice, and the newer revision wins anyway.
fn newest_per_trace(batch: &[Prepared]) -> Vec<usize> {
    let mut at: std::collections::HashMap<TraceId, usize> =
        std::collections::HashMap::with_capacity(batch.len());
    for (i, p) in batch.iter().enumerate() {
        let r = &p.record;
        if at
            .get(&r.trace_id)
            .is_none_or(|&j| batch[j].record.revision <= r.revision)
        {
            at.insert(r.trace_id, i);
        }
    }
    let mut keep: Vec<usize> = at.into_values().collect();
    keep.sort_unstable();
    keep
}

impl Postgres {
    fn write_batch(
        client: &mut Client,
        batch: &[Prepared],
        (keep, owner): (&[usize], &str),
        first_stored_at: i64,
        repair: bool,
    ) -> Result<Vec<bool>, postgres::Error> {
        let trace_rows: Vec<rows::TraceRow> = keep
            .iter()
            .zip(first_stored_at..)
            .map(|(&i, at)| rows::trace_row(&batch[i], at))
            .collect();
        let t = &trace_rows;
        let trace_id = col(t, |r| &r.trace_id[..]);
        let root_span_id = col(t, |r| r.root_span_id.as_ref().map(|b| &b[..]));
        let root_name = col(t, |r| r.root_name.map(str::as_bytes));
        let root_service = col(t, |r| r.root_service.map(str::as_bytes));

        let mut tx = client.transaction()?;
        let changed = tx.query(
            &format!(
                "INSERT INTO toolscore_traces AS t ({TRACE_COLUMNS})
                 SELECT * FROM unnest($1::bytea[], $2::int8[], $3::text[], $4::bool[],
                   $5::int8[], $6::int8[], $7::bytea[], $8::bytea[], $9::bytea[], $10::int8[],
                   $11::int8[], $12::text[], $13::text[], $14::bool[], $15::int8[])
                 ON CONFLICT (trace_id) DO UPDATE SET
                   revision = excluded.revision, status = excluded.status,
                   complete = excluded.complete, evaluated_at = excluded.evaluated_at,
                   stored_at = excluded.stored_at, root_span_id = excluded.root_span_id,
                   root_name = excluded.root_name, root_service = excluded.root_service,
                   root_start = excluded.root_start, root_end = excluded.root_end,
                   binding = excluded.binding, tool_calls = excluded.tool_calls,
                   content_captured = excluded.content_captured,
                   span_count = excluded.span_count
                 WHERE excluded.revision >= t.revision
                 RETURNING trace_id, t.xmax::text = '0'"
            ),
            &[
                &trace_id,
                &col(t, |r| r.revision),
                &col(t, |r| r.status),
                &col(t, |r| r.complete),
                &col(t, |r| r.evaluated_at),
                &col(t, |r| r.stored_at),
                &root_span_id,
                &root_name,
                &root_service,
                &col(t, |r| r.root_start),
                &col(t, |r| r.root_end),
                &col(t, |r| r.binding),
                &col(t, |r| r.tool_calls),
                &col(t, |r| r.content_captured),
                &col(t, |r| r.span_count),
            ],
        )?;
        // Each stored trace, and whether its row is new (a tuple the
        // statement inserted has no `xmax`) or replaced a stored revision,
        // whose scores go first. Only replaced ones are named to the DELETE:
        // with all the batch's IDs it scanned the whole scores table (the
        // planner's choice for a long `= ANY` array), a commit's main cost.
        let changed: std::collections::HashMap<Vec<u8>, bool> = changed
            .iter()
            .filter_map(|r| Some((r.try_get(0).ok()?, r.try_get(1).ok()?)))
            .collect();
        let stored: Vec<&Prepared> = keep
            .iter()
            .map(|&i| &batch[i])
            .filter(|p| changed.contains_key(&p.record.trace_id.0[..]))
            .collect();
        let stored_ids = col(&stored, |p| &p.record.trace_id.0[..]);
        let replaced: Vec<&[u8]> = stored_ids
            .iter()
            .copied()
            .filter(|id| changed.get(*id) == Some(&false))
            .collect();
        // Repairing (once, after a collision): a new trace's ID may have
        // scores left behind too, so every stored ID is named, scan or not.
        let stale = if repair { &stored_ids } else { &replaced };
        if !stale.is_empty() {
            tx.execute(
                "DELETE FROM toolscore_scores WHERE trace_id IN (SELECT unnest($1::bytea[]))",
                &[stale],
            )?;
        }
        if !stored.is_empty() {
            write_sources(&mut tx, &stored)?;
            let scores: Vec<(&[u8], rows::ScoreRow)> = stored
                .iter()
                .flat_map(|&p| rows::score_rows(p).map(move |s| (&p.record.trace_id.0[..], s)))
                .collect();
            if !scores.is_empty() {
                let s = &scores;
                tx.execute(
                    &format!(
                        "INSERT INTO toolscore_scores (trace_id, {SCORE_COLUMNS}, pending_owner)
                         SELECT * FROM unnest($1::bytea[], $2::int8[], $3::bytea[], $4::text[],
                           $5::text[], $6::float8[], $7::int8[], $8::bool[], $9::bool[],
                           $10::int8[], $11::text[], $12::bytea[], $13::bytea[], $14::text[])"
                    ),
                    &[
                        &col(s, |(id, _)| *id),
                        &col(s, |(_, s)| s.idx),
                        &col(s, |(_, s)| s.evaluator_id.as_bytes()),
                        &col(s, |(_, s)| s.evaluator_type),
                        &col(s, |(_, s)| s.status),
                        &col(s, |(_, s)| s.score),
                        &col(s, |(_, s)| s.score_bits),
                        &col(s, |(_, s)| s.score_is_int),
                        &col(s, |(_, s)| s.passed),
                        &col(s, |(_, s)| s.threshold_bits),
                        &col(s, |(_, s)| s.details),
                        &col(s, |(_, s)| s.error.map(str::as_bytes)),
                        &col(s, |(_, s)| s.explainer),
                        &col(s, |(_, s)| (s.status == "pending").then_some(owner)),
                    ],
                )?;
            }
            // Delivered to every listening replica when the commit is.
            let payloads = col(&stored, |r| {
                format!("{}:{}", r.record.trace_id.to_hex(), r.record.revision)
            });
            tx.execute(
                "SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p",
                &[&CHANNEL, &payloads],
            )?;
        }
        tx.commit()?;
        Ok(batch
            .iter()
            .enumerate()
            .map(|(i, p)| {
                keep.binary_search(&i).is_ok() && changed.contains_key(&p.record.trace_id.0[..])
            })
            .collect())
    }
}

impl Database for Postgres {
    fn write(
        &self,
        batch: &[Prepared],
        now: SystemTime,
        _retention: &Retention,
    ) -> Result<Written, DbError> {
        let mut guard = lock(&self.writer);
        let (client, last) = &mut *guard;
        let c = match client {
            Some(c) if !c.is_closed() => c,
            _ => {
                let mut new = self.config.connect().map_err(DbError::Query)?;
                self.writer_pid
                    .store(writer_session(&mut new)?, Ordering::Relaxed);
                client.insert(new)
            }
        };
        let keep = newest_per_trace(batch);
        let first = unix_nanos(now).max(*last + 1);
        let mut repair = false;
        loop {
            match Postgres::write_batch(c, batch, (&keep, self.claims.owner()), first, repair) {
                Ok(stored) => {
                    *last = first + keep.len() as i64 - 1;
                    return Ok(Written { stored, pruned: 0 });
                }
                Err(e) if !repair && left_behind(&e) => {
                    tracing::warn!(
                        "scores were stored without their trace's row (deleted with triggers disabled?); those of this batch's traces are replaced"
                    );
                    repair = true;
                }
                Err(e) => {
                    // Reconnect on the next try: the connection may be the fault.
                    if c.is_closed() || e.as_db_error().is_none() {
                        *client = None;
                    }
                    return Err(err(e));
                }
            }
        }
    }

    fn get(&self, trace_id: &TraceId) -> Result<Option<StoredResult>, DbError> {
        self.readers.with(|c| {
            in_snapshot(c, |tx| {
                let rows = tx
                    .query(
                        &format!(
                            "SELECT {TRACE_COLUMNS} FROM toolscore_traces WHERE trace_id = $1"
                        ),
                        &[&&trace_id.0[..]],
                    )
                    .map_err(err)?;
                Ok(records_of(tx, &self.explainers, rows)?.pop())
            })
        })
    }

    fn list(&self, f: &ListFilter) -> Result<Vec<StoredResult>, DbError> {
        debug_assert!(!f.nan_bound(), "answered by DbStore");
        self.readers.with(|c| {
            in_snapshot(c, |tx| {
                let rows = tx
                    .query(
                        &format!(
                            "SELECT {TRACE_COLUMNS} FROM toolscore_traces t
                         WHERE ($1::text IS NULL OR t.status = $1)
                           AND ($2::int8 IS NULL OR t.stored_at >= $2)
                           AND ($9::int8 IS NULL OR t.stored_at < $9)
                           AND ($7::bytea IS NULL OR t.root_service = $7)
                           AND ($8::bytea IS NULL OR t.root_name = $8)
                           AND ($3::bytea IS NULL OR EXISTS (SELECT 1 FROM toolscore_scores s
                                WHERE s.trace_id = t.trace_id AND s.evaluator_id = $3))
                           AND (($4::float8 IS NULL AND $6::float8 IS NULL)
                                OR EXISTS (SELECT 1 FROM toolscore_scores s
                                WHERE s.trace_id = t.trace_id
                                  AND ($3::bytea IS NULL OR s.evaluator_id = $3)
                                  AND ($4::float8 IS NULL OR s.score <= $4)
                                  AND ($6::float8 IS NULL OR s.score >= $6)))
                         ORDER BY t.stored_at DESC, t.trace_id DESC
                         LIMIT $5"
                        ),
                        &[
                            &f.status.map(super::TraceStatus::as_str),
                            &f.since.map(unix_nanos),
                            &f.evaluator.as_deref().map(str::as_bytes),
                            &f.max_score,
                            &i64::try_from(f.limit).unwrap_or(i64::MAX),
                            &f.min_score,
                            &f.service.as_deref().map(str::as_bytes),
                            &f.root_name.as_deref().map(str::as_bytes),
                            &f.until.map(unix_nanos),
                        ],
                    )
                    .map_err(err)?;
                records_of(tx, &self.explainers, rows)
            })
        })
    }

    fn prune(
        &self,
        older_than: SystemTime,
        max_traces: usize,
        batch: usize,
    ) -> Result<u64, DbError> {
        let limit = i64::try_from(batch).unwrap_or(i64::MAX);
        let max = i64::try_from(max_traces).unwrap_or(i64::MAX);
        // A failed chunk leaves `None`: the next one counts again.
        let known = lock(&self.pass_cut).take();
        let (deleted, cut) = self.readers.with(|c| {
            let mut tx = c.transaction().map_err(err)?;
            // One replica prunes at a time; the others skip this chunk.
            let locked: bool = tx
                .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&PRUNE_LOCK])
                .map_err(err)?
                .get(0);
            if !locked {
                return Ok((0, None));
            }
            // Rows a writer holds (a newer revision being stored) are
            // skipped, not waited for: no lock cycle with a writer's batch.
            // A row stored anew meanwhile is not deleted as old: each cut is
            // checked again on the row as locked.
            let aged = tx
                .execute(
                    "DELETE FROM toolscore_traces WHERE trace_id IN
                     (SELECT trace_id FROM toolscore_traces WHERE stored_at < $1
                      ORDER BY stored_at LIMIT $2 FOR UPDATE SKIP LOCKED)",
                    &[&unix_nanos(older_than), &limit],
                )
                .map_err(err)?;
            let cut = match known {
                Some(cut) => cut,
                None => {
                    let rows: i64 = tx
                        .query_one("SELECT count(*) FROM toolscore_traces", &[])
                        .map_err(err)?
                        .get(0);
                    match rows.saturating_sub(max) {
                        excess if excess > 0 => tx
                            .query_opt(
                                "SELECT stored_at FROM toolscore_traces
                                 ORDER BY stored_at OFFSET $1 LIMIT 1",
                                &[&(excess - 1)],
                            )
                            .map_err(err)?
                            .map(|r| r.get(0)),
                        _ => None,
                    }
                }
            };
            let over = match cut {
                Some(cut) => tx
                    .execute(
                        "DELETE FROM toolscore_traces WHERE trace_id IN
                         (SELECT trace_id FROM toolscore_traces WHERE stored_at <= $1
                          ORDER BY stored_at LIMIT $2 FOR UPDATE SKIP LOCKED)",
                        &[&cut, &limit],
                    )
                    .map_err(err)?,
                None => 0,
            };
            tx.commit().map_err(err)?;
            Ok((aged.saturating_add(over), cut))
        })?;
        // The pass goes on while a chunk deletes as many as asked (see
        // `prune_chunk`); rows added meanwhile are the next pass's to count.
        if deleted >= batch as u64 {
            *lock(&self.pass_cut) = Some(cut);
        }
        Ok(deleted)
    }

    fn count(&self) -> Result<u64, DbError> {
        self.readers.with(|c| {
            let n: i64 = c
                .query_one("SELECT count(*) FROM toolscore_traces", &[])
                .map_err(err)?
                .get(0);
            Ok(n.max(0) as u64)
        })
    }

    fn shared(&self) -> bool {
        true
    }

    fn tend_judgements(&self, now: SystemTime) -> Result<u64, DbError> {
        self.readers.with(|c| self.claims.tend(c, now).map_err(err))
    }

    /// A thread on its own connection, `LISTEN`ing; reconnects with backoff
    /// (commits announced while it is disconnected are not seen: their
    /// long polls find them in the database when they time out).
    fn listen(&self, on_commit: super::db::OnCommit) -> Result<(), DbError> {
        let config = self.config.clone();
        let what = self.what.clone();
        let own = self.writer_pid.clone();
        std::thread::Builder::new()
            .name("toolscore-store-listen".into())
            .spawn(move || listen::run(&config, &what, &own, &on_commit))
            .map(|_| ())
            .map_err(|e| DbError::Query(format!("cannot start the listener thread: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_the_password() {
        assert_eq!(
            redact("postgres://app:s3cret@db:5432/toolscore"),
            "postgres://app@db:5432/toolscore"
        );
        assert_eq!(redact("postgres://db/x"), "postgres://db/x");
        assert_eq!(redact("postgres://app@db/x"), "postgres://app@db/x");
        assert_eq!(redact("postgres://app:p@ss@db/x"), "postgres://app@db/x");
        assert_eq!(
            redact("host=db user=app password=s3cret"),
            "host=db user=app"
        );
    }

    #[test]
    fn keeps_the_newest_revision_of_a_trace_in_a_batch() {
        let rec = |id: u8, revision: u32| {
            let mut r = StoredResult::pending(TraceId([id; 16]));
            r.revision = revision;
            Prepared::new(Arc::new(r))
        };
        let batch = [rec(1, 1), rec(2, 1), rec(1, 2), rec(1, 1)];
        assert_eq!(newest_per_trace(&batch), vec![1, 2]);
    }
}

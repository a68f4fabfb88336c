//! The SQLite database behind [`DbStore`](super::DbStore): one file, in WAL
//! mode so API reads (on their own connections) never wait for the writer's
//! commits. Commits are `synchronous = NORMAL`: a process crash (even
//! `kill -9`) loses nothing committed; a power loss may lose the last
//! commits, never the file.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, OpenFlags, OptionalExtension, Transaction, params};

use super::SqliteConfig;
use super::db::{Database, DbError, Retention, Written};
use super::lock;
use super::rows::{
    self, Explainers, SCORE_COLUMNS, ScoreRowOwned, TRACE_COLUMNS, TraceRowOwned, unix_nanos,
};
use super::{ListFilter, Prepared, StoredResult};
use crate::criteria::Source;
use crate::span::TraceId;

/// The schema, one migration per version (`PRAGMA user_version`). A
/// migration is never edited once released: a change is a new one.
///
/// Every b-tree but one is written at its right edge and pruned at its
/// left: `stored_at` (unique, in commit order) is the traces' rowid and
/// the first key of their scores, so a batch of results appends to a few
/// pages and retention deletes a range. Only `trace_id`'s index takes
/// random keys, which is why the tables are not keyed by trace ID (the A/B
/// is in perf/README.md). `traces` has rowids: its rows (a trace's tool
/// calls) are kilobytes, which a `WITHOUT ROWID` b-tree stores badly;
/// `scores` has none since version 3, its rows having lost their details.
const MIGRATIONS: &[&str] = &[
    // 1: traces and their scores.
    "CREATE TABLE traces (
        stored_at INTEGER PRIMARY KEY,
        trace_id BLOB NOT NULL UNIQUE,
        revision INTEGER NOT NULL,
        status TEXT NOT NULL,
        complete INTEGER NOT NULL,
        evaluated_at INTEGER,
        root_span_id BLOB,
        root_name TEXT,
        root_service TEXT,
        root_start INTEGER,
        root_end INTEGER,
        binding TEXT,
        tool_calls TEXT NOT NULL,
        content_captured INTEGER NOT NULL,
        span_count INTEGER NOT NULL
    );
    CREATE INDEX traces_by_status ON traces (status, stored_at);
    CREATE TABLE scores (
        stored_at INTEGER NOT NULL,
        idx INTEGER NOT NULL,
        evaluator_id TEXT NOT NULL,
        evaluator_type TEXT NOT NULL,
        status TEXT NOT NULL,
        score REAL,
        score_bits INTEGER,
        score_is_int INTEGER NOT NULL,
        passed INTEGER,
        threshold_bits INTEGER,
        details TEXT NOT NULL,
        error TEXT,
        PRIMARY KEY (stored_at, idx)
    );
",
    // 2: the LLM judges' scores still pending, found at start-up without
    // reading every score (a scan of a large cold file takes seconds).
    "CREATE INDEX scores_pending ON scores (stored_at) WHERE status = 'pending';",
    // 3: a deterministic evaluator's details are rendered when read, from
    // the trace's tool calls and the evaluator's config and criteria, kept
    // once each in `explainers` (rows.rs): `details` may be NULL, and
    // `explainer` names what renders it. SQLite cannot drop a NOT NULL, so
    // the table is made again (its rows copied; nothing is lost), without
    // a rowid now that a score row is a hundred bytes rather than
    // kilobytes: the primary key is the table, not an index beside it.
    "CREATE TABLE explainers (
        hash BLOB PRIMARY KEY,
        evaluator_type TEXT NOT NULL,
        config TEXT NOT NULL,
        criteria TEXT
    ) WITHOUT ROWID;
    CREATE TABLE scores_v3 (
        stored_at INTEGER NOT NULL,
        idx INTEGER NOT NULL,
        evaluator_id TEXT NOT NULL,
        evaluator_type TEXT NOT NULL,
        status TEXT NOT NULL,
        score REAL,
        score_bits INTEGER,
        score_is_int INTEGER NOT NULL,
        passed INTEGER,
        threshold_bits INTEGER,
        details TEXT,
        error TEXT,
        explainer BLOB,
        PRIMARY KEY (stored_at, idx)
    ) WITHOUT ROWID;
    INSERT INTO scores_v3 (stored_at, idx, evaluator_id, evaluator_type, status, score,
                           score_bits, score_is_int, passed, threshold_bits, details, error)
        SELECT stored_at, idx, evaluator_id, evaluator_type, status, score, score_bits,
               score_is_int, passed, threshold_bits, details, error FROM scores;
    DROP TABLE scores;
    ALTER TABLE scores_v3 RENAME TO scores;
    CREATE INDEX scores_pending ON scores (stored_at) WHERE status = 'pending';",
];

/// The page size of a new file: a trace's row (its tool calls) leaves much
/// of a small page empty (the A/B is in perf/README.md).
const PAGE_SIZE: u32 = 16_384;

/// The writer checkpoints once its WAL holds this many frames (SQLite's
/// own `wal_autocheckpoint` default).
pub const CHECKPOINT_FRAMES: i32 = 1000;

thread_local! {
    /// Frames in the WAL after the last commit on this thread, as SQLite's
    /// WAL hook reports them (a hook takes no state of its own).
    static WAL_FRAMES: Cell<i32> = const { Cell::new(0) };
}

fn note_wal_frames(_: &rusqlite::hooks::Wal, frames: std::ffi::c_int) -> rusqlite::Result<()> {
    WAL_FRAMES.set(frames);
    Ok(())
}

/// Idle read connections kept open; more are opened when needed.
const MAX_IDLE_READERS: usize = 4;

pub struct Sqlite {
    path: PathBuf,
    busy_timeout: Duration,
    writer: Mutex<WriterState>,
    readers: Mutex<Vec<Connection>>,
    /// The stored sources read so far, loaded (`rows.rs`).
    explainers: Explainers,
    /// The open file's identity (device, inode): a file deleted or
    /// replaced under the process is noticed (see [`Sqlite::check_file`]).
    file: Option<(u64, u64)>,
}

/// A file's device and inode, where the platform has them.
fn identity(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

struct WriterState {
    conn: Connection,
    /// The last `stored_at` written: each record gets a later one than the
    /// one before, so the newest-first order is the commit order even
    /// within a batch or when the clock steps back.
    last: i64,
    /// Rows in `traces`: this connection is the file's only writer, so it
    /// keeps the count instead of counting the table at each retention step.
    rows: i64,
    /// Frames in the WAL after this connection's last commit.
    wal_frames: i32,
    /// The last checkpoint failed (logged once, until one succeeds).
    checkpoint_failing: bool,
}

/// Commits `tx`; the WAL's frames after it (`before` when it wrote none).
fn commit(tx: Transaction<'_>, before: i32) -> Result<i32, DbError> {
    WAL_FRAMES.set(before);
    tx.commit().map_err(err)?;
    Ok(WAL_FRAMES.get())
}

impl WriterState {
    /// Copies the WAL into the file once it holds `frames` or more. A write
    /// calls it with its batch in hand, before its commit, at
    /// [`CHECKPOINT_FRAMES`]: evaluation has the batch's room in the queue
    /// to go on with while the checkpoint waits for the disk (SQLite's own
    /// checkpoint runs at the end of a commit, when the queue is full
    /// again). Retention, between commits, only at twice that: it keeps the
    /// log bounded while nothing is written.
    ///
    /// A failed checkpoint does not fail the commit (SQLite's own does
    /// not either): the log grows, and the next commit tries again.
    fn checkpoint_at(&mut self, frames: i32) {
        if self.wal_frames < frames {
            return;
        }
        match self
            .conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
        {
            Ok(()) => {
                self.wal_frames = 0;
                if std::mem::take(&mut self.checkpoint_failing) {
                    tracing::info!("checkpointing the results database's journal works again");
                }
            }
            Err(e) => {
                if !std::mem::replace(&mut self.checkpoint_failing, true) {
                    tracing::warn!(error = %e, "checkpointing the results database's journal failed; it grows until a checkpoint succeeds");
                }
            }
        }
    }
}

fn err(e: rusqlite::Error) -> DbError {
    DbError::Query(e.to_string())
}

impl Sqlite {
    /// Opens (creating when missing) the database and brings its schema up
    /// to date; refuses a file written by a newer version.
    pub fn open(config: &SqliteConfig) -> Result<Sqlite, DbError> {
        let path = config.path.clone();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| DbError::Open {
                what: path.display().to_string(),
                message: format!("cannot create its directory: {e}"),
            })?;
        }
        let busy_timeout = Duration::from_millis(config.busy_timeout_ms);
        let mut writer = open_connection(&path, busy_timeout, false)?;
        // Before the first table: a new file's page size (an existing file
        // keeps its own).
        writer
            .execute_batch(&format!("PRAGMA page_size = {PAGE_SIZE}"))
            .map_err(|e| open_error(&path, e))?;
        let mode: String = writer
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(|e| open_error(&path, e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(DbError::Open {
                what: path.display().to_string(),
                message: format!("cannot use WAL journal mode (got {mode})"),
            });
        }
        migrate(&mut writer, &path)?;
        settle_orphaned_judgements(&writer, &path)?;
        // In place of SQLite's automatic checkpoints at the end of a commit
        // (see `WriterState::checkpoint_at`).
        writer.wal_hook(Some(note_wal_frames));
        let (last, rows): (i64, i64) = writer
            .query_row(
                "SELECT coalesce(max(stored_at), 0), count(*) FROM traces",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| open_error(&path, e))?;
        Ok(Sqlite {
            file: identity(&path),
            path,
            busy_timeout,
            writer: Mutex::new(WriterState {
                conn: writer,
                last,
                rows,
                wal_frames: CHECKPOINT_FRAMES,
                checkpoint_failing: false,
            }),
            readers: Mutex::new(Vec::new()),
            explainers: Explainers::default(),
        })
    }

    /// Whether the path still names the file open here. Deleted or
    /// replaced (by hand, by a cleanup job), everything written would be
    /// gone at the next start, results stored before included: commits
    /// stop, so nothing more is acknowledged as stored, and the service
    /// goes unready saying why. Only a restart opens the path again (the
    /// write-ahead log keeps what was not stored).
    fn check_file(&self) -> Result<(), DbError> {
        match self.file {
            Some(open) if identity(&self.path) != Some(open) => Err(DbError::Query(format!(
                "the results database {} was deleted or replaced while open: results \
                 written now would be lost; restart toolscore",
                self.path.display()
            ))),
            _ => Ok(()),
        }
    }

    /// Runs `f` on an idle read connection (or a new one), in one read
    /// transaction: a trace row and its scores are read from the same
    /// snapshot (a prune between them cannot leave a record without its
    /// scores), and a list of a thousand takes the file's shared lock once,
    /// not once a statement.
    fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T, DbError>) -> Result<T, DbError> {
        let conn = lock(&self.readers).pop();
        let conn = match conn {
            Some(c) => c,
            None => open_connection(&self.path, self.busy_timeout, true)?,
        };
        let out = conn.unchecked_transaction().map_err(err).and_then(|tx| {
            let out = f(&tx)?;
            tx.commit().map_err(err)?;
            Ok(out)
        });
        let mut idle = lock(&self.readers);
        if idle.len() < MAX_IDLE_READERS {
            idle.push(conn);
        }
        out
    }
}

/// LLM-judged scores still `pending` from the last run: only this process
/// uses the file, so no one will answer them now (the run stopped, or was
/// killed, before its model did). They are stored as `skipped`, saying so.
fn settle_orphaned_judgements(conn: &Connection, path: &Path) -> Result<(), DbError> {
    let settled = conn
        .execute(
            "UPDATE scores SET status = 'skipped', error = evaluator_id || ?1
             WHERE status = 'pending'",
            [" was not judged: toolscore stopped before the model answered"],
        )
        .map_err(|e| open_error(path, e))?;
    if settled > 0 {
        tracing::warn!(
            scores = settled,
            "LLM-judged scores still pending when toolscore last stopped are stored as skipped"
        );
    }
    Ok(())
}

fn open_error(path: &Path, e: rusqlite::Error) -> DbError {
    DbError::Open {
        what: path.display().to_string(),
        message: e.to_string(),
    }
}

fn open_connection(path: &Path, busy: Duration, read_only: bool) -> Result<Connection, DbError> {
    let flags = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
    };
    let conn = Connection::open_with_flags(path, flags).map_err(|e| open_error(path, e))?;
    conn.busy_timeout(busy).map_err(|e| open_error(path, e))?;
    conn.execute_batch("PRAGMA synchronous = NORMAL;")
        .map_err(|e| open_error(path, e))?;
    Ok(conn)
}

fn migrate(conn: &mut Connection, path: &Path) -> Result<(), DbError> {
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| open_error(path, e))?;
    let known = MIGRATIONS.len() as i64;
    if version > known {
        return Err(DbError::NewerSchema {
            what: path.display().to_string(),
            found: version,
            known,
        });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        let tx = conn.transaction().map_err(|e| open_error(path, e))?;
        tx.execute_batch(sql).map_err(|e| open_error(path, e))?;
        tx.pragma_update(None, "user_version", i as i64 + 1)
            .map_err(|e| open_error(path, e))?;
        tx.commit().map_err(|e| open_error(path, e))?;
        tracing::info!(database = %path.display(), version = i + 1, "schema migrated");
    }
    Ok(())
}

/// The sources the batch's scores name, each once (a source stored
/// before is left as it is: its hash is its content).
fn write_sources(tx: &Transaction<'_>, batch: &[Prepared]) -> rusqlite::Result<()> {
    let mut seen: Vec<[u8; 16]> = Vec::new();
    let mut insert = tx.prepare_cached(
        "INSERT OR IGNORE INTO explainers (hash, evaluator_type, config, criteria)
         VALUES (?1, ?2, ?3, ?4)",
    )?;
    for source in batch.iter().flat_map(|p| &p.sources) {
        if seen.contains(&source.hash) {
            continue;
        }
        seen.push(source.hash);
        insert.execute(params![
            &source.hash[..],
            source.evaluator_type.id(),
            source.config,
            source.criteria,
        ])?;
    }
    Ok(())
}

/// What [`write_one`] did with a record.
#[derive(PartialEq)]
enum Written1 {
    Added,
    Replaced,
    /// A newer revision is stored.
    Skipped,
}

/// Stores one record, replacing its trace's older revision (rows and
/// scores, under the new `stored_at`), unless a newer revision is stored.
fn write_one(tx: &Transaction<'_>, p: &Prepared, stored_at: i64) -> rusqlite::Result<Written1> {
    let row = rows::trace_row(p, stored_at);
    let stored: Option<(i64, i64)> = tx
        .prepare_cached("SELECT stored_at, revision FROM traces WHERE trace_id = ?1")?
        .query_row([&row.trace_id[..]], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    if let Some((at, revision)) = stored {
        if revision > row.revision {
            return Ok(Written1::Skipped);
        }
        tx.prepare_cached("DELETE FROM scores WHERE stored_at = ?1")?
            .execute([at])?;
        tx.prepare_cached("DELETE FROM traces WHERE stored_at = ?1")?
            .execute([at])?;
    }
    tx.prepare_cached(&format!(
        "INSERT INTO traces ({TRACE_COLUMNS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"
    ))?
    .execute(params![
        &row.trace_id[..],
        row.revision,
        row.status,
        row.complete,
        row.evaluated_at,
        row.stored_at,
        row.root_span_id.as_ref().map(|b| &b[..]),
        row.root_name,
        row.root_service,
        row.root_start,
        row.root_end,
        row.binding,
        row.tool_calls,
        row.content_captured,
        row.span_count,
    ])?;
    let mut insert = tx.prepare_cached(&format!(
        "INSERT INTO scores (stored_at, {SCORE_COLUMNS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
    ))?;
    for s in rows::score_rows(p) {
        insert.execute(params![
            stored_at,
            s.idx,
            s.evaluator_id,
            s.evaluator_type,
            s.status,
            s.score,
            s.score_bits,
            s.score_is_int,
            s.passed,
            s.threshold_bits,
            s.details,
            s.error,
            s.explainer,
        ])?;
    }
    Ok(if stored.is_some() {
        Written1::Replaced
    } else {
        Written1::Added
    })
}

/// Deletes the oldest rows, up to `limit`: those stored before `older_than`
/// and those past `max_traces` of the `rows` in the table; how many.
/// `stored_at` is the rowid, so both are a range of it, bounded by the n-th
/// oldest row's key; finding that row walks the rows before it, so each
/// walk is bounded by the rows it may delete (the excess, the aged rows)
/// and by `limit`.
fn prune_in(
    tx: &Transaction<'_>,
    rows: i64,
    older_than: SystemTime,
    max_traces: usize,
    limit: i64,
) -> rusqlite::Result<i64> {
    // The key of the n-th oldest row stored before `before`: the bound that
    // deletes n rows. `before` when fewer are.
    let nth_oldest = |n: i64, before: i64| -> rusqlite::Result<i64> {
        let at: Option<i64> = tx
            .prepare_cached(
                "SELECT stored_at FROM traces WHERE stored_at < ?1
                 ORDER BY stored_at LIMIT 1 OFFSET ?2",
            )?
            .query_row([before, n], |r| r.get(0))
            .optional()?;
        Ok(at.unwrap_or(before))
    };
    let oldest: Option<i64> = tx
        .prepare_cached("SELECT min(stored_at) FROM traces")?
        .query_row([], |r| r.get(0))?;
    let (Some(oldest), true) = (oldest, limit > 0) else {
        return Ok(0);
    };
    let excess = rows
        .saturating_sub(i64::try_from(max_traces).unwrap_or(i64::MAX))
        .min(limit);
    let mut bound = if excess > 0 {
        nth_oldest(excess, i64::MAX)?
    } else {
        i64::MIN
    };
    let aged = unix_nanos(older_than);
    if aged > bound && aged > oldest {
        bound = nth_oldest(limit, aged)?;
    }
    if bound <= oldest {
        return Ok(0);
    }
    tx.prepare_cached("DELETE FROM scores WHERE stored_at < ?1")?
        .execute([bound])?;
    let deleted = tx
        .prepare_cached("DELETE FROM traces WHERE stored_at < ?1")?
        .execute([bound])?;
    Ok(i64::try_from(deleted).unwrap_or(i64::MAX))
}

/// A trace row (its columns in [`TRACE_COLUMNS`]' order) and its `stored_at`,
/// its scores' key.
fn trace_row_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<(TraceRowOwned, i64)> {
    let blob16 = |i: usize| -> rusqlite::Result<[u8; 16]> {
        let v: Vec<u8> = r.get(i)?;
        v.try_into().map_err(|_| {
            rusqlite::Error::InvalidColumnType(i, "trace_id".into(), rusqlite::types::Type::Blob)
        })
    };
    let root_span_id: Option<Vec<u8>> = r.get(6)?;
    let row = TraceRowOwned {
        trace_id: blob16(0)?,
        revision: r.get(1)?,
        status: r.get(2)?,
        complete: r.get(3)?,
        evaluated_at: r.get(4)?,
        root_span_id: root_span_id.and_then(|v| v.try_into().ok()),
        root_name: r.get(7)?,
        root_service: r.get(8)?,
        root_start: r.get(9)?,
        root_end: r.get(10)?,
        binding: r.get(11)?,
        tool_calls: r.get(12)?,
        content_captured: r.get(13)?,
        span_count: r.get(14)?,
    };
    Ok((row, r.get(5)?))
}

/// The record with its scores.
fn load_scores(
    conn: &Connection,
    explainers: &Explainers,
    (row, stored_at): (TraceRowOwned, i64),
) -> Result<StoredResult, DbError> {
    let mut record = rows::record_of(row)?;
    let mut stmt = conn
        .prepare_cached(
            "SELECT evaluator_id, evaluator_type, status, score_bits, score_is_int, passed,
                    threshold_bits, details, error, explainer
             FROM scores WHERE stored_at = ?1 ORDER BY idx",
        )
        .map_err(err)?;
    let scores = stmt
        .query_map([stored_at], |r| {
            Ok(ScoreRowOwned {
                evaluator_id: r.get(0)?,
                evaluator_type: r.get(1)?,
                status: r.get(2)?,
                score_bits: r.get(3)?,
                score_is_int: r.get(4)?,
                passed: r.get(5)?,
                threshold_bits: r.get(6)?,
                details: r.get(7)?,
                error: r.get(8)?,
                explainer: r.get(9)?,
            })
        })
        .map_err(err)?;
    let mut explainer = |hash: &[u8]| {
        explainers.get(hash, || {
            conn.prepare_cached(
                "SELECT evaluator_type, config, criteria FROM explainers WHERE hash = ?1",
            )
            .map_err(err)?
            .query_row([hash], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()
            .map_err(err)?
            .map(
                |(kind, config, criteria): (String, String, Option<String>)| {
                    Source::stored(hash, &kind, config, criteria)
                        .map_err(|e| DbError::Row(e.to_string()))
                },
            )
            .transpose()
        })
    };
    for s in scores {
        let s = s.map_err(err)?;
        let score = rows::score_of(&record, s, &mut explainer)?;
        record.scores.push(score);
    }
    Ok(record)
}

impl Database for Sqlite {
    fn check(&self) -> Result<(), DbError> {
        self.check_file()
    }

    fn write(
        &self,
        batch: &[Prepared],
        now: SystemTime,
        retention: &Retention,
    ) -> Result<Written, DbError> {
        self.check_file()?;
        let mut guard = lock(&self.writer);
        let w = &mut *guard;
        w.checkpoint_at(CHECKPOINT_FRAMES);
        let mut at = unix_nanos(now).max(w.last + 1);
        let tx = w.conn.transaction().map_err(err)?;
        write_sources(&tx, batch).map_err(err)?;
        let mut stored = Vec::with_capacity(batch.len());
        let mut added = 0;
        for p in batch {
            let written = write_one(&tx, p, at).map_err(err)?;
            added += i64::from(written == Written1::Added);
            stored.push(written != Written1::Skipped);
            at += 1;
        }
        // As many rows as were added go again (the count stays at its
        // bound), plus a chunk of any excess or aged rows left before.
        let limit = added.saturating_add(i64::try_from(retention.chunk).unwrap_or(i64::MAX));
        let pruned = prune_in(
            &tx,
            w.rows.saturating_add(added),
            retention.older_than,
            retention.max_traces,
            limit,
        )
        .map_err(err)?;
        w.wal_frames = commit(tx, w.wal_frames)?;
        w.last = at - 1;
        w.rows = w.rows.saturating_add(added).saturating_sub(pruned);
        Ok(Written {
            stored,
            pruned: pruned.max(0) as u64,
        })
    }

    fn get(&self, trace_id: &TraceId) -> Result<Option<StoredResult>, DbError> {
        self.read(|conn| {
            let row = conn
                .prepare_cached(&format!(
                    "SELECT {TRACE_COLUMNS} FROM traces WHERE trace_id = ?1"
                ))
                .map_err(err)?
                .query_row([&trace_id.0[..]], trace_row_of)
                .optional()
                .map_err(err)?;
            row.map(|row| load_scores(conn, &self.explainers, row))
                .transpose()
        })
    }

    fn list(&self, f: &ListFilter) -> Result<Vec<StoredResult>, DbError> {
        debug_assert!(!f.nan_bound(), "answered by DbStore");
        // `since` and `until` bound the rowid with `coalesce`, which the
        // planner turns into a range of it; written `?N IS NULL OR`, a page
        // far back in time walks every newer row. The other terms cannot
        // use an index written so, which is why `root_service` has none:
        // only a statement of its own would use one.
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT {TRACE_COLUMNS} FROM traces t
                     WHERE t.stored_at >= coalesce(?2, 0)
                       AND t.stored_at < coalesce(?9, 9223372036854775807)
                       AND (?1 IS NULL OR t.status = ?1)
                       AND (?7 IS NULL OR t.root_service = ?7)
                       AND (?8 IS NULL OR t.root_name = ?8)
                       AND (?3 IS NULL OR EXISTS (SELECT 1 FROM scores s
                            WHERE s.stored_at = t.stored_at AND s.evaluator_id = ?3))
                       AND ((?4 IS NULL AND ?6 IS NULL) OR EXISTS (SELECT 1 FROM scores s
                            WHERE s.stored_at = t.stored_at
                              AND (?3 IS NULL OR s.evaluator_id = ?3)
                              AND (?4 IS NULL OR s.score <= ?4)
                              AND (?6 IS NULL OR s.score >= ?6)))
                     ORDER BY t.stored_at DESC
                     LIMIT ?5"
                ))
                .map_err(err)?;
            let rows = stmt
                .query_map(
                    params![
                        f.status.map(super::TraceStatus::as_str),
                        f.since.map(unix_nanos),
                        f.evaluator,
                        f.max_score,
                        i64::try_from(f.limit).unwrap_or(i64::MAX),
                        f.min_score,
                        f.service,
                        f.root_name,
                        f.until.map(unix_nanos),
                    ],
                    trace_row_of,
                )
                .map_err(err)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(err)?;
            rows.into_iter()
                .map(|row| load_scores(conn, &self.explainers, row))
                .collect()
        })
    }

    fn prune(
        &self,
        older_than: SystemTime,
        max_traces: usize,
        batch: usize,
    ) -> Result<u64, DbError> {
        let mut guard = lock(&self.writer);
        let w = &mut *guard;
        w.checkpoint_at(2 * CHECKPOINT_FRAMES);
        let limit = i64::try_from(batch).unwrap_or(i64::MAX);
        let tx = w.conn.transaction().map_err(err)?;
        let deleted = prune_in(&tx, w.rows, older_than, max_traces, limit).map_err(err)?;
        w.wal_frames = commit(tx, w.wal_frames)?;
        w.rows = w.rows.saturating_sub(deleted);
        Ok(deleted.max(0) as u64)
    }

    fn count(&self) -> Result<u64, DbError> {
        Ok(lock(&self.writer).rows.max(0) as u64)
    }
}

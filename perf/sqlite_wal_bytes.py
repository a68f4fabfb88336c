#!/usr/bin/env python3
"""The SQLite store's write amplification: WAL bytes a stored result costs.

A simulation of the store's b-trees (src/store/sqlite.rs), not the store
itself: `traces` keyed by `stored_at` with a unique `trace_id` (random keys)
and the `(status, stored_at)` index, five `scores` rows a trace without
rowid, rows of the bench's size (a 2.3 KB trace row, 60-byte scores), the
table kept at 100,000 rows by deleting the oldest in each commit, as
retention does at its bound. Commits of BATCH results; prints the WAL
bytes written per result, with and without the `trace_id` index, to tell
the random index's share of the writer's I/O.

    python3 perf/sqlite_wal_bytes.py            # page size 16384 (the store's)
    python3 perf/sqlite_wal_bytes.py 4096
"""

import os
import sqlite3
import sys
import tempfile

ROWS = 100_000
PAGE = int(sys.argv[1]) if len(sys.argv) > 1 else 16_384
BATCHES = [int(b) for b in sys.argv[2:]] or [512, 64, 8]


def run(path, with_index):
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    c = sqlite3.connect(path, isolation_level=None)
    c.execute(f"PRAGMA page_size = {PAGE}")
    c.execute("PRAGMA journal_mode = WAL")
    c.execute("PRAGMA wal_autocheckpoint = 0")
    c.execute("PRAGMA synchronous = NORMAL")
    unique = "UNIQUE" if with_index else ""
    c.execute(
        f"CREATE TABLE traces (stored_at INTEGER PRIMARY KEY, trace_id BLOB NOT NULL {unique},"
        " status TEXT NOT NULL, tool_calls TEXT NOT NULL)"
    )
    c.execute("CREATE INDEX traces_by_status ON traces (status, stored_at)")
    c.execute(
        "CREATE TABLE scores (stored_at INTEGER NOT NULL, idx INTEGER NOT NULL, row TEXT,"
        " PRIMARY KEY (stored_at, idx)) WITHOUT ROWID"
    )
    calls, score = "x" * 2300, "y" * 60
    n = 0

    def commit(k, prune):
        nonlocal n
        c.execute("BEGIN")
        for _ in range(k):
            n += 1
            c.execute(
                "INSERT INTO traces VALUES (?, ?, 'evaluated', ?)", (n, os.urandom(16), calls)
            )
            for i in range(5):
                c.execute("INSERT INTO scores VALUES (?, ?, ?)", (n, i, score))
        if prune:
            c.execute("DELETE FROM scores WHERE stored_at <= ?", (n - ROWS,))
            c.execute("DELETE FROM traces WHERE stored_at <= ?", (n - ROWS,))
        c.execute("COMMIT")

    while n < ROWS:
        commit(512, False)
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for batch in BATCHES:
        before = os.path.getsize(path + "-wal")
        for _ in range(10):
            commit(batch, True)
        per = (os.path.getsize(path + "-wal") - before) / (10 * batch)
        print(f"page {PAGE}, trace_id index {with_index}, batch {batch}: {per:,.0f} WAL bytes a result")
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()


with tempfile.TemporaryDirectory() as d:
    for with_index in (True, False):
        run(os.path.join(d, "wal.db"), with_index)

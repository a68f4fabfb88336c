#!/usr/bin/env bash
# The results store's A/B: the same closed-loop load (toolscore-loadgen
# --mode max) against `toolscore serve --config perf/config.yaml` with each
# backend in turn, ROUNDS times alternately (memory, sqlite, postgres, memory,
# …), toolscore pinned to CPU 0 and the generator to CPU 1. Reports, per run,
# the spans evaluated per second in the steady window (traces completed ×
# the generator's spans a trace), the server's peak RSS and the bytes a
# stored result takes in the database at the end; the median per
# backend and its ratio to memory's. PIN=0 runs both unpinned (perf/e2e.sh's
# default): the store's writer thread then has the second core when the
# generator leaves it idle.
#
#   perf/store_ab.sh                       # 3 rounds of 20 s runs (8 s warm-up)
#   ROUNDS=5 DURATION=30 perf/store_ab.sh
#   BACKENDS="memory sqlite" perf/store_ab.sh
#   OTHER=/tmp/old/toolscore BACKENDS="other sqlite" perf/store_ab.sh
#
# `other` is OTHER_BACKEND (sqlite unless set) served by the toolscore
# binary at OTHER (a path from the repository's root, which the script runs
# in: another build, for a before/after of the store in the same run); BASE
# names the variant the ratios are to (memory).
#
# postgres runs on a server this script starts (initdb/pg_ctl from
# /usr/lib/postgresql/<version>/bin, as the postgres user when root; a temp
# dir, fsync on) unless PG_URL names one; its toolscore_* tables are dropped
# before each run (psql).
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-20}
WARMUP=${WARMUP:-8}
CONCURRENCY=${CONCURRENCY:-16}
BACKENDS=${BACKENDS:-memory sqlite postgres}
if [[ "${PIN:-1}" == 1 ]]; then SERVER_PIN=(taskset -c 0) GEN_PIN=(taskset -c 1); else SERVER_PIN=() GEN_PIN=(); fi
GRPC=127.0.0.1:14317
API=http://127.0.0.1:18080
WORK=$(mktemp -d /tmp/toolscore-store-ab.XXXXXX)
# Spans a trace in the generator's requests (503 spans of 53 traces).
SPANS_PER_TRACE=$(python3 -c 'print(503/53)')

if [[ " $BACKENDS " == *" other "* && ! -x "${OTHER:-}" ]]; then
  echo "store_ab.sh: the other backend needs OTHER=<a toolscore binary>" >&2; exit 2
fi
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  cargo build --release --locked --bin toolscore --bin toolscore-loadgen >&2
fi

PG_PID_DIR=
as_pg() { if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
start_pg() {
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  PG_PID_DIR=$(mktemp -d /tmp/toolscore-ab-pg.XXXXXX)
  [[ $(id -u) == 0 ]] && chown postgres "$PG_PID_DIR"
  as_pg "$bin/initdb" -D "$PG_PID_DIR/data" -U toolscore -A trust -E UTF8 --locale=C >/dev/null
  as_pg "$bin/pg_ctl" -D "$PG_PID_DIR/data" -l "$PG_PID_DIR/log" -w \
    -o "-p 15432 -k $PG_PID_DIR -c listen_addresses=127.0.0.1" start >/dev/null
  PG_BIN=$bin
  PG_URL=postgres://toolscore@127.0.0.1:15432/postgres
}
stop_pg() {
  [[ -n "$PG_PID_DIR" ]] || return 0
  as_pg "$PG_BIN/pg_ctl" -D "$PG_PID_DIR/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$PG_PID_DIR"   # its data directory: gigabytes after a run
}
empty_pg() { psql "$PG_URL" -qc 'DROP TABLE IF EXISTS toolscore_scores, toolscore_traces, toolscore_schema, toolscore_replicas, toolscore_explainers' >/dev/null 2>&1; }
# The bytes a stored result takes: PostgreSQL's relations (tables, their
# TOAST and indexes) or SQLite's pages in use, over the rows kept.
stored_bytes() {   # stored_bytes BACKEND
  case $1 in
    postgres) psql "$PG_URL" -tAc "SELECT round((pg_total_relation_size('toolscore_traces')
                + pg_total_relation_size('toolscore_scores'))::numeric
                / greatest(count(*), 1) / 1000, 2) || ' KB a result (relations, ' || count(*) || ' rows)'
                FROM toolscore_traces" 2>/dev/null || echo "-" ;;
    sqlite) python3 - <<'PY'
import sqlite3
db = sqlite3.connect("target/tmp/bench-results.db")
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
n = db.execute("SELECT count(*) FROM traces").fetchone()[0]
used = db.execute("SELECT sum(pgsize - unused) FROM dbstat").fetchone()[0] or 0
print(f"{used / max(n, 1) / 1000:.2f} KB a result (pages in use, {n} rows)")
PY
    ;;
    *) echo "-" ;;
  esac
}
OTHER_BACKEND=${OTHER_BACKEND:-sqlite}
if [[ ( " $BACKENDS " == *" postgres "* || ( " $BACKENDS " == *" other "* && $OTHER_BACKEND == postgres ) ) \
      && -z "${PG_URL:-}" ]]; then start_pg; fi

PID=
stop_server() { [[ -n "$PID" ]] && { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }; PID=; }
trap 'stop_server; stop_pg' EXIT

config_for() {   # config_for BACKEND → path
  local out="$WORK/config-$1.yaml" backend=$1
  [[ $backend == other ]] && backend=$OTHER_BACKEND
  rm -f target/tmp/bench-results.db target/tmp/bench-results.db-wal target/tmp/bench-results.db-shm
  case $backend in
    sqlite) sed -e "s|\[eval-set/|[$PWD/perf/eval-set/|" perf/config.yaml >"$out" ;;
    memory) sed -e "s|^  backend: sqlite|  backend: memory|" \
                -e "s|\[eval-set/|[$PWD/perf/eval-set/|" perf/config.yaml >"$out" ;;
    postgres)
      empty_pg
      sed -e "s|^  backend: sqlite|  backend: postgres\n  postgres:\n    url: $PG_URL|" \
          -e "s|\[eval-set/|[$PWD/perf/eval-set/|" perf/config.yaml >"$out" ;;
  esac
  echo "$out"
}

completed() { curl -fs "$API/metrics" | awk '/^toolscore_traces_total\{outcome="completed"\}/ {print $2}'; }

run() {   # run BACKEND ROUND
  local config
  config=$(config_for "$1")
  local bin=./target/release/toolscore
  [[ $1 == other ]] && bin=$OTHER
  "${SERVER_PIN[@]}" "$bin" serve --config "$config" >"$WORK/$1-$2.log" 2>&1 &
  PID=$!
  for _ in $(seq 200); do curl -fs "$API/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
  "${GEN_PIN[@]}" ./target/release/toolscore-loadgen --endpoint "http://$GRPC" --mode max \
    --concurrency "$CONCURRENCY" --duration-secs "$DURATION" --warmup-secs 0 \
    --json >"$WORK/$1-$2.json" &
  local gen=$!
  sleep "$WARMUP"
  local c0 t0 c1 t1
  c0=$(completed); t0=$(date +%s.%N)
  sleep $((DURATION - WARMUP))
  c1=$(completed); t1=$(date +%s.%N)
  wait "$gen" || true
  local peak bytes
  peak=$(awk '/^VmHWM:/ {print $2}' "/proc/$PID/status")
  stop_server
  local backend=$1
  [[ $backend == other ]] && backend=$OTHER_BACKEND
  bytes=$(stored_bytes "$backend")
  python3 -c "print(f'$1 round $2: {($c1-$c0)*$SPANS_PER_TRACE/($t1-$t0):.0f} evaluated spans/s, peak RSS {$peak/1024:.0f} MiB, stored $bytes')" | tee -a "$WORK/results.txt"
}

for round in $(seq "$ROUNDS"); do
  for b in $BACKENDS; do run "$b" "$round"; done
done
python3 perf/ab_summary.py "$WORK/results.txt" "${BASE:-memory}"
echo "runs in $WORK" >&2

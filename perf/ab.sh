#!/usr/bin/env bash
# A/B of a feature's cost: the same closed-loop load (toolscore-loadgen
# --mode max) against `toolscore serve --config perf/config.yaml` in each of
# VARIANTS, ROUNDS times alternately, toolscore pinned to CPU 0 and the
# generator to CPU 1 (PIN=0: both unpinned; PIN=quota: toolscore under a
# one-CPU quota, see below). The variants:
#   off       the reference: no write-ahead log, plaintext
#   none      the write-ahead log with `wal.sync: none`
#   interval  the log with `sync: interval` (10 ms)
#   tls       no log; TLS on the OTLP/gRPC receiver (a certificate made by
#             openssl, the generator trusting its CA)
#   judges    no log; an LLM judge (UiPath trajectory similarity) on every
#             trace besides the five deterministic evaluators, its model
#             served by the generator (--model-stub) answering after
#             MODEL_DELAY_MS (500); no reply cache. Also reports the judged
#             scores a second.
#   bare      not toolscore: examples/bare_receiver, which decodes each
#             request with prost and drops it; its rate is the spans the
#             generator had accepted after the warm-up.
#   other     as off, but the toolscore binary at OTHER (another build, for
#             a before/after in the same run); VARIANT@other is any other
#             variant with that binary (exporter@other).
#   unbound   as off, but no trace carries an eval-set item (the generator's
#             --bound-share 0): receiving, assembling, extracting and storing
#             without the evaluators, to tell their share from the path's.
#   exporter  as off, with the exporter on (spans, log events and metrics)
#             sending to a second examples/bare_receiver, pinned beside the
#             generator; also reports the records it exported and dropped.
#   defaults  the service's defaults whatever BACKEND is: the SQLite store
#             and the write-ahead log (`sync: none`). Also reports the bytes
#             a stored result takes in the file, checkpointed (`dbstat`:
#             pages in use, whatever the free list holds).
# READS=1 reads while ingesting (perf/read_probe.py, beside the generator):
# each run also reports the p50/p99 of `GET /traces/{id}/scores` and of the
# UI's overview. With RATE (spans/s, the generator's rate mode) below the
# maximum, the latencies of reads under a given load.
# The store is BACKEND (memory by default: the log
# is then the only disk I/O, the strictest reference). Reports, per run, the
# spans evaluated per second in the steady window, the p99 of the log's
# append latency (toolscore_wal_append_seconds) and the generator's request
# latency, and of `GET /healthz` sampled every 0.2 s in the steady window
# (as a probe would); the median per variant and its ratio to `off`. Each
# run starts on an empty log.
#
#   perf/ab.sh                             # off none interval: 3 rounds of 20 s runs (8 s warm-up)
#   ROUNDS=5 VARIANTS="off tls" perf/ab.sh
#   VARIANTS="bare off" BASE=bare perf/ab.sh  # toolscore's share of a bare receiver
#   OTHER=/tmp/old/toolscore VARIANTS="bare other off" BASE=bare perf/ab.sh
#   LOADGEN=/tmp/old/toolscore-loadgen VARIANTS="bare off" BASE=bare perf/ab.sh
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-20}
WARMUP=${WARMUP:-8}
CONCURRENCY=${CONCURRENCY:-16}
BACKEND=${BACKEND:-memory}
VARIANTS=${VARIANTS:-off none interval}
BASE=${BASE:-off}
MODEL=127.0.0.1:19090
SINK=127.0.0.1:14327
MODEL_DELAY_MS=${MODEL_DELAY_MS:-500}
RATE=${RATE:-}
# The generator: another build's for a before/after of the load's shape.
LOADGEN=${LOADGEN:-./target/release/toolscore-loadgen}
# PIN=quota: toolscore in a cgroup (v1 cpu controller) whose quota is one
# CPU's time over both cores, as Kubernetes enforces a CPU limit; the
# generator unpinned.
CG=
case "${PIN:-1}" in
  1) SERVER_PIN=(taskset -c 0) GEN_PIN=(taskset -c 1) ;;
  quota)
    CG=/sys/fs/cgroup/cpu/toolscore-ab
    mkdir -p "$CG" && echo 100000 >"$CG/cpu.cfs_period_us" && echo 100000 >"$CG/cpu.cfs_quota_us" \
      || { echo "ab.sh: PIN=quota needs a writable cgroup v1 cpu controller" >&2; exit 1; }
    SERVER_PIN=(sh -c 'echo $$ >"$1"; shift; exec "$@"' sh "$CG/cgroup.procs") GEN_PIN=() ;;
  *) SERVER_PIN=() GEN_PIN=() ;;
esac
GRPC=127.0.0.1:14317
API=http://127.0.0.1:18080
WORK=$(mktemp -d /tmp/toolscore-ab.XXXXXX)
SPANS_PER_TRACE=$(python3 -c 'print(503/53)')

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  cargo build --release --locked --bin toolscore --bin toolscore-loadgen >&2
  [[ " $VARIANTS " == *" bare "* || " $VARIANTS " == *" exporter "* ]] && cargo build --release --locked --example bare_receiver >&2
fi

PID= SINK_PID=
stop_server() {
  [[ -n "$PID" ]] && { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }; PID=
  [[ -n "$SINK_PID" ]] && { kill "$SINK_PID" 2>/dev/null || true; wait "$SINK_PID" 2>/dev/null || true; }; SINK_PID=
}
trap 'stop_server; rm -rf "$WORK/wal" target/tmp/bench-results.db*; [[ -n "$CG" ]] && rmdir "$CG" 2>/dev/null; true' EXIT

# The tls variant's certificate: a CA and a server certificate for 127.0.0.1.
make_certificate() {
  [[ -f "$WORK/tls.crt" ]] && return
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -subj /CN=bench-ca -keyout "$WORK/ca.key" -out "$WORK/ca.crt" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
    -keyout "$WORK/tls.key" -out "$WORK/tls.csr" 2>/dev/null
  openssl x509 -req -in "$WORK/tls.csr" -CA "$WORK/ca.crt" -CAkey "$WORK/ca.key" -days 1 \
    -extfile <(printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth') \
    -out "$WORK/tls.crt" 2>/dev/null
}

config_for() {   # config_for VARIANT → path
  local out="$WORK/config-$1.yaml" enabled=true sync=$1 backend=$BACKEND
  rm -rf "$WORK/wal" target/tmp/bench-results.db target/tmp/bench-results.db-wal target/tmp/bench-results.db-shm
  [[ $1 == off || $1 == other || $1 == tls || $1 == judges || $1 == unbound || $1 == exporter ]] && { enabled=false; sync=none; }
  [[ $1 == defaults ]] && { backend=sqlite; sync=none; }
  sed -e "s|^  backend: sqlite|  backend: $backend|" \
      -e "s|\[eval-set/|[$PWD/perf/eval-set/|" \
      -e "s|^  enabled: false|  enabled: $enabled\n  sync: $sync\n  sync_interval_ms: 10|" \
      -e "s|^  dir: target/tmp/bench-wal|  dir: $WORK/wal|" perf/config.yaml >"$out"
  if [[ $1 == tls ]]; then
    make_certificate
    sed -i "s|^    endpoint: 127.0.0.1:14317|    endpoint: 127.0.0.1:14317\n    tls: {cert_file: $WORK/tls.crt, key_file: $WORK/tls.key}|" "$out"
    grep -q "tls: {cert_file" "$out" || { echo "ab.sh: no receivers.grpc endpoint line in perf/config.yaml to add tls to" >&2; exit 1; }
  fi
  [[ $1 == exporter ]] && printf 'exporter:\n  enabled: true\n  endpoint: http://%s\n' "$SINK" >>"$out"
  if [[ $1 == judges ]]; then
    # The bench eval set with the judge added to its evaluators and to every
    # item (null criteria: the judge's default).
    rm -rf "$WORK/eval-set" && cp -r perf/eval-set "$WORK/eval-set"
    python3 - "$WORK/eval-set" <<'PY'
import json, sys, pathlib
root = pathlib.Path(sys.argv[1])
(root / "evaluators/trajectory.json").write_text(json.dumps({
    "version": "1.0", "id": "TrajectoryEvaluator",
    "evaluatorTypeId": "uipath-llm-judge-trajectory-similarity",
    "evaluatorConfig": {"name": "TrajectoryEvaluator", "model": "gpt-4.1-2025-04-14",
        "temperature": 0.0,
        "defaultEvaluationCriteria": {"expectedAgentBehavior": "Calls each weather tool once."}}}))
for f in (root / "eval-sets").glob("*.json"):
    s = json.loads(f.read_text())
    s["evaluatorRefs"].append("TrajectoryEvaluator")
    for item in s["evaluations"]:
        item["evaluationCriterias"]["TrajectoryEvaluator"] = None
    f.write_text(json.dumps(s))
PY
    sed -i "s|$PWD/perf/eval-set/|$WORK/eval-set/|" "$out"
    printf 'llm:\n  providers:\n    bench:\n      kind: uipath\n      base_url: http://%s/org/tenant\n      cache_ttl_secs: 0\n' "$MODEL" >>"$out"
  fi
  echo "$out"
}

metric() { curl -fs "$API/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
completed() { metric 'toolscore_traces_total{outcome="completed"}'; }
judged() { metric 'toolscore_llm_judgements_total{status="ok"}' | grep . || echo 0; }

run_bare() {   # run_bare ROUND
  "${SERVER_PIN[@]}" ./target/release/examples/bare_receiver "$GRPC" >"$WORK/bare-$1.log" 2>&1 &
  PID=$!
  for _ in $(seq 200); do (exec 3<>"/dev/tcp/${GRPC%:*}/${GRPC#*:}") 2>/dev/null && break; sleep 0.1; done
  "${GEN_PIN[@]}" "$LOADGEN" --endpoint "http://$GRPC" --mode max \
    --concurrency "$CONCURRENCY" --duration-secs "$DURATION" --warmup-secs "$WARMUP" --json >"$WORK/bare-$1.json"
  stop_server
  python3 - "$1" "$WORK/bare-$1.json" <<'PY' | tee -a "$WORK/results.txt"
import json, sys
rnd, gen = sys.argv[1:]
g = json.load(open(gen))
lat = g.get("latency_ms", {})
print(f"bare round {rnd}: {g['accepted_spans_per_sec']:.0f} received spans/s, request p50 {lat.get('p50', '-')} ms p99 {lat.get('p99', '-')} ms")
PY
}

run() {   # run VARIANT ROUND
  [[ $1 == bare ]] && { run_bare "$2"; return; }
  local label=$1 bin=./target/release/toolscore
  [[ $1 == other || $1 == *@other ]] && bin=${OTHER:?set OTHER to the other build of toolscore}
  set -- "${1%@other}" "$2"
  local config
  config=$(config_for "$1")
  if [[ $1 == exporter ]]; then
    "${GEN_PIN[@]}" ./target/release/examples/bare_receiver "$SINK" >"$WORK/sink-$2.log" 2>&1 &
    SINK_PID=$!
  fi
  "${SERVER_PIN[@]}" "$bin" serve --config "$config" >"$WORK/$label-$2.log" 2>&1 &
  PID=$!
  for _ in $(seq 200); do curl -fs "$API/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
  local mode=(--mode max --concurrency "$CONCURRENCY")
  [[ -n "$RATE" ]] && mode=(--mode rate --spans-per-sec "$RATE")
  local target=(--endpoint "http://$GRPC")
  [[ $1 == tls ]] && target=(--endpoint "https://$GRPC" --ca-file "$WORK/ca.crt")
  [[ $1 == judges ]] && target+=(--model-stub "$MODEL" --model-delay-ms "$MODEL_DELAY_MS")
  [[ $1 == unbound ]] && target+=(--bound-share 0)
  "${GEN_PIN[@]}" "$LOADGEN" "${target[@]}" "${mode[@]}" \
    --duration-secs "$DURATION" --warmup-secs 0 --json >"$WORK/$label-$2.json" &
  local gen=$!
  sleep "$WARMUP"
  local c0 t0 c1 t1 j0 j1
  c0=$(completed); j0=$(judged); t0=$(date +%s.%N)
  local reader=
  if [[ "${READS:-0}" == 1 ]]; then
    "${GEN_PIN[@]}" python3 perf/read_probe.py "$API" "$(( DURATION - WARMUP - 1 ))" >"$WORK/$label-$2.reads" &
    reader=$!
  fi
  local end=$(( $(date +%s) + DURATION - WARMUP ))
  while (( $(date +%s) < end )); do
    curl -fs -o /dev/null -w '%{time_total}\n' "$API/healthz" >>"$WORK/$label-$2.probe" || echo fail >>"$WORK/$label-$2.probe"
    sleep 0.2
  done
  c1=$(completed); j1=$(judged); t1=$(date +%s.%N)
  [[ -n "$reader" ]] && { wait "$reader" || true; echo "$label round $2 reads: $(cat "$WORK/$label-$2.reads")" | tee -a "$WORK/results.txt"; }
  wait "$gen" || true
  curl -fs "$API/metrics" >"$WORK/$label-$2.metrics"
  stop_server
  local stored="-"
  [[ $1 == exporter ]] && stored=$(awk '$1 ~ /^toolscore_exporter_(spans_exported|logs_exported|records_dropped)/ {printf "%s %s, ", $1, $2}' "$WORK/$label-$2.metrics")
  [[ $1 == defaults ]] && stored=$(python3 - <<'PY'
import sqlite3
db = sqlite3.connect("target/tmp/bench-results.db")
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
n = db.execute("SELECT count(*) FROM traces").fetchone()[0]
try:
    used = db.execute("SELECT sum(pgsize - unused) FROM dbstat").fetchone()[0]
except sqlite3.Error:
    used = None
pages = db.execute("PRAGMA page_count").fetchone()[0] * db.execute("PRAGMA page_size").fetchone()[0]
print(f"{n} results, {pages / max(n, 1) / 1000:.2f} KB of pages a result" + (f", {used / max(n, 1) / 1000:.2f} KB in use" if used else ""))
PY
)
  python3 - "$label" "$2" "$c0" "$c1" "$t0" "$t1" "$SPANS_PER_TRACE" "$WORK/$label-$2.metrics" "$WORK/$label-$2.json" "$j0" "$j1" "$WORK/$label-$2.probe" "$stored" <<'PY' | tee -a "$WORK/results.txt"
import json, re, sys
v, rnd, c0, c1, t0, t1, spt, metrics, gen, j0, j1, probe, stored = sys.argv[1:]
rate = (float(c1) - float(c0)) * float(spt) / (float(t1) - float(t0))
judged = (float(j1) - float(j0)) / (float(t1) - float(t0))
buckets = []
for line in open(metrics):
    m = re.match(r'toolscore_wal_append_seconds_bucket\{le="([^"]+)"\} (\S+)', line)
    if m:
        buckets.append((float("inf") if m[1] == "+Inf" else float(m[1]), float(m[2])))
p99 = "-"
if buckets and buckets[-1][1] > 0:
    total = buckets[-1][1]
    p99 = next(f"{le * 1000:.2f} ms" for le, n in buckets if n >= 0.99 * total)
try:
    g = json.load(open(gen))
    lat = g.get("latency_ms", {})
    req = f"request p50 {lat.get('p50', '-')} ms p99 {lat.get('p99', '-')} ms"
except Exception:
    req = "request latency -"
samples = [l.strip() for l in open(probe) if l.strip()]
times = sorted(float(s) * 1000 for s in samples if s != "fail")
failed = len(samples) - len(times)
probes = "healthz -"
if times:
    q = lambda p: times[min(len(times) - 1, int(p * len(times)))]
    probes = f"healthz p50 {q(0.5):.1f} ms p99 {q(0.99):.1f} ms max {times[-1]:.1f} ms ({len(times)} probes, {failed} failed)"
print(f"{v} round {rnd}: {rate:.0f} evaluated spans/s, wal append p99 {p99}, {req}, {probes}, judged {judged:.1f}/s" + ("" if stored == "-" else f", exported {stored}" if stored.startswith("toolscore_exporter") else f", stored {stored}"))
PY
}

for round in $(seq "$ROUNDS"); do
  for v in $VARIANTS; do run "$v" "$round"; done
done
python3 perf/ab_summary.py "$WORK/results.txt" "$BASE"
echo "runs in $WORK" >&2

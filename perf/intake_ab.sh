#!/usr/bin/env bash
# Steady intake at saturation on one CPU (issue 23): A/B of two toolscore
# binaries, alternately, ROUNDS times, against perf/config.yaml (store
# BACKEND, sqlite by default as in the default config).
#
#   BASE=/path/to/previous/toolscore perf/intake_ab.sh
#
# Each run is one of:
#   quota   toolscore in a cgroup (v1 cpu controller, or v2) with
#           cfs_quota_us = cfs_period_us: one CPU's time, as Kubernetes
#           sets `resources.limits.cpu: "1"`; the generator outside it.
#           Where no cgroup can be made: `taskset -c 0` (toolscore) and
#           `taskset -c 1` (generator) instead, said in the output.
#   two     both unpinned on the machine's two cores.
# Closed loop first (toolscore-loadgen --mode max, 16 in flight, 512-span
# requests of 9.5-span agent traces, the five evaluators on every trace) for
# DURATION s after WARMUP s; then, with ONE_CPU_OPEN=1 (the default), an
# open-loop run at 80 % of that run's mean (OPEN_RATE spans/s instead: the
# same rate for both binaries). Per run: accepted spans per
# second (min, mean, min/mean), spans evaluated per second in the same
# window (traces stored × 503/53), request latency p50/p99/max, refusals, and
# whether every trace of an accepted request was evaluated and stored
# (toolscore's count of complete traces stored, `due_to_scores`, once the
# backlog drained, against the generator's count of traces in accepted
# requests).
set -euo pipefail
cd "$(dirname "$0")/.."

BASE=${BASE:?BASE=path of the previous toolscore binary}
NEW=${NEW:-target/release/toolscore}
LOADGEN=${LOADGEN:-target/release/toolscore-loadgen}
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-25}
WARMUP=${WARMUP:-5}
CONCURRENCY=${CONCURRENCY:-16}
BACKEND=${BACKEND:-sqlite}
MODES=${MODES:-quota two}
ONE_CPU_OPEN=${ONE_CPU_OPEN:-1}
API=http://127.0.0.1:18080
GRPC=http://127.0.0.1:14317
WORK=$(mktemp -d /tmp/toolscore-intake.XXXXXX)
CG=

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  cargo build --release --locked --bin toolscore --bin toolscore-loadgen >&2
fi

# A one-CPU cgroup, if the machine lets us make one.
if [[ -w /sys/fs/cgroup/cpu ]] && mkdir -p /sys/fs/cgroup/cpu/toolscore-bench 2>/dev/null; then
  CG=/sys/fs/cgroup/cpu/toolscore-bench
  echo 100000 >"$CG/cpu.cfs_period_us"
  echo 100000 >"$CG/cpu.cfs_quota_us"
elif [[ -w /sys/fs/cgroup/cgroup.subtree_control ]] && mkdir -p /sys/fs/cgroup/toolscore-bench 2>/dev/null; then
  echo +cpu >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
  CG=/sys/fs/cgroup/toolscore-bench
  echo "100000 100000" >"$CG/cpu.max"
fi

PID=
stop_server() { [[ -n "$PID" ]] && { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }; PID=; }
cleanup() { stop_server; rm -f target/tmp/bench-results.db*; [[ -n "$CG" ]] && rmdir "$CG" 2>/dev/null || true; }
trap cleanup EXIT

config="$WORK/config.yaml"
sed -e "s|^  backend: sqlite|  backend: $BACKEND|" \
    -e "s|\[eval-set/|[$PWD/perf/eval-set/|" perf/config.yaml >"$config"
# NEW_ADMISSION="max_backlog_ms: 1000": keys of receivers.admission for the
# new binary only (the base one refuses keys it does not know).
new_config="$WORK/config-new.yaml"
cp "$config" "$new_config"
if [[ -n "${NEW_ADMISSION:-}" ]]; then
  sed -i "s|^receivers:|receivers:\n  admission: {${NEW_ADMISSION}}|" "$new_config"
fi

metric() { curl -fs --max-time 5 "$API/metrics" | awk -v m="$1" '$1 == m {print $2}' | grep . || echo 0; }

start() {   # start BINARY MODE LOG CONFIG
  local config=$4
  rm -f target/tmp/bench-results.db*
  if [[ $2 == quota && -n "$CG" ]]; then
    local procs="$CG/cgroup.procs"
    sh -c 'echo $$ >"$1"; shift; exec "$@"' sh "$procs" "$1" serve --config "$config" >"$3" 2>&1 &
  elif [[ $2 == quota ]]; then
    taskset -c 0 "$1" serve --config "$config" >"$3" 2>&1 &
  else
    "$1" serve --config "$config" >"$3" 2>&1 &
  fi
  PID=$!
  for _ in $(seq 300); do curl -fs "$API/readyz" >/dev/null 2>&1 && return; sleep 0.1; done
  echo "intake_ab.sh: toolscore did not become ready (log: $3)" >&2
  exit 1
}

gen() {   # gen MODE OUT ARGS...
  local mode=$1 out=$2
  shift 2
  local pin=()
  [[ $mode == quota && -z "$CG" ]] && pin=(taskset -c 1)
  "${pin[@]}" "$LOADGEN" --endpoint "$GRPC" --duration-secs $((WARMUP + DURATION)) \
    --warmup-secs "$WARMUP" --json "$@" >"$out"
}

# Waits (up to 120 s) until the count of complete traces evaluated and
# stored stops moving for 3 s: the backlog is drained.
drained() {
  local last=-1 same=0 now
  for _ in $(seq 240); do
    now=$(metric 'toolscore_due_to_scores_seconds_count')
    if [[ "$now" == "$last" ]]; then same=$((same + 1)); [[ $same -ge 6 ]] && break; else same=0; fi
    last=$now
    sleep 0.5
  done
  echo "$last"
}

run() {   # run NAME BINARY MODE ROUND
  local name=$1 bin=$2 mode=$3 round=$4 tag="$1-$3-$4"
  local c=$config
  [[ $name == new ]] && c=$new_config
  start "$bin" "$mode" "$WORK/$tag.log" "$c"
  gen "$mode" "$WORK/$tag.max.json" --mode max --concurrency "$CONCURRENCY" &
  local g=$! c0 t0 c1 t1
  # Evaluated in the steady window: what the service sustains, as opposed
  # to what it accepts (which can outrun evaluation while its buffer fills).
  sleep "$WARMUP"
  c0=$(metric toolscore_due_to_scores_seconds_count); t0=$(date +%s.%N)
  sleep "$DURATION"
  c1=$(metric toolscore_due_to_scores_seconds_count); t1=$(date +%s.%N)
  wait "$g"
  local evaluated_rate
  evaluated_rate=$(python3 -c 'import sys; c0,c1,t0,t1=map(float,sys.argv[1:]); print(int((c1-c0)*503/53/(t1-t0)))' "$c0" "$c1" "$t0" "$t1")
  local completed
  completed=$(drained)
  curl -fs "$API/metrics" >"$WORK/$tag.max.metrics" || true
  if [[ $mode == quota && $ONE_CPU_OPEN == 1 ]]; then
    local rate
    rate=${OPEN_RATE:-$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["accepted_spans_per_sec"] * 0.8))' "$WORK/$tag.max.json")}
    gen "$mode" "$WORK/$tag.open.json" --mode rate --spans-per-sec "$rate" --max-in-flight 256
  fi
  stop_server
  python3 perf/intake_summary.py run "$name" "$mode" "$round" "$WORK/$tag" "$completed" "$evaluated_rate" | tee -a "$WORK/results.txt"
}

[[ -n "$CG" ]] || echo "intake_ab.sh: no cgroup could be made; quota runs use taskset instead" >&2
for round in $(seq "$ROUNDS"); do
  for mode in $MODES; do
    run base "$BASE" "$mode" "$round"
    run new "$NEW" "$mode" "$round"
  done
done
python3 perf/intake_summary.py summary "$WORK/results.txt"
echo "runs in $WORK" >&2

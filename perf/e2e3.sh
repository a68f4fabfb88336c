#!/usr/bin/env bash
# Runs perf/e2e.sh three times (building once) and prints the figures table
# of perf/README.md: median of 3 runs and min–max, with date and machine.
#
#   PIN=1 DURATION=10 perf/e2e3.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
summaries=()
for i in $(seq "$RUNS"); do
  if [[ $i -gt 1 ]]; then export SKIP_BUILD=1; fi
  out=$(bash perf/e2e.sh 2>&1 | tee /dev/stderr | sed -n 's/^summary: //p' | tail -n 1)
  summaries+=("$out")
done
python3 - "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(nproc)" "$(free -h | awk '/^Mem:/ {print $2}')" \
  "PIN=${PIN:-0} DURATION=${DURATION:-20} CONCURRENCY=${CONCURRENCY:-16} perf/e2e3.sh" "${summaries[@]}" <<'PY'
import json, sys, statistics
date, cpus, mem, cmd, *files = sys.argv[1:]
runs = [json.load(open(f)) for f in files]
print(f"{date}; nproc {cpus}; memory {mem}; `{cmd}`; {len(runs)} runs\n")
print("| figure | median | min–max |")
print("| --- | --- | --- |")
for k in runs[0]:
    vals = [r.get(k) for r in runs]
    if all(isinstance(v, bool) for v in vals):
        print(f"| {k} | {'yes' if all(vals) else 'NO'} ({sum(vals)}/{len(vals)}) | |")
    elif all(isinstance(v, (int, float)) for v in vals):
        print(f"| {k} | {statistics.median(vals):g} | {min(vals):g}–{max(vals):g} |")
PY

#!/usr/bin/env bash
# The fuzz campaign (fuzz/README.md): every target (or those named) fuzzed
# for CAMPAIGN_SECONDS (default 600) on its committed corpus, which grows,
# CAMPAIGN_PARALLEL (default 2) targets at a time, one job each. Prints a
# line per target: executions, seconds, exec/s, peak RSS, and whether it
# crashed, timed out or ran out of memory (reproducers in artifacts/).
# Logs go to target/campaign/. Minimise the corpora afterwards (README).
set -uo pipefail
cd "$(dirname "$0")"
seconds="${CAMPAIGN_SECONDS:-600}"
parallel="${CAMPAIGN_PARALLEL:-2}"
build=(-O -a -s none)
cargo fuzz build "${build[@]}" || exit 1
targets="${*:-$(cargo fuzz list)}"
mkdir -p target/campaign
one() {
  t="$1"
  log="target/campaign/$t.log"
  mkdir -p "corpus/$t" "artifacts/$t"
  rc=0
  cargo fuzz run "${build[@]}" "$t" "corpus/$t" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="artifacts/$t/" >"$log" 2>&1 || rc=$?
  stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
  verdict=ok
  grep -q "Test unit written to" "$log" && verdict="FAILED: $(grep -m1 -oE 'ERROR: libFuzzer: (deadly signal|timeout|out-of-memory)|panicked at [^ ]*' "$log")"
  echo "$t executions=$(stat number_of_executed_units) seconds=$(sed -n "s/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p" "$log" | tail -1) exec_per_s=$(stat average_exec_per_sec) peak_rss_mb=$(stat peak_rss_mb) exit=$rc $verdict"
}
export -f one
export seconds
export build_s="${build[*]}"
for t in $targets; do echo "$t"; done |
  xargs -P "$parallel" -I{} bash -c 'build=($build_s); one {}'

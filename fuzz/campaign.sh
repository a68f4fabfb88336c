#!/usr/bin/env bash
# The fuzz campaign (fuzz/README.md): every target (or those named) fuzzed
# into its working corpus, corpus/<target>/ (git-ignored, filled by
# `python3 seed.py`, which unpacks the committed seeds into it; it grows).
# Each target runs for CAMPAIGN_SECONDS (default 600) or, when
# CAMPAIGN_RUNS is set, for that many executions (then CAMPAIGN_SECONDS, if
# set, is a time limit as well), CAMPAIGN_PARALLEL (default 2) targets at a
# time, one job each. Prints a line per target: executions, seconds, exec/s,
# final coverage (libFuzzer's cov and ft, the corpus it kept, the files in
# corpus/<target>/), peak RSS, and whether it crashed, timed out or ran out
# of memory (reproducers in artifacts/<target>/). Logs go to
# target/campaign/. Minimise the corpora afterwards and refresh the seeds
# (README).
#
#   bash campaign.sh                               # every target, 600 s each
#   CAMPAIGN_RUNS=9000000 CAMPAIGN_PARALLEL=1 bash campaign.sh   # 9 × 10^6 executions each
#   bash campaign.sh wire_decode json_text         # some targets only
set -uo pipefail
cd "$(dirname "$0")"
runs="${CAMPAIGN_RUNS:-}"
if [ -n "$runs" ]; then
  limits="-runs=$runs -max_total_time=${CAMPAIGN_SECONDS:-0}"
else
  limits="-max_total_time=${CAMPAIGN_SECONDS:-600}"
fi
parallel="${CAMPAIGN_PARALLEL:-2}"
build=(-O -a -s none)
cargo fuzz build "${build[@]}" || exit 1
targets="${*:-$(cargo fuzz list)}"
mkdir -p target/campaign
one() {
  t="$1"
  log="target/campaign/$t.log"
  mkdir -p "corpus/$t" "artifacts/$t"
  [ -n "$(ls -A "corpus/$t")" ] || echo "$t: corpus/$t is empty (python3 seed.py fills it)" >&2
  rc=0
  # shellcheck disable=SC2086
  cargo fuzz run "${build[@]}" "$t" "corpus/$t" -- \
    $limits -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="artifacts/$t/" >"$log" 2>&1 || rc=$?
  stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
  # libFuzzer's last status line: "#N DONE cov: C ft: F corp: K/SIZE ...".
  last="$(grep -E '^#[0-9]+[[:space:]]+[A-Z]+ ' "$log" | tail -1)"
  field() { sed -n "s/.* $1: \([^ ]*\).*/\1/p" <<<"$last"; }
  verdict=ok
  grep -q "Test unit written to" "$log" && verdict="FAILED: $(grep -m1 -oE 'ERROR: libFuzzer: (deadly signal|timeout|out-of-memory)|panicked at [^ ]*' "$log")"
  echo "$t executions=$(stat number_of_executed_units) seconds=$(sed -n "s/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p" "$log" | tail -1) exec_per_s=$(stat average_exec_per_sec) cov=$(field cov) ft=$(field ft) corp=$(field corp) files=$(find "corpus/$t" -type f | wc -l) peak_rss_mb=$(stat peak_rss_mb) exit=$rc $verdict"
}
export -f one
export limits
export build_s="${build[*]}"
for t in $targets; do echo "$t"; done |
  xargs -P "$parallel" -I{} bash -c 'build=($build_s); one {}'

#!/usr/bin/env bash
# A short run of every fuzz target on its committed seeds (fuzz/README.md):
# each target replays fuzz/seeds/<target>.seeds (unpacked by seed.py into a
# scratch directory) and then fuzzes for
# SMOKE_SECONDS (default 30) from a fixed seed. Fails (exit 1) on any
# crash, timeout (an input running over 10 s) or OOM (over 2 GiB). Needs
# only what a clone has: the working corpora (fuzz/corpus/, git-ignored,
# seed.py and campaign.sh's) are neither read nor written.
#
#   bash fuzz/smoke.sh                    # every target, 30 s each
#   SMOKE_SECONDS=5 bash fuzz/smoke.sh    # shorter
#   bash fuzz/smoke.sh wire_decode json_text   # some targets only
#
# Needs python3 and a C++ compiler (libfuzzer-sys builds libFuzzer); installs
# cargo-fuzz, pinned, from crates.io when it is missing. No nightly
# toolchain: without a sanitizer (`-s none`) cargo fuzz's instrumentation
# flags are stable rustc's. New inputs go
# to a scratch directory: the committed seeds are not changed. Crash
# reproducers are written to $SMOKE_ARTIFACTS (default: a scratch
# directory, printed).
set -euo pipefail

CARGO_FUZZ_VERSION=0.13.2
seconds="${SMOKE_SECONDS:-30}"
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

if [ "$(cargo fuzz --version 2>/dev/null || true)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
  cargo install --locked cargo-fuzz --version "$CARGO_FUZZ_VERSION"
fi

if [ "$#" -gt 0 ]; then
  targets="$*"
else
  targets="$(cargo fuzz list)"
fi
# One build for every target, the campaign's (README.md): optimised, with
# debug assertions and overflow checks, no sanitizer (the code fuzzed has no
# `unsafe`).
build=(-O -a -s none)
cargo fuzz build "${build[@]}"

artifacts="${SMOKE_ARTIFACTS:-$(mktemp -d)}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
python3 seed.py --unpack "$scratch/seeds" >/dev/null
failed=""
for t in $targets; do
  mkdir -p "$scratch/$t" "$artifacts/$t"
  log="$scratch/$t.log"
  seeds=()
  if [ -d "$scratch/seeds/$t" ]; then seeds=("$scratch/seeds/$t"); else echo "note: no seeds/$t.seeds: fuzzing $t from nothing"; fi
  rc=0
  # New inputs go to the first directory (scratch); the seeds are read only.
  cargo fuzz run "${build[@]}" "$t" "$scratch/$t" "${seeds[@]}" -- \
    -max_total_time="$seconds" -seed=1 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$t/" >"$log" 2>&1 || rc=$?
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  if [ "$rc" -ne 0 ] || grep -qE '^SUMMARY: libFuzzer|ERROR: libFuzzer|^==[0-9]+== ERROR' "$log"; then
    echo "FAIL $t (exit $rc)"
    grep -E 'panicked at|^SUMMARY|ERROR: libFuzzer|Test unit written to' "$log" | head -20 || true
    tail -n 40 "$log"
    failed="$failed $t"
  else
    echo "ok   $t: ${execs:-?} executions in ${seconds} s"
  fi
done
if [ -n "$failed" ]; then
  echo "fuzz/smoke.sh: failed:$failed (reproducers in $artifacts)" >&2
  exit 1
fi
echo "fuzz/smoke.sh: every target passed"

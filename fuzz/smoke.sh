#!/usr/bin/env bash
# A short, deterministic run of every fuzz target (CI's): each replays its
# committed corpus, then fuzzes SMOKE_RUNS inputs from a fixed seed, so the
# same commit gives the same run. Fails on any crash, timeout or OOM.
#
#   fuzz/smoke.sh            SMOKE_RUNS=20000 by default
#
# Needs the nightly toolchain (`cargo +nightly`; cargo-fuzz is installed
# here, pinned, when missing). Under CI=true a missing nightly fails;
# otherwise it skips with a message.
set -euo pipefail
cd "$(dirname "$0")"
runs="${SMOKE_RUNS:-20000}"
if ! cargo +nightly --version >/dev/null 2>&1; then
  if [ "${CI:-}" = "true" ]; then
    echo "fuzz/smoke.sh: no nightly toolchain (cargo +nightly), which cargo fuzz needs" >&2
    exit 1
  fi
  echo "fuzz/smoke.sh: skipped: no nightly toolchain" >&2
  exit 0
fi
if [ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz 0.13.2" ]; then
  cargo install --locked cargo-fuzz --version 0.13.2
fi
targets=$(cargo +nightly fuzz list | grep -v make_wire_seeds)
cargo +nightly fuzz build -O
for t in $targets; do
  mkdir -p "corpus/$t"
  # A scratch copy: the smoke run must not grow the committed corpus.
  scratch="$(mktemp -d)"
  cp -r "corpus/$t/." "$scratch/"
  echo "== $t"
  rc=0
  cargo +nightly fuzz run -O "$t" "$scratch" -- \
    -seed=1 -runs="$runs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    >"$scratch.log" 2>&1 || rc=$?
  grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|SUMMARY|Done)|panicked" "$scratch.log" || true
  [ "$rc" -eq 0 ] || tail -40 "$scratch.log"
  rm -rf "$scratch" "$scratch.log"
  [ "$rc" -eq 0 ] || { echo "fuzz/smoke.sh: $t failed (exit $rc)" >&2; exit 1; }
done
echo "fuzz smoke: every target passed"

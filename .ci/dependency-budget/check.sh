#!/usr/bin/env bash
# The dependency budget (docs/development.md, "Dependencies"): the crates
# the shipped binary is built from — `cargo tree -e normal`, each name and
# version once, toolscore itself left out — number at most BUDGET. Growing
# past it is a decision: raise BUDGET here in the same change, and say why
# in its commit. Build and dev dependencies (tests, benches, build scripts)
# are not counted.
#
#   bash .ci/dependency-budget/check.sh      # prints the count; exit 1 over budget
set -euo pipefail
cd "$(dirname "$0")/../.."

BUDGET=215
crates=$(cargo tree --locked -e normal --prefix none \
  | awk '$1 != "toolscore" { print $1, $2 }' | sort -u)
count=$(printf '%s\n' "$crates" | grep -c .)
if [ "$count" -gt "$BUDGET" ]; then
  echo "dependency budget: $count runtime crates, over the budget of $BUDGET." >&2
  echo "Drop a dependency, or raise BUDGET in .ci/dependency-budget/check.sh saying why." >&2
  exit 1
fi
echo "dependency budget: $count runtime crates (budget $BUDGET)"

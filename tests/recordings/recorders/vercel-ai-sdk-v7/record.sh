#!/usr/bin/env bash
# A Node recorder (see tests/recordings/README.md, "Adding a recorder"). Normally run by
# tests/recordings/record.sh, with the stub environment exported and $VENV_DIR set:
#
#   record.sh [scenario...]   install package-lock.json into $VENV_DIR (npm ci, only when the lock changed)
#                             and record every scenario (or the named ones) into fixtures/<recorder>/
#   record.sh --lock          re-resolve package.json -> package-lock.json (newest versions that run on
#                             this Node; npm skips releases whose "engines" exclude it)
#
# node_modules lives in $VENV_DIR (target/tmp/recordings/venvs/<recorder>), never in the source tree:
# package.json and package-lock.json are copied there and the scripts are run with NODE_PATH pointing at
# it (the scripts are CommonJS, so NODE_PATH applies). Without $STUB_MODEL_URL a stub is started here.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NAME="$(basename "$HERE")"
RECORDINGS="$(cd "$HERE/../.." && pwd)"
ROOT="$(cd "$RECORDINGS/../.." && pwd)"
NODE_DIR="${VENV_DIR:-$ROOT/target/tmp/recordings/venvs/$NAME}"
PYTHON="${RECORDING_PYTHON:-python3}"
mkdir -p "$NODE_DIR"

stamp() { cat "$HERE/package.json" "$HERE/package-lock.json" | sha256sum | cut -c1-64; }

if [[ "${1:-}" == "--lock" ]]; then
  echo "[$NAME] resolving package.json with $(node --version), npm $(npm --version)"
  rm -rf "$NODE_DIR/node_modules" "$NODE_DIR/package-lock.json"
  cp "$HERE/package.json" "$NODE_DIR/"
  (cd "$NODE_DIR" && npm install --no-audit --no-fund --loglevel=warn)
  cp "$NODE_DIR/package-lock.json" "$HERE/package-lock.json"
  stamp > "$NODE_DIR/.lock-sha256"
  (cd "$NODE_DIR" && npm ls --depth=0)
  exit 0
fi

[[ -f "$HERE/package-lock.json" ]] || { echo "no $HERE/package-lock.json (run: record.sh --lock $NAME)" >&2; exit 1; }
if [[ "$(cat "$NODE_DIR/.lock-sha256" 2>/dev/null)" != "$(stamp)" ]]; then
  echo "[$NAME] installing node_modules from package-lock.json"
  rm -rf "$NODE_DIR/node_modules"
  cp "$HERE/package.json" "$HERE/package-lock.json" "$NODE_DIR/"
  (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=warn)
  stamp > "$NODE_DIR/.lock-sha256"
fi

STUB_PID=""
cleanup() { [[ -n "$STUB_PID" ]] && kill "$STUB_PID" 2>/dev/null || true; }
trap cleanup EXIT
if [[ -z "${STUB_MODEL_URL:-}" ]]; then
  rm -f "$NODE_DIR/stub.out"
  "$PYTHON" "$RECORDINGS/stub_model.py" --port 0 > "$NODE_DIR/stub.out" &
  STUB_PID=$!
  for _ in $(seq 100); do grep -q STUB_PORT "$NODE_DIR/stub.out" 2>/dev/null && break; sleep 0.1; done
  eval "$("$PYTHON" "$RECORDINGS/harness.py" --env "http://127.0.0.1:$(sed -n 's/^STUB_PORT=//p' "$NODE_DIR/stub.out")")"
fi

# the common scenario, from harness.py (plan, prompt, tool docstrings and JSON schemas)
export RECORDING_COMMON_JSON="$NODE_DIR/common.json"
"$PYTHON" - "$RECORDINGS" > "$RECORDING_COMMON_JSON" <<'EOF'
import json, sys
sys.path.insert(0, sys.argv[1])
import harness
print(json.dumps({"plan": harness.COMMON_PLAN, "prompt": harness.USER_PROMPT,
                  "tools": [{"name": f.__name__, "description": f.__doc__, "parameters": harness.TOOL_SCHEMAS[f.__name__]}
                            for f in harness.COMMON_TOOLS]}))
EOF
export RECORDING_OUT="$NODE_DIR/out"
export NODE_PATH="$NODE_DIR/node_modules"
export NODE_OPTIONS="${NODE_OPTIONS:-} --no-deprecation"
mkdir -p "$RECORDING_OUT"

if (( $# )); then SCENARIOS=("$@"); else mapfile -t SCENARIOS < <(node "$HERE/record.cjs" --list); fi
FAILED=()
for s in "${SCENARIOS[@]}"; do
  rm -f "$RECORDING_OUT/$s.calls.json" "$RECORDING_OUT/$s.meta.json"
  if node "$HERE/record.cjs" "$s" \
     && "$PYTHON" "$RECORDINGS/harness.py" --finish "$RECORDINGS/fixtures/$NAME/$s" \
          "$RECORDING_OUT/$s.calls.json" "$RECORDING_OUT/$s.meta.json" | sed "s|^|[$NAME/$s] |"; then
    :
  else
    FAILED+=("$s")
  fi
done
if (( ${#FAILED[@]} )); then echo "[$NAME] failed scenarios: ${FAILED[*]}" >&2; exit 1; fi

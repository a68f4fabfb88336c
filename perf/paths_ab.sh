#!/usr/bin/env bash
# The offline paths' A/B: `toolscore eval` and `POST /v1/evaluate`, each
# build in turn (ROUNDS times, alternately), pinned to CPU 0, on the UiPath
# weather example (examples/uipath-weather-tools: its eval set, its five
# traces; no model provider, so its LLM judge is skipped).
#   eval      the five traces copied COPIES times (800 by default, each
#             copy with trace IDs of its own) into one file: wall time of
#             `toolscore eval`, and whether every build wrote the same
#             results file
#   evaluate  `toolscore serve` (memory store) and one keep-alive client on
#             CPU 1 posting the five traces in turn for SECONDS: requests a
#             second and their p50/p99
#
#   perf/paths_ab.sh OLD_BINARY NEW_BINARY [...]
set -euo pipefail
cd "$(dirname "$0")/.."
(( $# >= 2 )) || { echo "usage: perf/paths_ab.sh BINARY BINARY [BINARY...]" >&2; exit 2; }
ROUNDS=${ROUNDS:-5}
COPIES=${COPIES:-800}
SECONDS_EACH=${SECONDS_EACH:-8}
EXAMPLE=examples/uipath-weather-tools
WORK=$(mktemp -d /tmp/toolscore-paths.XXXXXX)
API=127.0.0.1:18080
PID=
trap '[[ -n "$PID" ]] && kill "$PID" 2>/dev/null; true' EXIT

python3 - "$EXAMPLE/traces.jsonl" "$COPIES" "$WORK/traces.jsonl" <<'PY'
import sys
src, copies, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
lines = open(src).read().splitlines()
prefix = '"traceId":"0000000000000000000000005ea7'
assert all(prefix in l for l in lines), "the example's trace IDs changed"
with open(out, "w") as f:
    for i in range(copies):
        for l in lines:
            f.write(l.replace(prefix, '"traceId":"%016x000000005ea7' % (i + 1)) + "\n")
PY
sed -e "s|\[eval-set/evaluators/\*.json\]|[$PWD/$EXAMPLE/evaluations/evaluators/*.json]|" \
    -e "s|\[eval-set/eval-sets/\*.json\]|[$PWD/$EXAMPLE/evaluations/eval-sets/*.json]|" \
    -e "s|^  backend: sqlite|  backend: memory|" perf/config.yaml >"$WORK/config.yaml"
grep -q "$EXAMPLE/evaluations/evaluators" "$WORK/config.yaml" || { echo "paths_ab.sh: perf/config.yaml's evaluator files line changed" >&2; exit 1; }

for round in $(seq "$ROUNDS"); do
  for i in $(seq "$#"); do
    bin=${!i}
    start=$(date +%s.%N)
    env -u OPENAI_API_KEY -u UIPATH_URL taskset -c 0 "$bin" eval \
      --eval-set "$EXAMPLE/evaluations/eval-sets/default.json" \
      --traces "$WORK/traces.jsonl" --output "$WORK/results-$i.json" 2>/dev/null || true
    end=$(date +%s.%N)
    echo "eval build $i ($bin) round $round: $(python3 -c "print(f'{$end - $start:.3f}')") s"

    env -u OPENAI_API_KEY -u UIPATH_URL taskset -c 0 "$bin" serve --config "$WORK/config.yaml" >"$WORK/serve-$i.log" 2>&1 &
    PID=$!
    for _ in $(seq 200); do curl -fs "http://$API/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
    echo "evaluate build $i round $round: $(taskset -c 1 python3 - "$API" "$SECONDS_EACH" "$EXAMPLE/traces.jsonl" <<'PY'
import http.client, sys, time
host, port = sys.argv[1].split(":")
seconds, bodies = float(sys.argv[2]), open(sys.argv[3]).read().splitlines()
conn = http.client.HTTPConnection(host, int(port), timeout=10)
lat, i = [], 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    t = time.perf_counter()
    conn.request("POST", "/v1/evaluate", body=bodies[i % len(bodies)], headers={"content-type": "application/json"})
    r = conn.getresponse()
    body = r.read()
    if r.status != 200:
        sys.exit(f"{r.status}: {body[:300]!r}")
    lat.append((time.perf_counter() - t) * 1000)
    i += 1
lat.sort()
print(f"{len(lat) / seconds:.0f} requests/s, p50 {lat[len(lat) // 2]:.3f} ms p99 {lat[int(len(lat) * 0.99)]:.3f} ms")
PY
)"
    kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
  done
done
for i in $(seq 2 "$#"); do
  cmp -s "$WORK/results-1.json" "$WORK/results-$i.json" \
    && echo "eval: build $i wrote the same results as build 1" \
    || echo "eval: build $i wrote DIFFERENT results from build 1"
done
echo "runs in $WORK" >&2

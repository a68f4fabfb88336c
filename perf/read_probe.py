#!/usr/bin/env python3
"""Reads while perf/ab.sh ingests (READS=1): for SECONDS, `GET
/traces/{id}/scores` of the traces evaluated last (the list re-read each
second) back to back, and the UI's overview (`GET /ui/`) every tenth
request, on one keep-alive connection; prints each one's p50, p99 and max.

    perf/read_probe.py API_URL SECONDS
"""
import http.client
import json
import sys
import time
import urllib.parse

api, seconds = sys.argv[1], float(sys.argv[2])
u = urllib.parse.urlparse(api)
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)


def get(path):
    t0 = time.perf_counter()
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    return (time.perf_counter() - t0) * 1000, r.status, body


ids, lat, failed = [], {"scores": [], "overview": []}, {}
end = time.monotonic() + seconds
refreshed = 0.0
i = 0
while time.monotonic() < end:
    if time.monotonic() - refreshed > 1.0 or not ids:
        _, status, body = get("/traces?limit=50&status=evaluated")
        if status == 200:
            ids = [t["trace_id"] for t in json.loads(body)["traces"]] or ids
        refreshed = time.monotonic()
        if not ids:
            continue
    i += 1
    kind, path = ("overview", "/ui/") if i % 10 == 0 else ("scores", f"/traces/{ids[i % len(ids)]}/scores")
    ms, status, _ = get(path)
    if status == 200:
        lat[kind].append(ms)
    else:
        failed[f"{kind} {status}"] = failed.get(f"{kind} {status}", 0) + 1


def q(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


print(
    ", ".join(
        f"{k} p50 {q(v, 0.5):.2f} ms p99 {q(v, 0.99):.2f} ms max {max(v, default=float('nan')):.1f} ms ({len(v)})"
        for k, v in lat.items()
    )
    + (", failed: " + ", ".join(f"{n} {k}" for k, n in failed.items()) if failed else ", 0 failed")
)

#!/usr/bin/env python3
"""perf/intake_ab.sh's report.

    intake_summary.py run NAME MODE ROUND PREFIX EVALUATED
        one run: reads PREFIX.max.json (and PREFIX.open.json if there), prints
        one line (parsed back by `summary`)
    intake_summary.py summary RESULTS
        per binary and mode: the median of each figure over the rounds, and
        the issue's targets for the new binary against the base one
"""
import json
import os
import re
import statistics
import sys

# The open-loop runs' rate: OPEN_RATE for both binaries (perf/intake_ab.sh),
# or each closed-loop run's own mean × 0.8.
OPEN = f"{os.environ['OPEN_RATE']} spans/s" if os.environ.get("OPEN_RATE") else "80 %"


def run(name, mode, rnd, prefix, evaluated, evaluated_rate):
    g = json.load(open(prefix + ".max.json"))
    per_sec = g.get("accepted_spans_per_second", [])
    mean = statistics.mean(per_sec) if per_sec else 0.0
    low = min(per_sec) if per_sec else 0
    lat = g["latency_ms"]
    refused = sum(g.get("spans_rejected_by_status", {}).values())
    # Requests are taken or refused whole: traces in accepted requests.
    accepted_traces = (
        g["spans_accepted"] // g["spans_per_request"] * g["traces_per_request"]
    )
    line = (
        f"{name} {mode} round {rnd}: mean {mean:.0f} evaluated/s {evaluated_rate} min {low:.0f} "
        f"min/mean {low / mean if mean else 0:.2f} p50 {lat['p50']:.1f} "
        f"p99 {lat['p99']:.1f} max {lat['max']:.1f} ms refused {refused} "
        f"evaluated {int(float(evaluated))} of {accepted_traces}"
    )
    if os.path.exists(prefix + ".open.json"):
        o = json.load(open(prefix + ".open.json"))
        orefused = sum(o.get("spans_rejected_by_status", {}).values())
        line += (
            f" | open {o['accepted_spans_per_sec']:.0f}/s p99 "
            f"{o['latency_ms']['p99']:.1f} ms refused {orefused}"
        )
    line += f" | per second {' '.join(str(round(x / 1000)) + 'k' for x in per_sec)}"
    print(line)


FIELDS = re.compile(
    r"(\w+) (\w+) round \d+: mean (\d+) evaluated/s (\d+) min (\d+) min/mean ([\d.]+) p50 ([\d.]+) "
    r"p99 ([\d.]+) max ([\d.]+) ms refused (\d+) evaluated (\d+) of (\d+)"
    r"(?: \| open (\d+)/s p99 ([\d.]+) ms refused (\d+))?"
)


def summary(path):
    runs = {}
    for line in open(path):
        m = FIELDS.match(line)
        if m:
            runs.setdefault((m[1], m[2]), []).append(m)
    med = lambda ms, i: statistics.median(float(m[i]) for m in ms if m[i] is not None)
    table = {}
    for (name, mode), ms in sorted(runs.items()):
        t = {
            "mean": med(ms, 3),
            "evaluated": med(ms, 4),
            "min/mean": min(float(m[6]) for m in ms),
            "p99": max(float(m[8]) for m in ms),
            "max": max(float(m[9]) for m in ms),
            "refused": sum(int(m[10]) for m in ms),
            "all evaluated": all(int(m[11]) >= int(m[12]) for m in ms),
        }
        if any(m[13] for m in ms):
            t["open p99"] = max(float(m[14]) for m in ms if m[14])
            t["open refused"] = sum(int(m[15]) for m in ms if m[15])
        table[(name, mode)] = t
        print(
            f"{name} {mode} ({len(ms)} rounds): median accepted spans/s {t['mean']:.0f}, "
            f"evaluated spans/s {t['evaluated']:.0f}, "
            f"worst min/mean {t['min/mean']:.2f}, worst p99 {t['p99']:.0f} ms, "
            f"worst max {t['max']:.0f} ms, refused {t['refused']}, "
            f"every accepted trace evaluated: {t['all evaluated']}"
            + (
                f"; open loop at {OPEN}: worst p99 {t['open p99']:.0f} ms, refused {t['open refused']}"
                if "open p99" in t
                else ""
            )
        )
    new, base = table.get(("new", "quota")), table.get(("base", "quota"))
    if new and base:
        checks = [
            ("one CPU: min ≥ 50 % of mean", new["min/mean"] >= 0.5),
            ("one CPU: p99 ≤ 250 ms", new["p99"] <= 250),
            ("one CPU: mean accepted ≥ base's", new["mean"] >= base["mean"]),
            ("one CPU: mean evaluated ≥ base's", new["evaluated"] >= base["evaluated"]),
            ("one CPU open loop: p99 ≤ 100 ms", new.get("open p99", 1e9) <= 100),
            ("one CPU open loop: no refusals", new.get("open refused", 1) == 0),
            ("every accepted trace evaluated", new["all evaluated"]),
        ]
        n2, b2 = table.get(("new", "two")), table.get(("base", "two"))
        if n2 and b2:
            checks += [
                ("two cores: mean accepted ≥ base's", n2["mean"] >= b2["mean"]),
                ("two cores: mean evaluated ≥ base's", n2["evaluated"] >= b2["evaluated"]),
                ("two cores: p99 ≤ base's", n2["p99"] <= b2["p99"]),
                ("two cores: min/mean ≥ base's", n2["min/mean"] >= b2["min/mean"]),
            ]
        for what, ok in checks:
            print(f"  {'PASS' if ok else 'FAIL'}  {what}")


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(*sys.argv[2:8])
    else:
        summary(sys.argv[2])

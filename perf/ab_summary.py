#!/usr/bin/env python3
"""The A/B scripts' summary: per variant, the median of its rounds' evaluated
spans/s (lines "VARIANT round N: RATE evaluated spans/s ..." in RESULTS; the
bare receiver's "RATE received spans/s") and
its ratio to BASE's median.

    perf/ab_summary.py RESULTS BASE
"""
import re
import statistics
import sys

results, base_name = sys.argv[1], sys.argv[2]
runs = {}
for line in open(results):
    m = re.match(r"([\w@]+) round \d+: (\d+) (?:evaluated|received) spans/s", line)
    if m:
        runs.setdefault(m[1], []).append(int(m[2]))
base = statistics.median(runs.get(base_name, [0])) or None
for name, rates in runs.items():
    med = statistics.median(rates)
    ratio = f", {med / base:.0%} of {base_name}" if base else ""
    print(f"{name}: median {med:,.0f} spans/s ({min(rates):,}–{max(rates):,}){ratio}")

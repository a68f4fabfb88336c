#!/usr/bin/env python3
"""Check every fixture of the corpus (stdlib only): `python3 tests/recordings/check.py [recorder...]`.

OTLP/JSON shape (hex ids, decimal-string times, integer enums), fixture/truth pairing, the truth
format of README.md, and that every truth trace id occurs in its fixture."""

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from harness import FIXTURES, trace_ids, validate_otlp  # noqa: E402

APIS = {"chat_completions", "responses", "anthropic_messages"}
TOP = {"recorder", "scenario", "libraries", "api", "streamed", "content_captured", "notes", "traces", "other_traces"}
HEX32 = re.compile(r"^[0-9a-f]{32}$")


def check_truth(t, fixture_ids, where):
    p = []
    missing = TOP - set(t)
    if missing:
        p.append(f"{where}: truth lacks {sorted(missing)}")
    if t.get("api") not in APIS:
        p.append(f"{where}: api {t.get('api')!r}")
    if not t.get("traces"):
        p.append(f"{where}: no traces")
    for tid, calls in (t.get("traces") or {}).items():
        if not HEX32.match(tid):
            p.append(f"{where}: trace id {tid!r} is not 32 hex")
        elif tid not in fixture_ids:
            p.append(f"{where}: trace {tid} not in fixture")
        for c in calls:
            if not isinstance(c.get("name"), str) or not isinstance(c.get("args"), dict):
                p.append(f"{where}: call without name/args: {c}")
            if not (c.get("turn") is None or isinstance(c.get("turn"), int)):
                p.append(f"{where}: bad turn {c.get('turn')!r}")
            if ("output" in c) == ("error" in c):
                p.append(f"{where}: call {c.get('name')} needs exactly one of output/error")
    return p


def main():
    wanted = set(sys.argv[1:])
    problems, n = [], 0
    for d in sorted(FIXTURES.iterdir()) if FIXTURES.exists() else []:
        if not d.is_dir() or (wanted and d.name not in wanted):
            continue
        for fx in sorted(d.glob("*.otlp.json")):
            if fx.name.endswith(".logs.otlp.json"):
                continue
            n += 1
            name = fx.name[: -len(".otlp.json")]
            where = f"{d.name}/{name}"
            doc = json.loads(fx.read_text())
            problems += [f"{where}: {x}" for x in validate_otlp(doc, "spans")]
            logs = d / f"{name}.logs.otlp.json"
            if logs.exists():
                problems += [f"{where} logs: {x}" for x in validate_otlp(json.loads(logs.read_text()), "logs")]
            truth = d / f"{name}.truth.json"
            if not truth.exists():
                problems.append(f"{where}: no truth file")
                continue
            problems += check_truth(json.loads(truth.read_text()), trace_ids(doc), where)
        for truth in d.glob("*.truth.json"):
            if not (d / truth.name.replace(".truth.json", ".otlp.json")).exists():
                problems.append(f"{d.name}/{truth.name}: no fixture")
    for p in problems:
        print("PROBLEM", p)
    print(f"{n} fixtures checked, {len(problems)} problems")
    sys.exit(1 if problems or n == 0 else 0)


if __name__ == "__main__":
    main()

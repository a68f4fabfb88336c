#!/usr/bin/env python3
"""Compares the `json.loads` and `ast.literal_eval` ports with CPython on
the lines examples/py_reprs.rs prints (run it with python3.12, the version
the ports follow). Prints each input on which they differ (the repr, or
whether and how it fails) and a count; exits 1 if any differ.

    cargo +nightly run --release --example py_reprs -- corpus/py_literal_eval corpus/py_json_loads \\
        | python3.12 cpython_diff.py
"""
import ast
import json
import sys
import warnings

warnings.simplefilter("ignore")  # SyntaxWarning for invalid escapes, as the port ignores them
sys.setrecursionlimit(10000)
# Documented deviations of the ports (src/pyvalue/json.rs, literal.rs): not counted.
DEVIATIONS = ("surrogate", "Ellipsis", "\\N{")


def cpython(fn, text):
    try:
        return {"repr": repr(fn(text))}
    except RecursionError:
        return {"error": "RecursionError"}
    except MemoryError:
        return {"error": "MemoryError"}
    except json.JSONDecodeError:
        return {"error": "JSONDecodeError"}
    except Exception as e:  # SyntaxError, ValueError, TypeError, OverflowError
        return {"error": type(e).__name__}


def same(ours, theirs):
    if "repr" in ours or "repr" in theirs:
        return ours.get("repr") == theirs.get("repr")
    # Both failed: the kind must agree (literal_eval: SyntaxError / ValueError / TypeError).
    kinds = {ours["error"], theirs["error"]}
    return (len(kinds) == 1 or kinds <= {"JSONDecodeError", "ValueError"} or kinds <= {"ValueError", "OverflowError"}
            or "RecursionError" in kinds or "MemoryError" in kinds)


n = bad = 0
for line in sys.stdin:
    rec = json.loads(line)
    text = rec["text"]
    if any(d in text for d in DEVIATIONS) or "\ufffd" in rec["json"].get("repr", "") + rec["literal"].get("repr", ""):
        continue
    n += 1
    for name, fn in (("json", json.loads), ("literal", ast.literal_eval)):
        theirs = cpython(fn, text)
        if not same(rec[name], theirs):
            bad += 1
            print(f"{name} {rec['file']}: {text[:200]!r}\n  ours:    {rec[name]}\n  CPython: {theirs}")
print(f"{n} inputs, {bad} differences", file=sys.stderr)
sys.exit(1 if bad else 0)

#!/usr/bin/env python3
"""Record deepeval 4.3.1 "tool-correctness-llm" conformance cases against the shared stub LLM.

Driver (system python3 is fine; it only uses the stdlib):
    python3 record.py --in SPECS.jsonl --out OUT.jsonl [--compare] [--only ID[,ID...]]

  * starts ../shared/tools/stub-llm/stub_llm.py (beside the repository) as a separate process on a free loopback port;
  * for each case: POST /_stub/script with the case's `llm` script, then runs a fresh worker
    process (this file, --worker) under `setarch -R` (ASLR off) with PYTHONHASHSEED=0, which
    builds the deepeval test case + metric and calls metric.measure(); then GET /_stub/requests;
  * writes each case with its recorded `expected` (json.dumps(..., ensure_ascii=False), like the
    shared cases.jsonl); with --compare, compares the new `expected` with the one already in the
    input line (byte-for-byte, after the same serialisation) and reports matches / diffs.

Worker (needs the venv with deepeval==4.3.1):
    VENV_PY record.py --worker < case.json    (STUB_BASE env = http://127.0.0.1:PORT)
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STUB = os.environ.get("REC_STUB", os.path.join(REPO, "..", "shared", "tools", "stub-llm", "stub_llm.py"))
VENV_PY = os.environ.get("REC_VENV_PY", "venv/bin/python")
HERE = os.path.abspath(__file__)
MARK = "@@RESULT@@"


# --------------------------------------------------------------------------- worker
def _parse_args(value):
    """uipath's rule for tool-call args (SEMANTICS.md §1.2): JSON, then Python literal, else {}."""
    import ast

    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        return {}
    try:
        parsed = json.loads(value)
    except (json.JSONDecodeError, ValueError):
        try:
            parsed = ast.literal_eval(value)
        except (SyntaxError, ValueError):
            return {}
    return parsed if isinstance(parsed, dict) else {}


def _truthy(v):
    return bool(v)


def derive(spans):
    """tools_called per DESIGN.md §2: tool spans sorted by (start, end, span_id)."""
    tools = [
        s
        for s in spans
        if _truthy(s["attributes"].get("tool.name")) and not _truthy(s["attributes"].get("tool.synthesized"))
    ]
    tools.sort(key=lambda s: (s["start_time_unix_nano"], s["end_time_unix_nano"], s["span_id"]))
    calls = []
    for s in tools:
        a = s["attributes"]
        calls.append(
            {
                "name": str(a["tool.name"]),
                "input_parameters": _parse_args(a.get("input.value")),
                "output": a.get("output.value"),
            }
        )
    root = [s for s in spans if s.get("parent_span_id") is None][0]
    inp = root["attributes"].get("input.value")
    inp = "" if inp is None else inp
    return calls, inp


def worker():
    case = json.loads(sys.stdin.read())
    base = os.environ["STUB_BASE"]
    cfg = case["evaluator"]["config"]
    calls, inp = derive(case["spans"])
    derived = {"tools_called": calls, "input": inp}
    result = {"score": None, "details": None, "error": None, "score_type": None, "derived": derived}
    try:
        from deepeval.metrics import ToolCorrectnessMetric
        from deepeval.models import GPTModel
        from deepeval.test_case import LLMTestCase, ToolCall, ToolCallParams

        crit = case.get("criteria")
        expected_tools = None
        if crit is not None and crit.get("expected_tools") is not None:
            expected_tools = [ToolCall(**t) for t in crit["expected_tools"]]
        tc = LLMTestCase(
            input=inp,
            actual_output="",
            tools_called=[ToolCall(**c) for c in calls],
            expected_tools=expected_tools,
        )
        model = GPTModel(
            model=cfg["model"],
            api_key="sk-stub",
            base_url=base + "/v1",
            temperature=cfg.get("temperature"),
        )
        kwargs = dict(
            should_consider_ordering=cfg["should_consider_ordering"],
            should_exact_match=cfg["should_exact_match"],
            evaluation_params=[ToolCallParams(p) for p in cfg["evaluation_params"]],
            strict_mode=cfg["strict_mode"],
            async_mode=cfg["async_mode"],
            model=model,
        )
        if "threshold" in cfg:
            kwargs["threshold"] = cfg["threshold"]
        if "available_tools" in cfg:  # absent key => available_tools=None (constructor default)
            kwargs["available_tools"] = [ToolCall(**t) for t in cfg["available_tools"]]
        metric = ToolCorrectnessMetric(**kwargs)
        metric.measure(tc, _show_indicator=False)
        # the shared cases store the score as a float (int 0 -> 0.0); score_is_int keeps the type
        result["score"] = float(metric.score) if metric.score is not None else None
        result["details"] = {
            "reason": metric.reason,
            "success": metric.success,
            "threshold": metric.threshold,
            "score_is_int": isinstance(metric.score, int),
            "verbose_logs": metric.verbose_logs,
            "evaluation_cost": metric.evaluation_cost,
        }
        result["score_type"] = "numerical"
    except Exception as e:  # noqa: BLE001 - record whatever the reference raised
        result["score"] = None
        result["details"] = None
        result["score_type"] = None
        result["error"] = f"{type(e).__name__}: {e}"
    sys.stdout.write("\n" + MARK + json.dumps(result, ensure_ascii=False) + "\n")
    sys.stdout.flush()


# --------------------------------------------------------------------------- driver
def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def _http(method, url, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def _sub_port(obj, port):
    s = json.dumps(obj, ensure_ascii=False)
    s = s.replace(f"127.0.0.1:{port}", "127.0.0.1:{STUB_PORT}")
    return json.loads(s)


def record_one(case, port):
    base = f"http://127.0.0.1:{port}"
    _http("POST", base + "/_stub/script", {"responses": case["llm"]["responses"], "discovery": case["llm"].get("discovery", [])})
    env = dict(os.environ)
    env.update(
        {
            "PYTHONHASHSEED": "0",
            "STUB_BASE": base,
            "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
            "DEEPEVAL_GRPC_LOGGING": "0",
            "OPENAI_API_KEY": "sk-stub",
            "TZ": "UTC",
        }
    )
    for k in ("OPENAI_BASE_URL", "DEEPEVAL_EVAL_MODE", "TEMPERATURE", "OPENAI_MODEL_NAME"):
        env.pop(k, None)
    spec = {k: case[k] for k in ("id", "evaluator", "spans", "criteria")}
    cmd = ["setarch", os.uname().machine, "-R", VENV_PY, HERE, "--worker"]
    p = subprocess.run(cmd, input=json.dumps(spec), capture_output=True, text=True, env=env, cwd=os.environ.get("REC_CWD", "work"), timeout=600)
    out = [l for l in p.stdout.splitlines() if l.startswith(MARK)]
    if not out:
        raise RuntimeError(f"worker failed for {case['id']}: rc={p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}")
    res = json.loads(out[-1][len(MARK):])
    reqs = _http("GET", base + "/_stub/requests")["requests"]
    res["requests"] = [{k: r[k] for k in ("method", "path", "query", "headers", "body")} for r in reqs]
    return _sub_port(res, port)


def driver(args):
    os.makedirs(os.environ.get("REC_CWD", "work"), exist_ok=True)
    cases = [json.loads(l) for l in open(args.inp, encoding="utf-8") if l.strip()]
    cases = [c for c in cases if c["evaluator"]["type"] == "tool-correctness-llm"]
    if args.only:
        want = set(args.only.split(","))
        cases = [c for c in cases if c["id"] in want]
    port = _free_port()
    stub = subprocess.Popen([sys.executable, STUB, "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            try:
                _http("GET", f"http://127.0.0.1:{port}/_stub/requests")
                break
            except Exception:
                time.sleep(0.1)
        out = open(args.out, "w", encoding="utf-8") if args.out else None
        n_ok = n_bad = 0
        for c in cases:
            exp = record_one(c, port)
            if args.compare and "expected" in c:
                old = json.dumps(c["expected"], ensure_ascii=False)
                new = json.dumps(exp, ensure_ascii=False)
                if old == new:
                    n_ok += 1
                    print(f"MATCH  {c['id']}", flush=True)
                else:
                    n_bad += 1
                    print(f"DIFF   {c['id']}", flush=True)
                    for k in exp:
                        if json.dumps(exp[k], ensure_ascii=False) != json.dumps(c["expected"].get(k), ensure_ascii=False):
                            print(f"   key {k}:\n     old={json.dumps(c['expected'].get(k), ensure_ascii=False)[:600]}\n     new={json.dumps(exp[k], ensure_ascii=False)[:600]}")
            else:
                print(f"REC    {c['id']}  score={exp['score']!r} error={(exp['error'] or '')[:120]!r}", flush=True)
            line = {"id": c["id"], "evaluator": c["evaluator"], "spans": c["spans"], "criteria": c["criteria"], "llm": c["llm"], "expected": exp, "tags": c.get("tags", [])}
            if out:
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
        if out:
            out.close()
        if args.compare:
            print(f"{n_ok} matched, {n_bad} differed")
    finally:
        stub.terminate()
        stub.wait(timeout=10)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--in", dest="inp")
    ap.add_argument("--out")
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--only")
    a = ap.parse_args()
    if a.worker:
        worker()
    else:
        driver(a)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Builds the seed corpora in fuzz/corpus/<target>/ from the conformance
cases (../../shared/conformance/cases.jsonl, or $TOOLSCORE_CONFORMANCE_CASES)
and the repository's own files. The protobuf seeds for wire_decode come from
the OTLP/JSON ones: `cargo +nightly run --bin make_wire_seeds` (see README)."""
import hashlib, json, os, pathlib, sys

here = pathlib.Path(__file__).resolve().parent
repo = here.parent
cases_file = pathlib.Path(os.environ.get(
    "TOOLSCORE_CONFORMANCE_CASES", repo.parent / "shared/conformance/cases.jsonl"))
corpus = here / "corpus"

def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    d = corpus / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)

def otlp_json(spans):
    def value(v):
        if isinstance(v, bool): return {"boolValue": v}
        if isinstance(v, int): return {"intValue": str(v)}
        if isinstance(v, float): return {"doubleValue": v}
        return {"stringValue": str(v)}
    out = []
    for s in spans:
        o = {"traceId": s["trace_id"], "spanId": s["span_id"], "name": s["name"],
             "startTimeUnixNano": str(s["start_time_unix_nano"]),
             "endTimeUnixNano": str(s["end_time_unix_nano"]),
             "attributes": [{"key": k, "value": value(v)} for k, v in s.get("attributes", {}).items()]}
        if s.get("parent_span_id"):
            o["parentSpanId"] = s["parent_span_id"]
        out.append(o)
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": out}]}]})

cases = [json.loads(l) for l in cases_file.read_text().splitlines() if l.strip()]
for c in cases:
    put("otlp_json", otlp_json(c["spans"]))
    for s in c["spans"]:
        for v in s.get("attributes", {}).values():
            if isinstance(v, str) and v.strip():
                put("py_json_loads", v)
                put("py_literal_eval", v)
    ev = c["evaluator"]
    file = {"version": "1.0", "id": "E", "evaluatorTypeId": "uipath-" + ev["type"].removeprefix("uipath-"),
            "evaluatorConfig": dict(ev.get("config") or {}, name="E")}
    if "criteria" in c:
        file["evaluatorConfig"]["defaultEvaluationCriteria"] = c["criteria"]
    put("evaluator_file", json.dumps(file))
for f in (repo / "examples").rglob("*.json"):
    put("evaluator_file", f.read_text())
    put("py_json_loads", f.read_text())
for f in (repo / "examples").rglob("traces.jsonl"):
    for line in f.read_text().splitlines():
        if line.strip():
            put("otlp_json", line)
for f in list((repo / "config").glob("*.yaml")) + list((repo / "deploy/collector").glob("toolscore.yaml")):
    put("config_yaml", f.read_text())
for t in ["1.5", "-6.3603751849933156e+38", "113.45854122794005", "3.283440687306677e-299",
          "1e308", "2.2250738585072014e-308", "0.1", "9007199254740993.0", "4.9e-324", "1.7976931348623157e308"]:
    put("float_text", t)
print(f"seeds from {len(cases)} cases into {corpus}")

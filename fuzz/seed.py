#!/usr/bin/env python3
"""Builds the working corpora, fuzz/corpus/<target>/ (git-ignored: what the
campaign fuzzes into and grows), from

- the committed seeds, fuzz/seeds/<target>.seeds (`cargo fuzz cmin`'s
  result of the last campaign, and each finding's reproducer, packed one
  `<name> <base64>` line per input so that a clone carries 12 files, not
  thousands), unpacked under their own names;
- the conformance cases (../shared/conformance/cases.jsonl beside the
  repository, or $TOOLSCORE_CONFORMANCE_CASES; skipped with a note when
  absent) and the repository's own files: examples/, config/*.yaml, the Helm
  chart's CI values' `config:` parts, and the string fixtures in tests/;
  and a few inputs written by hand.

Generated inputs are named by their SHA-1, as libFuzzer names what it adds,
so running it again adds nothing twice. The protobuf seeds (wire_decode) are
encoded here, by a small encoder of the OTLP trace messages (no protobuf
package needed).

    python3 fuzz/seed.py              # fill (or top up) fuzz/corpus/
    python3 fuzz/seed.py --clean      # delete fuzz/corpus/ first: rebuild it
    python3 fuzz/seed.py --seeds-only # only unpack fuzz/seeds/ (nothing generated)
    python3 fuzz/seed.py --unpack DIR # only the seeds, into DIR/<target>/ (smoke.sh)
    python3 fuzz/seed.py --pack DIR   # DIR/<target>/* becomes fuzz/seeds/

then fuzz (campaign.sh), then `cargo fuzz cmin` and refresh fuzz/seeds/
(fuzz/README.md).
"""
import argparse
import base64
import hashlib
import json
import os
import pathlib
import re
import shutil
import struct

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
CASES = pathlib.Path(os.environ.get(
    "TOOLSCORE_CONFORMANCE_CASES", REPO.parent / "shared/conformance/cases.jsonl"))
CORPUS = HERE / "corpus"  # the working corpora (git-ignored)
SEEDS = HERE / "seeds"    # the committed, minimised seeds
counts = {}
copied = {}


def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    f = d / hashlib.sha1(data).hexdigest()
    if not f.exists():
        f.write_bytes(data)
        counts[target] = counts.get(target, 0) + 1


# --- OTLP: the cases' spans as OTLP/JSON, and as protobuf -------------------

def any_json(v):
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if v is None:
        return {}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [any_json(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": any_json(x)} for k, x in v.items()]}}
    if isinstance(v, bytes):
        return {"bytesValue": base64.b64encode(v).decode()}
    return {"stringValue": str(v)}


def otlp_span(s, extras=False):
    o = {"traceId": s["trace_id"], "spanId": s["span_id"], "name": s["name"],
         "startTimeUnixNano": str(s["start_time_unix_nano"]),
         "endTimeUnixNano": str(s["end_time_unix_nano"]),
         "attributes": [{"key": k, "value": any_json(v)} for k, v in (s.get("attributes") or {}).items()]}
    if s.get("parent_span_id"):
        o["parentSpanId"] = s["parent_span_id"]
    if extras:
        # The fields the decoder skips unread, so the fuzzer has them to mutate.
        o.update({"kind": 3, "traceState": "k=v", "flags": 1,
                  "events": [{"timeUnixNano": "1", "name": "e",
                              "attributes": [{"key": "a", "value": {"intValue": "1"}}]}],
                  "links": [{"traceId": s["trace_id"], "spanId": s["span_id"]}],
                  "status": {"code": 2, "message": "err"}})
    return o


def otlp_request(spans, service=None, extras=False):
    rs = {"scopeSpans": [{"scope": {"name": "fuzz", "version": "1"},
                          "spans": [otlp_span(s, extras) for s in spans]}]}
    if service is not None:
        rs["resource"] = {"attributes": [{"key": "service.name", "value": {"stringValue": service}},
                                         {"key": "host", "value": {"arrayValue": {"values": [{"intValue": "1"}]}}}]}
    return {"resourceSpans": [rs]}


def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, wt, payload):
    key = varint((num << 3) | wt)
    if wt == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def ln(num, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return field(num, 2, payload)


def pb_any(v):
    if "stringValue" in v:
        return ln(1, v["stringValue"])
    if "boolValue" in v:
        return field(2, 0, varint(int(v["boolValue"])))
    if "intValue" in v:
        return field(3, 0, varint(int(v["intValue"])))
    if "doubleValue" in v:
        return field(4, 1, struct.pack("<d", float(v["doubleValue"])))
    if "arrayValue" in v:
        return ln(5, b"".join(ln(1, pb_any(x)) for x in v["arrayValue"].get("values", [])))
    if "kvlistValue" in v:
        return ln(6, b"".join(ln(1, pb_kv(x)) for x in v["kvlistValue"].get("values", [])))
    if "bytesValue" in v:
        return ln(7, base64.b64decode(v["bytesValue"]))
    return b""


def pb_kv(kv):
    return ln(1, kv["key"]) + ln(2, pb_any(kv.get("value", {})))


def pb_span(s):
    out = ln(1, bytes.fromhex(s["traceId"])) + ln(2, bytes.fromhex(s["spanId"]))
    if s.get("traceState"):
        out += ln(3, s["traceState"])
    if s.get("parentSpanId"):
        out += ln(4, bytes.fromhex(s["parentSpanId"]))
    out += ln(5, s["name"])
    if s.get("kind"):
        out += field(6, 0, varint(s["kind"]))
    out += field(7, 1, struct.pack("<Q", int(s["startTimeUnixNano"])))
    out += field(8, 1, struct.pack("<Q", int(s["endTimeUnixNano"])))
    out += b"".join(ln(9, pb_kv(kv)) for kv in s.get("attributes", []))
    for e in s.get("events", []):
        out += ln(11, field(1, 1, struct.pack("<Q", int(e["timeUnixNano"]))) + ln(2, e["name"])
                  + b"".join(ln(3, pb_kv(kv)) for kv in e.get("attributes", [])))
    for link in s.get("links", []):
        out += ln(13, ln(1, bytes.fromhex(link["traceId"])) + ln(2, bytes.fromhex(link["spanId"])))
    if "status" in s:
        out += ln(15, ln(2, s["status"]["message"]) + field(3, 0, varint(s["status"]["code"])))
    if s.get("flags"):
        out += field(16, 5, struct.pack("<I", s["flags"]))
    return out


def pb_request(req):
    out = b""
    for rs in req["resourceSpans"]:
        body = b""
        if "resource" in rs:
            body += ln(1, b"".join(ln(1, pb_kv(kv)) for kv in rs["resource"]["attributes"]))
        for ss in rs.get("scopeSpans", []):
            sb = b""
            if "scope" in ss:
                sb += ln(1, ln(1, ss["scope"].get("name", "")) + ln(2, ss["scope"].get("version", "")))
            sb += b"".join(ln(2, pb_span(s)) for s in ss.get("spans", []))
            body += ln(2, sb)
        out += ln(1, body)
    return out


def put_trace(req):
    put("otlp_json", json.dumps(req))
    put("wire_decode", pb_request(req))


# --- the conformance cases --------------------------------------------------

UIPATH_EXAMPLE_ID = {"tool-call-count": "ToolCallCountEvaluator", "tool-call-order": "ToolCallOrderEvaluator",
                     "tool-call-args": "ToolCallArgsEvaluator", "tool-call-output": "ToolCallOutputEvaluator"}


def type_id(t):
    return "deepeval-tool-correctness" if t == "tool-correctness" else "uipath-" + t.removeprefix("uipath-")


def strings_in(v):
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for k, x in v.items():
            yield k
            yield from strings_in(x)
    elif isinstance(v, list):
        for x in v:
            yield from strings_in(x)


def numbers_in(v):
    if isinstance(v, bool):
        return
    if isinstance(v, (int, float)):
        yield v
    elif isinstance(v, dict):
        for x in v.values():
            yield from numbers_in(x)
    elif isinstance(v, list):
        for x in v:
            yield from numbers_in(x)


def seed_cases():
    if not CASES.exists():
        print(f"note: no conformance cases at {CASES}; seeding from the repository only")
        return
    lines = [l for l in CASES.read_text().splitlines() if l.strip()]
    for n, line in enumerate(lines):
        c = json.loads(line)
        ev, spans, criteria = c["evaluator"], c["spans"], c.get("criteria")
        service = ["weather-agent", None, "svc"][n % 3]
        req = otlp_request(spans, service, extras=(n % 10 == 0))
        put_trace(req)
        config = dict(ev.get("config") or {})
        # /v1/evaluate with the case's evaluator inline, and without (bound
        # as the service binds it).
        body = dict(req, evaluators=[{"id": "E", "type": ev["type"], "config": config}])
        if criteria is not None:
            body["criteria"] = {"E": criteria}
        put("api_evaluate", json.dumps(body))
        if n % 20 == 0:
            put("api_evaluate", json.dumps(req))
        # Tool-call arguments and outputs, and the reprs in expected details.
        for s in spans:
            for v in (s.get("attributes") or {}).values():
                if isinstance(v, str) and v.strip():
                    put("py_json_loads", v)
                    put("py_literal_eval", v)
                    put("json_text", v)
        details = (c.get("expected") or {}).get("details")
        if isinstance(details, dict):
            exp, act = details.get("expected"), details.get("actual")
            for r in (exp, act):
                if isinstance(r, str) and r:
                    put("py_literal_eval", r)
            if isinstance(exp, str) and isinstance(act, str):
                put("py_eq", exp + "\0" + act)
                put("py_eq", exp + "\0" + exp + "\0" + act)
            put("json_text", json.dumps(details, ensure_ascii=False))
        if criteria is not None:
            put("py_json_loads", json.dumps(criteria))
            put("json_text", json.dumps(criteria, ensure_ascii=False))
        for x in numbers_in([c.get("expected"), [s.get("attributes") for s in spans]]):
            put("float_text", repr(x) if isinstance(x, float) else str(x))
            put("float_text", json.dumps(x))
        # An evaluator file of the case's evaluator, its criteria the default.
        file = {"version": "1.0", "id": "E", "evaluatorTypeId": type_id(ev["type"]),
                "evaluatorConfig": dict(config, name="E")}
        if criteria is not None:
            file["evaluatorConfig"]["defaultEvaluationCriteria"] = criteria
        put("evaluator_file", json.dumps(file))
        # An eval set whose item gives the case's criteria to the example
        # evaluator of that type.
        if ev["type"] in UIPATH_EXAMPLE_ID and criteria is not None:
            eid = UIPATH_EXAMPLE_ID[ev["type"]]
            put("eval_set", json.dumps({"version": "1.0", "id": f"S{n}", "name": "S",
                                        "evaluatorRefs": [eid],
                                        "evaluations": [{"id": f"i{n}", "name": "i", "inputs": {},
                                                         "evaluationCriterias": {eid: criteria}}]}))
        # A config with the case's evaluator inline (YAML takes JSON).
        inline = {"id": "E", "type": ev["type"], "config": file["evaluatorConfig"], "apply_to_all_traces": True}
        put("config_yaml", json.dumps({"evaluators": {"inline": [inline]}}, indent=2))


# --- the repository's own files ----------------------------------------------

def rust_strings(text):
    """String literals of a Rust file: raw ones as written, plain ones
    with the common escapes undone (good enough for seeds)."""
    for m in re.finditer(r'r(#+)"(.*?)"\1', text, re.S):
        yield m.group(2)
    for m in re.finditer(r'(?<![r#\w])"((?:[^"\\]|\\.)*)"', text, re.S):
        s = re.sub(r"\\\n\s*", "", m.group(1))
        s = s.replace('\\"', '"').replace("\\n", "\n").replace("\\t", "\t").replace("\\\\", "\\")
        yield s


CONFIG_KEYS = re.compile(r"^(receivers|assembler|extract|evaluators|eval_sets|binding|rules|store|evaluation|api|exporter|telemetry|shutdown_timeout_ms):", re.M)


def seed_repo():
    ex = REPO / "examples"
    for f in sorted(ex.rglob("*.json")):
        text = f.read_text()
        put("py_json_loads", text)
        put("json_text", text)
        put("eval_set" if "eval-sets" in f.parts else "evaluator_file", text)
    for f in sorted(ex.rglob("*.jsonl")):
        lines = [l for l in f.read_text().splitlines() if l.strip()]
        put("otlp_json", "\n".join(lines))
        for line in lines:
            req = json.loads(line)
            put_trace(req)
            put("api_evaluate", line)
    for f in sorted((REPO / "config").glob("*.yaml")):
        put("config_yaml", f.read_text())
    for f in sorted((REPO / "deploy/helm/toolscore/ci").glob("*.yaml")):
        lines = f.read_text().splitlines()
        if "config:" in lines:
            part = []
            for line in lines[lines.index("config:") + 1:]:
                if line.strip() and not line.startswith("  "):
                    break
                part.append(line[2:])
            put("config_yaml", "\n".join(part) + "\n")
    for f in sorted((REPO / "tests").rglob("*.rs")):
        for s in rust_strings(f.read_text()):
            if len(s) < 8:
                continue
            if CONFIG_KEYS.search(s):
                put("config_yaml", s)
            elif s.lstrip().startswith(("{", "[")):
                put("py_json_loads", s)
                put("py_literal_eval", s)
                if "resourceSpans" in s:
                    put("otlp_json", s)
                if '"evaluatorTypeId"' in s:
                    put("evaluator_file", s)


# --- hand-written seeds ---------------------------------------------------------

def seed_by_hand():
    for t in ["1.5", "-6.3603751849933156e+38", "113.45854122794005", "3.283440687306677e-299",
              "1e308", "1e309", "-1e400", "2.2250738585072014e-308", "2.2250738585072011e-308",
              "4.9e-324", "2.4703282292062328e-324", "1.7976931348623157e308", "1.7976931348623158e308",
              "0.1", "9007199254740993", "9007199254740993.0", "18446744073709551616",
              "123456789012345678901234567890", "-0", "-0.0", "0e0", "1E+2", "1_000.5", ".5", "5.",
              "1629824278314106.3", "1e16", "1e-5", "0.0001", "123456789.123456789e-20",
              "NaN", "Infinity", "-Infinity", "7" * 400 + ".5e-380", "0." + "0" * 330 + "1"]:
        put("float_text", t)
    for t in ["{'a': (1, 2.5, -0.0), 'b': {1, 2, 3}, 'c': b'\\x00', 'd': 1+2j, 'e': None, 'f': [True, ...]}",
              "{1: 'one', 1.0: 'float', True: 'bool'}", "set()", "(1,)", "-(-(5))", "0x_1f", "0o17", "0b101",
              "'''triple\nquoted'''", "r'\\d+'", "u'x' 'y'", "b'a' b'b'", "{'k': [[[[[]]]]]}",
              "{8, 0, 16}", "{frozenset: 1}", "1e400 - 1e400j", "'\\N{DASH}'", "f'{x}'"]:
        put("py_literal_eval", t)
        put("py_eq", t + "\0" + t)
    for t in ["1\x001.0\x00True", "0\x00False\x00-0.0", "(1, 2)\x00(1.0, 2.0)\x00[1, 2]",
              "{'a': 1}\x00{\"a\": 1.0}", "1j\x00(0+1j)", "{1, 2}\x00{2, 1}", "''\x00b''",
              "10000000000000000000000\x001e22", "9007199254740993\x009007199254740992.0"]:
        put("py_eq", t)
    for t in ['{"content": "hi"}', '{"content": {"a": [1, 2.5, null, true]}, "x": 1}', '[NaN, Infinity, -0.0]',
              '"\\ud800\\udc00 \\u00e9 \\n"', '{"a": 1, "a": 2}', "1" * 4301, '{"content": 0}']:
        put("py_json_loads", t)
        put("json_text", t)
    trace = "0000000000000000000000005ea70001"
    for t in ["/traces", "/traces?limit=1", "/traces?status=evaluated&evaluator=ToolCallCountEvaluator&max_score=0.5",
              "/traces?since=1732250000", "/traces?since=1732250000.5", "/traces?since=2026-11-22T06:02:36Z",
              "/traces?since=2026-11-22T06:02:36.123456789+00:00", "/traces?since=9223372036854775807-01-01T00:00:00Z",
              "/traces?max_score=NaN", "/traces?limit=-1", "/traces?status=timed_out&status=pending",
              f"/traces/{trace}", f"/traces/{trace}/scores", f"/traces/{trace}/scores?wait_ms=5",
              "/traces/0123456789abcdef0123456789abcdef", "/traces/xyz/scores", "/evaluators", "/eval-sets",
              "/healthz", "/readyz", "/metrics", "/nope", "/traces/%ff"]:
        put("api_query", t)


def read_packed(path):
    """A packed seed file: one `<name> <base64 of the input>` line per seed."""
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        name, _, data = line.partition(" ")
        if not name or "/" in name or name.startswith("."):
            raise SystemExit(f"{path}:{n}: a seed needs a plain file name")
        yield name, base64.b64decode(data, validate=True)


def unpack(into):
    """Every committed seed into <into>/<target>/<name> (existing files kept)."""
    if not SEEDS.is_dir():
        print(f"note: no seeds at {SEEDS}")
        return
    for f in sorted(SEEDS.glob("*.seeds")):
        out = into / f.stem
        out.mkdir(parents=True, exist_ok=True)
        for name, data in read_packed(f):
            if not (out / name).exists():
                (out / name).write_bytes(data)
                copied[f.stem] = copied.get(f.stem, 0) + 1


def pack(source):
    """<source>/<target>/* (a minimised corpus) into seeds/<target>.seeds."""
    SEEDS.mkdir(exist_ok=True)
    for d in sorted(p for p in source.iterdir() if p.is_dir()):
        files = sorted(f for f in d.iterdir() if f.is_file())
        lines = [f"{f.name} {base64.b64encode(f.read_bytes()).decode()}\n" for f in files]
        (SEEDS / f"{d.name}.seeds").write_text("".join(lines))
        print(f"seeds/{d.name}.seeds: {len(files)} seeds")


args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                               formatter_class=argparse.RawDescriptionHelpFormatter)
args.add_argument("--clean", action="store_true", help="delete the working corpus first")
args.add_argument("--seeds-only", action="store_true",
                  help="only unpack the committed seeds (generate nothing)")
args.add_argument("--unpack", metavar="DIR", type=pathlib.Path,
                  help="only unpack the committed seeds into DIR/<target>/ (smoke.sh)")
args.add_argument("--pack", metavar="DIR", type=pathlib.Path,
                  help="replace seeds/ by DIR/<target>/* (after cargo fuzz cmin)")
args = args.parse_args()
if args.pack:
    pack(args.pack)
elif args.unpack:
    unpack(args.unpack)
    for t in sorted(copied):
        print(f"{t}: {copied[t]} seeds unpacked into {args.unpack / t}")
else:
    if args.clean and CORPUS.exists():
        shutil.rmtree(CORPUS)
    unpack(CORPUS)
    if not args.seeds_only:
        seed_cases()
        seed_repo()
        seed_by_hand()
    for t in sorted(d.name for d in CORPUS.iterdir() if d.is_dir()) if CORPUS.is_dir() else []:
        print(f"{t}: {copied.get(t, 0)} new from seeds/, {counts.get(t, 0)} new generated, "
              f"{sum(1 for _ in (CORPUS / t).iterdir())} in corpus/{t}")

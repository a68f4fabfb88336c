#!/usr/bin/env python3
"""Print an OTLP/JSON fixture (spans or logs) as a readable tree: `show.py FILE [--width N]`."""

import json
import sys


def value(v):
    if not isinstance(v, dict) or not v:
        return v
    (k, x), = v.items()
    if k == "arrayValue":
        return [value(i) for i in x.get("values", [])]
    if k == "kvlistValue":
        return {kv["key"]: value(kv.get("value")) for kv in x.get("values", [])}
    return int(x) if k == "intValue" else x


def attrs(lst, width, indent):
    for a in lst or []:
        v = value(a.get("value"))
        s = v if isinstance(v, str) else json.dumps(v)
        if len(s) > width:
            s = s[:width] + f"... ({len(s)} chars)"
        print(f"{indent}{a['key']} = {s}")


def main():
    path = sys.argv[1]
    width = int(sys.argv[sys.argv.index("--width") + 1]) if "--width" in sys.argv else 300
    doc = json.load(open(path))
    if "resourceLogs" in doc:
        for rl in doc["resourceLogs"]:
            for sl in rl.get("scopeLogs", []):
                for r in sl.get("logRecords", []):
                    print(f"LOG [{sl['scope'].get('name')}] event={r.get('eventName')} trace={r.get('traceId','')[:8]} span={r.get('spanId','')[:8]}")
                    attrs(r.get("attributes"), width, "    ")
                    if "body" in r:
                        b = json.dumps(value(r["body"]))
                        print("    body =", b[:width] + (f"... ({len(b)} chars)" if len(b) > width else ""))
        return
    spans = []
    for rs in doc["resourceSpans"]:
        for ss in rs.get("scopeSpans", []):
            for s in ss.get("spans", []):
                spans.append((ss.get("scope", {}).get("name"), s))
    by_parent = {}
    for scope, s in spans:
        by_parent.setdefault(s.get("parentSpanId"), []).append((scope, s))
    ids = {s["spanId"] for _, s in spans}

    def walk(scope, s, depth):
        ind = "  " * depth
        st = s.get("status", {})
        print(f"{ind}* {s['name']}  [{scope}] kind={s.get('kind')} trace={s['traceId'][:8]} span={s['spanId'][:8]}"
              + (f" status={st}" if st else ""))
        attrs(s.get("attributes"), width, ind + "    ")
        for e in s.get("events", []):
            print(f"{ind}    EVENT {e['name']}")
            attrs(e.get("attributes"), width, ind + "        ")
        for c in sorted(by_parent.get(s["spanId"], []), key=lambda x: int(x[1]["startTimeUnixNano"])):
            walk(*c, depth + 1)

    roots = [x for x in spans if x[1].get("parentSpanId") not in ids]
    for scope, s in sorted(roots, key=lambda x: int(x[1]["startTimeUnixNano"])):
        walk(scope, s, 0)


if __name__ == "__main__":
    main()

"""Helpers for Python recorders of the tool-call recording corpus (see README.md).

A recorder is a `record.py` that defines scenarios and calls `harness.main`:

    import harness
    from harness import Scenario

    def weather(ctx):                       # runs the agent end to end
        tools = ctx.tools()                 # the common tools, ground truth recorded inside
        ...                                 # an agent using ctx.base_url / the OPENAI_* env vars

    harness.main("my-recorder", libraries=["openai", "some-instrumentation"], scenarios=[
        Scenario("weather", weather, api="chat_completions", streamed=False, content_captured=True,
                 env={"SOME_CAPTURE_FLAG": "true"}, notes="..."),
    ])

`python record.py` runs every scenario, each in its own process (instrumentations
read their settings at import/instrument time), against the stub model named by
$STUB_MODEL_URL or, if unset, a stub it starts itself. `python record.py NAME...`
runs only those. Each scenario writes fixtures/<recorder>/<scenario>.otlp.json
(+ .logs.otlp.json when log records were emitted) and <scenario>.truth.json and
validates them.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import functools
import importlib.metadata
import inspect
import json
import os
import subprocess
import sys
import threading
import time
import traceback
import urllib.request
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
sys.path.insert(0, str(HERE))


# ----------------------------------------------------------------------------- the common scenario
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return "Sunny, 22C"


def get_forecast(city: str, days: int) -> str:
    """Get the weather forecast for a city for a number of days."""
    return f"Sunny for the next {days} days"


def plan_trip(destination: dict, stops: list[str]) -> dict:
    """Plan a trip to a destination ({"city": ..., "country": ...}) through a list of stops."""
    return {"ok": True, "stops": len(stops)}


def book_hotel(city: str) -> str:
    """Book a hotel room in a city."""
    raise ValueError(f"no rooms in {city}")


COMMON_TOOLS = [get_weather, get_forecast, plan_trip, book_hotel]

PLAN_TRIP_ARGS = {"destination": {"city": "Paris", "country": "FR"}, "stops": ["Louvre", "Eiffel Tower"]}

# turn 0: one call; turn 1: two parallel calls; turn 2: a failing call; turn 3: final text
COMMON_PLAN = [
    [{"name": "get_weather", "arguments": {"city": "Paris"}}],
    [{"name": "get_forecast", "arguments": {"city": "Paris", "days": 3}},
     {"name": "plan_trip", "arguments": PLAN_TRIP_ARGS}],
    [{"name": "book_hotel", "arguments": {"city": "Paris"}}],
    "Done.",
]

USER_PROMPT = "What's the weather in Paris? Then plan a 3-day trip and book a hotel."

# JSON schemas of the common tools, for hand-written tool lists
TOOL_SCHEMAS = {
    "get_weather": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "get_forecast": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                     "required": ["city", "days"]},
    "plan_trip": {"type": "object", "properties": {
        "destination": {"type": "object", "properties": {"city": {"type": "string"}, "country": {"type": "string"}}},
        "stops": {"type": "array", "items": {"type": "string"}}}, "required": ["destination", "stops"]},
    "book_hotel": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def openai_chat_tools(names=None):
    """The common tools as a Chat Completions `tools` list."""
    return [{"type": "function", "function": {"name": f.__name__, "description": f.__doc__,
                                              "parameters": TOOL_SCHEMAS[f.__name__]}}
            for f in COMMON_TOOLS if names is None or f.__name__ in names]


def openai_responses_tools():
    return [{"type": "function", "name": f.__name__, "description": f.__doc__,
             "parameters": TOOL_SCHEMAS[f.__name__]} for f in COMMON_TOOLS]


def anthropic_tools():
    return [{"name": f.__name__, "description": f.__doc__, "input_schema": TOOL_SCHEMAS[f.__name__]}
            for f in COMMON_TOOLS]


def tool_result_text(fn: Callable, arguments: dict) -> str:
    """Call a tool as a hand-written agent loop would: its text, or 'Error: ...' if it raised."""
    try:
        out = fn(**arguments)
    except Exception as e:  # the agent tells the model
        return f"Error: {type(e).__name__}: {e}"
    return out if isinstance(out, str) else json.dumps(out)


# ----------------------------------------------------------------------------- hand-written agent loops
MODEL = "gpt-4o-mini"


def openai_chat_loop(client, tools: dict, streamed: bool = False, max_turns: int = 8,
                     call_tool: Callable | None = None, model: str = MODEL) -> str:
    """The user's own loop over Chat Completions: call the model, run the tools it asks for, repeat.

    `tools` maps tool name -> function (from ctx.tools()); `call_tool(fn, name, arguments, call_id)` may
    replace the plain `tool_result_text(fn, arguments)` (e.g. to call positionally, or inside a tool span);
    it returns the text sent back to the model. Returns the final text."""
    messages = [{"role": "user", "content": USER_PROMPT}]
    schema = openai_chat_tools(list(tools))
    for _ in range(max_turns):
        if streamed:
            stream = client.chat.completions.create(model=model, messages=messages, tools=schema, stream=True,
                                                    stream_options={"include_usage": True})
            content, calls = "", {}
            for chunk in stream:
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                content += delta.content or ""
                for tc in delta.tool_calls or []:
                    c = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                    c["id"] = tc.id or c["id"]
                    if tc.function:
                        c["name"] += tc.function.name or ""
                        c["arguments"] += tc.function.arguments or ""
            calls = [calls[i] for i in sorted(calls)]
        else:
            msg = client.chat.completions.create(model=model, messages=messages, tools=schema).choices[0].message
            content = msg.content or ""
            calls = [{"id": tc.id, "name": tc.function.name, "arguments": tc.function.arguments}
                     for tc in msg.tool_calls or []]
        if not calls:
            return content
        messages.append({"role": "assistant", "content": content or None, "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls]})
        for c in calls:
            args = json.loads(c["arguments"])
            if call_tool is None:
                text = tool_result_text(tools[c["name"]], args)
            else:
                text = call_tool(tools[c["name"]], c["name"], args, c["id"])
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": text})
    raise RuntimeError("agent loop did not finish")


def openai_responses_loop(client, tools: dict, streamed: bool = False, max_turns: int = 8,
                          model: str = MODEL) -> str:
    """The user's own loop over the Responses API (stateless: the whole input is resent)."""
    items: list = [{"role": "user", "content": USER_PROMPT}]
    schema = [t for t in openai_responses_tools() if t["name"] in tools]
    for _ in range(max_turns):
        if streamed:
            resp = None
            for event in client.responses.create(model=model, input=items, tools=schema, stream=True):
                if event.type == "response.completed":
                    resp = event.response
        else:
            resp = client.responses.create(model=model, input=items, tools=schema)
        calls = [o for o in resp.output if o.type == "function_call"]
        if not calls:
            return resp.output_text
        for o in calls:
            items.append({"type": "function_call", "call_id": o.call_id, "name": o.name, "arguments": o.arguments})
        for o in calls:
            text = tool_result_text(tools[o.name], json.loads(o.arguments))
            items.append({"type": "function_call_output", "call_id": o.call_id, "output": text})
    raise RuntimeError("agent loop did not finish")


# ----------------------------------------------------------------------------- scenarios
@dataclasses.dataclass
class Scenario:
    name: str
    run: Callable[["Context"], Any]
    api: str  # chat_completions | responses | anthropic_messages
    streamed: bool = False
    content_captured: bool = True
    env: dict = dataclasses.field(default_factory=dict)  # extra environment for this scenario's process
    notes: str = ""
    plan: list = dataclasses.field(default_factory=lambda: COMMON_PLAN)
    no_tools_text: str | None = None  # answer to requests that offer no tools (default: the final text)
    # text-protocol agents: a regex whose every match in a request counts as one tool result (see stub_model.py)
    results_marker: str | None = None
    # builds the TracerProvider from a Resource (default: the SDK's TracerProvider with default limits);
    # the harness adds its in-memory exporter to it
    tracer_provider_factory: Callable | None = None


# ----------------------------------------------------------------------------- stub model client
class Stub:
    def __init__(self, url: str):
        self.url = url.rstrip("/")  # http://127.0.0.1:PORT

    @property
    def base_url(self):  # OpenAI-style base URL
        return self.url + "/v1"

    def _call(self, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.load(r)

    def set_plan(self, plan, no_tools_text=None, log=None, results_marker=None):
        self._call("/_stub/plan", {"plan": plan, "no_tools_text": no_tools_text, "log": log,
                                   "results_marker": results_marker})

    def log(self):
        return self._call("/_stub/log")["entries"]


def start_stub_process(log=None):
    """Start stub_model.py as a child process; returns (Popen, url)."""
    cmd = [sys.executable, str(HERE / "stub_model.py"), "--port", "0"] + (["--log", log] if log else [])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    assert line.startswith("STUB_PORT="), f"stub did not start: {line!r}"
    return proc, f"http://127.0.0.1:{line.split('=', 1)[1]}"


def stub_env(url: str) -> dict:
    """Environment variables that point the usual SDKs at the stub and keep everything offline."""
    v1 = url + "/v1"
    return {
        "STUB_MODEL_URL": url,
        "OPENAI_BASE_URL": v1, "OPENAI_API_BASE": v1, "OPENAI_API_KEY": "stub",
        "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "stub",
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        # anything that still tries to reach the network fails fast on a closed local port
        "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
        "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
        # OpenTelemetry: nothing exported anywhere but the in-memory exporters
        "OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none", "OTEL_LOGS_EXPORTER": "none",
        # telemetry / phone-home opt-outs of common agent libraries
        "TRACELOOP_TELEMETRY": "false", "CREWAI_DISABLE_TELEMETRY": "true", "CREWAI_DISABLE_TRACKING": "true",
        "OTEL_SDK_DISABLED": "false", "HAYSTACK_TELEMETRY_ENABLED": "False", "ANONYMIZED_TELEMETRY": "False",
        "DO_NOT_TRACK": "1", "SCARF_NO_ANALYTICS": "true", "POSTHOG_DISABLED": "1",
        "LITELLM_TELEMETRY": "False", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "DSPY_CACHEDIR": "/tmp/dspy-cache",
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
        "LANGCHAIN_TRACING_V2": "false", "LANGSMITH_TRACING": "false",
        "PYTHONUNBUFFERED": "1",
    }


# ----------------------------------------------------------------------------- OpenTelemetry capture
class Otel:
    """SDK providers with in-memory exporters, installed as the global providers."""

    def __init__(self, service_name: str, tracer_provider_factory=None, install_global: bool = True):
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.resource = Resource.create({"service.name": service_name})
        self.span_exporter = InMemorySpanExporter()
        factory = tracer_provider_factory or (lambda resource: TracerProvider(resource=resource))
        self.tracer_provider = factory(self.resource)
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.span_exporter))
        self.log_exporter = self.logger_provider = None
        try:
            from opentelemetry.sdk._logs import LoggerProvider
            from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
            try:
                from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter as _Mem
            except ImportError:
                from opentelemetry.sdk._logs.export import InMemoryLogExporter as _Mem
            self.log_exporter = _Mem()
            self.logger_provider = LoggerProvider(resource=self.resource)
            self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.log_exporter))
        except ImportError:
            pass
        if install_global:
            from opentelemetry import trace
            trace.set_tracer_provider(self.tracer_provider)
            if self.logger_provider is not None:
                from opentelemetry import _logs
                _logs.set_logger_provider(self.logger_provider)
                with contextlib.suppress(ImportError):  # event API of older SDKs
                    from opentelemetry import _events
                    from opentelemetry.sdk._events import EventLoggerProvider
                    _events.set_event_logger_provider(EventLoggerProvider(self.logger_provider))

    def flush(self):
        self.tracer_provider.force_flush()
        if self.logger_provider is not None:
            self.logger_provider.force_flush()

    def spans(self):
        return list(self.span_exporter.get_finished_spans())

    def logs(self):
        return list(self.log_exporter.get_finished_logs()) if self.log_exporter else []


_ID_KEYS = {"traceId", "spanId", "parentSpanId"}


def _hex_ids(node):
    """OTLP/JSON encodes trace and span ids as hex, not as protobuf JSON's base64."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k in _ID_KEYS and isinstance(v, str):
                node[k] = base64.b64decode(v).hex()
            else:
                _hex_ids(v)
    elif isinstance(node, list):
        for v in node:
            _hex_ids(v)
    return node


def otlp_spans_json(spans) -> dict:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    d = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    return _hex_ids(d) if d else {"resourceSpans": []}


def otlp_logs_json(logs) -> dict:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs

    d = MessageToDict(encode_logs(logs), use_integers_for_enums=True)
    return _hex_ids(d) if d else {"resourceLogs": []}


# ----------------------------------------------------------------------------- ground truth
def _jsonable(v):
    return json.loads(json.dumps(v, default=lambda o: o.model_dump() if hasattr(o, "model_dump") else str(o)))


def _current_ids():
    from opentelemetry import trace

    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return None, None
    return f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}"


class Truth:
    """What the tool functions really received and returned, recorded from inside them."""

    def __init__(self):
        self.calls: list[dict] = []
        self._lock = threading.Lock()

    def wrap(self, fn: Callable) -> Callable:
        """Wrap a tool function (sync or async); the wrapper keeps name, docstring, signature and hints."""
        sig = inspect.signature(fn)

        def begin(args, kwargs):
            bound = sig.bind(*args, **kwargs)
            trace_id, span_id = _current_ids()
            with self._lock:
                entry = {"tool": fn.__name__, "args": _jsonable(dict(bound.arguments)), "order": len(self.calls),
                         "trace_id": trace_id, "span_id": span_id,
                         "positional": len(args) > 0}
                self.calls.append(entry)
            return entry

        def finish(entry, out=None, exc=None):
            if exc is not None:
                entry["error"] = f"{type(exc).__name__}: {exc}"
            elif isinstance(out, str):
                entry["output"] = out
            else:
                entry["output"] = str(out)
                entry["output_json"] = json.dumps(_jsonable(out))

        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def awrapper(*args, **kwargs):
                entry = begin(args, kwargs)
                try:
                    out = await fn(*args, **kwargs)
                except Exception as e:
                    finish(entry, exc=e)
                    raise
                finish(entry, out)
                return out
            return awrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            entry = begin(args, kwargs)
            try:
                out = fn(*args, **kwargs)
            except Exception as e:
                finish(entry, exc=e)
                raise
            finish(entry, out)
            return out
        return wrapper


def _span_mentions(span_dict, needle):
    return needle in json.dumps(span_dict)


def join_truth(truth_calls, stub_log, otlp: dict, logs_otlp: dict | None):
    """Attach the model's call (offered name, turn, call id) to each truth call and group by trace."""
    emitted = [e for e in stub_log if e.get("kind") == "tool_call"]
    used = set()
    spans = [s for rs in otlp.get("resourceSpans", []) for ss in rs.get("scopeSpans", []) for s in ss.get("spans", [])]
    spans.sort(key=lambda s: int(s.get("startTimeUnixNano", "0")))
    problems = []
    traces: dict[str, list] = {}
    for call in sorted(truth_calls, key=lambda c: c["order"]):
        match = None
        for strict in (True, False):
            for i, e in enumerate(emitted):
                if i in used or e["base_name"] != call["tool"]:
                    continue
                if strict and e["arguments"] != call["args"]:
                    continue
                match = i
                break
            if match is not None:
                break
        out = {"turn": None, "name": call["tool"], "args": call["args"]}
        if match is None:
            problems.append(f"tool call {call['tool']}#{call['order']} was not requested by the stub model")
        else:
            used.add(match)
            e = emitted[match]
            out.update(turn=e["turn"], name=e["name"])
            if e.get("id") is not None:
                out["call_id"] = e["id"]
            if e.get("in_text"):  # written in the model's reply text: no call id
                out["in_text"] = True
        for k in ("output", "output_json", "error"):
            if k in call:
                out[k] = call[k]
        out["order"] = call["order"]
        if call.get("positional"):
            out["positional"] = True
        trace_id = call["trace_id"]
        if trace_id is None and "call_id" in out:
            # no span was active in the tool: the call belongs to the trace of the model span whose
            # response carried it, i.e. the earliest span that mentions its call id
            for s in spans:
                if _span_mentions(s, out["call_id"]):
                    trace_id = s["traceId"]
                    out["trace_from"] = "model_span"
                    break
        if trace_id is None:
            problems.append(f"tool call {call['tool']}#{call['order']} has no trace")
            trace_id = "none"
        traces.setdefault(trace_id, []).append(out)
    for t in traces.values():
        t.sort(key=lambda c: (c["turn"] if c["turn"] is not None else 1 << 30, c["order"]))
    return traces, problems


# ----------------------------------------------------------------------------- validation
def validate_otlp(doc: dict, kind: str) -> list[str]:
    """Parse-level checks of an OTLP/JSON document; returns problems."""
    problems = []
    top = "resourceSpans" if kind == "spans" else "resourceLogs"
    if set(doc) != {top}:
        problems.append(f"top-level keys {sorted(doc)} != [{top}]")
    count = 0
    for rs in doc.get(top, []):
        for ss in rs.get("scopeSpans" if kind == "spans" else "scopeLogs", []):
            for item in ss.get("spans" if kind == "spans" else "logRecords", []):
                count += 1
                if kind == "spans":
                    for k, n in (("traceId", 32), ("spanId", 16)):
                        v = item.get(k, "")
                        if len(v) != n or v != v.lower() or any(c not in "0123456789abcdef" for c in v):
                            problems.append(f"span {item.get('name')}: bad {k} {v!r}")
                    p = item.get("parentSpanId")
                    if p is not None and (len(p) != 16 or any(c not in "0123456789abcdef" for c in p)):
                        problems.append(f"span {item.get('name')}: bad parentSpanId {p!r}")
                    for k in ("startTimeUnixNano", "endTimeUnixNano"):
                        if not isinstance(item.get(k), str) or not item[k].isdigit():
                            problems.append(f"span {item.get('name')}: {k} not a decimal string")
                    if not isinstance(item.get("kind", 0), int):
                        problems.append(f"span {item.get('name')}: kind not an integer")
                else:
                    for k, n in (("traceId", 32), ("spanId", 16)):
                        v = item.get(k)
                        if v is not None and (len(v) != n or any(c not in "0123456789abcdef" for c in v)):
                            problems.append(f"log record: bad {k} {v!r}")
    if kind == "spans" and count == 0:
        problems.append("no spans")
    return problems


def trace_ids(doc: dict) -> set[str]:
    return {s["traceId"] for rs in doc.get("resourceSpans", []) for ss in rs.get("scopeSpans", [])
            for s in ss.get("spans", [])}


# ----------------------------------------------------------------------------- running a scenario
class Context:
    """What a scenario's run function gets."""

    def __init__(self, recorder: str, scenario: Scenario, stub: Stub, otel: Otel):
        self.recorder, self.scenario, self.stub, self.otel = recorder, scenario, stub, otel
        self.truth = Truth()
        self.base_url = stub.base_url  # http://127.0.0.1:PORT/v1
        self.stub_url = stub.url  # http://127.0.0.1:PORT (Anthropic-style base URL)
        self.streamed = scenario.streamed
        self.notes: list[str] = []

    @property
    def tracer_provider(self):
        return self.otel.tracer_provider

    @property
    def logger_provider(self):
        return self.otel.logger_provider

    @property
    def span_exporter(self):
        return self.otel.span_exporter

    def tools(self, fns=None) -> dict[str, Callable]:
        """The common tools (or `fns`), wrapped to record ground truth: {name: wrapped function}."""
        return {f.__name__: self.truth.wrap(f) for f in (fns or COMMON_TOOLS)}

    def note(self, text: str):
        self.notes.append(text)


def _versions(libraries):
    out = {}
    for lib in libraries:
        try:
            out[lib] = importlib.metadata.version(lib)
        except importlib.metadata.PackageNotFoundError:
            out[lib] = None
    return out


def run_one(recorder: str, scenario: Scenario, libraries: list[str]) -> bool:
    url = os.environ.get("STUB_MODEL_URL")
    assert url, "STUB_MODEL_URL is not set (run through harness.main or record.sh)"
    stub = Stub(url)
    outdir = FIXTURES / recorder
    outdir.mkdir(parents=True, exist_ok=True)
    logdir = HERE.parent.parent / "target" / "tmp" / "recordings" / "stub-logs" / recorder
    logdir.mkdir(parents=True, exist_ok=True)
    stub.set_plan(scenario.plan, scenario.no_tools_text, str(logdir / f"{scenario.name}.jsonl"),
                  scenario.results_marker)
    otel = Otel(f"recording-{recorder}", scenario.tracer_provider_factory)
    ctx = Context(recorder, scenario, stub, otel)
    t0 = time.time()
    error = None
    try:
        scenario.run(ctx)
    except Exception:  # the agent itself failed: keep what was recorded, say so
        error = traceback.format_exc()
        print(error, file=sys.stderr)
    time.sleep(0.2)  # let background span ends (streams, threads) land
    otel.flush()
    spans_doc = otlp_spans_json(otel.spans())
    logs = otel.logs()
    logs_doc = otlp_logs_json(logs) if logs else None
    base = outdir / scenario.name
    write_json(f"{base}.otlp.json", spans_doc)
    logs_path = Path(f"{base}.logs.otlp.json")
    if logs_doc:
        write_json(logs_path, logs_doc)
    elif logs_path.exists():
        logs_path.unlink()
    notes = " ".join(filter(None, [scenario.notes] + ctx.notes))
    if error:
        notes += f" The agent run raised: {error.strip().splitlines()[-1]}"
    meta = {"recorder": recorder, "scenario": scenario.name, "libraries": _versions(libraries),
            "api": scenario.api, "streamed": scenario.streamed, "content_captured": scenario.content_captured,
            "notes": notes}
    ok, summary = finish_truth(base, meta, ctx.truth.calls, stub.log())
    head, *rest = summary.split("\n")
    print("\n".join([f"[{recorder}/{scenario.name}] {head}, {time.time() - t0:.1f}s"] + rest))
    return ok


def write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def finish_truth(base, meta: dict, calls: list[dict], stub_log: list[dict]) -> tuple[bool, str]:
    """Join the recorded calls with the stub log and the written fixture, write <base>.truth.json,
    validate fixture and truth by reading them back. Returns (ok, one-line summary + problems)."""
    with open(f"{base}.otlp.json") as f:
        doc = json.load(f)
    logs_path = Path(f"{base}.logs.otlp.json")
    logs_doc = json.loads(logs_path.read_text()) if logs_path.exists() else None
    traces, problems = join_truth(calls, stub_log, doc, logs_doc)
    truth = {**meta, "traces": traces, "other_traces": "every other trace in the fixture must yield no tool call"}
    write_json(f"{base}.truth.json", truth)
    problems += validate_otlp(doc, "spans")
    if logs_doc:
        problems += validate_otlp(logs_doc, "logs")
    ids = trace_ids(doc)
    for t in traces:
        if t not in ids:
            problems.append(f"truth trace {t} does not occur in the fixture")
    if not traces:
        problems.append("no tool call was recorded")
    n_spans = sum(len(ss.get("spans", [])) for rs in doc.get("resourceSpans", []) for ss in rs.get("scopeSpans", []))
    n_logs = sum(len(sl.get("logRecords", [])) for rl in (logs_doc or {}).get("resourceLogs", [])
                 for sl in rl.get("scopeLogs", []))
    n_calls = sum(len(v) for v in traces.values())
    summary = (f"{'ok' if not problems else 'PROBLEMS'}: {n_spans} spans, {n_logs} log records, {len(ids)} traces, "
               f"{n_calls} tool calls in {len(traces)} trace(s)" + "".join(f"\n  - {p}" for p in problems))
    return not problems, summary


def main(recorder: str, libraries: list[str], scenarios: list[Scenario]):
    """Entry point of a record.py: `record.py [SCENARIO...]`."""
    by_name = {s.name: s for s in scenarios}
    args = sys.argv[1:]
    if os.environ.get("RECORDING_CHILD") == "1":  # one scenario, in this process
        (name,) = args
        sys.exit(0 if run_one(recorder, by_name[name], libraries) else 1)
    names = args or [s.name for s in scenarios]
    unknown = [n for n in names if n not in by_name]
    if unknown:
        sys.exit(f"unknown scenario(s) {unknown}; known: {list(by_name)}")
    stub_proc = None
    if not os.environ.get("STUB_MODEL_URL"):
        stub_proc, url = start_stub_process()
        os.environ.update(stub_env(url))
    failed = []
    try:
        for name in names:
            env = dict(os.environ, **by_name[name].env, RECORDING_CHILD="1")
            rc = subprocess.call([sys.executable, sys.argv[0], name], env=env)
            if rc:
                failed.append(name)
    finally:
        if stub_proc:
            stub_proc.terminate()
    if failed:
        sys.exit(f"[{recorder}] failed scenarios: {failed}")


if __name__ == "__main__":
    # `python3 harness.py --env URL`: shell `export` lines pointing the SDKs at the stub (used by record.sh)
    import shlex

    if len(sys.argv) == 3 and sys.argv[1] == "--env":
        for k, v in stub_env(sys.argv[2]).items():
            print(f"export {k}={shlex.quote(v)}")
    elif len(sys.argv) == 5 and sys.argv[1] == "--finish":
        # for recorders not written in Python: BASE.otlp.json (+ BASE.logs.otlp.json) already written;
        # CALLS is a JSON list of {"tool", "args", "order", "trace_id", "output"|"error"[, "output_json"]}
        # recorded inside the tool functions; META holds recorder, scenario, libraries, api, streamed,
        # content_captured, notes. The stub log comes from $STUB_MODEL_URL.
        _, _, base, calls_path, meta_path = sys.argv
        ok, summary = finish_truth(base, json.loads(Path(meta_path).read_text()),
                                   json.loads(Path(calls_path).read_text()), Stub(os.environ["STUB_MODEL_URL"]).log())
        print(summary)
        sys.exit(0 if ok else 1)
    else:
        sys.exit("usage: harness.py --env STUB_URL | harness.py --finish BASE CALLS.json META.json")

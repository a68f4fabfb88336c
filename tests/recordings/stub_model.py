#!/usr/bin/env python3
"""Scripted stand-in for a tool-calling model, loopback only (stdlib only).

Speaks, on one port:
  * OpenAI Chat Completions  POST /v1/chat/completions   (plain and SSE `stream: true`)
  * OpenAI Responses         POST /v1/responses          (plain and SSE `stream: true`)
  * Anthropic Messages       POST /v1/messages           (plain and SSE `stream: true`)
  * GET /v1/models[/<id>], POST /v1/embeddings, POST /v1/messages/count_tokens, GET /
  (the same paths without the /v1 prefix work too).

The answers follow a PLAN, a list of turns:

    {"plan": [[{"name": "get_weather", "arguments": {"city": "Paris"}}],
              [{"name": "get_forecast", "arguments": {...}}, {"name": "plan_trip", ...}],
              "Done."],
     "no_tools_text": "A plan: ..."}          # optional

Each turn is a list of tool calls (emitted together in ONE model message) or a
string (a final text answer). On every request the server counts the tool
results already present in the request (chat: messages with role "tool" or
"function"; responses: input items of type "function_call_output", plus those
known through `previous_response_id`; anthropic: `tool_result` content blocks)
and answers with the first turn whose earlier turns' calls are all answered.
Past the end of the plan it answers the last string of the plan (or "Done.").
A request that offers no tools gets `no_tools_text` (default: the final text).

Text-protocol agents (DSPy ReAct, ReAct-style prompts) write their tool calls in
the reply text and get the results back as text, not as tool messages. For them a
turn may be {"text": "<reply>", "calls": [{"name", "arguments"}, ...]}: the reply
is that text (no native tool calls) and the calls are logged with "id": null and
"in_text": true. With `results_marker` (a regex, set with the plan) every match
of it in the request's strings (outside `tools`) counts as one tool result, and
requests that offer no tools follow the plan too.

The plan's tool names are BASE names; each call is emitted under the name the
request offers (`tools` list): the offered name equal to the base name, else one
ending with it after a separator (`__ . - _ / :`), so framework-qualified names
like `functions.get_weather` or `mcp__srv__get_weather` work. If no offered name
matches, the base name is emitted as is (logged with "matched": false).

Log: JSON lines (file given by --log or by the control endpoint), one object per
request {"kind": "request", ...} and one per emitted call
{"kind": "tool_call", "api", "turn", "index", "id", "name", "base_name",
 "arguments" (object), "arguments_json" (the exact string sent), "response_id"}.

Control endpoints (for recorders):
  POST /_stub/plan  {"plan": [...], "no_tools_text": str?, "log": path?, "results_marker": regex?}
                    set the plan, clear the log
  GET  /_stub/log   -> {"entries": [...]}  (entries since the last /_stub/plan)

CLI: python3 stub_model.py [--port 0] [--log FILE] [--plan FILE]
     prints "STUB_PORT=<port>" on its first stdout line; binds 127.0.0.1 only.
Library: `start(port=0, log=None, plan=None) -> (server, port)`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "stub-model"
SEPARATORS = ("__", ".", "-", "_", "/", ":")
CREATED = 1767225600  # fixed timestamp keeps answers comparable


class State:
    def __init__(self, log_path=None, plan=None):
        self.lock = threading.Lock()
        self.log_path = log_path
        self.entries = []
        self.plan = plan or ["Done."]
        self.no_tools_text = None
        self.results_marker = None  # compiled regex: each match in a request counts as a tool result
        self.counter = 0
        self.response_results = {}  # responses API: response id -> results seen when it was made

    def set_plan(self, plan, no_tools_text=None, log_path=None, results_marker=None):
        with self.lock:
            self.plan = plan or ["Done."]
            self.no_tools_text = no_tools_text
            self.results_marker = re.compile(results_marker) if results_marker else None
            self.entries = []
            if log_path is not None:
                self.log_path = log_path
                open(log_path, "w").close()

    def log(self, entry):
        with self.lock:
            self.entries.append(entry)
            if self.log_path:
                with open(self.log_path, "a") as f:
                    f.write(json.dumps(entry, sort_keys=True) + "\n")

    def next_id(self):
        with self.lock:
            self.counter += 1
            return self.counter

    def final_text(self):
        texts = [t for t in self.plan if isinstance(t, str)]
        return texts[-1] if texts else "Done."

    def choose_turn(self, results):
        """Index of the turn to play after `results` tool results, and that turn."""
        answered = 0
        for i, turn in enumerate(self.plan):
            if isinstance(turn, str):
                return i, turn
            n = len(turn.get("calls") or []) if isinstance(turn, dict) else len(turn)
            if results < answered + n or (n == 0 and isinstance(turn, dict)):
                return i, turn
            answered += n
        return len(self.plan), self.final_text()


def offered_name(base, offered):
    if base in offered:
        return base, True
    for name in offered:
        for sep in SEPARATORS:
            if name.endswith(sep + base):
                return name, True
    return base, False


# ---------------------------------------------------------------- request readers
def chat_results(body):
    return sum(1 for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") in ("tool", "function"))


def chat_tools(body):
    names = []
    for t in body.get("tools") or []:
        fn = t.get("function") if isinstance(t, dict) else None
        if isinstance(fn, dict) and fn.get("name"):
            names.append(fn["name"])
        elif isinstance(t, dict) and t.get("name"):
            names.append(t["name"])
    for f in body.get("functions") or []:  # legacy function calling
        if isinstance(f, dict) and f.get("name"):
            names.append(f["name"])
    return names


def responses_results(state, body):
    items = body.get("input")
    n = 0
    if isinstance(items, list):
        n = sum(1 for it in items if isinstance(it, dict) and it.get("type") == "function_call_output")
    prev = body.get("previous_response_id")
    if prev:
        n += state.response_results.get(prev, 0)
    return n


def responses_tools(body):
    return [t["name"] for t in body.get("tools") or [] if isinstance(t, dict) and t.get("name")]


def anthropic_results(body):
    n = 0
    for m in body.get("messages") or []:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list):
            n += sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_result")
    return n


def anthropic_tools(body):
    return [t["name"] for t in body.get("tools") or [] if isinstance(t, dict) and t.get("name")]


# ---------------------------------------------------------------- answer planning
def marker_count(pattern, node, key=None):
    """Matches of `pattern` in the strings of a request body (outside its `tools`)."""
    if key == "tools":
        return 0
    if isinstance(node, str):
        return len(pattern.findall(node))
    if isinstance(node, dict):
        return sum(marker_count(pattern, v, k) for k, v in node.items())
    if isinstance(node, list):
        return sum(marker_count(pattern, v) for v in node)
    return 0


def plan_answer(state, api, body, results, offered):
    """Return (turn_index, text or None, calls) and log the request and the calls."""
    stream = bool(body.get("stream"))
    text_calls = []  # calls written in the reply text (text-protocol turns)
    if state.results_marker is not None:
        results += marker_count(state.results_marker, body)
    if not offered and state.results_marker is None:
        turn, text, calls = None, state.no_tools_text or state.final_text(), []
    else:
        turn, step = state.choose_turn(results)
        if isinstance(step, str):
            text, calls = step, []
        elif isinstance(step, dict):
            text, calls = step["text"], []
            for i, call in enumerate(step.get("calls") or []):
                text_calls.append({"id": None, "name": call["name"], "base_name": call.get("base_name", call["name"]),
                                   "matched": True, "arguments": call.get("arguments", {}),
                                   "arguments_json": json.dumps(call.get("arguments", {})), "index": i,
                                   "in_text": True})
        else:
            text, calls = None, []
            for i, call in enumerate(step):
                name, matched = offered_name(call["name"], offered)
                n = state.next_id()
                prefix = "toolu_" if api == "anthropic_messages" else "call_"
                calls.append({
                    "id": f"{prefix}stub{n:04d}t{turn}i{i}",
                    "name": name,
                    "base_name": call["name"],
                    "matched": matched,
                    "arguments": call.get("arguments", {}),
                    "arguments_json": json.dumps(call.get("arguments", {})),
                    "index": i,
                })
    rid_n = state.next_id()
    response_id = {"chat_completions": f"chatcmpl-stub{rid_n:04d}",
                   "responses": f"resp_stub{rid_n:04d}",
                   "anthropic_messages": f"msg_stub{rid_n:04d}"}[api]
    if api == "responses":
        with state.lock:
            state.response_results[response_id] = results
    state.log({"kind": "request", "api": api, "stream": stream, "turn": turn, "results_seen": results,
               "offered_tools": offered, "response_id": response_id, "time": time.time(), "body": body})
    for c in calls + text_calls:
        state.log({"kind": "tool_call", "api": api, "turn": turn, "response_id": response_id,
                   **{k: c[k] for k in ("id", "name", "base_name", "matched", "arguments", "arguments_json", "index")},
                   **({"in_text": True} if c.get("in_text") else {})})
    return response_id, text, calls


def usage_chat():
    return {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}


def split2(s):
    """Split a string in two pieces (streamed arguments arrive in fragments)."""
    h = max(1, len(s) // 2)
    return [s[:h], s[h:]] if len(s) > 1 else [s]


# ---------------------------------------------------------------- chat completions
def chat_body(rid, model, text, calls):
    msg = {"role": "assistant", "content": text, "refusal": None}
    if calls:
        msg["tool_calls"] = [{"id": c["id"], "type": "function",
                              "function": {"name": c["name"], "arguments": c["arguments_json"]}} for c in calls]
    return {"id": rid, "object": "chat.completion", "created": CREATED, "model": model,
            "system_fingerprint": "fp_stub",
            "choices": [{"index": 0, "message": msg, "logprobs": None,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": usage_chat()}


def chat_chunks(rid, model, text, calls, include_usage):
    def chunk(delta, finish=None):
        return {"id": rid, "object": "chat.completion.chunk", "created": CREATED, "model": model,
                "system_fingerprint": "fp_stub",
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
    out = [chunk({"role": "assistant", "content": "" if text is not None else None})]
    if text:
        for piece in split2(text):
            out.append(chunk({"content": piece}))
    for i, c in enumerate(calls):
        pieces = split2(c["arguments_json"])
        out.append(chunk({"tool_calls": [{"index": i, "id": c["id"], "type": "function",
                                          "function": {"name": c["name"], "arguments": ""}}]}))
        for p in pieces:
            out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]}))
    out.append(chunk({}, "tool_calls" if calls else "stop"))
    if include_usage:
        last = chunk({})
        last["choices"] = []
        last["usage"] = usage_chat()
        out.append(last)
    return [(None, c) for c in out] + [(None, "[DONE]")]


# ---------------------------------------------------------------- responses API
def responses_items(rid, text, calls, done=True):
    items = []
    if text is not None:
        items.append({"type": "message", "id": f"msg_{rid[5:]}", "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]})
    for c in calls:
        # like the real API, the item id is unrelated to the call id
        item_id = "fc_" + hashlib.sha1(c["id"].encode()).hexdigest()[:24]
        items.append({"type": "function_call", "id": item_id, "call_id": c["id"], "name": c["name"],
                      "arguments": c["arguments_json"], "status": "completed"})
    return items


def responses_body(rid, model, body, text, calls, status="completed", output=None):
    return {"id": rid, "object": "response", "created_at": CREATED, "status": status, "model": model,
            "output": responses_items(rid, text, calls) if output is None else output,
            "parallel_tool_calls": body.get("parallel_tool_calls", True), "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools") or [], "temperature": body.get("temperature", 1.0), "top_p": 1.0,
            "instructions": body.get("instructions"), "metadata": {}, "error": None, "incomplete_details": None,
            "previous_response_id": body.get("previous_response_id"), "text": {"format": {"type": "text"}},
            "truncation": "disabled", "store": False, "background": False, "reasoning": {"effort": None, "summary": None},
            "usage": None if status != "completed" else
            {"input_tokens": 50, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 60}}


def responses_events(rid, model, body, text, calls):
    ev = []
    ev.append(("response.created", {"response": responses_body(rid, model, body, None, [], "in_progress", [])}))
    ev.append(("response.in_progress", {"response": responses_body(rid, model, body, None, [], "in_progress", [])}))
    for idx, item in enumerate(responses_items(rid, text, calls)):
        if item["type"] == "message":
            ev.append(("response.output_item.added", {"output_index": idx, "item": {**item, "status": "in_progress", "content": []}}))
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            ev.append(("response.content_part.added", {"item_id": item["id"], "output_index": idx, "content_index": 0, "part": part}))
            for piece in split2(text):
                ev.append(("response.output_text.delta", {"item_id": item["id"], "output_index": idx, "content_index": 0,
                                                          "delta": piece, "logprobs": []}))
            ev.append(("response.output_text.done", {"item_id": item["id"], "output_index": idx, "content_index": 0,
                                                     "text": text, "logprobs": []}))
            ev.append(("response.content_part.done", {"item_id": item["id"], "output_index": idx, "content_index": 0,
                                                      "part": item["content"][0]}))
        else:
            ev.append(("response.output_item.added", {"output_index": idx, "item": {**item, "status": "in_progress", "arguments": ""}}))
            for piece in split2(item["arguments"]):
                ev.append(("response.function_call_arguments.delta", {"item_id": item["id"], "output_index": idx, "delta": piece}))
            ev.append(("response.function_call_arguments.done", {"item_id": item["id"], "output_index": idx,
                                                                 "name": item["name"], "arguments": item["arguments"]}))
        ev.append(("response.output_item.done", {"output_index": idx, "item": item}))
    ev.append(("response.completed", {"response": responses_body(rid, model, body, text, calls)}))
    return [(name, {"type": name, "sequence_number": i, **data}) for i, (name, data) in enumerate(ev)]


# ---------------------------------------------------------------- anthropic messages
def anthropic_content(text, calls):
    content = [{"type": "text", "text": text}] if text is not None else []
    content += [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["arguments"]} for c in calls]
    return content


def anthropic_body(rid, model, text, calls):
    return {"id": rid, "type": "message", "role": "assistant", "model": model,
            "content": anthropic_content(text, calls), "stop_reason": "tool_use" if calls else "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 50, "output_tokens": 10,
                                             "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}


def anthropic_events(rid, model, text, calls):
    start = anthropic_body(rid, model, text, calls)
    start.update(content=[], stop_reason=None, usage={"input_tokens": 50, "output_tokens": 1})
    ev = [("message_start", {"message": start}), ("ping", {})]
    for idx, block in enumerate(anthropic_content(text, calls)):
        if block["type"] == "text":
            ev.append(("content_block_start", {"index": idx, "content_block": {"type": "text", "text": ""}}))
            for piece in split2(text):
                ev.append(("content_block_delta", {"index": idx, "delta": {"type": "text_delta", "text": piece}}))
        else:
            ev.append(("content_block_start", {"index": idx, "content_block": {**block, "input": {}}}))
            for piece in split2(json.dumps(block["input"])):
                ev.append(("content_block_delta", {"index": idx, "delta": {"type": "input_json_delta", "partial_json": piece}}))
        ev.append(("content_block_stop", {"index": idx}))
    ev.append(("message_delta", {"delta": {"stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None},
                                 "usage": {"output_tokens": 10}}))
    ev.append(("message_stop", {}))
    return [(name, {"type": name, **data}) for name, data in ev]


# ---------------------------------------------------------------- HTTP
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: State = None  # set by make_server

    def log_message(self, *args):
        pass

    def _json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", f"req_stub{uuid.uuid4().hex[:12]}")
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for name, data in events:
            payload = data if isinstance(data, str) else json.dumps(data)
            frame = (f"event: {name}\n" if name else "") + f"data: {payload}\n\n"
            self.wfile.write(frame.encode())
            self.wfile.flush()
        self.close_connection = True

    def _path(self):
        path = self.path.split("?", 1)[0].rstrip("/")
        return path[3:] if path.startswith("/v1/") or path == "/v1" else path

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        path = self._path()
        if path == "/_stub/log":
            return self._json(200, {"entries": list(self.state.entries)})
        if path == "/models":
            return self._json(200, {"object": "list", "data": [
                {"id": MODEL, "object": "model", "created": CREATED, "owned_by": "stub", "type": "model",
                 "display_name": "Stub model", "created_at": "2026-01-01T00:00:00Z"}],
                "has_more": False, "first_id": MODEL, "last_id": MODEL})
        if path.startswith("/models/"):
            mid = path[len("/models/"):]
            return self._json(200, {"id": mid, "object": "model", "created": CREATED, "owned_by": "stub",
                                    "type": "model", "display_name": mid, "created_at": "2026-01-01T00:00:00Z"})
        if path in ("", "/health", "/healthz"):
            return self._json(200, {"status": "ok"})
        return self._json(404, {"error": {"message": f"stub: no such path {self.path}", "type": "not_found"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            return self._json(400, {"error": {"message": "stub: body is not JSON", "type": "invalid_request_error"}})
        path = self._path()
        st = self.state
        model = body.get("model") or MODEL
        if path == "/_stub/plan":
            st.set_plan(body.get("plan"), body.get("no_tools_text"), body.get("log"), body.get("results_marker"))
            return self._json(200, {"ok": True})
        if path == "/chat/completions":
            rid, text, calls = plan_answer(st, "chat_completions", body, chat_results(body), chat_tools(body))
            if body.get("stream"):
                inc = bool((body.get("stream_options") or {}).get("include_usage"))
                return self._sse(chat_chunks(rid, model, text, calls, inc))
            return self._json(200, chat_body(rid, model, text, calls))
        if path == "/responses":
            rid, text, calls = plan_answer(st, "responses", body, responses_results(st, body), responses_tools(body))
            if body.get("stream"):
                return self._sse(responses_events(rid, model, body, text, calls))
            return self._json(200, responses_body(rid, model, body, text, calls))
        if path == "/messages":
            rid, text, calls = plan_answer(st, "anthropic_messages", body, anthropic_results(body), anthropic_tools(body))
            if body.get("stream"):
                return self._sse(anthropic_events(rid, model, text, calls))
            return self._json(200, anthropic_body(rid, model, text, calls))
        if path == "/messages/count_tokens":
            return self._json(200, {"input_tokens": 50})
        if path == "/embeddings":
            inputs = body.get("input")
            n = len(inputs) if isinstance(inputs, list) else 1
            return self._json(200, {"object": "list", "model": model,
                                    "data": [{"object": "embedding", "index": i, "embedding": [0.0] * 8} for i in range(n)],
                                    "usage": {"prompt_tokens": 5, "total_tokens": 5}})
        st.log({"kind": "unknown", "path": self.path, "body": body, "time": time.time()})
        return self._json(404, {"error": {"message": f"stub: no such path {self.path}", "type": "not_found"}})


def start(port=0, log=None, plan=None):
    """Start the server in a daemon thread; returns (server, port)."""
    handler = type("BoundHandler", (Handler,), {"state": State(log, plan)})
    if log:
        open(log, "w").close()
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--log")
    ap.add_argument("--plan", help="JSON file with {plan: [...], no_tools_text: ...}")
    a = ap.parse_args()
    server, port = start(a.port, a.log)
    if a.plan:
        with open(a.plan) as f:
            p = json.load(f)
        server.RequestHandlerClass.state.set_plan(p.get("plan"), p.get("no_tools_text"), None, p.get("results_marker"))
    print(f"STUB_PORT={port}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

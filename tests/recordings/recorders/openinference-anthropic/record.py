"""openinference-anthropic: the anthropic SDK instrumented by openinference-instrumentation-anthropic.

Scenarios (the user's own loop over the Messages API inside one plain parent span; no tool spans):
  messages-loop                 messages.create, tool_use blocks out, tool_result blocks back
  messages-loop-streamed        messages.create(stream=True), events consumed by hand
  messages-loop-stream-helper   the messages.stream() helper (get_final_message)
  messages-loop-sdk-content     messages-loop with the SDK's own tracing in content mode
                                (ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE=content)
The anthropic SDK traces its own API calls (scope com.anthropic.sdk.python, on by default, metadata only):
every LLM span has such a CLIENT span next to it.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import harness  # noqa: E402
from harness import Scenario  # noqa: E402

LIBRARIES = ["anthropic", "openinference-instrumentation-anthropic", "openinference-instrumentation",
             "openinference-semantic-conventions", "opentelemetry-api", "opentelemetry-sdk"]
MODEL = "claude-sonnet-5-5"


def ask(client, mode, **kw):
    """One model call; returns the content blocks as dicts."""
    if mode == "plain":
        return [b.model_dump() for b in client.messages.create(**kw).content]
    if mode == "helper":
        with client.messages.stream(**kw) as s:
            return [b.model_dump() for b in s.get_final_message().content]
    blocks = {}  # create(stream=True): rebuild the blocks from the raw events
    for ev in client.messages.create(stream=True, **kw):
        if ev.type == "content_block_start":
            blocks[ev.index] = ev.content_block.model_dump() | {"_json": ""}
        elif ev.type == "content_block_delta" and ev.delta.type == "text_delta":
            blocks[ev.index]["text"] += ev.delta.text
        elif ev.type == "content_block_delta" and ev.delta.type == "input_json_delta":
            blocks[ev.index]["_json"] += ev.delta.partial_json
    out = []
    for i in sorted(blocks):
        b = blocks[i]
        j = b.pop("_json")
        if b["type"] == "tool_use":
            b["input"] = json.loads(j or "{}")
        out.append(b)
    return out


def messages_loop(ctx, mode):
    from anthropic import Anthropic
    from openinference.instrumentation.anthropic import AnthropicInstrumentor

    AnthropicInstrumentor().instrument(tracer_provider=ctx.tracer_provider)
    client = Anthropic(base_url=ctx.stub_url, api_key="stub")
    tools = ctx.tools()
    messages = [{"role": "user", "content": harness.USER_PROMPT}]
    with ctx.tracer_provider.get_tracer("user-app").start_as_current_span("handle-request"):
        for _ in range(8):
            content = ask(client, mode, model=MODEL, max_tokens=1024, messages=messages,
                          tools=harness.anthropic_tools())
            uses = [b for b in content if b["type"] == "tool_use"]
            if not uses:
                return
            messages.append({"role": "assistant", "content": [
                {k: v for k, v in b.items() if k in ("type", "id", "name", "input", "text")} for b in content]})
            results = []
            for b in uses:
                text = harness.tool_result_text(tools[b["name"]], b["input"])
                results.append({"type": "tool_result", "tool_use_id": b["id"], "content": text,
                                **({"is_error": True} if text.startswith("Error: ") else {})})
            messages.append({"role": "user", "content": results})


NOTES = ("No tool spans: the user's own loop over the Messages API; tool calls are tool_use blocks in the LLM "
         "spans' output, results are tool_result blocks (a user message) in the next LLM span's input; the "
         "failure is sent back with is_error: true. ")

harness.main("openinference-anthropic", LIBRARIES, [
    Scenario("messages-loop", lambda ctx: messages_loop(ctx, "plain"), api="anthropic_messages", notes=NOTES.strip()),
    Scenario("messages-loop-streamed", lambda ctx: messages_loop(ctx, "stream"), api="anthropic_messages",
             streamed=True, notes=NOTES + "messages.create(stream=True), events read by the loop."),
    Scenario("messages-loop-stream-helper", lambda ctx: messages_loop(ctx, "helper"), api="anthropic_messages",
             streamed=True, notes=NOTES + "The messages.stream() helper with get_final_message()."),
    Scenario("messages-loop-sdk-content", lambda ctx: messages_loop(ctx, "plain"), api="anthropic_messages",
             env={"ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE": "content"},
             notes=NOTES + "The SDK's own CLIENT span (com.anthropic.sdk.python) also records the messages "
                           "(content mode): each model call is described by two spans."),
])

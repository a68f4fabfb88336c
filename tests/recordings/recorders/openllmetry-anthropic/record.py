"""openllmetry-anthropic: the anthropic SDK instrumented by traceloop's opentelemetry-instrumentation-anthropic.

Scenarios (all: the user's own loop over Messages, inside one plain parent span unless said otherwise):
  messages-loop           non-streamed `messages.create`; no tool spans
  messages-loop-streamed  `messages.create(stream=True)`, the loop accumulates the SSE events itself
  messages-loop-stream-helper  the SDK's `messages.stream()` helper (`get_final_message()`)
  messages-loop-events    AnthropicInstrumentor(use_attributes=False): content as log records
  messages-loop-sdk-content  ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE=content: the anthropic SDK's own spans
                          (scope com.anthropic.sdk.python, present in every scenario) carry content too
  sdk-tools               Traceloop.init() + @agent around the loop and @tool around each tool function;
                          get_forecast is called positionally
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import harness  # noqa: E402
from harness import Scenario  # noqa: E402

LIBRARIES = ["anthropic", "opentelemetry-instrumentation-anthropic", "traceloop-sdk",
             "opentelemetry-semantic-conventions-ai", "opentelemetry-api", "opentelemetry-sdk"]
MODEL = "claude-sonnet-4-5"


def anthropic_loop(client, tools, mode="plain", call_tool=None, max_turns=8):
    """The user's own loop over Anthropic Messages; tool results go back as tool_result blocks
    (is_error for a raised exception). mode: plain | stream (create(stream=True)) | helper (messages.stream())."""
    messages = [{"role": "user", "content": harness.USER_PROMPT}]
    kw = dict(model=MODEL, max_tokens=1024, tools=[t for t in harness.anthropic_tools() if t["name"] in tools])
    for _ in range(max_turns):
        if mode == "helper":
            with client.messages.stream(messages=messages, **kw) as s:
                content = [b.model_dump(exclude_none=True) for b in s.get_final_message().content]
        elif mode == "stream":
            content, partial = [], {}
            for ev in client.messages.create(messages=messages, stream=True, **kw):
                if ev.type == "content_block_start":
                    content.append(ev.content_block.model_dump(exclude_none=True))
                elif ev.type == "content_block_delta" and ev.delta.type == "text_delta":
                    content[ev.index]["text"] += ev.delta.text
                elif ev.type == "content_block_delta" and ev.delta.type == "input_json_delta":
                    partial[ev.index] = partial.get(ev.index, "") + ev.delta.partial_json
            for i, js in partial.items():
                content[i]["input"] = json.loads(js)
        else:
            content = [b.model_dump(exclude_none=True) for b in client.messages.create(messages=messages, **kw).content]
        uses = [b for b in content if b["type"] == "tool_use"]
        if not uses:
            return "".join(b.get("text", "") for b in content)
        messages.append({"role": "assistant", "content": content})
        results = []
        for b in uses:
            text = (call_tool or (lambda fn, name, args: harness.tool_result_text(fn, args)))(
                tools[b["name"]], b["name"], b["input"])
            results.append({"type": "tool_result", "tool_use_id": b["id"], "content": text,
                            **({"is_error": True} if text.startswith("Error: ") else {})})
        messages.append({"role": "user", "content": results})
    raise RuntimeError("agent loop did not finish")


def instrumented_client(ctx, **kwargs):
    from anthropic import Anthropic
    from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor

    AnthropicInstrumentor(**kwargs).instrument(tracer_provider=ctx.tracer_provider, logger_provider=ctx.logger_provider)
    return Anthropic(base_url=ctx.stub_url, api_key="stub")


def loop(mode, **kwargs):
    def run(ctx):
        c = instrumented_client(ctx, **kwargs)
        with ctx.tracer_provider.get_tracer("user-app").start_as_current_span("handle-request"):
            anthropic_loop(c, ctx.tools(), mode)
    return run


def sdk_tools(ctx):
    from anthropic import Anthropic
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from traceloop.sdk import Traceloop
    from traceloop.sdk.decorators import agent, tool

    # as in openllmetry-openai: Traceloop adds its processor to the harness's global provider and
    # instruments anthropic itself; its own exporter is a throwaway sink
    Traceloop.init(app_name="travel-app", processor=SimpleSpanProcessor(InMemorySpanExporter()),
                   telemetry_enabled=False, disable_batch=True)
    client = Anthropic(base_url=ctx.stub_url, api_key="stub")
    tools = {name: tool(name=name)(fn) for name, fn in ctx.tools().items()}

    def call_tool(fn, name, args):
        if name == "get_forecast":  # a positional call: the decorator sees args, not kwargs
            return harness.tool_result_text(lambda city, days: fn(city, days), args)
        return harness.tool_result_text(fn, args)

    @agent(name="travel_agent")
    def travel_agent(question: str) -> str:
        return anthropic_loop(client, tools, call_tool=call_tool)

    travel_agent(harness.USER_PROMPT)


NOTES_LOOP = ("Every model call has two sibling CLIENT spans: traceloop's anthropic.chat and the anthropic SDK's own "
              "anthropic.messages.create (metadata only unless its content mode is on). No tool spans: tool_use blocks only in the model spans' gen_ai.output.messages, tool_result blocks in "
              "the next model span's gen_ai.input.messages. The loop sends the failure back as a tool_result with "
              "is_error true and text 'Error: ValueError: no rooms in Paris'.")

harness.main("openllmetry-anthropic", LIBRARIES, [
    Scenario("messages-loop", loop("plain"), api="anthropic_messages", notes=NOTES_LOOP),
    Scenario("messages-loop-streamed", loop("stream"), api="anthropic_messages", streamed=True,
             notes="messages.create(stream=True). " + NOTES_LOOP),
    Scenario("messages-loop-stream-helper", loop("helper"), api="anthropic_messages", streamed=True,
             notes="messages.stream() helper. " + NOTES_LOOP),
    Scenario("messages-loop-events", loop("plain", use_attributes=False), api="anthropic_messages",
             notes="AnthropicInstrumentor(use_attributes=False): messages as log records (.logs.otlp.json), "
                   "not span attributes. The log records carry the spanId of the span current around the call "
                   "(here handle-request), not of the anthropic.chat span. No tool spans."),
    Scenario("messages-loop-sdk-content", loop("plain"), api="anthropic_messages",
             env={"ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE": "content"},
             notes="The anthropic SDK's own anthropic.messages.create spans in content mode: every model call has two "
                   "spans with content (traceloop's anthropic.chat and the SDK's). " + NOTES_LOOP),
    Scenario("sdk-tools", sdk_tools, api="anthropic_messages",
             notes="Traceloop.init(processor=...) on the global provider; @agent span 'travel_agent.agent' and @tool "
                   "spans '<name>.tool' around the recorded functions; get_forecast is called positionally "
                   "(traceloop.entity.input has it under args, not kwargs)."),
])

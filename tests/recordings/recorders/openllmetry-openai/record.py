"""openllmetry-openai: traceloop's opentelemetry-instrumentation-openai, alone and under traceloop-sdk.

Scenarios:
  chat-loop              model client instrumentation only; the user's own loop in one plain parent span
  chat-loop-streamed     the same, streamed
  chat-loop-nocontent    TRACELOOP_TRACE_CONTENT=false
  chat-loop-events       OpenAIInstrumentor(use_attributes=False): content as log records, not span attributes
  responses-loop         the user's own loop over the Responses API
  responses-loop-streamed  the same, streamed
  sdk-agent              Traceloop.init() + @agent / @tool decorators (tool spans); get_forecast is called
                         positionally by the loop
  sdk-agent-streamed     the same, streamed
  sdk-agent-nocontent    the same with TRACELOOP_TRACE_CONTENT=false
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import harness  # noqa: E402
from harness import Scenario  # noqa: E402

LIBRARIES = ["openai", "opentelemetry-instrumentation-openai", "traceloop-sdk",
             "opentelemetry-semantic-conventions-ai", "opentelemetry-api", "opentelemetry-sdk"]


def instrumented_client(ctx, **kwargs):
    from openai import OpenAI
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor(**kwargs).instrument(tracer_provider=ctx.tracer_provider,
                                            logger_provider=ctx.logger_provider)
    return OpenAI(base_url=ctx.base_url, api_key="stub")


def chat_loop(ctx, **kwargs):
    c = instrumented_client(ctx, **kwargs)
    with ctx.tracer_provider.get_tracer("user-app").start_as_current_span("handle-request"):
        harness.openai_chat_loop(c, ctx.tools(), streamed=ctx.streamed)


def chat_loop_events(ctx):
    chat_loop(ctx, use_attributes=False)


def responses_loop(ctx):
    c = instrumented_client(ctx)
    with ctx.tracer_provider.get_tracer("user-app").start_as_current_span("handle-request"):
        harness.openai_responses_loop(c, ctx.tools(), streamed=ctx.streamed)


def sdk_agent(ctx):
    from openai import OpenAI
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from traceloop.sdk import Traceloop
    from traceloop.sdk.decorators import agent, tool

    # The harness's provider is already global, so Traceloop adds its processor to it; Traceloop's own
    # exporter is a throwaway sink (the harness exporter already sees every span).
    Traceloop.init(app_name="travel-app", processor=SimpleSpanProcessor(InMemorySpanExporter()),
                   telemetry_enabled=False, disable_batch=True)
    client = OpenAI(base_url=ctx.base_url, api_key="stub")
    tools = {name: tool(name=name)(fn) for name, fn in ctx.tools().items()}

    def call_tool(fn, name, args, call_id):
        if name == "get_forecast":  # a positional call: the decorator sees args, not kwargs
            return harness.tool_result_text(lambda city, days: fn(city, days), args)
        return harness.tool_result_text(fn, args)

    @agent(name="travel_agent")
    def travel_agent(question: str) -> str:
        return harness.openai_chat_loop(client, tools, streamed=ctx.streamed, call_tool=call_tool)

    travel_agent(harness.USER_PROMPT)


NOTES_LOOP = ("No tool spans: tool calls only in the model spans' gen_ai.output.messages, tool results in the "
              "next model span's gen_ai.input.messages.")
NOTES_SDK = ("Traceloop.init(processor=...) on the global provider; @agent span 'travel_agent.agent' and @tool "
             "spans '<name>.tool' (traceloop.span.kind tool) around the recorded functions; get_forecast is "
             "called positionally (traceloop.entity.input has it under args, not kwargs).")

harness.main("openllmetry-openai", LIBRARIES, [
    Scenario("chat-loop", chat_loop, api="chat_completions", notes=NOTES_LOOP),
    Scenario("chat-loop-streamed", chat_loop, api="chat_completions", streamed=True, notes=NOTES_LOOP),
    Scenario("chat-loop-nocontent", chat_loop, api="chat_completions", content_captured=False,
             env={"TRACELOOP_TRACE_CONTENT": "false"},
             notes="TRACELOOP_TRACE_CONTENT=false: no messages on spans. " + NOTES_LOOP),
    Scenario("chat-loop-events", chat_loop_events, api="chat_completions",
             notes="OpenAIInstrumentor(use_attributes=False): messages as log records (see .logs.otlp.json), "
                   "not span attributes. No tool spans."),
    Scenario("responses-loop", responses_loop, api="responses", notes=NOTES_LOOP),
    Scenario("responses-loop-streamed", responses_loop, api="responses", streamed=True, notes=NOTES_LOOP),
    Scenario("sdk-agent", sdk_agent, api="chat_completions", notes=NOTES_SDK),
    Scenario("sdk-agent-streamed", sdk_agent, api="chat_completions", streamed=True, notes=NOTES_SDK),
    Scenario("sdk-agent-nocontent", sdk_agent, api="chat_completions", content_captured=False,
             env={"TRACELOOP_TRACE_CONTENT": "false"},
             notes="TRACELOOP_TRACE_CONTENT=false: no traceloop.entity.input/output, no messages. " + NOTES_SDK),
])

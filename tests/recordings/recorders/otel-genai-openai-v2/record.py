"""otel-genai-openai-v2: opentelemetry-instrumentation-openai-v2 (+ opentelemetry-util-genai) on the openai client.

The instrumentation only wraps Chat Completions (and embeddings), not the Responses API.
With opentelemetry-util-genai >= 1.x, `is_experimental_mode()` is always True: the instrumentation always
takes the latest-conventions path, whatever OTEL_SEMCONV_STABILITY_OPT_IN says, and the content mode is
OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT = span_only | event_only | span_and_event | no_content
(the legacy value `true` is no longer a valid mode: it logs a warning and means no_content).

Scenarios (the user's own loop inside one plain parent span, no tool spans, unless said otherwise):
  chat-loop-nocontent        capture unset (NO_CONTENT, the default)
  chat-loop-legacy-true      CAPTURE_MESSAGE_CONTENT=true, no opt-in (the pre-1.x way to turn content on)
  chat-loop-span-only        SPAN_ONLY with OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental
  chat-loop-span-only-streamed  the same, streamed
  chat-loop-event-only       EVENT_ONLY: content only in log records (gen_ai.client.inference.operation.details)
  chat-loop-span-and-event   SPAN_AND_EVENT
  execute-tool-spans         SPAN_ONLY + an invoke_agent span and one execute_tool span per tool call from
                             opentelemetry-util-genai's TelemetryHandler (invoke_local_agent / tool)
  execute-tool-spans-nocontent  the same with NO_CONTENT
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import harness  # noqa: E402
from harness import Scenario  # noqa: E402

LIBRARIES = ["openai", "opentelemetry-instrumentation-openai-v2", "opentelemetry-util-genai",
             "opentelemetry-api", "opentelemetry-sdk", "opentelemetry-semantic-conventions"]
OPT_IN = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}


def mode(value):
    return {**OPT_IN, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": value}


def instrumented_client(ctx):
    from openai import OpenAI
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=ctx.tracer_provider, logger_provider=ctx.logger_provider)
    return OpenAI(base_url=ctx.base_url, api_key="stub")


def chat_loop(ctx):
    c = instrumented_client(ctx)
    with ctx.tracer_provider.get_tracer("user-app").start_as_current_span("handle-request"):
        harness.openai_chat_loop(c, ctx.tools(), streamed=ctx.streamed)


def execute_tool_spans(ctx):
    from opentelemetry.util.genai.handler import TelemetryHandler

    c = instrumented_client(ctx)
    handler = TelemetryHandler(tracer_provider=ctx.tracer_provider, logger_provider=ctx.logger_provider)
    descriptions = {f.__name__: f.__doc__ for f in harness.COMMON_TOOLS}

    def call_tool(fn, name, args, call_id):
        try:  # util-genai 1.1b0 API: tool(name, *, tool_call_id, tool_type, tool_description)
            with handler.tool(name, tool_call_id=call_id, tool_type="function",
                              tool_description=descriptions[name]) as inv:
                inv.arguments = args
                out = fn(**args)
                inv.tool_result = out
        except Exception as e:  # the span already recorded the failure; tell the model
            return f"Error: {type(e).__name__}: {e}"
        return harness.tool_result_text(lambda: out, {})

    with handler.invoke_local_agent(agent_name="travel_agent", request_model=harness.MODEL):
        harness.openai_chat_loop(c, ctx.tools(), call_tool=call_tool)


NOTES_LOOP = "No tool spans: the user's own loop; tool calls only in the chat spans' messages (if captured)."
NOTES_TOOLS = ("invoke_agent span from TelemetryHandler.invoke_local_agent and one 'execute_tool <name>' span per "
               "call from TelemetryHandler.tool(), with gen_ai.tool.call.id set from the model's call id.")

harness.main("otel-genai-openai-v2", LIBRARIES, [
    Scenario("chat-loop-nocontent", chat_loop, api="chat_completions", content_captured=False,
             notes="CAPTURE_MESSAGE_CONTENT unset: no message content anywhere. " + NOTES_LOOP),
    Scenario("chat-loop-legacy-true", chat_loop, api="chat_completions", content_captured=False,
             env={"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"},
             notes="CAPTURE_MESSAGE_CONTENT=true (legacy value) without opt-in: util-genai warns 'true is not a "
                   "valid option' and captures NO content. " + NOTES_LOOP),
    Scenario("chat-loop-span-only", chat_loop, api="chat_completions", env=mode("span_only"), notes=NOTES_LOOP),
    Scenario("chat-loop-span-only-streamed", chat_loop, api="chat_completions", streamed=True,
             env=mode("span_only"), notes=NOTES_LOOP),
    Scenario("chat-loop-event-only", chat_loop, api="chat_completions", env=mode("event_only"),
             notes="Content only in log records (.logs.otlp.json), none on spans. " + NOTES_LOOP),
    Scenario("chat-loop-span-and-event", chat_loop, api="chat_completions", env=mode("span_and_event"),
             notes="Content both on spans and in log records. " + NOTES_LOOP),
    Scenario("execute-tool-spans", execute_tool_spans, api="chat_completions", env=mode("span_only"),
             notes=NOTES_TOOLS),
    Scenario("execute-tool-spans-nocontent", execute_tool_spans, api="chat_completions", content_captured=False,
             notes="NO_CONTENT: execute_tool spans carry name, call id, type, description but no arguments or "
                   "result. " + NOTES_TOOLS),
])

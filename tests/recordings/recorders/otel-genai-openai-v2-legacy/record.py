"""otel-genai-openai-v2-legacy: opentelemetry-instrumentation-openai-v2 on its legacy path (semconv v1.30).

Same instrumentation as otel-genai-openai-v2 but opentelemetry-util-genai 0.4b0 and no
OTEL_SEMCONV_STABILITY_OPT_IN: message content goes to log records (gen_ai.user.message,
gen_ai.assistant.message, gen_ai.tool.message, gen_ai.choice) when
OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.

Scenarios (the user's own loop inside one plain parent span; no tool spans):
  chat-loop            CAPTURE_MESSAGE_CONTENT=true
  chat-loop-streamed   the same, streamed
  chat-loop-nocontent  capture unset: the log records still come, without content
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import harness  # noqa: E402
from harness import Scenario  # noqa: E402

LIBRARIES = ["openai", "opentelemetry-instrumentation-openai-v2", "opentelemetry-util-genai",
             "opentelemetry-api", "opentelemetry-sdk", "opentelemetry-semantic-conventions"]
CONTENT = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}


def chat_loop(ctx):
    from openai import OpenAI
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=ctx.tracer_provider, logger_provider=ctx.logger_provider)
    c = OpenAI(base_url=ctx.base_url, api_key="stub")
    with ctx.tracer_provider.get_tracer("user-app").start_as_current_span("handle-request"):
        harness.openai_chat_loop(c, ctx.tools(), streamed=ctx.streamed)


NOTES = "No tool spans: tool calls only in the log records of each chat span (.logs.otlp.json). "

harness.main("otel-genai-openai-v2-legacy", LIBRARIES, [
    Scenario("chat-loop", chat_loop, api="chat_completions", env=CONTENT, notes=NOTES),
    Scenario("chat-loop-streamed", chat_loop, api="chat_completions", streamed=True, env=CONTENT, notes=NOTES),
    Scenario("chat-loop-nocontent", chat_loop, api="chat_completions", content_captured=False,
             notes=NOTES + "Capture off: the records keep tool call ids, names and roles but no arguments "
                           "or contents."),
])

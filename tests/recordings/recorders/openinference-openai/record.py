"""openinference-openai: the openai client instrumented by openinference-instrumentation-openai.

Scenarios:
  chat-loop            the user's own loop over Chat Completions inside one plain parent span; no tool spans
  chat-loop-streamed   the same, streamed (stream_options.include_usage)
  chat-loop-noparent   the same loop with no parent span: every model call is its own trace
  responses-loop       the user's own loop over the Responses API, non-streamed
  responses-loop-streamed  the same, streamed
  oitracer-agent       @tracer.agent around the loop and @tracer.tool tools from openinference's OITracer
  oitracer-agent-hidden  the same with OPENINFERENCE_HIDE_INPUTS/OUTPUTS=true (no content on spans)
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import harness  # noqa: E402
from harness import Scenario  # noqa: E402

LIBRARIES = ["openai", "openinference-instrumentation-openai", "openinference-instrumentation",
             "openinference-semantic-conventions", "opentelemetry-api", "opentelemetry-sdk"]


def client(ctx):
    from openai import OpenAI
    from openinference.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=ctx.tracer_provider)
    return OpenAI(base_url=ctx.base_url, api_key="stub")


def chat_loop(ctx):
    c = client(ctx)
    tracer = ctx.tracer_provider.get_tracer("user-app")
    with tracer.start_as_current_span("handle-request"):
        harness.openai_chat_loop(c, ctx.tools(), streamed=ctx.streamed)


def chat_loop_noparent(ctx):
    harness.openai_chat_loop(client(ctx), ctx.tools(), streamed=ctx.streamed)


def responses_loop(ctx):
    c = client(ctx)
    tracer = ctx.tracer_provider.get_tracer("user-app")
    with tracer.start_as_current_span("handle-request"):
        harness.openai_responses_loop(c, ctx.tools(), streamed=ctx.streamed)


def oi_tracer_provider(resource):
    from openinference.instrumentation import TracerProvider

    return TracerProvider(resource=resource)  # its get_tracer() returns an OITracer


def oitracer_agent(ctx):
    c = client(ctx)
    tracer = ctx.tracer_provider.get_tracer("user-app")
    tools = {name: tracer.tool(fn) for name, fn in ctx.tools().items()}

    @tracer.agent
    def travel_agent(question: str) -> str:
        return harness.openai_chat_loop(c, tools)

    travel_agent(harness.USER_PROMPT)


OI_NOTES = ("Tool spans come from OITracer.tool (openinference.span.kind TOOL) around the recorded function; "
            "the model calls come from the OpenAI instrumentation under an AGENT span. ")

harness.main("openinference-openai", LIBRARIES, [
    Scenario("chat-loop", chat_loop, api="chat_completions",
             notes="No tool spans: tool calls are only in the LLM spans' output messages "
                   "(and the tool results in the next LLM span's input messages)."),
    Scenario("chat-loop-streamed", chat_loop, api="chat_completions", streamed=True,
             notes="No tool spans; streamed with include_usage."),
    Scenario("chat-loop-noparent", chat_loop_noparent, api="chat_completions",
             notes="No parent span: each model call is its own trace. A tool call belongs to the trace of the "
                   "LLM span whose output carried it (trace_from: model_span); its output only appears in the "
                   "NEXT trace's input messages."),
    Scenario("responses-loop", responses_loop, api="responses",
             notes="No tool spans: Responses API, the whole input resent each turn (no previous_response_id)."),
    Scenario("responses-loop-streamed", responses_loop, api="responses", streamed=True,
             notes="No tool spans: Responses API, streamed."),
    Scenario("oitracer-agent", oitracer_agent, api="chat_completions", tracer_provider_factory=oi_tracer_provider,
             notes=OI_NOTES + "TracerProvider is openinference.instrumentation.TracerProvider (10000 attributes)."),
    Scenario("oitracer-agent-hidden", oitracer_agent, api="chat_completions", content_captured=False,
             tracer_provider_factory=oi_tracer_provider,
             env={"OPENINFERENCE_HIDE_INPUTS": "true", "OPENINFERENCE_HIDE_OUTPUTS": "true"},
             notes=OI_NOTES + "OPENINFERENCE_HIDE_INPUTS/OUTPUTS=true: no input/output values or messages."),
])

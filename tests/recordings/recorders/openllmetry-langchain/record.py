"""openllmetry-langchain: a LangChain 1.x agent (`langchain.agents.create_agent`, the successor of langgraph's
deprecated `create_react_agent`; it builds a langgraph graph) over ChatOpenAI, traced by traceloop's
opentelemetry-instrumentation-langchain (a LangChain callback handler plus wrappers).

The common tools are plain LangChain tools (`langchain_core.tools.tool(fn)`); a raised exception would abort the
run, so `ToolErrorMiddleware` turns it into an error ToolMessage 'Error: ValueError: no rooms in Paris' (the
documented way to send it back to the model).

Scenarios:
  agent                  LangchainInstrumentor().instrument() only; agent.invoke
  agent-streamed         the same with ChatOpenAI(streaming=True) and agent.stream(stream_mode="messages")
  agent-nocontent        TRACELOOP_TRACE_CONTENT=false
  sdk-agent              Traceloop.init() (instruments langchain AND openai: openai.chat spans under the LangChain ones)
  sdk-tool-decorated     Traceloop.init() and each tool function ALSO decorated with traceloop-sdk's @tool before
                         LangChain wraps it: every call gets two tool spans
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import harness  # noqa: E402
from harness import Scenario  # noqa: E402

LIBRARIES = ["langchain", "langchain-core", "langgraph", "langchain-openai", "openai",
             "opentelemetry-instrumentation-langchain", "opentelemetry-instrumentation-openai", "traceloop-sdk",
             "opentelemetry-semantic-conventions-ai", "opentelemetry-api", "opentelemetry-sdk"]


def run_agent(ctx, fns):
    from langchain.agents import create_agent
    from langchain.agents.middleware import ToolErrorMiddleware
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model=harness.MODEL, base_url=ctx.base_url, api_key="stub", streaming=ctx.streamed)
    agent = create_agent(model, tools=[tool(fn) for fn in fns],
                         middleware=[ToolErrorMiddleware(lambda e, req: f"Error: {type(e).__name__}: {e}")])
    inputs = {"messages": [{"role": "user", "content": harness.USER_PROMPT}]}
    if ctx.streamed:
        for _ in agent.stream(inputs, stream_mode="messages"):
            pass
    else:
        ctx.note(f"Final answer: {agent.invoke(inputs)['messages'][-1].content!r}.")


def instrumented(ctx):
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor

    LangchainInstrumentor().instrument(tracer_provider=ctx.tracer_provider)
    run_agent(ctx, ctx.tools().values())


def traceloop_init():
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from traceloop.sdk import Traceloop

    # as in openllmetry-openai: Traceloop adds its processor to the harness's global provider; its own exporter
    # is a throwaway sink
    Traceloop.init(app_name="travel-app", processor=SimpleSpanProcessor(InMemorySpanExporter()),
                   telemetry_enabled=False, disable_batch=True)


def sdk_agent(ctx):
    traceloop_init()
    run_agent(ctx, ctx.tools().values())


def sdk_tool_decorated(ctx):
    from traceloop.sdk.decorators import tool as traceloop_tool

    traceloop_init()
    run_agent(ctx, [traceloop_tool(name=name)(fn) for name, fn in ctx.tools().items()])


NOTES = ("create_agent + ToolErrorMiddleware (error ToolMessage 'Error: ValueError: no rooms in Paris'). "
         "Constructing the agent leaves its own one-span trace 'create_agent' (no tool calls).")

harness.main("openllmetry-langchain", LIBRARIES, [
    Scenario("agent", instrumented, api="chat_completions", notes="LangchainInstrumentor only. " + NOTES),
    Scenario("agent-streamed", instrumented, api="chat_completions", streamed=True,
             notes="LangchainInstrumentor only; ChatOpenAI(streaming=True), agent.stream(stream_mode='messages'). "
                   + NOTES),
    Scenario("agent-nocontent", instrumented, api="chat_completions", content_captured=False,
             env={"TRACELOOP_TRACE_CONTENT": "false"},
             notes="LangchainInstrumentor only, TRACELOOP_TRACE_CONTENT=false. " + NOTES),
    Scenario("sdk-agent", sdk_agent, api="chat_completions",
             notes="Traceloop.init(): langchain and openai instrumentations. " + NOTES),
    Scenario("sdk-tool-decorated", sdk_tool_decorated, api="chat_completions",
             notes="Traceloop.init(); each tool function is decorated with traceloop-sdk's @tool AND wrapped as a "
                   "LangChain tool: every call has a LangChain tool span and a nested traceloop @tool span. " + NOTES),
])

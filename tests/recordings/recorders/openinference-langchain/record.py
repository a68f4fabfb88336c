"""openinference-langchain: LangChain / LangGraph agents traced by openinference-instrumentation-langchain.

The four tools are langchain_core `@tool`s (get_weather has one parameter, city); the model is langchain-openai's
ChatOpenAI on Chat Completions. LangChainInstrumentor traces every LangChain run (graph, nodes, model, tools).

Scenarios:
  create-agent            langchain.agents.create_agent (the current LangGraph agent), agent.invoke
  create-agent-streamed   the same with ChatOpenAI(streaming=True) and agent.stream(stream_mode="messages")
  react-agent             langgraph.prebuilt.create_react_agent (deprecated, still shipped), agent.invoke
  react-agent-streamed    the same, ChatOpenAI(streaming=True) and agent.stream(stream_mode="values")
"""

import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import harness  # noqa: E402
from harness import Scenario  # noqa: E402

LIBRARIES = ["langchain", "langchain-core", "langgraph", "langgraph-prebuilt", "langchain-openai", "openai",
             "openinference-instrumentation-langchain", "openinference-instrumentation",
             "openinference-semantic-conventions", "opentelemetry-api", "opentelemetry-sdk"]


def error_text(e):
    return f"Error: {type(e).__name__}: {e}"


def run(ctx, kind):
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from openinference.instrumentation.langchain import LangChainInstrumentor

    LangChainInstrumentor().instrument(tracer_provider=ctx.tracer_provider)
    model = ChatOpenAI(model=harness.MODEL, base_url=ctx.base_url, api_key="stub", streaming=ctx.streamed)
    tools = [tool(fn) for fn in ctx.tools().values()]
    if kind == "create-agent":
        from langchain.agents import create_agent
        from langchain.agents.middleware import ToolErrorMiddleware

        agent = create_agent(model, tools, middleware=[ToolErrorMiddleware(lambda e, req: error_text(e))])
    else:
        from langgraph.prebuilt import ToolNode, create_react_agent

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            agent = create_react_agent(model, ToolNode(tools, handle_tool_errors=error_text))
    inputs = {"messages": [{"role": "user", "content": harness.USER_PROMPT}]}
    if not ctx.streamed:
        final = agent.invoke(inputs)["messages"][-1]
    elif kind == "create-agent":  # (message chunk, metadata) pairs, tool messages included
        final = "".join(str(m.content) for m, _ in agent.stream(inputs, stream_mode="messages"))
    else:
        final = [c["messages"][-1].content for c in agent.stream(inputs, stream_mode="values")][-1]
    assert getattr(final, "content", final).endswith("Done."), final


NOTES = ("LangGraph agent: root CHAIN span 'LangGraph', node spans, one LLM span 'ChatOpenAI' per model call and "
         "one TOOL span per call (named after the tool). ")

harness.main("openinference-langchain", LIBRARIES, [
    Scenario("create-agent", lambda ctx: run(ctx, "create-agent"), api="chat_completions",
             notes=NOTES + "langchain.agents.create_agent; ToolErrorMiddleware turns the ValueError into a "
                           "ToolMessage(status='error') 'Error: ValueError: no rooms in Paris'."),
    Scenario("create-agent-streamed", lambda ctx: run(ctx, "create-agent"), api="chat_completions", streamed=True,
             notes=NOTES + "create_agent, ChatOpenAI(streaming=True), agent.stream(stream_mode='messages')."),
    Scenario("react-agent", lambda ctx: run(ctx, "react-agent"), api="chat_completions",
             notes=NOTES + "langgraph.prebuilt.create_react_agent with ToolNode(handle_tool_errors=...)."),
    Scenario("react-agent-streamed", lambda ctx: run(ctx, "react-agent"), api="chat_completions", streamed=True,
             notes=NOTES + "create_react_agent, ChatOpenAI(streaming=True), agent.stream(stream_mode='values')."),
])

"""openinference-haystack: a Haystack Agent (OpenAIChatGenerator + the four tools) under
openinference-instrumentation-haystack.

Scenarios:
  agent           Agent(chat_generator=OpenAIChatGenerator(...), tools=[Tool from each function]).run(...)
  agent-streamed  the same with a streaming_callback (the chat generator streams)
  pipeline-agent  the README's order: instrument() first, then import haystack and run the Agent as the only
                  component of a Pipeline
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import harness  # noqa: E402
from harness import Scenario  # noqa: E402

LIBRARIES = ["haystack-ai", "openai", "openinference-instrumentation-haystack", "openinference-instrumentation",
             "openinference-semantic-conventions", "opentelemetry-api", "opentelemetry-sdk"]


def make_agent(ctx, instrument=True):
    from haystack.components.agents import Agent
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.tools import create_tool_from_function
    from haystack.utils import Secret
    from openinference.instrumentation.haystack import HaystackInstrumentor

    if instrument:  # after the imports: outside a Pipeline, only component classes registered by then are wrapped
        HaystackInstrumentor().instrument(tracer_provider=ctx.tracer_provider)

    generator = OpenAIChatGenerator(model=harness.MODEL, api_base_url=ctx.base_url, api_key=Secret.from_token("stub"))
    tools = [create_tool_from_function(fn) for fn in ctx.tools().values()]
    kwargs = {"streaming_callback": lambda chunk: None} if ctx.streamed else {}
    return Agent(chat_generator=generator, tools=tools, system_prompt="You are a travel agent.", **kwargs)


def agent(ctx):
    from haystack.dataclasses import ChatMessage

    result = make_agent(ctx).run(messages=[ChatMessage.from_user(harness.USER_PROMPT)])
    assert result["last_message"].text == "Done.", result["last_message"]


def pipeline_agent(ctx):
    from openinference.instrumentation.haystack import HaystackInstrumentor

    HaystackInstrumentor().instrument(tracer_provider=ctx.tracer_provider)
    from haystack import Pipeline
    from haystack.dataclasses import ChatMessage

    p = Pipeline()
    p.add_component("agent", make_agent(ctx, instrument=False))
    result = p.run({"agent": {"messages": [ChatMessage.from_user(harness.USER_PROMPT)]}})
    assert result["agent"]["last_message"].text == "Done.", result


NOTES = ("haystack-ai 3.x: the Agent calls the chat generator and the tools directly (no Pipeline, and the "
         "ToolInvoker component of 2.x is gone); openinference wraps every component's run(), so there are "
         "Agent and OpenAIChatGenerator spans but no tool spans. ")

harness.main("openinference-haystack", LIBRARIES, [
    Scenario("agent", agent, api="chat_completions", notes=NOTES),
    Scenario("agent-streamed", agent, api="chat_completions", streamed=True, notes=NOTES + "Streamed."),
    Scenario("pipeline-agent", pipeline_agent, api="chat_completions",
             notes=NOTES + "Instrumented before haystack was imported (the README's order) and run in a Pipeline: "
                           "only components the Pipeline runs itself get spans (Pipeline.run, Agent.run); the "
                           "Agent's chat generator is called directly, so there are NO LLM spans."),
])

"""openinference-openai-agents: the OpenAI Agents SDK traced by openinference-instrumentation-openai-agents.

One Agent with the four tools as function_tool(strict_mode=False) (plan_trip takes a free-form dict),
run by the SDK's own loop; OpenAIAgentsInstrumentor turns the SDK's trace processor events into OTel spans
(exclusive_processor: the SDK's OpenAI trace exporter is replaced, nothing leaves the machine).

Scenarios:
  runner-responses            Runner.run, OpenAIResponsesModel (the SDK's default API)
  runner-responses-streamed   Runner.run_streamed, Responses API
  runner-chat                 Runner.run, OpenAIChatCompletionsModel
  runner-chat-streamed        Runner.run_streamed, Chat Completions
  runner-responses-openai     runner-responses with openinference-instrumentation-openai ALSO instrumenting the
                              openai client: every model call is described by two LLM spans
"""

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import harness  # noqa: E402
from harness import Scenario  # noqa: E402

LIBRARIES = ["openai-agents", "openai", "openinference-instrumentation-openai-agents",
             "openinference-instrumentation-openai", "openinference-instrumentation",
             "openinference-semantic-conventions", "opentelemetry-api", "opentelemetry-sdk"]


def run(ctx, api="responses", also_openai=False):
    from agents import Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner, function_tool
    from openai import AsyncOpenAI
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    OpenAIAgentsInstrumentor().instrument(tracer_provider=ctx.tracer_provider)
    if also_openai:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        OpenAIInstrumentor().instrument(tracer_provider=ctx.tracer_provider)
    client = AsyncOpenAI(base_url=ctx.base_url, api_key="stub")
    model_cls = OpenAIResponsesModel if api == "responses" else OpenAIChatCompletionsModel
    # failure_error_function: the default one hides the exception ("An error occurred while running the tool...")
    tools = [function_tool(fn, strict_mode=False, failure_error_function=lambda c, e: f"Error: {type(e).__name__}: {e}")
             for fn in ctx.tools().values()]
    agent = Agent(name="travel_agent", instructions="Help with travel.", tools=tools,
                  model=model_cls(model=harness.MODEL, openai_client=client))

    async def go():
        if ctx.streamed:
            result = Runner.run_streamed(agent, harness.USER_PROMPT)
            async for _ in result.stream_events():
                pass
        else:
            result = await Runner.run(agent, harness.USER_PROMPT)
        assert result.final_output == "Done.", result.final_output

    asyncio.run(go())


NOTES = ("The SDK's own loop: root AGENT span 'Agent workflow', AGENT span 'travel_agent', one LLM span per model "
         "call ('response' or 'generation'), one TOOL span per call (named after the tool, no call id). "
         "failure_error_function sends 'Error: ValueError: no rooms in Paris' back to the model. ")

harness.main("openinference-openai-agents", LIBRARIES, [
    Scenario("runner-responses", lambda ctx: run(ctx), api="responses", notes=NOTES + "Responses API."),
    Scenario("runner-responses-streamed", lambda ctx: run(ctx), api="responses", streamed=True,
             notes=NOTES + "Responses API, Runner.run_streamed."),
    Scenario("runner-chat", lambda ctx: run(ctx, "chat"), api="chat_completions",
             notes=NOTES + "OpenAIChatCompletionsModel."),
    Scenario("runner-chat-streamed", lambda ctx: run(ctx, "chat"), api="chat_completions", streamed=True,
             notes=NOTES + "OpenAIChatCompletionsModel, Runner.run_streamed."),
    Scenario("runner-responses-openai", lambda ctx: run(ctx, also_openai=True), api="responses",
             notes=NOTES + "Responses API; openinference-instrumentation-openai is instrumented too, so each model "
                           "call has a second LLM span ('Response', scope openinference.instrumentation.openai) as "
                           "a child of the SDK's 'response' span."),
])

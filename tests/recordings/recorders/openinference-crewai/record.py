"""openinference-crewai: a crewAI Crew (one Agent with the four tools, one Task) under
openinference-instrumentation-crewai.

Scenarios:
  crew   Crew(agents=[Agent(tools=[@tool functions], llm=LLM("openai/gpt-4o-mini", base_url=stub))],
         tasks=[Task(...)]).kickoff(); CrewAIInstrumentor alone, as in its README (crewAI 1.x calls OpenAI
         through its native provider, the openai SDK; there are no model spans)
  crew-litellm  the same with LLM(..., is_litellm=True) and LiteLLMInstrumentor added, as the Phoenix CrewAI
         docs recommend for crewAI >= 0.63 (litellm model spans under the agent span)
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import harness  # noqa: E402
from harness import Scenario  # noqa: E402

LIBRARIES = ["crewai", "openai", "litellm", "openinference-instrumentation-litellm", "openinference-instrumentation-crewai", "openinference-instrumentation",
             "openinference-semantic-conventions", "opentelemetry-api", "opentelemetry-sdk"]


def crew(ctx, litellm=False):
    from openinference.instrumentation.crewai import CrewAIInstrumentor

    CrewAIInstrumentor().instrument(tracer_provider=ctx.tracer_provider)
    if litellm:
        from openinference.instrumentation.litellm import LiteLLMInstrumentor

        LiteLLMInstrumentor().instrument(tracer_provider=ctx.tracer_provider)
    from crewai import LLM, Agent, Crew, Task
    from crewai.tools import tool

    llm = LLM(model=f"openai/{harness.MODEL}", base_url=ctx.base_url, api_key="stub", is_litellm=litellm)
    agent = Agent(role="Travel agent", goal="Help the user travel", backstory="You plan trips.", llm=llm,
                  tools=[tool(fn) for fn in ctx.tools().values()], verbose=False)
    task = Task(description=harness.USER_PROMPT, expected_output="A short confirmation", agent=agent)
    out = Crew(agents=[agent], tasks=[task], verbose=False).kickoff()
    assert str(out) == "Done.", out


def crew_litellm(ctx):
    crew(ctx, litellm=True)


harness.main("openinference-crewai", LIBRARIES, [
    Scenario("crew", crew, api="chat_completions",
             notes="Native function calling through crewAI's OpenAI provider; no model spans, tool spans without "
                   "call ids. plan_trip's dict goes back to the model as str() (Python repr)."),
    Scenario("crew-litellm", crew_litellm, api="chat_completions",
             notes="LLM(is_litellm=True) + LiteLLMInstrumentor: litellm 'completion' model spans carry the calls "
                   "with ids; crewAI tool spans as in crew."),
])

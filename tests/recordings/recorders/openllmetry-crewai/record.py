"""openllmetry-crewai: a one-agent, one-task crewAI crew traced by traceloop's opentelemetry-instrumentation-crewai.
The LLM is crewAI's native OpenAI provider (`LLM(model="openai/gpt-4o-mini", base_url=<stub>/v1)`), the common
tools are crewAI tools made with `crewai.tools.tool(fn)`.

Scenarios:
  crew                   CrewAIInstrumentor only
  crew-openai            CrewAIInstrumentor + traceloop's OpenAIInstrumentor (the model calls go through the openai SDK)
  crew-openai-streamed   the same with LLM(stream=True)
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import harness  # noqa: E402
from harness import Scenario  # noqa: E402

LIBRARIES = ["crewai", "opentelemetry-instrumentation-crewai", "opentelemetry-instrumentation-openai", "openai",
             "opentelemetry-semantic-conventions-ai", "opentelemetry-api", "opentelemetry-sdk"]


def crew(with_openai=False):
    def run(ctx):
        from opentelemetry.instrumentation.crewai import CrewAIInstrumentor

        CrewAIInstrumentor().instrument(tracer_provider=ctx.tracer_provider)
        if with_openai:
            from opentelemetry.instrumentation.openai import OpenAIInstrumentor
            OpenAIInstrumentor().instrument(tracer_provider=ctx.tracer_provider)
        from crewai import LLM, Agent, Crew, Task
        from crewai.tools import tool

        llm = LLM(model=f"openai/{harness.MODEL}", base_url=ctx.base_url, api_key="stub", stream=ctx.streamed)
        agent = Agent(role="Travel agent", goal="Help the user travel", backstory="You plan trips.",
                      tools=[tool(fn) for fn in ctx.tools().values()], llm=llm, verbose=False)
        task = Task(description=harness.USER_PROMPT, expected_output="A short confirmation.", agent=agent)
        out = Crew(agents=[agent], tasks=[task], verbose=False).kickoff()
        ctx.note(f"Final output: {str(out)!r}.")
    return run


NOTES = ("crewAI sends plan_trip's dict back as its Python repr \"{'ok': True, 'stops': 2}\" and the failure as "
         "'Error executing tool: no rooms in Paris'. ")
NOTES_CREW = ("The crewAI instrumentation makes only crewai.workflow / <task>.task / <role>.agent spans: no model span "
              "(it wraps crewai.llm.LLM.call, which the native OpenAI provider class does not use) and no tool span. "
              "The calls appear only inside the Python repr of crewai.crew.tasks_output (TaskOutput(... messages=[...]))"
              " on the workflow span. ")

harness.main("openllmetry-crewai", LIBRARIES, [
    Scenario("crew", crew(), api="chat_completions", notes="CrewAIInstrumentor only. " + NOTES_CREW + NOTES),
    Scenario("crew-openai", crew(with_openai=True), api="chat_completions",
             notes="CrewAIInstrumentor + OpenAIInstrumentor: openai.chat spans under the agent span. " + NOTES_CREW
             + NOTES),
    Scenario("crew-openai-streamed", crew(with_openai=True), api="chat_completions", streamed=True,
             notes="CrewAIInstrumentor + OpenAIInstrumentor, LLM(stream=True). " + NOTES_CREW + NOTES),
])

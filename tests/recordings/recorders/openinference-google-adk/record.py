"""openinference-google-adk: a Google ADK LlmAgent with the four tools, its model ADK's LiteLlm wrapper
pointed at the stub as an OpenAI-compatible endpoint (no Google credentials), under
openinference-instrumentation-google-adk.

ADK does not turn a tool's exception into a result for the model: the raising book_hotel ends the run
(no final model call) unless the agent has an on_tool_error_callback.

Scenarios:
  agent                 InMemoryRunner.run_async over LlmAgent(model=LiteLlm("openai/gpt-4o-mini", api_base=...));
                        book_hotel's ValueError aborts the run
  agent-error-callback  the same with on_tool_error_callback returning {"error": "ValueError: ..."}: the model
                        gets the error as the tool's response and the run ends with "Done."
  agent-streamed        agent-error-callback with RunConfig(streaming_mode=SSE) (LiteLlm streams)
"""

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import harness  # noqa: E402
from harness import Scenario  # noqa: E402

LIBRARIES = ["google-adk", "google-genai", "litellm", "openinference-instrumentation-google-adk",
             "openinference-instrumentation", "openinference-semantic-conventions", "opentelemetry-api",
             "opentelemetry-sdk"]


def on_tool_error(tool, args, tool_context, error):
    return {"error": f"{type(error).__name__}: {error}"}


def agent(ctx, error_callback=False):
    from openinference.instrumentation.google_adk import GoogleADKInstrumentor

    GoogleADKInstrumentor().instrument(tracer_provider=ctx.tracer_provider)
    from google.adk.agents import LlmAgent
    from google.adk.agents.run_config import RunConfig, StreamingMode
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    model = LiteLlm(model=f"openai/{harness.MODEL}", api_base=ctx.base_url, api_key="stub")
    a = LlmAgent(name="travel_agent", model=model, instruction="You are a travel agent.",
                 tools=list(ctx.tools().values()), on_tool_error_callback=on_tool_error if error_callback else None)
    runner = InMemoryRunner(agent=a, app_name="travel")
    config = RunConfig(streaming_mode=StreamingMode.SSE if ctx.streamed else StreamingMode.NONE)

    async def run():
        session = await runner.session_service.create_session(app_name="travel", user_id="user")
        final = None
        async for ev in runner.run_async(user_id="user", session_id=session.id, run_config=config,
                                         new_message=types.Content(role="user", parts=[types.Part(text=harness.USER_PROMPT)])):
            if ev.is_final_response() and ev.content and ev.content.parts:
                final = ev.content.parts[0].text
        assert final == "Done.", final

    asyncio.run(run())


def agent_error_callback(ctx):
    agent(ctx, error_callback=True)


harness.main("openinference-google-adk", LIBRARIES, [
    Scenario("agent", agent, api="chat_completions",
             notes="No on_tool_error_callback: book_hotel's ValueError propagates and ends the run after turn 2 "
                   "(no final model call; the root spans have status ERROR)."),
    Scenario("agent-error-callback", agent_error_callback, api="chat_completions",
             notes="on_tool_error_callback returns {'error': 'ValueError: no rooms in Paris'}, sent to the model "
                   "as book_hotel's response."),
    Scenario("agent-streamed", agent_error_callback, api="chat_completions", streamed=True,
             notes="As agent-error-callback, with RunConfig streaming_mode=SSE."),
])

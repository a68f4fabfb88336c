"""pydantic-ai: pydantic-ai's own OpenTelemetry instrumentation, the OpenAI Chat Completions model pointed at the stub,
the common tools as plain function tools. Since pydantic-ai 2.x, `Agent(instrument=...)` is gone; the equivalent is
`Agent(capabilities=[Instrumentation(settings=InstrumentationSettings(...))])` (or `agent.instrument = ...`).

A tool that raises a plain exception aborts a pydantic-ai run, so (as a user would) the tools are wrapped to turn
an exception into `ToolFailed("ValueError: ...")`, which pydantic-ai sends back to the model as a failed tool
return; `agent-v5-raw-error` keeps the raw ValueError.

Scenarios (`vN` = InstrumentationSettings(version=N); 2, 3, 4 are deprecated, 5 is the default, 6 the newest):
  agent-v2 … agent-v6          agent.run_sync, include_content=True
  agent-v5-streamed, agent-v6-streamed   agent.run_stream (streamed model requests)
  agent-v5-nocontent           include_content=False
  agent-v5-raw-error           the ValueError is not converted: the run fails at book_hotel (no final answer)
  structured-output-v5         output_type=TripSummary: the final answer is a call of pydantic-ai's own output
                               tool `final_result` (not a tool call of the truth)
  structured-output-v5-streamed  the same with agent.run_stream
"""

import asyncio
import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import harness  # noqa: E402
from harness import Scenario  # noqa: E402

LIBRARIES = ["pydantic-ai-slim", "openai", "opentelemetry-api", "opentelemetry-sdk"]
FINAL = {"city": "Paris", "summary": "Done."}


def failing_to_model(fn):
    """What a pydantic-ai user does so that a tool's exception reaches the model instead of aborting the run."""
    from pydantic_ai.exceptions import ToolFailed

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            raise ToolFailed(f"{type(e).__name__}: {e}") from e
    return wrapper


def agent_run(version, include_content=True, structured=False, raw_error=False):
    def run(ctx):
        from pydantic import BaseModel
        from pydantic_ai import Agent
        from pydantic_ai.capabilities.instrumentation import Instrumentation
        from pydantic_ai.models.instrumented import InstrumentationSettings
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        class TripSummary(BaseModel):
            city: str
            summary: str

        model = OpenAIChatModel(harness.MODEL, provider=OpenAIProvider(base_url=ctx.base_url, api_key="stub"))
        tools = [fn if raw_error else failing_to_model(fn) for fn in ctx.tools().values()]
        agent = Agent(model, name="travel_agent", tools=tools, output_type=TripSummary if structured else str,
                      capabilities=[Instrumentation(settings=InstrumentationSettings(
                          version=version, include_content=include_content, tracer_provider=ctx.tracer_provider))])
        if not ctx.streamed:
            out = agent.run_sync(harness.USER_PROMPT).output
        else:
            async def go():
                async with agent.run_stream(harness.USER_PROMPT) as r:
                    return await r.get_output()
            out = asyncio.run(go())
        ctx.note(f"Final output: {out!r}.")
    return run


NOTES = ("Tool functions wrapped to raise ToolFailed('ValueError: no rooms in Paris') (pydantic-ai's way to report a "
         "failed tool to the model); the truth's error is the ValueError raised inside.")
NOTES_OUT = ("output_type=TripSummary: pydantic-ai offers its output tool final_result and the model's last turn "
             "calls it (call_stub…t3i0) with " + str(FINAL) + "; that is the framework's output tool, not a tool "
             "call, so the truth does not list it. ")
OUT_PLAN = harness.COMMON_PLAN[:-1] + [[{"name": "final_result", "arguments": FINAL}]]

harness.main("pydantic-ai", LIBRARIES, [
    *[Scenario(f"agent-v{v}", agent_run(v), api="chat_completions", notes=f"InstrumentationSettings(version={v}). " + NOTES)
      for v in (2, 3, 4, 5, 6)],
    Scenario("agent-v5-streamed", agent_run(5), api="chat_completions", streamed=True,
             notes="version=5, agent.run_stream. " + NOTES),
    Scenario("agent-v6-streamed", agent_run(6), api="chat_completions", streamed=True,
             notes="version=6, agent.run_stream. " + NOTES),
    Scenario("agent-v5-nocontent", agent_run(5, include_content=False), api="chat_completions", content_captured=False,
             notes="version=5, include_content=False. " + NOTES),
    Scenario("agent-v5-raw-error", agent_run(5, raw_error=True), api="chat_completions",
             notes="version=5; book_hotel's ValueError is NOT converted: it aborts the run (no turn 3, no final "
                   "answer); the failed call is only in the tool span (and has no result message)."),
    Scenario("structured-output-v5", agent_run(5, structured=True), api="chat_completions", plan=OUT_PLAN,
             notes="version=5. " + NOTES_OUT + NOTES),
    Scenario("structured-output-v5-streamed", agent_run(5, structured=True), api="chat_completions", streamed=True,
             plan=OUT_PLAN, notes="version=5, agent.run_stream. " + NOTES_OUT + NOTES),
])

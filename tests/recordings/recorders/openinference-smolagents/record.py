"""openinference-smolagents: smolagents agents traced by openinference-instrumentation-smolagents.

The model is OpenAIServerModel (Chat Completions) pointed at the stub. The four tools are smolagents `@tool`s
(smolagents wants an `Args:` section in the docstring, added here). smolagents ends a run with its own
`final_answer` tool, so the plan's last tool turn calls it; it is NOT one of our tools and not in the truth.

smolagents sends no `role: tool` messages: the calls of a step come back to the model as assistant text
`Calling tools:\n[{'id': 'call_…', 'type': 'function', 'function': {…}}]` and their results as ONE user message
`Observation:\n<result>\n<result>`. A failing call leaves no `Calling tools` text at all, only a user message
`Error:\nError executing tool 'book_hotel' with arguments {…}: ValueError: …` (merged into the previous user
message). So the stub counts results with a marker (`results_marker`): the `'id': 'call_stub…'` entries of the
`Calling tools` texts plus the `Error executing tool` texts.

Scenarios:
  tool-calling            ToolCallingAgent, native tool calls, non-streamed
  tool-calling-streamed   ToolCallingAgent(stream_outputs=True): the model calls are streamed
  code-agent              CodeAgent: the model writes Python (text protocol, no native tool calls, no call
                          ids) that calls the tools; each tool call prints `TOOLRESULT <value>`, which the stub
                          counts as a result (a failing line yields `… due to: ValueError: …`)
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import harness  # noqa: E402
from harness import Scenario  # noqa: E402

LIBRARIES = ["smolagents", "openai", "openinference-instrumentation-smolagents", "openinference-instrumentation",
             "openinference-semantic-conventions", "opentelemetry-api", "opentelemetry-sdk"]

ARG_DOCS = {"city": "The city.", "days": "Number of days.", "destination": "{'city': ..., 'country': ...}.",
            "stops": "The stops."}
FINAL = [{"name": "final_answer", "arguments": {"answer": "Done."}}]
TOOL_PLAN = harness.COMMON_PLAN[:3] + [FINAL, "Done."]
TOOL_MARKER = r"'id': 'call_stub|Error executing tool '"  # a failing call's step has no "Calling tools"


def code_turn(lines, calls):
    return {"text": "Thought: next step.\n<code>\n" + "\n".join(lines) + "\n</code>", "calls": calls}


P = harness.COMMON_PLAN
CODE_PLAN = [
    code_turn(['print("TOOLRESULT", get_weather(city="Paris"))'], P[0]),
    code_turn(['print("TOOLRESULT", get_forecast(city="Paris", days=3))',
               'print("TOOLRESULT", plan_trip(destination={"city": "Paris", "country": "FR"}, '
               'stops=["Louvre", "Eiffel Tower"]))'], P[1]),
    code_turn(['print("TOOLRESULT", book_hotel(city="Paris"))'], P[2]),
    code_turn(['final_answer("Done.")'], []),
]
CODE_MARKER = r"TOOLRESULT |due to: ValueError"


def tools(ctx):
    import inspect

    from smolagents import tool

    out = []
    for fn in ctx.tools().values():  # the truth wrappers: give them an Args section
        fn.__doc__ = fn.__doc__ + "\n\nArgs:\n" + "".join(
            f"    {p}: {ARG_DOCS[p]}\n" for p in inspect.signature(fn).parameters)
        out.append(tool(fn))
    return out


def run(ctx, kind):
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from smolagents import CodeAgent, OpenAIServerModel, ToolCallingAgent

    SmolagentsInstrumentor().instrument(tracer_provider=ctx.tracer_provider)
    model = OpenAIServerModel(model_id=harness.MODEL, api_base=ctx.base_url, api_key="stub")
    if kind == "code":
        agent = CodeAgent(tools=tools(ctx), model=model, max_steps=8, verbosity_level=-1)
    else:
        agent = ToolCallingAgent(tools=tools(ctx), model=model, max_steps=8, verbosity_level=-1,
                                 stream_outputs=ctx.streamed)
    out = agent.run(harness.USER_PROMPT)
    assert out == "Done.", out


NOTES = ("smolagents' own final_answer tool (turn 3) ends the run: it has a TOOL span like ours but is not a "
         "call of the truth. ")

harness.main("openinference-smolagents", LIBRARIES, [
    Scenario("tool-calling", lambda ctx: run(ctx, "tool"), api="chat_completions", plan=TOOL_PLAN,
             results_marker=TOOL_MARKER, notes=NOTES + "ToolCallingAgent, native tool calls."),
    Scenario("tool-calling-streamed", lambda ctx: run(ctx, "tool"), api="chat_completions", streamed=True,
             plan=TOOL_PLAN, results_marker=TOOL_MARKER,
             notes=NOTES + "ToolCallingAgent(stream_outputs=True), model calls streamed."),
    Scenario("code-agent", lambda ctx: run(ctx, "code"), api="chat_completions", plan=CODE_PLAN,
             results_marker=CODE_MARKER,
             notes=NOTES + "CodeAgent: text protocol, the model's reply is Python code calling the tools (no "
                           "call ids, in_text); turn 1's two calls are two lines of one code block."),
])

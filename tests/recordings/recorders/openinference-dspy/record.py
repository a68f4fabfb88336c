"""openinference-dspy: dspy.ReAct with the four tools under openinference-instrumentation-dspy.

DSPy's ReAct is a text protocol: each step the model writes `next_thought`, `next_tool_name` and
`next_tool_args` as `[[ ## field ## ]]` sections (ChatAdapter), no native tool calls are offered, one tool
per step, and each result comes back as `observation_N` in the `trajectory` input of the next request.
So the plan has one call per turn (turn 1's two calls become turns 1 and 2), written in the reply text,
and the stub counts `[[ ## observation_N ## ]]` sections as results. The last turn selects DSPy's own
`finish` tool and also carries the `reasoning` / `answer` fields of the final extract step (a
ChainOfThought over the trajectory), which the stub answers with the same text.

Scenarios:
  react          dspy.ReAct("question -> answer", tools=[...]) with dspy.LM("openai/gpt-4o-mini", api_base=...)
                 (default engine), DSPyInstrumentor + LiteLLMInstrumentor as the Phoenix docs recommend
  react-json     the same with dspy.configure(adapter=dspy.JSONAdapter()): the model answers each step with a
                 JSON object {"next_thought", "next_tool_name", "next_tool_args"} (response_format json_schema)
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import harness  # noqa: E402
from harness import Scenario  # noqa: E402

LIBRARIES = ["dspy", "litellm", "openinference-instrumentation-dspy", "openinference-instrumentation-litellm",
             "openinference-instrumentation", "openinference-semantic-conventions", "opentelemetry-api",
             "opentelemetry-sdk"]


def step(thought, name, args, final=False, as_json=False):
    fields = {"next_thought": thought, "next_tool_name": name, "next_tool_args": args}
    if final:  # the extract step's fields too
        fields.update(reasoning="All tools ran.", answer="Done.")
    if as_json:
        return json.dumps(fields)
    return "".join(f"[[ ## {k} ## ]]\n{json.dumps(v) if isinstance(v, dict) else v}\n\n"
                   for k, v in fields.items()) + "[[ ## completed ## ]]"


def plan(as_json=False):
    def turn(name, args, thought):
        return {"text": step(thought, name, args, as_json=as_json), "calls": [{"name": name, "arguments": args}]}
    return [
        turn("get_weather", {"city": "Paris"}, "I need the weather in Paris."),
        turn("get_forecast", {"city": "Paris", "days": 3}, "Now the forecast for 3 days."),
        turn("plan_trip", harness.PLAN_TRIP_ARGS, "Now plan the trip."),
        turn("book_hotel", {"city": "Paris"}, "Now book a hotel."),
        # ReAct step selecting `finish`, then (same text) the extract step's reasoning and answer
        step("All done.", "finish", {}, final=True, as_json=as_json),
    ]
MARKER = r"\[\[ ## observation_\d+ ## \]\]"


def react(ctx, adapter=None):
    from openinference.instrumentation.dspy import DSPyInstrumentor
    from openinference.instrumentation.litellm import LiteLLMInstrumentor

    DSPyInstrumentor().instrument(tracer_provider=ctx.tracer_provider)
    LiteLLMInstrumentor().instrument(tracer_provider=ctx.tracer_provider)
    import dspy

    lm = dspy.LM("openai/gpt-4o-mini", api_base=ctx.base_url, api_key="stub", cache=False)
    dspy.configure(lm=lm, adapter=adapter() if adapter else None)
    agent = dspy.ReAct("question -> answer", tools=list(ctx.tools().values()))
    pred = agent(question=harness.USER_PROMPT)
    assert pred.answer == "Done.", pred


def react_json(ctx):
    import dspy

    react(ctx, dspy.JSONAdapter)


NOTES = ("Text protocol: calls are written in the reply text (no call ids, in_text); one call per turn, so "
         "get_forecast and plan_trip are turns 1 and 2; DSPy's own finish tool has a TOOL span but is not a call "
         "of the truth.")

harness.main("openinference-dspy", LIBRARIES, [
    Scenario("react", react, api="chat_completions", plan=plan(), results_marker=MARKER, notes=NOTES),
    Scenario("react-json", react_json, api="chat_completions", plan=plan(as_json=True), results_marker=MARKER,
             notes=NOTES + " JSONAdapter: each reply is a JSON object of the output fields."),
])

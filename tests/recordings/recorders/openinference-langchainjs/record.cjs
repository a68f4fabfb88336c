// openinference-langchainjs: a LangChain.js agent (langchain's createAgent, a LangGraph graph with the
// prebuilt ToolNode) over ChatOpenAI (@langchain/openai) pointed at the stub model, traced by
// OpenInference's LangChain.js instrumentation (@arizeai/openinference-instrumentation-langchain,
// a LangChain callback tracer that turns every run into a span).
//
// Scenarios (every one runs the common scenario of README.md; the agent's ToolNode runs the tools):
//   agent            createAgent + ChatOpenAI (Chat Completions) + zod tools, agent.invoke() inside the user's
//                    own `handle-request` span
//   agent-streamed   the same with agent.stream(streamMode "messages"): the model calls are streamed (LangChain
//                    streams a chat model when a handler wants tokens); not ChatOpenAI({ streaming: true }),
//                    which downloads a tiktoken encoder at run time (see README.md)
//   agent-responses  the same with ChatOpenAI({ useResponsesApi: true }) (the Responses API)
//   agent-noparent   agent.invoke() with no span of the user's around it (the usual case in an app)
//   agent-hidden     traceConfig { hideInputs: true, hideOutputs: true } (OPENINFERENCE_HIDE_INPUTS/OUTPUTS)
//
// Run through tests/recordings/record.sh openinference-langchainjs [scenario...]; `node record.cjs NAME` runs
// one scenario (needs NODE_PATH, STUB_MODEL_URL, RECORDING_COMMON_JSON, RECORDING_OUT: see record.sh).
"use strict";

const { main } = require("./recording.cjs");

const RECORDER = "openinference-langchainjs";
const PACKAGES = ["langchain", "@langchain/core", "@langchain/langgraph", "@langchain/openai", "openai",
  "@arizeai/openinference-instrumentation-langchain", "@arizeai/openinference-core",
  "@arizeai/openinference-semantic-conventions", "zod", "@opentelemetry/api", "@opentelemetry/instrumentation",
  "@opentelemetry/sdk-trace-node", "@opentelemetry/sdk-trace-base", "@opentelemetry/otlp-transformer"];
const MODEL = "gpt-4o-mini";

function instrument(ctx, traceConfig) {
  const { LangChainInstrumentation } = require("@arizeai/openinference-instrumentation-langchain");
  const CallbackManagerModule = require("@langchain/core/callbacks/manager");
  const inst = new LangChainInstrumentation({ tracerProvider: ctx.provider, traceConfig });
  inst.manuallyInstrument(CallbackManagerModule); // as the instrumentation's README says
  return inst;
}

// The common tools as LangChain tools: tool(fn, { name, description, schema: zod }).
function lcTools(ctx) {
  const { tool } = require("@langchain/core/tools");
  const { z } = require("zod");
  const fns = ctx.tools();
  const desc = Object.fromEntries(ctx.common.tools.map((t) => [t.name, t.description]));
  const schemas = {
    get_weather: z.object({ city: z.string() }),
    get_forecast: z.object({ city: z.string(), days: z.number().int() }),
    plan_trip: z.object({ destination: z.object({ city: z.string(), country: z.string() }), stops: z.array(z.string()) }),
    book_hotel: z.object({ city: z.string() }),
  };
  return Object.keys(schemas).map((name) =>
    tool((input) => fns[name](input), { name, description: desc[name], schema: schemas[name] }));
}

function agentFor(ctx, modelOptions = {}) {
  const { createAgent } = require("langchain");
  const { ChatOpenAI } = require("@langchain/openai");
  const model = new ChatOpenAI({ model: MODEL, apiKey: "stub", configuration: { baseURL: ctx.baseUrl },
    ...modelOptions });
  return createAgent({ model, tools: lcTools(ctx), name: "travel_agent" });
}

async function runAgent(ctx, { modelOptions = {}, parent = true, stream = false, traceConfig } = {}) {
  instrument(ctx, traceConfig);
  const agent = agentFor(ctx, modelOptions);
  const input = { messages: [{ role: "user", content: ctx.common.prompt }] };
  const go = async () => {
    let state;
    if (stream) {
      // ["messages", "values"]: token chunks (which make the model calls stream) and the final state
      for await (const [mode, chunk] of await agent.stream(input, { streamMode: ["messages", "values"] })) {
        if (mode === "values") state = chunk;
      }
    } else {
      state = await agent.invoke(input);
    }
    const last = state.messages[state.messages.length - 1];
    ctx.note(`${state.messages.length} messages, final text ${JSON.stringify(last.content)}.`);
  };
  if (!parent) return go();
  const otel = require("@opentelemetry/api");
  return otel.trace.getTracer("user-app").startActiveSpan("handle-request", async (span) => {
    try {
      return await go();
    } finally {
      span.end();
    }
  });
}

const NOTES = "Spans from OpenInference's LangChain callback tracer: one span per LangChain run (LangGraph graph, "
  + "nodes, ChatOpenAI LLM runs, one TOOL span per tool run). The tracer does not make its spans current, so "
  + "inside the tool function the active span is the caller's. book_hotel throws Error('no rooms in Paris'): "
  + "the ToolNode's default handleToolErrors turns it into a ToolMessage (status error) "
  + "'Error: no rooms in Paris\\n Please fix your mistakes.' sent to the model.";

main(RECORDER, PACKAGES, {
  "agent": {
    run: (ctx) => runAgent(ctx), api: "chat_completions", streamed: false,
    notes: NOTES + " agent.invoke() inside the user's handle-request span (scope user-app).",
  },
  "agent-streamed": {
    run: (ctx) => runAgent(ctx, { stream: true }), api: "chat_completions",
    streamed: true,
    notes: NOTES + " agent.stream(streamMode ['messages', 'values']) (streamed model calls), in handle-request.",
  },
  "agent-responses": {
    run: (ctx) => runAgent(ctx, { modelOptions: { useResponsesApi: true } }), api: "responses", streamed: false,
    notes: NOTES + " ChatOpenAI({ useResponsesApi: true }), in handle-request.",
  },
  "agent-noparent": {
    run: (ctx) => runAgent(ctx, { parent: false }), api: "chat_completions", streamed: false,
    notes: NOTES + " No span of the user's: no span is active inside the tools, the truth takes each call's "
      + "trace from the model span (all runs of the agent share the trace of the root LangGraph span).",
  },
  "agent-hidden": {
    run: (ctx) => runAgent(ctx, { traceConfig: { hideInputs: true, hideOutputs: true } }), api: "chat_completions",
    streamed: false, content_captured: false,
    notes: NOTES + " LangChainInstrumentation({ traceConfig: { hideInputs: true, hideOutputs: true } }), "
      + "in handle-request.",
  },
}).catch((e) => {
  console.error(e);
  process.exit(1);
});

// vercel-ai-sdk: the Vercel AI SDK (`ai`) with its built-in OpenTelemetry spans
// (`experimental_telemetry: { isEnabled: true }`), the OpenAI provider pointed at the stub model.
//
// Scenarios (every one runs the common scenario of README.md; the SDK's tool loop runs the tools):
//   generate-text            generateText + openai.chat() (Chat Completions), zod tools, stopWhen: stepCountIs(10),
//                            recordInputs/recordOutputs true, functionId "travel-agent" + metadata
//   generate-text-nocontent  the same with recordInputs: false, recordOutputs: false
//   stream-text              streamText + openai.chat(), streamed, tools declared with jsonSchema()
//   generate-text-responses  generateText + openai.responses() (Responses API, the provider's default model)
//   stream-text-responses    streamText + openai.responses(), streamed
//   tool-loop-agent          ai's ToolLoopAgent (agent.generate) inside the user's own `handle-request` span
//
// Run through tests/recordings/record.sh vercel-ai-sdk [scenario...]; `node record.cjs NAME` runs one
// scenario (needs NODE_PATH, STUB_MODEL_URL, RECORDING_COMMON_JSON, RECORDING_OUT: see record.sh).
"use strict";

const { main } = require("./recording.cjs");

const RECORDER = "vercel-ai-sdk";
const PACKAGES = ["ai", "@ai-sdk/openai", "@ai-sdk/provider-utils", "zod", "@opentelemetry/api",
  "@opentelemetry/sdk-trace-node", "@opentelemetry/sdk-trace-base", "@opentelemetry/otlp-transformer"];
const MODEL = "gpt-4o-mini";

function provider(ctx) {
  const { createOpenAI } = require("@ai-sdk/openai");
  return createOpenAI({ baseURL: ctx.baseUrl, apiKey: "stub" });
}

// The common tools with zod input schemas (the usual way to write AI SDK tools).
function zodTools(ctx) {
  const { tool } = require("ai");
  const { z } = require("zod");
  const fns = ctx.tools();
  const desc = Object.fromEntries(ctx.common.tools.map((t) => [t.name, t.description]));
  return {
    get_weather: tool({ description: desc.get_weather, inputSchema: z.object({ city: z.string() }),
      execute: fns.get_weather }),
    get_forecast: tool({ description: desc.get_forecast,
      inputSchema: z.object({ city: z.string(), days: z.number().int() }), execute: fns.get_forecast }),
    plan_trip: tool({ description: desc.plan_trip,
      inputSchema: z.object({ destination: z.object({ city: z.string(), country: z.string() }),
        stops: z.array(z.string()) }), execute: fns.plan_trip }),
    book_hotel: tool({ description: desc.book_hotel, inputSchema: z.object({ city: z.string() }),
      execute: fns.book_hotel }),
  };
}

// The same tools declared with jsonSchema() and harness.py's JSON schemas.
function jsonSchemaTools(ctx) {
  const { tool, jsonSchema } = require("ai");
  const fns = ctx.tools();
  return Object.fromEntries(ctx.common.tools.map((t) => [t.name, tool({
    description: t.description, inputSchema: jsonSchema(t.parameters), execute: fns[t.name],
  })]));
}

function telemetry(content = true) {
  return {
    isEnabled: true, recordInputs: content, recordOutputs: content,
    functionId: "travel-agent", metadata: { app: "travel-app" },
  };
}

async function generate(ctx, { responses = false, content = true } = {}) {
  const { generateText, stepCountIs } = require("ai");
  const openai = provider(ctx);
  const result = await generateText({
    model: responses ? openai.responses(MODEL) : openai.chat(MODEL),
    tools: zodTools(ctx),
    prompt: ctx.common.prompt,
    stopWhen: stepCountIs(10),
    experimental_telemetry: telemetry(content),
  });
  ctx.note(`${result.steps.length} steps, final text ${JSON.stringify(result.text)}.`);
}

async function stream(ctx, { responses = false, schema = "zod" } = {}) {
  const { streamText, stepCountIs } = require("ai");
  const openai = provider(ctx);
  const result = streamText({
    model: responses ? openai.responses(MODEL) : openai.chat(MODEL),
    tools: schema === "json" ? jsonSchemaTools(ctx) : zodTools(ctx),
    prompt: ctx.common.prompt,
    stopWhen: stepCountIs(10),
    experimental_telemetry: telemetry(true),
    onError: ({ error }) => console.error("streamText onError:", error),
  });
  await result.consumeStream();
  const steps = await result.steps;
  ctx.note(`${steps.length} steps, final text ${JSON.stringify(await result.text)}.`);
}

async function toolLoopAgent(ctx) {
  const { ToolLoopAgent, stepCountIs } = require("ai");
  const otel = require("@opentelemetry/api");
  const openai = provider(ctx);
  const agent = new ToolLoopAgent({
    model: openai.chat(MODEL),
    tools: zodTools(ctx),
    stopWhen: stepCountIs(10),
    experimental_telemetry: telemetry(true),
  });
  await otel.trace.getTracer("user-app").startActiveSpan("handle-request", async (span) => {
    try {
      const result = await agent.generate({ prompt: ctx.common.prompt });
      ctx.note(`${result.steps.length} steps, final text ${JSON.stringify(result.text)}.`);
    } finally {
      span.end();
    }
  });
}

const NOTES = "Spans come from the AI SDK itself (tracer `ai`): one ai.generateText / ai.streamText root per call, "
  + "one ai.*.doGenerate / doStream span per model step and one ai.toolCall span per tool execution "
  + "(ai.toolCall.name / .id / .args / .result). book_hotel throws Error('no rooms in Paris'): the SDK turns it "
  + "into a tool-error part, sent to the model as the tool result, and the loop goes on.";

main(RECORDER, PACKAGES, {
  "generate-text": {
    run: (ctx) => generate(ctx), api: "chat_completions", streamed: false,
    notes: NOTES + " generateText with openai.chat(); tools with zod input schemas.",
  },
  "generate-text-nocontent": {
    run: (ctx) => generate(ctx, { content: false }), api: "chat_completions", streamed: false,
    content_captured: false,
    notes: NOTES + " recordInputs: false and recordOutputs: false: no prompt/response/args/result attributes.",
  },
  "stream-text": {
    run: (ctx) => stream(ctx, { schema: "json" }), api: "chat_completions", streamed: true,
    notes: NOTES + " streamText with openai.chat(); tools declared with jsonSchema() (harness.py's schemas).",
  },
  "generate-text-responses": {
    run: (ctx) => generate(ctx, { responses: true }), api: "responses", streamed: false,
    notes: NOTES + " generateText with openai.responses() (the Responses API).",
  },
  "stream-text-responses": {
    run: (ctx) => stream(ctx, { responses: true }), api: "responses", streamed: true,
    notes: NOTES + " streamText with openai.responses() (the Responses API), streamed.",
  },
  "tool-loop-agent": {
    run: toolLoopAgent, api: "chat_completions", streamed: false,
    notes: NOTES + " ToolLoopAgent.generate() inside the user's own handle-request span (scope user-app).",
  },
}).catch((e) => {
  console.error(e);
  process.exit(1);
});

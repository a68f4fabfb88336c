// Node side of the recording harness (see tests/recordings/README.md, "Adding a recorder"):
// OpenTelemetry capture with an in-memory exporter, OTLP/JSON writing in the same canonical form as
// harness.py's fixtures, ground truth recorded inside the tool functions, and the stub model's plan.
// The truth is joined with the stub log and validated by `harness.py --finish` (called by record.sh).
//
// This file is self-contained on purpose (each recorder directory owns its files); the other Node
// recorders carry a copy.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const api = require("@opentelemetry/api");

const RECORDINGS = path.resolve(__dirname, "..", "..");
const ROOT = path.resolve(RECORDINGS, "..", "..");
const FIXTURES = path.join(RECORDINGS, "fixtures");

// ----------------------------------------------------------------------------- the common scenario
// Written by record.sh from harness.py (COMMON_PLAN, USER_PROMPT, the tools' docstrings and schemas),
// so the Node recorders cannot drift from the Python ones.
function common() {
  return JSON.parse(fs.readFileSync(process.env.RECORDING_COMMON_JSON, "utf8"));
}

// The common tools, as a JavaScript developer would write them.
const TOOL_IMPLS = {
  get_weather: async ({ city }) => "Sunny, 22C",
  get_forecast: async ({ city, days }) => `Sunny for the next ${days} days`,
  plan_trip: async ({ destination, stops }) => ({ ok: true, stops: stops.length }),
  book_hotel: async ({ city }) => {
    throw new Error(`no rooms in ${city}`);
  },
};

// ----------------------------------------------------------------------------- OpenTelemetry capture
function setupTracing(serviceName) {
  const { NodeTracerProvider, SimpleSpanProcessor, InMemorySpanExporter } = require("@opentelemetry/sdk-trace-node");
  const { defaultResource, resourceFromAttributes } = require("@opentelemetry/resources");
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ "service.name": serviceName })),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  provider.register(); // global provider + AsyncLocalStorage context manager + W3C propagator
  return { provider, exporter };
}

// OTLP/JSON exactly as the OTLP spec's JSON encoding (and the Python fixtures): the SDK's own JSON
// serializer (hex ids, decimal-string times) + proto3 JSON canonical form: 64-bit ints as strings
// (the serializer leaves intValue a JS number) and fields with default values omitted
// (droppedAttributesCount 0, empty events/links/attributes, status code 0, empty strings, ...).
// Inside an AnyValue nothing is dropped (oneof members keep their zero values), only empty
// arrayValue/kvlistValue lists become {} as protobuf's JSON printer does.
function otlpSpansJson(spans) {
  const { JsonTraceSerializer } = require("@opentelemetry/otlp-transformer");
  const doc = JSON.parse(Buffer.from(JsonTraceSerializer.serializeRequest(spans)).toString("utf8"));
  return { resourceSpans: (doc.resourceSpans || []).map(canonMessage) };
}

function canonAnyValue(v) {
  if (v == null || typeof v !== "object") return {};
  if ("intValue" in v) return { intValue: String(v.intValue) };
  if ("arrayValue" in v) {
    const values = (v.arrayValue && v.arrayValue.values) || [];
    return { arrayValue: values.length ? { values: values.map(canonAnyValue) } : {} };
  }
  if ("kvlistValue" in v) {
    const values = (v.kvlistValue && v.kvlistValue.values) || [];
    return { kvlistValue: values.length ? { values: values.map(canonKeyValue) } : {} };
  }
  for (const k of ["stringValue", "boolValue", "doubleValue", "bytesValue"]) {
    if (k in v && v[k] !== undefined) return { [k]: v[k] };
  }
  return {};
}

function canonKeyValue(kv) {
  const out = {};
  if (kv.key) out.key = kv.key;
  out.value = canonAnyValue(kv.value);
  return out;
}

// Any OTLP message above the AnyValue level: drop proto3 defaults, canonicalise attribute lists.
function canonMessage(m) {
  const out = {};
  for (const [k, v] of Object.entries(m)) {
    if (v === undefined || v === null || v === "" || v === 0 || v === false) continue;
    if (Array.isArray(v)) {
      if (!v.length) continue;
      out[k] = k === "attributes" ? v.map(canonKeyValue) : v.map((x) => (typeof x === "object" ? canonMessage(x) : x));
    } else if (typeof v === "object") {
      out[k] = canonMessage(v); // status {} for UNSET, as in the Python fixtures
    } else if (typeof v === "number" && /UnixNano$/.test(k)) {
      out[k] = String(v);
    } else {
      out[k] = v;
    }
  }
  return out;
}

// ----------------------------------------------------------------------------- ground truth
class Truth {
  constructor() {
    this.calls = [];
  }

  // Wraps a tool implementation taking one object of named arguments (how JS tools receive them);
  // records the arguments, the trace active inside the function, and the result or the thrown error.
  wrap(name, fn) {
    const truth = this;
    return async function (args, ...rest) {
      const span = api.trace.getSpan(api.context.active());
      const sc = span && span.spanContext();
      const valid = sc && api.isSpanContextValid(sc);
      const entry = {
        tool: name, args: JSON.parse(JSON.stringify(args)), order: truth.calls.length,
        trace_id: valid ? sc.traceId : null, span_id: valid ? sc.spanId : null,
      };
      truth.calls.push(entry);
      let out;
      try {
        out = await fn(args, ...rest);
      } catch (e) {
        entry.error = `${e && e.name ? e.name : "Error"}: ${e && e.message !== undefined ? e.message : e}`;
        throw e;
      }
      if (typeof out === "string") {
        entry.output = out;
      } else {
        // no str() in JS: the text of a non-string result is its JSON (String({}) is "[object Object]")
        entry.output = JSON.stringify(out);
        entry.output_json = JSON.stringify(out);
      }
      return out;
    };
  }
}

// ----------------------------------------------------------------------------- stub model
async function setPlan(recorder, scenario, plan, noToolsText = null) {
  const logdir = path.join(ROOT, "target", "tmp", "recordings", "stub-logs", recorder);
  fs.mkdirSync(logdir, { recursive: true });
  const r = await fetch(process.env.STUB_MODEL_URL + "/_stub/plan", {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ plan, no_tools_text: noToolsText, log: path.join(logdir, `${scenario}.jsonl`) }),
  });
  if (!r.ok) throw new Error(`stub /_stub/plan: HTTP ${r.status}`);
}

// ----------------------------------------------------------------------------- running a scenario
function versions(packages) {
  const out = {};
  for (const p of packages) {
    try {
      out[p] = require(`${p}/package.json`).version;
    } catch {
      // packages whose "exports" hide package.json: find it on the resolution path
      let v = null;
      for (const dir of (process.env.NODE_PATH || "").split(path.delimiter).filter(Boolean)) {
        const f = path.join(dir, p, "package.json");
        if (fs.existsSync(f)) { v = JSON.parse(fs.readFileSync(f, "utf8")).version; break; }
      }
      out[p] = v;
    }
  }
  return out;
}

function writeJson(file, doc) {
  fs.writeFileSync(file, JSON.stringify(doc, null, 1) + "\n");
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Runs one scenario: `scenarios` maps name -> {run(ctx), api, streamed, content_captured, notes}.
// Writes fixtures/<recorder>/<scenario>.otlp.json and, in $RECORDING_OUT, <scenario>.calls.json and
// <scenario>.meta.json for `harness.py --finish`.
async function main(recorder, packages, scenarios) {
  const args = process.argv.slice(2);
  if (args[0] === "--list") {
    console.log(Object.keys(scenarios).join("\n"));
    return;
  }
  const [name] = args;
  const scenario = scenarios[name];
  if (!scenario) throw new Error(`unknown scenario ${name}; known: ${Object.keys(scenarios)}`);
  const c = common();
  await setPlan(recorder, name, scenario.plan || c.plan, scenario.no_tools_text || null);
  const { provider, exporter } = setupTracing(`recording-${recorder}`);
  const truth = new Truth();
  const notes = [];
  const ctx = {
    common: c, truth, provider, streamed: !!scenario.streamed,
    baseUrl: process.env.OPENAI_BASE_URL, stubUrl: process.env.STUB_MODEL_URL,
    tools: () => Object.fromEntries(Object.entries(TOOL_IMPLS).map(([n, f]) => [n, truth.wrap(n, f)])),
    note: (t) => notes.push(t),
  };
  const t0 = Date.now();
  let error = null;
  try {
    await scenario.run(ctx);
  } catch (e) {
    error = e;
    console.error(e);
  }
  await sleep(200); // let spans ended after the last await (stream finishers) land
  await provider.forceFlush();
  const outdir = path.join(FIXTURES, recorder);
  fs.mkdirSync(outdir, { recursive: true });
  writeJson(path.join(outdir, `${name}.otlp.json`), otlpSpansJson(exporter.getFinishedSpans()));
  const logsPath = path.join(outdir, `${name}.logs.otlp.json`);
  if (fs.existsSync(logsPath)) fs.unlinkSync(logsPath);
  let allNotes = [scenario.notes || "", ...notes].filter(Boolean).join(" ");
  if (error) allNotes += ` The agent run raised: ${error && error.name}: ${error && error.message}`;
  const meta = {
    recorder, scenario: name, libraries: versions(packages), api: scenario.api, streamed: !!scenario.streamed,
    content_captured: scenario.content_captured !== false, notes: allNotes,
  };
  const tmp = process.env.RECORDING_OUT;
  fs.mkdirSync(tmp, { recursive: true });
  writeJson(path.join(tmp, `${name}.calls.json`), truth.calls);
  writeJson(path.join(tmp, `${name}.meta.json`), meta);
  console.log(`[${recorder}/${name}] agent ran in ${((Date.now() - t0) / 1000).toFixed(1)}s${error ? " (raised)" : ""}`);
  await provider.shutdown();
}

module.exports = { main, common, TOOL_IMPLS, Truth, setupTracing, otlpSpansJson, setPlan, versions };

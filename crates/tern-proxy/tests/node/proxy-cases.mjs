// The reference side of tern-proxy's cross-implementation tests (tests/cross_node.rs).
//
//   node proxy-cases.mjs client '<json>'   run the reference's streamProxy once, print the trace
//   node proxy-cases.mjs direct <case>     run a case's scripted model without a proxy, print the trace
//   node proxy-cases.mjs serve             serve the cases over the proxy protocol; prints {"port":N},
//                                          stops when stdin closes
//
// A trace is {"events": [...], "final": message}: every event as the consumer received it,
// without its `partial`, then the stream's result. The server is built the way a proxy server
// for streamProxy is expected to be: the reference's faux provider produces the real
// AssistantMessageEvent stream, and each event is written as a `data:` line with the partial
// message stripped. The model id names the case.
import http from "node:http";
import { streamProxy } from "@earendil-works/pi-agent-core";
import { createFauxCore, fauxAssistantMessage, fauxText, fauxThinking, fauxToolCall } from "@earendil-works/pi-ai";

const TOKEN = "secret";

// Cases by model id: the scripted response and the pace of its deltas (tokens per second).
const CASES = {
  text: { message: () => fauxAssistantMessage("Hello from the reference proxy server!") },
  tool: {
    message: () =>
      fauxAssistantMessage(
        [fauxText("Reading."), fauxToolCall("read", { path: "src/main.rs", limit: 20, flags: ["a", "b"] }, { id: "call_1" })],
        { stopReason: "toolUse" },
      ),
  },
  thinking: { message: () => fauxAssistantMessage([fauxThinking("Let me think about it."), fauxText("Forty-two.")]) },
  error: { message: () => fauxAssistantMessage("Half an ans", { stopReason: "error", errorMessage: "upstream failed" }) },
  abort: { message: () => fauxAssistantMessage("one two three four five six seven eight nine ten"), tokensPerSecond: 8 },
};

function fauxFor(name) {
  const spec = CASES[name];
  if (!spec) return undefined;
  const core = createFauxCore({
    api: "scripted",
    provider: "scripted",
    tokenSize: { min: 1, max: 1 },
    tokensPerSecond: spec.tokensPerSecond,
  });
  core.setResponses([spec.message()]);
  return core;
}

function withoutPartial(event) {
  const { partial: _partial, ...rest } = event;
  return rest;
}

async function collect(stream, onEvent) {
  const events = [];
  for await (const event of stream) {
    // Serialized on arrival: later events must not change what an earlier one showed.
    events.push(JSON.parse(JSON.stringify(withoutPartial(event))));
    onEvent?.(event, events.length);
  }
  return { events, final: await stream.result() };
}

// The wire form of an event: the reference's ProxyAssistantMessageEvent.
function toProxyEvent(event) {
  const block = () => event.partial?.content?.[event.contentIndex];
  switch (event.type) {
    case "start":
      return { type: "start" };
    case "text_start":
    case "thinking_start":
      return { type: event.type, contentIndex: event.contentIndex };
    case "text_delta":
    case "thinking_delta":
    case "toolcall_delta":
      return { type: event.type, contentIndex: event.contentIndex, delta: event.delta };
    case "text_end":
      return { type: "text_end", contentIndex: event.contentIndex, contentSignature: block()?.textSignature };
    case "thinking_end":
      return { type: "thinking_end", contentIndex: event.contentIndex, contentSignature: block()?.thinkingSignature };
    case "toolcall_start":
      return { type: "toolcall_start", contentIndex: event.contentIndex, id: block()?.id, toolName: block()?.name };
    case "toolcall_end":
      return { type: "toolcall_end", contentIndex: event.contentIndex, toolCall: event.toolCall };
    case "done":
      return {
        type: "done",
        reason: event.reason,
        usage: event.message.usage,
        providerThinkingLevel: event.message.providerThinkingLevel,
      };
    case "error":
      return {
        type: "error",
        reason: event.reason,
        errorMessage: event.error.errorMessage,
        usage: event.error.usage,
        providerThinkingLevel: event.error.providerThinkingLevel,
      };
    default:
      return undefined;
  }
}

function jsonError(res, status, error) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ error }));
}

async function handle(req, res) {
  if (req.method !== "POST" || req.url !== "/api/stream") return jsonError(res, 404, `No route ${req.method} ${req.url}`);
  if (req.headers.authorization !== `Bearer ${TOKEN}`) return jsonError(res, 401, "Unauthorized");
  let body = "";
  for await (const chunk of req) body += chunk;
  const { model, context, options } = JSON.parse(body);
  if (model.id === "cut") {
    // A response that stops before its final event.
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write('data: {"type":"start"}\n\ndata: {"type":"text_start","contentIndex":0}\n\n');
    res.end('data: {"type":"text_delta","contentIndex":0,"delta":"cut sh"}\n\n');
    return;
  }
  const faux = fauxFor(model.id);
  if (!faux) return jsonError(res, 400, `Unknown case ${model.id}`);
  const controller = new AbortController();
  // The client went away: stop the upstream.
  res.on("close", () => controller.abort());
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const stream = faux.streamSimple(model, context, { ...options, signal: controller.signal });
  for await (const event of stream) {
    const wire = toProxyEvent(event);
    if (wire && !res.destroyed) res.write(`data: ${JSON.stringify(wire)}\n\n`);
  }
  res.end();
}

async function serve() {
  const server = http.createServer((req, res) => {
    handle(req, res).catch((e) => {
      if (!res.headersSent) jsonError(res, 500, String(e?.message ?? e));
      else res.destroy();
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
  process.stdin.resume();
  process.stdin.on("end", () => process.exit(0));
  process.stdin.on("close", () => process.exit(0));
}

async function client(spec) {
  const controller = new AbortController();
  const stream = streamProxy(spec.model, spec.context, {
    ...spec.options,
    proxyUrl: spec.proxyUrl,
    authToken: spec.authToken,
    signal: controller.signal,
  });
  let deltas = 0;
  const trace = await collect(stream, (event) => {
    if (event.type.endsWith("_delta") && ++deltas === spec.abortAfterDeltas) controller.abort();
  });
  process.stdout.write(`${JSON.stringify(trace)}\n`);
}

async function direct(name) {
  const faux = fauxFor(name);
  if (!faux) throw new Error(`Unknown case ${name}`);
  const model = { id: name, name, api: "scripted", provider: "scripted" };
  const context = { messages: [{ role: "user", content: "hi", timestamp: 0 }] };
  process.stdout.write(`${JSON.stringify(await collect(faux.streamSimple(model, context, {})))}\n`);
}

const [mode, arg] = process.argv.slice(2);
if (mode === "serve") await serve();
else if (mode === "client") await client(JSON.parse(arg));
else if (mode === "direct") await direct(arg);
else {
  process.stderr.write("usage: proxy-cases.mjs serve | client <json> | direct <case>\n");
  process.exit(2);
}

#!/usr/bin/env node
// Reference runner for the provider streaming oracle (the copy of shared/providers/reference,
// grown for the project's cases: more APIs, their own auth headers, `abortAfterEvents`,
// `calls`).
//
//   node run.mjs CASE.json            -> prints one JSON document (see ../FORMAT.md)
//
// A case with a `websocket` script (ws/streams/) runs through run_ws.mjs instead.
//
// It starts a local HTTP server on 127.0.0.1 (random port) that replays the case's recorded
// response(s) chunk by chunk, points the @earendil-works/pi-ai API implementation for the
// case's api at it (model.baseUrl override, dummy API key), runs streamSimple(), and prints
// the captured request, the event sequence and the normalized final AssistantMessage.
import { readFileSync } from "node:fs";
import http from "node:http";
import { AssistantMessageEventStream } from "@earendil-works/pi-ai/utils/event-stream";
import { isContextOverflow } from "@earendil-works/pi-ai/utils/overflow";
import { normalizeContext } from "@earendil-works/pi-ai/utils/transcript";
import { EventStreamCodec } from "@smithy/core/event-streams";

export const API_MODULES = {
	"openai-completions": "@earendil-works/pi-ai/api/openai-completions",
	"openai-responses": "@earendil-works/pi-ai/api/openai-responses",
	"anthropic-messages": "@earendil-works/pi-ai/api/anthropic-messages",
	"google-generative-ai": "@earendil-works/pi-ai/api/google-generative-ai",
	"mistral-conversations": "@earendil-works/pi-ai/api/mistral-conversations",
	"azure-openai-responses": "@earendil-works/pi-ai/api/azure-openai-responses",
	"openai-codex-responses": "@earendil-works/pi-ai/api/openai-codex-responses",
	"google-vertex": "@earendil-works/pi-ai/api/google-vertex",
	"bedrock-converse-stream": "@earendil-works/pi-ai/api/bedrock-converse-stream",
};

// Headers that matter for one API only (its auth and session headers).
export const HEADERS_BY_API = {
	"mistral-conversations": ["x-affinity"],
	"azure-openai-responses": ["api-key"],
	"openai-codex-responses": ["chatgpt-account-id", "originator", "openai-beta"],
};

// Request headers that are part of the contract. Everything else (user-agent, x-stainless-*,
// host, content-length, connection, accept-encoding, ...) is SDK/runtime noise and is dropped.
const HEADERS_THAT_MATTER = [
	"content-type",
	"authorization",
	"x-api-key",
	"x-goog-api-key",
	"anthropic-version",
	"anthropic-beta",
	"session-id",
	"session_id",
	"x-client-request-id",
	"x-session-affinity",
	"x-session-id",
];

export const DEFAULT_API_KEY = "test-api-key-0001";
const DEFAULT_CHUNK_DELAY_MS = 3;

function sleep(ms) {
	return new Promise((resolve) => setTimeout(resolve, ms));
}

const eventStreamCodec = new EventStreamCodec(
	(bytes) => Buffer.from(bytes).toString("utf8"),
	(text) => new Uint8Array(Buffer.from(text, "utf8")),
);

// One AWS event-stream message (project extension):
// `{"event": TYPE, "payload": JSON}`, `{"exception": TYPE, "payload": JSON}`,
// `{"error": CODE, "message": TEXT}` or `{"frame": {NAME: STRING...}, "payload": ...}`, all
// headers strings; `badCrc: "prelude" | "message"` corrupts a checksum, `truncate: N` keeps
// the first N bytes. The Rust replay server encodes the same way.
function frameToBuffer(chunk) {
	const headers = {};
	const put = (name, value) => {
		headers[name] = { type: "string", value: String(value) };
	};
	if (chunk.event !== undefined) {
		put(":event-type", chunk.event);
		put(":content-type", "application/json");
		put(":message-type", "event");
	} else if (chunk.exception !== undefined) {
		put(":exception-type", chunk.exception);
		put(":content-type", "application/json");
		put(":message-type", "exception");
	} else if (chunk.error !== undefined) {
		put(":error-code", chunk.error);
		put(":error-message", chunk.message ?? "");
		put(":message-type", "error");
	} else {
		for (const [name, value] of Object.entries(chunk.frame)) put(name, value);
	}
	const payload = chunk.payload === undefined ? "" : typeof chunk.payload === "string" ? chunk.payload : JSON.stringify(chunk.payload);
	const bytes = Buffer.from(eventStreamCodec.encode({ headers, body: new Uint8Array(Buffer.from(payload, "utf8")) }));
	if (chunk.badCrc === "prelude") bytes[8] ^= 0xff;
	if (chunk.badCrc === "message") bytes[bytes.length - 1] ^= 0xff;
	return chunk.truncate === undefined ? bytes : bytes.subarray(0, chunk.truncate);
}

export function chunkToBuffer(chunk) {
	if (typeof chunk === "string") return Buffer.from(chunk, "utf8");
	if (chunk && typeof chunk === "object") {
		if (["event", "exception", "error", "frame"].some((k) => chunk[k] !== undefined)) return frameToBuffer(chunk);
		if (typeof chunk.b64 === "string") return Buffer.from(chunk.b64, "base64");
		if (typeof chunk.hex === "string") return Buffer.from(chunk.hex, "hex");
		if (typeof chunk.text === "string") return Buffer.from(chunk.text, "utf8");
	}
	throw new Error(`Bad chunk in case file: ${JSON.stringify(chunk)}`);
}

export function responsesOf(testCase) {
	if (Array.isArray(testCase.responses)) return testCase.responses;
	return [testCase.response];
}

export function startServer(testCase) {
	const requests = [];
	const responses = responsesOf(testCase);
	const server = http.createServer((req, res) => {
		const parts = [];
		req.on("data", (d) => parts.push(d));
		req.on("end", async () => {
			const bodyBytes = Buffer.concat(parts);
			const rawBody = bodyBytes.toString("utf8");
			const headers = {};
			for (const [k, v] of Object.entries(req.headers)) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : v;
			requests.push({ method: req.method, path: req.url, headers, rawBody, bodyBytes });
			const response = responses[Math.min(requests.length - 1, responses.length - 1)];
			res.socket?.setNoDelay(true);
			const outHeaders = { ...(response.headers ?? {}) };
			res.writeHead(response.status ?? 200, outHeaders);
			if (typeof res.flushHeaders === "function") res.flushHeaders();
			const delay = response.chunkDelayMs ?? DEFAULT_CHUNK_DELAY_MS;
			for (const chunk of response.chunks ?? []) {
				if (res.destroyed) return;
				res.write(chunkToBuffer(chunk));
				await sleep(delay);
			}
			res.end();
		});
	});
	return new Promise((resolve) => {
		server.listen(0, "127.0.0.1", () => resolve({ server, requests, port: server.address().port }));
	});
}

export function clone(value) {
	return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}

/** Tool-call ids that pi-ai invents for Google function calls: `${name}_${Date.now()}_${counter}`. */
function normalizeToolCallId(api, block) {
	if ((api === "google-generative-ai" || api === "google-vertex") && typeof block.id === "string") {
		const prefix = `${block.name}_`;
		if (block.id.startsWith(prefix) && /^\d+_\d+$/.test(block.id.slice(prefix.length))) {
			return `${block.name}_<generated>`;
		}
	}
	return block.id;
}

function normalizeToolCall(api, toolCall) {
	const out = clone(toolCall);
	out.id = normalizeToolCallId(api, toolCall);
	return out;
}

export function normalizeMessage(api, message) {
	if (!message) return null;
	const m = clone(message);
	delete m.timestamp;
	delete m.durationMs;
	if (Array.isArray(m.diagnostics)) {
		for (const d of m.diagnostics) {
			delete d.timestamp;
			if (d.error) delete d.error.stack;
		}
	}
	m.content = (m.content ?? []).map((block) => (block.type === "toolCall" ? normalizeToolCall(api, block) : block));
	return m;
}

export function recordEvent(api, event) {
	const out = { type: event.type };
	if (event.contentIndex !== undefined) out.contentIndex = event.contentIndex;
	if (event.delta !== undefined) out.delta = event.delta;
	if (event.content !== undefined) out.content = event.content;
	if (event.type === "toolcall_start" || event.type === "toolcall_delta") {
		const block = event.partial?.content?.[event.contentIndex];
		out.arguments = clone(block?.arguments ?? {});
	}
	if (event.type === "toolcall_end") out.toolCall = normalizeToolCall(api, event.toolCall);
	if (event.type === "done" || event.type === "error") out.reason = event.reason;
	return out;
}

function parseBody(raw) {
	try {
		return JSON.parse(raw);
	} catch {
		return { $raw: raw };
	}
}

export function describeRequest(req, extraHeaderNames) {
	if (!req) return null;
	const wanted = new Set([...HEADERS_THAT_MATTER, ...extraHeaderNames.map((h) => h.toLowerCase())]);
	const headers = {};
	for (const name of [...wanted].sort()) {
		if (req.headers[name] !== undefined) headers[name] = req.headers[name];
	}
	const out = { method: req.method, path: req.path, headers, body: parseBody(req.rawBody) };
	// Debug aid only (not part of the compared output): PI_ORACLE_ALL_HEADERS=1 shows every header.
	if (process.env.PI_ORACLE_ALL_HEADERS === "1") out.allHeaders = req.headers;
	return out;
}

export async function runCase(testCase) {
	const api = testCase.api;
	const modulePath = API_MODULES[api];
	if (!modulePath) throw new Error(`Unknown api: ${api}`);
	// The AWS SDK speaks HTTP/2 by default; the replay server speaks HTTP/1.1.
	if (api === "bedrock-converse-stream") process.env.AWS_BEDROCK_FORCE_HTTP1 = "1";
	const impl = await import(modulePath);

	const { server, requests, port } = await startServer(testCase);
	const origin = `http://127.0.0.1:${port}`;
	const input = testCase.request;
	const model = clone(input.model);
	model.baseUrl = String(model.baseUrl ?? "{{origin}}").replaceAll("{{origin}}", origin);
	model.api = api;
	const options = { apiKey: DEFAULT_API_KEY, ...clone(input.options ?? {}) };
	// `abortAfterEvents: N` (project extension): the caller aborts right after the N-th event.
	const abortAfter = testCase.abortAfterEvents;
	const controller = new AbortController();
	if (abortAfter !== undefined) options.signal = controller.signal;

	// Capture every event at the moment the provider pushes it, so toolcall argument snapshots
	// reflect the partial message at that instant (the partial object is shared and keeps changing).
	// `calls: N` (project extension): the same request is streamed N times in a row in this process
	// (state a provider keeps per session carries over); calls after the first are reported in
	// `laterCalls` as `{events, message}`.
	let events = [];
	let target = null;
	const originalPush = AssistantMessageEventStream.prototype.push;
	AssistantMessageEventStream.prototype.push = function (event) {
		if (target === null) target = this;
		if (this === target) events.push(recordEvent(api, event));
		const result = originalPush.call(this, event);
		if (this === target && events.length === abortAfter) controller.abort();
		return result;
	};

	const callOnce = async () => {
		events = [];
		target = null;
		let message = null;
		let thrownMessage;
		try {
			const stream = impl.streamSimple(model, normalizeContext(clone(input.context)), options);
			target = stream;
			for await (const _event of stream) {
				// events are recorded in push()
			}
			message = await stream.result();
		} catch (error) {
			thrownMessage = error instanceof Error ? error.message : String(error);
		}
		return { events, message, thrown: thrownMessage };
	};

	let finalMessage = null;
	let thrown;
	const laterCalls = [];
	try {
		const first = await callOnce();
		events = first.events;
		finalMessage = first.message;
		thrown = first.thrown;
		for (let i = 1; i < (testCase.calls ?? 1); i++) {
			const later = await callOnce();
			laterCalls.push({ events: later.events, message: normalizeMessage(api, later.message) });
		}
	} finally {
		AssistantMessageEventStream.prototype.push = originalPush;
		server.close();
		server.closeAllConnections?.();
	}

	const extraHeaderNames = [
		...(HEADERS_BY_API[api] ?? []),
		...Object.keys(input.model?.headers ?? {}),
		...Object.keys(input.options?.headers ?? {}),
	];
	const result = {
		case: testCase.id,
		api,
		request: describeRequest(requests[0], extraHeaderNames),
		requestCount: requests.length,
		events,
		message: normalizeMessage(api, finalMessage),
		overflow: finalMessage ? isContextOverflow(finalMessage, model.contextWindow) : false,
	};
	if (laterCalls.length > 0) result.laterCalls = laterCalls;
	if (requests.length > 1) {
		result.extraRequests = requests.slice(1).map((r) => describeRequest(r, extraHeaderNames));
	}
	if (thrown !== undefined) result.thrown = thrown;
	return result;
}

function stableStringify(value) {
	return JSON.stringify(value, null, 2);
}

// What run_ws.mjs shares with this runner (passed in: importing this module from there would
// wait on this module's own top-level await).
const helpers = { API_MODULES, HEADERS_BY_API, HEADERS_THAT_MATTER, DEFAULT_API_KEY, startServer, clone, normalizeMessage, recordEvent, describeRequest };

const isMain = import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith("run.mjs");
if (isMain) {
	const file = process.argv[2];
	if (!file) {
		console.error("usage: node run.mjs CASE.json");
		process.exit(2);
	}
	const testCase = JSON.parse(readFileSync(file, "utf8"));
	// Cases with a `websocket` script run against a WebSocket server (run_ws.mjs).
	const result = testCase.websocket ? await (await import("./run_ws.mjs")).runWsCase(testCase, helpers) : await runCase(testCase);
	// Exit once stdout has drained: an immediate exit cuts a large document at the pipe buffer.
	process.stdout.write(`${stableStringify(result)}\n`, () => process.exit(0));
}

// WebSocket cases (ws/streams/<api>/<case>.json, the `openai-codex-responses` WebSocket
// transport): run.mjs hands a case with a `websocket` script here.
//
//   node22 run.mjs ws/streams/openai-codex-responses/CASE.json
//
// One local server on 127.0.0.1 answers both the WebSocket upgrades (scripted per
// connection) and plain HTTP requests (the case's `response`/`responses`, for the fallback to
// SSE). The reference's WebSocket client is Node's global WebSocket (undici), so these cases
// need Node 22 or later; under Node 20 the reference has no WebSocket and would fall back.
//
// Case keys beyond run.mjs's:
//   websocket: [CONNECTION...]   one script per upgrade request, in arrival order:
//     {"refuse": STATUS}          answer the upgrade with this HTTP status
//     {"hang": true}              accept the TCP connection, never answer the upgrade
//     {"replies": [[MSG...]...]}  the messages sent after the n-th message the client sends;
//                                 MSG is a JSON value sent as one text message, or
//                                 {"$text": S} (raw text), {"$fragments": [S...]} (one text
//                                 message in several frames), {"$close": {"code", "reason"}},
//                                 {"$terminate": true} (drop the TCP connection), {"$wait": MS}
//     "delayMs": N                pause after each message (default 3)
//   turns: [{"messages": [...], "waitMs": N}]
//                                 more requests in the same process, each N ms (default 0)
//                                 after the last: each appends the last turn's final message
//                                 and these messages to the context
//   abortAfterEvents: N           the caller aborts the first turn right after its N-th event
//   abortAfterMs: N               ... or N ms after it started
//
// Output: {case, api, connections: [{path, headers, refused?, sent: [JSON...]}],
// httpRequests: [...], turns: [{events, message, overflow}]}. A UUIDv7 in a header (the
// request id of a request without a session) reads "<uuidv7>"; a zstd body is decoded.
import { STATUS_CODES } from "node:http";
import zlib from "node:zlib";
import { AssistantMessageEventStream } from "@earendil-works/pi-ai/utils/event-stream";
import { isContextOverflow } from "@earendil-works/pi-ai/utils/overflow";
import { normalizeContext } from "@earendil-works/pi-ai/utils/transcript";
import { WebSocketServer } from "ws";

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const DEFAULT_DELAY_MS = 3;

function sleep(ms) {
	return new Promise((resolve) => setTimeout(resolve, ms));
}

function parseSent(data) {
	const text = data.toString("utf8");
	try {
		return JSON.parse(text);
	} catch {
		return { $raw: text };
	}
}

async function play(ws, messages, delayMs) {
	for (const m of messages) {
		if (m && typeof m === "object" && !Array.isArray(m)) {
			if (m.$wait !== undefined) {
				await sleep(m.$wait);
				continue;
			}
			if (m.$close !== undefined) {
				ws.close(m.$close.code, m.$close.reason ?? "");
				return;
			}
			if (m.$terminate) {
				ws.terminate();
				return;
			}
			if (m.$fragments !== undefined) {
				const parts = m.$fragments;
				parts.forEach((part, i) => ws.send(part, { fin: i === parts.length - 1, binary: false }));
				await sleep(delayMs);
				continue;
			}
		}
		if (ws.readyState !== ws.OPEN) return;
		ws.send(m && typeof m === "object" && typeof m.$text === "string" ? m.$text : JSON.stringify(m));
		await sleep(delayMs);
	}
}

function attachWebSocket(server, testCase, connections, wanted) {
	const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
	const scripts = testCase.websocket ?? [];
	server.on("upgrade", (req, socket, head) => {
		const script = scripts[connections.length] ?? { refuse: 500 };
		const headers = {};
		for (const name of [...wanted].sort()) {
			const value = req.headers[name];
			if (value !== undefined) {
				const text = Array.isArray(value) ? value.join(", ") : value;
				headers[name] = UUID_V7.test(text) ? "<uuidv7>" : text;
			}
		}
		const connection = { path: req.url, headers, sent: [] };
		connections.push(connection);
		if (script.refuse !== undefined) {
			connection.refused = script.refuse;
			socket.end(`HTTP/1.1 ${script.refuse} ${STATUS_CODES[script.refuse] ?? "Refused"}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
			return;
		}
		if (script.hang) return;
		wss.handleUpgrade(req, socket, head, (ws) => {
			let n = 0;
			ws.on("message", (data) => {
				connection.sent.push(parseSent(data));
				const replies = (script.replies ?? [])[n++] ?? [];
				void play(ws, replies, script.delayMs ?? DEFAULT_DELAY_MS);
			});
		});
	});
	return wss;
}

// Under Node 22.15+ the reference compresses its SSE request bodies with zstd
// (`content-encoding: zstd`); the body is compared decoded, as the server reads it, and the
// encoding is not compared (tern sends SSE bodies uncompressed).
function decoded(request) {
	if (request.headers["content-encoding"] !== "zstd") return request;
	return { ...request, rawBody: zlib.zstdDecompressSync(request.bodyBytes).toString("utf8") };
}

export async function runWsCase(testCase, helpers) {
	if (typeof globalThis.WebSocket !== "function") {
		throw new Error("WebSocket cases need Node 22+ (the reference uses the global WebSocket)");
	}
	const { API_MODULES, HEADERS_BY_API, HEADERS_THAT_MATTER, DEFAULT_API_KEY, startServer, clone, normalizeMessage, recordEvent, describeRequest } = helpers;
	const api = testCase.api;
	const impl = await import(API_MODULES[api]);
	const input = testCase.request;
	const extraHeaderNames = [
		...(HEADERS_BY_API[api] ?? []),
		...Object.keys(input.model?.headers ?? {}),
		...Object.keys(input.options?.headers ?? {}),
	];
	const wanted = new Set([...HEADERS_THAT_MATTER, ...extraHeaderNames.map((h) => h.toLowerCase())]);

	const { server, requests, port } = await startServer({ ...testCase, response: testCase.response ?? { status: 500, chunks: [] } });
	const connections = [];
	const wss = attachWebSocket(server, testCase, connections, wanted);
	const origin = `http://127.0.0.1:${port}`;
	const model = clone(input.model);
	model.baseUrl = String(model.baseUrl ?? "{{origin}}").replaceAll("{{origin}}", origin);
	model.api = api;

	const turns = [];
	let context = normalizeContext(clone(input.context));
	let last = null;
	const extraTurns = testCase.turns ?? [];
	const originalPush = AssistantMessageEventStream.prototype.push;
	try {
		for (let t = 0; t <= extraTurns.length; t++) {
			if (t > 0) {
				await sleep(extraTurns[t - 1].waitMs ?? 0);
				context = { ...context, messages: [...context.messages, ...(last ? [last] : []), ...clone(extraTurns[t - 1].messages ?? [])] };
			}
			const options = { apiKey: DEFAULT_API_KEY, ...clone(input.options ?? {}) };
			const abortAfter = t === 0 ? testCase.abortAfterEvents : undefined;
			const controller = new AbortController();
			const abortAfterMs = t === 0 ? testCase.abortAfterMs : undefined;
			if (abortAfter !== undefined || abortAfterMs !== undefined) options.signal = controller.signal;
			const timer = abortAfterMs === undefined ? undefined : setTimeout(() => controller.abort(), abortAfterMs);
			const events = [];
			let target = null;
			AssistantMessageEventStream.prototype.push = function (event) {
				if (target === null) target = this;
				if (this === target) events.push(recordEvent(api, event));
				const result = originalPush.call(this, event);
				if (this === target && events.length === abortAfter) controller.abort();
				return result;
			};
			const stream = impl.streamSimple(model, context, options);
			target = stream;
			for await (const _event of stream) {
				// recorded in push()
			}
			last = await stream.result();
			clearTimeout(timer);
			turns.push({ events, message: normalizeMessage(api, last), overflow: last ? isContextOverflow(last, model.contextWindow) : false });
		}
	} finally {
		AssistantMessageEventStream.prototype.push = originalPush;
		impl.closeOpenAICodexWebSocketSessions?.();
		wss.close();
		server.close();
		server.closeAllConnections?.();
	}
	return {
		case: testCase.id,
		api,
		connections,
		httpRequests: requests.map((r) => describeRequest(decoded(r), extraHeaderNames)),
		turns,
	};
}

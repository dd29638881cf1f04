#!/usr/bin/env node
// Reference runner for the pi-agent-core conformance scenarios.
// Usage: node run.mjs SCENARIO.json   -> prints the normalized trace JSON on stdout.
// The scenario format and the trace format are specified in ../FORMAT.md.
import { readFileSync } from "node:fs";
import {
	Agent,
	agentLoop,
	agentLoopContinue,
	runAgentLoop,
	runAgentLoopContinue,
	runToolCall,
} from "@earendil-works/pi-agent-core";
import { createAssistantMessageEventStream } from "@earendil-works/pi-ai";

const FORMAT = "pi-conformance-trace/1";
const ZERO_USAGE = {
	input: 0,
	output: 0,
	cacheRead: 0,
	cacheWrite: 0,
	totalTokens: 0,
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};
const STANDARD_ROLES = new Set(["system", "user", "assistant", "toolResult"]);
const DEFAULT_MODEL_ID = "model-a";

const scenarioPath = process.argv[2];
if (!scenarioPath) {
	process.stderr.write("usage: node run.mjs SCENARIO.json\n");
	process.exit(2);
}
const scenario = JSON.parse(readFileSync(scenarioPath, "utf8"));
const trace = [];
const hooksSpec = scenario.hooks ?? {};
const script = scenario.model ?? [];

// ---------------------------------------------------------------- helpers

const clone = (v) => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function abortableSleep(ms, signal) {
	return new Promise((resolve, reject) => {
		if (signal?.aborted) {
			reject(new Error("aborted"));
			return;
		}
		const onAbort = () => {
			clearTimeout(timer);
			reject(new Error("aborted"));
		};
		const timer = setTimeout(() => {
			signal?.removeEventListener("abort", onAbort);
			resolve();
		}, ms);
		signal?.addEventListener("abort", onAbort, { once: true });
	});
}

function isZeroUsage(u) {
	if (u === null || typeof u !== "object") return false;
	return Object.values(u).every((x) => (x && typeof x === "object" ? isZeroUsage(x) : x === 0 || x === false || x === undefined));
}

/** Normalization shared by every value written to the trace (FORMAT.md, "Normalization"). */
function norm(v) {
	if (v === undefined) return undefined;
	if (v instanceof Set) return [...v].map(norm);
	if (Array.isArray(v)) return v.map((x) => (x === undefined ? null : norm(x)));
	if (v && typeof v === "object") {
		const out = {};
		for (const [k, x] of Object.entries(v)) {
			if (x === undefined || typeof x === "function") continue;
			if (k === "timestamp") continue;
			if (k === "durationMs") {
				out[k] = true;
				continue;
			}
			if (k === "usage" && isZeroUsage(x)) continue;
			if ((k === "api" || k === "provider") && v.role === "assistant") continue;
			out[k] = norm(x);
		}
		return out;
	}
	return v;
}

function canonical(v) {
	if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
	if (v && typeof v === "object") {
		return `{${Object.keys(v)
			.sort()
			.map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
			.join(",")}}`;
	}
	return JSON.stringify(v);
}

const roles = (messages) => messages.map((m) => m.role);

function makeModel(id) {
	return {
		id,
		name: id,
		api: "scripted",
		provider: "scripted",
		baseUrl: "",
		reasoning: true,
		input: ["text"],
		cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
		contextWindow: 100000,
		maxTokens: 8192,
	};
}

/** Scenario message -> runtime message (adds timestamp 0 when missing). */
function msg(m) {
	const out = clone(m);
	if (out.timestamp === undefined) out.timestamp = 0;
	return out;
}
const msgs = (list) => (list ?? []).map(msg);
const userText = (text) => ({ role: "user", content: [{ type: "text", text }], timestamp: 0 });

function makeResult(spec) {
	const out = clone(spec ?? {});
	if (out.text !== undefined) {
		out.content = [{ type: "text", text: out.text }];
		delete out.text;
	}
	return out;
}

// ---------------------------------------------------------------- tools

const toolDefs = new Map();
for (const def of scenario.tools ?? []) toolDefs.set(def.id ?? def.name, def);
const builtTools = new Map();

function applyCoercions(ops, args) {
	let out = args;
	const own = () => {
		if (out === args) out = { ...args };
	};
	for (const op of ops) {
		if (out === null || typeof out !== "object" || Array.isArray(out)) break;
		if (op.op === "rename") {
			if (op.from in out && !(op.to in out)) {
				own();
				out[op.to] = out[op.from];
				delete out[op.from];
			}
		} else if (op.op === "default") {
			if (!(op.key in out)) {
				own();
				out[op.key] = clone(op.value);
			}
		} else if (op.op === "drop") {
			if (op.key in out) {
				own();
				delete out[op.key];
			}
		} else {
			throw new Error(`unknown prepareArguments op ${op.op}`);
		}
	}
	return out;
}

function tool(ref) {
	if (builtTools.has(ref)) return builtTools.get(ref);
	const def = toolDefs.get(ref);
	if (!def) throw new Error(`scenario references unknown tool ${ref}`);
	const t = {
		name: def.name,
		description: def.description ?? "",
		label: def.label ?? def.name,
		parameters: clone(def.parameters ?? { type: "object", properties: {} }),
		...(def.executionMode ? { executionMode: def.executionMode } : {}),
		...(def.prepareArguments ? { prepareArguments: (args) => applyCoercions(def.prepareArguments, args) } : {}),
		execute: (toolCallId, params, signal, onUpdate) => executeTool(def, toolCallId, params, signal, onUpdate),
	};
	builtTools.set(ref, t);
	return t;
}
const toolsFor = (refs) => (refs ?? []).map(tool);

// Tools visible to nested runToolCall steps: the agent's tools, or the active low-level context's tools.
let lowLevelTools = null;
const nestedTools = () => lowLevelTools ?? agent?.state.tools ?? [];

async function executeTool(def, toolCallId, params, signal, onUpdate) {
	const b = def.calls?.[toolCallId] ?? def.behavior ?? {};
	trace.push({ kind: "execute", toolCallId, toolName: def.name, args: norm(params) });
	for (const step of b.steps ?? []) {
		if (step.sleep !== undefined) {
			if (b.onAbort === "ignore") await sleep(step.sleep);
			else {
				try {
					await abortableSleep(step.sleep, signal);
				} catch {
					throw new Error(b.abortError ?? "Tool aborted");
				}
			}
		} else if (step.update !== undefined) {
			onUpdate?.(makeResult(step.update));
		} else if (step.runToolCall !== undefined) {
			await nestedRunToolCall(step.runToolCall, signal, toolCallId);
		} else if (step.do !== undefined) {
			await doAction(step, { in: `tool:${toolCallId}` });
		}
	}
	if (b.lateUpdates) {
		// Starts only after execute() has settled (FORMAT.md: late updates).
		setTimeout(async () => {
			for (const step of b.lateUpdates) {
				if (step.sleep !== undefined) await sleep(step.sleep);
				else if (step.update !== undefined) onUpdate?.(makeResult(step.update));
			}
		}, 0);
	}
	if (b.throw !== undefined) throw new Error(b.throw);
	return makeResult(b.result ?? { text: "ok" });
}

function syntheticAssistant(toolCall) {
	return {
		role: "assistant",
		content: [toolCall],
		api: "scripted",
		provider: "scripted",
		model: DEFAULT_MODEL_ID,
		usage: ZERO_USAGE,
		stopReason: "toolUse",
		timestamp: 0,
	};
}

function outcomeEntry(outcome) {
	return {
		toolCallId: outcome.toolCall.id,
		result: norm(outcome.result),
		isError: outcome.isError,
		...(outcome.durationMs === undefined ? {} : { durationMs: true }),
	};
}

async function nestedRunToolCall(spec, signal, parent) {
	const toolCall = { type: "toolCall", id: spec.id, name: spec.name, arguments: clone(spec.arguments ?? {}) };
	const tools = nestedTools();
	const outcome = await runToolCall(toolCall, {
		tools,
		assistantMessage: syntheticAssistant(toolCall),
		context: { messages: [], tools: [...tools] },
		signal,
		beforeToolCall: hooks.beforeToolCall,
		afterToolCall: hooks.afterToolCall,
		onUpdate: (partialResult) => {
			trace.push({ kind: "runToolCallUpdate", toolCallId: toolCall.id, partialResult: norm(partialResult) });
		},
	});
	trace.push({ kind: "runToolCall", parent, ...outcomeEntry(outcome) });
}

// ---------------------------------------------------------------- scripted model

let requestCount = 0;
let responseIndex = 0;

function streamFn(model, context, options) {
	requestCount++;
	trace.push({
		kind: "request",
		n: requestCount,
		model: model.id,
		thinkingLevel: options?.reasoning ?? "off",
		messages: norm(context.messages),
		...requestOptions(options),
	});
	const spec = responseIndex < script.length ? script[responseIndex] : undefined;
	responseIndex++;
	if (spec?.throw !== undefined) throw new Error(spec.throw);
	const stream = createAssistantMessageEventStream();
	void produce(stream, spec, model, options?.signal, requestCount);
	if (spec?.streamThrow !== undefined) return throwingStream(stream, spec);
	return stream;
}

/** The recorded stream options (FORMAT.md 2.3, `request.options`): only those that are set. */
const RECORDED_OPTIONS = ["sessionId", "maxTokens", "temperature", "maxRetryDelayMs", "thinkingBudgets"];
function requestOptions(options) {
	const out = {};
	for (const k of RECORDED_OPTIONS) if (options?.[k] !== undefined) out[k] = clone(options[k]);
	return Object.keys(out).length > 0 ? { options: out } : {};
}

/** A stream whose iteration throws `streamThrow` after `throwAfterEvents` events (FORMAT.md 1.4). */
function throwingStream(stream, spec) {
	const limit = spec.throwAfterEvents ?? 0;
	return {
		async *[Symbol.asyncIterator]() {
			let seen = 0;
			for await (const event of stream) {
				if (seen >= limit) break;
				seen++;
				yield event;
			}
			throw new Error(spec.streamThrow);
		},
		result: () => stream.result(),
	};
}

function chunks(text, size) {
	const cps = Array.from(text);
	if (cps.length === 0) return [];
	if (!size || size <= 0) return [text];
	const out = [];
	for (let i = 0; i < cps.length; i += size) out.push(cps.slice(i, i + size).join(""));
	return out;
}

async function produce(stream, spec, model, signal, n) {
	const base = {
		role: "assistant",
		content: [],
		api: model.api,
		provider: model.provider,
		model: model.id,
		usage: clone(spec?.usage ?? ZERO_USAGE),
		stopReason: "pending",
		timestamp: Date.now(),
	};
	const finish = (message) => {
		if (spec?.noTerminal && message === final) {
			stream.end(message);
			return;
		}
		if (message.stopReason === "error" || message.stopReason === "aborted") {
			stream.push({ type: "error", reason: message.stopReason, error: message });
		} else {
			stream.push({ type: "done", reason: message.stopReason, message });
		}
		stream.end();
	};
	let final;
	if (!spec) {
		finish({ ...base, stopReason: "error", errorMessage: `No scripted response for request ${n}` });
		return;
	}
	const content = clone(spec.content ?? []);
	const stopReason = spec.stopReason ?? (content.some((b) => b.type === "toolCall") ? "toolUse" : "stop");
	final = {
		...base,
		content,
		stopReason,
		...(spec.errorMessage !== undefined ? { errorMessage: spec.errorMessage } : {}),
	};
	const partial = { ...base, content: [] };
	const snapshot = () => ({ ...partial, content: partial.content.map((b) => ({ ...b })) });
	const aborted = () => {
		finish({ ...snapshot(), stopReason: "aborted", errorMessage: "Request was aborted" });
	};
	if (spec.startDelayMs) await sleep(spec.startDelayMs);
	if (signal?.aborted) return aborted();
	if (spec.stream === "final-only") return finish(final);
	stream.push({ type: "start", partial: snapshot() });
	// Another `start` before the blocks listed in `restartBefore` (FORMAT.md 1.4).
	const restart = (index) => {
		for (const i of spec.restartBefore ?? []) if (i === index) stream.push({ type: "start", partial: snapshot() });
	};
	for (let index = 0; index < content.length; index++) {
		restart(index);
		const block = content[index];
		let kind;
		let text;
		if (block.type === "text") {
			kind = "text";
			text = block.text;
			partial.content.push({ type: "text", text: "" });
		} else if (block.type === "thinking") {
			kind = "thinking";
			text = block.thinking;
			partial.content.push({ type: "thinking", thinking: "" });
		} else {
			kind = "toolcall";
			text = JSON.stringify(block.arguments ?? {});
			partial.content.push({ type: "toolCall", id: block.id, name: block.name, arguments: {} });
		}
		stream.push({ type: `${kind}_start`, contentIndex: index, partial: snapshot() });
		for (const chunk of chunks(text, spec.chunkSize)) {
			if (spec.delayMs) await sleep(spec.delayMs);
			if (signal?.aborted) return aborted();
			if (kind === "text") partial.content[index].text += chunk;
			else if (kind === "thinking") partial.content[index].thinking += chunk;
			stream.push({ type: `${kind}_delta`, contentIndex: index, delta: chunk, partial: snapshot() });
		}
		if (kind === "toolcall") {
			partial.content[index] = clone(block);
			stream.push({ type: "toolcall_end", contentIndex: index, toolCall: clone(block), partial: snapshot() });
		} else {
			stream.push({ type: `${kind}_end`, contentIndex: index, content: text, partial: snapshot() });
		}
	}
	restart(content.length);
	if (spec.endDelayMs) await sleep(spec.endDelayMs);
	if (signal?.aborted) return aborted();
	finish(final);
}

// ---------------------------------------------------------------- hooks

function matches(m, facts) {
	if (!m) return true;
	for (const [k, want] of Object.entries(m)) {
		switch (k) {
			case "minN":
				if (!(facts.n >= want)) return false;
				break;
			case "minRepeat":
				if (!(facts.repeat >= want)) return false;
				break;
			default:
				if (facts[k] !== want) return false;
		}
	}
	return true;
}

// Rule keys of prepareRequest/prepareNextTurn that return a replacement context (FORMAT.md 1.5).
const CONTEXT_KEYS = ["contextReplace", "systemPrompt", "contextTools", "contextAppend"];

/** `{context}` built from a rule's context keys, or `{}` when it has none. */
function contextUpdate(returned, context) {
	if (!CONTEXT_KEYS.some((k) => returned[k] !== undefined)) return {};
	let messages = returned.contextReplace !== undefined ? msgs(returned.contextReplace) : [...context.messages];
	if (returned.systemPrompt !== undefined) {
		if (messages[0]?.role === "system") messages = [{ ...messages[0], content: returned.systemPrompt }, ...messages.slice(1)];
		else messages = [{ role: "system", content: returned.systemPrompt, timestamp: 0 }, ...messages];
	}
	if (returned.contextAppend !== undefined) messages = [...messages, ...msgs(returned.contextAppend)];
	const tools = returned.contextTools !== undefined ? toolsFor(returned.contextTools) : context.tools;
	return { context: { ...context, messages, tools } };
}

const firstRule = (rules, facts) => (rules ?? []).find((r) => matches(r.match, facts));

async function runRuleSideEffects(rule, hookName) {
	for (const a of rule?.actions ?? []) await doAction(a, { in: hookName });
	if (rule?.delayMs) await sleep(rule.delayMs);
}

function buildHooks() {
	const h = {};
	const counts = {};
	const next = (name) => (counts[name] = (counts[name] ?? 0) + 1);
	const repeats = new Map();

	if (hooksSpec.beforeToolCall) {
		h.beforeToolCall = async ({ toolCall, args }) => {
			const n = next("beforeToolCall");
			const key = `${toolCall.name}\u0000${canonical(args)}`;
			const repeat = (repeats.get(key) ?? 0) + 1;
			repeats.set(key, repeat);
			const rule = firstRule(hooksSpec.beforeToolCall, { n, repeat, toolName: toolCall.name, toolCallId: toolCall.id });
			let returned;
			if (rule && rule.throw === undefined && (rule.block !== undefined || rule.reason !== undefined || rule.terminate !== undefined)) {
				returned = {};
				for (const f of ["block", "reason", "terminate"]) if (rule[f] !== undefined) returned[f] = rule[f];
			}
			trace.push({
				kind: "hook",
				hook: "beforeToolCall",
				n,
				toolCallId: toolCall.id,
				toolName: toolCall.name,
				args: norm(args),
				toolCallArgs: norm(toolCall.arguments),
				repeat,
				...(rule?.throw !== undefined ? { threw: rule.throw } : { returned: returned ?? null }),
			});
			// Changes the validated arguments in place, as a hook may (FORMAT.md 1.5).
			if (rule?.mutateArgs !== undefined && args && typeof args === "object") Object.assign(args, clone(rule.mutateArgs));
			await runRuleSideEffects(rule, "beforeToolCall");
			if (rule?.throw !== undefined) throw new Error(rule.throw);
			return returned;
		};
	}
	if (hooksSpec.afterToolCall) {
		h.afterToolCall = async ({ toolCall, args, result, isError }) => {
			const n = next("afterToolCall");
			const rule = firstRule(hooksSpec.afterToolCall, { n, toolName: toolCall.name, toolCallId: toolCall.id, isError });
			const returned = rule?.override ? makeResult(rule.override) : undefined;
			trace.push({
				kind: "hook",
				hook: "afterToolCall",
				n,
				toolCallId: toolCall.id,
				toolName: toolCall.name,
				args: norm(args),
				result: norm(result),
				isError,
				...(rule?.throw !== undefined ? { threw: rule.throw } : { returned: norm(returned) ?? null }),
			});
			await runRuleSideEffects(rule, "afterToolCall");
			if (rule?.throw !== undefined) throw new Error(rule.throw);
			return returned;
		};
	}
	if (hooksSpec.finishTurn) {
		h.finishTurn = async ({ message, toolResults, newMessages }) => {
			const n = next("finishTurn");
			const toolCalls = message.content.filter((c) => c.type === "toolCall").length;
			const rule = firstRule(hooksSpec.finishTurn, {
				n,
				hasToolCalls: toolCalls > 0,
				stopReason: message.stopReason,
			});
			const returned = rule?.action ? { action: rule.action } : undefined;
			trace.push({
				kind: "hook",
				hook: "finishTurn",
				n,
				stopReason: message.stopReason,
				toolCalls,
				toolResults: toolResults.map((r) => r.toolCallId),
				newMessageRoles: roles(newMessages),
				returned: returned ?? null,
			});
			await runRuleSideEffects(rule, "finishTurn");
			return returned;
		};
	}
	if (hooksSpec.prepareRequest) {
		h.prepareRequest = async ({ context, model, thinkingLevel }) => {
			const n = next("prepareRequest");
			const rule = firstRule(hooksSpec.prepareRequest, { n });
			let returned;
			if (rule && (rule.model !== undefined || rule.thinkingLevel !== undefined || CONTEXT_KEYS.some((k) => rule[k] !== undefined))) {
				returned = {};
				if (rule.model !== undefined) returned.model = rule.model;
				if (rule.thinkingLevel !== undefined) returned.thinkingLevel = rule.thinkingLevel;
				for (const k of CONTEXT_KEYS) if (rule[k] !== undefined) returned[k] = rule[k];
			}
			trace.push({
				kind: "hook",
				hook: "prepareRequest",
				n,
				model: model.id,
				thinkingLevel,
				messageRoles: roles(context.messages),
				returned: norm(returned) ?? null,
			});
			await runRuleSideEffects(rule, "prepareRequest");
			if (!returned) return undefined;
			return {
				...(returned.model !== undefined ? { model: makeModel(returned.model) } : {}),
				...(returned.thinkingLevel !== undefined ? { thinkingLevel: returned.thinkingLevel } : {}),
				...contextUpdate(returned, context),
			};
		};
	}
	if (hooksSpec.prepareNextTurn) {
		h.prepareNextTurn = async ({ message, toolResults, context }) => {
			const n = next("prepareNextTurn");
			const rule = firstRule(hooksSpec.prepareNextTurn, { n, stopReason: message.stopReason });
			let returned;
			if (
				rule &&
				(rule.model !== undefined ||
					rule.thinkingLevel !== undefined ||
					rule.messages !== undefined ||
					CONTEXT_KEYS.some((k) => rule[k] !== undefined))
			) {
				returned = {};
				if (rule.model !== undefined) returned.model = rule.model;
				if (rule.thinkingLevel !== undefined) returned.thinkingLevel = rule.thinkingLevel;
				if (rule.messages !== undefined) returned.messages = rule.messages;
				for (const k of CONTEXT_KEYS) if (rule[k] !== undefined) returned[k] = rule[k];
			}
			trace.push({
				kind: "hook",
				hook: "prepareNextTurn",
				n,
				stopReason: message.stopReason,
				toolResults: toolResults.map((r) => r.toolCallId),
				returned: norm(returned) ?? null,
			});
			await runRuleSideEffects(rule, "prepareNextTurn");
			if (!returned) return undefined;
			return {
				...(returned.model !== undefined ? { model: makeModel(returned.model) } : {}),
				...(returned.thinkingLevel !== undefined ? { thinkingLevel: returned.thinkingLevel } : {}),
				...(returned.messages !== undefined ? { messages: msgs(returned.messages) } : {}),
				...contextUpdate(returned, context),
			};
		};
	}
	if (hooksSpec.transformContext) {
		const spec = hooksSpec.transformContext;
		h.transformContext = async (messages) => {
			const n = next("transformContext");
			let out = messages;
			if (spec.keepLast !== undefined) {
				const lead = messages[0]?.role === "system" ? [messages[0]] : [];
				const rest = messages.slice(lead.length);
				out = [...lead, ...(spec.keepLast > 0 ? rest.slice(-spec.keepLast) : [])];
			}
			trace.push({
				kind: "hook",
				hook: "transformContext",
				n,
				inputRoles: roles(messages),
				...(spec.throw !== undefined ? { threw: spec.throw } : { outputRoles: roles(out) }),
			});
			if (spec.throw !== undefined) throw new Error(spec.throw);
			return out;
		};
	}
	if (hooksSpec.convertToLlm) {
		const spec = hooksSpec.convertToLlm;
		const toUser = new Set(spec.toUser ?? []);
		h.convertToLlm = (messages) => {
			const n = next("convertToLlm");
			const out = messages.flatMap((m) => {
				if (STANDARD_ROLES.has(m.role)) return [m];
				if (toUser.has(m.role)) return [{ role: "user", content: m.content, timestamp: m.timestamp ?? 0 }];
				return [];
			});
			trace.push({ kind: "hook", hook: "convertToLlm", n, inputRoles: roles(messages), outputRoles: roles(out) });
			return out;
		};
	}
	return h;
}

const defaultConvertToLlm = (messages) => messages.filter((m) => STANDARD_ROLES.has(m.role));
const hooks = buildHooks();

// ---------------------------------------------------------------- triggers, recorder, listeners

const triggers = [];
const matchCounts = new Map();
let agent;
let lowLevelController = null;
const unsubscribers = new Map();

function triggerLabel(at) {
	const filters = ["toolName", "role", "update"].filter((k) => at[k] !== undefined).map((k) => `${k}=${at[k]}`);
	return `${at.event}${filters.length ? `[${filters.join(",")}]` : ""}#${at.nth ?? 1}`;
}

function triggerMatches(at, event) {
	if (event.type !== at.event) return false;
	if (at.toolName !== undefined && event.toolName !== at.toolName) return false;
	if (at.role !== undefined && event.message?.role !== at.role) return false;
	if (at.update !== undefined && event.assistantMessageEvent?.type !== at.update) return false;
	return true;
}

function normEvent(event) {
	if (event.type === "message_update") {
		const a = event.assistantMessageEvent;
		return { type: event.type, event: a.type, ...(a.delta !== undefined ? { delta: a.delta } : {}) };
	}
	return norm(event);
}

async function recordEvent(event) {
	trace.push({ kind: "event", ...normEvent(event) });
	for (const t of triggers) {
		if (t.fired || !triggerMatches(t.action.at, event)) continue;
		const key = t.index;
		const count = (matchCounts.get(key) ?? 0) + 1;
		matchCounts.set(key, count);
		if (count === (t.action.at.nth ?? 1)) {
			t.fired = true;
			await doAction(t.action, { at: triggerLabel(t.action.at) });
		}
	}
}

function listenerSnapshot() {
	const s = agent.state;
	const last = s.messages[s.messages.length - 1];
	return {
		messageCount: s.messages.length,
		lastRole: last ? last.role : null,
		isStreaming: s.isStreaming,
		streamingRole: s.streamingMessage ? s.streamingMessage.role : null,
		pendingToolCalls: [...s.pendingToolCalls],
		errorMessage: s.errorMessage ?? null,
	};
}

function fullState() {
	const s = agent.state;
	return {
		messages: norm(s.messages),
		systemPrompt: s.systemPrompt,
		model: s.model.id,
		thinkingLevel: s.thinkingLevel,
		tools: s.tools.map((t) => t.name),
		isStreaming: s.isStreaming,
		streamingMessage: s.streamingMessage ? norm(s.streamingMessage) : null,
		pendingToolCalls: [...s.pendingToolCalls],
		errorMessage: s.errorMessage ?? null,
		queued: {
			// Read through the queues' storage; a port exposes the queued messages in FIFO order.
			steering: norm(agent.steeringQueue.messages),
			followUp: norm(agent.followUpQueue.messages),
		},
	};
}

// ---------------------------------------------------------------- driver actions

function loopConfig(cfg = {}) {
	const level = cfg.thinkingLevel ?? "off";
	return {
		model: makeModel(cfg.model ?? DEFAULT_MODEL_ID),
		reasoning: level === "off" ? undefined : level,
		...(cfg.toolExecution ? { toolExecution: cfg.toolExecution } : {}),
		...(cfg.sessionId !== undefined ? { sessionId: cfg.sessionId } : {}),
		...(cfg.maxTokens !== undefined ? { maxTokens: cfg.maxTokens } : {}),
		...(cfg.temperature !== undefined ? { temperature: cfg.temperature } : {}),
		convertToLlm: hooks.convertToLlm ?? defaultConvertToLlm,
		transformContext: hooks.transformContext,
		beforeToolCall: hooks.beforeToolCall,
		afterToolCall: hooks.afterToolCall,
		finishTurn: hooks.finishTurn,
		prepareRequest: hooks.prepareRequest,
		prepareNextTurn: hooks.prepareNextTurn,
	};
}

async function lowLevel(a) {
	const context = { messages: msgs(a.context?.messages), tools: toolsFor(a.context?.tools) };
	const config = loopConfig(a.config);
	const controller = new AbortController();
	lowLevelController = controller;
	lowLevelTools = context.tools;
	try {
		if (a.do === "runAgentLoop" || a.do === "runAgentLoopContinue") {
			const emit = (event) => recordEvent(event);
			if (a.do === "runAgentLoop") await runAgentLoop(msgs(a.prompts), context, config, emit, controller.signal, streamFn);
			else await runAgentLoopContinue(context, config, emit, controller.signal, streamFn);
		} else {
			const stream =
				a.do === "agentLoop"
					? agentLoop(msgs(a.prompts), context, config, controller.signal, streamFn)
					: agentLoopContinue(context, config, controller.signal, streamFn);
			const events = [];
			for await (const event of stream) events.push(normEvent(event));
			const result = await stream.result();
			trace.push({ kind: "stream", do: a.do, events, result: norm(result) });
		}
	} finally {
		lowLevelController = null;
		lowLevelTools = null;
	}
}

/**
 * `wait: false` starts a run without awaiting it (a later rejection is still recorded), then
 * waits for a 0 ms timer, so the run has gone as far as it can without a timer (FORMAT.md 1.7).
 */
async function awaitOrDetach(a, run) {
	if (a.wait !== false) {
		await run;
		return;
	}
	run.catch((error) => {
		trace.push({ kind: "error", do: a.do, message: error instanceof Error ? error.message : String(error) });
	});
	await sleep(0);
}

async function doAction(a, where = {}) {
	trace.push({ kind: "action", do: a.do, ...(where.at ? { at: where.at } : {}), ...(where.in ? { in: where.in } : {}) });
	try {
		switch (a.do) {
			case "prompt": {
				const run = a.messages !== undefined ? agent.prompt(msgs(a.messages)) : agent.prompt(a.text);
				await awaitOrDetach(a, run);
				break;
			}
			case "continue":
				await awaitOrDetach(a, agent.continue());
				break;
			case "waitForIdle":
				await agent.waitForIdle();
				trace.push({ kind: "idle" });
				break;
			case "clearSteeringQueue":
				agent.clearSteeringQueue();
				break;
			case "clearFollowUpQueue":
				agent.clearFollowUpQueue();
				break;
			case "clearAllQueues":
				agent.clearAllQueues();
				break;
			case "unsubscribe": {
				const off = unsubscribers.get(a.name);
				if (!off) throw new Error(`runner: unknown listener ${a.name}`);
				off();
				break;
			}
			case "steer":
				agent.steer(a.message !== undefined ? msg(a.message) : userText(a.text));
				break;
			case "followUp":
				agent.followUp(a.message !== undefined ? msg(a.message) : userText(a.text));
				break;
			case "abort":
				if (lowLevelController) lowLevelController.abort();
				else agent.abort();
				break;
			case "reset":
				agent.reset();
				break;
			case "set":
				if (a.tools !== undefined) agent.state.tools = toolsFor(a.tools);
				if (a.messages !== undefined) agent.state.messages = msgs(a.messages);
				if (a.model !== undefined) agent.state.model = makeModel(a.model);
				if (a.thinkingLevel !== undefined) agent.state.thinkingLevel = a.thinkingLevel;
				if (a.toolExecution !== undefined) agent.toolExecution = a.toolExecution;
				if (a.steeringMode !== undefined) agent.steeringMode = a.steeringMode;
				if (a.followUpMode !== undefined) agent.followUpMode = a.followUpMode;
				break;
			case "sleep":
				await sleep(a.ms);
				break;
			case "snapshot":
				trace.push({ kind: "snapshot", state: fullState() });
				break;
			case "runToolCall": {
				const toolCall = {
					type: "toolCall",
					id: a.toolCall.id,
					name: a.toolCall.name,
					arguments: clone(a.toolCall.arguments ?? {}),
				};
				const tools = toolsFor(a.tools);
				const controller = new AbortController();
				if (a.aborted) controller.abort();
				const outcome = await runToolCall(toolCall, {
					tools,
					assistantMessage: syntheticAssistant(toolCall),
					context: { messages: [], tools: [...tools] },
					signal: controller.signal,
					beforeToolCall: hooks.beforeToolCall,
					afterToolCall: hooks.afterToolCall,
					onUpdate: (partialResult) => {
						trace.push({ kind: "runToolCallUpdate", toolCallId: toolCall.id, partialResult: norm(partialResult) });
					},
				});
				trace.push({ kind: "runToolCall", parent: null, ...outcomeEntry(outcome) });
				break;
			}
			case "agentLoop":
			case "agentLoopContinue":
			case "runAgentLoop":
			case "runAgentLoopContinue":
				await lowLevel(a);
				break;
			default:
				throw new Error(`runner: unknown action ${a.do}`);
		}
	} catch (error) {
		if (String(error?.message).startsWith("runner:")) throw error;
		trace.push({ kind: "error", do: a.do, message: error instanceof Error ? error.message : String(error) });
	}
}

// ---------------------------------------------------------------- main

async function main() {
	if (scenario.agent) {
		const s = scenario.agent;
		agent = new Agent({
			initialState: {
				...(s.systemPrompt !== undefined ? { systemPrompt: s.systemPrompt } : {}),
				// `model: null` builds the Agent without a model (its placeholder applies).
				...(s.model === null ? {} : { model: makeModel(s.model ?? DEFAULT_MODEL_ID) }),
				thinkingLevel: s.thinkingLevel ?? "off",
				tools: toolsFor(s.tools),
				messages: msgs(s.messages),
			},
			streamFn,
			...(s.toolExecution ? { toolExecution: s.toolExecution } : {}),
			...(s.steeringMode ? { steeringMode: s.steeringMode } : {}),
			...(s.followUpMode ? { followUpMode: s.followUpMode } : {}),
			...(s.sessionId !== undefined ? { sessionId: s.sessionId } : {}),
			...(s.maxRetryDelayMs !== undefined ? { maxRetryDelayMs: s.maxRetryDelayMs } : {}),
			...(s.thinkingBudgets !== undefined ? { thinkingBudgets: clone(s.thinkingBudgets) } : {}),
			...(hooks.convertToLlm ? { convertToLlm: hooks.convertToLlm } : {}),
			...(hooks.transformContext ? { transformContext: hooks.transformContext } : {}),
			...(hooks.beforeToolCall ? { beforeToolCall: hooks.beforeToolCall } : {}),
			...(hooks.afterToolCall ? { afterToolCall: hooks.afterToolCall } : {}),
			...(hooks.finishTurn ? { finishTurn: hooks.finishTurn } : {}),
			...(hooks.prepareRequest ? { prepareRequest: hooks.prepareRequest } : {}),
			...(hooks.prepareNextTurn ? { prepareNextTurnWithContext: (ctx) => hooks.prepareNextTurn(ctx) } : {}),
		});
		agent.subscribe((event) => recordEvent(event));
		for (const l of scenario.listeners ?? []) {
			let recorded = 0;
			const off = agent.subscribe(async (event) => {
				if (l.events && !l.events.includes(event.type)) return;
				const state = listenerSnapshot();
				if (l.delayMs) await sleep(l.delayMs);
				trace.push({ kind: "listener", name: l.name, type: event.type, state });
				recorded++;
				if (l.unsubscribeAfter !== undefined && recorded === l.unsubscribeAfter) off();
			});
			unsubscribers.set(l.name, off);
		}
	}
	const sequential = [];
	(scenario.actions ?? []).forEach((a, index) => {
		if (a.at) triggers.push({ index, action: a, fired: false });
		else sequential.push(a);
	});
	for (const a of sequential) await doAction(a);
	// Let late timers (late tool updates) run before the final snapshot.
	await sleep(scenario.settleMs ?? 20);
	process.stdout.write(serialize({ format: FORMAT, trace, ...(agent ? { final: fullState() } : {}) }));
}

/** Plain JSON laid out for reading: one trace entry per line, one final-state field (or message) per line. */
function serialize(out) {
	const lines = ["{"];
	const keys = Object.keys(out);
	keys.forEach((key, i) => {
		const comma = i < keys.length - 1 ? "," : "";
		const value = out[key];
		if (key === "trace") {
			lines.push(`  "trace": [`);
			value.forEach((entry, j) => lines.push(`    ${JSON.stringify(entry)}${j < value.length - 1 ? "," : ""}`));
			lines.push(`  ]${comma}`);
		} else if (key === "final") {
			lines.push(`  "final": {`);
			const fk = Object.keys(value);
			fk.forEach((f, j) => {
				const c = j < fk.length - 1 ? "," : "";
				const v = value[f];
				if (f === "messages" && v.length > 0) {
					lines.push(`    "messages": [`);
					v.forEach((m, k) => lines.push(`      ${JSON.stringify(m)}${k < v.length - 1 ? "," : ""}`));
					lines.push(`    ]${c}`);
				} else lines.push(`    ${JSON.stringify(f)}: ${JSON.stringify(v)}${c}`);
			});
			lines.push(`  }${comma}`);
		} else lines.push(`  ${JSON.stringify(key)}: ${JSON.stringify(value)}${comma}`);
	});
	lines.push("}");
	return `${lines.join("\n")}\n`;
}

const watchdog = setTimeout(() => {
	process.stderr.write("runner: scenario did not finish within 30 s\n");
	process.stdout.write(serialize({ format: FORMAT, trace, incomplete: true }));
	process.exit(3);
}, 30000);
main().then(
	() => clearTimeout(watchdog),
	(error) => {
		clearTimeout(watchdog);
		process.stderr.write(`runner: ${error?.stack ?? error}\n`);
		process.exit(2);
	},
);

#!/usr/bin/env node
// Regenerate expected outputs from the reference implementation.
//
//   node gen.mjs [ROOT]            ROOT defaults to .. (shared/providers); reads ROOT/streams/<api>/<case>.json,
//                                  writes ROOT/expected/<api>/<case>.json
//   node gen.mjs [ROOT] --verify   re-run every case and fail if any output differs from ROOT/expected
//   ONLY=<api>/ node gen.mjs       only the cases whose "<api>/<case>.json" contains that text
//
// Every case runs in its own `node run.mjs CASE.json` process (fresh module state, e.g. the Google tool-call
// id counter). Each case is run twice and the two outputs must be byte-identical, otherwise gen fails.
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const verify = args.includes("--verify");
const root = resolve(args.find((a) => !a.startsWith("--")) ?? join(here, ".."));
const runner = join(here, "run.mjs");
const CONCURRENCY = 6;

function listCases(dir) {
	const out = [];
	for (const api of readdirSync(dir, { withFileTypes: true })) {
		if (!api.isDirectory()) continue;
		for (const f of readdirSync(join(dir, api.name)).sort()) {
			if (f.endsWith(".json")) out.push(join(dir, api.name, f));
		}
	}
	return out.sort();
}

function runOnce(file) {
	return new Promise((resolvePromise, reject) => {
		execFile(process.execPath, [runner, file], { maxBuffer: 64 * 1024 * 1024, timeout: 60_000 }, (err, stdout, stderr) => {
			if (err) reject(new Error(`${file}: ${err.message}\n${stderr}`));
			else resolvePromise(stdout);
		});
	});
}

async function pool(items, fn) {
	const results = new Array(items.length);
	let next = 0;
	async function worker() {
		while (next < items.length) {
			const i = next++;
			results[i] = await fn(items[i], i);
		}
	}
	await Promise.all(Array.from({ length: Math.min(CONCURRENCY, items.length) }, worker));
	return results;
}

const streamsDir = join(root, "streams");
const expectedDir = join(root, "expected");
const only = process.env.ONLY;
const cases = listCases(streamsDir).filter((f) => !only || relative(streamsDir, f).includes(only));
let failures = 0;
await pool(cases, async (file) => {
	const rel = relative(streamsDir, file);
	const a = await runOnce(file);
	const b = await runOnce(file);
	if (a !== b) {
		failures++;
		console.error(`NONDETERMINISTIC ${rel}`);
		return;
	}
	const target = join(expectedDir, rel);
	if (verify) {
		const prev = existsSync(target) ? readFileSync(target, "utf8") : undefined;
		if (prev !== a) {
			failures++;
			console.error(`DIFFERS ${rel}`);
		} else {
			console.log(`same ${rel}`);
		}
		return;
	}
	mkdirSync(dirname(target), { recursive: true });
	writeFileSync(target, a);
	console.log(`wrote ${relative(root, target)}`);
});
console.log(`${cases.length} cases, ${failures} problems`);
process.exit(failures === 0 ? 0 : 1);

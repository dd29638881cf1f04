#!/usr/bin/env node
// Generates tern-ai's model catalog from the reference package (pi-ai 1.6.0): every chat model
// of every built-in provider whose wire API tern implements, exactly as the reference lists it,
// plus each provider's API-key environment variables.
//
//   (cd crates/tern-ai/tests/providers/reference && npm ci)   # once: the pinned reference
//   node scripts/gen-catalog.mjs            # writes crates/tern-ai/src/providers/catalog.json
//                                           # and crates/tern-ai/tests/data/catalog_expected.json
//
// The second file is what the catalog test compares tern's loaded catalog with: the same
// models rendered by the reference's own `getModels()`, so a field tern drops or changes on
// load fails the test.
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const referenceDir = join(root, "crates/tern-ai/tests/providers/reference");
const piAi = join(referenceDir, "node_modules/@earendil-works/pi-ai/dist");
const load = async (file) => import(pathToFileURL(join(piAi, file)).href);

// The wire APIs tern-ai implements (crates/tern-ai/src/providers/mod.rs, `APIS`).
const IMPLEMENTED = [
	"openai-completions",
	"openai-responses",
	"anthropic-messages",
	"google-generative-ai",
	"mistral-conversations",
	"azure-openai-responses",
	"google-vertex",
	"openai-codex-responses",
	"bedrock-converse-stream",
];

const { builtinProviders } = await load("providers/all.js");
const { findEnvKeys } = await load("env-api-keys.js");

// Every variable reads as set, so `findEnvKeys` answers with the provider's whole list.
const everyVariableSet = new Proxy({}, { get: (_target, name) => (typeof name === "string" ? "set" : undefined) });

const providers = [];
const models = [];
for (const provider of builtinProviders()) {
	const chat = (await provider.getModels()).filter((m) => IMPLEMENTED.includes(m.api));
	if (chat.length === 0) continue;
	providers.push({ id: provider.id, envApiKeys: findEnvKeys(provider.id, everyVariableSet) ?? [] });
	models.push(...chat);
}

const lines = (items) => `[\n${items.map((i) => JSON.stringify(i)).join(",\n")}\n]\n`;
const catalog = `{\n"apis": ${JSON.stringify(IMPLEMENTED)},\n"providers": ${lines(providers).trimEnd()},\n"models": ${lines(models).trimEnd()}\n}\n`;
writeFileSync(join(root, "crates/tern-ai/src/providers/catalog.json"), catalog);
writeFileSync(join(root, "crates/tern-ai/tests/data/catalog_expected.json"), lines(models));
console.log(`${providers.length} providers, ${models.length} models over ${IMPLEMENTED.length} APIs`);

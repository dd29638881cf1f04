// Prints the parameters and constrainedSampling of pi's built-in tools as one JSON object
// (`{name: {parameters, constrainedSampling}}`), from pi-coding-agent's own tool definitions.
//
//   node schemas.mjs <pi-coding-agent dist folder> > ../../src/pi_schemas.json
const base = process.argv[2];
const out = {};
for (const name of ["read", "write", "edit", "bash", "ls", "grep", "find"]) {
	const mod = await import(`${base}/core/tools/${name}.js`);
	const key = Object.keys(mod).find((k) => /^create.*ToolDefinition$/.test(k));
	const def = mod[key](process.cwd(), {});
	out[name] = { parameters: def.parameters, constrainedSampling: def.constrainedSampling ?? null };
}
console.log(JSON.stringify(out, null, 2));

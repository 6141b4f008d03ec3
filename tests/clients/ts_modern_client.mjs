#!/usr/bin/env node
// A real MCP client on the official TypeScript SDK v2 (@modelcontextprotocol/client 2.3.1)
// pinned to the 2026-07-28 era: it connects with `server/discover` (no `initialize`) and
// every request carries the per-request `_meta` envelope. Used by mcpscope's tests to
// record a modern session and replay it against `mcpscope mock`; the TypeScript
// counterpart of py_modern_client.py.
//
//   node tests/clients/ts_modern_client.mjs stdio COMMAND [ARGS...]
//   node tests/clients/ts_modern_client.mjs http URL
//
// Lists the tools, calls add(2, 3), then opens a `subscriptions/listen` stream for tool
// list changes, calls touch_tools (which makes the server publish one) and waits (10 s at
// most) for the event; prints one JSON line with sorted keys: the events the listen stream
// brought, the result, the server's name, the tool names and the negotiated version.
//
// On stdio the SDK's base StdioClientTransport would probe `server/discover` on a
// throwaway sibling process (a second spawn of COMMAND, i.e. a second proxy writing the
// same capture); the trivial subclass below makes it probe in place, on the one process.
// Dependencies resolve from tests/peers/node_modules, so it runs from any directory.
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.resolve(here, "../peers/package.json"));
const load = async (spec) => import(pathToFileURL(require.resolve(spec)).href);

const { Client, StreamableHTTPClientTransport } = await load("@modelcontextprotocol/client");
const { StdioClientTransport } = await load("@modelcontextprotocol/client/stdio");

class InPlaceStdioTransport extends StdioClientTransport {}

const [mode, target, ...rest] = process.argv.slice(2);
let transport;
if (mode === "stdio" && target) {
  transport = new InPlaceStdioTransport({ command: target, args: rest, stderr: "ignore" });
} else if (mode === "http" && target) {
  transport = new StreamableHTTPClientTransport(new URL(target));
} else {
  console.error("usage: ts_modern_client.mjs stdio COMMAND [ARGS...] | http URL");
  process.exit(64);
}

const client = new Client(
  { name: "mcpscope-ts-modern-client", version: "1.0.0" },
  { versionNegotiation: { mode: { pin: "2026-07-28" } } },
);

let toolsChanged;
const changed = new Promise((resolve) => (toolsChanged = resolve));
client.setNotificationHandler("notifications/tools/list_changed", () => toolsChanged("ToolsListChanged"));

await client.connect(transport);
const tools = await client.listTools();
const result = await client.callTool({ name: "add", arguments: { a: 2, b: 3 } });
const events = [];
const sub = await client.listen({ toolsListChanged: true });
await client.callTool({ name: "touch_tools", arguments: {} });
let timer;
const timeout = new Promise((_, reject) => {
  timer = setTimeout(() => reject(new Error("no tools/list_changed event within 10 s")), 10_000);
});
events.push(await Promise.race([changed, timeout]));
clearTimeout(timer);
await sub.close();

const seen = {
  events,
  result,
  server: client.getServerVersion()?.name ?? null,
  tools: tools.tools.map((t) => t.name).sort(),
  version: client.getNegotiatedProtocolVersion() ?? null,
};
await client.close();

// JSON.stringify with keys sorted at every level (as Python's json.dumps(sort_keys=True)).
const sortKeys = (v) =>
  Array.isArray(v)
    ? v.map(sortKeys)
    : v && typeof v === "object"
      ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys(v[k])]))
      : v;
console.log(JSON.stringify(sortKeys(seen)));
process.exit(0);

#!/usr/bin/env node
// A real MCP client on the official TypeScript SDK (@modelcontextprotocol/sdk 1.32.2),
// used by mcpscope's tests to drive a server through `mcpscope proxy`.
//
//   node tests/clients/ts_client.mjs stdio COMMAND [ARGS...]
//   node tests/clients/ts_client.mjs http URL
//
// It initializes, lists tools, calls `echo`, closes, and prints one JSON line with
// what it saw (server info, tool names, the echo result). Over HTTP it sends
// `Authorization: Bearer ts-client-secret` with every request, so tests can check
// that the proxy forwards it and masks it in the capture.
// Dependencies resolve from tests/peers/node_modules, so it runs from any directory.
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.resolve(here, "../peers/package.json"));
const load = async (spec) => import(pathToFileURL(require.resolve(spec)).href);

const { Client } = await load("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = await load("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = await load("@modelcontextprotocol/sdk/client/streamableHttp.js");

const [mode, target, ...rest] = process.argv.slice(2);
let transport;
if (mode === "stdio") {
  transport = new StdioClientTransport({ command: target, args: rest, stderr: "ignore" });
} else if (mode === "http") {
  transport = new StreamableHTTPClientTransport(new URL(target), {
    requestInit: { headers: { Authorization: "Bearer ts-client-secret" } },
  });
} else {
  console.error("usage: ts_client.mjs stdio COMMAND [ARGS...] | http URL");
  process.exit(64);
}

const client = new Client({ name: "mcpscope-ts-client", version: "1.0.0" });
await client.connect(transport);
const tools = await client.listTools();
const echo = await client.callTool({ name: "echo", arguments: { message: "hello through mcpscope" } });
const server = client.getServerVersion();
if (mode === "http") {
  await transport.terminateSession().catch(() => {});
}
await client.close();
console.log(JSON.stringify({ server: server?.name, tools: tools.tools.map((t) => t.name).sort(), echo }));

#!/usr/bin/env node
// A real MCP client on the official TypeScript SDK that reports what it saw
// instead of stopping at the first failure, for mcpscope's intercept and
// fault-injection tests.
//
//   node tests/clients/ts_fault_client.mjs TIMEOUT_MS COMMAND [ARGS...]
//   node tests/clients/ts_fault_client.mjs TIMEOUT_MS http://HOST:PORT/mcp   (Streamable HTTP)
//
// Steps: connect (initialize + initialized), tools/list, tools/call echo.
// Prints one JSON line: {"connect": OUTCOME, "list": OUTCOME, "call": OUTCOME}
// where OUTCOME is {"ok": …, "ms": N} or {"error": {"code": C, "message": M}, "ms": N};
// a step after a failed connect is not tried. Errors the transport reports
// on its own (a line that is not JSON…) are listed under "transport_errors".
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.resolve(here, "../peers/package.json"));
const load = async (spec) => import(pathToFileURL(require.resolve(spec)).href);

const { Client } = await load("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = await load("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = await load("@modelcontextprotocol/sdk/client/streamableHttp.js");

const [timeoutMs, command, ...args] = process.argv.slice(2);
const timeout = Number(timeoutMs);
const transport = command.startsWith("http://")
  ? new StreamableHTTPClientTransport(new URL(command))
  : new StdioClientTransport({ command, args, stderr: "ignore" });
const client = new Client({ name: "mcpscope-ts-fault-client", version: "1.0.0" });
const seen = { transport_errors: [] };
client.onerror = (e) => seen.transport_errors.push(String(e?.message ?? e));

async function step(name, f) {
  const t0 = Date.now();
  try {
    seen[name] = { ok: await f(), ms: Date.now() - t0 };
    return true;
  } catch (e) {
    seen[name] = { error: { code: e?.code ?? null, message: String(e?.message ?? e) }, ms: Date.now() - t0 };
    return false;
  }
}

if (await step("connect", async () => { await client.connect(transport, { timeout }); return client.getServerVersion()?.name ?? null; })) {
  await step("list", async () => (await client.listTools(undefined, { timeout })).tools.map((t) => t.name).sort());
  await step("call", async () => {
    const r = await client.callTool({ name: "echo", arguments: { message: "hello" } }, undefined, { timeout });
    return r;
  });
}
console.log(JSON.stringify(seen));
await Promise.race([client.close().catch(() => {}), new Promise((r) => setTimeout(r, 2000))]);
process.exit(0);

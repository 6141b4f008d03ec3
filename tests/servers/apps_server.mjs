#!/usr/bin/env node
// An MCP server with MCP Apps (SEP-1865) for mcpscope's tests: plain
// newline-delimited JSON-RPC over stdio (no SDK on the server side, so every
// byte of _meta is as written here), following the reference's section 10.
//
// Views (tests/servers/apps/*.html):
//   counter.html     written by hand, no SDK (ui/initialize, tool input and
//                    result, buttons for the app's own tools/call, display
//                    mode, ui/message, model context, open-link, teardown)
//   sdk_counter.html built with the real @modelcontextprotocol/ext-apps App
//                    SDK: its app-with-deps bundle is inlined at read time
//   bad.html         misbehaves: calls a model-only tool, asks for display
//                    modes it did not declare, loads an image from an
//                    undeclared domain, uses a draft name, never sends
//                    ui/notifications/initialized
//
// The UI tools are listed only to a client that advertised the extension
// (initialize capabilities, or a 2026-07-28 request's _meta); others get the
// text-only fallback (APPS_SERVER_ALWAYS_UI=1 lists them to every client).
// Run: node tests/servers/apps_server.mjs [--http] (over Streamable HTTP:
// JSON answers on POST /mcp, its port on stderr as "PORT n").
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.resolve(here, "../peers/package.json"));
const EXT = "io.modelcontextprotocol/ui";
const MIME = "text/html;profile=mcp-app";

// APPS_SERVER_ALWAYS_UI=1 lists the UI tools to every client (to compare
// hosts that do not advertise the extension).
const ALWAYS_UI = process.env.APPS_SERVER_ALWAYS_UI === "1";
let uiClient = ALWAYS_UI;
let counter = 0;

const view = (name) => fs.readFileSync(path.join(here, "apps", name), "utf8");

// The ext-apps bundle is an ES module ending in `export{a as App,...}`: inlined
// in one module script, its exports become locals the page's code then uses.
function sdkCounter() {
  const bundlePath = path.join(path.dirname(require.resolve("@modelcontextprotocol/ext-apps")), "app-with-deps.js");
  let bundle = fs.readFileSync(bundlePath, "utf8");
  const at = bundle.lastIndexOf("export{");
  const names = bundle.slice(at + 7, bundle.indexOf("}", at)).split(",").map((p) => p.trim().split(/\s+as\s+/));
  const locals = names.map(([local, exported]) => `const __ext_${exported ?? local} = ${local};`).join("\n");
  bundle = bundle.slice(0, at) + "\n" + locals + "\n";
  return view("sdk_counter.html").replace("/*EXT_APPS_BUNDLE*/", () => bundle.replace(/<\/script/gi, "<\\/script"));
}

const RESOURCES = {
  "ui://mcpscope-test/counter.html": { name: "counter", html: () => view("counter.html"),
    contentMeta: { ui: { csp: { connectDomains: [] }, prefersBorder: true } }, listMeta: { ui: { prefersBorder: true } } },
  "ui://mcpscope-test/sdk_counter.html": { name: "sdk_counter", html: sdkCounter,
    contentMeta: { ui: { prefersBorder: false } } },
  "ui://mcpscope-test/bad.html": { name: "bad", html: () => view("bad.html"),
    contentMeta: { ui: { csp: { connectDomains: ["https://api.example.com", "https://evil.example; script-src *"] },
      permissions: { camera: {} } } } },
  // Declared in the listing only: its _meta.ui comes from there.
  "ui://mcpscope-test/listed_meta.html": { name: "listed_meta", html: () => view("counter.html"),
    listMeta: { ui: { csp: { resourceDomains: ["https://cdn.example.com"] } } } },
  // Not an App resource: the wrong mime type and no doctype.
  "ui://mcpscope-test/not_html.html": { name: "not_html", html: () => "<p>hi</p>", mime: "text/html" },
};

const uiTool = (name, description, uri, extra = {}) => ({
  name, description, inputSchema: { type: "object", properties: { start: { type: "integer" } } },
  _meta: { ui: { resourceUri: uri, ...extra }, "ui/resourceUri": uri },
});

function tools() {
  const plain = { name: "plain_echo", description: "Echo (no UI)", inputSchema: { type: "object", properties: { text: { type: "string" } } } };
  if (!uiClient) {
    return [{ name: "show_counter", description: "Show a counter (text only)", inputSchema: { type: "object", properties: { start: { type: "integer" } } } }, plain];
  }
  return [
    uiTool("show_counter", "Show a counter UI", "ui://mcpscope-test/counter.html"),
    uiTool("show_sdk_counter", "Show a counter UI built with the ext-apps SDK", "ui://mcpscope-test/sdk_counter.html"),
    uiTool("show_bad", "Show a misbehaving UI", "ui://mcpscope-test/bad.html"),
    uiTool("show_listed_meta", "A UI whose _meta.ui is in the listing", "ui://mcpscope-test/listed_meta.html"),
    uiTool("show_not_html", "A UI whose resource is not an App resource", "ui://mcpscope-test/not_html.html"),
    { name: "legacy_flat", description: "Named by the flat key only", inputSchema: { type: "object" },
      _meta: { "ui/resourceUri": "ui://mcpscope-test/counter.html" } },
    { name: "increment", description: "App-only", inputSchema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
      _meta: { ui: { resourceUri: "ui://mcpscope-test/counter.html", visibility: ["app"] } } },
    { name: "secret_model_only", description: "Model-only", inputSchema: { type: "object" }, _meta: { ui: { visibility: ["model"] } } },
    plain,
  ];
}

function callTool(name, args) {
  const start = Number.isInteger(args?.start) ? args.start : 0;
  switch (name) {
    case "show_counter": case "show_sdk_counter": case "show_bad": case "show_listed_meta": case "show_not_html": case "legacy_flat":
      counter = start;
      return { content: [{ type: "text", text: `Counter at ${counter}` }], structuredContent: { value: counter } };
    case "increment": {
      if (!Number.isInteger(args?.n)) return { content: [{ type: "text", text: "n must be an integer" }], isError: true };
      counter += 1;
      return { content: [{ type: "text", text: `Counter at ${counter}` }], structuredContent: { value: counter } };
    }
    case "secret_model_only":
      return { content: [{ type: "text", text: "the secret" }] };
    case "plain_echo":
      return { content: [{ type: "text", text: String(args?.text ?? "") }] };
    default:
      return null;
  }
}

// One message in, its answer out (null for a notification).
function handle(line) {
  let m;
  try { m = JSON.parse(line); } catch { return { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } }; }
  if (m.id === undefined) return null;
  const p = m.params ?? {};
  const metaCaps = p._meta?.["io.modelcontextprotocol/clientCapabilities"];
  if (metaCaps) uiClient = ALWAYS_UI || Boolean(metaCaps.extensions?.[EXT]);
  const ok = (result) => ({ jsonrpc: "2.0", id: m.id, result });
  const err = (code, message) => ({ jsonrpc: "2.0", id: m.id, error: { code, message } });
  switch (m.method) {
    case "initialize":
      uiClient = ALWAYS_UI || Boolean(p.capabilities?.extensions?.[EXT]);
      return ok({ protocolVersion: p.protocolVersion ?? "2025-11-25",
        capabilities: { tools: {}, resources: {}, extensions: { [EXT]: {} } },
        serverInfo: { name: "mcpscope-apps-server", version: "0.1.0" } });
    case "ping": return ok({});
    case "tools/list": return ok({ tools: tools() });
    case "tools/call": {
      const r = callTool(p.name, p.arguments);
      return r ? ok(r) : err(-32602, `Unknown tool: ${p.name}`);
    }
    case "resources/list":
      return ok({ resources: Object.entries(RESOURCES).map(([uri, r]) => ({ uri, name: r.name, mimeType: r.mime ?? MIME, ...(r.listMeta ? { _meta: r.listMeta } : {}) })) });
    case "resources/read": {
      const r = RESOURCES[p.uri];
      if (!r) return err(-32602, `Resource not found: ${p.uri}`);
      return ok({ contents: [{ uri: p.uri, mimeType: r.mime ?? MIME, text: r.html(), ...(r.contentMeta ? { _meta: r.contentMeta } : {}) }] });
    }
    case "prompts/list": return ok({ prompts: [] });
    default: return err(-32601, `Method not found: ${m.method}`);
  }
}

if (process.argv.includes("--http")) {
  // Streamable HTTP, JSON answers, no session: POST /mcp; prints "PORT n" on stderr.
  const http = await import("node:http");
  const server = http.createServer((req, res) => {
    if (req.method !== "POST" || !req.url.startsWith("/mcp")) { res.writeHead(405).end(); return; }
    let body = "";
    req.on("data", (c) => { body += c; });
    req.on("end", () => {
      const answer = handle(body);
      if (answer === null) { res.writeHead(202).end(); return; }
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
    });
  });
  server.listen(0, "127.0.0.1", () => process.stderr.write(`PORT ${server.address().port}\n`));
} else {
  const rl = readline.createInterface({ input: process.stdin });
  rl.on("line", (line) => {
    const answer = handle(line);
    if (answer !== null) process.stdout.write(JSON.stringify(answer) + "\n");
  });
  rl.on("close", () => process.exit(0));
}

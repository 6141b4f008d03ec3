// A fast MCP server for load tests (issue #31): Streamable HTTP in JSON mode
// on 127.0.0.1, nothing but node:http, so the generator is what is measured.
// Prints MCP_URL=http://127.0.0.1:PORT/mcp once listening.
//
//   tools/call echo   -> {"content":[{"type":"text","text":<message>}]}
//   tools/call fail   -> the same with isError: true
//   tools/list, ping  -> answered; anything else -> -32601
//
// STALL_AT_MS=N STALL_MS=M: requests arriving between N and N+M ms after the
// first request are all answered at N+M (the server stops for M ms once),
// the stall wrk2 uses to show coordinated omission.
import http from "node:http";

const stallAt = Number(process.env.STALL_AT_MS || -1);
const stallFor = Number(process.env.STALL_MS || 0);
let firstAt = null;
let sessions = 0;

function answer(msg) {
  if (msg.id === undefined || msg.id === null) return null;
  const ok = (result) => ({ jsonrpc: "2.0", id: msg.id, result });
  switch (msg.method) {
    case "initialize":
      return ok({
        protocolVersion: msg.params?.protocolVersion ?? "2025-11-25",
        capabilities: { tools: {} },
        serverInfo: { name: "fast-http-server", version: "1.0.0" },
      });
    case "ping":
      return ok({});
    case "tools/list":
      return ok({ tools: [
        { name: "echo", inputSchema: { type: "object", properties: { message: { type: "string" } } } },
        { name: "fail", inputSchema: { type: "object" } },
      ] });
    case "tools/call": {
      const name = msg.params?.name;
      const text = String(msg.params?.arguments?.message ?? "");
      if (name === "echo") return ok({ content: [{ type: "text", text }] });
      if (name === "fail") return ok({ content: [{ type: "text", text: "failed on purpose" }], isError: true });
      return { jsonrpc: "2.0", id: msg.id, error: { code: -32602, message: `no tool ${name}` } };
    }
    default:
      return { jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: `no method ${msg.method}` } };
  }
}

const server = http.createServer((req, res) => {
  if (req.method !== "POST") {
    res.writeHead(405).end();
    return;
  }
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const now = Date.now();
    if (firstAt === null) firstAt = now;
    let msg;
    try {
      msg = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "parse error" } }));
      return;
    }
    const reply = answer(msg);
    const headers = { "content-type": "application/json" };
    if (msg.method === "initialize") headers["mcp-session-id"] = `s${++sessions}`;
    const send = () => {
      if (reply === null) {
        res.writeHead(202).end();
        return;
      }
      const body = JSON.stringify(reply);
      headers["content-length"] = Buffer.byteLength(body);
      res.writeHead(200, headers);
      res.end(body);
    };
    const since = now - firstAt;
    if (stallAt >= 0 && since >= stallAt && since < stallAt + stallFor) {
      setTimeout(send, stallAt + stallFor - since);
    } else {
      send();
    }
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT || 0), "127.0.0.1", () => {
  console.log(`MCP_URL=http://127.0.0.1:${server.address().port}/mcp`);
});

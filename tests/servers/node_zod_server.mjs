#!/usr/bin/env node
// A small, real MCP server on the official TypeScript SDK (@modelcontextprotocol/sdk 1.32.2)
// with zod input schemas. Used by mcpscope's tests as a well-behaved Node peer.
//
// Run (after scripts/setup-test-peers), from the repo root:
//     node tests/servers/node_zod_server.mjs
//
// Dependencies resolve from tests/peers/node_modules (see createRequire below), so the
// script works from any working directory.
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const peers = path.resolve(here, "../peers/package.json");
const require = createRequire(peers);
const load = async (spec) => import(pathToFileURL(require.resolve(spec)).href);

const { McpServer } = await load("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = await load("@modelcontextprotocol/sdk/server/stdio.js");
const { z } = await load("zod");

const server = new McpServer(
  { name: "mcpscope-node-zod-server", version: "0.1.0" },
  { instructions: "Test server for mcpscope: add, echo, create_order, schedule, fail." },
);

server.registerTool(
  "add",
  {
    description: "Add two integers.",
    inputSchema: { a: z.number().int(), b: z.number().int() },
  },
  async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }),
);

server.registerTool(
  "echo",
  {
    description: "Echo the message back.",
    inputSchema: { message: z.string().describe("Message to echo") },
  },
  async ({ message }) => ({ content: [{ type: "text", text: message }] }),
);

server.registerTool(
  "create_order",
  {
    description: "Create an order (nested object, array and enum arguments).",
    inputSchema: {
      customer: z
        .object({
          name: z.string(),
          email: z.string().optional(),
          address: z.object({ city: z.string(), zip: z.string().optional() }),
        })
        .describe("Who orders"),
      items: z
        .array(
          z.object({
            sku: z.string(),
            quantity: z.number().int().min(1),
            size: z.enum(["S", "M", "L"]).optional(),
          }),
        )
        .min(1)
        .describe("Order lines"),
      priority: z.enum(["low", "normal", "high"]).default("normal"),
      gift: z.boolean().optional(),
    },
  },
  async ({ customer, items, priority }) => {
    const count = items.reduce((n, it) => n + it.quantity, 0);
    return {
      content: [
        { type: "text", text: `order for ${customer.name} in ${customer.address.city}: ${count} item(s), ${priority}` },
      ],
    };
  },
);

server.registerTool(
  "schedule",
  {
    description: "Schedule a job (union, record, nullable, literal, formats, bounded numbers).",
    inputSchema: {
      version: z.literal("v1"),
      when: z.string().datetime().describe("Start (ISO 8601)"),
      notify: z.string().email().nullable().describe("Who to tell, or null"),
      trigger: z.discriminatedUnion("type", [
        z.object({ type: z.literal("cron"), expression: z.string().min(9) }),
        z.object({ type: z.literal("interval"), seconds: z.number().int().positive().max(86400) }),
      ]),
      labels: z.record(z.string(), z.string()).optional(),
      weight: z.number().min(0).max(1).default(0.5),
      tags: z.array(z.string().min(1)).max(3).optional(),
      retries: z.number().int().min(0).max(5).optional(),
    },
  },
  async ({ trigger, when }) => ({
    content: [{ type: "text", text: `scheduled ${trigger.type} at ${when}` }],
  }),
);

server.registerTool(
  "fail",
  {
    description: "Always fails: returns a result with isError: true.",
    inputSchema: { reason: z.string().optional() },
  },
  async ({ reason }) => ({
    content: [{ type: "text", text: `fail: ${reason ?? "deliberate failure"}` }],
    isError: true,
  }),
);

await server.connect(new StdioServerTransport());
console.error("mcpscope-node-zod-server running on stdio");

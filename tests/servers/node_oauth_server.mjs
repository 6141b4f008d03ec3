#!/usr/bin/env node
// An OAuth-protected MCP server built from the official TypeScript SDK
// (@modelcontextprotocol/sdk 1.32.2) alone: the SDK's authorization server
// router with its demo in-memory provider (which approves at once, as a
// person clicking "Allow" would), a resource server behind the SDK's
// requireBearerAuth (401 with WWW-Authenticate and resource_metadata), its
// protected resource metadata, and a stateless Streamable HTTP endpoint
// with one tool, `whoami`, that answers with what the token says.
//
// Both servers listen on ephemeral ports of 127.0.0.1. When ready it prints
//     MCP_URL=http://127.0.0.1:<port>/mcp
// on stdout, and on stderr every secret it hands out ("issued <access token>",
// "redirected <url with the code>"), so tests can check mcpscope records none.
//
// Run (after scripts/setup-test-peers): node tests/servers/node_oauth_server.mjs
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import http from "node:http";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.resolve(here, "../peers/package.json"));
const load = async (spec) => import(pathToFileURL(require.resolve(spec)).href);

const { default: express } = await load("express");
const { McpServer } = await load("@modelcontextprotocol/sdk/server/mcp.js");
const { StreamableHTTPServerTransport } = await load("@modelcontextprotocol/sdk/server/streamableHttp.js");
const { mcpAuthRouter, mcpAuthMetadataRouter, createOAuthMetadata, getOAuthProtectedResourceMetadataUrl } = await load(
  "@modelcontextprotocol/sdk/server/auth/router.js",
);
const { requireBearerAuth } = await load("@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js");
const { DemoInMemoryAuthProvider } = await load("@modelcontextprotocol/sdk/examples/server/demoInMemoryOAuthProvider.js");

const listen = () =>
  new Promise((resolve) => {
    const server = http.createServer();
    server.listen(0, "127.0.0.1", () => resolve(server));
  });

const scopesSupported = ["mcp:tools"];

// The authorization server.
const asServer = await listen();
const issuerUrl = new URL(`http://127.0.0.1:${asServer.address().port}`);
const provider = new DemoInMemoryAuthProvider();
const exchange = provider.exchangeAuthorizationCode.bind(provider);
provider.exchangeAuthorizationCode = async (...args) => {
  const tokens = await exchange(...args);
  console.error(`issued ${tokens.access_token}`);
  return tokens;
};
const asApp = express();
asApp.use((req, res, next) => {
  res.on("finish", () => {
    const location = res.getHeader("location");
    if (location) console.error(`redirected ${location}`);
  });
  next();
});
asApp.use(mcpAuthRouter({ provider, issuerUrl, scopesSupported }));
asServer.on("request", asApp);

// The MCP server (the protected resource).
const mcpServer = await listen();
const mcpUrl = new URL(`http://127.0.0.1:${mcpServer.address().port}/mcp`);
const app = express();
app.use(express.json());
app.use(
  mcpAuthMetadataRouter({
    oauthMetadata: createOAuthMetadata({ provider, issuerUrl, scopesSupported }),
    resourceServerUrl: mcpUrl,
    scopesSupported,
    resourceName: "mcpscope OAuth test server",
  }),
);
const bearer = requireBearerAuth({
  verifier: provider,
  requiredScopes: [],
  resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl),
});
app.post("/mcp", bearer, async (req, res) => {
  const server = new McpServer({ name: "mcpscope-oauth-test-server", version: "0.1.0" });
  server.registerTool(
    "whoami",
    { description: "What the access token says about the caller." },
    async (extra) => ({
      content: [
        {
          type: "text",
          text: JSON.stringify({
            clientId: extra.authInfo?.clientId,
            scopes: extra.authInfo?.scopes,
            resource: extra.authInfo?.resource?.toString(),
          }),
        },
      ],
    }),
  );
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on("close", () => {
    transport.close();
    server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, req.body);
});
const notAllowed = (_req, res) => res.status(405).set("Allow", "POST").end();
app.get("/mcp", notAllowed);
app.delete("/mcp", notAllowed);
mcpServer.on("request", app);

console.log(`MCP_URL=${mcpUrl.href}`);
for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => process.exit(0));
}

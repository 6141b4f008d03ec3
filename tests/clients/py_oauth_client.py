"""A real MCP client on the official Python SDK (mcp 2.x) that signs in with OAuth, used
by mcpscope's tests against `mcpscope mock --auth`.

    tests/peers/.venv/bin/python tests/clients/py_oauth_client.py URL TOOL JSON_ARGS

The SDK's own OAuthClientProvider does discovery, dynamic registration, PKCE and the
token exchange; the "browser" here loads the authorization URL without following the
redirect and hands the code, state and iss back, as a signed-in user who approves would.
Prints one JSON line: the server's name, the tool names, the tool's result and how many
times the browser was asked.
"""

import json
import sys

import anyio
import httpx2 as httpx

from mcp import ClientSession, types
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken


class Memory:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def main() -> None:
    url, tool, arguments = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    redirect = {}
    asked = 0

    async def browser(authorization_url: str) -> None:
        nonlocal asked
        asked += 1
        async with httpx.AsyncClient() as http:
            answer = await http.get(authorization_url, follow_redirects=False)
        if answer.status_code != 302:
            raise RuntimeError(f"authorization answered {answer.status_code}: {answer.text}")
        location = httpx.URL(answer.headers["location"])
        redirect.update(dict(location.params))

    async def callback() -> AuthorizationCodeResult:
        if "code" not in redirect:
            raise RuntimeError(f"no code in the redirect: {redirect}")
        return AuthorizationCodeResult(code=redirect["code"], state=redirect.get("state"), iss=redirect.get("iss"))

    metadata = OAuthClientMetadata(
        client_name="mcpscope-py-oauth-client",
        redirect_uris=["http://127.0.0.1:33418/callback"],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    auth = OAuthClientProvider(url, metadata, Memory(), redirect_handler=browser, callback_handler=callback)
    info = types.Implementation(name="mcpscope-py-oauth-client", version="1.0.0")
    async with create_mcp_http_client(auth=auth) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1], client_info=info) as session:
                init = await session.initialize()
                tools = await session.list_tools()
                result = await session.call_tool(tool, arguments)
    print(
        json.dumps(
            {
                "server": init.server_info.name,
                "tools": sorted(t.name for t in tools.tools),
                "result": result.model_dump(mode="json", by_alias=True, exclude_none=True),
                "browser": asked,
            },
            sort_keys=True,
        )
    )


anyio.run(main)

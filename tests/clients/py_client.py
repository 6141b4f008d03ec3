"""A real MCP client on the official Python SDK (mcp 2.x), used by mcpscope's tests
to drive a server through `mcpscope proxy`.

    tests/peers/.venv/bin/python tests/clients/py_client.py stdio COMMAND [ARGS...]
    tests/peers/.venv/bin/python tests/clients/py_client.py http URL

It initializes, lists tools, calls `echo`, closes, and prints one JSON line with what
it saw (server name, tool names, the echo result). Over HTTP it sends
`Authorization: Bearer py-client-secret` with every request.
"""

import json
import sys

import anyio

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def drive(streams) -> dict:
    read, write = streams[0], streams[1]
    info = types.Implementation(name="mcpscope-py-client", version="1.0.0")
    async with ClientSession(read, write, client_info=info) as session:
        init = await session.initialize()
        tools = await session.list_tools()
        echo = await session.call_tool("echo", {"message": "hello through mcpscope"})
        return {
            "server": init.server_info.name,
            "tools": sorted(t.name for t in tools.tools),
            "echo": echo.model_dump(mode="json", by_alias=True, exclude_none=True),
        }


async def main() -> None:
    mode, target, *rest = sys.argv[1:]
    if mode == "stdio":
        params = StdioServerParameters(command=target, args=rest)
        with open("/dev/null", "w") as devnull:
            async with stdio_client(params, errlog=devnull) as streams:
                seen = await drive(streams)
    elif mode == "http":
        http = create_mcp_http_client(headers={"Authorization": "Bearer py-client-secret"})
        async with http:
            async with streamable_http_client(target, http_client=http) as streams:
                seen = await drive(streams)
    else:
        print("usage: py_client.py stdio COMMAND [ARGS...] | http URL", file=sys.stderr)
        sys.exit(64)
    print(json.dumps(seen, sort_keys=True))


anyio.run(main)

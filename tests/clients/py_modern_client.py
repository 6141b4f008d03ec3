"""A real MCP client on the official Python SDK (mcp 2.x) in its default mode: it probes
`server/discover` and speaks 2026-07-28 to a server that answers it (the initialize
handshake otherwise). Used by mcpscope's tests to record a modern session and replay it
against `mcpscope mock`.

    tests/peers/.venv/bin/python tests/clients/py_modern_client.py stdio COMMAND [ARGS...]
    tests/peers/.venv/bin/python tests/clients/py_modern_client.py http URL

Lists the tools, calls add(2, 3), and prints one JSON line: the negotiated protocol
version, the server's name, the tool names and the result.
"""

import json
import sys

import anyio

from mcp import Client, StdioServerParameters


async def main() -> None:
    mode, target, *rest = sys.argv[1:]
    server = StdioServerParameters(command=target, args=rest) if mode == "stdio" else target
    async with Client(server) as client:
        tools = await client.list_tools()
        result = await client.call_tool("add", {"a": 2, "b": 3})
        seen = {
            "version": client.protocol_version,
            "server": client.server_info.name if client.server_info else None,
            "tools": sorted(t.name for t in tools.tools),
            "result": result.model_dump(mode="json", by_alias=True, exclude_none=True),
        }
    print(json.dumps(seen, sort_keys=True))


anyio.run(main)

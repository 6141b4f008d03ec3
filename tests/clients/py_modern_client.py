"""A real MCP client on the official Python SDK (mcp 2.x) in its default mode: it probes
`server/discover` and speaks 2026-07-28 to a server that answers it (the initialize
handshake otherwise). Used by mcpscope's tests to record a modern session and replay it
against `mcpscope mock`.

    tests/peers/.venv/bin/python tests/clients/py_modern_client.py stdio COMMAND [ARGS...]
    tests/peers/.venv/bin/python tests/clients/py_modern_client.py http URL

Lists the tools, calls add(2, 3), then opens a `subscriptions/listen` stream for tool
list changes, calls touch_tools (which makes the server publish one) and waits for the
event; prints one JSON line: the negotiated protocol version, the server's name, the
tool names, the result and the events the listen stream brought.
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
        events = []
        async with client.listen(tools_list_changed=True) as sub:
            await client.call_tool("touch_tools", {})
            with anyio.fail_after(10):
                async for event in sub:
                    events.append(type(event).__name__)
                    break
        seen = {
            "events": events,
            "version": client.protocol_version,
            "server": client.server_info.name if client.server_info else None,
            "tools": sorted(t.name for t in tools.tools),
            "result": result.model_dump(mode="json", by_alias=True, exclude_none=True),
        }
    print(json.dumps(seen, sort_keys=True))


anyio.run(main)

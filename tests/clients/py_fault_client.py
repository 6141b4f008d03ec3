"""A real MCP client on the official Python SDK (mcp 2.x) that reports what it
saw instead of stopping at the first failure, for mcpscope's intercept and
fault-injection tests.

    tests/peers/.venv/bin/python tests/clients/py_fault_client.py TIMEOUT_MS COMMAND [ARGS...]
    tests/peers/.venv/bin/python tests/clients/py_fault_client.py TIMEOUT_MS http://HOST:PORT/mcp

Steps: connect (initialize + initialized), tools/list, tools/call echo. Prints
one JSON line: {"connect": OUTCOME, "list": OUTCOME, "call": OUTCOME} where
OUTCOME is {"ok": ..., "ms": N} or {"error": {"code": C, "message": M}, "ms": N};
a step after a failed connect is not tried.
"""

import json
import sys
import time
from datetime import timedelta

import anyio

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


async def main() -> None:
    timeout_ms, command, *args = sys.argv[1:]
    timeout = timedelta(milliseconds=int(timeout_ms))
    seen: dict = {}

    async def step(name, f):
        t0 = time.monotonic()
        try:
            with anyio.fail_after(timeout.total_seconds() + 5):
                seen[name] = {"ok": await f(), "ms": int((time.monotonic() - t0) * 1000)}
            return True
        except MCPError as e:
            seen[name] = {"error": {"code": e.code, "message": e.message}, "ms": int((time.monotonic() - t0) * 1000)}
        except BaseException as e:  # noqa: BLE001 - what the client saw is the point
            if isinstance(e, BaseExceptionGroup):
                e = e.exceptions[0]
            seen[name] = {"error": {"code": None, "message": f"{type(e).__name__}: {e}"}, "ms": int((time.monotonic() - t0) * 1000)}
        return False

    info = types.Implementation(name="mcpscope-py-fault-client", version="1.0.0")

    def streams():
        if command.startswith("http://"):
            return streamable_http_client(command)
        params = StdioServerParameters(command=command, args=args)
        return stdio_client(params, errlog=open("/dev/null", "w"))

    try:
        async with streams() as opened:
            read, write = opened[0], opened[1]
            async with ClientSession(read, write, client_info=info, read_timeout_seconds=timeout.total_seconds()) as session:

                async def connect():
                    init = await session.initialize()
                    return init.server_info.name

                async def list_tools():
                    return sorted(t.name for t in (await session.list_tools()).tools)

                async def call():
                    r = await session.call_tool("echo", {"message": "hello"})
                    return r.model_dump(mode="json", by_alias=True, exclude_none=True)

                if await step("connect", connect):
                    await step("list", list_tools)
                    await step("call", call)
    except BaseException as e:  # noqa: BLE001
        seen.setdefault("closed_with", f"{type(e).__name__}: {e}")
    print(json.dumps(seen, sort_keys=True), flush=True)


anyio.run(main)

"""A real MCP server on the official Python SDK (mcp 2.x) for the 2026-07-28 era.

The SDK serves both eras on stdio from the same process: `server/discover` and
per-request `_meta` (2026-07-28), or the `initialize` handshake (older revisions).
This server adds what only the modern era has:

* `setup_project(name)`: a multi round-trip request (SEP-2322), written by hand:
  round 1 answers `input_required` asking for the client's roots (`roots/list`),
  round 2 asks to confirm with an elicitation (`elicitation/create`), each with an
  opaque `requestState` the client must echo; round 3 completes with what it got.
* `summarize(text)`: one round asking for a sampling (`sampling/createMessage`).
* `touch_tools()`: publishes `notifications/tools/list_changed` to every
  `subscriptions/listen` stream that asked for it (the SDK serves listen itself).
* `add(a, b)`: a plain tool.

Run (after scripts/setup-test-peers):
    tests/peers/.venv/bin/python tests/servers/py_modern_server.py              # stdio
    tests/peers/.venv/bin/python tests/servers/py_modern_server.py --http 8000  # http://127.0.0.1:8000/mcp
"""

import json

from mcp_types import InputRequiredResult

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer(
    name="mcpscope-py-modern-server",
    version="0.1.0",
    instructions="Modern-era test server for mcpscope: setup_project (MRTR), summarize, touch_tools, add.",
)


def input_required(requests: dict, state: str | None) -> InputRequiredResult:
    wire: dict = {"resultType": "input_required", "inputRequests": requests}
    if state is not None:
        wire["requestState"] = state
    return InputRequiredResult.model_validate(wire)


def dump(model) -> dict:
    if hasattr(model, "model_dump"):
        return model.model_dump(by_alias=True, exclude_none=True, mode="json")
    return model


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def setup_project(name: str, ctx: Context) -> str | InputRequiredResult:
    """Set up a project: asks for the roots, then for a confirmation (two input_required rounds)."""
    state = ctx.request_state
    responses = {k: dump(v) for k, v in (ctx.input_responses or {}).items()}
    if state is None:
        return input_required({"roots": {"method": "roots/list", "params": {}}}, "step-1")
    if state == "step-1":
        roots = responses.get("roots", {}).get("roots", [])
        uris = [r.get("uri") for r in roots]
        return input_required(
            {
                "confirm": {
                    "method": "elicitation/create",
                    "params": {
                        "mode": "form",
                        "message": f"Create project {name} in {uris[0] if uris else '(no root)'}?",
                        "requestedSchema": {
                            "type": "object",
                            "properties": {"confirm": {"type": "boolean", "title": "Create it"}},
                            "required": ["confirm"],
                        },
                    },
                }
            },
            "step-2:" + json.dumps(uris),
        )
    if state.startswith("step-2:"):
        uris = json.loads(state[len("step-2:"):])
        answer = responses.get("confirm", {})
        action = answer.get("action", "?")
        content = answer.get("content")
        return f"project {name}: roots={uris} action={action} content={json.dumps(content, sort_keys=True)}"
    raise ValueError(f"unknown requestState {state!r}")


@server.tool()
async def summarize(text: str, ctx: Context) -> str | InputRequiredResult:
    """Summarize text by asking the client's model (one sampling round)."""
    answer = dump((ctx.input_responses or {}).get("summary")) if ctx.input_responses else None
    if not answer:
        return input_required(
            {
                "summary": {
                    "method": "sampling/createMessage",
                    "params": {
                        "messages": [{"role": "user", "content": {"type": "text", "text": f"Summarize: {text}"}}],
                        "maxTokens": 50,
                    },
                }
            },
            None,
        )
    content = answer.get("content", {})
    return f"summary: {content.get('text', '?')} (model {answer.get('model', '?')})"


@server.tool()
async def touch_tools(ctx: Context) -> str:
    """Tell every listener that the tool list changed."""
    await ctx.notify_tools_changed()
    return "notified"


if __name__ == "__main__":
    import sys

    # `--http PORT`: Streamable HTTP on 127.0.0.1:PORT/mcp (the modern era checks
    # the Mcp-Method / Mcp-Name / MCP-Protocol-Version headers there).
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")

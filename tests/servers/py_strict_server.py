"""A strict MCP server on the official Python SDK (mcp 2.x, MCPServer) for mcpscope's form tests.

Its tools have the schema shapes that real servers use and that a generated form can
get wrong: a pydantic discriminated union whose tag is an optional `const`, a hand-written
`oneOf` of open objects (Notion's `parent`), a `["boolean", "string"]` type array where
only the boolean is meant, and strings with `examples`, `format: json` and start/end pairs.

Unlike the SDK's default (a validation failure becomes a tool result with `isError:
true`), this server refuses bad arguments before the tool runs, with a JSON-RPC error
-32602 (invalid params) whose `data` lists every problem:

1. against the advertised `inputSchema` (JSON Schema 2020-12 by the `jsonschema`
   package: a `oneOf` value that matches two variants is refused), then
2. by the tool's pydantic arguments model (a discriminated union needs its tag:
   "Unable to extract tag using discriminator").

The tools themselves refuse (again with -32602) what only they know: a boolean sent as
a string, an end before its start, a JSON filter that does not parse.

Run (after scripts/setup-test-peers):
    tests/peers/.venv/bin/python tests/servers/py_strict_server.py
"""

import inspect
import json
from datetime import datetime
from typing import Annotated, Any, Literal

import jsonschema
from mcp_types import INVALID_PARAMS
from pydantic import BaseModel, Field, ValidationError, WithJsonSchema, create_model

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError


def invalid(message: str, problems: list[str] | None = None) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=message, data=problems or [message])


# --- batch_write: a discriminated union whose tag is optional (const + default) -------------


class GetItem(BaseModel):
    """Read one item by key."""

    operation: Literal["GetItem"] = "GetItem"
    key: str = Field(description="Primary key of the item")


class DeleteItem(BaseModel):
    """Delete one item by key (same fields as GetItem: only the tag tells them apart)."""

    operation: Literal["DeleteItem"] = "DeleteItem"
    key: str = Field(description="Primary key of the item")


class PutItem(BaseModel):
    """Write a whole item."""

    operation: Literal["PutItem"] = "PutItem"
    item: dict[str, str] = Field(min_length=1, description="Attribute name -> value")
    condition: str | None = Field(default=None, description="Only write when this holds")


class UpdateItem(BaseModel):
    """Set some attributes of an item."""

    operation: Literal["UpdateItem"] = "UpdateItem"
    key: str
    set: dict[str, str] = Field(min_length=1)


Operation = Annotated[GetItem | DeleteItem | PutItem | UpdateItem, Field(discriminator="operation")]


# --- create_page: a oneOf of open objects, told apart by which key they have ---------------

PARENT_SCHEMA = {
    "description": "Where the page goes: a page, a database, or the workspace",
    "oneOf": [
        {
            "type": "object",
            "properties": {"page_id": {"type": "string", "description": "ID of the parent page"}},
            "required": ["page_id"],
            "additionalProperties": True,
        },
        {
            "type": "object",
            "properties": {"database_id": {"type": "string", "description": "ID of the parent database"}},
            "required": ["database_id"],
            "additionalProperties": True,
        },
        {
            "type": "object",
            "properties": {"type": {"const": "workspace"}, "workspace": {"const": True}},
            "required": ["type", "workspace"],
        },
    ],
}

# --- think: a type array where the server only takes the first type ------------------------

NEXT_THOUGHT_SCHEMA = {"type": ["boolean", "string"], "description": "Whether another thought step is needed"}

# --- find_events: examples, format json, paired names --------------------------------------

FILTER_SCHEMA = {"type": "string", "format": "json", "description": "Extra filters as a JSON object"}


server = MCPServer(
    name="mcpscope-py-strict-server",
    version="0.1.0",
    instructions="Strict test server for mcpscope: bad arguments get -32602 before a tool runs.",
)


@server.tool()
def batch_write(table: str, operations: Annotated[list[Operation], Field(min_length=1)]) -> str:
    """Run several item operations on a table (a discriminated union per operation)."""
    done = []
    for op in operations:
        if isinstance(op, PutItem):
            done.append(f"PutItem({', '.join(sorted(op.item))})")
        elif isinstance(op, UpdateItem):
            done.append(f"UpdateItem({op.key}: {', '.join(sorted(op.set))})")
        else:
            done.append(f"{op.operation}({op.key})")
    return f"{table}: " + "; ".join(done)


@server.tool()
def create_page(parent: Annotated[dict[str, Any], WithJsonSchema(PARENT_SCHEMA)], title: str) -> str:
    """Create a page under a page, a database or the workspace (Notion's parent shape)."""
    kind = "page" if "page_id" in parent else "database" if "database_id" in parent else "workspace"
    return f"created {title!r} under the {kind}"


@server.tool()
def think(
    thought: str,
    next_thought_needed: Annotated[bool | str, WithJsonSchema(NEXT_THOUGHT_SCHEMA)],
    thought_number: Annotated[int, Field(ge=1)],
) -> str:
    """One step of sequential thinking (the flag must be a real boolean)."""
    if not isinstance(next_thought_needed, bool):
        raise invalid(f"next_thought_needed must be a boolean, not {next_thought_needed!r}")
    return f"thought {thought_number}: {'more to come' if next_thought_needed else 'done'}"


@server.tool()
def find_events(
    start: datetime,
    end: datetime,
    zip_code: Annotated[str, Field(pattern=r"^[0-9]{5}$", examples=["10001"], description="US ZIP code")],
    filter: Annotated[str, WithJsonSchema(FILTER_SCHEMA)],
    min_guests: Annotated[int, Field(ge=1)],
    max_guests: Annotated[int, Field(ge=1)],
) -> str:
    """Find events between two instants (end after start, max_guests >= min_guests)."""
    problems = []
    if end <= start:
        problems.append(f"end ({end.isoformat()}) must be after start ({start.isoformat()})")
    if max_guests < min_guests:
        problems.append(f"max_guests ({max_guests}) is below min_guests ({min_guests})")
    try:
        if not isinstance(json.loads(filter), dict):
            problems.append("filter must be a JSON object")
    except json.JSONDecodeError as e:
        problems.append(f"filter is not JSON: {e}")
    if problems:
        raise invalid("; ".join(problems), problems)
    return f"events in {zip_code} from {start.isoformat()} to {end.isoformat()}"


def arguments_model(fn) -> type[BaseModel]:
    """The pydantic model of a tool function's parameters (what the SDK validates too)."""
    fields: dict[str, Any] = {}
    for p in inspect.signature(fn).parameters.values():
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (p.annotation, default)
    return create_model(f"{fn.__name__}_arguments", **fields)


MODELS = {fn.__name__: arguments_model(fn) for fn in (batch_write, create_page, think, find_events)}


class StrictArguments:
    """Middleware: `tools/call` arguments are checked before the tool runs."""

    async def __call__(self, ctx, call_next):
        if ctx.method == "tools/call" and ctx.params:
            name = ctx.params.get("name")
            arguments = ctx.params.get("arguments") or {}
            tool = next((t for t in await server.list_tools() if t.name == name), None)
            if tool is not None:
                validator = jsonschema.Draft202012Validator(tool.input_schema)
                problems = [
                    f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
                    for e in validator.iter_errors(arguments)
                ]
                if problems:
                    raise invalid(f"arguments do not match the inputSchema of {name}", problems)
                try:
                    MODELS[name].model_validate(arguments)
                except ValidationError as e:
                    raise invalid(
                        f"arguments rejected by the pydantic model of {name}",
                        [f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors()],
                    ) from e
        return await call_next(ctx)


server.middleware.append(StrictArguments())


if __name__ == "__main__":
    server.run("stdio")

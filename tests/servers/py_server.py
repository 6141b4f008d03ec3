"""A small, real MCP server built on the official Python SDK (mcp 2.x, MCPServer).

Used by mcpscope's tests as a well-behaved Python peer.

Run (after scripts/setup-test-peers):
    tests/peers/.venv/bin/python tests/servers/py_server.py

Speaks MCP over stdio: newline-delimited JSON-RPC on stdin/stdout, logs on stderr.
"""

from pydantic import BaseModel, Field

from mcp.server.mcpserver import MCPServer

server = MCPServer(
    name="mcpscope-py-server",
    version="0.1.0",
    instructions="Test server for mcpscope: add, echo, describe_person, fail.",
)


class Address(BaseModel):
    """A postal address (nested model -> $defs/$ref in the input schema)."""

    street: str
    city: str
    zip_code: str | None = None


class Person(BaseModel):
    """A person; `nickname` is optional (anyOf [string, null])."""

    name: str = Field(description="Full name")
    age: int = Field(ge=0, description="Age in years")
    nickname: str | None = Field(default=None, description="Optional nickname")
    address: Address | None = None
    tags: list[str] = Field(default_factory=list)


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(message: str) -> str:
    """Echo the message back."""
    return message


@server.tool()
def describe_person(person: Person, shout: bool = False) -> str:
    """Describe a person (pydantic model argument with optional fields)."""
    text = f"{person.name} is {person.age}"
    if person.nickname:
        text += f" (aka {person.nickname})"
    if person.address:
        text += f", lives in {person.address.city}"
    if person.tags:
        text += f", tags: {', '.join(person.tags)}"
    return text.upper() if shout else text


@server.tool()
def fail(reason: str = "deliberate failure") -> str:
    """Always raises; the SDK turns this into a result with isError: true."""
    raise RuntimeError(f"fail tool raised: {reason}")


@server.resource("test://greeting", name="greeting", mime_type="text/plain")
def greeting() -> str:
    """A static text resource."""
    return "Hello from mcpscope-py-server"


@server.prompt()
def review_code(code: str, language: str = "python") -> str:
    """Ask for a code review."""
    return f"Please review this {language} code:\n\n{code}"


if __name__ == "__main__":
    server.run("stdio")

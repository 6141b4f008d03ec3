"""A small, real MCP server built on the official Python SDK (mcp 2.x, MCPServer).

Used by mcpscope's tests as a well-behaved Python peer.

Run (after scripts/setup-test-peers):
    tests/peers/.venv/bin/python tests/servers/py_server.py

Speaks MCP over stdio: newline-delimited JSON-RPC on stdin/stdout, logs on stderr.

With MCPSCOPE_TEST_DRIFT=1 its surface drifts the way a careless release does (for
`mcpscope verify`): echo's description is reworded, describe_person's `shout` becomes
required, the `fail` tool is gone, and `add` is off by one.
"""

import os

from enum import Enum
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from mcp.server.mcpserver import MCPServer

DRIFT = os.environ.get("MCPSCOPE_TEST_DRIFT") == "1"

server = MCPServer(
    name="mcpscope-py-server",
    version="0.1.0",
    instructions="Test server for mcpscope: add, echo, describe_person, plan_trip, fail.",
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
    return a + b + (1 if DRIFT else 0)


@server.tool(description="Echo the message back, unchanged." if DRIFT else None)
def echo(message: str) -> str:
    """Echo the message back."""
    return message


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


def describe_person_drifted(person: Person, shout: bool) -> str:
    """Describe a person (pydantic model argument with optional fields)."""
    return describe_person(person, shout)


describe_person_drifted.__name__ = "describe_person"
server.tool()(describe_person_drifted if DRIFT else describe_person)


class Transport(str, Enum):
    """How to get to a stop (an enum -> $defs entry referenced by $ref)."""

    TRAIN = "train"
    PLANE = "plane"
    CAR = "car"


class Stop(BaseModel):
    city: str
    nights: int = Field(ge=1, le=30, description="Nights at this stop")
    transport: Transport = Transport.TRAIN


class Card(BaseModel):
    method: Literal["card"]
    last4: str = Field(pattern=r"^[0-9]{4}$")


class Cash(BaseModel):
    method: Literal["cash"]
    currency: str = Field(default="EUR", min_length=3, max_length=3)


class Trip(BaseModel):
    """A trip: list of models, enum via $ref, Optional, dict, Literal, discriminated union."""

    traveller: Person
    stops: list[Stop] = Field(min_length=1)
    budget: float | None = Field(default=None, gt=0)
    notes: dict[str, str] = Field(default_factory=dict)
    mode: Literal["solo", "group"] = "solo"
    payment: Annotated[Card | Cash, Field(discriminator="method")]


@server.tool()
def plan_trip(trip: Trip, preferred: Transport | None = None) -> str:
    """Plan a trip (pydantic models: nested, list of models, enum, Optional, union)."""
    route = " -> ".join(f"{s.city} ({s.nights}n, {s.transport.value})" for s in trip.stops)
    pay = trip.payment.method
    return f"{trip.traveller.name}: {route}; pays by {pay}; preferred {preferred.value if preferred else '-'}"


def fail(reason: str = "deliberate failure") -> str:
    """Always raises; the SDK turns this into a result with isError: true."""
    raise RuntimeError(f"fail tool raised: {reason}")


if not DRIFT:
    server.tool()(fail)


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

"""What the MCP edge is built from, and who is calling."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mcp import types
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import ServerRequestContext

from godot_mcp.errors import NotFound, Unavailable
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import Caller, Limits

Transport = Literal["stdio", "http"]


@dataclass
class ServerDeps:
    """Everything the tools and resources need; built once per server process."""

    store: ArtifactStore
    project: Path
    transport: Transport
    launch_id: str | None
    limits: Limits
    services: dict[str, Any] = field(default_factory=dict)

    @property
    def http(self) -> bool:
        return self.transport == "http"

    def service(self, name: str) -> Any:
        """A running service (``games``, ``exports``), or Unavailable."""
        found = self.services.get(name)
        if found is None:
            raise Unavailable(f"{name} are not available in this server")
        return found


@dataclass(frozen=True)
class Who:
    """The binding of a request: principal, MCP session, server launch."""

    principal: str
    session_id: str | None
    launch_id: str | None


def identify(ctx: ServerRequestContext[Any, Any], deps: ServerDeps) -> Who:
    """Who is asking, in the transport's binding mode."""
    if not deps.http:
        return Who("local", None, None)
    token = get_access_token()
    request = ctx.request
    session = request.headers.get("mcp-session-id") if request is not None else None
    if token is None or not session:
        raise NotFound("no MCP session to bind to")
    return Who(token.client_id, session, deps.launch_id)


@dataclass
class ToolCall:
    """One tool invocation, resolved: caller, current generation, arguments."""

    ctx: ServerRequestContext[Any, Any]
    deps: ServerDeps
    who: Who
    caller: Caller
    generation: int
    arguments: dict[str, Any]

    async def progress(self, done: float, total: float | None, message: str | None) -> None:
        """Send a progress notification if the call carried a progress token."""
        await self.ctx.session.report_progress(done, total, message)


ToolHandler = Callable[[ToolCall], Awaitable[types.CallToolResult]]


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its declaration, its handler and what makes it available."""

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: ToolHandler
    availability: Callable[[ServerDeps], str] = lambda _deps: "available"

    def declaration(self) -> types.Tool:
        """The MCP declaration of this tool."""
        return types.Tool(
            name=self.name, description=self.description, input_schema=self.input_schema
        )


def schema(properties: dict[str, Any] | None = None, required: list[str] | None = None) -> dict:
    """A closed JSON object schema."""
    out: dict[str, Any] = {
        "type": "object",
        "properties": properties or {},
        "additionalProperties": False,
    }
    if required:
        out["required"] = required
    return out

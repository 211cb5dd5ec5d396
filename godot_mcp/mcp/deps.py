"""What the MCP framework is built from, and who is calling."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import ServerRequestContext

from godot_mcp.errors import NotFound
from godot_mcp.mcp.disclosure import Disclosure
from godot_mcp.mcp.spec import TOOLSETS, Toolset
from godot_mcp.runtime.context import Runtime
from godot_mcp.runtime.releases import Releases
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import Caller, Limits

if TYPE_CHECKING:
    from godot_mcp.mcp.budget import Budget
    from godot_mcp.mcp.spec import NameStyle, Tools

Transport = Literal["stdio", "http"]


@dataclass(kw_only=True)
class Core:
    """What the MCP framework needs of a server process; the features' services are added
    to it where the features are assembled (``godot_mcp/features/services.py``)."""

    runtime: Runtime
    transport: Transport
    launch_id: str | None
    limits: Limits
    disclosure: Disclosure
    names: NameStyle = "underscore"
    toolsets: frozenset[Toolset] = frozenset(TOOLSETS)  # the features whose tools are on
    releases: Releases | None = None  # HTTP only: ended sessions' artifacts

    @property
    def http(self) -> bool:
        return self.transport == "http"

    @property
    def store(self) -> ArtifactStore:
        return self.runtime.store

    @property
    def project(self) -> Path:
        return self.runtime.project


@dataclass(frozen=True)
class Who:
    """The binding of a request: principal, MCP session, server launch."""

    principal: str
    session_id: str | None
    launch_id: str | None


def identify(ctx: ServerRequestContext[Any, Any], deps: Core) -> Who:
    """Who is asking, in the transport's binding mode."""
    if not deps.http:
        return Who("local", None, None)
    token = get_access_token()
    request = ctx.request
    session = request.headers.get("mcp-session-id") if request is not None else None
    if token is None or not session:
        raise NotFound("no MCP session to bind to")
    return Who(token.client_id, session, deps.launch_id)


Deps = TypeVar("Deps", bound=Core)


@dataclass
class ToolCall(Generic[Deps]):
    """One tool invocation, resolved: caller, current generation, checked arguments."""

    ctx: ServerRequestContext[Any, Any]
    deps: Deps
    who: Who
    caller: Caller
    generation: int
    args: dict[str, Any]
    tools: Tools  # the server's tools (server.profile says each one's availability)
    budget: Budget  # what its answer may take as sent

    async def progress(self, done: float, total: float | None, message: str | None) -> None:
        """Send a progress notification if the call carried a progress token."""
        await self.ctx.session.report_progress(done, total, message)

"""What the MCP edge is built from, and who is calling."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import ServerRequestContext

from godot_mcp.edge.disclosure import Disclosure
from godot_mcp.edge.spec import TOOLSETS, Toolset
from godot_mcp.errors import NotFound
from godot_mcp.runtime.context import Runtime
from godot_mcp.runtime.releases import Releases
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import Caller, Limits

if TYPE_CHECKING:
    from godot_mcp.edge.budget import Budget
    from godot_mcp.edge.spec import NameStyle, Tools
    from godot_mcp.runtime.api import ApiService
    from godot_mcp.runtime.checks import CheckService
    from godot_mcp.runtime.exports import ExportService
    from godot_mcp.runtime.games import GameService
    from godot_mcp.runtime.testing import TestService

Transport = Literal["stdio", "http"]


@dataclass
class ServerDeps:
    """Everything the tools and resources need; built once per server process."""

    runtime: Runtime
    transport: Transport
    launch_id: str | None
    limits: Limits
    disclosure: Disclosure
    games: GameService
    exports: ExportService
    checks: CheckService
    tests: TestService
    api: ApiService
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
    """One tool invocation, resolved: caller, current generation, checked arguments."""

    ctx: ServerRequestContext[Any, Any]
    deps: ServerDeps
    who: Who
    caller: Caller
    generation: int
    args: dict[str, Any]
    tools: Tools  # the server's tools (server.profile says each one's availability)
    budget: Budget  # what its answer may take as sent

    async def progress(self, done: float, total: float | None, message: str | None) -> None:
        """Send a progress notification if the call carried a progress token."""
        await self.ctx.session.report_progress(done, total, message)

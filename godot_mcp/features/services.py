"""The features' services of a server process (games, exports, checks, imports, test runs,
the API reference), the typed object every tool is handed, and their lifecycle."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from godot_mcp.features.api.service import ApiService
from godot_mcp.features.check.service import CheckService
from godot_mcp.features.core.service import CoreService
from godot_mcp.features.debug.service import DebugService
from godot_mcp.features.export.service import ExportService
from godot_mcp.features.game.service import GameService
from godot_mcp.features.testrun.service import TestService
from godot_mcp.mcp.deps import Core, ToolCall

log = logging.getLogger(__name__)


@dataclass(kw_only=True)
class ServerDeps(Core):
    """Everything the tools need: the framework's part and each feature's service."""

    core: CoreService
    games: GameService
    debug: DebugService
    exports: ExportService
    checks: CheckService
    tests: TestService
    api: ApiService


Call = ToolCall[ServerDeps]  # what a tool handler is handed


class Service(Protocol):
    """A service the server owns: told when an MCP session ends, closed at shutdown."""

    async def session_ended(self, session_id: str) -> None: ...
    async def aclose(self) -> None: ...


def _services(deps: ServerDeps) -> list[Service]:
    return [deps.games, deps.checks, deps.checks.imports, deps.tests, deps.exports]


async def close_services(deps: ServerDeps) -> None:
    """Stop every game, check, import, test run and export of this process (bounded)."""
    for service in _services(deps):
        try:
            await service.aclose()
        except Exception:
            log.exception("closing a service failed")


async def session_ended(deps: ServerDeps, session_id: str) -> None:
    """Release what an ended HTTP session owned: its artifacts, games and exports."""
    if deps.releases is not None:
        await deps.releases.ended(session_id)
    for service in _services(deps):
        try:
            await service.session_ended(session_id)
        except Exception:
            log.exception("ending a session's services failed")

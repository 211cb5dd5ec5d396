"""Long-lived services of a server process (game sessions, exports) and their lifecycle."""

from __future__ import annotations

import logging
from typing import Protocol

from godot_mcp.edge.deps import ServerDeps
from godot_mcp.store.store import release_session_id

log = logging.getLogger(__name__)


class Service(Protocol):
    """A service the server owns: told when an MCP session ends, closed at shutdown."""

    async def session_ended(self, session_id: str) -> None: ...
    async def aclose(self) -> None: ...


def _services(deps: ServerDeps) -> list[Service]:
    return [deps.games, deps.exports]


async def close_services(deps: ServerDeps) -> None:
    """Stop every game and export of this process (bounded)."""
    for service in _services(deps):
        try:
            await service.aclose()
        except Exception:
            log.exception("closing a service failed")


async def session_ended(deps: ServerDeps, session_id: str) -> None:
    """Release what an ended HTTP session owned: its artifacts, games and exports."""
    if deps.launch_id is not None:
        try:
            release_session_id(deps.store, deps.launch_id, session_id)
        except Exception:
            log.exception("releasing an ended session's artifacts failed")
    for service in _services(deps):
        try:
            await service.session_ended(session_id)
        except Exception:
            log.exception("ending a session's services failed")

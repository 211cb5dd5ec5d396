"""The one rule for a thing bound to another caller (artifacts, game sessions, exports).

Every layer raises the precise refusal, ``NotYours``; what a caller hears of it (over HTTP,
exactly the unknown id's answer, so a refusal never reveals that an id exists) is the edge's
disclosure policy (``godot_mcp.edge.disclosure``), applied in one place.
"""

from __future__ import annotations

from godot_mcp.errors import NotFound, NotYours
from godot_mcp.store.values import Caller


def check_owner(
    caller: Caller,
    principal: str,
    session_id: str | None,
    launch_id: str | None,
    project_id: int,
    what: str,
) -> None:
    """Refuse a thing bound to another caller with ``NotYours``."""
    if (principal, session_id, launch_id, project_id) != (
        caller.principal,
        caller.session_id,
        caller.launch_id,
        caller.project_id,
    ):
        raise NotYours(what)


def unknown(what: str) -> NotFound:
    """The refusal for an id that names nothing."""
    return NotFound(f"{what} not found" if what == "artifact" else f"no such {what}")

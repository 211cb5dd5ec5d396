"""The one rule for a thing bound to another caller (artifacts, game sessions, exports).

Every layer raises the precise refusal, ``NotYours``; what a caller hears of it (over HTTP,
exactly the unknown id's answer, so a refusal never reveals that an id exists) is the edge's
disclosure policy (``godot_mcp.mcp.disclosure``), applied in one place.
"""

from __future__ import annotations

from typing import Any

from godot_mcp.errors import NotFound, NotYours
from godot_mcp.store.values import Caller


def check_owner(caller: Caller, owner: Caller, what: str) -> None:
    """Refuse a thing bound to ``owner`` when another caller asks for it (``NotYours``)."""
    if owner != caller:
        raise NotYours(what)


def bound_to(row: Any) -> Caller:
    """Whom a stored thing (an artifact's or an export's row) is bound to."""
    return Caller(row.principal, row.session_id, row.launch_id, row.project_id)


def unknown(what: str) -> NotFound:
    """The refusal for an id that names nothing."""
    return NotFound(f"{what} not found" if what == "artifact" else f"no such {what}")

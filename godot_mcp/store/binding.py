"""The one rule for a thing bound to another caller (artifacts, game sessions, exports).

Over HTTP (``uniform``) another caller's thing answers exactly like an unknown one, so a
refusal never reveals that an id exists; over stdio PermissionDenied says why.
"""

from __future__ import annotations

from godot_mcp.errors import NotFound, PermissionDenied
from godot_mcp.store.values import Caller


def check_owner(
    caller: Caller,
    principal: str,
    session_id: str | None,
    launch_id: str | None,
    project_id: int,
    what: str,
    *,
    uniform: bool,
) -> None:
    """Refuse a thing bound to another caller.

    ``uniform`` (HTTP): the refusal is the very one an unknown id gets, so it
    does not reveal that the id exists. Otherwise PermissionDenied says why.
    """
    if (principal, session_id, launch_id, project_id) != (
        caller.principal,
        caller.session_id,
        caller.launch_id,
        caller.project_id,
    ):
        if uniform:
            raise unknown(what)
        raise PermissionDenied(f"this {what} belongs to another caller")


def unknown(what: str) -> NotFound:
    """The refusal for an id that names nothing."""
    return NotFound(f"{what} not found" if what == "artifact" else f"no such {what}")

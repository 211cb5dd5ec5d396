"""The MCP sessions that ended, as a start in flight asks about them: bounded.

A game start or an export copy can take seconds; if the caller's HTTP session ends meanwhile,
what it started must be stopped at once, since nobody can reach it any more. Only starts in
flight ask, so only recent ends matter: the set keeps the last ``LIMIT`` ids, not every id
the server ever saw.
"""

from __future__ import annotations

from collections import OrderedDict

LIMIT = 4096


class EndedSessions:
    """A bounded set of ended MCP session ids, oldest forgotten first."""

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self._ids: OrderedDict[str, None] = OrderedDict()

    def add(self, session_id: str) -> None:
        self._ids[session_id] = None
        self._ids.move_to_end(session_id)
        while len(self._ids) > self.limit:
            self._ids.popitem(last=False)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._ids

    def __len__(self) -> int:
        return len(self._ids)

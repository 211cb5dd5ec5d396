"""Releasing what ended HTTP sessions could read, also across a database outage."""

from __future__ import annotations

import logging

import anyio

from godot_mcp.runtime.context import Runtime
from godot_mcp.store.store import release_session_id

log = logging.getLogger(__name__)

RETRY_SECONDS = 5.0
MAX_PENDING = 100_000


class Releases:
    """Releasing the artifacts of ended HTTP sessions of one launch.

    A session that ends while the database is unreachable keeps its id here and is released
    when the database answers again (tried every ``RETRY_SECONDS``); until then its artifacts
    only hold budget, since nobody can read them. Shutdown releases the whole launch anyway.
    """

    def __init__(self, rt: Runtime, launch_id: str) -> None:
        self.rt = rt
        self.launch_id = launch_id
        self.pending: set[str] = set()
        self._waiting = False

    async def ended(self, session_id: str) -> None:
        """A session ended: release its artifacts now, or as soon as the store answers."""
        if len(self.pending) < MAX_PENDING:
            self.pending.add(session_id)
        await self.retry()

    async def retry(self) -> None:
        for session_id in sorted(self.pending):
            try:
                await self.rt.blocking(
                    release_session_id, self.rt.store, self.launch_id, session_id
                )
            except Exception as e:  # unreachable, a full pool, a refusal: all wait and retry
                if not self._waiting:
                    log.warning("releasing ended sessions' artifacts waits for the store: %s", e)
                self._waiting = True
                return
            self.pending.discard(session_id)
        if self._waiting:
            log.warning("ended sessions' artifacts released: the store answers again")
        self._waiting = False

    async def run(self) -> None:
        """Retry what waits, until cancelled; never raises."""
        while True:
            await anyio.sleep(RETRY_SECONDS)
            if self.pending:
                try:
                    await self.retry()
                except Exception:
                    log.exception("retrying session releases failed")

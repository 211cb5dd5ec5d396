"""HTTP sessions the operator bounds: per-principal limit and idle expiry by POSTs.

The SDK's own idle timeout counts an open GET stream as activity, and SDK clients reopen that
stream by themselves: a client that went away without DELETE (the TypeScript SDK's
``close()``, the Inspector CLI) would keep its games running. Here a session is idle when no
POST reached it for ``idle_seconds`` (and none is in flight); :func:`expire_idle` then ends it
through the SDK's session manager, exactly as a DELETE does, so its games, exports and
artifacts are released by the same session-end hook.

:class:`SessionGate` (ASGI, behind authentication) refuses a new session past
``max_per_principal`` live ones of its principal with HTTP 429 and a one-line reason, and
records each session's POSTs for the idle clock.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser

from godot_mcp.transports.sessionless import send_json

log = logging.getLogger(__name__)
_SESSION_HEADER = b"mcp-session-id"


@dataclass
class _Session:
    principal: str
    last_post: float
    in_flight: int = 0


class SessionRegistry:
    """Live HTTP sessions by principal, with the time of their last POST."""

    def __init__(
        self,
        max_per_principal: int,
        idle_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_per_principal = max_per_principal
        self.idle_seconds = idle_seconds
        self.clock = clock
        self.sessions: dict[str, _Session] = {}
        self._opening: dict[str, int] = {}
        self._gone: set[str] = set()  # ended, maybe before their opening request settled

    def count(self, principal: str) -> int:
        """Sessions of ``principal`` that are open or being opened."""
        live = sum(1 for s in self.sessions.values() if s.principal == principal)
        return live + self._opening.get(principal, 0)

    def reserve(self, principal: str) -> bool:
        """Hold a slot for a session being opened; False past the limit."""
        if self.count(principal) >= self.max_per_principal:
            return False
        self._opening[principal] = self._opening.get(principal, 0) + 1
        return True

    def settle(self, principal: str, session_id: str | None) -> None:
        """The opening request ended: the slot becomes that session, or is freed."""
        left = self._opening.get(principal, 1) - 1
        if left > 0:
            self._opening[principal] = left
        else:
            self._opening.pop(principal, None)
        if session_id and session_id not in self._gone:
            self.sessions[session_id] = _Session(principal, self.clock())

    def begin(self, session_id: str) -> None:
        """A POST to ``session_id`` started."""
        session = self.sessions.get(session_id)
        if session is not None:
            session.in_flight += 1
            session.last_post = self.clock()

    def end(self, session_id: str) -> None:
        """A POST to ``session_id`` ended (its reply sent)."""
        session = self.sessions.get(session_id)
        if session is not None:
            session.in_flight = max(0, session.in_flight - 1)
            session.last_post = self.clock()

    def ended(self, session_id: str) -> None:
        """The session ended (DELETE, idle, shutdown): forget it."""
        self.sessions.pop(session_id, None)
        if len(self._gone) >= 10_000:
            self._gone.clear()
        self._gone.add(session_id)

    def idle(self) -> list[str]:
        """Sessions with no POST in flight and none for ``idle_seconds``."""
        now = self.clock()
        return [
            sid
            for sid, s in self.sessions.items()
            if s.in_flight == 0 and now - s.last_post >= self.idle_seconds
        ]


class SessionGate:
    """ASGI middleware: the per-principal session limit and the POSTs idle expiry counts."""

    def __init__(self, app: Any, registry: SessionRegistry) -> None:
        self.app = app
        self.registry = registry

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        user = scope.get("user") if scope["type"] == "http" else None
        if (
            scope["type"] != "http"
            or scope.get("method") != "POST"
            or not isinstance(user, AuthenticatedUser)
        ):
            return await self.app(scope, receive, send)
        session_id = next(
            (v.decode("latin-1") for k, v in scope["headers"] if k == _SESSION_HEADER), None
        )
        if session_id is not None:
            began = False

            async def counted() -> Any:
                # In flight from when its body is whole: a body that never ends is no activity.
                nonlocal began
                message = await receive()
                if (
                    not began
                    and message.get("type") == "http.request"
                    and not message.get("more_body")
                ):
                    began = True
                    self.registry.begin(session_id)
                return message

            try:
                return await self.app(scope, counted, send)
            finally:
                if began:
                    self.registry.end(session_id)
        principal = user.access_token.client_id
        if not self.registry.reserve(principal):
            return await _too_many(send, self.registry.max_per_principal)
        opened: list[str] = []

        async def watch(message: Any) -> None:
            if message["type"] == "http.response.start" and message.get("status", 500) < 400:
                for key, value in message.get("headers", []):
                    if key.lower() == _SESSION_HEADER:
                        opened.append(value.decode("latin-1"))
            await send(message)

        try:
            return await self.app(scope, receive, watch)
        finally:
            self.registry.settle(principal, opened[0] if opened else None)


async def _too_many(send: Any, limit: int) -> None:
    reason = (
        f"too many open sessions for this principal ({limit}, the server's "
        "--max-http-sessions-per-principal): end one with DELETE or let it expire"
    )
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": reason}}
    await send_json(send, 429, error)


async def expire_idle(manager: Any, registry: SessionRegistry) -> None:
    """End idle sessions through the SDK's session manager, as a DELETE would; runs forever."""
    every = max(0.1, min(registry.idle_seconds / 10, 5.0))
    while True:
        await anyio.sleep(every)
        for session_id in registry.idle():
            registry.ended(session_id)
            transport = manager._server_instances.get(session_id)
            if transport is None:
                continue
            log.info(
                "HTTP session %s idle for %gs: ending it", session_id[:8], registry.idle_seconds
            )
            try:
                with anyio.CancelScope(shield=True):
                    await manager._discard_session(session_id, transport)
            except Exception:
                log.exception("ending an idle session failed")

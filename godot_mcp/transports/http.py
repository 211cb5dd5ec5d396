"""MCP over Streamable HTTP at ``/mcp``, bearer-token authenticated, served by uvicorn.

The principal is the token's; the session is the MCP session id. When a
session ends (DELETE, idle expiry, shutdown) its games, exports and artifacts
are released at once. The session-end signal comes from the SDK session
manager's private ``_discard_session`` (mcp 2.3 has no public hook; pinned, and
covered by the DELETE and idle-expiry tests). Idle expiry and the per-principal
session limit are ``transports.sessions``.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import uvicorn
from mcp.server import Server
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import AnyHttpUrl
from starlette.middleware import Middleware

from godot_mcp.errors import DatabaseUnavailable
from godot_mcp.runtime.context import Runtime
from godot_mcp.store.tokens import verify_token
from godot_mcp.transports.sessionless import RefuseSessionless
from godot_mcp.transports.sessions import SessionGate, SessionRegistry, expire_idle

log = logging.getLogger(__name__)
SESSION_IDLE_TIMEOUT_S = 1800.0
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _url_host(host: str) -> str:
    """A host as it goes in a URL (IPv6 literals in brackets)."""
    return f"[{host}]" if ":" in host else host


class StoreTokenVerifier:
    """Checks bearer tokens against the store on every request."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def verify_token(self, token: str) -> AccessToken | None:
        # Through the store's limiter: a slow or stuck database holds neither the event loop
        # nor more threads than it has connections.
        store = self.runtime.store
        verified = await self.runtime.blocking(verify_token, store.engine, token)
        if verified is None:
            return None
        # subject = the token's id: a session opened with one token is refused with another.
        return AccessToken(
            token=token, client_id=verified.principal, scopes=[], subject=verified.token_id
        )


class AnswerUnavailable:
    """ASGI middleware: a request that finds the store's database unreachable gets 503.

    The token check reads the database before any MCP handler runs; without this an
    outage would answer 500 with a traceback per request.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except DatabaseUnavailable as exc:
            if started:
                raise
            log.warning("HTTP request answered 503: %s", exc)  # the reason, for the operator
            body = json.dumps({"error": "unavailable", "message": exc.message}).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"retry-after", b"5"),
                (b"content-length", str(len(body)).encode()),
            ]
            await send({"type": "http.response.start", "status": 503, "headers": headers})
            await send({"type": "http.response.body", "body": body})


def install_session_end_hook(server: Server, on_end: Callable[[str], Awaitable[None]]) -> None:
    """Call ``on_end(session_id)`` once when an HTTP MCP session ends, however it ends.

    mcp 2.3 has no public hook: its session manager's ``_discard_session`` runs for every end
    (DELETE, its own idle timeout, a crash, shutdown) and ``expire_idle`` calls it too. If an
    SDK upgrade renames either private name, the server refuses to start instead of silently
    leaking games (and the idle-expiry test fails).
    """
    manager = server.session_manager
    if not callable(getattr(manager, "_discard_session", None)) or not isinstance(
        getattr(manager, "_server_instances", None), dict
    ):
        raise RuntimeError("this mcp SDK has no session-end hook; godot-mcp needs mcp 2.3")
    original = manager._discard_session
    seen: set[str] = set()

    async def discard(session_id: Any, transport: Any) -> None:
        try:
            await original(session_id, transport)  # forgotten first: its id answers 404 now
        finally:
            if session_id and session_id not in seen:
                if len(seen) >= 10_000:  # bounded; a repeat end only releases nothing twice
                    seen.clear()
                seen.add(session_id)
                try:
                    with anyio.CancelScope(shield=True):
                        await on_end(str(session_id))
                except Exception:
                    log.exception("releasing an ended session failed")

    manager._discard_session = discard  # type: ignore[method-assign]


@dataclass(frozen=True)
class HttpOptions:
    """What the operator sets for HTTP sessions."""

    idle_seconds: float = SESSION_IDLE_TIMEOUT_S
    max_sessions_per_principal: int = 32


def build_http_app(
    server: Server,
    runtime: Runtime,
    host: str,
    port: int,
    on_session_end: Callable[[str], Awaitable[None]],
    options: HttpOptions = HttpOptions(),
) -> tuple[Any, SessionRegistry]:
    """The Starlette app (auth, DNS-rebinding protection, -32022 refusal, session limits and
    the session-end hook) and the registry that ``expire_idle`` watches."""
    security = None
    if host not in _LOOPBACK or host == "::1":
        shown = _url_host(host)
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[f"{shown}:*"],
            allowed_origins=[f"http://{shown}:*"],
        )
    app = server.streamable_http_app(
        host=host,
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(f"http://{_url_host(host)}:{port or 8765}/"),
            resource_server_url=None,
        ),
        token_verifier=StoreTokenVerifier(runtime),
        session_idle_timeout=options.idle_seconds,
        transport_security=security,
    )
    registry = SessionRegistry(options.max_sessions_per_principal, options.idle_seconds)
    app.user_middleware.insert(0, Middleware(AnswerUnavailable))  # outside the auth layer
    app.user_middleware.append(Middleware(RefuseSessionless))
    app.user_middleware.append(Middleware(SessionGate, registry=registry))

    async def ended(session_id: str) -> None:
        registry.ended(session_id)
        await on_session_end(session_id)

    install_session_end_hook(server, ended)
    return app, registry


async def serve_http(
    server: Server,
    runtime: Runtime,
    host: str,
    port: int,
    on_session_end: Callable[[str], Awaitable[None]],
    options: HttpOptions = HttpOptions(),
) -> None:
    """Serve until SIGINT/SIGTERM; prints the URL (with the real port) on stderr."""
    app, registry = build_http_app(server, runtime, host, port, on_session_end, options)
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", lifespan="on", access_log=False
    )
    userver = uvicorn.Server(config)

    async def announce() -> None:
        with anyio.fail_after(30):
            while not userver.started:
                await anyio.sleep(0.02)
        real = userver.servers[0].sockets[0].getsockname()[1]
        print(
            f"godot-mcp: listening on http://{_url_host(host)}:{real}/mcp",
            file=sys.stderr,
            flush=True,
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce)
        tg.start_soon(expire_idle, server.session_manager, registry)
        await userver.serve()
        tg.cancel_scope.cancel()

"""Refuse sessionless protocol revisions over HTTP, so clients use the handshake.

Artifacts over HTTP are bound to an MCP session. Revisions without sessions
(2026-07-28) are refused with JSON-RPC -32022 listing the handshake revisions;
SDK clients in auto mode then fall back to ``initialize``. Unauthenticated
requests pass through so that the 401 of the auth layer comes first.

A body over the SDK's limit gets the SDK's own 413 whatever revision it names:
the refusal reads the body through the SDK's ``RequestBodyLimitMiddleware``
with the SDK's ``DEFAULT_MAX_REQUEST_BODY_SIZE`` (the limit the session
manager applies, as ``build_http_app`` leaves ``max_request_body_size`` at its
default; pass the same ``max_body_size`` here if that ever changes), so the
status, body and limit are the SDK's and no more than the limit is buffered.
"""

from __future__ import annotations

import json
from typing import Any

from mcp import types
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, RequestBodyLimitMiddleware
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS


def _version(scope: Any) -> str | None:
    return next(
        (v.decode("latin-1") for k, v in scope["headers"] if k == b"mcp-protocol-version"),
        None,
    )


class RefuseSessionless:
    """ASGI middleware answering -32022 to POSTs of a non-handshake revision."""

    def __init__(self, app: Any, max_body_size: int = DEFAULT_MAX_REQUEST_BODY_SIZE) -> None:
        self.app = app
        # Answers 413 (as the SDK does) before _refuse sees a too-large body.
        self._limited = RequestBodyLimitMiddleware(self._refuse, max_body_size)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            return await self.app(scope, receive, send)
        version = _version(scope)
        if version is None or version in HANDSHAKE_PROTOCOL_VERSIONS:
            return await self.app(scope, receive, send)
        if not isinstance(scope.get("user"), AuthenticatedUser):
            return await self.app(scope, receive, send)
        return await self._limited(scope, receive, send)

    async def _refuse(self, scope: Any, receive: Any, send: Any) -> None:
        """Answer -32022 (202 to a notification); the body is already within the limit."""
        version = _version(scope)
        body = b""
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request_id = None
        try:
            parsed = json.loads(body)
            if isinstance(parsed, dict):
                request_id = parsed.get("id")
        except (ValueError, RecursionError):  # RecursionError: deeply nested JSON
            pass
        if request_id is None:
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return None
        error = {
            "jsonrpc": "2.0",
            "id": request_id,
            "error": {
                "code": types.UNSUPPORTED_PROTOCOL_VERSION,
                "message": "Unsupported protocol version",
                "data": {"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": version},
            },
        }
        await send_json(send, 400, error)
        return None


async def send_json(send: Any, status: int, message: dict[str, Any]) -> None:
    """Answer an HTTP request with ``message`` as JSON (a JSON-RPC error, usually)."""
    out = json.dumps(message).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(out)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": out})

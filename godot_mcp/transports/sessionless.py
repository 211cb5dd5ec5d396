"""Refuse sessionless protocol revisions over HTTP, so clients use the handshake.

Artifacts over HTTP are bound to an MCP session. Revisions without sessions
(2026-07-28) are refused with JSON-RPC -32022 listing the handshake revisions;
SDK clients in auto mode then fall back to ``initialize``. Unauthenticated
requests pass through so that the 401 of the auth layer comes first.
"""

from __future__ import annotations

import json
from typing import Any

from mcp import types
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

_MAX_BODY = 1 << 20


class RefuseSessionless:
    """ASGI middleware answering -32022 to POSTs of a non-handshake revision."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            return await self.app(scope, receive, send)
        version = next(
            (v.decode("latin-1") for k, v in scope["headers"] if k == b"mcp-protocol-version"),
            None,
        )
        if version is None or version in HANDSHAKE_PROTOCOL_VERSIONS:
            return await self.app(scope, receive, send)
        if not isinstance(scope.get("user"), AuthenticatedUser):
            return await self.app(scope, receive, send)
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > _MAX_BODY or not message.get("more_body"):
                break
        request_id = None
        try:
            parsed = json.loads(body)
            if isinstance(parsed, dict):
                request_id = parsed.get("id")
        except ValueError:
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
        out = json.dumps(error).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 400,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(out)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": out})
        return None

"""A raw Streamable HTTP MCP session (httpx only), for tests that must control every request."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2

HANDSHAKE = "2025-11-25"


class RawSession:
    """One MCP session over HTTP: POSTs whose SSE or JSON replies are parsed here."""

    def __init__(self, http: httpx2.AsyncClient, url: str, token: str) -> None:
        self.http = http
        self.url = url
        self.headers = {
            "Authorization": f"Bearer {token}",
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
        }
        self.session_id: str | None = None
        self._next = 0

    async def post(self, method: str, params: dict[str, Any] | None = None) -> httpx2.Response:
        """POST one request (or a notification when ``method`` starts with ``notifications/``)."""
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
        if not method.startswith("notifications/"):
            self._next += 1
            body["id"] = self._next
        headers = dict(self.headers)
        if self.session_id:
            headers["mcp-session-id"] = self.session_id
            headers["mcp-protocol-version"] = HANDSHAKE
        return await self.http.post(self.url, content=json.dumps(body), headers=headers)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """A request's JSON-RPC reply (``result`` or ``error``)."""
        response = await self.post(method, params)
        response.raise_for_status()
        return reply_of(response)

    async def initialize(self) -> httpx2.Response:
        """The handshake; keeps the session id the server answers."""
        response = await self.post(
            "initialize",
            {
                "protocolVersion": HANDSHAKE,
                "capabilities": {},
                "clientInfo": {"name": "raw-test", "version": "0"},
            },
        )
        if response.status_code == 200:
            self.session_id = response.headers.get("mcp-session-id")
            await self.post("notifications/initialized")
        return response

    async def call(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """A tool's ``structuredContent``."""
        reply = await self.request("tools/call", {"name": tool, "arguments": arguments or {}})
        return dict(reply["result"]["structuredContent"])


def reply_of(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC message in a JSON or SSE response body."""
    text = response.text
    if response.headers.get("content-type", "").startswith("application/json"):
        return dict(json.loads(text))
    for line in text.splitlines():
        if line.startswith("data:"):
            message = json.loads(line[5:].strip())
            if "id" in message:
                return dict(message)
    raise AssertionError(f"no JSON-RPC reply in {text[:300]!r}")


@asynccontextmanager
async def raw_session(url: str, token: str) -> AsyncIterator[RawSession]:
    """An initialized raw session (not ended on exit: tests decide how it ends)."""
    async with httpx2.AsyncClient(timeout=60) as http:
        session = RawSession(http, url, token)
        response = await session.initialize()
        assert response.status_code == 200, (response.status_code, response.text)
        yield session

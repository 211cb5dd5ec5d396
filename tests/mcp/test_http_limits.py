"""Oversized HTTP bodies get the SDK's 413 whatever protocol revision they name."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import pytest
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE

from godot_mcp.transports.sessionless import RefuseSessionless
from tests.support.servers import http_client

pytestmark = pytest.mark.anyio

BIG = 20 * 1024 * 1024
CHUNK = 64 * 1024


def _headers(token: str, version: str | None) -> dict[str, str]:
    headers = {
        "Authorization": f"Bearer {token}",
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
    }
    if version is not None:
        headers["mcp-protocol-version"] = version
    return headers


def _big_body() -> bytes:
    """A 20 MiB JSON-RPC request (valid JSON, so only its size is wrong)."""
    head = b'{"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {"pad": "'
    tail = b'"}}'
    return head + b"x" * (BIG - len(head) - len(tail)) + tail


async def _chunks(body: bytes) -> AsyncIterator[bytes]:
    for i in range(0, len(body), CHUNK):
        yield body[i : i + CHUNK]


async def _post_big(url: str, token: str, version: str | None, chunked: bool) -> httpx2.Response:
    body = _big_body()
    content: Any = _chunks(body) if chunked else body
    with anyio.fail_after(60):
        async with httpx2.AsyncClient(timeout=60) as raw:
            return await raw.post(url, headers=_headers(token, version), content=content)


def _shape(r: httpx2.Response) -> tuple[int, str, str | None]:
    return r.status_code, r.text, r.headers.get("content-type")


@pytest.mark.parametrize("version", ["2026-07-28", "2099-01-01", "2025-11-25"])
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_a_20_mib_post_gets_the_sdks_413_with_or_without_a_revision(
    mcp_env, version, chunked
):
    url, token = mcp_env.http.url, mcp_env.http.tokens["alice"]
    sdk = await _post_big(url, token, None, chunked)  # the SDK's own refusal
    assert _shape(sdk) == (413, "Request body too large", None)
    assert _shape(await _post_big(url, token, version, chunked)) == _shape(sdk)


async def test_small_sessionless_requests_still_get_32022_and_initialize_works(mcp_env):
    url, token = mcp_env.http.url, mcp_env.http.tokens["alice"]
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(timeout=30) as raw:
            r = await raw.post(
                url,
                headers=_headers(token, "2026-07-28"),
                json={"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": {}},
            )
            assert r.status_code == 400
            err = r.json()["error"]
            assert err["code"] == -32022 and err["data"]["requested"] == "2026-07-28"
            init = await raw.post(
                url,
                headers=_headers(token, "2025-11-25"),
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"},
                    },
                },
            )
            assert init.status_code == 200 and init.headers["mcp-session-id"]
        async with http_client(url, token) as c:
            assert c.protocol_version == "2025-11-25"
            await c.list_tools()


async def test_the_refusal_never_buffers_more_than_the_limit_plus_one_chunk():
    """Fed an endless chunked body, the middleware stops reading just past the limit."""
    pulled = 0

    async def receive() -> dict[str, Any]:
        nonlocal pulled
        pulled += CHUNK
        return {"type": "http.request", "body": b"x" * CHUNK, "more_body": True}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("the wrapped app must not be reached")

    user = AuthenticatedUser(AccessToken(token="t", client_id="alice", scopes=[]))
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(b"mcp-protocol-version", b"2026-07-28")],
        "user": user,
    }
    with anyio.fail_after(10):
        await RefuseSessionless(inner)(scope, receive, send)
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 413
    assert pulled <= DEFAULT_MAX_REQUEST_BODY_SIZE + CHUNK

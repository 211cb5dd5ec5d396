"""HTTP sessions the operator bounds: the per-principal limit answers 429 with a reason."""

from __future__ import annotations

import anyio
import httpx2
import pytest

from tests.support.projects import make_project
from tests.support.rawmcp import RawSession, raw_session
from tests.support.servers import make_tokens, start_http

pytestmark = pytest.mark.anyio


async def test_a_principal_past_its_session_limit_gets_429_with_a_reason(tmp_path) -> None:
    project = make_project(tmp_path / "p")
    state = tmp_path / "s"
    tokens = make_tokens(state, ["alice", "bob"])
    server = start_http(project, state, "--max-http-sessions-per-principal", "2", tokens=tokens)
    try:
        with anyio.fail_after(60):
            async with (
                raw_session(server.url, tokens["alice"]) as first,
                raw_session(server.url, tokens["alice"]),
                httpx2.AsyncClient(timeout=30) as http,
            ):
                third = RawSession(http, server.url, tokens["alice"])
                refused = await third.initialize()
                assert refused.status_code == 429
                message = refused.json()["error"]["message"]
                assert "--max-http-sessions-per-principal" in message and "\n" not in message
                async with raw_session(server.url, tokens["bob"]) as bob:  # others unaffected
                    assert (await bob.call("server_profile"))["outcome"] == "ok"
                # The open sessions still work; one ended with DELETE frees its slot.
                assert (await first.call("server_profile"))["outcome"] == "ok"
                headers = {**first.headers, "mcp-session-id": first.session_id or ""}
                assert (await http.delete(server.url, headers=headers)).status_code == 200
                again = RawSession(http, server.url, tokens["alice"])
                assert (await again.initialize()).status_code == 200
    finally:
        server.stop()

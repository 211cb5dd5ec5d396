"""HTTP sessions the operator bounds: the per-principal limit answers 429 with a reason."""

from __future__ import annotations

import json

import anyio
import httpx2
import pytest

from tests.support.projects import make_project
from tests.support.rawmcp import RawSession, raw_session
from tests.support.servers import make_tokens, start_http

pytestmark = pytest.mark.anyio


@pytest.mark.slow  # starts a server
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


def test_a_session_ended_before_its_opening_request_settled_holds_no_slot() -> None:
    from godot_mcp.transports.sessions import SessionRegistry

    registry = SessionRegistry(max_per_principal=1, idle_seconds=60)
    assert registry.reserve("alice")
    registry.ended("s1")  # DELETE raced the initialize's reply
    registry.settle("alice", "s1")
    assert registry.count("alice") == 0 and registry.reserve("alice")


async def test_a_post_whose_body_never_ends_is_not_activity() -> None:
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    from godot_mcp.transports.sessions import SessionGate, SessionRegistry

    registry = SessionRegistry(max_per_principal=4, idle_seconds=60)
    registry.reserve("alice")
    registry.settle("alice", "s1")
    seen: list[int] = []

    async def app(scope, receive, send) -> None:
        await receive()  # one chunk of a body that never ends
        seen.append(registry.sessions["s1"].in_flight)
        await receive()

    async def receive() -> dict:
        if seen:
            await anyio.sleep(30)
        return {"type": "http.request", "body": b"{", "more_body": True}

    user = AuthenticatedUser(AccessToken(token="t", client_id="alice", scopes=[]))
    scope = {
        "type": "http",
        "method": "POST",
        "user": user,
        "headers": [(b"mcp-session-id", b"s1")],
    }
    with anyio.move_on_after(0.5):
        await SessionGate(app, registry)(scope, receive, None)
    assert seen == [0] and registry.sessions["s1"].in_flight == 0


def _user(principal: str):
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    return AuthenticatedUser(AccessToken(token="t", client_id=principal, scopes=[]))


async def test_the_gate_holds_a_principal_to_its_limit_and_times_sessions_by_their_posts() -> None:
    from godot_mcp.transports.sessions import SessionGate, SessionRegistry

    now = [100.0]
    registry = SessionRegistry(max_per_principal=2, idle_seconds=60, clock=lambda: now[0])
    answers = iter([(200, b"s1"), (400, b"s-refused"), (200, b"s2"), (200, b"never")])

    async def app(scope, receive, send) -> None:  # the SDK's transport: opens a session
        if scope["method"] == "GET" or any(k == b"mcp-session-id" for k, _ in scope["headers"]):
            await receive()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            return
        status, sid = next(answers)
        headers = [(b"Mcp-Session-Id", sid)]
        await send({"type": "http.response.start", "status": status, "headers": headers})

    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    async def receive() -> dict:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    gate = SessionGate(app, registry)

    async def post(principal: str, session: bytes | None = None) -> int:
        sent.clear()
        headers = [(b"mcp-session-id", session)] if session else []
        scope = {"type": "http", "method": "POST", "user": _user(principal), "headers": headers}
        await gate(scope, receive, send)
        return sent[0]["status"]

    assert await post("alice") == 200
    assert await post("alice") == 400  # refused by the SDK: no session, no slot
    assert await post("alice") == 200
    assert sorted(registry.sessions) == ["s1", "s2"] and registry.count("alice") == 2
    assert await post("alice") == 429  # past the limit: the gate answers, the app never runs
    body = json.loads(sent[1]["body"])
    assert body["error"]["message"] == (
        "too many open sessions for this principal (2, the server's "
        "--max-http-sessions-per-principal): end one with DELETE or let it expire"
    )
    assert await post("bob") == 200  # another principal's limit is its own
    assert registry.sessions["never"].principal == "bob"
    sent.clear()
    await gate({"type": "http", "method": "GET", "headers": []}, receive, send)  # passed on
    assert sent == [{"type": "http.response.start", "status": 200, "headers": []}]

    now[0] += 59
    assert await post("alice", b"s1") == 200  # a POST to s1: its idle clock starts again
    now[0] += 1
    assert sorted(registry.idle()) == ["never", "s2"]
    registry.begin("s2")  # a POST in flight is activity however long it takes
    assert sorted(registry.idle()) == ["never"]
    registry.end("s2")
    registry.ended("never")
    now[0] += 60
    assert sorted(registry.idle()) == ["s1", "s2"] and registry.count("bob") == 0

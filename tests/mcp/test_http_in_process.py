"""The HTTP transport served by uvicorn inside the test's own process (on 127.0.0.1): the
same app ``godot-mcp serve --transport http`` runs, reached by the official Python SDK; fast
enough for the fast lane (tests/mcp/test_http_*.py start it as a process)."""

from __future__ import annotations

import contextlib
import io
import re
import socket
from pathlib import Path

import anyio
import httpx2
import pytest

from godot_mcp.cli.serve import _run, build_parser
from godot_mcp.config import resolve
from tests.mcp.conftest import make_project
from tests.support.servers import http_client, make_tokens

pytestmark = pytest.mark.anyio


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_an_http_server_serves_its_token_holders_and_ends_idle_sessions(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path / "p")
    state = tmp_path / "state"
    tokens = make_tokens(state, ["alice"])
    port = _free_port()
    argv = ["--project", str(project), "--state-dir", str(state), "--transport", "http"]
    argv += ["--port", str(port), "--http-session-idle-seconds", "1"]
    args = build_parser().parse_args(["serve", *argv])
    settings = resolve(args, project=project)
    said = io.StringIO()
    url = f"http://127.0.0.1:{port}/mcp"
    with anyio.fail_after(60), contextlib.redirect_stderr(said):
        async with anyio.create_task_group() as tg:
            tg.start_soon(_run, settings, args, project, ())
            while "listening on" not in said.getvalue():
                await anyio.sleep(0.02)
            assert re.search(rf"listening on {re.escape(url)}\b", said.getvalue())
            async with http_client(url, tokens["alice"]) as client:
                names = {t.name for t in (await client.list_tools()).tools}
                assert {"server_profile", "runtime_session_start"} <= names
                profile = await client.call_tool("server_profile", {})
                assert profile.structured_content is not None
                assert profile.structured_content["transport"] == "http"
            async with httpx2.AsyncClient(timeout=30) as raw:
                ask = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
                anonymous = await raw.post(url, json=ask)
                assert anonymous.status_code == 401
                wrong = await raw.post(url, json=ask, headers={"Authorization": "Bearer gmcp_x"})
                assert wrong.status_code == 401
                # A session opened and left alone ends after its idle second: its id is gone.
                headers = {
                    "Authorization": f"Bearer {tokens['alice']}",
                    "Accept": "application/json, text/event-stream",
                }
                hello = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "raw", "version": "1"},
                    },
                }
                opened = await raw.post(url, json=hello, headers=headers)
                assert opened.status_code == 200
                session = opened.headers["mcp-session-id"]
                again = {**headers, "mcp-session-id": session}
                await anyio.sleep(1.6)  # no POST meanwhile: a POST is activity
                gone = await raw.post(url, json=ask, headers=again)
                assert gone.status_code == 404
            tg.cancel_scope.cancel()

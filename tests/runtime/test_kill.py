"""kill -9 of the server while a game runs: no Godot or Xvfb survives it."""

from __future__ import annotations

import os
import signal

import anyio
import pytest

from tests.runtime.conftest import copy_demo, require_godot
from tests.runtime.test_captures import ok
from tests.support.procs import children, cmdline, wait_gone
from tests.support.servers import http_client, make_tokens, start_http

pytestmark = [pytest.mark.anyio, pytest.mark.godot]


async def test_killing_the_server_kills_its_games_and_its_xvfb(tmp_path):
    require_godot("godot3", "godot3-server", "Xvfb")
    project = copy_demo(tmp_path / "demo")
    state = tmp_path / "state"
    tokens = make_tokens(state, ["alice"])
    server = start_http(project, state, tokens=tokens, env={"DISPLAY": ""})
    try:
        with anyio.fail_after(90):
            async with http_client(server.url, tokens["alice"], terminate_on_close=False) as c:
                sid = (await ok(c, "runtime.session.start"))["session"]["id"]
                await ok(c, "runtime.session.start", {"mode": "headless"})
                await ok(c, "runtime.screenshot.capture", {"session_id": sid})
                kids = children(server.process.pid)
                names = " ".join(cmdline(p) for p in kids)
                assert "Xvfb" in names and "godot3 " in names and "godot3-server" in names
                os.kill(server.process.pid, signal.SIGKILL)
                server.process.wait(timeout=10)
        assert wait_gone(kids, timeout=10) == []
    finally:
        server.stop()

"""kill -9 of the server while a game runs: no Godot or Xvfb survives it."""

from __future__ import annotations

import json
import os
import signal

import anyio
import pytest

from godot_mcp.runtime.owner import me
from tests.runtime.conftest import copy_demo, require_godot
from tests.runtime.test_captures import ok
from tests.support import engines
from tests.support.procs import children, cmdline, wait_gone
from tests.support.servers import http_client, make_tokens, run_admin, start_http

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]


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
                engine = engines.current()
                assert "Xvfb" in names and f"{engine.windowed} " in names
                assert engine.headless in names
                assert engine.major == 3 or "--headless" in names  # Godot 4 is its own server
                os.kill(server.process.pid, signal.SIGKILL)
                server.process.wait(timeout=10)
        assert wait_gone(kids, timeout=10) == []
        # Its scratch (Xvfb cookie, game logs) is left; reconcile removes it, never a live one's.
        games = state / "scratch" / "games"
        (dead,) = [p.name for p in games.iterdir()]
        assert dead.startswith(f"{server.process.pid}-")
        live = games / "-".join(map(str, me()))
        live.mkdir()
        done = run_admin("reconcile", "--json", "--state-dir", str(state))
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["extra"]["dead_scratch_removed"] == 1
        assert [p.name for p in games.iterdir()] == [live.name]
    finally:
        server.stop()

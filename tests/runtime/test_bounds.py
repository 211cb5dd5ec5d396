"""What a long-running server keeps of the games it ran: bounded, whatever callers do.

Sessions started and stopped leave nothing behind; sessions that exited on their own and
were never stopped are kept (with their logs) up to ``games.MAX_EXITED`` each time a session
starts, the oldest released first; the ended MCP sessions a start in flight asks about are a
bounded set.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

from godot_mcp.app import open_app
from godot_mcp.config import Settings
from godot_mcp.features.game import service as games
from godot_mcp.runtime.ended import EndedSessions
from godot_mcp.store.values import Limits
from tests.runtime.conftest import copy_demo, require_godot
from tests.runtime.test_captures import ok
from tests.support import engines

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("engine")]

QUITS = """\
extends Node2D

var frames = 0

func _process(_delta):
\tframes += 1
\tif frames == 20:
\t\tget_tree().quit(5)
"""


@pytest.mark.godot
async def test_many_sessions_started_stopped_or_left_exited_stay_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_godot("godot3-server")
    monkeypatch.setattr(games, "MAX_EXITED", 2)
    project = copy_demo(tmp_path / "demo")
    (project / "quits.gd").write_text(QUITS)
    (project / "quits.tscn").write_text(engines.current().scene("quits.gd"))
    settings = Settings(tmp_path / "state", None, None, Limits())
    with anyio.fail_after(240):
        async with open_app(settings, project, "stdio") as app, Client(app.server) as c:
            service = app.deps.games
            for _ in range(6):
                sid = (await ok(c, "runtime.session.start", {"mode": "headless"}))["session"]["id"]
                await ok(c, "runtime.session.stop", {"session_id": sid})
                assert service.sessions == {} and service.runner.sessions == []
            started = []
            for _ in range(5):
                answer = await ok(
                    c, "runtime.session.start", {"mode": "headless", "scene": "res://quits.tscn"}
                )
                sid = answer["session"]["id"]
                started.append(sid)
                while service.sessions[sid].game.poll() != "exited":
                    await anyio.sleep(0.05)
            # Each start kept the newest two exited ones; the one it started exited since.
            # The older ones were released as new ones started, like a stopped session.
            listed = (await ok(c, "runtime.session.list"))["sessions"]
            kept = [s["id"] for s in listed]
            assert kept == started[-3:], kept
            assert all(s["state"] == "exited" and s["exit_code"] == 5 for s in listed)
            for sid in kept:
                await ok(c, "runtime.log.read", {"session_id": sid})
            gone = await c.call_tool("runtime_session_stop", {"session_id": started[0]})
            assert gone.structured_content["outcome"] == "not_found"
            assert service.runner.sessions == [service.sessions[sid].game for sid in kept]


def test_ended_sessions_are_a_bounded_set() -> None:
    ended = EndedSessions(limit=100)
    for i in range(250):
        ended.add(f"s{i}")
    assert len(ended) == 100
    assert "s249" in ended and "s150" in ended and "s149" not in ended and "s0" not in ended
    ended.add("s150")  # seen again: the newest now
    for i in range(250, 349):
        ended.add(f"s{i}")
    assert "s150" in ended and "s151" not in ended

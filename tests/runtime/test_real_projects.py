"""What real projects do that our fixtures did not: a main scene written without ``res://``,
a wait given up on while the game still held it."""

from __future__ import annotations

import time
from collections.abc import Iterator

import anyio
import pytest

from tests.mcp.conftest import Connect, transport_factory
from tests.runtime.test_captures import ok
from tests.support.engines import Engine
from tests.support.servers import ServedProject, serve_project

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]


@pytest.fixture(scope="module")
def relative_env(
    tmp_path_factory: pytest.TempPathFactory, engine: Engine
) -> Iterator[ServedProject]:
    """The demo, its main scene written as Godot 3 projects in the wild write it."""
    base = tmp_path_factory.mktemp(f"real-{engine.name}")
    project = engine.copy_demo(base / "demo")
    config = project / "project.godot"
    text = config.read_text()
    assert 'run/main_scene="res://main.tscn"' in text
    relative = text.replace('run/main_scene="res://main.tscn"', 'run/main_scene="main.tscn"')
    config.write_text(relative)
    served = serve_project(project, base / "state")
    yield served
    served.http.stop()


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest, relative_env: ServedProject) -> Connect:
    return transport_factory(request.param, relative_env)


async def test_a_main_scene_without_res_is_answered_as_the_engine_resolves_it(connect: Connect):
    with anyio.fail_after(120):
        async with connect() as c:
            info = await ok(c, "project.info")
            assert info["main_scene"] == "res://main.tscn"
            start = {"mode": "headless", "scene": info["main_scene"]}
            sid = (await ok(c, "runtime.session.start", start))["session"]["id"]
            tree = await ok(c, "runtime.scene.tree", {"session_id": sid, "depth": 1})
            assert tree["current_scene"] == "/root/Main"
            await ok(c, "runtime.session.stop", {"session_id": sid})


async def test_a_wait_given_up_on_is_cancelled_in_the_game(connect: Connect):
    """A 600-frame wait that times out after 1 s is dropped by the game: the input sent next
    is applied at once, not when those 600 frames (10 s at 60 fps) have run."""
    with anyio.fail_after(120):
        async with connect() as c:
            sid = (await ok(c, "runtime.session.start", {"mode": "headless"}))["session"]["id"]
            before = (await ok(c, "runtime.perf.read", {"session_id": sid}))["frame"]
            began = time.monotonic()
            r = await c.call_tool(
                "runtime_wait",
                {"session_id": sid, "until": {"frames": 600}, "timeout_seconds": 1},
            )
            body = r.structured_content
            assert body["outcome"] == "timeout", body
            assert before < body["frame"] < before + 600, body
            assert isinstance(body["fps"], int | float) and body["fps"] >= 0, body
            after = await ok(
                c,
                "runtime.input.send",
                {"session_id": sid, "events": [{"type": "wait", "frames": 1}]},
            )
            took = time.monotonic() - began
            assert after["applied"] == 1 and after["frame"] < before + 600, (after, before)
            assert took < 6, took  # the abandoned wait alone would have held it ~10 s
            await ok(c, "runtime.session.stop", {"session_id": sid})

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
            assert body["fps"] is None or body["fps"] > 0, body  # null until 0.5 s of frames
            after = await ok(
                c,
                "runtime.input.send",
                {"session_id": sid, "events": [{"type": "wait", "frames": 1}]},
            )
            took = time.monotonic() - began
            assert after["applied"] == 1 and after["frame"] < before + 600, (after, before)
            assert took < 6, took  # the abandoned wait alone would have held it ~10 s
            await ok(c, "runtime.session.stop", {"session_id": sid})


SLOW = """extends Node2D

var slow = SLOW_FROM_START  # milliseconds each frame burns

func _process(_delta):
	if slow > 0:
		OS.delay_msec(slow)
"""


@pytest.fixture(scope="module")
def drawing_env(
    tmp_path_factory: pytest.TempPathFactory, engine: Engine
) -> Iterator[ServedProject]:
    """A project that draws only on change (low-processor mode), with a still scene, a scene
    that turns slow when told to (its ``slow``: milliseconds a frame), and one at 1 fps from
    the start."""
    base = tmp_path_factory.mktemp(f"draw-{engine.name}")
    project = engine.copy_demo(base / "demo")
    config = project / "project.godot"
    config.write_text(
        config.read_text().replace(
            "[application]\n", "[application]\n\nrun/low_processor_mode=true\n", 1
        )
    )
    assert "run/low_processor_mode=true" in config.read_text()
    (project / "still.tscn").write_text(engine.scene("still.gd", "Node2D"))
    (project / "still.gd").write_text("extends Node2D\n")
    for name, slow in (("slows", "0"), ("crawl", "1000")):
        (project / f"{name}.gd").write_text(SLOW.replace("SLOW_FROM_START", slow))
        (project / f"{name}.tscn").write_text(engine.scene(f"{name}.gd", "Node2D"))
    served = serve_project(project, base / "state")
    yield served
    served.http.stop()


async def test_a_project_that_draws_only_on_change_is_recorded(drawing_env: ServedProject):
    """Low-processor mode: nothing changes on screen, yet the recording gets its frames."""
    with anyio.fail_after(120):
        async with drawing_env.connect("stdio") as c:
            start = {"scene": "res://still.tscn"}
            sid = (await ok(c, "runtime.session.start", start))["session"]["id"]
            began = time.monotonic()
            shot = await ok(
                c, "runtime.recording.capture", {"session_id": sid, "frames": 10, "fps": 10}
            )
            assert shot["artifact"]["frames"] == 10
            assert time.monotonic() - began < 10  # frames / fps + 5 s at most
            again = await ok(
                c, "runtime.recording.capture", {"session_id": sid, "frames": 2, "fps": 10}
            )
            assert again["artifact"]["frames"] == 2  # the redraw policy was given back, intact
            await ok(c, "runtime.session.stop", {"session_id": sid})


async def test_a_recording_is_bound_by_the_games_own_rate(drawing_env: ServedProject):
    """A game at 1 fps: a recording that cannot fit 50 s is refused at once; one whose game
    stalls meanwhile times out when its frames at the rate they came would have been done,
    saying how far it got and at what rate, registering nothing."""
    with anyio.fail_after(180):
        async with drawing_env.connect("stdio") as c:
            start = {"scene": "res://crawl.tscn"}
            crawl = (await ok(c, "runtime.session.start", start))["session"]["id"]
            await ok(c, "runtime.wait", {"session_id": crawl, "until": {"frames": 3}})
            began = time.monotonic()
            r = await c.call_tool(
                "runtime_recording_capture", {"session_id": crawl, "frames": 60, "fps": 10}
            )
            body = r.structured_content
            assert body["outcome"] == "invalid_argument", body
            assert "a recording waits at most 50 s: ask for fewer frames" in body["message"]
            assert time.monotonic() - began < 5
            await ok(c, "runtime.session.stop", {"session_id": crawl})

            start = {"scene": "res://slows.tscn"}
            slows = (await ok(c, "runtime.session.start", start))["session"]["id"]
            await ok(c, "runtime.wait", {"session_id": slows, "until": {"frames": 90}})
            listed = await c.list_resources()
            answers = []
            began = time.monotonic()

            async def record() -> None:
                args = {"session_id": slows, "frames": 40, "fps": 10}
                answers.append(await c.call_tool("runtime_recording_capture", args))

            async with anyio.create_task_group() as group:
                group.start_soon(record)
                await anyio.sleep(1)  # a second into the recording, the game stalls
                turn = {"session_id": slows, "path": "/root/Root", "values": {"slow": 30_000}}
                await ok(c, "runtime.node.set", turn)
            body = answers[0].structured_content
            assert body["outcome"] == "timeout", body
            assert time.monotonic() - began < 20, body  # 40 frames at 10 fps, plus 5 s
            assert 0 < body["frames_captured"] < 40, body
            assert 0 < body["fps"] < 10, body
            assert body["message"].startswith(f"the recording got {body['frames_captured']} of 40")
            assert (await c.list_resources()).resources == listed.resources
            await ok(c, "runtime.session.stop", {"session_id": slows})

"""The engine's own debugger, spoken by :mod:`godot_mcp.engine.debugger` to a real headless game on
each engine: breakpoints from the command line and set later, stacks, variables, stepping,
Godot 4's evaluation, a break on request, and a local process that connects first."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import anyio
import pytest

from godot_mcp.engine.debugger.listener import DebugListener
from godot_mcp.engine.debugger.session import Debugger, NotStopped
from godot_mcp.engine.debugger.variant import ObjectId
from godot_mcp.engine.process.run import GodotRun, stop_run
from tests.support.engines import Engine

pytestmark = [pytest.mark.godot, pytest.mark.anyio]

DATA = Path(__file__).parent.parent / "data" / "debugger"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def project(root: Path, major: int, script: str | None = None) -> Path:
    root.mkdir()
    config = 5 if major >= 4 else 4
    (root / "project.godot").write_text(
        f'config_version={config}\n\n[application]\nrun/main_scene="res://main.tscn"\n'
    )
    (root / "main.gd").write_text(script or (DATA / "main.gd").read_text())
    if major >= 4:
        scene = (
            '[gd_scene load_steps=2 format=3]\n\n[ext_resource type="Script" '
            'path="res://main.gd" id="1"]\n\n[node name="Main" type="Node2D"]\n'
            'script = ExtResource("1")\n'
        )
    else:
        scene = (
            '[gd_scene load_steps=2 format=2]\n\n[ext_resource path="res://main.gd" '
            'type="Script" id=1]\n\n[node name="Main" type="Node2D"]\n'
            "script = ExtResource( 1 )\n"
        )
    (root / "main.tscn").write_text(scene)
    return root


def where(dbg: Debugger) -> list[tuple[str, int, str]]:
    assert dbg.stopped is not None
    return [(f.path, f.line, f.function) for f in dbg.stopped.stack]


def debug_run(engine: Engine, root: Path, port: int, breakpoints: str | None) -> GodotRun:
    address = f"127.0.0.1:{port}"
    remote = address if engine.major < 4 else f"tcp://{address}"
    flags = ["--headless"] if engine.major >= 4 else []
    given = ["--breakpoints", breakpoints] if breakpoints else []
    args = [*flags, "--path", str(root), "--remote-debug", remote, *given]
    return GodotRun(engine.headless, args, root, stdout=subprocess.DEVNULL)


async def test_a_game_stops_steps_and_shows_its_values(engine: Engine, tmp_path: Path) -> None:
    root = project(tmp_path / "p", engine.major)
    listener = await DebugListener.open()
    # A local process that connects first is refused; the game still attaches.
    intruder = socket.create_connection(("127.0.0.1", listener.port))
    child = debug_run(engine, root, listener.port, "res://main.gd:7").start()
    try:
        with anyio.fail_after(60):
            stream = await listener.accept(child.pid)
            assert listener.refused == 1
            intruder.close()
            await listener.aclose()
            dbg = Debugger(stream, engine.profile, {"res://main.gd": {7}})
            async with anyio.create_task_group() as tg:
                tg.start_soon(dbg.run)
                brk = await dbg.wait_stopped(30)
                assert brk is not None and brk.reason == "breakpoint" and brk.error is None
                assert where(dbg) == [("res://main.gd", 7, "_ready")]
                first = await dbg.variables(0)
                assert set(first.members) == {"self", "speed", "label"}  # self, then its own
                assert (first.members["speed"], first.members["label"]) == (42, "hello")
                assert isinstance(first.members["self"], ObjectId)

                stepped = await dbg.control("next", 10)
                assert stepped is not None and stepped.reason == "step"
                assert where(dbg) == [("res://main.gd", 8, "_ready")]
                assert (await dbg.variables(0)).locals["local_a"] == 7

                await dbg.set_breakpoint("res://main.gd", 18, True)
                assert await dbg.control("continue", 10) is None
                brk = await dbg.wait_stopped(30)
                assert brk is not None and brk.reason == "breakpoint"
                assert where(dbg) == [
                    ("res://main.gd", 18, "helper"),
                    ("res://main.gd", 15, "_process"),
                ]
                inner = await dbg.variables(0)
                assert isinstance(inner.locals["x"], float) and inner.members["speed"] == 100
                outer = await dbg.variables(1)
                assert isinstance(outer.locals["t"], float)
                if engine.major >= 4:
                    assert await dbg.evaluate("speed + 1", 0) == 101

                stepped = await dbg.control("step", 10)
                assert stepped is not None and stepped.reason == "step"
                assert where(dbg)[0] == ("res://main.gd", 19, "helper")

                await dbg.set_breakpoint("res://main.gd", 18, False)
                assert dbg.breakpoints == {"res://main.gd": {7}}
                await dbg.control("continue", 10)
                assert await dbg.wait_stopped(1) is None  # running: frames go on
                with pytest.raises(NotStopped):
                    await dbg.variables(0)

                brk = await dbg.control("break", 10)
                assert brk is not None and brk.reason == "break"
                assert await dbg.control("break", 10) is brk  # nothing sent: still stopped
                await dbg.control("continue", 10)
                assert dbg.stopped is None and dbg.lost is None
                tg.cancel_scope.cancel()
    finally:
        await stop_run(child)


FAILING = """extends Node

var frames = 0

func _process(_delta):
	frames += 1
	if frames == 3:
		break_it(null)

func break_it(thing):
	var before = 5
	return thing.missing_method(before)
"""


async def test_a_script_error_stops_the_game_with_the_engines_message(
    engine: Engine, tmp_path: Path
) -> None:
    root = project(tmp_path / "p", engine.major, FAILING.replace("Node2D", "Node"))
    listener = await DebugListener.open()
    child = debug_run(engine, root, listener.port, None).start()
    try:
        with anyio.fail_after(60):
            stream = await listener.accept(child.pid)
            await listener.aclose()
            dbg = Debugger(stream, engine.profile)
            async with anyio.create_task_group() as tg:
                tg.start_soon(dbg.run)
                brk = await dbg.wait_stopped(30)
                assert brk is not None and brk.reason == "error", brk
                assert brk.error is not None and "missing_method" in brk.error
                assert where(dbg) == [
                    ("res://main.gd", 12, "break_it"),
                    ("res://main.gd", 8, "_process"),
                ]
                values = await dbg.variables(0)
                assert values.locals["before"] == 5 and values.members["frames"] == 3
                tg.cancel_scope.cancel()
    finally:
        await stop_run(child)

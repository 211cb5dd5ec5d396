"""A hostile or just deep game's debugger on the real engines, read through the official SDK
client over stdio (it validates ``structuredContent`` against each tool's ``outputSchema``):
stacks and profiles larger than ``max_output_bytes`` answer what fits, texts arrive without
terminal escapes, profile figures are finite numbers. Godot 4's games can send debugger
messages themselves (``EngineDebugger.send_message``) and forge stops and profiles; Godot 3's
cannot, so there the same answers come from what the game really does.
``tests/runtime/test_hostile_debugger.py`` does the same over the fake engine."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.engines import Engine
from tests.support.servers import stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.slow]

DIVES = 150
DEEP_GD = f"""\
extends Node

func _ready():
\tdive({DIVES})

func dive(n):
\tif n == 0:
\t\tvar bottom = n
\t\treturn bottom
\treturn dive(n - 1)
"""
DIVE_BOTTOM = 8  # the line of "var bottom = n"

# Godot 4: a forged stop, 40,000 frames deep, with escapes in its error and function names;
# said again every second (a step waits for the next).
FORGED_STACK_GD = """\
extends Node

var last = -1000000

func _process(_delta):
\tif Time.get_ticks_msec() - last < 1000:
\t\treturn
\tlast = Time.get_ticks_msec()
\tvar stack = [40000]
\tfor i in range(40000):
\t\tstack.append_array(["res://forge.gd", i + 1, "\\u001b[31mforged"])
\tEngineDebugger.send_message("debug_exit", [])
\tvar error = "forged error \\u001b]0;pwned\\u0007\\u001b[2J"
\tEngineDebugger.send_message("debug_enter", [true, error, false, 1])
\tEngineDebugger.send_message("stack_dump", stack)
"""

# Godot 4: profile messages of its own, 20 times a second: 1e306 s is no finite number in ms.
FORGED_PROFILE_GD = """\
extends Node

var last = -1000000

func _process(_delta):
\tif Time.get_ticks_msec() - last < 50:
\t\treturn
\tlast = Time.get_ticks_msec()
\tvar rows = [90001, 1, 1e306, 1e306, 0.0, 90002, 1, 0.001, 0.002, 0.0]
\tvar sent = [1, 0.0, 0.0, 0.0, 0.0, 0.0, 0, rows.size()] + rows
\tvar named = "servers:function_signature"
\tEngineDebugger.send_message(named, ["res://forge.gd::3::\\u001b[2Jhuge", 90001])
\tEngineDebugger.send_message(named, ["res://forge.gd::5::\\u001b[31mred", 90002])
\tEngineDebugger.send_message("servers:profile_frame", sent)
\tEngineDebugger.send_message("servers:profile_total", sent)
"""

# Both engines: a script error whose message holds a title change and a screen clear.
ESCAPES_GD = """\
extends Node

func _ready():
\tvar text = "\\u001b[31mred"
\tvar found = {}
\tprint(found["\\u001b]0;pwned\\u0007\\u001b[2J"], text)
"""

NAMES = 600


def long_name(i: int) -> str:
    return f"f{i:03d}_" + "x" * 895  # 900 characters


def many_gd() -> str:
    """600 functions of 900-character names, each called every frame."""
    funcs = "".join(f"func {long_name(i)}():\n\treturn {i}\n\n" for i in range(NAMES))
    calls = "".join(f"\t{long_name(i)}()\n" for i in range(NAMES))
    return f"extends Node\n\n{funcs}func _process(_delta):\n{calls}"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, engine: Engine) -> Path:
    root = tmp_path_factory.mktemp(f"debugger-limits-{engine.name}") / "project"
    root.mkdir()
    config = 4 if engine.major == 3 else 5
    (root / "project.godot").write_text(
        f'config_version={config}\n\n[application]\n\nrun/main_scene="res://deep.tscn"\n'
    )
    scripts = {"deep": DEEP_GD, "escapes": ESCAPES_GD, "many": many_gd()}
    if engine.major >= 4:
        scripts |= {"forged_stack": FORGED_STACK_GD, "forged_profile": FORGED_PROFILE_GD}
    for name, text in scripts.items():
        (root / f"{name}.gd").write_text(text)
        (root / f"{name}.tscn").write_text(engine.scene(f"{name}.gd", "Node"))
    return root


async def ok(c: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    r = await c.call_tool(tool.replace(".", "_"), args)
    assert r.structured_content is not None and r.structured_content["outcome"] == "ok", r
    return r.structured_content


async def start(c: Any, scene: str, **more: Any) -> dict[str, str]:
    args = {"mode": "headless", "debug": True, "scene": f"res://{scene}.tscn", **more}
    return {"session_id": (await ok(c, "runtime.session.start", args))["session"]["id"]}


def texts(value: Any) -> list[str]:
    """Every string in a JSON value, object keys too."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [t for v in value for t in texts(v)]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in (k, *texts(v))]
    return []


def escapeless(value: Any) -> bool:
    """No string in ``value`` holds a control character a terminal acts on."""
    return not any(re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", t) for t in texts(value))


async def test_a_stack_deeper_than_an_answer_answers_its_innermost_frames(
    project: Path, engine: Engine, tmp_path: Path
) -> None:
    bottom = f"res://deep.gd:{DIVE_BOTTOM}"
    with anyio.fail_after(150):
        async with stdio_client(project, tmp_path / "state", "--max-output-bytes", "4096") as c:
            sid = await start(c, "deep", breakpoints=[bottom])
            at = await ok(c, "runtime.debug.state", {**sid, "wait_seconds": 20})
            shown = len(at["stack"])
            top = {"path": "res://deep.gd", "line": DIVE_BOTTOM, "function": "dive"}
            top["code"] = "var bottom = n"
            dive = {"path": "res://deep.gd", "line": 10, "function": "dive"}
            dives = [{**dive, "code": "return dive(n - 1)"}] * (shown - 1)
            assert 2 <= shown < 40, at
            assert at == {
                "outcome": "ok",
                "state": "break",
                "reason": "breakpoint",
                "stack": [top, *dives],
                "depth": DIVES + 2,  # the dives, the first call, _ready
                "truncated": True,
            }
            stepped = await ok(c, "runtime.debug.control", {**sid, "action": "next"})
            more = len(stepped["stack"]) - shown  # "step" is shorter than "breakpoint"
            assert stepped == {
                **at,
                "reason": "step",
                "stack": [
                    {**top, "line": DIVE_BOTTOM + 1, "code": "return bottom"},
                    *dives,
                    *dives[:more],
                ],
            }
            assert more in (0, 1), stepped
            await ok(c, "runtime.session.stop", sid)

            if engine.major >= 4:  # a forged stop, 40,000 frames deep
                sid = await start(c, "forged_stack")
                at = await ok(c, "runtime.debug.state", {**sid, "wait_seconds": 20})
                shown = len(at["stack"])
                assert 2 <= shown < 40, at
                forged = [  # res://forge.gd is no file: no code
                    {"path": "res://forge.gd", "line": i + 1, "function": "forged"}
                    for i in range(shown)
                ]
                assert at == {
                    "outcome": "ok",
                    "state": "break",
                    "reason": "error",
                    "error": "forged error ",
                    "stack": forged,
                    "depth": 40_000,
                    "truncated": True,
                }
                stepped = await ok(
                    c, "runtime.debug.control", {**sid, "action": "next", "timeout_seconds": 20}
                )
                assert stepped == at  # the next forged stop
                await ok(c, "runtime.session.stop", sid)


async def test_a_profile_larger_than_an_answer_answers_its_busiest_functions(
    project: Path, engine: Engine, tmp_path: Path
) -> None:
    with anyio.fail_after(150):
        async with stdio_client(project, tmp_path / "state", "--max-output-bytes", "9000") as c:
            sid = await start(c, "many")
            await ok(c, "runtime.wait", {**sid, "until": {"frames": 3}})
            args = {**sid, "seconds": 1, "max_functions": 200}
            measured = await ok(c, "runtime.profile.capture", args)
            await ok(c, "runtime.session.stop", sid)
    rows = measured["functions"]
    assert 1 <= len(rows) < 10, measured
    assert (measured["truncated"], measured["dropped"]) == (True, 0)
    assert measured["frames"] >= 1
    lines = {long_name(i): (3 * i + 3, 3 * i + 4) for i in range(NAMES)}  # func, first line
    lines["_process"] = (3 * NAMES + 3, 3 * NAMES + 4)
    for row in rows:  # each a function of the game, its name whole
        assert row["path"] == "res://many.gd" and row["calls"] >= 1, row
        assert row["line"] in lines[row["function"]], row
    selfs = [row["self_ms"] for row in rows]
    assert selfs == sorted(selfs, reverse=True)


async def test_profile_figures_are_finite_numbers_whatever_the_game_sends(
    project: Path, engine: Engine, tmp_path: Path
) -> None:
    scene = "forged_profile" if engine.major >= 4 else "deep"  # Godot 3's games cannot forge
    with anyio.fail_after(150):
        async with stdio_client(project, tmp_path / "state") as c:
            sid = await start(c, scene)
            await ok(c, "runtime.wait", {**sid, "until": {"frames": 3}})
            measured = await ok(c, "runtime.profile.capture", {**sid, "seconds": 1})
            await ok(c, "runtime.session.stop", sid)
    assert measured["frames"] >= 1
    if engine.major >= 4:  # the forged total: "huge" is dropped, "red" loses its escape
        assert (measured["functions"], measured["dropped"], measured["truncated"]) == (
            [
                {
                    "function": "red",
                    "path": "res://forge.gd",
                    "line": 5,
                    "calls": 1,
                    "self_ms": 1.0,
                    "total_ms": 2.0,
                }
            ],
            1,
            False,
        )
    else:
        assert (measured["dropped"], measured["truncated"]) == (0, False)


async def test_a_stops_texts_arrive_without_terminal_escapes(
    project: Path, engine: Engine, tmp_path: Path
) -> None:
    with anyio.fail_after(150):
        async with stdio_client(project, tmp_path / "state") as c:
            sid = await start(c, "escapes")
            at = await ok(c, "runtime.debug.state", {**sid, "wait_seconds": 20})
            assert (at["reason"], at["stack"][0]["line"]) == ("error", 6), at
            assert "Dictionary" in at["error"] and "pwned" not in at["error"], at
            assert escapeless(at), at
            values = await ok(c, "runtime.debug.variables", sid)
            assert values["locals"]["text"] == "red"
            if engine.major >= 4:
                evaluated = await ok(c, "runtime.debug.evaluate", {**sid, "expression": "text"})
                assert evaluated["value"] == "red"
            log = await ok(c, "runtime.log.read", {**sid, "min_level": "error"})
            assert log["lines"] and escapeless(log), log
            await ok(c, "runtime.session.stop", sid)

"""The engine's own debugger through the server (interface §10), on real games on every
engine, over stdio and HTTP: breakpoints at start and later, stacks and variables, stepping,
a script error, what answers while the game is stopped, evaluation, and binding."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from tests.mcp.conftest import Connect, transport_factory
from tests.support.engines import Engine
from tests.support.servers import ServedProject, answer, ok, serve_project

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]

MAIN_GD = """\
extends Node2D

var speed = 42
var label = "hello"
var frames = 0

func _ready():
\tvar local_a = 7
\tvar local_b = "seven"
\tprint("ready ", local_a, local_b)

func _process(delta):
\tframes += 1
\tvar t = delta * 2.0
\tif frames == 30:
\t\thelper(t)

func helper(x):
\tvar y = x + 1
\treturn y

func _unhandled_input(event):
\tif event is InputEventKey and event.pressed:
\t\tboom(event)

func boom(event):
\tvar nothing = null
\tnothing.explode()
"""

SCENE3 = """\
[gd_scene load_steps=2 format=2]

[ext_resource path="res://main.gd" type="Script" id=1]

[node name="Main" type="Node2D"]
script = ExtResource( 1 )
"""
SCENE4 = """\
[gd_scene load_steps=2 format=3]

[ext_resource type="Script" path="res://main.gd" id="1_main"]

[node name="Main" type="Node2D"]
script = ExtResource("1_main")
"""


def serve_script(
    factory: pytest.TempPathFactory, engine: Engine, kind: str, script: str
) -> ServedProject:
    """A served project whose main scene is a Node2D running ``script`` (res://main.gd)."""
    base = factory.mktemp(f"{kind}-{engine.name}")
    project = base / "project"
    project.mkdir()
    config = 4 if engine.major == 3 else 5
    (project / "project.godot").write_text(
        f'config_version={config}\n\n[application]\n\nrun/main_scene="res://main.tscn"\n'
    )
    (project / "main.gd").write_text(script)
    (project / "main.tscn").write_text(SCENE3 if engine.major == 3 else SCENE4)
    return serve_project(project, base / "state")


@pytest.fixture(scope="module")
def debug_env(tmp_path_factory: pytest.TempPathFactory, engine: Engine) -> Iterator[ServedProject]:
    served = serve_script(tmp_path_factory, engine, "debug", MAIN_GD)
    yield served
    served.http.stop()


@pytest.fixture(params=["stdio", "http"])
def debug(request: pytest.FixtureRequest, debug_env: ServedProject) -> Connect:
    return transport_factory(request.param, debug_env)


def top(state: dict[str, Any]) -> tuple[str, int, str]:
    frame = state["stack"][0]
    return frame["path"], frame["line"], frame["function"]


async def test_a_game_stops_steps_and_resumes_where_the_engine_says(
    debug: Connect, engine: Engine
) -> None:
    with anyio.fail_after(150):
        async with debug() as c:
            start = {"mode": "headless", "debug": True, "breakpoints": ["res://main.gd:8"]}
            session = (await ok(c, "runtime.session.start", start))["session"]
            assert (session["state"], session["debug"]) == ("running", True)
            sid = {"session_id": session["id"]}
            at = await ok(c, "runtime.debug.state", {**sid, "wait_seconds": 10})
            assert (at["state"], at["reason"]) == ("break", "breakpoint")
            assert at["stack"] == [
                {
                    "path": "res://main.gd",
                    "line": 8,
                    "function": "_ready",
                    "code": "var local_a = 7",
                }
            ]
            values = await ok(c, "runtime.debug.variables", sid)
            assert {k: values["members"][k] for k in ("speed", "label", "frames")} == {
                "speed": 42,
                "label": "hello",
                "frames": 0,
            }
            assert values["members"]["self"]["type"] == "Object"

            stepped = await ok(c, "runtime.debug.control", {**sid, "action": "next"})
            assert (stepped["reason"], top(stepped)) == ("step", ("res://main.gd", 9, "_ready"))
            assert (await ok(c, "runtime.debug.variables", sid))["locals"]["local_a"] == 7

            # Stopped: every tool that needs a frame answers at once, naming where.
            where = "the game is stopped at res://main.gd:9 (step); resume it with "
            refusal = {"outcome": "unavailable", "message": where + "runtime_debug_control"}
            for tool, more in (
                ("runtime.scene.tree", {}),
                ("runtime.perf.read", {}),
                ("runtime.node.get", {"path": "/root/Main"}),
                ("runtime.input.send", {"events": [{"type": "wait", "frames": 1}]}),
                ("runtime.wait", {"until": {"frames": 5}}),
                ("runtime.time.control", {"action": "pause"}),
            ):
                with anyio.fail_after(1):
                    assert await answer(c, tool, {**sid, **more}) == refusal, tool
            page = await ok(c, "runtime.log.read", sid)
            assert page["state"] == "running"

            # Set later, a breakpoint stops _process; a step goes into the call.
            listed = await ok(c, "runtime.debug.breakpoints", {**sid, "set": ["res://main.gd:16"]})
            assert listed["breakpoints"] == ["res://main.gd:8", "res://main.gd:16"]
            assert await ok(c, "runtime.debug.control", {**sid, "action": "continue"}) == {
                "outcome": "ok",
                "state": "running",
            }
            at = await ok(c, "runtime.debug.state", {**sid, "wait_seconds": 20})
            assert (at["reason"], top(at)) == ("breakpoint", ("res://main.gd", 16, "_process"))
            assert (await ok(c, "runtime.debug.variables", sid))["members"]["frames"] == 30
            into = await ok(c, "runtime.debug.control", {**sid, "action": "step"})
            assert [(f["line"], f["function"]) for f in into["stack"]] == [
                (19, "helper"),
                (16, "_process"),
            ]
            inner = await ok(c, "runtime.debug.variables", sid)
            assert isinstance(inner["locals"]["x"], float)
            outer = await ok(c, "runtime.debug.variables", {**sid, "frame": 1})
            assert isinstance(outer["locals"]["t"], float)

            evaluated = await answer(
                c, "runtime.debug.evaluate", {**sid, "expression": "int(x * 0) + speed + 1"}
            )
            out = await answer(c, "runtime.debug.control", {**sid, "action": "out"})
            if debug.transport == "http":  # type: ignore[attr-defined]
                assert evaluated["message"] == (
                    "runtime writes are disabled on this server "
                    "(start it with --allow-runtime-writes)"
                )
            elif engine.major >= 4:
                assert evaluated == {"outcome": "ok", "value": 43}
                bad = {**sid, "expression": "nope_nope + 1"}
                refused = await answer(c, "runtime.debug.evaluate", bad)
                assert refused["outcome"] == "invalid_argument", refused
                assert "nope_nope" in refused["message"], refused
                still = await ok(c, "runtime.debug.state", sid)  # and the game is still stopped
                assert still["state"] == "break"
                errors = await ok(c, "runtime.log.read", {**sid, "min_level": "error"})
                assert not [x for x in errors["lines"] if "nope_nope" in x["text"]], errors
            else:
                assert evaluated["message"].endswith("'s debugger has no evaluation")
                assert evaluated["message"].startswith("Godot 3.")
            if engine.major >= 4:
                assert out["outcome"] == "ok" and out["reason"] == "step"
                assert top(out)[2] == "_process"
            else:
                assert out["outcome"] == "unavailable"
                assert out["message"].endswith("'s debugger has no step out")

            # Frames advance between breaks; a cleared breakpoint stops nothing.
            changes = {
                "set": ["res://main.gd:13"],
                "clear": ["res://main.gd:16", "res://main.gd:8"],
            }
            listed = await ok(c, "runtime.debug.breakpoints", {**sid, **changes})
            assert listed["breakpoints"] == ["res://main.gd:13"]
            seen = []
            for _ in range(2):
                await ok(c, "runtime.debug.control", {**sid, "action": "continue"})
                at = await ok(c, "runtime.debug.state", {**sid, "wait_seconds": 10})
                assert top(at) == ("res://main.gd", 13, "_process")
                seen.append((await ok(c, "runtime.debug.variables", sid))["members"]["frames"])
            assert seen[1] == seen[0] + 1
            await ok(c, "runtime.debug.breakpoints", {**sid, "clear": ["res://main.gd:13"]})
            await ok(c, "runtime.debug.control", {**sid, "action": "continue"})
            still = await ok(c, "runtime.debug.state", {**sid, "wait_seconds": 1})
            assert still == {"outcome": "ok", "state": "running"}
            await ok(c, "runtime.wait", {**sid, "until": {"frames": 5}})

            # A break on request; a second one sends nothing and answers the same.
            brk = await ok(c, "runtime.debug.control", {**sid, "action": "break"})
            assert (brk["state"], brk["reason"]) == ("break", "break")
            assert await ok(c, "runtime.debug.control", {**sid, "action": "break"}) == brk
            await ok(c, "runtime.debug.control", {**sid, "action": "continue"})
            await ok(c, "runtime.wait", {**sid, "until": {"frames": 3}})
            # Nothing the server asked of the engine shows in the game's log.
            errors = await ok(c, "runtime.log.read", {**sid, "min_level": "error"})
            assert not [x for x in errors["lines"] if "out of bounds" in x["text"]], errors
            stopped = await ok(c, "runtime.session.stop", sid)
            assert stopped["state"] == "stopped"


async def test_a_script_error_stops_the_call_that_caused_it(debug: Connect, engine: Engine) -> None:
    with anyio.fail_after(120):
        async with debug() as c:
            start = {"mode": "headless", "debug": True}
            sid = {"session_id": (await ok(c, "runtime.session.start", start))["session"]["id"]}
            await ok(c, "runtime.wait", {**sid, "until": {"frames": 3}})
            key = {"type": "key", "key": "A", "pressed": True}
            began = anyio.current_time()
            sent = await answer(c, "runtime.input.send", {**sid, "events": [key]})
            assert anyio.current_time() - began < 3
            assert sent["outcome"] == "unavailable"
            assert sent["message"].startswith("the game is stopped at res://main.gd:28 (error)")
            at = await ok(c, "runtime.debug.state", sid)
            assert at["reason"] == "error" and "explode" in at["error"]
            assert [(f["line"], f["function"]) for f in at["stack"]] == [
                (28, "boom"),
                (24, "_unhandled_input"),
            ]
            errors = await ok(c, "runtime.log.read", {**sid, "min_level": "error"})
            assert any("explode" in line["text"] for line in errors["lines"]), errors
            ended = await ok(c, "runtime.session.stop", sid)
            assert ended["state"] == "stopped"


async def test_another_callers_session_answers_as_an_unknown_one(debug_env: ServedProject) -> None:
    connect = transport_factory("http", debug_env)
    with anyio.fail_after(90):
        async with connect("alice") as alice, connect("bob") as bob:
            start = {"mode": "headless", "debug": True, "breakpoints": ["res://main.gd:8"]}
            sid = (await ok(alice, "runtime.session.start", start))["session"]["id"]
            unknown = await answer(bob, "runtime.debug.state", {"session_id": "0" * 26})
            theirs = await answer(bob, "runtime.debug.state", {"session_id": sid})
            assert theirs == unknown and theirs["outcome"] == "not_found"
            control = await answer(
                bob, "runtime.debug.control", {"session_id": sid, "action": "continue"}
            )
            assert control == await answer(
                bob, "runtime.debug.control", {"session_id": "0" * 26, "action": "continue"}
            )
            await ok(alice, "runtime.session.stop", {"session_id": sid})


RELOAD_GD = """\
extends Node2D

var kept = 0

func value():
\treturn 1

func _process(_delta):
\tkept += 1
\tif kept % 10 == 0:
\t\tprint("VALUE %d KEPT %d" % [value(), kept])
"""


@pytest.fixture(scope="module")
def reload_env(tmp_path_factory: pytest.TempPathFactory, engine: Engine) -> Iterator[ServedProject]:
    served = serve_script(tmp_path_factory, engine, "reload", RELOAD_GD)
    yield served
    served.http.stop()


async def _kept_after(c: Any, sid: dict[str, Any], value: int) -> int:
    """The ``kept`` count of the first line printed with ``value`` from now on."""
    seen = await ok(
        c, "runtime.wait", {**sid, "until": {"log": f"VALUE {value} "}, "timeout_seconds": 20}
    )
    return int(seen["value"].split()[-1])


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("debugged", [False, True], ids=["plain", "debug"])
async def test_an_edited_script_runs_after_a_reload_without_a_restart(
    reload_env: ServedProject, engine: Engine, debugged: bool, transport: str
) -> None:
    script = reload_env.project / "main.gd"
    script.write_text(RELOAD_GD)
    connect = transport_factory(transport, reload_env)
    with anyio.fail_after(120):
        async with connect() as c:
            start = {"mode": "headless", "debug": debugged}
            sid = {"session_id": (await ok(c, "runtime.session.start", start))["session"]["id"]}
            before = await _kept_after(c, sid, 1)

            script.write_text(RELOAD_GD.replace("return 1", "return 2"))
            reloaded = await ok(c, "runtime.scripts.reload", sid)
            assert reloaded["reloaded"] == ["res://main.gd"]
            after = await _kept_after(c, sid, 2)
            assert after > before  # the same instance: its members kept their values

            script.write_text(RELOAD_GD.replace("return 1", "return 3 +"))
            refused = await answer(c, "runtime.scripts.reload", sid)
            assert refused["outcome"] == "invalid_argument", refused
            assert re.match(r"res://main\.gd:[67]: \S", refused["message"]), refused
            assert refused["message"].endswith("; the game keeps its old code")
            assert await _kept_after(c, sid, 2) > after  # still the old code

            if debugged:  # at a break: the reload is applied on continue
                script.write_text(RELOAD_GD.replace("return 1", "return 4"))
                await ok(c, "runtime.debug.control", {**sid, "action": "break"})
                done = await ok(c, "runtime.scripts.reload", {**sid, "paths": ["res://main.gd"]})
                assert done["reloaded"] == ["res://main.gd"]
                await ok(c, "runtime.debug.control", {**sid, "action": "continue"})
                await _kept_after(c, sid, 4)
            await ok(c, "runtime.session.stop", sid)
    script.write_text(RELOAD_GD)


PROFILE_GD = """\
extends Node2D

var sum = 0

func busy():
\tvar s = 0
\tfor i in range(3000):
\t\ts += i % 7
\treturn s

func light():
\treturn 1

func _process(_delta):
\tsum += busy() + light()
"""


@pytest.fixture(scope="module")
def profile_env(
    tmp_path_factory: pytest.TempPathFactory, engine: Engine
) -> Iterator[ServedProject]:
    served = serve_script(tmp_path_factory, engine, "profile", PROFILE_GD)
    yield served
    served.http.stop()


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_profiler_names_the_busiest_function(
    profile_env: ServedProject, engine: Engine, transport: str
) -> None:
    connect = transport_factory(transport, profile_env)
    with anyio.fail_after(90):
        async with connect() as c:
            plain = (await ok(c, "runtime.session.start", {"mode": "headless"}))["session"]
            refused = await answer(c, "runtime.profile.capture", {"session_id": plain["id"]})
            assert refused["message"] == "the session was started without debug"
            start = {"mode": "headless", "debug": True}
            sid = {"session_id": (await ok(c, "runtime.session.start", start))["session"]["id"]}
            await ok(c, "runtime.wait", {**sid, "until": {"frames": 5}})
            measured = await ok(c, "runtime.profile.capture", {**sid, "seconds": 1})
            frames = measured["frames"]
            assert frames >= 10, measured
            first = measured["functions"][0]
            line = 5 if engine.major == 3 else 6  # the func line; Godot 4: its first body line
            assert (first["function"], first["path"], first["line"]) == (
                "busy",
                "res://main.gd",
                line,
            )
            assert frames * 0.8 <= first["calls"] <= frames * 1.2 + 2, measured
            assert first["self_ms"] > 0 and first["total_ms"] >= first["self_ms"]
            names = [f["function"] for f in measured["functions"]]
            assert {"busy", "light", "_process"} <= set(names), names
            selfs = [f["self_ms"] for f in measured["functions"]]
            assert selfs == sorted(selfs, reverse=True)
            few = await ok(
                c, "runtime.profile.capture", {**sid, "seconds": 0.3, "max_functions": 1}
            )
            assert len(few["functions"]) == 1
            log = await ok(c, "runtime.log.read", {**sid, "max_lines": 1000})
            assert not [x for x in log["lines"] if x["text"].startswith("PROFILING")]

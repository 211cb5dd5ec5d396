"""Touching and inspecting a game: input through the engine, the scene tree, time."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from tests.mcp.conftest import Connect, transport_factory
from tests.runtime.test_captures import ok
from tests.support import engines
from tests.support.engines import Engine
from tests.support.servers import ServedProject, serve_project

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]

PROJECT = """\
config_version=CONFIG_VERSION

[application]

config/name="touch"
run/main_scene="res://lab.tscn"

[input]

jump={
"deadzone": 0.5,
"events": [  ]
}
"""

LAB_GD = """\
extends Node2D

var ticks := 0
var speed := 2.5
var label := "hi"
var spot := Vector2(1, 2)
var tint := Color(1, 0, 0, 1)
var box := Rect2(1, 2, 3, 4)
var xf := Transform2D(Vector2(1, 0), Vector2(0, 1), Vector2(3, 4))
var turn := Basis()
var xf3 := Transform()
var rot := Quat(0, 0, 0, 1)
var route := NodePath("Box/Inner")
var items := [1, "two", Vector2(3, 4)]
var table := {"a": 1, "b": [2, 3]}
var odd := {1: "one", "type": "x"}
var huge := 0.0
var count := 3

func add(a, b):
	return a + b

func big():
	return "x".repeat(9000)

func boom():
	var nothing = null
	nothing.explode()

func _process(_delta):
\tticks += 1
\tprint("TICK %d" % ticks)

func _unhandled_input(event):
\tif event is InputEventAction and event.action == "jump":
\t\tprint("JUMP pressed=%s" % event.pressed)
		print("JUMP frame %d" % Engine.get_idle_frames())
\telif event is InputEventKey and event.unicode == 0:
\t\tvar key = OS.get_scancode_string(event.scancode)
\t\tprint("KEY %s pressed=%s shift=%s" % [key, event.pressed, event.shift])
\telif event is InputEventMouseButton:
\t\tvar at = event.position
\t\tprint("CLICK %d at %d,%d pressed=%s" % [event.button_index, at.x, at.y, event.pressed])
\telif event is InputEventMouseMotion:
\t\tprint("MOVE %d,%d" % [event.position.x, event.position.y])
"""

LAB_TSCN = """\
[gd_scene load_steps=2 format=2]

[ext_resource path="res://lab.gd" type="Script" id=1]

[node name="Lab" type="Node2D"]
script = ExtResource( 1 )

[node name="Field" type="LineEdit" parent="."]
margin_right = 200.0
margin_bottom = 24.0

[node name="Box" type="Node2D" parent="."]

[node name="Inner" type="Node2D" parent="Box"]
"""


# The same lab in Godot 4's names (3 -> 4).
GODOT4_NAMES = [
    ("Transform()", "Transform3D()"),
    ("Quat(", "Quaternion("),
    ("Engine.get_idle_frames()", "Engine.get_process_frames()"),
    ("OS.get_scancode_string(event.scancode)", "OS.get_keycode_string(event.keycode)"),
    ("event.shift]", "event.shift_pressed]"),
    # Godot 4's LineEdit is at least 31 px high: keep it clear of the test's clicks.
    ("margin_right = 200.0\nmargin_bottom = 24.0", "offset_left = 300.0\noffset_right = 500.0"),
    ("format=2", "format=3"),
    (
        '[ext_resource path="res://lab.gd" type="Script" id=1]',
        '[ext_resource type="Script" path="res://lab.gd" id="1_lab"]',
    ),
    ("ExtResource( 1 )", 'ExtResource("1_lab")'),
]


def godot3() -> bool:
    return engines.current().major == 3


def truth() -> tuple[str, str]:
    """How the engine prints true and false (Godot 4 in lower case)."""
    return ("True", "False") if godot3() else ("true", "false")


def lab_files(engine: Engine) -> dict[str, str]:
    """project.godot, lab.gd and lab.tscn in the engine's own format and names."""
    files = {
        "project.godot": PROJECT.replace("CONFIG_VERSION", "4" if engine.major == 3 else "5"),
        "lab.gd": LAB_GD,
        "lab.tscn": LAB_TSCN,
    }
    if engine.major == 4:
        for name, text in files.items():
            for old, new in GODOT4_NAMES:
                text = text.replace(old, new)
            files[name] = text
    return files


@pytest.fixture(scope="module")
def touch_env(tmp_path_factory: pytest.TempPathFactory, engine: Engine) -> Iterator[ServedProject]:
    base = tmp_path_factory.mktemp(f"touch-{engine.name}")
    project = base / "project"
    project.mkdir()
    for name, text in lab_files(engine).items():
        (project / name).write_text(text)
    served = serve_project(project, base / "state")
    yield served
    served.http.stop()


@pytest.fixture(
    params=[(t, m) for m in ("headless", "windowed") for t in ("stdio", "http")],
    ids=lambda p: "-".join(p),
)
def touch(request: pytest.FixtureRequest, touch_env: ServedProject) -> Connect:
    """A transport and a game mode: each touch test runs on both, headless and windowed."""
    transport, mode = request.param
    factory = transport_factory(transport, touch_env)
    factory.mode = mode  # type: ignore[attr-defined]
    return factory


async def _lines(c, sid: str, cursor: str | None, needle: str) -> tuple[list[str], str]:
    args = {"session_id": sid, "max_lines": 1000}
    if cursor:
        args["cursor"] = cursor
    page = await ok(c, "runtime.log.read", args)
    return [line["text"] for line in page["lines"] if needle in line["text"]], page["next_cursor"]


async def test_inputs_of_each_kind_reach_the_games_own_scripts(touch):
    with anyio.fail_after(90):
        async with touch() as c:
            sid = (await ok(c, "runtime.session.start", {"mode": touch.mode}))["session"]["id"]
            _, cursor = await _lines(c, sid, None, "")
            sent = await ok(
                c,
                "runtime.input.send",
                {
                    "session_id": sid,
                    "events": [
                        {"type": "action", "action": "jump"},
                        {"type": "wait", "frames": 2},
                        {"type": "key", "key": "A", "pressed": True, "shift": True},
                        {"type": "mouse_button", "button": "right", "x": 40, "y": 30},
                        {"type": "mouse_motion", "x": 50, "y": 60},
                    ],
                },
            )
            assert sent["applied"] == 5 and sent["frame"] > 0
            page = await ok(
                c, "runtime.log.read", {"session_id": sid, "cursor": cursor, "max_lines": 1000}
            )
            said = [line["text"] for line in page["lines"] if not line["text"].startswith("TICK")]
            frames = [int(s.split()[-1]) for s in said if s.startswith("JUMP frame")]
            assert frames[1] == frames[0] + 1, frames  # a tap is released on the next frame
            said = [s for s in said if not s.startswith("JUMP frame")]
            yes, no = truth()
            assert said == [
                f"JUMP pressed={yes}",
                f"JUMP pressed={no}",
                f"KEY A pressed={yes} shift={yes}",
                f"CLICK 2 at 40,30 pressed={yes}",
                f"CLICK 2 at 40,30 pressed={no}",
                "MOVE 50,60",
            ], said
            for bad, why in (
                (
                    {"type": "action", "action": "fly"},
                    "unknown action fly; the project's actions: jump",
                ),
                ({"type": "key", "key": "NoSuchKey"}, "unknown key name NoSuchKey"),
                ({"type": "wait", "frames": 0}, "events[0] is not a valid wait event"),
                ({"type": "teleport"}, "events[0].type must be one of"),
            ):
                r = await c.call_tool("runtime_input_send", {"session_id": sid, "events": [bad]})
                assert r.structured_content["outcome"] == "invalid_argument", r.structured_content
                assert why in r.structured_content["message"], r.structured_content
            await ok(c, "runtime.session.stop", {"session_id": sid})


async def test_pause_step_and_resume_move_the_game_exactly_as_stepped(touch):
    with anyio.fail_after(90):
        async with touch() as c:
            sid = (await ok(c, "runtime.session.start", {"mode": touch.mode}))["session"]["id"]
            paused = await ok(c, "runtime.time.control", {"session_id": sid, "action": "pause"})
            assert paused["paused"] is True
            await anyio.sleep(0.2)  # let a paused frame or two pass: no tick may come
            _, cursor = await _lines(c, sid, None, "")
            # Input still works while paused (the engine's own rules decide who sees it).
            await ok(
                c,
                "runtime.input.send",
                {"session_id": sid, "events": [{"type": "wait", "frames": 3}]},
            )
            stepped = await ok(
                c, "runtime.time.control", {"session_id": sid, "action": "step", "frames": 5}
            )
            assert stepped["paused"] is True and stepped["frame"] > paused["frame"]
            await anyio.sleep(0.2)
            ticks, cursor = await _lines(c, sid, cursor, "TICK")
            assert len(ticks) == 5, ticks
            numbers = [int(t.split()[1]) for t in ticks]
            assert numbers == list(range(numbers[0], numbers[0] + 5))
            scaled = await ok(
                c, "runtime.time.control", {"session_id": sid, "action": "scale", "time_scale": 2.5}
            )
            assert scaled["time_scale"] == 2.5
            resumed = await ok(c, "runtime.time.control", {"session_id": sid, "action": "resume"})
            assert resumed["paused"] is False
            r = await c.call_tool("runtime_time_control", {"session_id": sid, "action": "step"})
            assert r.structured_content["outcome"] == "invalid_argument"
            await ok(c, "runtime.session.stop", {"session_id": sid})


async def test_the_scene_tree_is_listed_depth_first_bounded_and_never_cut_silently(touch):
    with anyio.fail_after(90):
        async with touch() as c:
            sid = (await ok(c, "runtime.session.start", {"mode": touch.mode}))["session"]["id"]
            # §5's listing, every node an entry (§13 collapses runs of alike siblings).
            whole = {"session_id": sid, "root": "/root/Lab", "collapse": False}
            tree = await ok(c, "runtime.scene.tree", whole)
            paths = [n["path"] for n in tree["nodes"]]
            assert paths[:2] == ["/root/Lab", "/root/Lab/Field"]
            assert paths[-2:] == ["/root/Lab/Box", "/root/Lab/Box/Inner"]
            lab = tree["nodes"][0]
            assert (lab["class"], lab["script"], lab["children"]) == ("Node2D", "res://lab.gd", 2)
            field = tree["nodes"][1]
            # Built-in controls' own children are listed too: children agrees with the walk.
            assert field["class"] == "LineEdit" and field["children"] == sum(
                1 for p in paths if p.rsplit("/", 1)[0] == "/root/Lab/Field"
            )
            assert tree["total"] == len(paths) and tree["truncated"] is False
            # Collapsed (the default), the same nodes are counted: no run of 4 here.
            assert await ok(c, "runtime.scene.tree", {**whole, "collapse": True}) == tree
            assert tree["current_scene"] == "/root/Lab"
            small = await ok(c, "runtime.scene.tree", {**whole, "max_nodes": 2})
            assert len(small["nodes"]) == 2 and small["truncated"] is True
            assert small["total"] == tree["total"]
            shallow = await ok(c, "runtime.scene.tree", {"session_id": sid, "depth": 1})
            assert {n["path"] for n in shallow["nodes"]} >= {"/root", "/root/Lab"}
            assert all(n["path"].count("/") <= 2 for n in shallow["nodes"])
            r = await c.call_tool("runtime_scene_tree", {"session_id": sid, "root": "/root/Nope"})
            assert r.structured_content["outcome"] == "not_found"
            await ok(c, "runtime.session.stop", {"session_id": sid})


async def test_values_of_every_type_round_trip_and_methods_answer(touch):
    if touch.transport == "http":  # writes need --allow-runtime-writes over HTTP
        async with touch() as c:
            sid = (await ok(c, "runtime.session.start", {"mode": touch.mode}))["session"]["id"]
            r = await c.call_tool(
                "runtime_node_set",
                {"session_id": sid, "path": "/root/Lab", "values": {"label": "x"}},
            )
            assert r.structured_content["outcome"] == "unavailable"
            assert "runtime writes are disabled" in r.structured_content["message"]
            profile = await ok(c, "server.profile")
            assert profile["availability"]["runtime_node_call"].startswith("unavailable: ")
            got = await ok(
                c,
                "runtime.node.get",
                {"session_id": sid, "path": "/root/Lab", "properties": ["label"]},
            )
            assert got["values"] == {"label": "hi"}
            await ok(c, "runtime.session.stop", {"session_id": sid})
        return
    with anyio.fail_after(90):
        async with touch() as c:
            sid = (await ok(c, "runtime.session.start", {"mode": touch.mode}))["session"]["id"]
            got = await ok(c, "runtime.node.get", {"session_id": sid, "path": "/root/Lab"})
            v = got["values"]
            assert got["class"] == "Node2D" and got["truncated"] is False
            assert v["speed"] == 2.5 and v["label"] == "hi" and v["count"] == 3
            assert v["spot"] == {"type": "Vector2", "x": 1, "y": 2}
            assert v["tint"] == {"type": "Color", "r": 1, "g": 0, "b": 0, "a": 1}
            assert v["box"] == {"type": "Rect2", "x": 1, "y": 2, "w": 3, "h": 4}
            assert v["xf"] == {"type": "Transform2D", "x": [1, 0], "y": [0, 1], "origin": [3, 4]}
            assert v["turn"]["type"] == "Basis" and v["turn"]["x"] == [1, 0, 0]
            # Each engine answers in its own type names (interface §7).
            transform, quat = ("Transform", "Quat") if godot3() else ("Transform3D", "Quaternion")
            assert v["xf3"]["type"] == transform and v["xf3"]["basis"]["type"] == "Basis"
            assert v["rot"] == {"type": quat, "x": 0, "y": 0, "z": 0, "w": 1}
            assert v["route"] == {"type": "NodePath", "path": "Box/Inner"}
            assert v["items"] == [1, "two", {"type": "Vector2", "x": 3, "y": 4}]
            assert v["table"] == {"a": 1, "b": [2, 3]}
            assert v["odd"]["type"] == "Dictionary" and [1, "one"] in v["odd"]["items"]
            assert "position" in v  # the node's stored properties follow the script's
            new = {
                "speed": 7.25,
                "label": "changed",
                "count": 9,
                "spot": {"type": "Vector2", "x": -5.5, "y": 6},
                "tint": {"type": "Color", "r": 0, "g": 0.5, "b": 1, "a": 0.25},
                "box": {"type": "Rect2", "x": 0, "y": 0, "w": 10, "h": 20},
                "xf": {"type": "Transform2D", "x": [0, 1], "y": [-1, 0], "origin": [7, 8]},
                "rot": {"type": "Quaternion", "x": 0, "y": 0, "z": 0, "w": 1},
                "route": {"type": "NodePath", "path": "Field"},
                "items": [{"type": "Vector3", "x": 1, "y": 2, "z": 3}],
                "odd": {"type": "Dictionary", "items": [[2, "two"]]},
                "huge": {"type": "float", "value": "inf"},
                "xf3": {"type": "Transform3D", "basis": v["xf3"]["basis"], "origin": [1, 2, 3]},
            }
            back = (
                await ok(
                    c, "runtime.node.set", {"session_id": sid, "path": "/root/Lab", "values": new}
                )
            )["values"]
            assert back["rot"] == {"type": quat, "x": 0, "y": 0, "z": 0, "w": 1}
            assert back["xf3"]["origin"] == [1, 2, 3] and back["xf3"]["type"] == transform
            for name in (
                "speed",
                "label",
                "count",
                "spot",
                "tint",
                "box",
                "xf",
                "route",
                "items",
                "odd",
                "huge",
            ):
                assert back[name] == new[name], (name, back[name])
            for values, said in (
                ({"nope": 1}, "unknown property nope"),
                ({"spot": "not a vector"}, "wrong type for spot: expected Vector2"),
                ({"spot": {"type": "Gizmo"}}, "unknown type Gizmo"),
            ):
                r = await c.call_tool(
                    "runtime_node_set", {"session_id": sid, "path": "/root/Lab", "values": values}
                )
                assert r.structured_content["outcome"] == "invalid_argument"
                assert said in r.structured_content["message"], r.structured_content
            added = await ok(
                c,
                "runtime.node.call",
                {"session_id": sid, "path": "/root/Lab", "method": "add", "args": [2, 3]},
            )
            assert added["result"] == 5
            r = await c.call_tool(
                "runtime_node_call", {"session_id": sid, "path": "/root/Lab", "method": "boom"}
            )
            body = r.structured_content
            assert body["outcome"] == "failed" and "explode" in body["message"], body
            assert "res://lab.gd:" in body["message"]
            r = await c.call_tool(
                "runtime_node_call", {"session_id": sid, "path": "/root/Lab", "method": "nope"}
            )
            assert r.structured_content["outcome"] == "invalid_argument"
            r = await c.call_tool("runtime_node_get", {"session_id": sid, "path": "/root/Nope"})
            assert r.structured_content["outcome"] == "not_found"
            long = "Q" * 1000  # the game repeats what it was asked; the answer cuts it at 200
            for tool, args, said in (
                ("runtime_node_get", {"path": "/root/" + long}, f"no node at /root/{long[:194]}…"),
                ("runtime_node_set", {"path": "/root/Lab", "values": {long: 1}}, long[:200] + "…"),
            ):
                r = await c.call_tool(tool, {"session_id": sid, **args})
                message = r.structured_content["message"]
                assert said in message and long[:201] not in message, message
            await ok(c, "runtime.session.stop", {"session_id": sid})


async def test_a_wait_on_a_log_line_from_a_cursor_sees_what_the_input_just_printed(touch):
    """input.send, then wait {log}: the line may already be printed (same frame); with the
    cursor read before the input, it still counts. Without one, only later lines count."""
    with anyio.fail_after(90):
        async with touch() as c:
            sid = (await ok(c, "runtime.session.start", {"mode": touch.mode}))["session"]["id"]
            _, cursor = await _lines(c, sid, None, "")
            jump = {"session_id": sid, "events": [{"type": "action", "action": "jump"}]}
            await ok(c, "runtime.input.send", jump)
            line = f"JUMP pressed={truth()[0]}"
            await _until_logged(c, sid, cursor, line)
            until = {"log": line, "cursor": cursor}
            hit = await ok(c, "runtime.wait", {"session_id": sid, "until": until})
            assert hit["value"] == line and hit["frame"] > 0
            late = await c.call_tool(
                "runtime_wait",
                {"session_id": sid, "until": {"log": line}, "timeout_seconds": 0.5},
            )
            assert late.structured_content["outcome"] == "timeout", late.structured_content
            for bad in ("nonsense", cursor + "!"):
                r = await c.call_tool(
                    "runtime_wait",
                    {
                        "session_id": sid,
                        "until": {"log": line, "cursor": bad},
                        "timeout_seconds": 2,
                    },
                )
                assert r.structured_content == {
                    "outcome": "invalid_argument",
                    "message": "invalid cursor",
                }, (bad, r.structured_content)
            await ok(c, "runtime.session.stop", {"session_id": sid})


async def _until_logged(c, sid: str, cursor: str, text: str) -> None:
    while not (await _lines(c, sid, cursor, text))[0]:
        await anyio.sleep(0.05)


async def test_a_wait_never_delays_the_call_that_satisfies_it(touch):
    with anyio.fail_after(90):
        async with touch() as c:
            sid = (await ok(c, "runtime.session.start", {"mode": touch.mode}))["session"]["id"]
            waited: dict = {}

            async def wait_for_jump() -> None:
                waited["log"] = await ok(
                    c,
                    "runtime.wait",
                    {
                        "session_id": sid,
                        "until": {"log": f"JUMP pressed={truth()[0]}"},
                        "timeout_seconds": 20,
                    },
                )

            async with anyio.create_task_group() as tg:
                tg.start_soon(wait_for_jump)
                await anyio.sleep(0.3)
                await ok(
                    c,
                    "runtime.input.send",
                    {"session_id": sid, "events": [{"type": "action", "action": "jump"}]},
                )
            assert waited["log"]["value"] == f"JUMP pressed={truth()[0]}"
            frames = await ok(c, "runtime.wait", {"session_id": sid, "until": {"frames": 10}})
            assert frames["frame"] > 0
            node = await ok(
                c, "runtime.wait", {"session_id": sid, "until": {"node": "/root/Lab/Box"}}
            )
            assert node["frame"] > 0
            r = await c.call_tool(
                "runtime_wait",
                {
                    "session_id": sid,
                    "until": {"node": "/root/Lab", "property": "label", "equals": "never"},
                    "timeout_seconds": 0.5,
                },
            )
            body = r.structured_content
            assert body["outcome"] == "timeout" and body["value"] == "hi", body
            r = await c.call_tool("runtime_wait", {"session_id": sid, "until": {"bogus": 1}})
            assert r.structured_content["outcome"] == "invalid_argument"
            await ok(c, "runtime.session.stop", {"session_id": sid})


async def test_no_answer_passes_max_output_bytes(touch_env, tmp_path):
    import json

    from tests.support.servers import stdio_client

    limit = 3000
    with anyio.fail_after(90):
        async with stdio_client(
            touch_env.project, tmp_path / "state", "--max-output-bytes", str(limit)
        ) as c:
            sid = (await ok(c, "runtime.session.start", {"mode": "headless"}))["session"]["id"]
            got = await ok(c, "runtime.node.get", {"session_id": sid, "path": "/root/Lab"})
            assert got["truncated"] is True and len(json.dumps(got)) <= limit
            tree = await ok(c, "runtime.scene.tree", {"session_id": sid, "max_nodes": 5000})
            assert len(json.dumps(tree)) <= limit
            r = await c.call_tool(
                "runtime_node_call", {"session_id": sid, "path": "/root/Lab", "method": "big"}
            )
            # §4's ladder: a value too large for any answer stands as a marker of its size.
            assert r.structured_content == {
                "outcome": "ok",
                "result": {"type": "truncated", "bytes": 9002},
            }, r.structured_content
            await ok(c, "runtime.session.stop", {"session_id": sid})


async def test_typed_text_reaches_a_focused_line_edit(touch_env):
    # stdio: focusing the field takes runtime.node.call, off over HTTP without the flag
    with anyio.fail_after(60):
        async with touch_env.connect("stdio") as c:
            sid = (await ok(c, "runtime.session.start", {"mode": "headless"}))["session"]["id"]
            field = "/root/Lab/Field"
            await ok(
                c, "runtime.node.call", {"session_id": sid, "path": field, "method": "grab_focus"}
            )
            sent = await ok(
                c,
                "runtime.input.send",
                {"session_id": sid, "events": [{"type": "text", "text": "héllo!"}]},
            )
            assert sent["applied"] == 1
            got = await ok(
                c, "runtime.node.get", {"session_id": sid, "path": field, "properties": ["text"]}
            )
            assert got["values"] == {"text": "héllo!"}
            await ok(c, "runtime.session.stop", {"session_id": sid})

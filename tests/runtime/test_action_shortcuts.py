"""An action event presses a button whose shortcut is that action, as a player's key would,
and the game's own `_input` and `_unhandled_input` still see exactly one press of it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.runtime.test_captures import ok
from tests.support.engines import Engine
from tests.support.servers import stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]

ROOT = "/root/Root"
WATCH = "/root/Root/Watch"

KEY3 = (
    'Object(InputEventKey,"resource_local_to_scene":false,"resource_name":"","device":0,'
    '"alt":false,"shift":false,"control":false,"meta":false,"command":false,"pressed":false,'
    '"scancode":16777221,"physical_scancode":0,"unicode":0,"echo":false,"script":null)'
)
KEY4 = (
    'Object(InputEventKey,"resource_local_to_scene":false,"resource_name":"","device":-1,'
    '"window_id":0,"alt_pressed":false,"shift_pressed":false,"ctrl_pressed":false,'
    '"meta_pressed":false,"pressed":false,"keycode":4194309,"physical_keycode":0,'
    '"key_label":0,"unicode":0,"location":0,"echo":false,"script":null)'
)

# Three buttons: Start's shortcut is start_game (Enter in the map), Bare's an action with no
# events at all; Taken's action is handled in Watch's `_input`, so a player's press of it would
# never reach a shortcut. Watch comes after them in the tree: its `_unhandled_input` runs first.
LAB_GD = """\
extends Node2D

var start_presses = 0
var bare_presses = 0
var taken_presses = 0

func _ready():
\tadd_child(_button("Start", "start_game"))
\tadd_child(_button("Bare", "bare"))
\tadd_child(_button("Taken", "taken"))
\tvar watch = Node.new()
\twatch.name = "Watch"
\twatch.set_script(load("res://watch.gd"))
\tadd_child(watch)

func _button(named, action):
\tvar b = Button.new()
\tb.name = named
\tvar ev = InputEventAction.new()
\tev.action = action
SHORTCUT
\treturn b

func _pressed(named):
\tif named == "Start":
\t\tstart_presses += 1
\telif named == "Bare":
\t\tbare_presses += 1
\telse:
\t\ttaken_presses += 1
"""

SHORTCUT3 = """\
\tvar sc = ShortCut.new()
\tsc.shortcut = ev
\tb.shortcut = sc
\tb.connect("pressed", self, "_pressed", [named])"""

SHORTCUT4 = """\
\tvar sc = Shortcut.new()
\tsc.events = [ev]
\tb.shortcut = sc
\tb.pressed.connect(_pressed.bind(named))"""

WATCH_GD = """\
extends Node

var input_presses = 0
var unhandled_presses = 0
var held = false
var soft = 0.0

func _process(_delta):
\theld = Input.is_action_pressed("start_game")
\tsoft = Input.get_action_strength("soft")

func _input(event):
\tif event.is_action_pressed("start_game"):
\t\tinput_presses += 1
\tif event.is_action("taken"):  # handled before any shortcut sees it
\t\tget_viewport().set_input_as_handled()

func _unhandled_input(event):
\tif event.is_action_pressed("start_game"):
\t\tunhandled_presses += 1
"""


def project_text(engine: Engine) -> str:
    four = engine.major == 4
    bare = '{\n"deadzone": 0.5,\n"events": [  ]\n}'
    start = '{\n"deadzone": 0.5,\n"events": [ ' + (KEY4 if four else KEY3) + " ]\n}"
    return (
        f"config_version={5 if four else 4}\n\n[application]\n\n"
        f'config/name="shortcuts"\nrun/main_scene="res://lab.tscn"\n\n[input]\n\n'
        f"start_game={start}\nbare={bare}\nsoft={bare}\ntaken={bare}\n"
    )


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, engine: Engine) -> Iterator[Path]:
    project = tmp_path_factory.mktemp(f"shortcuts-{engine.name}") / "project"
    project.mkdir()
    (project / "project.godot").write_text(project_text(engine))
    shortcut = SHORTCUT4 if engine.major == 4 else SHORTCUT3
    (project / "lab.gd").write_text(LAB_GD.replace("SHORTCUT", shortcut))
    (project / "watch.gd").write_text(WATCH_GD)
    (project / "lab.tscn").write_text(engine.scene("lab.gd"))
    yield project


async def send(c, sid: str, *events: dict[str, Any]) -> None:
    sent = await ok(c, "runtime.input.send", {"session_id": sid, "events": list(events)})
    assert sent["applied"] == len(events)


async def until(c, sid: str, node: str, prop: str, value: Any) -> None:
    spec = {"node": node, "property": prop, "equals": value}
    await ok(c, "runtime.wait", {"session_id": sid, "until": spec, "timeout_seconds": 30})


async def values(c, sid: str, node: str, props: list[str]) -> dict[str, Any]:
    got = await ok(c, "runtime.node.get", {"session_id": sid, "path": node, "properties": props})
    return got["values"]


async def counts(c, sid: str) -> dict[str, Any]:
    pressed = await values(c, sid, ROOT, ["start_presses", "bare_presses", "taken_presses"])
    seen = await values(c, sid, WATCH, ["input_presses", "unhandled_presses"])
    return pressed | seen


async def settled_counts(c, sid: str) -> dict[str, Any]:
    """:func:`counts` two frames on, so that an extra press, were there one, has landed."""
    await send(c, sid, {"type": "wait", "frames": 2})
    return await counts(c, sid)


def presses(start: int, bare: int, seen: int) -> dict[str, Any]:
    """The counts with no taken press: ``seen`` is each of the watcher's two handlers'."""
    return {
        "start_presses": start,
        "bare_presses": bare,
        "taken_presses": 0,
        "input_presses": seen,
        "unhandled_presses": seen,
    }


@pytest.mark.parametrize("mode", ["headless", "windowed"])
async def test_an_action_presses_its_shortcut_once_and_each_handler_sees_it_once(
    lab: Path, tmp_path: Path, mode: str
) -> None:
    with anyio.fail_after(180):
        async with stdio_client(lab, tmp_path / "state") as c:
            sid = (await ok(c, "runtime.session.start", {"mode": mode}))["session"]["id"]
            await until(c, sid, WATCH, "held", False)  # the lab is up

            # A tap: the button is pressed once, each handler counts one press.
            await send(
                c, sid, {"type": "action", "action": "start_game"}, {"type": "wait", "frames": 1}
            )
            await until(c, sid, ROOT, "start_presses", 1)
            assert await settled_counts(c, sid) == presses(start=1, bare=0, seen=1)

            # Held, then released: the action is pressed while held, as before, and the
            # press and release make one more button press, no more.
            await send(c, sid, {"type": "action", "action": "start_game", "pressed": True})
            await until(c, sid, WATCH, "held", True)
            await send(c, sid, {"type": "action", "action": "start_game", "pressed": False})
            await until(c, sid, WATCH, "held", False)
            await until(c, sid, ROOT, "start_presses", 2)
            assert await settled_counts(c, sid) == presses(start=2, bare=0, seen=2)

            # An action with no events in the map presses its own button only.
            await send(c, sid, {"type": "action", "action": "bare"})
            await until(c, sid, ROOT, "bare_presses", 1)
            assert await settled_counts(c, sid) == presses(start=2, bare=1, seen=2)

            # An action a handler took reaches no shortcut: the button stays unpressed.
            await send(c, sid, {"type": "action", "action": "taken"}, {"type": "wait", "frames": 2})
            assert (await counts(c, sid))["taken_presses"] == 0

            # A half-strength action still reads half strength.
            soft = {"type": "action", "action": "soft", "strength": 0.5}
            await send(c, sid, soft | {"pressed": True})
            await until(c, sid, WATCH, "soft", 0.5)
            await send(c, sid, soft | {"pressed": False})
            await until(c, sid, WATCH, "soft", 0.0)
            await ok(c, "runtime.session.stop", {"session_id": sid})

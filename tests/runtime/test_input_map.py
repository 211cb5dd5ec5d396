"""A real game's input map: ``project.info`` lists each action's keys, buttons and axes as
``runtime.input.send`` takes them, and sending what it lists presses the action in the game."""

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

# Each event as that engine's editor writes it: Godot 3 keys by scancode (physical_scancode
# from 3.3), Godot 4 keys by physical_keycode and events of every device (-1).
KEY3 = (
    'Object(InputEventKey,"resource_local_to_scene":false,"resource_name":"","device":0,'
    '"alt":false,"shift":false,"control":false,"meta":false,"command":false,"pressed":false,'
    '"scancode":{code},"physical_scancode":{place},"unicode":0,"echo":false,"script":null)'
)
KEY4 = (
    'Object(InputEventKey,"resource_local_to_scene":false,"resource_name":"","device":-1,'
    '"window_id":0,"alt_pressed":false,"shift_pressed":false,"ctrl_pressed":false,'
    '"meta_pressed":false,"pressed":false,"keycode":{code},"physical_keycode":{place},'
    '"key_label":0,"unicode":0,"location":0,"echo":false,"script":null)'
)
BUTTON = (
    'Object(InputEventJoypadButton,"resource_local_to_scene":false,"resource_name":"",'
    '"device":{device},"button_index":{button},"pressure":0.0,"pressed":false,"script":null)'
)
MOTION = (
    'Object(InputEventJoypadMotion,"resource_local_to_scene":false,"resource_name":"",'
    '"device":{device},"axis":{axis},"axis_value":{value},"script":null)'
)

PAD_GD = """\
extends Node2D

var jumping = false
var second = false
var leaning = false
var dashing = false
var presses = 0

func _process(_delta):
\tjumping = Input.is_action_pressed("jump")
\tsecond = Input.is_action_pressed("p2_jump")
\tleaning = Input.is_action_pressed("lean_left")
\tdashing = Input.is_action_pressed("dash")

func _input(event):
\tif event.is_action_pressed("jump"):
\t\tpresses += 1
"""


def action(events: list[str]) -> str:
    return '{\n"deadzone": 0.5,\n"events": [ ' + "\n, ".join(events) + " ]\n}"


def project_text(engine: Engine) -> str:
    four = engine.major == 4
    key = KEY4 if four else KEY3
    every = -1 if four else 0
    space, shift = (32, 4194325) if four else (32, 16777237)
    jump = [key.format(code=space, place=0), BUTTON.format(device=every, button=0)]
    dash = [key.format(code=0, place=shift)]  # by its place only (3.3+ and 4)
    actions = {
        "jump": jump,
        "p2_jump": [BUTTON.format(device=1, button=0)],  # the second player's joypad
        "lean_left": [MOTION.format(device=every, axis=0, value="-1.0")],
        "dash": dash,
    }
    inputs = "\n".join(f"{name}={action(events)}" for name, events in actions.items())
    return (
        f"config_version={5 if four else 4}\n\n[application]\n\n"
        f'config/name="pad"\nrun/main_scene="res://pad.tscn"\n\n[input]\n\n{inputs}\n'
    )


def expected_map(engine: Engine) -> dict[str, list[dict[str, Any]]]:
    # Godot 3.2 knows no physical_scancode: its dash has no key the engine would match.
    by_place = "physical_scancode" in engine.profile.key_codes or engine.major == 4
    return {
        "jump": [{"type": "key", "key": "Space"}, {"type": "joypad_button", "button": 0}],
        "p2_jump": [{"type": "unknown", "class": "InputEventJoypadButton", "device": 1}],
        "lean_left": [{"type": "joypad_motion", "axis": 0, "value": -1.0}],
        "dash": [
            {"type": "key", "key": "Shift"}
            if by_place
            else {"type": "unknown", "class": "InputEventKey"}
        ],
    }


@pytest.fixture(scope="module")
def pad_project(tmp_path_factory: pytest.TempPathFactory, engine: Engine) -> Iterator[Path]:
    project = tmp_path_factory.mktemp(f"pad-{engine.name}") / "project"
    project.mkdir()
    (project / "project.godot").write_text(project_text(engine))
    (project / "pad.gd").write_text(PAD_GD)
    (project / "pad.tscn").write_text(engine.scene("pad.gd"))
    yield project


async def send(c, sid: str, *events: dict[str, Any]) -> None:
    sent = await ok(c, "runtime.input.send", {"session_id": sid, "events": list(events)})
    assert sent["applied"] == len(events)


async def until(c, sid: str, prop: str, value: Any) -> None:
    """Until the game's own script has seen ``prop`` become ``value``."""
    spec = {"node": ROOT, "property": prop, "equals": value}
    await ok(c, "runtime.wait", {"session_id": sid, "until": spec, "timeout_seconds": 30})


async def values(c, sid: str) -> dict[str, Any]:
    props = ["jumping", "second", "leaning", "dashing", "presses"]
    got = await ok(c, "runtime.node.get", {"session_id": sid, "path": ROOT, "properties": props})
    return got["values"]


@pytest.mark.parametrize("mode", ["headless", "windowed"])
async def test_what_the_map_lists_presses_the_action_in_the_game(
    pad_project: Path, engine: Engine, tmp_path: Path, mode: str
) -> None:
    with anyio.fail_after(180):
        async with stdio_client(pad_project, tmp_path / "state") as c:
            listed = (await ok(c, "project.info"))["input_map"]
            assert listed == expected_map(engine)
            sid = (await ok(c, "runtime.session.start", {"mode": mode}))["session"]["id"]
            key, button = listed["jump"]

            # The joypad button as listed, held: jump is pressed, and the second player's
            # jump (the same button on joypad 1) is not, in the same frame.
            await send(c, sid, button | {"pressed": True})
            await until(c, sid, "jumping", True)
            assert await values(c, sid) == {
                "jumping": True,
                "second": False,
                "leaning": False,
                "dashing": False,
                "presses": 1,
            }
            await send(c, sid, button | {"pressed": False})
            await until(c, sid, "jumping", False)
            await send(c, sid, button)  # a tap: pressed, then released the next frame
            await until(c, sid, "presses", 2)
            await until(c, sid, "jumping", False)

            # The axis as listed stays where it was moved until it is moved back.
            await send(c, sid, listed["lean_left"][0])
            await until(c, sid, "leaning", True)
            await send(c, sid, {"type": "joypad_motion", "axis": 0, "value": 0})
            await until(c, sid, "leaning", False)

            # The key as listed.
            await send(c, sid, key | {"pressed": True})
            await until(c, sid, "jumping", True)
            await send(c, sid, key | {"pressed": False})
            await until(c, sid, "jumping", False)
            assert (await values(c, sid))["presses"] == 3

            (dash,) = listed["dash"]
            if dash["type"] == "key":  # a key named by its place (not on Godot 3.2)
                await send(c, sid, dash | {"pressed": True})
                await until(c, sid, "dashing", True)
                await send(c, sid, dash | {"pressed": False})
                await until(c, sid, "dashing", False)
            await ok(c, "runtime.session.stop", {"session_id": sid})

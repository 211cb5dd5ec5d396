"""A project's input map as ``project.info`` answers it: project.godot's ``[input]`` in the
formats Godot 3.2, 3.6 and 4.6 write, hostile files, and the events ``runtime.input.send`` takes
to press what the map lists."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import anyio
import pytest

from godot_mcp.engine.process.locate import major_of
from godot_mcp.engine.profile import (
    GODOT_3_2,
    GODOT_3_5,
    GODOT_4,
    GODOT_4_0,
    EngineProfile,
    profile_of,
)
from godot_mcp.engine.project.inputmap import MAX_EVENTS, read_input_map
from godot_mcp.engine.project.keys import KEYCODES, SCANCODES
from godot_mcp.engine.project.presets import parse_config
from godot_mcp.errors import InvalidArgument
from godot_mcp.features.core.service import CoreService
from godot_mcp.features.core.tools import project_info
from godot_mcp.features.game.tools import check_events
from godot_mcp.features.services import Call
from godot_mcp.mcp.budget import Budget
from godot_mcp.runtime.context import Runtime
from tests.runtime.test_fake_engine import call, fake_server, ok
from tests.support.engines import Engine

# What Godot 3.2.3's editor writes (ProjectSettings.save(), checked with the live test below):
# keys by scancode, modifiers as shift/control/meta/command, "doubleclick".
GODOT32 = """\
config_version=4

[application]

config/name="Three"

[input]

jump={
"deadzone": 0.5,
"events": [ Object(InputEventKey,"resource_local_to_scene":false,"resource_name":"","device":0,\
"alt":false,"shift":false,"control":false,"meta":false,"command":false,"pressed":false,\
"scancode":32,"unicode":0,"echo":false,"script":null)
, Object(InputEventJoypadButton,"resource_local_to_scene":false,"resource_name":"","device":0,\
"button_index":0,"pressure":0.0,"pressed":false,"script":null)
 ]
}
move_left={
"deadzone": 0.5,
"events": [ Object(InputEventKey,"resource_local_to_scene":false,"resource_name":"","device":0,\
"alt":false,"shift":false,"control":false,"meta":false,"command":false,"pressed":false,\
"scancode":16777231,"unicode":0,"echo":false,"script":null)
, Object(InputEventJoypadMotion,"resource_local_to_scene":false,"resource_name":"","device":0,\
"axis":0,"axis_value":-1.0,"script":null)
 ]
}
save={
"deadzone": 0.5,
"events": [ Object(InputEventKey,"resource_local_to_scene":false,"resource_name":"","device":0,\
"alt":false,"shift":true,"control":true,"meta":false,"command":true,"pressed":false,\
"scancode":83,"unicode":0,"echo":false,"script":null)
 ]
}
fire={
"deadzone": 0.5,
"events": [ Object(InputEventMouseButton,"resource_local_to_scene":false,"resource_name":"",\
"device":0,"alt":false,"shift":false,"control":false,"meta":false,"command":false,\
"button_mask":0,"position":Vector2( 0, 0 ),"global_position":Vector2( 0, 0 ),"factor":1.0,\
"button_index":2,"pressed":false,"doubleclick":true,"script":null)
, Object(InputEventScreenTouch,"resource_local_to_scene":false,"resource_name":"","device":0,\
"index":0,"position":Vector2( 0, 0 ),"pressed":false,"script":null)
 ]
}
p2_up={
"deadzone": 0.5,
"events": [ Object(InputEventKey,"resource_local_to_scene":false,"resource_name":"","device":0,\
"alt":false,"shift":false,"control":false,"meta":false,"command":false,"pressed":false,\
"scancode":16777232,"unicode":0,"echo":false,"script":null)
, Object(InputEventJoypadButton,"resource_local_to_scene":false,"resource_name":"","device":1,\
"button_index":12,"pressure":0.0,"pressed":false,"script":null)
 ]
}
ui_cancel={
"deadzone": 0.5,
"events": [ Object(InputEventKey,"resource_local_to_scene":false,"resource_name":"","device":0,\
"alt":false,"shift":false,"control":false,"meta":false,"command":false,"pressed":false,\
"scancode":16777217,"unicode":0,"echo":false,"script":null)
 ]
}
"""

# Godot 3.6.2 adds physical_scancode (0 unless the key was chosen by its place).
GODOT36 = """\
config_version=4

[input]

dash={
"deadzone": 0.5,
"events": [ Object(InputEventKey,"resource_local_to_scene":false,"resource_name":"","device":0,\
"alt":false,"shift":false,"control":false,"meta":false,"command":false,"pressed":false,\
"scancode":0,"physical_scancode":16777237,"unicode":0,"echo":false,"script":null)
, Object(InputEventKey,"resource_local_to_scene":false,"resource_name":"","device":0,\
"alt":false,"shift":false,"control":false,"meta":false,"command":false,"pressed":false,\
"scancode":16777238,"physical_scancode":0,"unicode":0,"echo":false,"script":null)
 ]
}
"""

# Godot 4.6.3: keycode, physical_keycode or key_label; *_pressed modifiers; device -1 (all)
# from the editor; command_or_control_autoremap in place of ctrl/meta; StringName actions.
GODOT46 = """\
config_version=5

[input]

jump={
"deadzone": 0.2,
"events": [Object(InputEventKey,"resource_local_to_scene":false,"resource_name":"","device":-1,\
"window_id":0,"alt_pressed":false,"shift_pressed":false,"ctrl_pressed":false,"meta_pressed":false,\
"pressed":false,"keycode":0,"physical_keycode":32,"key_label":0,"unicode":32,"location":0,\
"echo":false,"script":null)
, Object(InputEventJoypadButton,"resource_local_to_scene":false,"resource_name":"","device":-1,\
"button_index":0,"pressure":0.0,"pressed":true,"script":null)
]
}
menu={
"deadzone": 0.5,
"events": [Object(InputEventKey,"resource_local_to_scene":false,"resource_name":"","device":0,\
"window_id":0,"alt_pressed":false,"shift_pressed":false,"ctrl_pressed":false,"meta_pressed":false,\
"pressed":false,"keycode":4194305,"physical_keycode":0,"key_label":0,"unicode":0,"location":0,\
"echo":false,"script":null)
, Object(InputEventKey,"resource_local_to_scene":false,"resource_name":"","device":0,\
"window_id":0,"command_or_control_autoremap":true,"alt_pressed":false,"shift_pressed":false,\
"pressed":false,"keycode":0,"physical_keycode":81,"key_label":0,"unicode":0,"location":0,\
"echo":false,"script":null)
, Object(InputEventKey,"resource_local_to_scene":false,"resource_name":"","device":0,\
"window_id":0,"alt_pressed":true,"shift_pressed":false,"ctrl_pressed":false,"meta_pressed":false,\
"pressed":false,"keycode":0,"physical_keycode":0,"key_label":65,"unicode":0,"location":0,\
"echo":false,"script":null)
, Object(InputEventKey,"resource_local_to_scene":false,"resource_name":"","device":0,\
"window_id":0,"alt_pressed":false,"shift_pressed":false,"ctrl_pressed":false,"meta_pressed":false,\
"pressed":false,"keycode":4194325,"physical_keycode":0,"key_label":0,"unicode":0,"location":0,\
"echo":false,"script":null)
, Object(InputEventAction,"resource_local_to_scene":false,"resource_name":"","device":0,\
"action":&"jump","pressed":false,"strength":1.0,"event_index":-1,"script":null)
, Object(InputEventMagnifyGesture,"resource_local_to_scene":false,"resource_name":"","device":0,\
"window_id":0,"alt_pressed":false,"shift_pressed":false,"ctrl_pressed":false,"meta_pressed":false,\
"position":Vector2(0, 0),"factor":1.0,"script":null)
]
}
stick={
"deadzone": 0.2,
"events": [Object(InputEventJoypadMotion,"resource_local_to_scene":false,"resource_name":"",\
"device":0,"axis":5,"axis_value":1.0,"script":null)
, Object(InputEventMouseButton,"resource_local_to_scene":false,"resource_name":"","device":-1,\
"window_id":0,"alt_pressed":false,"shift_pressed":false,"ctrl_pressed":false,"meta_pressed":false,\
"button_mask":0,"position":Vector2(0, 0),"global_position":Vector2(0, 0),"factor":1.0,\
"button_index":4,"canceled":false,"pressed":false,"double_click":false,"script":null)
]
}
"""


def input_map(text: str, engine: EngineProfile | None = None) -> dict[str, list[dict[str, Any]]]:
    """The map of ``text`` for ``engine`` (default: the newest of the file's major)."""
    if engine is None:
        engine = GODOT_4 if "config_version=5" in text else GODOT_3_5
    return read_input_map(parse_config(text), engine)


def test_a_godot_3_2_map_names_keys_by_scancode_and_says_what_it_cannot_send() -> None:
    assert input_map(GODOT32) == {
        "jump": [{"type": "key", "key": "Space"}, {"type": "joypad_button", "button": 0}],
        "move_left": [
            {"type": "key", "key": "Left"},
            {"type": "joypad_motion", "axis": 0, "value": -1.0},
        ],
        # command is the editor's own note of Ctrl on Linux: the engine matches control.
        "save": [{"type": "key", "key": "S", "shift": True, "ctrl": True}],
        "fire": [
            {"type": "mouse_button", "button": "right", "double_click": True},
            {"type": "unknown", "class": "InputEventScreenTouch"},
        ],
        # A second player's joypad: device 0, which runtime.input.send plays, does not match it.
        "p2_up": [
            {"type": "key", "key": "Up"},
            {"type": "unknown", "class": "InputEventJoypadButton", "device": 1},
        ],
        # A built-in action is in the file only when the project changed it.
        "ui_cancel": [{"type": "key", "key": "Escape"}],
    }


def test_a_godot_3_6_map_names_a_key_by_its_physical_scancode_when_it_has_no_scancode() -> None:
    assert input_map(GODOT36) == {
        "dash": [{"type": "key", "key": "Shift"}, {"type": "key", "key": "Control"}],
    }
    # Godot 3.2 knows no physical_scancode: that key matches nothing there.
    assert input_map(GODOT36, GODOT_3_2) == {
        "dash": [{"type": "unknown", "class": "InputEventKey"}, {"type": "key", "key": "Control"}],
    }


def test_keys_in_the_other_majors_codes_match_nothing_on_the_engine_that_runs() -> None:
    unknown = {"type": "unknown", "class": "InputEventKey"}
    assert input_map(GODOT36, GODOT_4) == {"dash": [unknown, unknown]}
    on_three = input_map(GODOT46, GODOT_3_2)
    assert on_three["jump"] == [unknown, {"type": "joypad_button", "button": 0}]
    assert on_three["menu"][:4] == [unknown] * 4
    assert input_map(GODOT46, GODOT_4_0) == input_map(GODOT46)


def test_a_godot_4_map_names_keys_as_godot_4_does_by_the_code_the_engine_matches() -> None:
    assert input_map(GODOT46) == {
        "jump": [{"type": "key", "key": "Space"}, {"type": "joypad_button", "button": 0}],
        "menu": [
            {"type": "key", "key": "Escape"},
            {"type": "key", "key": "Q", "ctrl": True},  # command_or_control: Ctrl on Linux
            {"type": "key", "key": "A", "alt": True},  # by its label
            {"type": "key", "key": "Shift"},  # Godot 3's Shift is another code
            {"type": "action", "action": "jump"},
            {"type": "unknown", "class": "InputEventMagnifyGesture"},
        ],
        "stick": [
            {"type": "joypad_motion", "axis": 5, "value": 1.0},
            {"type": "mouse_button", "button": "wheel_up"},
        ],
    }
    assert all(type(e.get("action", "")) is str for e in input_map(GODOT46)["menu"])


def test_each_engines_key_tables_name_their_own_codes() -> None:
    assert (SCANCODES[32], SCANCODES[65], SCANCODES[1 << 24 | 22], SCANCODES[255]) == (
        "Space",
        "A",
        "Control",
        "Ydiaeresis",
    )
    assert (KEYCODES[32], KEYCODES[65], KEYCODES[1 << 22 | 22], KEYCODES[1 << 22 | 62]) == (
        "Space",
        "A",
        "Ctrl",
        "F35",
    )
    assert (len(SCANCODES), len(KEYCODES)) == (240, 190)
    for table in (SCANCODES, KEYCODES):  # a name stands for one code: it can be sent back
        assert len(set(map(str.lower, table.values()))) == len(table)
    assert 97 not in SCANCODES and 97 not in KEYCODES  # letters are their upper-case codes


def events(*objects: str) -> str:
    """A project whose action ``a`` holds these events."""
    return '[input]\n\na={\n"deadzone": 0.5,\n"events": [ ' + ", ".join(objects) + " ]\n}\n"


@pytest.mark.parametrize(
    ("event", "listed"),
    [
        ('Object(InputEventKey,"scancode":97)', "InputEventKey"),  # lower case: no key of 3's
        ('Object(InputEventKey,"keycode":4194815)', "InputEventKey"),  # no name
        ('Object(InputEventKey,"scancode":33554464)', "InputEventKey"),  # a modifier bit in it
        ('Object(InputEventKey,"keycode":0,"physical_keycode":0)', "InputEventKey"),
        ("Object(InputEventKey)", "InputEventKey"),
        ('Object(InputEventKey,"scancode":"32")', "InputEventKey"),
        ('Object(InputEventKey,"scancode":32.0)', "InputEventKey"),
        ('Object(InputEventKey,"scancode":true)', "InputEventKey"),
        ('Object(InputEventKey,"scancode":32,"device":3)', "InputEventKey"),
        ('Object(InputEventMouseButton,"button_index":8)', "InputEventMouseButton"),
        (
            'Object(InputEventMouseButton,"button_index":1,"ctrl_pressed":true)',
            "InputEventMouseButton",
        ),
        ('Object(InputEventJoypadButton,"button_index":128)', "InputEventJoypadButton"),
        ('Object(InputEventJoypadButton,"button_index":-1)', "InputEventJoypadButton"),
        ('Object(InputEventJoypadButton,"button_index":1,"device":2)', "InputEventJoypadButton"),
        ('Object(InputEventJoypadMotion,"axis":10,"axis_value":1.0)', "InputEventJoypadMotion"),
        ('Object(InputEventJoypadMotion,"axis":1,"axis_value":nan)', "InputEventJoypadMotion"),
        ('Object(InputEventJoypadMotion,"axis":1,"axis_value":"1")', "InputEventJoypadMotion"),
        ('Object(InputEventAction,"action":"")', "InputEventAction"),
        ('Object(InputEventAction,"action":7)', "InputEventAction"),
        ('Object(InputEventMIDI,"channel":1)', "InputEventMIDI"),
        ('Object(InputEventPanGesture,"delta":Vector2( 1, 0 ))', "InputEventPanGesture"),
        ('Object(InputEventScreenDrag,"index":0)', "InputEventScreenDrag"),
        ('Object(InputEventMouseMotion,"button_mask":1)', "InputEventMouseMotion"),
    ],
)
@pytest.mark.parametrize("profile", [GODOT_3_5, GODOT_4], ids=["godot3", "godot4"])
def test_an_event_runtime_input_send_cannot_make_is_listed_as_unknown_by_its_class(
    event: str, listed: str, profile: EngineProfile
) -> None:
    unknown: dict[str, Any] = {"type": "unknown", "class": listed}
    if '"device":' in event:  # bound to another player's device: said, as why it is unknown
        unknown["device"] = int(event.split('"device":')[1].rstrip(")"))
    assert input_map(events(event), profile) == {"a": [unknown]}


def test_what_the_engine_would_not_load_as_an_event_is_no_event() -> None:
    text = events(
        "1",
        '"Space"',
        "null",
        "[ 1, 2 ]",
        '{ "scancode": 32 }',
        'Object(Node,"name":"x")',
        'Object(Resource,"resource_name":"")',
        f"Object(InputEvent{'X' * 100})",
        'Object(InputEventKey,"scancode":32)',
    )
    assert input_map(text) == {"a": [{"type": "key", "key": "Space"}]}


@pytest.mark.parametrize(
    "value",
    [
        "5",
        '"jump"',
        "null",
        "[ 1 ]",
        "{}",
        '{ "deadzone": 0.5 }',
        '{ "events": 3 }',
        "Vector2( 1, 2 )",
    ],
)
def test_an_action_whose_value_holds_no_event_list_is_an_action_without_events(value: str) -> None:
    assert input_map(f'[input]\n\nodd={value}\nok={{\n"events": [  ]\n}}\n') == {
        "odd": [],
        "ok": [],
    }


def test_a_joypad_axis_value_is_clamped_to_what_can_be_sent_and_keeps_its_side() -> None:
    text = events(
        'Object(InputEventJoypadMotion,"axis":2,"axis_value":-5.0)',
        'Object(InputEventJoypadMotion,"axis":3,"axis_value":inf)',
        'Object(InputEventJoypadMotion,"axis":4,"axis_value":0.25)',
        'Object(InputEventJoypadMotion,"axis":9,"axis_value":1)',
    )
    assert input_map(text) == {
        "a": [
            {"type": "joypad_motion", "axis": 2, "value": -1.0},
            {"type": "joypad_motion", "axis": 3, "value": 1.0},
            {"type": "joypad_motion", "axis": 4, "value": 0.25},
            {"type": "joypad_motion", "axis": 9, "value": 1.0},
        ]
    }


def test_an_action_lists_at_most_max_events_and_says_how_many_more_it_has() -> None:
    button = 'Object(InputEventJoypadButton,"button_index":{})'
    listed = input_map(events(*(button.format(i % 128) for i in range(MAX_EVENTS + 57))))["a"]
    assert len(listed) == MAX_EVENTS + 1
    assert listed[:3] == [{"type": "joypad_button", "button": i} for i in range(3)]
    assert listed[-1] == {"type": "truncated", "remaining": 57}


def test_no_input_section_or_a_section_that_is_no_table_is_an_empty_map() -> None:
    assert input_map('[application]\n\nconfig/name="x"\n') == {}
    assert read_input_map({"input": cast(Any, [1, 2])}, GODOT_4) == {}
    assert read_input_map({}, GODOT_4) == {}


# --- through project.info: hostile files and the answer's bound --------------------------------


def info(project: Path, limit: int = 512 * 1024, version: str = "3.2.3.stable") -> dict[str, Any]:
    """What ``project.info`` answers for ``project`` within ``limit`` bytes as sent, on a server
    running Godot ``version``."""

    async def blocking(fn, *args):  # the runtime's worker thread, here the caller's
        return fn(*args)

    engine = SimpleNamespace(
        version=version,
        headless_version=None,
        major=major_of(version),
        profile=profile_of(version),
    )
    runtime = cast(Runtime, SimpleNamespace(godot=engine, disk=blocking, project=project))
    deps = SimpleNamespace(core=CoreService(runtime))
    budget = Budget(limit)
    call = cast(Call, SimpleNamespace(deps=deps, generation=1, budget=budget))
    result = anyio.run(project_info, call)
    assert result.structured_content is not None
    assert budget.wire_size(result) <= limit
    return result.structured_content


def test_project_info_answers_the_map_of_a_project(tmp_path: Path) -> None:
    (tmp_path / "project.godot").write_text(GODOT32)
    answer = info(tmp_path)
    assert answer["outcome"] == "ok" and answer["name"] == "Three"
    assert answer["input_map"] == input_map(GODOT32)
    assert "input_map_truncated" not in answer


def test_thousands_of_actions_are_cut_to_fit_the_answer_and_say_so(tmp_path: Path) -> None:
    key = 'Object(InputEventKey,"device":0,"scancode":{})'
    actions = "".join(
        f'action_{i:05d}={{\n"deadzone": 0.5,\n"events": [ {key.format(65 + i % 26)} ]\n}}\n'
        for i in range(10_000)
    )
    (tmp_path / "project.godot").write_text(f"config_version=4\n\n[input]\n\n{actions}")
    answer = info(tmp_path, limit=64 * 1024)
    assert answer["outcome"] == "ok" and answer["input_map_truncated"] is True
    names = list(answer["input_map"])
    assert 100 < len(names) < 10_000
    assert names == [f"action_{i:05d}" for i in range(len(names))]  # the file's first ones
    assert answer["input_map"]["action_00001"] == [{"type": "key", "key": "B"}]


def test_a_huge_action_name_or_event_list_still_answers_within_the_bound(tmp_path: Path) -> None:
    name = "n" * 300_000
    pad = 'Object(InputEventJoypadButton,"button_index":3)'
    many = ", ".join([pad] * 10_000)
    (tmp_path / "project.godot").write_text(
        f'[input]\n\n{name}={{\n"events": [ {pad} ]\n}}\nsmall={{\n"events": [ {many} ]\n}}\n'
    )
    answer = info(tmp_path, limit=64 * 1024)
    assert answer["outcome"] == "ok"
    assert answer["input_map_truncated"] is True and answer["input_map"] == {}
    (tmp_path / "project.godot").write_text(f'[input]\n\nsmall={{\n"events": [ {many} ]\n}}\n')
    answer = info(tmp_path, limit=64 * 1024)
    small = answer["input_map"]["small"]
    assert len(small) == MAX_EVENTS + 1 and small[-1] == {"type": "truncated", "remaining": 9900}


@pytest.mark.parametrize(
    "text",
    [
        '[input]\n\njump={\n"events": [ Object(InputEventKey,"scancode":) ]\n}\n',  # no value
        '[input]\n\njump={\n"events": [ Object(InputEventKey,"scancode":32 ]\n}\n',  # unclosed
        "[input]\n\njump={\n" + "[" * 200 + "\n",  # nested past the parser's bound
        '[input\n\njump={\n"events": []\n}\n',
    ],
)
def test_a_project_file_that_does_not_parse_has_no_map_and_project_info_still_answers(
    tmp_path: Path, text: str
) -> None:
    (tmp_path / "project.godot").write_text(text)
    answer = info(tmp_path)
    assert answer["outcome"] == "ok" and answer["input_map"] == {}


def test_a_project_file_over_the_read_limit_has_no_map(tmp_path: Path) -> None:
    (tmp_path / "project.godot").write_text(
        events('Object(InputEventKey,"scancode":32)') + ("; pad\n" * 200_000)
    )
    assert info(tmp_path)["input_map"] == {}


# --- runtime.input.send takes what the map lists --------------------------------------------


def test_every_sendable_event_of_a_map_is_an_event_runtime_input_send_takes() -> None:
    listed = [
        e
        for text in (GODOT32, GODOT36, GODOT46)
        for action in input_map(text).values()
        for e in action
        if e["type"] != "unknown"
    ]
    sent = [e | {"x": 1, "y": 2} if e["type"] == "mouse_button" else e for e in listed]
    assert check_events(sent) == sent


@pytest.mark.parametrize(
    ("event", "why"),
    [
        ({"type": "joypad_button", "button": 128}, "events[0] is not a valid joypad_button"),
        ({"type": "joypad_button", "button": -1}, "events[0] is not a valid joypad_button"),
        ({"type": "joypad_button", "button": 1.5}, "events[0] is not a valid joypad_button"),
        ({"type": "joypad_button", "button": 1, "device": 1}, "not a valid joypad_button"),
        ({"type": "joypad_button"}, "events[0] is not a valid joypad_button"),
        ({"type": "joypad_motion", "axis": 10, "value": 1}, "not a valid joypad_motion"),
        ({"type": "joypad_motion", "axis": 1, "value": 1.01}, "not a valid joypad_motion"),
        ({"type": "joypad_motion", "axis": 1, "value": -2}, "not a valid joypad_motion"),
        ({"type": "joypad_motion", "axis": 1}, "not a valid joypad_motion"),
        ({"type": "joypad_motion", "axis": 1, "value": 0, "pressed": True}, "joypad_motion"),
        ({"type": "unknown", "class": "InputEventScreenTouch"}, "events[0].type must be one of"),
    ],
)
def test_a_joypad_event_out_of_the_engines_range_is_refused_by_name(
    event: dict[str, Any], why: str
) -> None:
    with pytest.raises(InvalidArgument) as refused:
        check_events([event])
    assert why in refused.value.message


# --- what each engine itself writes, and its own key names ------------------------------------

WRITER3 = """\
extends SceneTree

func _init():
\tvar key = InputEventKey.new()
\tkey.scancode = KEY_SPACE
\tvar save = InputEventKey.new()
\tsave.scancode = KEY_S
\tsave.control = true
\tsave.shift = true
\tsave.command = true
\tvar place = InputEventKey.new()
\tif "physical_scancode" in place:
\t\tplace.set("physical_scancode", KEY_F2)
\telse:
\t\tplace.scancode = KEY_F2
\tvar click = InputEventMouseButton.new()
\tclick.button_index = BUTTON_RIGHT
\tclick.doubleclick = true
\tvar pad = InputEventJoypadButton.new()
\tpad.button_index = 2
\tvar second = InputEventJoypadButton.new()
\tsecond.button_index = 3
\tsecond.device = 1
\tvar axis = InputEventJoypadMotion.new()
\taxis.axis = 1
\taxis.axis_value = -1.0
\tvar act = InputEventAction.new()
\tact.action = "jump"
\tvar events = [key, pad, second, axis, click, InputEventScreenTouch.new(), save, place, act]
\tProjectSettings.set_setting("input/jump", {"deadzone": 0.5, "events": events})
\tquit(ProjectSettings.save())
"""
WRITER4 = (
    WRITER3.replace("func _init():", "func _initialize():")
    .replace("scancode", "keycode")
    .replace("save.control", "save.ctrl_pressed")
    .replace("save.shift", "save.shift_pressed")
    .replace("\tsave.command = true\n", "")
    .replace("BUTTON_RIGHT", "MOUSE_BUTTON_RIGHT")
    .replace("doubleclick", "double_click")
    .replace(
        "\tvar act =",
        "\tvar auto = InputEventKey.new()\n\tauto.physical_keycode = KEY_Q\n"
        "\tauto.command_or_control_autoremap = true\n"
        "\tvar label = InputEventKey.new()\n\tlabel.key_label = KEY_A\n\tvar act =",
    )
    .replace(", act]", ", act, auto, label]")
)
WRITTEN = [
    {"type": "key", "key": "Space"},
    {"type": "joypad_button", "button": 2},
    {"type": "unknown", "class": "InputEventJoypadButton", "device": 1},
    {"type": "joypad_motion", "axis": 1, "value": -1.0},
    {"type": "mouse_button", "button": "right", "double_click": True},
    {"type": "unknown", "class": "InputEventScreenTouch"},
    {"type": "key", "key": "S", "shift": True, "ctrl": True},
    {"type": "key", "key": "F2"},
    {"type": "action", "action": "jump"},
]

DUMP3 = """\
extends SceneTree

func _init():
\tvar out = {}
\tfor base in [0, 1 << 24]:
\t\tfor i in range(512):
\t\t\tvar name = OS.get_scancode_string(base + i)
\t\t\tif name != "" and OS.find_scancode_from_string(name) == base + i:
\t\t\t\tout[str(base + i)] = name
\tprint("KEYS " + to_json(out))
\tquit()
"""
DUMP4 = (
    DUMP3.replace("func _init():", "func _initialize():")
    .replace("1 << 24", "1 << 22")
    .replace("scancode", "keycode")
    .replace("to_json(out)", "JSON.stringify(out)")
)


@pytest.mark.godot
def test_the_map_each_engine_writes_reads_back_exactly(tmp_path: Path, engine: Engine) -> None:
    engine.require()
    four = engine.major == 4
    project, _ = engine.run_script(tmp_path, WRITER4 if four else WRITER3)
    text = (project / "project.godot").read_text()
    assert ("keycode" if four else "scancode") in text, text
    expected = WRITTEN + (
        [{"type": "key", "key": "Q", "ctrl": True}, {"type": "key", "key": "A"}] if four else []
    )
    assert input_map(text, engine.profile)["jump"] == expected, text
    assert info(project, version=engine.version)["input_map"]["jump"] == expected


@pytest.mark.godot
def test_each_engines_own_key_names_are_the_table_of_its_numbering(
    tmp_path: Path, engine: Engine
) -> None:
    engine.require()
    four = engine.major == 4
    _, out = engine.run_script(tmp_path, DUMP4 if four else DUMP3)
    (line,) = [x for x in out.splitlines() if x.startswith("KEYS ")]
    named = {int(code): name for code, name in json.loads(line[len("KEYS ") :]).items()}
    assert named == (KEYCODES if four else SCANCODES)


# --- through the server, on a stand-in engine ----------------------------------------------


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.parametrize(("major", "text"), [(3, GODOT32), (4, GODOT46)], ids=["fake3", "fake4"])
async def test_the_server_answers_the_map_and_sends_the_joypad_events_it_lists(
    tmp_path: Path, major: int, text: str
) -> None:
    with anyio.fail_after(60):
        async with fake_server(tmp_path, major=major) as c:
            (tmp_path / "project" / "project.godot").write_text(text)  # read afresh each call
            listed = (await ok(c, "project.info"))["input_map"]
            assert listed == input_map(text)
            pads = [e for events in listed.values() for e in events if "joypad" in e["type"]]
            assert len(pads) >= 2
            sid = (await ok(c, "runtime.session.start", {"mode": "headless"}))["session"]["id"]
            sent = await ok(c, "runtime.input.send", {"session_id": sid, "events": pads})
            assert sent["applied"] == len(pads)
            bad = {"type": "joypad_button", "button": 128}
            refused = await call(c, "runtime.input.send", {"session_id": sid, "events": [bad]})
            assert refused["outcome"] == "invalid_argument", refused
            await ok(c, "runtime.session.stop", {"session_id": sid})

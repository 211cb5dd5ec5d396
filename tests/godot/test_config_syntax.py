"""Godot's ConfigFile syntax (project.godot, export_presets.cfg) as Godot 3 and 4 write it."""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from godot_mcp.engine.profile import profile_of
from godot_mcp.engine.project.presets import (
    ConfigSyntaxError,
    Constructed,
    GodotObject,
    NodePath,
    Preset,
    StringName,
    TypedArray,
    TypedDictionary,
    expected_outputs,
    parse_config,
    parse_tag,
    project_name,
    read_presets,
    resource_sections,
)
from godot_mcp.features.core.service import CoreService
from godot_mcp.features.core.tools import project_info
from godot_mcp.features.services import Call
from godot_mcp.mcp.budget import Budget
from godot_mcp.runtime.context import Runtime
from tests.support.engines import Engine

SAMPLES = Path(__file__).parent / "config_samples"

# Godot 3's project.godot as the 3.x editor writes it ("physical_scancode" is 3.3's addition;
# 3.2.3 itself leaves it out, see the live test below).
GODOT3_PROJECT = """\
; Engine configuration file.
; It's best edited using the editor UI and not directly,
; since the parameters that go here are not all obvious.
;
; Format:
;   [section] ; section goes between []
;   param=value ; assign values to parameters

config_version=4

_global_script_classes=[ {
"base": "Node",
"class": "Enemy",
"language": "GDScript",
"path": "res://enemy.gd"
} ]
_global_script_class_icons={
"Enemy": ""
}

[application]

config/name="Jumper"
config/description="Two lines:
jump, \\"land\\""
run/main_scene="res://main.tscn"
config/icon="res://icon.png"

[autoload]

Globals="*res://globals.gd"

[display]

window/size/width=640
window/size/height=360
window/stretch/mode="2d"

[editor_plugins]

enabled=PoolStringArray( "res://addons/tool/plugin.cfg" )

[input]

ui_jump={
"deadzone": 0.5,
"events": [ Object(InputEventKey,"resource_local_to_scene":false,"resource_name":"","device":0,\
"alt":false,"shift":false,"control":false,"meta":false,"command":false,"pressed":false,\
"scancode":32,"physical_scancode":0,"unicode":0,"echo":false,"script":null)
 ]
}
fire={
"deadzone": 0.5,
"events": [ Object(InputEventMouseButton,"resource_local_to_scene":false,"resource_name":"",\
"device":0,"alt":false,"shift":false,"control":false,"meta":false,"command":false,\
"button_mask":0,"position":Vector2( 0, 0 ),"global_position":Vector2( 0, 0 ),"factor":1.0,\
"button_index":1,"pressed":false,"doubleclick":false,"script":null)
, Object(InputEventJoypadButton,"resource_local_to_scene":false,"resource_name":"","device":0,\
"button_index":2,"pressure":0.0,"pressed":false,"script":null)
 ]
}

[layer_names]

2d_physics/layer_1="world"
"2d_physics/layer_2"="player"

[physics]

common/physics_fps=120
2d/default_gravity_vector=Vector2( 0, 1 )

[rendering]

environment/default_clear_color=Color( 0.301961, 0.301961, 0.301961, 1 )
environment/default_environment="res://default_env.tres"
"""


def key_event3(scancode: int) -> GodotObject:
    return GodotObject(
        "InputEventKey",
        {
            "resource_local_to_scene": False,
            "resource_name": "",
            "device": 0,
            "alt": False,
            "shift": False,
            "control": False,
            "meta": False,
            "command": False,
            "pressed": False,
            "scancode": scancode,
            "physical_scancode": 0,
            "unicode": 0,
            "echo": False,
            "script": None,
        },
    )


def test_a_godot3_project_with_an_input_map_parses_exactly() -> None:
    parsed = parse_config(GODOT3_PROJECT)
    assert parsed == {
        "": {
            "config_version": 4,
            "_global_script_classes": [
                {
                    "base": "Node",
                    "class": "Enemy",
                    "language": "GDScript",
                    "path": "res://enemy.gd",
                }
            ],
            "_global_script_class_icons": {"Enemy": ""},
        },
        "application": {
            "config/name": "Jumper",
            "config/description": 'Two lines:\njump, "land"',
            "run/main_scene": "res://main.tscn",
            "config/icon": "res://icon.png",
        },
        "autoload": {"Globals": "*res://globals.gd"},
        "display": {
            "window/size/width": 640,
            "window/size/height": 360,
            "window/stretch/mode": "2d",
        },
        "editor_plugins": {
            "enabled": Constructed("PoolStringArray", "res://addons/tool/plugin.cfg")
        },
        "input": {
            "ui_jump": {"deadzone": 0.5, "events": [key_event3(32)]},
            "fire": {
                "deadzone": 0.5,
                "events": [
                    GodotObject(
                        "InputEventMouseButton",
                        {
                            "resource_local_to_scene": False,
                            "resource_name": "",
                            "device": 0,
                            "alt": False,
                            "shift": False,
                            "control": False,
                            "meta": False,
                            "command": False,
                            "button_mask": 0,
                            "position": Constructed("Vector2", 0, 0),
                            "global_position": Constructed("Vector2", 0, 0),
                            "factor": 1.0,
                            "button_index": 1,
                            "pressed": False,
                            "doubleclick": False,
                            "script": None,
                        },
                    ),
                    GodotObject(
                        "InputEventJoypadButton",
                        {
                            "resource_local_to_scene": False,
                            "resource_name": "",
                            "device": 0,
                            "button_index": 2,
                            "pressure": 0.0,
                            "pressed": False,
                            "script": None,
                        },
                    ),
                ],
            },
        },
        "layer_names": {"2d_physics/layer_1": "world", "2d_physics/layer_2": "player"},
        "physics": {
            "common/physics_fps": 120,
            "2d/default_gravity_vector": Constructed("Vector2", 0, 1),
        },
        "rendering": {
            "environment/default_clear_color": Constructed(
                "Color", 0.301961, 0.301961, 0.301961, 1
            ),
            "environment/default_environment": "res://default_env.tres",
        },
    }
    events = parsed["input"]["ui_jump"]
    assert isinstance(events, dict)
    event = events["events"][0]
    assert isinstance(event, GodotObject) and event.class_name == "InputEventKey"
    assert event.properties["scancode"] == 32
    features = parsed["editor_plugins"]["enabled"]
    assert isinstance(features, Constructed)
    assert features.name == "PoolStringArray"
    assert features.args == ("res://addons/tool/plugin.cfg",)


def key_event4(physical: int, unicode: int) -> GodotObject:
    return GodotObject(
        "InputEventKey",
        {
            "resource_local_to_scene": False,
            "resource_name": "",
            "device": -1,
            "window_id": 0,
            "alt_pressed": False,
            "shift_pressed": False,
            "ctrl_pressed": False,
            "meta_pressed": False,
            "pressed": False,
            "keycode": 0,
            "physical_keycode": physical,
            "key_label": 0,
            "unicode": unicode,
            "location": 0,
            "echo": False,
            "script": None,
        },
    )


def test_a_godot4_project_parses_exactly() -> None:
    parsed = parse_config((SAMPLES / "godot4_project.godot").read_text())
    assert parsed[""] == {"config_version": 5}
    assert parsed["application"] == {
        "config/name": "Sample Four",
        "config/description": 'First line\nsecond "quoted" line, a back\\slash',
        "run/main_scene": "uid://b6x3qkf0pnm2c",
        "config/features": Constructed("PackedStringArray", "4.6", "Forward Plus"),
        "boot_splash/bg_color": Constructed("Color", 0.14, 0.14, 0.14, 1),
        "config/icon": "res://icon.svg",
    }
    assert parsed["input"] == {
        "jump": {
            "deadzone": 0.2,
            "events": [
                key_event4(32, 32),
                GodotObject(
                    "InputEventJoypadButton",
                    {
                        "resource_local_to_scene": False,
                        "resource_name": "",
                        "device": -1,
                        "button_index": 0,
                        "pressure": 0.0,
                        "pressed": True,
                        "script": None,
                    },
                ),
            ],
        },
        "shoot": {
            "deadzone": 0.5,
            "events": [
                GodotObject(
                    "InputEventMouseButton",
                    {
                        "resource_local_to_scene": False,
                        "resource_name": "",
                        "device": -1,
                        "window_id": 0,
                        "alt_pressed": False,
                        "shift_pressed": False,
                        "ctrl_pressed": False,
                        "meta_pressed": False,
                        "button_mask": 1,
                        "position": Constructed("Vector2", 131, 18),
                        "global_position": Constructed("Vector2", 140, 64),
                        "factor": 1.0,
                        "button_index": 1,
                        "canceled": False,
                        "pressed": True,
                        "double_click": False,
                        "script": None,
                    },
                )
            ],
        },
    }
    assert parsed["internationalization"] == {
        "locale/translations": Constructed(
            "PackedStringArray", "res://l10n/text.en.translation", "res://l10n/text.fr.translation"
        )
    }
    assert parsed["layer_names"] == {"2d_physics/layer_1": "world", "2d_physics/layer_2": "player"}
    assert parsed["rendering"] == {
        "textures/canvas_textures/default_texture_filter": 0,
        "environment/defaults/default_clear_color": Constructed("Color", 0.3, 0.3, 0.3, 1),
    }
    sample = parsed["sample"]
    assert sample == {
        "tool/typed_ids": [1, 2, 3],
        "tool/scripted": [],
        "tool/scores": {"alice": 3, "bob": -1},
        "tool/action": "jump",
        "tool/target": "../Player:position",
        "tool/cell": Constructed("Vector2i", 4, -2),
        "tool/limits": [math.inf, -math.inf, -1e6, 0.5],
        "tool/theme": Constructed("Resource", "uid://dq8ajv3nq0xsm", "res://theme.tres"),
    }
    typed_ids, scripted, scores = (
        sample[k] for k in ("tool/typed_ids", "tool/scripted", "tool/scores")
    )
    assert isinstance(typed_ids, TypedArray) and typed_ids.element_type == "int"
    assert isinstance(scripted, TypedArray)
    assert scripted.element_type == Constructed("Resource", "res://enemy.gd")
    assert isinstance(scores, TypedDictionary)
    assert (scores.key_type, scores.value_type) == ("String", "int")
    assert type(sample["tool/action"]) is StringName
    assert type(sample["tool/target"]) is NodePath


def test_godot4_export_presets_with_multiline_scripts_are_read(tmp_path: Path) -> None:
    shutil.copy(SAMPLES / "godot4_export_presets.cfg", tmp_path / "export_presets.cfg")
    (tmp_path / "project.godot").write_text((SAMPLES / "godot4_project.godot").read_text())
    linux, web = read_presets(tmp_path)
    assert linux == Preset("Linux", "Linux", "build/sample.x86_64", embed_pck=True)
    assert web == Preset("Web", "Web", "build/web/index.html")
    assert expected_outputs(project_name(tmp_path), linux, "release") == ["sample.x86_64"]
    options = parse_config((SAMPLES / "godot4_export_presets.cfg").read_text())["preset.0.options"]
    assert options["ssh_remote_deploy/cleanup_script"] == (
        '#!/usr/bin/env bash\nkill $(pgrep -x -f "{temp_dir}/{exe_name} {cmd_args}")\n'
        'rm -rf "{temp_dir}"'
    )


def info(project: Path) -> dict[str, Any]:
    """What ``project.info`` answers for ``project``."""

    async def blocking(fn, *args):  # the runtime's worker thread, here the caller's
        return fn(*args)

    version = "4.6.3.stable"
    engine = SimpleNamespace(
        version=version, headless_version=None, major=4, profile=profile_of(version)
    )
    runtime = cast(Runtime, SimpleNamespace(godot=engine, disk=blocking, project=project))
    deps = SimpleNamespace(core=CoreService(runtime))
    call = cast(Call, SimpleNamespace(deps=deps, generation=3, budget=Budget(512 * 1024)))
    result = anyio.run(project_info, call)
    assert result.structured_content is not None
    return result.structured_content


def test_project_info_names_the_project_and_its_main_scene(tmp_path: Path) -> None:
    three, four = tmp_path / "three", tmp_path / "four"
    three.mkdir()
    four.mkdir()
    (three / "project.godot").write_text(GODOT3_PROJECT)
    shutil.copy(SAMPLES / "godot4_project.godot", four / "project.godot")
    shutil.copy(SAMPLES / "godot4_export_presets.cfg", four / "export_presets.cfg")
    assert info(three) == {
        "outcome": "ok",
        "name": "Jumper",
        "generation": 3,
        "main_scene": "res://main.tscn",
        "export_presets": [],
        "dotnet": False,
        "engine_features": [],
        "input_map": {  # for the Godot 4 this server runs: it reads no Godot 3 key code
            "ui_jump": [{"type": "unknown", "class": "InputEventKey"}],
            "fire": [
                {"type": "mouse_button", "button": "left"},
                {"type": "joypad_button", "button": 2},
            ],
        },
    }
    # Godot 4's main scene by uid: no scene names it yet, so it is answered as written...
    assert info(four) == {
        "outcome": "ok",
        "name": "Sample Four",
        "generation": 3,
        "main_scene": "uid://b6x3qkf0pnm2c",
        "export_presets": ["Linux", "Web"],
        "dotnet": False,
        "engine_features": ["4.6", "Forward Plus"],
        "input_map": {
            "jump": [{"type": "key", "key": "Space"}, {"type": "joypad_button", "button": 0}],
            "shoot": [{"type": "mouse_button", "button": "left"}],
        },
    }
    # ...and as the path of the text scene whose header names it, once one does. Scenes
    # reached through links, in hidden folders or under a .gdignore do not count.
    header = '[gd_scene load_steps=2 format=3 uid="{}"]\n\n[node name="M" type="Node"]\n'
    (four / "levels" / "one").mkdir(parents=True)
    (four / ".hidden").mkdir()
    (four / "skip").mkdir()
    (four / "skip" / ".gdignore").write_text("")
    outside = tmp_path / "outside.tscn"
    outside.write_text(header.format("uid://b6x3qkf0pnm2c"))
    (four / "linked.tscn").symlink_to(outside)
    (four / ".hidden" / "h.tscn").write_text(header.format("uid://b6x3qkf0pnm2c"))
    (four / "skip" / "s.tscn").write_text(header.format("uid://b6x3qkf0pnm2c"))
    (four / "levels" / "other.tscn").write_text(header.format("uid://b6x3qkf0pnm2"))
    assert info(four)["main_scene"] == "uid://b6x3qkf0pnm2c"
    (four / "levels" / "one" / "start.tscn").write_text(header.format("uid://b6x3qkf0pnm2c"))
    assert info(four)["main_scene"] == "res://levels/one/start.tscn"


# --- single constructs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("null", None),
        ("nil", None),
        ("true", True),
        ("false", False),
        ("-42", -42),
        ("0.5", 0.5),
        ("-1e+06", -1e6),
        ("1E-3", 0.001),
        ("2.", 2.0),
        ("inf", math.inf),
        ("-inf", -math.inf),
        ("-inf.0", -math.inf),
        ("inf_neg", -math.inf),
        ('"tab\\there \\u00e9 \\ud83d\\ude00 \\U01F600"', "tab\there é 😀 😀"),
        ('"\\a\\v\\?\\\'\\q"', "av?'q"),
        ('"line\none"', "line\none"),
        ('&"walk"', StringName("walk")),
        ('@"walk"', StringName("walk")),
        ('^"a/b:c"', NodePath("a/b:c")),
        ('NodePath( "a/b" )', NodePath("a/b")),
        ("Vector2( 1, -2.5 )", ("Vector2", 1, -2.5)),
        ("Vector3(inf, nan, 0)", ("Vector3", math.inf, math.nan, 0)),
        ("PoolStringArray(  )", ("PoolStringArray",)),
        ('PackedByteArray("AQID")', ("PackedByteArray", "AQID")),
        ("ExtResource( 1 )", ("ExtResource", 1)),
        ('ExtResource("1_abc")', ("ExtResource", "1_abc")),
        ('SubResource("Shape_x7")', ("SubResource", "Shape_x7")),
        ('Resource( "res://a.tres" )', ("Resource", "res://a.tres")),
        ("#ff8000", ("Color", "#ff8000")),
        ("Object(Node,)", GodotObject("Node", {})),
        ("[ 1, [ 2, [ ] ], { } ]", [1, [2, []], {}]),
        ("[1,\n ; a comment\n 2,]", [1, 2]),
        ("{\n\n}", {}),
        ('{ Vector2( 1, 2 ): "v", 3: [ ], [ 1 ]: 0 }', {("Vector2", 1, 2): "v", 3: [], "[1]": 0}),
        ("Array[int]([1, 2])", [1, 2]),
        ("Dictionary[String, Variant]({})", {}),
    ],
)
def test_one_value_parses(text: str, value: object) -> None:
    assert same(parse_config(f"v={text}\n")[""]["v"], value, loose=True)


def test_section_headers_keys_and_comments() -> None:
    parsed = parse_config(
        "\ufeff; comment\n# also a comment\nk=1 ; trailing comment\n"
        "[gd_scene load_steps=2 format=2]\n"
        '[ext_resource path="res://a]b.png" type="Texture" id=1]\n'
        '[preset.0.options]\n"key = with \\"spaces\\""=true\n"2d_physics/layer_1"="a"\n'
        'window/size/width=\n 640\n[ preset.0.options ]\nlate="x"\n'
    )
    assert parsed == {
        "": {"k": 1},
        "gd_scene load_steps=2 format=2": {},
        'ext_resource path="res://a]b.png" type="Texture" id=1': {},
        "preset.0.options": {
            'key = with "spaces"': True,
            "2d_physics/layer_1": "a",
            "window/size/width": 640,
            "late": "x",
        },
    }
    assert parse_tag('ext_resource path="res://a]b.png" type="Texture" id=1') == (
        "ext_resource",
        {"path": "res://a]b.png", "type": "Texture", "id": 1},
    )
    assert parse_tag('gd_scene load_steps=2 format=3 uid="uid://c1"') == (
        "gd_scene",
        {"load_steps": 2, "format": 3, "uid": "uid://c1"},
    )
    assert parse_tag("preset.0.options") == ("preset.0.options", {})
    with pytest.raises(ConfigSyntaxError):
        parse_tag("node name=")


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        ("a=", 1, "expected a value, found the end of the text"),
        ("a=1\nb\n", 2, "expected key=value"),
        ("[preset.0\nname=1\n", 1, "unterminated section header"),
        ('a=1\nb="never closed\n\nc=2\n', 2, "unterminated string"),
        ("a=[ 1 2 ]", 1, "expected ',' or ']', found '2'"),
        ('a={\n"k" 1\n}', 2, "expected ':', found '1'"),
        ("a=\n\nbogus", 3, "unexpected identifier 'bogus'"),
        ("a=Vector2( 1, 2", 1, "expected ',' or ')', found the end of the text"),
        ("a=Object(InputEventKey,device:0)", 1, "expected a property name in quotes, found 'd'"),
        ('a=Object("x")', 1, "expected the object's class, found '\"'"),
        ("a=Array[int]((1))", 1, "expected '[', found '('"),
        ("a=Dictionary[String]({})", 1, "expected ',', found ']'"),
        ("a=NodePath(1, 2)", 1, "NodePath() takes one string"),
        ('a="\\ud800x"', 1, "unpaired UTF-16 surrogate in string"),
        ('a="\\ude00"', 1, "unpaired UTF-16 surrogate in string"),
        ('a="\\u12"', 1, "malformed \\u escape in string"),
        ('a="\\U110000"', 1, "malformed \\U escape in string"),
        ("a=- 1", 1, "expected a number after '-'"),
        ("a=" + "9" * 5000, 1, "integer too long"),
        ("a=" + "[" * 500, 1, "values nested more than 128 deep"),
        ("a=" + "Array[int]([" * 500, 1, "values nested more than 128 deep"),
        ("a=" + 'Object(A,"p":' * 500, 1, "values nested more than 128 deep"),
        ("a=&x", 1, "expected a value, found '&'"),
    ],
)
def test_malformed_text_names_its_line(text: str, line: int, what: str) -> None:
    with pytest.raises(ConfigSyntaxError) as caught:
        parse_config(text)
    assert (caught.value.line, caught.value.what) == (line, what)
    assert str(caught.value) == f"line {line}: {what}"


def test_project_name_falls_back_to_the_folder_only_for_a_broken_file(tmp_path: Path) -> None:
    project = tmp_path / "folder_name"
    project.mkdir()
    (project / "project.godot").write_text(GODOT3_PROJECT)
    assert project_name(project) == "Jumper"
    (project / "project.godot").write_text(GODOT3_PROJECT.replace("[input]", "[input"))
    assert project_name(project) == "folder_name"


# --- fuzz: what Godot writes reads back; nothing else escapes but ConfigSyntaxError --------


def same(a: object, b: object, loose: bool = False) -> bool:
    """Equal values of the same types (nan equals nan); ``loose`` lets a plain tuple, list,
    dict or str stand for a ``Constructed``, typed container or ``StringName``/``NodePath``."""
    if type(a) is not type(b) and not (loose and isinstance(a, type(b))):
        return False
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, TypedArray) and isinstance(b, TypedArray) and a.element_type != b.element_type:
        return False
    if (
        isinstance(a, TypedDictionary)
        and isinstance(b, TypedDictionary)
        and (a.key_type, a.value_type) != (b.key_type, b.value_type)
    ):
        return False
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y, loose) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], loose) for k in a)
    if isinstance(a, GodotObject) and isinstance(b, GodotObject):
        return a.class_name == b.class_name and same(a.properties, b.properties, loose)
    return a == b


def c_escape(text: str) -> str:
    """Godot's ``String.c_escape`` (without ``\\a``/``\\v``, which Godot's reader takes as the
    letters: PoolStringArray with a BEL does not survive a save in Godot either)."""
    for raw, escaped in (
        ("\\", "\\\\"),
        ("\b", "\\b"),
        ("\f", "\\f"),
        ("\n", "\\n"),
        ("\r", "\\r"),
        ("\t", "\\t"),
        ("'", "\\'"),
        ("?", "\\?"),
        ('"', '\\"'),
    ):
        text = text.replace(raw, escaped)
    return text


def c_escape_multiline(text: str) -> str:
    """Godot's ``String.c_escape_multiline``: what a plain string value is written with."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def write_float(value: float, godot: int) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else ("-inf.0" if godot == 3 else "-inf")
    text = repr(value) if godot == 4 else f"{value:.17g}"
    return text if any(c in text for c in ".eE") else text + ".0"


def write(value: object, godot: int) -> str:
    """``value`` as Godot's VariantWriter writes it (spacing of Godot ``godot``: 3 or 4)."""
    pad = " " if godot == 3 else ""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return write_float(value, godot)
    if isinstance(value, StringName):
        return f'&"{c_escape(value)}"'
    if isinstance(value, NodePath):
        return f'NodePath("{c_escape(value)}")'
    if isinstance(value, str):
        return f'"{c_escape_multiline(value)}"'
    if isinstance(value, GodotObject):
        props = ",".join(f'"{k}":{write(v, godot)}' for k, v in value.properties.items())
        return f"Object({value.class_name},{props})\n"
    if isinstance(value, Constructed):
        args = ", ".join(write(a, godot) for a in value.args)
        return f"{value.name}({pad}{args}{pad})"
    if isinstance(value, TypedArray):
        return f"Array[{write_type(value.element_type, godot)}]({write_list(value, godot)})"
    if isinstance(value, TypedDictionary):
        types = f"{write_type(value.key_type, godot)}, {write_type(value.value_type, godot)}"
        return f"Dictionary[{types}]({write_dict(value, godot)})"
    if isinstance(value, list):
        return write_list(value, godot)
    assert isinstance(value, dict), value
    return write_dict(value, godot)


def write_type(name: str | Constructed, godot: int) -> str:
    return name if isinstance(name, str) else write(name, godot)


def write_list(items: list[object], godot: int) -> str:
    pad = " " if godot == 3 else ""
    return f"[{pad}{', '.join(write(v, godot) for v in items)}{pad}]"


def write_dict(items: dict[object, object], godot: int) -> str:
    if not items:
        return "{\n\n}" if godot == 3 else "{}"
    pairs = ",\n".join(f"{write(k, godot)}: {write(v, godot)}" for k, v in items.items())
    return "{\n" + pairs + "\n}"


def write_key(key: str) -> str:
    """Godot's ``String.property_name_encode``: quoted when not plain."""
    if key and all(c.isascii() and (c.isalnum() or c in "_/.-") for c in key):
        return key
    return f'"{c_escape_multiline(key)}"'


def write_file(sections: dict[str, dict[str, object]], godot: int) -> str:
    out = ["; Engine configuration file.\n;   param=value ; assign values to parameters\n\n"]
    for name, values in sections.items():
        if name:
            out.append(f"[{name}]\n\n")
        out.extend(f"{write_key(k)}={write(v, godot)}\n" for k, v in values.items())
        out.append("\n")
    return "".join(out)


texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
escaped_texts = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters="\x07\x0b"), max_size=12
)
identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)
properties = st.from_regex(r"[a-z_][a-z0-9_/]{0,10}", fullmatch=True)  # written unescaped
numbers = st.integers(-(2**63), 2**63 - 1) | st.floats()
type_names = st.sampled_from(["int", "String", "Vector2", "Node"]) | st.builds(
    lambda path: Constructed("Resource", path), escaped_texts
)
leaves = (
    st.none()
    | st.booleans()
    | numbers
    | texts
    | escaped_texts.map(StringName)
    | escaped_texts.map(NodePath)
    | st.builds(
        lambda name, args: Constructed(name, *args),
        st.sampled_from(["Vector2", "Vector3i", "Color", "Rect2", "Transform2D", "PoolIntArray"]),
        st.lists(numbers, max_size=6),
    )
    | st.builds(
        lambda name, args: Constructed(name, *args),
        st.sampled_from(["PoolStringArray", "PackedStringArray", "ExtResource", "Resource"]),
        st.lists(escaped_texts, max_size=3),
    )
    | st.integers(0, 99).map(lambda n: Constructed("ExtResource", n))
)
dict_keys = texts | st.integers(-(2**63), 2**63 - 1)


def containers(children: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return (
        st.lists(children, max_size=4)
        | st.dictionaries(dict_keys, children, max_size=4)
        | st.builds(GodotObject, identifiers, st.dictionaries(properties, children, max_size=4))
        | st.builds(TypedArray, type_names, st.lists(children, max_size=3))
        | st.builds(
            TypedDictionary,
            type_names,
            type_names,
            st.dictionaries(dict_keys, children, max_size=3),
        )
    )


values = st.recursive(leaves, containers, max_leaves=25)
keys = st.from_regex(r"[a-z0-9_]+(/[a-z0-9_.]+){0,3}", fullmatch=True) | texts
section_names = st.from_regex(r"[a-z_][a-z0-9_]*(\.[a-z0-9_]+){0,2}", fullmatch=True)
files = st.builds(
    lambda top, rest: {"": top, **rest},
    st.dictionaries(keys, values, max_size=3),
    st.dictionaries(section_names, st.dictionaries(keys, values, max_size=4), max_size=4),
)


@pytest.mark.slow  # 400 property examples
@settings(max_examples=400)
@given(files, st.sampled_from([3, 4]))
def test_what_godot_writes_reads_back(sections: dict[str, dict[str, object]], godot: int) -> None:
    text = write_file(sections, godot)
    assert same(parse_config(text), sections), text


def parse_or_refuse(text: str) -> None:
    try:
        parse_config(text)
    except ConfigSyntaxError as exc:
        assert 1 <= exc.line <= text.count("\n") + 1


@settings(max_examples=400)
@given(st.text(max_size=200))
def test_arbitrary_text_only_ever_raises_config_syntax_error(text: str) -> None:
    parse_or_refuse(text)


syntax = st.lists(
    st.sampled_from([*'[]{}(),:="\\;&^@#-.e0 \n', "Object(", "Array[", "\\u"]), max_size=6
).map("".join)


@pytest.mark.slow  # 400 property examples
@settings(max_examples=400)
@given(files, st.sampled_from([3, 4]), st.data())
def test_damaged_files_only_ever_raise_config_syntax_error(
    sections: dict[str, dict[str, object]], godot: int, data: st.DataObject
) -> None:
    text = write_file(sections, godot)
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, min(len(text), start + 8)))
    parse_or_refuse(text[:start] + data.draw(syntax) + text[end:])


# --- what each engine itself writes -------------------------------------------------------

WRITER = """\
extends SceneTree

func _init():
\tvar key = InputEventKey.new()
\tkey.scancode = KEY_SPACE
\tvar pad = InputEventJoypadButton.new()
\tpad.button_index = 2
\tProjectSettings.set_setting("input/jump", {"deadzone": 0.5, "events": [key, pad]})
\tProjectSettings.set_setting("display/window/size/width", 640)
\tProjectSettings.set_setting("custom/vec", Vector2(1.5, -2))
\tProjectSettings.set_setting("custom/color", Color(1, 0.5, 0, 1))
\tProjectSettings.set_setting("custom/strings", PoolStringArray(["a", "b \\"q\\"", "c\\nd"]))
\tProjectSettings.set_setting("custom/text", "one\\ntwo \\"quoted\\" back\\\\slash \\u00e9")
\tProjectSettings.set_setting("custom/big", -1e6)
\tProjectSettings.set_setting("custom/inf", INF)
\tProjectSettings.set_setting("custom/ninf", -INF)
\tProjectSettings.set_setting("custom/nested", [1, [2, {"k": [3]}], {}, []])
\tProjectSettings.set_setting("custom/key with space", true)
\tProjectSettings.set_setting("custom/path", NodePath("a/b:c"))
\tProjectSettings.set_setting("layer_names/2d_physics/layer_1", "world")
\tquit(ProjectSettings.save())
"""
# Godot 4's names, and what only Godot 4 writes: StringName, typed arrays and dictionaries.
WRITER4 = (
    WRITER.replace("func _init():", "func _initialize():")
    .replace("key.scancode", "key.keycode")
    .replace("PoolStringArray", "PackedStringArray")
    .replace("window/size/width", "window/size/viewport_width")
    .replace(
        "\tquit(",
        '\tProjectSettings.set_setting("custom/name", &"walk")\n'
        "\tvar typed: Array[int] = [1, 2]\n"
        '\tProjectSettings.set_setting("custom/typed", typed)\n'
        '\tvar td: Dictionary[String, int] = {"a": 1}\n'
        '\tProjectSettings.set_setting("custom/typed_dict", td)\n'
        "\tquit(",
    )
)


@pytest.mark.godot
def test_the_project_file_each_engine_writes_parses(tmp_path: Path, engine: Engine) -> None:
    engine.require()
    four = engine.major == 4
    application = 'config/name="Live Writer"\nrun/main_scene="res://main.tscn"\n'
    project, _ = engine.run_script(tmp_path, WRITER4 if four else WRITER, application)
    text = (project / "project.godot").read_text()
    assert "Object(InputEventKey," in text, text
    # Godot 3.2 writes -inf; 3.6 and 4 write inf_neg.
    assert ("-inf" if engine.version.startswith("3.2.") else "inf_neg") in text, text
    parsed = parse_config(text)
    jump = parsed["input"]["jump"]
    assert isinstance(jump, dict) and jump["deadzone"] == 0.5
    key, pad = jump["events"]
    assert isinstance(key, GodotObject) and key.class_name == "InputEventKey"
    code = "keycode" if four else "scancode"
    assert (key.properties[code], key.properties["device"]) == (32, 0)
    assert key.properties["script"] is None and key.properties["pressed"] is False
    assert isinstance(pad, GodotObject) and pad.class_name == "InputEventJoypadButton"
    assert (pad.properties["button_index"], pad.properties["pressure"]) == (2, 0.0)
    width = "window/size/viewport_width" if four else "window/size/width"
    assert parsed["display"][width] == 640
    assert parsed["layer_names"] == {"2d_physics/layer_1": "world"}
    expected: dict[str, object] = {
        "vec": Constructed("Vector2", 1.5, -2),
        "color": Constructed("Color", 1, 0.5, 0, 1),
        "strings": Constructed(
            "PackedStringArray" if four else "PoolStringArray", "a", 'b "q"', "c\nd"
        ),
        "text": 'one\ntwo "quoted" back\\slash é',
        "big": -1e6,
        "inf": math.inf,
        "ninf": -math.inf,
        "nested": [1, [2, {"k": [3]}], {}, []],
        "key with space": True,
        "path": NodePath("a/b:c"),
    }
    if four:
        # Godot 4.6.3 writes these as &"walk", Array[int]([1, 2]), Dictionary[String, int]({…}).
        assert 'name=&"walk"' in text and "Array[int]([1, 2])" in text, text
        assert "Dictionary[String, int]({" in text, text
        expected |= {
            "name": StringName("walk"),
            "typed": TypedArray("int", [1, 2]),
            "typed_dict": TypedDictionary("String", "int", {"a": 1}),
        }
    assert same(parsed["custom"], expected), text
    assert info(project)["name"] == "Live Writer"
    assert info(project)["main_scene"] == "res://main.tscn"


SCENE = """\
[gd_scene load_steps=3 format=3 uid="uid://c2c0"]

[ext_resource type="Script" uid="uid://bt" path="res://os_test.gd" id="1"]

[sub_resource type="GDScript" id="2"]
script/source = "extends Node
var s = \\"[node name=\\\\\\"X\\\\\\"]\\"
"

[node name="OSTest" type="Panel" unique_id=940490937]
data = PackedInt32Array(1, 2, 3)
text = "a ] [ ) ( } {
[node name=\\"not a header\\"]"
meta = {
"k": [1, (2), {"x": "]"}]
}
script = ExtResource("1")

[connection signal="pressed" from="A" to="." method="_on" binds= [ 1, "]" ]]
"""


def test_a_text_scene_reads_section_by_section_keeping_what_is_asked():
    sections = list(resource_sections(SCENE, keep=("script/source", "script")))
    assert [(s.tag, s.fields) for s in sections] == [
        ("gd_scene", {"load_steps": 3, "format": 3, "uid": "uid://c2c0"}),
        (
            "ext_resource",
            {"type": "Script", "uid": "uid://bt", "path": "res://os_test.gd", "id": "1"},
        ),
        ("sub_resource", {"type": "GDScript", "id": "2"}),
        ("node", {"name": "OSTest", "type": "Panel", "unique_id": 940490937}),
        (
            "connection",
            {"signal": "pressed", "from": "A", "to": ".", "method": "_on", "binds": [1, "]"]},
        ),
    ]
    assert sections[2].properties == {
        "script/source": 'extends Node\nvar s = "[node name=\\"X\\"]"\n'
    }
    assert sections[3].properties == {"script": Constructed("ExtResource", "1")}  # the rest passed
    passed = list(resource_sections(SCENE, fields=("path", "binds")))
    assert [s.fields for s in passed] == [
        {},
        {"path": "res://os_test.gd"},
        {},
        {},
        {"binds": [1, "]"]},
    ]
    # Fields not asked for are passed over: a blank after "=", brackets and a "]" in a string.
    assert [s.fields for s in resource_sections(SCENE, fields=("id",))][-2:] == [{}, {}]
    for broken in ('[node name="a"]\nx = "open\n', '[node name="a"]\nx = (1]]\n', "x = 1\n"):
        with pytest.raises(ConfigSyntaxError):
            list(resource_sections(broken))

"""Expressions as scripts write them (interface §13), through the server on a real game stopped
at breakpoints on every engine: ``$Path``, ``$"Path"`` and ``%Unique`` evaluate as
``get_node`` on the frame's self (Godot 4); strings and the modulo operator stay as written;
an unknown name, a GDScript-only function and a node shorthand in a frame whose self is no
Node answer ``invalid_argument`` with the engine's words and what to write instead. Godot 3's
debugger has no evaluation: there every expression answers that, and a shorthand the grammar
cannot read is refused before any engine is asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.engines import Engine
from tests.support.servers import answer, ok, stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.slow]

MAIN_GD = """\
extends Node2D

var speed = 42

func _ready():
\tvar local_a = 7
\tvar helper = preload("res://helper.gd").new()
\tprint(helper.work(local_a))
\tprint(local_a)
"""
HELPER_GD = """\
extends Reference

var amount = 3

func work(n):
\tvar inside = n * 2
\treturn inside + amount
"""
SCENE = """\
[gd_scene load_steps=2 format=2]

[ext_resource path="res://main.gd" type="Script" id=1]

[node name="Main" type="Node2D"]
script = ExtResource( 1 )

[node name="Jump" type="Timer" parent="."]

[node name="Deep" type="Node" parent="Jump"]
{unique}
[node name="With Space" type="Node" parent="."]
"""


def project(root: Path, engine: Engine) -> Path:
    """Main (a Node2D) with a child Jump (a Timer), Jump's child Deep (unique on Godot 4)
    and a child named with a space; main.gd stops before it calls a Reference's method."""
    root.mkdir()
    (root / "project.godot").write_text(
        engine.port('config_version=4\n\n[application]\n\nrun/main_scene="res://main.tscn"\n')
    )
    (root / "main.gd").write_text(MAIN_GD)
    (root / "helper.gd").write_text(engine.port(HELPER_GD))
    unique = "unique_name_in_owner = true\n" if engine.major >= 4 else ""
    (root / "main.tscn").write_text(engine.port(SCENE.format(unique=unique)))
    return root


def frames(state: dict[str, Any]) -> list[tuple[str, int, str]]:
    return [(f["path"], f["line"], f["function"]) for f in state["stack"]]


UNKNOWN_HINT = (
    "is no local of this frame and no property, constant or method of its self; the "
    "expression also sees autoloads and engine singletons, but no class names (reach a "
    'script as ResourceLoader.load("res://….gd")) and no other frame\'s locals (evaluate '
    "those with that frame's index as frame); runtime_debug_variables lists the frame's names"
)
LONE = {
    "outcome": "invalid_argument",
    "message": "expression: a node name is needed after '$', not the end "
    '($Name, $Name/Child or $"Name") (at its end)',
}


async def test_node_shorthands_evaluate_as_a_script_means_them(
    tmp_path: Path, engine: Engine
) -> None:
    root = project(tmp_path / "project", engine)
    breakpoints = ["res://main.gd:8", "res://helper.gd:7"]
    with anyio.fail_after(180):
        async with stdio_client(root, tmp_path / "state") as c:
            start = {"mode": "headless", "debug": True, "breakpoints": breakpoints}
            sid = {"session_id": (await ok(c, "runtime.session.start", start))["session"]["id"]}
            at = await ok(c, "runtime.debug.state", {**sid, "wait_seconds": 20})
            assert frames(at) == [("res://main.gd", 8, "_ready")]

            async def evaluate(expression: str, frame: int = 0) -> dict[str, Any]:
                args = {**sid, "expression": expression, "frame": frame}
                return await answer(c, "runtime.debug.evaluate", args)

            async def value(expression: str, frame: int = 0) -> Any:
                got = await evaluate(expression, frame)
                assert got["outcome"] == "ok", (expression, got)
                return got["value"]

            # Refused before any engine is asked, on every engine.
            assert await evaluate("$") == LONE
            assert await evaluate("x.$Jump") == {
                "outcome": "invalid_argument",
                "message": "expression: a node path ($Name) cannot follow '.' (at character 3)",
            }

            if engine.major == 3:
                version = engine.version.rstrip(".")
                for expression in ("$Jump.get_class()", "%Deep.name", "speed"):
                    assert await evaluate(expression) == {
                        "outcome": "unavailable",
                        "message": f"Godot {version}'s debugger has no evaluation",
                    }
                assert (await ok(c, "runtime.session.stop", sid))["state"] == "stopped"
                return

            assert await value("$Jump.get_class()") == "Timer"
            assert await value('$"Jump".name') == "Jump"
            assert await value("$'With Space'.get_class()") == "Node"
            assert await value('$"With Space/../Jump".name') == "Jump"
            assert await value("$Jump/Deep.get_parent().name") == "Jump"
            assert await value("%Deep.name") == "Deep"
            assert await value('%"Deep".get_parent().name') == "Jump"
            assert await value("$/root/Main/%Deep.name") == "Deep"
            assert await value("[$Jump.name, %Deep.name]") == ["Jump", "Deep"]
            # Strings and the modulo operator are the engine's, as written.
            assert await value('"$Jump %s" % speed') == "$Jump 42"
            assert await value('"%Deep" + str(speed % 5)') == "%Deep2"
            assert await value("speed % 5 + local_a") == 9
            assert await value("$Jump.get_child_count() % 2") == 1

            assert await evaluate("nope_nope + 1") == {
                "outcome": "invalid_argument",
                "message": "Invalid named index 'nope_nope' for base type Object: "
                f"'nope_nope' {UNKNOWN_HINT}",
            }
            assert await evaluate("len([1, 2])") == {
                "outcome": "invalid_argument",
                "message": "On call to 'len': 'len' is GDScript's own function, which the "
                "engine's expressions lack: use the value's own methods (size(), length()) "
                'or an engine singleton\'s (ResourceLoader.load("res://…"))',
            }
            assert await value("[1, 2].size()") == 2
            assert await evaluate("$Missing") == {
                "outcome": "invalid_argument",
                "message": 'Node not found: "Missing" (relative to "/root/Main").',
            }

            # In a Reference's method, self is no Node: the shorthand says so; the frame
            # below (Main's _ready) still reaches the nodes.
            await ok(c, "runtime.debug.control", {**sid, "action": "continue"})
            at = await ok(c, "runtime.debug.state", {**sid, "wait_seconds": 20})
            assert frames(at) == [
                ("res://helper.gd", 7, "work"),
                ("res://main.gd", 8, "_ready"),
            ]
            assert await value("inside + amount") == 17
            assert await evaluate("$Jump.get_class()") == {
                "outcome": "invalid_argument",
                "message": "On call to 'get_node': the frame's self is a RefCounted, not a "
                "Node: $Path and %Name mean get_node on self, which only a Node has; evaluate "
                "in a frame whose self is a Node (its index as frame), or reach the scene as "
                'Engine.get_main_loop().current_scene.get_node("…")',
            }
            assert await value('Engine.get_main_loop().current_scene.get_node("Jump").name') == (
                "Jump"
            )
            assert await value("$Jump.get_class()", frame=1) == "Timer"
            assert await value("%Deep.name", frame=1) == "Deep"
            assert await evaluate("local_a") == {
                "outcome": "invalid_argument",
                "message": "Invalid named index 'local_a' for base type Object: "
                f"'local_a' {UNKNOWN_HINT}",
            }
            assert await value("local_a", frame=1) == 7

            still = await ok(c, "runtime.debug.state", sid)  # the game is still stopped there
            assert frames(still)[0] == ("res://helper.gd", 7, "work")
            # What the engine printed while it evaluated is not the game's log.
            errors = await ok(c, "runtime.log.read", {**sid, "min_level": "error"})
            said = [x["text"] for x in errors["lines"]]
            assert not [t for t in said if "get_node" in t or "nope_nope" in t], said
            assert (await ok(c, "runtime.session.stop", sid))["state"] == "stopped"

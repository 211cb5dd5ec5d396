"""What the engine loads with a scene or a script, read from the files (``project/reach.py``),
and what it decides: whether a game needs C# or only carries it, whether a script reaches a
link out of the project. Hostile projects: cycles, huge files, links out, odd text."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from godot_mcp.engine.project import reach
from godot_mcp.engine.project.facts import csharp_fit, game_roots
from godot_mcp.errors import InvalidArgument
from godot_mcp.features.debug.service import refuse_links_out

PROJECT = 'config_version=4\n\n[application]\n\nconfig/name="p"\n'


def scene(*paths: str, script: str | None = None) -> str:
    """A Godot 3 text scene naming ``paths`` as ext_resources (the first its script)."""
    head = "".join(
        f'[ext_resource path="{p}" type="Script" id={i}]\n' for i, p in enumerate(paths, 1)
    )
    body = '[node name="Root" type="Node"]\n' + ("script = ExtResource( 1 )\n" if paths else "")
    return f"[gd_scene load_steps={len(paths) + 1} format=2]\n\n{head}\n{body}" + (script or "")


def write(root: Path, files: dict[str, str | bytes], config: str = "") -> Path:
    root.mkdir(parents=True)
    (root / "project.godot").write_text(PROJECT + config)
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            (root / rel).write_bytes(data)
        else:
            (root / rel).write_text(data)
    return root


# misc/os_test's shape: a GDScript main scene, a .csproj, a C# script loaded behind a guard.
GUARDED = """\
extends Node2D
# const Never = preload("res://Optional.cs")
var text = "preload(\\"res://Optional.cs\\")"
var more = '''
extends "res://Optional.cs"
'''

func _ready():
\tif ResourceLoader.exists("res://Optional.cs"):
\t\t$Optional.set_script(load("res://Optional.cs"))
"""
CARRIES = {
    "main.tscn": scene("res://main.gd"),
    "main.gd": GUARDED,
    "Carries.csproj": '<Project Sdk="Godot.NET.Sdk/4.6.0"/>\n',
    "Optional.cs": "public partial class Optional : Godot.Node {}\n",
    "optional/panel.tscn": scene("res://Optional.cs"),  # nothing the game runs loads it
}
# An autoload's scene, its script, a preload chain (relative, extends of a path) to C#.
NEEDS = {
    "main.tscn": scene("res://main.gd"),
    "main.gd": "extends Node2D\n",
    "hud.tscn": scene("hud.gd"),
    "hud.gd": 'extends CanvasLayer\nconst Chain = preload("lib/chain.gd")\n',
    "lib/chain.gd": 'extends "../base.gd"\nconst Deep = preload( "Deep.cs" )\n',
    "base.gd": 'extends Node\nconst Back = preload("res://lib/chain.gd")\n',  # a cycle
    "lib/Deep.cs": "public partial class Deep : Godot.Node {}\n",
}
MAIN = 'run/main_scene="res://main.tscn"\n'
AUTOLOAD = '\n[autoload]\n\nHud="*res://hud.tscn"\n'


def test_a_project_that_loads_its_csharp_only_behind_a_guard_only_carries_it(tmp_path):
    root = write(tmp_path / "p", CARRIES, MAIN)
    assert game_roots(root) == ["res://main.tscn"]
    fit = csharp_fit(root)
    assert (fit.needed, fit.files) == (None, ["res://Optional.cs"])
    assert list(reach.walk(root, game_roots(root)).by) == ["res://main.tscn", "res://main.gd"]
    # A session started on the scene that attaches it needs it.
    assert csharp_fit(root, "res://optional/panel.tscn").needed == "res://Optional.cs"


def test_csharp_reached_through_an_autoloads_scene_and_a_preload_chain_is_needed(tmp_path):
    root = write(tmp_path / "p", NEEDS, MAIN + AUTOLOAD)
    assert game_roots(root) == ["res://main.tscn", "res://hud.tscn"]
    reached = reach.walk(root, game_roots(root))
    assert reached.complete and reached.outside == []
    assert list(reached.by) == [
        "res://main.tscn",
        "res://hud.tscn",
        "res://main.gd",
        "res://hud.gd",
        "res://lib/chain.gd",
        "res://base.gd",
        "res://lib/Deep.cs",
    ]
    assert reached.chain("res://lib/Deep.cs") == [
        "res://hud.tscn",
        "res://hud.gd",
        "res://lib/chain.gd",
        "res://lib/Deep.cs",
    ]
    assert csharp_fit(root).needed == "res://lib/Deep.cs"


def test_the_main_scene_attaching_csharp_is_needed_in_every_spelling(tmp_path):
    cs = "public class Main {}\n"
    builtin = scene(
        script=(
            '\n[sub_resource type="GDScript" id=1]\n'
            'script/source = "extends Node\nconst M = preload(\\"res://Main.cs\\")\n"\n'
        )
    ).replace('[node name="Root" type="Node"]\n', "")
    builtin += '\n[node name="Root" type="Node"]\nscript = SubResource( 1 )\n'
    cases = {
        "text": {"main.tscn": scene("Main.cs")},  # relative to the scene's folder
        "binary": {"main.scn": b"RSRC\x00\x00res://Main.cs\x00\x00\x00"},
        "builtin": {"main.tscn": builtin},
        "resource": {
            "main.tscn": scene("res://data.tres"),
            "data.tres": '[gd_resource type="Resource" load_steps=2 format=2]\n\n'
            '[ext_resource path="res://Main.cs" type="Script" id=1]\n\n'
            "[resource]\nscript = ExtResource( 1 )\n",
        },
        # A scene that does not read is taken by its ext_resource lines.
        "odd": {"main.tscn": scene("res://Main.cs").replace("format=2]", "format=2 odd=]")},
    }
    for name, files in cases.items():
        main = "main.scn" if name == "binary" else "main.tscn"
        root = write(tmp_path / name, {**files, "Main.cs": cs}, f'run/main_scene="{main}"\n')
        assert csharp_fit(root).needed == "res://Main.cs", name


def test_uids_name_the_main_scene_and_autoloads(tmp_path):
    files = {
        "main.tscn": scene("res://main.gd").replace("format=2]", 'format=3 uid="uid://m41n"]'),
        "main.gd": 'extends Node\nconst H = preload("uid://h3lp")\n',
        "help.gd": 'extends Node\nconst S = preload("res://S.cs")\n',
        "help.gd.uid": "uid://h3lp\n",
        "S.cs": "",
    }
    root = write(tmp_path / "p", files, 'run/main_scene="uid://m41n"\n')
    assert game_roots(root) == ["res://main.tscn"]
    assert reach.walk(root, game_roots(root)).chain("res://S.cs") == [
        "res://main.tscn",
        "res://main.gd",
        "res://help.gd",
        "res://S.cs",
    ]


def test_the_walk_is_bounded_in_files_and_bytes(tmp_path):
    chain = {
        f"s{i}.gd": f'extends Node\nconst N = preload("res://s{i + 1}.gd")\n' for i in range(6000)
    }
    root = write(tmp_path / "long", chain)
    reached = reach.walk(root, ["res://s0.gd"])
    assert not reached.complete
    assert len(reached.by) == reach.MAX_FILES + 1  # read that many, the last one named only
    padded = "#" * reach.MAX_FILE_BYTES + '\nconst Far = preload("res://Far.cs")\n'
    root = write(tmp_path / "big", {"big.gd": padded, "Far.cs": ""})
    assert list(reach.walk(root, ["res://big.gd"]).by) == ["res://big.gd"]  # its head only


def test_nothing_outside_the_project_is_read_or_named_a_place_in_it(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "out.gd").write_text('extends Node\nconst S = preload("res://secret.gd")\n')
    (outside / "lib").mkdir()
    files = {
        "a.gd": 'extends Node\nconst O = preload("res://out.gd")\n',
        "b.gd": 'extends Node\nconst L = preload("res://lib/x.gd")\n',
        "c.gd": 'extends "res://../../c.gd"\nconst U = preload("user://u.gd")\n',
        "secret.gd": "",
    }
    root = write(tmp_path / "p", files)
    os.symlink(outside / "out.gd", root / "out.gd")
    os.symlink(outside / "lib", root / "lib")
    reached = reach.walk(root, ["res://a.gd", "res://b.gd", "res://c.gd"])
    assert reached.outside == ["res://out.gd", "res://lib/x.gd"]
    assert "res://secret.gd" not in reached.by  # out.gd was never read
    assert list(reached.by) == [
        "res://a.gd",
        "res://b.gd",
        "res://c.gd",
        "res://out.gd",
        "res://lib/x.gd",
    ]


def test_a_reload_refuses_only_the_scripts_that_are_or_reach_a_link_out(tmp_path):
    outside = tmp_path / "outside.gd"
    outside.write_text("extends Node\n")
    files = {
        "clean.gd": 'extends Node\nconst T = preload("res://tools.gd")\n',
        "tools.gd": "extends Node\n",
        "uses.gd": 'extends "res://mid.gd"\n',
        "mid.gd": 'extends Node\nconst S = preload("res://level.tscn")\n',
        "level.tscn": scene("res://linked.gd"),
    }
    root = write(tmp_path / "p", files)
    os.symlink(outside, root / "linked.gd")
    refuse_links_out(root, ["res://clean.gd", "res://tools.gd"])  # nothing to refuse
    with pytest.raises(InvalidArgument) as refused:
        refuse_links_out(root, ["res://clean.gd", "res://uses.gd"])
    assert refused.value.message == (
        "res://uses.gd loads res://linked.gd, which leads out of the project through a "
        "symbolic link; reloads read the project only, and the game keeps its old code"
    )
    with pytest.raises(InvalidArgument) as refused:
        refuse_links_out(root, ["res://linked.gd"])
    assert refused.value.message == (
        "res://linked.gd leads out of the project through a symbolic link; reloads read the "
        "project only, and the game keeps its old code"
    )
    assert str(tmp_path) not in refused.value.message


def test_hostile_files_read_in_one_pass_and_the_paths_named_are_bounded(tmp_path):
    # Shapes that make a backtracking scan quadratic: each is read once, to its end.
    hostile = {
        "stored.scn": (b"res://" * 600_000, []),  # 3.6 MB of starts, no path ever ends
        "escaped.gd": (('"""' + '\\"""' * 200_000).encode(), []),  # a string never closed
        "opens.gd": (b'preload("' * 200_000, ["res://preload("]),
        "lines.tscn": (b'[ext_resource path="' * 200_000, ["res://[ext_resource path="]),
    }
    root = write(tmp_path / "hostile", {name: data for name, (data, _) in hostile.items()})
    for name, (_, named) in hostile.items():
        reached = reach.walk(root, [f"res://{name}"])
        assert reached.complete and list(reached.by) == [f"res://{name}", *named], name
    many = "".join(f'const C{i} = preload("res://c{i}.gd")\n' for i in range(reach.MAX_PATHS + 10))
    (root / "many.gd").write_text(many)  # each path it names is one more to look at
    reached = reach.walk(root, ["res://many.gd"])
    assert not reached.complete and len(reached.by) == reach.MAX_PATHS


@pytest.mark.parametrize("unit", ['"\\', "'\\", '"""\\', "'''x", 'preload("', "\"'#\\\n"])
def test_a_script_of_strings_left_open_is_read_in_one_pass(unit: str):
    """A string left open runs to its line's end (a triple-quoted one to the text's): no
    text makes the reader scan a line again from each quote (40 KB of ``"\\`` took 23 s).
    Measured against a plain script of the same size in the same run."""
    code = ("extends Node\nvar s = " + unit * 40_000 + "\n").encode()
    plain = ("extends Node\nvar s = " + "x" * (len(code) - 22) + "\n").encode()

    def seconds(text: bytes) -> float:
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            list(reach.references("res://main.gd", text))
            best = min(best, time.perf_counter() - start)
        return best

    assert seconds(code) < 20 * max(seconds(plain), 1e-3)


def test_a_string_left_open_ends_at_its_line_and_hides_no_later_reference():
    code = (
        'extends "res://base.gd"\nvar a = preload("res://x.tscn") # preload("res://no.gd")\n'
        'var b = "preload(\\"res://no2.gd\\")"\nvar c = """\npreload("res://no3.gd")\n"""\n'
        'var d = preload(\'res://y.gd\')\nvar e = "open\nvar f = preload("res://z.gd")\n'
    )
    found = list(reach.references("res://main.gd", code.encode()))
    assert found == ["res://base.gd", "res://x.tscn", "res://y.gd", "res://z.gd"]


def test_csharp_file_names_are_named_as_a_client_may_read_them(tmp_path):
    files = {**CARRIES, "evil\x1b]0;pwned\x07\x1b[2J\u202e.cs": "class X {}\n"}
    root = write(tmp_path / "p", files, MAIN)
    fit = csharp_fit(root)
    assert fit.needed is None
    assert fit.files == ["res://Optional.cs", "res://evil.cs"]

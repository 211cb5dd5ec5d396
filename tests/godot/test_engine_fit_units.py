"""What a project needs of its engine (C#, the version that saved it) and how the check reads
a C# project on an engine without .NET and a scene that fails when instantiated."""

from __future__ import annotations

from pathlib import Path

import pytest

from godot_mcp.engine.process.locate import GodotInstall, is_dotnet
from godot_mcp.engine.project import tree
from godot_mcp.engine.project.facts import (
    csharp_reason,
    newer_engine,
    read_facts,
    refuse_csharp,
)
from godot_mcp.errors import Unavailable
from godot_mcp.features.check import job as check

M = "@@godot-mcp-check-0123456789abcdef"


@pytest.mark.parametrize(
    ("version", "dotnet"),
    [
        ("4.3.stable.mono.official.77dcf97d8", True),  # what a .NET build of Godot 4 prints
        ("3.5.1.stable.mono.official.6fed1ffa3", True),  # ...and of Godot 3
        ("4.5.dev.dotnet.custom_build", True),
        ("4.6.3.stable.debian4.6.3+ds-3", False),  # Debian's engines
        ("3.2.3.stable.custom_build", False),
        ("4.2.stable.official.monocle", False),  # a word that merely starts with "mono"
        (None, None),
        ("", None),
    ],
)
def test_a_dotnet_build_is_told_by_its_version(version, dotnet):
    assert is_dotnet(version) is dotnet


def _install(version: str | None, headless: str | None = None) -> GodotInstall:
    return GodotInstall("godot", "godot", version, headless or version, 4, None, None)


def test_the_install_says_whether_each_engine_is_dotnet():
    plain = _install("4.6.3.stable.debian")
    assert plain.dotnet is False and plain.headless_dotnet is False
    mono = _install("4.3.stable.mono.official", "4.3.stable.official")
    assert mono.dotnet is True and mono.headless_dotnet is False
    assert _install(None).dotnet is None


def project(root: Path, config: str, files: dict[str, str] | None = None) -> Path:
    root.mkdir()
    (root / "project.godot").write_text(config)
    for name, text in (files or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


GODOT4 = 'config_version=5\n\n[application]\n\nconfig/name="p"\n'
GODOT3 = 'config_version=4\n\n[application]\n\nconfig/name="p"\n'


def test_features_are_read_from_godot4_and_empty_on_godot3(tmp_path):
    four = project(
        tmp_path / "four",
        GODOT4 + 'config/features=PackedStringArray("4.7", "GL Compatibility")\n',
    )
    assert read_facts(four).features == ["4.7", "GL Compatibility"]
    assert read_facts(four).dotnet is False
    assert read_facts(project(tmp_path / "three", GODOT3)).features == []
    broken = project(tmp_path / "broken", "config_version=5\n[application\n")
    assert read_facts(broken).features == [] and read_facts(broken).dotnet is False


@pytest.mark.parametrize(
    ("config", "files"),
    [
        (GODOT4 + 'config/features=PackedStringArray("4.6", "C#")\n', {}),
        (GODOT4 + '\n[dotnet]\n\nproject/assembly_name="p"\n', {}),
        (GODOT3 + '\n[mono]\n\nproject/assembly_name="p"\n', {}),
        (GODOT3, {"p.csproj": "<Project/>"}),
        (GODOT4, {"deep/er/Player.cs": "class Player {}"}),
    ],
)
def test_each_sign_of_csharp_is_taken(tmp_path, config, files):
    assert read_facts(project(tmp_path / "p", config, files)).dotnet is True


def test_csharp_where_godot_does_not_look_does_not_count(tmp_path):
    files = {
        ".hidden/A.cs": "",
        "ignored/.gdignore": "",
        "ignored/B.cs": "",
        ".godot/mono/C.cs": "",
        "sub/p.csproj": "",  # a .csproj counts at the root only
        "notes.cs.txt": "",
    }
    assert read_facts(project(tmp_path / "p", GODOT4, files)).dotnet is False


MAIN_CS_SCENE = (
    '[gd_scene load_steps=2 format=2]\n\n[ext_resource path="res://Main.cs" type="Script" id=1]'
    '\n\n[node name="Main" type="Node2D"]\nscript = ExtResource( 1 )\n'
)


def test_a_game_that_needs_csharp_is_refused_on_an_engine_without_dotnet(tmp_path):
    main = GODOT3 + 'run/main_scene="res://Main.tscn"\n'
    sharp = project(
        tmp_path / "sharp", main, {"Main.cs": "", "Sharp.csproj": "", "Main.tscn": MAIN_CS_SCENE}
    )
    carries = project(tmp_path / "carries", GODOT3, {"Main.cs": "", "Sharp.csproj": ""})
    plain = project(tmp_path / "plain", GODOT3, {"main.gd": "extends Node\n"})
    install = _install("3.2.3.stable.custom_build", "3.2.3.stable.custom_build")
    for mode in ("windowed", "headless"):
        with pytest.raises(Unavailable) as caught:
            refuse_csharp(sharp, install, mode)
        assert caught.value.message == (
            "the project uses C# and this Godot 3.2.3 is not a .NET build, so its C# scripts "
            "cannot load; run it with a .NET build of Godot"
        )
        assert refuse_csharp(carries, install, mode) == [
            "this Godot 3.2.3 is not a .NET build, so the project's C# scripts will not load "
            "(res://Main.cs); what the game loads at start attaches none of them"
        ]
        assert refuse_csharp(plain, install, mode) == []
    # A .NET build runs it; an engine of unknown version is not second-guessed.
    refuse_csharp(sharp, _install("3.5.stable.mono.official"), "windowed")
    refuse_csharp(sharp, _install(None), "windowed")
    # Each mode asks its own engine.
    mixed = _install("4.3.stable.mono.official", "4.3.stable.official")
    refuse_csharp(sharp, mixed, "windowed")
    with pytest.raises(Unavailable):
        refuse_csharp(sharp, mixed, "headless")


@pytest.mark.parametrize(
    ("features", "version", "warning"),
    [
        (
            ["4.7", "GL Compatibility"],
            "4.6.3.stable.debian4.6.3+ds-3",
            "the project was saved by Godot 4.7 and this server runs Godot 4.6.3: what Godot "
            "4.7 added (classes, properties) does not load here",
        ),
        (
            ["5.0"],
            "4.6.stable",
            "the project was saved by Godot 5.0 and this server runs Godot 4.6: what Godot "
            "5.0 added (classes, properties) does not load here",
        ),
        (["4.6", "Forward Plus"], "4.6.3.stable", None),  # the same minor version
        (["4.2"], "4.6.3.stable", None),  # older
        (["GL Compatibility"], "4.6.3.stable", None),  # no version declared
        ([], "3.2.3.stable.custom_build", None),  # Godot 3 declares none
        (["4.7"], None, None),  # no engine version known
    ],
)
def test_a_newer_saving_engine_is_named_with_the_servers(features, version, warning):
    assert newer_engine(features, version) == warning


def _plan(files: list[str]) -> tree.Plan:
    p = tree.Plan(root=Path("/nonexistent"))
    dirs = sorted({"/".join(f.split("/")[:i]) for f in files for i in range(1, f.count("/") + 1)})
    p.entries = [tree.Entry(d, d, True) for d in dirs] + [tree.Entry(f, f, False) for f in files]
    return p


def test_the_csharp_problem_is_on_the_first_cs_file_godot_sees():
    files = ["scripts/Zed.cs", "Main.cs", ".hidden/A.cs", "ign/.gdignore", "ign/B.cs"]
    assert check.csharp_file(_plan(["project.godot", *files])) == "res://Main.cs"
    assert check.csharp_file(_plan(["project.godot", "b.csproj", "a.csproj"])) == "res://a.csproj"
    assert check.csharp_file(_plan(["project.godot", "x/.gdignore", "x/A.cs"])) == (
        "res://project.godot"
    )


KNOWN = frozenset(
    {"res://Main.cs", "res://Main.tscn", "res://Level.tscn", "res://b.tscn", "res://gone.tscn"}
)


def read(
    text: str,
    csharp: bool,
    known: frozenset[str] = KNOWN,
    csharp_only: frozenset[str] = frozenset(),
) -> check.OutputReader:
    begun = [ln.split(" BEGIN ", 1)[1] for ln in text.splitlines() if f"{M} BEGIN " in ln]
    reader = check.OutputReader(
        M,
        known,
        expected=list(dict.fromkeys(begun)),
        csharp=csharp,
        csharp_only=set(csharp_only),
    )
    if csharp:
        reader.report(check.Problem("load", "res://Main.cs", csharp_reason("Godot 3.2.3")))
    for line in text.splitlines():
        reader.feed(line)
    reader.finish()
    return reader


def found(reader: check.OutputReader) -> list[tuple[str, str, int | None, str]]:
    return [(p.kind, p.path, p.line, p.message) for p in reader.problems]


# Godot 3.2.3's own lines for a scene running a C# script, and a scene instancing that one.
CSHARP3 = f"""\
{M} BEGIN res://Level.tscn
ERROR: _load: No loader found for resource: res://Main.cs.
   At: core/io/resource_loader.cpp:286.
ERROR: poll: res://Main.tscn:3 - Parse Error: [ext_resource] referenced nonexistent resource at: res://Main.cs
   At: scene/resources/resource_format_text.cpp:440.
ERROR: poll: res://Level.tscn:3 - Parse Error: [ext_resource] referenced nonexistent resource at: res://Main.tscn
   At: scene/resources/resource_format_text.cpp:440.
{M} END failed res://Level.tscn
{M} BEGIN res://Main.tscn
ERROR: _load: No loader found for resource: res://Main.cs.
ERROR: poll: res://Main.tscn:3 - Parse Error: [ext_resource] referenced nonexistent resource at: res://Main.cs
ERROR: load: Failed to load resource 'res://Main.tscn'.
{M} END failed res://Main.tscn
{M} BEGIN res://b.tscn
ERROR: poll: res://b.tscn:4 - Parse Error: [ext_resource] referenced nonexistent resource at: res://nowhere.gd
{M} END failed res://b.tscn
{M} DONE
"""
# Godot 4.6.3's: the scene loads without its script.
CSHARP4 = f"""\
{M} BEGIN res://Main.tscn
ERROR: No loader found for resource: res://Main.cs (expected type: Script)
   at: _load (core/io/resource_loader.cpp:358)
ERROR: res://Main.tscn:6 - Parse Error: [ext_resource] referenced non-existent resource at: res://Main.cs.
   at: _printerr (scene/resources/resource_format_text.cpp:40)
{M} INSTANCE res://Main.tscn
{M} END ok res://Main.tscn
{M} DONE
"""


def test_a_csharp_project_is_one_problem_and_its_scenes_none_on_an_engine_without_dotnet():
    why = csharp_reason("Godot 3.2.3")
    assert found(read(CSHARP3, csharp=True)) == [
        ("load", "res://Main.cs", None, why),
        # a failure of its own is still said
        ("missing_dependency", "res://b.tscn", 4, "missing file: res://nowhere.gd"),
    ]
    assert found(read(CSHARP4, csharp=True)) == [("load", "res://Main.cs", None, why)]
    # Without the engine's verdict (a .NET build), the lines mean what they always meant.
    assert found(read(CSHARP4, csharp=False)) == [
        (
            "load",
            "res://Main.tscn",
            6,
            "res://Main.cs exists but does not load (is the project imported?)",
        ),
    ]


# tests/fixtures/csharp/needs checked: an autoload's script preloads a script that preloads
# C#. The autoload loaded them first (its errors before the check begins); Godot 3.2.3 says
# the preload again, Godot 4.6.3 nothing more.
PRELOADS3 = f"""\
{M} BEGIN res://hud.gd
{M} END failed res://hud.gd
{M} BEGIN res://lib/chain.gd
ERROR: _load: No loader found for resource: res://lib/Deep.cs.
   At: core/io/resource_loader.cpp:286.
SCRIPT ERROR: GDScript::reload: Parse Error: Can't preload resource at path: res://lib/Deep.cs
   At: res://lib/chain.gd:3.
ERROR: reload: Method failed. Returning: ERR_PARSE_ERROR
   At: modules/gdscript/gdscript.cpp:599.
{M} END failed res://lib/chain.gd
{M} BEGIN res://hud.tscn
{M} INSTANCE res://hud.tscn
{M} END ok res://hud.tscn
{M} DONE
"""
PRELOADS4 = f"""\
{M} BEGIN res://hud.gd
{M} END ok res://hud.gd
{M} BEGIN res://lib/chain.gd
{M} END failed res://lib/chain.gd
{M} DONE
"""
PRELOADING = frozenset(
    {"res://hud.gd", "res://lib/chain.gd", "res://lib/Deep.cs", "res://hud.tscn", "res://Main.cs"}
)


def test_scripts_that_fail_only_for_a_preloaded_csharp_script_are_not_reported():
    reaching = frozenset({"res://hud.gd", "res://lib/chain.gd", "res://hud.tscn"})
    for lines in (PRELOADS3, PRELOADS4):
        reader = read(lines, csharp=False, known=PRELOADING)
        assert reader.problems, lines  # without the verdict, failures
        reader = read(lines, csharp=True, known=PRELOADING, csharp_only=reaching)
        assert [p.path for p in reader.problems] == ["res://Main.cs"], lines
    # Godot 3 names the C# script it could not preload: known without the walk's set too.
    reader = read(PRELOADS3, csharp=True, known=PRELOADING)
    assert [(p.path, p.message) for p in reader.problems] == [
        ("res://Main.cs", csharp_reason("Godot 3.2.3")),
        ("res://hud.gd", "Godot could not load it"),  # the walk's set is what explains it
    ]


INSTANCE = f"""\
{M} BEGIN res://Main.tscn
ERROR: is_class_enabled: Cannot get class 'AreaLight3D'.
   At: core/class_db.cpp:1329.
{M} INSTANCE res://Main.tscn
ERROR: is_class_enabled: Cannot get class 'AreaLight3D'.
   At: core/class_db.cpp:1329.
ERROR: Cannot get class 'Other'.
{M} END ok res://Main.tscn
{M} BEGIN res://b.tscn
{M} INSTANCE res://Main.tscn
ERROR: forged: an instance marker for another file is not one
{M} INSTANCE res://b.tscn
ERROR: Script inherits from native type 'Node3D', so it can't be assigned to an object \
of type 'Node2D'.
   at: instance_create (modules/gdscript/gdscript.cpp:405)
{M} END ok res://b.tscn
{M} BEGIN res://Level.tscn
{M} INSTANCE res://Level.tscn
ERROR: make_dir_recursive: Method failed. Returning: err
WARNING: Node Light of type AreaLight3D cannot be created. A placeholder will be created instead.
{M} END ok res://Level.tscn
{M} DONE
"""


def test_an_error_while_a_scene_is_instantiated_is_its_load_problem_once():
    """Only errors after the file's own INSTANCE line count (loading it printed none that
    is a problem), the first one only; noise and warnings are not problems."""
    assert found(read(INSTANCE, csharp=False)) == [
        (
            "load",
            "res://Main.tscn",
            None,
            "Cannot get class 'AreaLight3D' (when the scene is instantiated)",
        ),
        (
            "load",
            "res://b.tscn",
            None,
            "Script inherits from native type 'Node3D', so it can't be assigned to an object "
            "of type 'Node2D' (when the scene is instantiated)",
        ),
    ]


def test_both_check_scripts_instantiate_and_free_each_loaded_scene():
    here = Path(check.__file__).parent
    three = (here / "check3.gd").read_text()
    four = (here / "check4.gd").read_text()
    assert 'MARK + " INSTANCE " + p' in three and "scene.instance()" in three
    assert 'MARK + " INSTANCE " + p' in four and 'scene.call("instantiate")' in four
    for source in (three, four):
        assert "node.free()" in source and "add_child" not in source

"""Projects made for another engine than the server's, on a real Godot: a C# project on an
engine that is not a .NET build, a project saved by a newer Godot, scenes whose nodes the
engine cannot make. project.check instantiates every scene it loads (never in a tree)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from godot_mcp.engine.process.locate import engine_name
from godot_mcp.engine.project.facts import csharp_export
from tests.runtime.test_captures import ok
from tests.support import engines
from tests.support.servers import stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]

PROJECT3 = """\
config_version=4

[application]

config/name="{name}"
run/main_scene="res://{main}"
"""
PROJECT4 = """\
config_version=5

[application]

config/name="{name}"
run/main_scene="res://{main}"
config/features=PackedStringArray({features})
"""
MAIN_CS = """\
using Godot;

public {partial}class Main : Node2D
{{
    [Export] public float Speed = 1.0f;

    public override void _Ready()
    {{
        GD.Print("hello from C#");
    }}
}}
"""
PLAYER_CS = """\
using Godot;

public {partial}class Player : Node2D
{{
}}
"""
CSPROJ = """\
<Project Sdk="Godot.NET.Sdk/{sdk}">
  <PropertyGroup>
    <TargetFramework>{framework}</TargetFramework>
  </PropertyGroup>
</Project>
"""
MAIN_TSCN = """\
[gd_scene load_steps=2 format=2]

[ext_resource path="res://Main.cs" type="Script" id=1]

[node name="Main" type="Node2D"]
script = ExtResource( 1 )
Speed = 3.0
"""
# A scene that fails only because the scene it instances has a C# script.
LEVEL_TSCN = """\
[gd_scene load_steps=2 format=2]

[ext_resource path="res://Main.tscn" type="PackedScene" id=1]

[node name="Level" type="Node2D"]

[node name="Main" parent="." instance=ExtResource( 1 )]
"""
HELPER_GD = "extends Node\n\nfunc twice(x):\n\treturn 2 * x\n"


def write(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def csharp_project(root: Path) -> Path:
    """A C# project as each engine's editor writes one: a .csproj, its scripts, a main scene
    running Main.cs; Godot 4 declares "C#" among its features and a [dotnet] section,
    Godot 3 a [mono] section."""
    engine = engines.current()
    if engine.major == 3:
        project = PROJECT3.format(name="Sharp", main="Main.tscn")
        project += '\n[mono]\n\nproject/assembly_name="Sharp"\n'
        sdk, framework, partial = "3.3.0", "net472", ""
    else:
        features = '"4.6", "C#", "GL Compatibility"'
        project = PROJECT4.format(name="Sharp", main="Main.tscn", features=features)
        project += '\n[dotnet]\n\nproject/assembly_name="Sharp"\n'
        sdk, framework, partial = "4.6.0", "net8.0", "partial "
    return write(
        root,
        {
            "project.godot": project,
            "Sharp.csproj": CSPROJ.format(sdk=sdk, framework=framework),
            "Main.cs": MAIN_CS.format(partial=partial),
            "Player.cs": PLAYER_CS.format(partial=partial),
            "Main.tscn": engine.port(MAIN_TSCN),
            "Level.tscn": engine.port(LEVEL_TSCN),
            "helper.gd": HELPER_GD,
        },
    )


def not_dotnet(version: str) -> str:
    return (
        f"the project uses C# and this {engine_name(version)} is not a .NET build, so its C# "
        "scripts cannot load; run it with a .NET build of Godot"
    )


async def test_a_csharp_project_on_an_engine_without_dotnet_is_told_so(tmp_path):
    project = csharp_project(tmp_path / "sharp")
    with anyio.fail_after(120):
        async with stdio_client(project, tmp_path / "state") as c:
            profile = await ok(c, "server.profile")
            assert profile["godot"]["dotnet"] is False  # Debian's engines are not .NET builds
            info = await ok(c, "project.info")
            assert info["dotnet"] is True
            features = ["4.6", "C#", "GL Compatibility"] if engines.current().major == 4 else []
            assert info["engine_features"] == features
            assert "warnings" not in info
            checked = await ok(c, "project.check")
            why = not_dotnet(profile["godot"]["headless_version"])
            assert checked == {
                "outcome": "ok",
                "errors": [{"path": "res://Main.cs", "kind": "load", "message": why}],
                "checked": {"scripts": 1, "scenes": 2},
                "truncated": False,
            }
            assert "not imported" not in str(checked) and "imported?" not in str(checked)
            for mode, version in (
                ("windowed", profile["godot"]["version"]),
                ("headless", profile["godot"]["headless_version"]),
            ):
                started = await c.call_tool("runtime_session_start", {"mode": mode})
                assert started.structured_content == {
                    "outcome": "unavailable",
                    "message": not_dotnet(version),
                }
            listed = await ok(c, "runtime.session.list")
            assert listed["sessions"] == []
            engine = engine_name(profile["godot"]["headless_version"])
            export = await exported(c)
            assert (export["state"], export["warnings"]) == ("succeeded", [csharp_export(engine)])


async def exported(c) -> dict:
    """An export of the project by platform (a pack), followed to its end."""
    args = {"platform": "linux", "kind": "pack"}
    export = (await ok(c, "project.export", args))["export"]
    while export["state"] == "running":
        status = {"export_id": export["id"], "wait_seconds": 50}
        export = (await ok(c, "project.export.status", status))["export"]
    return export


NEWER_MAIN3 = """\
[gd_scene format=2]

[node name="Main" type="Spatial"]

[node name="Light" type="AreaLight3D" parent="."]
"""
NEWER_MAIN4 = """\
[gd_scene format=3]

[node name="Main" type="Node3D"]

[node name="Light" type="AreaLight3D" parent="."]
"""
CLEAN_TSCN = """\
[gd_scene load_steps=2 format=2]

[ext_resource path="res://helper.gd" type="Script" id=1]

[node name="Clean" type="Node"]
script = ExtResource( 1 )
"""


async def test_a_project_saved_by_a_newer_engine_is_warned_and_its_new_classes_fail(tmp_path):
    """Godot 4: a project declaring 4.7 on 4.6.3, one scene using 4.7's AreaLight3D (a class
    the engine lacks, found only by instantiating the scene). Godot 3 records no version:
    its features are [] and there is no warning, but the missing class is still found."""
    engine = engines.current()
    if engine.major == 3:
        project = PROJECT3.format(name="Newer", main="main.tscn")
        main = NEWER_MAIN3
    else:
        features = '"4.7", "GL Compatibility"'
        project = PROJECT4.format(name="Newer", main="main.tscn", features=features)
        main = engines.with_unique_ids(NEWER_MAIN4)
    root = write(
        tmp_path / "newer",
        {
            "project.godot": project,
            "main.tscn": main,
            "clean.tscn": engine.port(CLEAN_TSCN),
            "helper.gd": HELPER_GD,
        },
    )
    with anyio.fail_after(120):
        async with stdio_client(root, tmp_path / "state") as c:
            profile = await ok(c, "server.profile")
            info = await ok(c, "project.info")
            checked = await ok(c, "project.check")
            export = await exported(c)
    assert export["state"] == "succeeded"
    assert info["dotnet"] is False
    missing = "Cannot get class 'AreaLight3D' (when the scene is instantiated)"
    assert checked["errors"] == [{"path": "res://main.tscn", "kind": "load", "message": missing}]
    assert checked["checked"] == {"scripts": 1, "scenes": 2}
    if engine.major == 3:
        assert info["engine_features"] == []
        assert "warnings" not in info and "warnings" not in checked
        assert "warnings" not in export
        return
    running = engine_name(profile["godot"]["version"]).removeprefix("Godot ")
    assert running == "4.6.3"
    warning = (
        "the project was saved by Godot 4.7 and this server runs Godot 4.6.3: what Godot 4.7 "
        "added (classes, properties) does not load here"
    )
    assert info["engine_features"] == ["4.7", "GL Compatibility"]
    assert info["warnings"] == [warning]
    assert checked["warnings"] == [warning]
    assert export["warnings"] == [warning]


THREE_D_GD = {3: "extends Spatial\n", 4: "extends Node3D\n"}
MISMATCH_TSCN = """\
[gd_scene load_steps=2 format=2]

[ext_resource path="res://three_d.gd" type="Script" id=1]

[node name="Flat" type="Node2D"]
script = ExtResource( 1 )
"""
# Says when it is freed: the error it prints then is the scene's (it is being instantiated).
SPY_GD = (
    "extends Node\n\nfunc _notification(what):\n"
    '\tif what == NOTIFICATION_PREDELETE:\n\t\tpush_error("freed " + name)\n'
)
LOOP_GD = "extends Node\n\nfunc _init():\n\twhile true:\n\t\tpass\n"


def scene_of(script: str, name: str, node_type: str = "Node") -> str:
    return (
        "[gd_scene load_steps=2 format=2]\n\n"
        f'[ext_resource path="res://{script}" type="Script" id=1]\n\n'
        f'[node name="{name}" type="{node_type}"]\nscript = ExtResource( 1 )\n'
    )


async def test_each_scene_is_instantiated_freed_and_bounded(tmp_path):
    """A script that cannot attach to its node is a load problem; the instance is freed
    (its script says so); a scene whose _init never returns is a stuck file (20 s), and the
    files after it are still checked."""
    engine = engines.current()
    root = write(
        tmp_path / "inst",
        {
            "project.godot": engine.port(PROJECT3.format(name="Inst", main="z_clean.tscn")),
            "three_d.gd": THREE_D_GD[engine.major],
            "spy.gd": SPY_GD,
            "loop.gd": LOOP_GD,
            "helper.gd": HELPER_GD,
            "flat.tscn": engine.port(MISMATCH_TSCN),
            "spy.tscn": engine.port(scene_of("spy.gd", "Spy")),
            "loop.tscn": engine.port(scene_of("loop.gd", "Loop")),
            "z_clean.tscn": engine.port(CLEAN_TSCN),
            "z_spy.tscn": engine.port(scene_of("spy.gd", "Later")),
        },
    )
    with anyio.fail_after(150):
        async with stdio_client(root, tmp_path / "state") as c:
            checked = await ok(c, "project.check")
    by_path = {e["path"]: e for e in checked["errors"]}
    assert sorted(by_path) == [
        "res://flat.tscn",
        "res://loop.tscn",
        "res://spy.tscn",
        "res://z_spy.tscn",
    ], checked
    native = "Spatial" if engine.major == 3 else "Node3D"
    flat = by_path["res://flat.tscn"]
    assert flat["kind"] == "load"
    assert flat["message"].startswith(f"Script inherits from native type '{native}', so it can't")
    assert flat["message"].endswith("'Node2D' (when the scene is instantiated)")
    assert by_path["res://spy.tscn"] == {
        "path": "res://spy.tscn",
        "kind": "load",
        "message": "freed Spy (when the scene is instantiated)",
    }
    # Checked after Godot was started again past the stuck file.
    assert by_path["res://z_spy.tscn"]["message"] == "freed Later (when the scene is instantiated)"
    assert by_path["res://loop.tscn"] == {
        "path": "res://loop.tscn",
        "kind": "load",
        "message": "did not finish loading within 20 s",
    }
    assert checked["checked"] == {"scripts": 4, "scenes": 5}
    assert len(checked["errors"]) == 4 and checked["truncated"] is False


CSHARP_FIXTURES = Path(__file__).parent.parent / "fixtures" / "csharp"


def fixture_project(name: str, root: Path) -> Path:
    """``tests/fixtures/csharp/<name>`` in this lane's engine's format."""
    engine = engines.current()
    source = CSHARP_FIXTURES / name
    files = {
        p.relative_to(source).as_posix(): engine.port(p.read_text())
        for p in sorted(source.rglob("*"))
        if p.is_file()
    }
    return write(root, files)


def carried(version: str, files: str) -> str:
    return (
        f"this {engine_name(version)} is not a .NET build, so the project's C# scripts will "
        f"not load ({files}); what the game loads at start attaches none of them"
    )


async def test_a_project_that_only_carries_csharp_runs_and_is_warned(tmp_path):
    """misc/os_test's shape: a GDScript main scene and autoload, a .csproj, a C# script loaded
    behind a guard, and a scene attaching it that nothing loads. It starts (windowed and
    headless) with a warning naming the C# file, its main scene runs; the check finds
    nothing wrong and warns the same; its export warns the same."""
    project = fixture_project("carries", tmp_path / "carries")
    with anyio.fail_after(180):
        async with stdio_client(project, tmp_path / "state") as c:
            profile = await ok(c, "server.profile")
            godot = profile["godot"]
            checked = await ok(c, "project.check")
            starts = {}
            for mode in ("windowed", "headless"):
                started = await ok(c, "runtime.session.start", {"mode": mode})
                sid = {"session_id": started["session"]["id"]}
                await ok(c, "runtime.wait", {**sid, "until": {"frames": 3}})
                lines = (await ok(c, "runtime.log.read", sid))["lines"]
                await ok(c, "runtime.session.stop", sid)
                starts[mode] = (started, [line["text"] for line in lines])
            export = await exported(c)
    assert checked == {
        "outcome": "ok",
        "errors": [],
        "checked": {"scripts": 2, "scenes": 2},
        "truncated": False,
        "warnings": [carried(godot["headless_version"], "res://Optional.cs")],
    }
    for mode, version in (("windowed", godot["version"]), ("headless", godot["headless_version"])):
        started, lines = starts[mode]
        assert started["warnings"] == [carried(version, "res://Optional.cs")], mode
        assert "CARRIES: running without C#" in lines, lines
    assert export["state"] == "succeeded", export
    assert export["warnings"] == [carried(godot["headless_version"], "res://Optional.cs")]


async def test_a_project_whose_autoload_preloads_csharp_needs_it(tmp_path):
    """The C# script is reached only through an autoload's scene (ext_resource), its script
    and a chain of preloads: the game is refused as any game that needs C#, the check
    reports it once, the export warns."""
    project = fixture_project("needs", tmp_path / "needs")
    with anyio.fail_after(180):
        async with stdio_client(project, tmp_path / "state") as c:
            profile = await ok(c, "server.profile")
            godot = profile["godot"]
            checked = await ok(c, "project.check")
            refused = {}
            for mode in ("windowed", "headless"):
                r = await c.call_tool("runtime_session_start", {"mode": mode})
                refused[mode] = r.structured_content
            export = await exported(c)
    why = not_dotnet(godot["headless_version"])
    assert checked == {
        "outcome": "ok",
        "errors": [{"path": "res://lib/Deep.cs", "kind": "load", "message": why}],
        "checked": {"scripts": 3, "scenes": 2},
        "truncated": False,
    }
    for mode, version in (("windowed", godot["version"]), ("headless", godot["headless_version"])):
        assert refused[mode] == {"outcome": "unavailable", "message": not_dotnet(version)}
    engine = engine_name(godot["headless_version"])
    assert (export["state"], export["warnings"]) == ("succeeded", [csharp_export(engine)])

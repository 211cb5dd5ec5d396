"""Exports by platform, without Godot: the preset written into the private copy, its names,
the project left as it was, and the arguments ``project.export`` takes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest
from jsonschema import Draft202012Validator

from godot_mcp.engine.profile import profile_of
from godot_mcp.engine.project.presets import (
    PLATFORMS,
    expected_outputs,
    find_preset,
    platform_preset,
    platform_presets_text,
    read_presets,
)
from godot_mcp.errors import InvalidArgument
from godot_mcp.features.export.job import ExportRunner
from godot_mcp.features.export.service import ExportView, _view
from godot_mcp.features.export.tools import TOOLS, describe, export_start
from godot_mcp.store.exports import ExportRecord
from tests.godot.export_fixtures import make_project
from tests.support.trees import tree_digest

ENGINE_NAMES = {
    3: ["Linux/X11", "Windows Desktop", "Mac OSX", "HTML5", "Android", "iOS"],
    4: ["Linux", "Windows Desktop", "macOS", "Web", "Android", "iOS"],
}

LINUX4 = """\
[preset.0]

name="Linux"
platform="Linux"
runnable=true
dedicated_server=false
custom_features=""
export_filter="all_resources"
include_filter=""
exclude_filter=""
export_path=""
encryption_include_filters=""
encryption_exclude_filters=""
encrypt_pck=false
encrypt_directory=false

[preset.0.options]

custom_template/debug=""
custom_template/release=""
debug/export_console_wrapper=0
"""

WEB3 = """\
[preset.0]

name="HTML5"
platform="HTML5"
runnable=true
custom_features=""
export_filter="all_resources"
include_filter=""
exclude_filter=""
export_path=""
script_export_mode=1
script_encryption_key=""

[preset.0.options]

custom_template/debug=""
custom_template/release=""
"""


@pytest.mark.parametrize("major", [3, 4])
def test_each_platform_maps_to_the_engines_own_name(major: int) -> None:
    got = [platform_preset(p, profile_of(major)) for p in PLATFORMS]
    assert [p.name for p in got] == ENGINE_NAMES[major]
    assert [p.platform for p in got] == ENGINE_NAMES[major]
    assert all(p.export_path == "" and not p.embed_pck for p in got)
    with pytest.raises(ValueError, match="platform must be one of linux, windows"):
        platform_preset("Linux", profile_of(major))
    with pytest.raises(ValueError, match="unsupported Godot major version 5"):
        platform_preset("linux", profile_of(5))


def test_the_written_presets_file_is_exactly_what_the_engine_writes() -> None:
    four, three = profile_of(4), profile_of(3)
    assert platform_presets_text(platform_preset("linux", four), four) == LINUX4
    assert platform_presets_text(platform_preset("web", three), three) == WEB3


@pytest.mark.parametrize("major", [3, 4])
@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_written_preset_reads_back_as_the_preset(
    tmp_path: Path, major: int, platform: str
) -> None:
    preset = platform_preset(platform, profile_of(major))
    (tmp_path / "export_presets.cfg").write_text(platform_presets_text(preset, profile_of(major)))
    assert read_presets(tmp_path) == [preset]


@pytest.mark.parametrize(
    ("platform", "kind", "names"),
    [
        ("linux", "pack", ["My_Game.pck"]),
        ("linux", "release", ["My_Game.x86_64", "My_Game.pck"]),
        ("linux", "debug", ["My_Game.x86_64", "My_Game.pck"]),
        ("windows", "release", ["My_Game.exe", "My_Game.pck"]),
        ("macos", "release", ["My_Game.zip"]),
        ("web", "pack", ["My_Game.pck"]),
        (
            "web",
            "debug",
            ["My_Game.html", "My_Game.js", "My_Game.wasm", "My_Game.pck", "My_Game.png"],
        ),
        ("android", "release", ["My_Game.apk"]),
        ("ios", "release", ["My_Game.ipa"]),
    ],
)
@pytest.mark.parametrize("major", [3, 4])
def test_outputs_are_named_from_the_projects_name(
    major: int, platform: str, kind: str, names: list[str]
) -> None:
    assert expected_outputs("My Game!", platform_preset(platform, profile_of(major)), kind) == names


def runner(tmp_path: Path, major: int) -> ExportRunner:
    # prepare() copies and writes; it never starts the binary.
    return ExportRunner("/nonexistent/godot", tmp_path / "work", env={}, profile=profile_of(major))


@pytest.mark.parametrize("major", [3, 4])
def test_the_copy_gets_the_preset_and_the_project_stays_byte_for_byte(
    tmp_path: Path, major: int
) -> None:
    project = make_project(tmp_path / "project", major)
    (project / "export_presets.cfg").unlink()
    before = tree_digest(project)
    preset = platform_preset("web", profile_of(major))
    job = runner(tmp_path, major).prepare(
        project, preset, "pack", "e1", ["game.pck"], write_preset=True
    )
    written = job.snapshot_dir / "export_presets.cfg"
    assert written.read_text() == platform_presets_text(preset, profile_of(major))
    assert tree_digest(project) == before
    assert not (project / "export_presets.cfg").exists()
    assert job.godot_run().args[-2:] == [preset.name, str(job.out_dir / "game.pck")]


def test_a_platform_export_ignores_the_projects_own_presets(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", 3)
    before = tree_digest(project)
    own = (project / "export_presets.cfg").read_bytes()
    preset = platform_preset("linux", profile_of(3))
    job = runner(tmp_path, 3).prepare(
        project, preset, "release", "e2", ["game.x86_64", "game.pck"], write_preset=True
    )
    assert read_presets(job.snapshot_dir) == [preset]  # "Pack" and the project's "Linux/X11" gone
    assert (project / "export_presets.cfg").read_bytes() == own
    assert tree_digest(project) == before


def test_without_write_preset_the_copy_keeps_the_projects_presets(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", 3)
    preset = find_preset(read_presets(project), "Pack")
    job = runner(tmp_path, 3).prepare(project, preset, "pack", "e3", ["game.pck"])
    assert (job.snapshot_dir / "export_presets.cfg").read_bytes() == (
        project / "export_presets.cfg"
    ).read_bytes()


# --- project.export's arguments ------------------------------------------------------------

EXPORT = next(t for t in TOOLS if t.name == "project.export")


def test_preset_is_optional_and_platform_is_one_of_six() -> None:
    schema = EXPORT.input_schema()
    assert "required" not in schema
    assert schema["properties"]["platform"]["anyOf"][0] == {
        "type": "string",
        "enum": ["linux", "windows", "macos", "web", "android", "ios"],
    }
    assert EXPORT.parse({"platform": "web", "kind": "pack"}) == {
        "preset": None,
        "platform": "web",
        "kind": "pack",
    }
    with pytest.raises(InvalidArgument) as refused:
        EXPORT.parse({"platform": "HTML5"})
    assert (
        refused.value.message == "platform must be one of linux, windows, macos, web, android, ios"
    )
    with pytest.raises(InvalidArgument) as refused:
        EXPORT.parse({"preset": ""})
    assert refused.value.message == "preset is shorter than 1 character"


class _Exports:
    def warnings(self, export_id: str) -> list[str]:
        return []

    def __init__(self) -> None:
        self.begun: list[tuple[object, ...]] = []

    async def begin(self, *args: object) -> str:
        self.begun.append(args)
        return "x" * 32


@pytest.mark.parametrize(
    "args", [{}, {"preset": "Pack", "platform": "linux"}, {"preset": None, "platform": None}]
)
def test_exactly_one_of_preset_and_platform(args: dict[str, object]) -> None:
    exports = _Exports()
    call = SimpleNamespace(
        args=EXPORT.parse(args), deps=SimpleNamespace(exports=exports), caller=1, generation=1
    )
    with pytest.raises(InvalidArgument) as refused:
        asyncio.run(export_start(call))  # type: ignore[arg-type]
    assert refused.value.message == (
        "give exactly one of preset (a preset of the project) and platform "
        "(linux, windows, macos, web, android, ios: the engine's default options)"
    )
    assert exports.begun == []


def test_a_platform_is_passed_on_and_its_status_says_preset_null() -> None:
    exports = _Exports()
    call = SimpleNamespace(
        args=EXPORT.parse({"platform": "linux"}),
        deps=SimpleNamespace(exports=exports),
        caller="me",
        generation=3,
    )
    asyncio.run(export_start(call))  # type: ignore[arg-type]
    assert exports.begun == [("me", 3, None, "release", "linux")]
    view = ExportView("e", None, "pack", "running", [], None, None, "web")
    assert describe(view) == {
        "id": "e",
        "preset": None,
        "platform": "web",
        "kind": "pack",
        "state": "running",
        "outputs": [],
    }
    status = next(t for t in TOOLS if t.name == "project.export.status")
    Draft202012Validator(status.ok_schema()).validate({"outcome": "ok", "export": describe(view)})


def test_a_preset_export_says_its_preset_and_no_platform() -> None:
    view = ExportView("e", "Pack", "pack", "running", [], None, None)
    assert describe(view) == {
        "id": "e",
        "preset": "Pack",
        "kind": "pack",
        "state": "running",
        "outputs": [],
    }


def test_preset_records_read_back() -> None:
    """An export by platform keeps its platform in the record's own column (migration
    0007); its view says preset null and the platform."""

    def row(preset: str, kind: str, platform: str | None) -> ExportRecord:
        return ExportRecord(
            "e",
            "p",
            None,
            None,
            1,
            preset,
            kind,
            "running",
            None,
            None,
            1,
            "s",
            None,
            None,
            platform,
        )

    view = _view(row("", "release", "android"), "running", [], None, None)
    assert (view.preset, view.kind, view.platform) == (None, "release", "android")
    view = _view(row("Pack", "pack", None), "failed", [], "why", "tail")
    assert (view.preset, view.kind, view.platform, view.error) == ("Pack", "pack", None, "why")

"""Never-imported projects, and what of an import's copy goes into the project (no engine)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from godot_mcp.engine.profile import profile_of
from godot_mcp.engine.project.imported import (
    NeverImported,
    importable,
    importable_files,
    never_imported,
    refuse_never_imported,
)
from godot_mcp.errors import Remedy, Unavailable
from godot_mcp.features.importer.job import install, results


def make(root: Path, files: dict[str, str | bytes]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "project.godot").write_text("config_version=4\n")
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data)
    return root


SCRIPTS = {"main.gd": "extends Node\n", "main.tscn": "[gd_scene format=2]\n"}
CLASS = {"helper.gd": "extends Reference\nclass_name Helper\n"}


@pytest.mark.parametrize("major", [3, 4])
def test_a_project_with_nothing_to_import_is_never_refused(tmp_path, major):
    assert not never_imported(make(tmp_path / "p", SCRIPTS), profile_of(major))
    assert not never_imported(make(tmp_path / "empty", {}), profile_of(major))
    refuse_never_imported(tmp_path / "p", profile_of(major))  # no refusal


@pytest.mark.parametrize("major, folder", [(3, ".import"), (4, ".godot")])
def test_an_imported_file_without_the_import_folder_is_never_imported(tmp_path, major, folder):
    project = make(tmp_path / "p", {**SCRIPTS, "art/icon.png": b"\x89PNG"})
    assert never_imported(project, profile_of(major))
    with pytest.raises(NeverImported) as refused:
        refuse_never_imported(project, profile_of(major))
    assert isinstance(refused.value, Unavailable)
    assert refused.value.message == (
        f"the project was never imported (it has no {folder}/ folder), so its resources cannot load"
    )
    assert refused.value.remedy is Remedy.IMPORT  # the edge names the tool, as listed
    (project / folder).mkdir()
    assert not never_imported(project, profile_of(major))


def test_a_class_name_counts_on_godot_4_only(tmp_path):
    project = make(tmp_path / "p", {**SCRIPTS, **CLASS})
    assert never_imported(project, profile_of(4))
    assert not never_imported(project, profile_of(3))
    annotated = make(tmp_path / "q", {"a.gd": '@icon("res://i.svg") class_name A\nextends Node\n'})
    assert never_imported(annotated, profile_of(4))
    indented = make(tmp_path / "r", {"a.gd": "extends Node\n# class_name A\nvar class_name_x\n"})
    assert not never_imported(indented, profile_of(4))


@pytest.mark.parametrize("major", [3, 4])
def test_files_godot_does_not_see_or_keeps_as_they_are_count_for_nothing(tmp_path, major):
    project = make(
        tmp_path / "p",
        {
            **SCRIPTS,
            ".hidden/a.png": b"x",
            "raw/.gdignore": "",
            "raw/b.png": b"x",
            ".cache/c.png": b"x",
            "notes.txt": "x",
        },
    )
    assert not never_imported(project, profile_of(major))
    kept = make(tmp_path / "k", {"d.csv": "x", "d.csv.import": '[remap]\n\nimporter="keep"\n'})
    assert not never_imported(kept, profile_of(major))
    assert importable_files(kept, profile_of(major)) == []


def test_each_engine_imports_its_own_formats():
    three, four = profile_of(3), profile_of(4)
    assert importable("a/B.PNG", three) and importable("x.wav", four) and importable("m.glb", three)
    assert importable("f.ttf", four) and not importable("f.ttf", three)
    assert not importable("x.gd", four) and not importable("x.tres", three)
    assert not importable("x.dds", four)
    assert importable("x.mp3", profile_of(3, 6)) and not importable("x.mp3", profile_of(3, 2))
    assert importable("x.svgz", profile_of(3, 2)) and not importable("x.svgz", profile_of(3, 6))


def test_a_file_any_engine_of_the_major_imports_counts_for_never_imported(tmp_path):
    project = make(tmp_path / "p", {**SCRIPTS, "a.svgz": b"x"})
    assert not importable("a.svgz", profile_of("3.6.2.stable"))
    assert never_imported(project, profile_of("3.6.2.stable"))


def _imported_copy(copy: Path) -> Path:
    make(
        copy,
        {
            "icon.png": b"png",
            "icon.png.import": '[remap]\n\n[deps]\n\nsource_file="res://icon.png"\n',
            "half.png": b"png",
            "half.png.import": "[remap]\n\nimporter=",  # cut short: not taken
            "orphan.import": 'source_file="res://orphan"\n',  # names no file of the copy
            "main.gd": "extends Node\n",
            "main.gd.uid": "uid://abc\n",
            "stray.uid": "uid://def\n",
            ".godot/imported/icon.png-0.ctex": b"ctex",
            ".godot/editor/filesystem_cache10": "cache",
            ".godot/editor/editor_layout.cfg": "copy's layout",
            "other.txt": "not moved",
        },
    )
    (copy / "project.godot").write_text("rewritten by the engine\n")
    return copy


def test_only_the_import_folder_and_complete_sidecars_move_into_the_project(tmp_path):
    copy = _imported_copy(tmp_path / "copy")
    assert results(copy, profile_of(4)) == [
        ".godot/editor/editor_layout.cfg",
        ".godot/editor/filesystem_cache10",
        ".godot/imported/icon.png-0.ctex",
        "icon.png.import",
        "main.gd.uid",
    ]
    project = make(tmp_path / "project", {"icon.png": b"png", "main.gd": "extends Node\n"})
    (project / ".godot" / "editor").mkdir(parents=True)
    (project / ".godot" / "editor" / "editor_layout.cfg").write_text("the user's layout")
    before = (project / "project.godot").read_bytes()
    written = install(copy, project, profile_of(4))
    assert written == [
        ".godot/editor/filesystem_cache10",
        ".godot/imported/icon.png-0.ctex",
        "icon.png.import",
        "main.gd.uid",
    ]
    assert (project / "project.godot").read_bytes() == before
    assert (project / ".godot/editor/editor_layout.cfg").read_text() == "the user's layout"
    assert (project / ".godot/imported/icon.png-0.ctex").read_bytes() == b"ctex"
    assert not (project / "other.txt").exists() and not (project / "stray.uid").exists()
    assert install(copy, project, profile_of(4)) == []  # the same bytes are not written again
    assert not [n for n in os.listdir(project) if n.endswith(".tmp")]


def test_an_import_never_writes_through_a_link_in_the_project(tmp_path):
    copy = _imported_copy(tmp_path / "copy")
    outside = tmp_path / "outside"
    outside.mkdir()
    project = make(tmp_path / "project", {"icon.png": b"png", "main.gd": "extends Node\n"})
    (project / ".godot").symlink_to(outside)
    (project / "main.gd.uid").symlink_to(outside / "victim")
    written = install(copy, project, profile_of(4))
    assert written == ["icon.png.import", "main.gd.uid"]
    assert list(outside.iterdir()) == []
    assert not (project / "main.gd.uid").is_symlink()
    assert (project / "main.gd.uid").read_text() == "uid://abc\n"


def test_godot_3_moves_its_own_folder(tmp_path):
    copy = make(
        tmp_path / "copy",
        {
            "icon.png": b"png",
            "icon.png.import": 'source_file="res://icon.png"\n',
            ".import/icon.png-1.stex": b"stex",
            ".import/icon.png-1.md5": 'source_md5="0"\n',
        },
    )
    assert results(copy, profile_of(3)) == [
        ".import/icon.png-1.md5",
        ".import/icon.png-1.stex",
        "icon.png.import",
    ]

"""Which engines keep an unnamed project's user:// in the project itself, and the warning a
start gives for it (the real engines show it in tests/runtime/test_user_data.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from godot_mcp.features.game.userdata import (
    files_into_project,
    new_data_dir,
    project_file_warnings,
)


@pytest.mark.parametrize(
    ("version", "into"),
    [
        ("3.2.3.stable.custom_build", True),
        ("3.4.5.stable.official", True),
        ("3.5.stable.official", False),
        ("3.6.2.stable.debian3.6.2+ds-1+b1", False),
        ("4.6.3.stable.debian4.6.3+ds-3", False),
        (None, False),
        ("garbage", False),
    ],
)
def test_only_godot_3_before_3_5_keeps_an_unnamed_projects_user_data_in_it(version, into):
    assert files_into_project(version) is into


@pytest.mark.parametrize(
    ("application", "warned"),
    [
        ('config/name="saver"\n', False),
        ("", True),
        ('config/name=""\n', True),
        ('config/name="   "\n', True),  # the engine strips it: no name
    ],
)
def test_an_unnamed_project_on_godot_3_2_is_warned_of(tmp_path: Path, application, warned):
    (tmp_path / "project.godot").write_text(
        f'config_version=4\n\n[application]\n\n{application}run/main_scene="res://m.tscn"\n'
    )
    said = project_file_warnings(tmp_path, "3.2.3.stable.custom_build")
    assert bool(said) is warned
    if warned:
        assert said[0].startswith("the project has no application/config/name, and Godot 3.2.3")
    assert project_file_warnings(tmp_path, "4.6.3.stable") == []
    assert project_file_warnings(tmp_path, "3.6.2.stable") == []


@pytest.mark.parametrize(
    ("application", "made"),
    [
        ('config/name="My: Game"\n', "godot/app_userdata/My- Game"),
        ('config/name=" spaced "\n', "godot/app_userdata/spaced"),
        (
            'config/name="g"\nconfig/use_custom_user_dir=true\n'
            'config/custom_user_dir_name="studio/../g"\n',
            "studio/-/g",
        ),
        ('config/name="g"\nconfig/use_custom_user_dir=true\n', "g"),
        ("", None),  # unnamed: the project itself
    ],
)
def test_godot_3_2_finds_the_user_folder_made_in_a_fresh_data_dir(
    tmp_path: Path, application, made
):
    """Godot 3 before 3.5 opens its log before it makes the user:// folder: made first."""
    project = tmp_path / "p"
    project.mkdir()
    (project / "project.godot").write_text(f"config_version=4\n\n[application]\n\n{application}")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    data = new_data_dir(scratch, project, "3.2.3.stable.custom_build")
    assert data.parent == scratch and data.name.startswith("data-")
    found = sorted(str(p.relative_to(data)) for p in data.rglob("*") if not any(p.iterdir()))
    assert found == ([made] if made else [])
    newer = new_data_dir(scratch, project, "4.6.3.stable")
    assert list(newer.iterdir()) == []  # the engine makes its own

"""A project's main scene as the engine resolves it (pure logic; the real start is in
tests/runtime/test_real_projects.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from godot_mcp.engine.project.uids import scene_path


@pytest.mark.parametrize(
    ("value", "resolved"),
    [
        ("res://main.tscn", "res://main.tscn"),
        ("pong.tscn", "res://pong.tscn"),  # Godot 3 accepts it and loads res://pong.tscn
        ("levels/one.tscn", "res://levels/one.tscn"),
        ("./levels//one.tscn", "res://levels/one.tscn"),
        ("../outside.tscn", "../outside.tscn"),  # not the project's: left as written
        ("/abs/main.tscn", "/abs/main.tscn"),
        ("user://main.tscn", "user://main.tscn"),
        ("uid://nosuchuid", "uid://nosuchuid"),
    ],
)
def test_the_main_scene_is_answered_as_the_engine_resolves_it(
    tmp_path: Path, value: str, resolved: str
) -> None:
    assert scene_path(tmp_path, value) == resolved


def test_a_uid_resolves_to_the_scene_that_names_it(tmp_path: Path) -> None:
    (tmp_path / "lv").mkdir()
    (tmp_path / "lv" / "a.tscn").write_text('[gd_scene format=3 uid="uid://abc123"]\n')
    assert scene_path(tmp_path, "uid://abc123") == "res://lv/a.tscn"

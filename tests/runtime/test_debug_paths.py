"""Breakpoint and reload paths: one rule for "a script of the project", one wording."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from godot_mcp.errors import InvalidArgument
from godot_mcp.features.game.debugging import engine_list, parse_breakpoints, project_script
from godot_mcp.features.game.runner import validate_scene


def project(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    (root / "sub dir").mkdir(parents=True)
    (root / "a.gd").write_text("")
    (root / "sub dir/b.gd").write_text("")
    (tmp_path / "out.gd").write_text("")
    os.symlink(tmp_path / "out.gd", root / "link.gd")
    return root


@pytest.mark.parametrize(
    "path",
    [
        "res://nope.gd",
        "res://../out.gd",
        "res://./a.gd",
        "res:///a.gd",
        "res://link.gd",
        "res://a,b.gd",
        "res://a%20.gd",
        "res://sub dir",
        "/abs/a.gd",
        "res://a.gd\n",
    ],
)
def test_what_is_not_a_script_of_the_project_is_named(tmp_path: Path, path: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        project_script(project(tmp_path), path)
    assert refused.value.message == f"{path[:200]} is not a script of the project"


def test_breakpoints_share_the_rule_and_reach_the_engine_spelled_its_way(tmp_path: Path) -> None:
    root = project(tmp_path)
    points = parse_breakpoints(root, ["res://a.gd:3", "res://sub dir/b.gd:12", "res://a.gd:1"])
    assert points == {"res://a.gd": {1, 3}, "res://sub dir/b.gd": {12}}
    assert engine_list(points) == "res://a.gd:1,res://a.gd:3,res://sub%20dir/b.gd:12"
    with pytest.raises(InvalidArgument, match=re.escape("res://../out.gd is not a script")):
        parse_breakpoints(root, ["res://../out.gd:3"])
    bad_ones = ("res://a.gd", "res://a.gd:0", "res://a.gd:x", "res://a.gd:3\n", "res://a.gd\n:3", 7)
    for bad in bad_ones:
        with pytest.raises(InvalidArgument, match=re.escape("a breakpoint is res://path.gd:LINE")):
            parse_breakpoints(root, [bad])  # type: ignore[list-item]


@pytest.mark.parametrize("scene", ["res://main.tscn\n", "res://main.tscn\r", "res://main.tscn\n "])
def test_a_scene_is_exactly_what_it_says(scene: str) -> None:
    with pytest.raises(InvalidArgument, match="scene must be a res:// path"):
        validate_scene(scene)
    assert validate_scene("res://main.tscn") == "res://main.tscn"

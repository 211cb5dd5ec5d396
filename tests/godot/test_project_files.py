"""The one walk of a project's files (pure logic on real folders)."""

from __future__ import annotations

import os
from pathlib import Path

from godot_mcp.engine.project.files import visible_files


def _touch(root: Path, *rels: str) -> None:
    for rel in rels:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")


def test_it_lists_what_godots_file_system_sees_in_path_order(tmp_path: Path) -> None:
    _touch(
        tmp_path,
        "project.godot",
        "b/z.png",
        "b/a.png",
        "a.gd",
        ".hidden.png",
        ".hidden/x.png",
        ".godot/imported/x.ctex",
        ".import/x.stex",
        "ignored/.gdignore",
        "ignored/x.png",
        "ignored/deeper/y.png",
    )
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    _touch(outside, "secret.png")
    os.symlink(outside, tmp_path / "linked")
    assert list(visible_files(tmp_path)) == ["a.gd", "project.godot", "b/a.png", "b/z.png"]


def test_it_stops_at_its_limit(tmp_path: Path) -> None:
    _touch(tmp_path, *(f"d{i}/f{j}.png" for i in range(3) for j in range(4)))
    assert list(visible_files(tmp_path, 5)) == [
        "d0/f0.png",
        "d0/f1.png",
        "d0/f2.png",
        "d0/f3.png",
        "d1/f0.png",
    ]
    assert list(visible_files(tmp_path, 0)) == []

"""The smallest Godot project the store and the MCP edge need: a project.godot."""

from __future__ import annotations

from pathlib import Path

PROJECT_GODOT = 'config_version=4\n\n[application]\n\nconfig/name="mcp test"\n'


def make_project(root: Path) -> Path:
    """Write a minimal project at ``root`` and return it."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "project.godot").write_text(PROJECT_GODOT)
    return root

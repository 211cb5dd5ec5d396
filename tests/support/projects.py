"""The smallest Godot project the store and the MCP edge need: a project.godot; and the
projects project.source's tests read."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_GODOT = 'config_version=4\n\n[application]\n\nconfig/name="mcp test"\n'


def make_project(root: Path) -> Path:
    """Write a minimal project at ``root`` and return it."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "project.godot").write_text(PROJECT_GODOT)
    return root


def source_project(tmp_path: Path) -> Path:
    """A project at ``tmp_path/p`` with an empty ``src`` folder, for project.source's reads."""
    root = tmp_path / "p"
    (root / "src").mkdir(parents=True)
    (root / "project.godot").write_text("config_version=4\n")
    return root


def plant_unreadables(root: Path, tmp_path: Path) -> Path:
    """Put in ``root`` the files project.source must never read: links out of the project,
    signing presets, hidden and engine files, binary and Latin-1 text, and a fifo. Returns
    the secret outside the project that the links lead to."""
    outside = tmp_path / "secret.txt"
    outside.write_text("password\n")
    (root / "out.gd").symlink_to(outside)
    (root / "src" / "up").symlink_to(tmp_path)
    (root / "export_presets.cfg").write_text('[preset.0]\nkeystore/release_password="x"\n')
    (root / ".godot").mkdir()
    (root / ".godot" / "cache.cfg").write_text("x\n")
    (root / ".env").write_text("TOKEN=x\n")
    (root / "blob.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0")
    (root / "latin1.gd").write_bytes(b"caf\xe9\n")
    os.mkfifo(root / "pipe.gd")
    return outside

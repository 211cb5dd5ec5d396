"""Scratch that servers killed before their shutdown left behind."""

from __future__ import annotations

from godot_mcp.engine.project import tree
from godot_mcp.runtime import import_cache
from godot_mcp.runtime.dirs import RuntimeDirs
from godot_mcp.runtime.owner import alive
from godot_mcp.store.store import ArtifactStore


def sweep_dead_scratch(store: ArtifactStore) -> int:
    """Remove the game and check scratch of server processes that are gone; returns how many.

    Each server keeps its frames, game logs and Xvfb cookie in ``scratch/games/<pid>-<start>``
    and its project checks in ``scratch/checks/<pid>-<start>``; one that was killed leaves them
    behind. Judged by the same (pid, start) test as exports, so a live server's scratch is
    never touched. The import cache's partial entries (a server killed while it kept one) go
    the same way.
    """
    dirs = RuntimeDirs(store.layout.state_dir)
    removed = import_cache.sweep(dirs.imports_dir)
    for kind in ("games", "checks"):
        root = dirs.scratch_dir / kind
        if not root.is_dir():
            continue
        for entry in root.iterdir():
            pid, _, start = entry.name.partition("-")
            if pid.isdigit() and alive(int(pid), start):
                continue
            tree.remove(entry)
            removed += 1
    return removed

"""The project's files as Godot's file system sees them: the one walk every reader of the
project tree uses (imports, C# detection, uids).

Godot leaves out hidden files and folders (a name starting with ``.``), its own caches
(``.import/``, ``.godot/``) and every folder holding a ``.gdignore``. Links are not
followed. Blocking: call from a worker thread.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["MAX_FILES", "visible_files"]

MAX_FILES = 100_000  # files looked at before giving up (then: what was seen decides)


def visible_files(project: Path, limit: int = MAX_FILES) -> Iterator[str]:
    """Each visible file of ``project`` (relative, ``/``-separated), in path order, folder by
    folder; at most ``limit`` of them."""
    seen = 0
    for top, dirs, files in os.walk(project, followlinks=False):
        if ".gdignore" in files:
            dirs[:] = []
            continue
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        rel = Path(top).relative_to(project).as_posix()
        for name in sorted(n for n in files if not n.startswith(".")):
            if seen >= limit:
                return
            seen += 1
            yield name if rel == "." else f"{rel}/{name}"

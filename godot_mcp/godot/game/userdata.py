"""Where a game's own files go: its ``user://`` (its saves, and the engine's own
``logs/godot.log``), private to its session wherever the engine lets the server choose.

On Linux every engine puts ``user://`` under its data dir, ``$XDG_DATA_HOME`` (else
``~/.local/share``): ``godot/app_userdata/<name>`` for a project named by
``application/config/name`` (or a custom user dir below it), and since Godot 3.5 (and on Godot
4) ``godot/app_userdata/[unnamed project]`` for a project without a name. So each game
session gets an ``XDG_DATA_HOME`` of its own in the server's scratch (``GameRunner``),
removed when the session is released. Godot 3 before 3.5 keeps an unnamed project's
``user://`` in the project folder itself (checked on 3.2.3: ``logs/godot.log`` and the game's
saves appear there; 3.6.2 and 4.6.3 write under the data dir): nothing the server sets moves
it, so starting such a game says so in ``warnings``.
"""

from __future__ import annotations

import re
from pathlib import Path

from godot_mcp.godot.process.locate import engine_name
from godot_mcp.godot.project.presets import read_config

__all__ = ["DATA_PREFIX", "files_into_project", "project_file_warnings"]

DATA_PREFIX = "data-"  # a session's own data dir in the scratch: data-XXXXXXXX
_VERSION = re.compile(r"^\s*(\d+)\.(\d+)")


def files_into_project(version: str | None) -> bool:
    """Whether Godot ``version`` keeps an unnamed project's ``user://`` in the project:
    Godot 3 before 3.5 (checked on 3.2.3; the fix came with 3.5)."""
    match = _VERSION.match(version or "")
    return match is not None and (int(match[1]), int(match[2])) < (3, 5)


def project_file_warnings(project: Path, version: str | None) -> list[str]:
    """What starting a game of ``project`` on Godot ``version`` warns of: its own files
    written into the project (an unnamed project on Godot 3 before 3.5). Blocking: reads
    ``project.godot``."""
    if not files_into_project(version):
        return []
    try:
        config = read_config(project / "project.godot")
    except (OSError, ValueError):
        config = {}
    name = config.get("application", {}).get("config/name")
    if isinstance(name, str) and name.strip():
        return []
    return [
        f"the project has no application/config/name, and {engine_name(version)} keeps an "
        "unnamed project's user:// in the project folder itself: the game's own files (the "
        "engine's logs/godot.log, whatever it saves to user://) will be written into the "
        "project; give the project a name to keep them out of it"
    ]

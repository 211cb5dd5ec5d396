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
it, so starting such a game says so in ``warnings``. Those engines also open their log file
before they make the ``user://`` folder, so in a fresh data dir they log ``make_dir_recursive:
Method failed`` and keep no log: the folder is made for them first (``new_data_dir``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from godot_mcp.engine.process.locate import engine_name
from godot_mcp.engine.profile import profile_of
from godot_mcp.engine.project.presets import project_config

__all__ = ["DATA_PREFIX", "files_into_project", "new_data_dir", "project_file_warnings"]

DATA_PREFIX = "data-"  # a session's own data dir in the scratch: data-XXXXXXXX
_EDGES = "".join(map(chr, range(33)))  # what Godot's strip_edges strips


def files_into_project(version: str | None) -> bool:
    """Whether Godot ``version`` keeps an unnamed project's ``user://`` in the project:
    Godot 3 before 3.5 (checked on 3.2.3; the fix came with 3.5)."""
    return profile_of(version).unnamed_user_dir_in_project


def new_data_dir(scratch: Path, project: Path, version: str | None) -> Path:
    """A new data dir in ``scratch`` for one game of ``project``; on Godot 3 before 3.5, with
    the ``user://`` folder the engine will use made in it. Blocking: a worker thread's."""
    data = Path(tempfile.mkdtemp(prefix=DATA_PREFIX, dir=scratch))
    if files_into_project(version):
        user = _user_dir3(_application(project))
        if user is not None:
            (data / user).mkdir(mode=0o700, parents=True, exist_ok=True)
    return data


def _user_dir3(application: dict[str, object]) -> str | None:
    """Where Godot 3.2 puts ``user://`` below its data dir (``OS_Unix::get_user_data_dir``),
    or None for an unnamed project (it is the project itself)."""
    name = _safe3(str(application.get("config/name") or ""), paths=False)
    if not name:
        return None
    if application.get("config/use_custom_user_dir") is True:
        custom = _safe3(str(application.get("config/custom_user_dir_name") or ""), paths=True)
        return custom.lstrip("/") or name
    return f"godot/app_userdata/{name}"


def _safe3(name: str, paths: bool) -> str:
    """Godot 3's ``OS::get_safe_dir_name``."""
    safe = name.replace("\\", "/").strip(_EDGES)
    for bad in [":", "*", "?", '"', "<", ">", "|", ".." if paths else "/"]:
        safe = safe.replace(bad, "-")
    return safe


def _application(project: Path) -> dict[str, object]:
    return project_config(project).get("application", {})


def project_file_warnings(project: Path, version: str | None) -> list[str]:
    """What starting a game of ``project`` on Godot ``version`` warns of: its own files
    written into the project (an unnamed project on Godot 3 before 3.5). Blocking: reads
    ``project.godot``."""
    if not files_into_project(version) or _user_dir3(_application(project)) is not None:
        return []
    return [
        f"the project has no application/config/name, and {engine_name(version)} keeps an "
        "unnamed project's user:// in the project folder itself: the game's own files (the "
        "engine's logs/godot.log, whatever it saves to user://) will be written into the "
        "project; give the project a name to keep them out of it"
    ]

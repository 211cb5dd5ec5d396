"""A project's main scene as a ``res://`` path, when Godot 4 names it by ``uid://`` (or
Godot 3 by a path relative to the project).

Godot 4.4+ editors write ``run/main_scene="uid://b1k…"``; an agent needs the scene's path
(``runtime.session.start`` takes ``res://``). A text scene names its own uid in its first
line (``[gd_scene load_steps=3 format=3 uid="uid://b1k…"]``), so the project's ``.tscn``
files are read for it: only their first line, where Godot's file system looks
(``project_files``), at most ``MAX_FILES`` files. The editor's ``.godot/uid_cache.bin`` is
not needed (a fresh clone has none).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from godot_mcp.godot.project.files import visible_files

__all__ = ["MAX_FILES", "resolve", "scene_path"]

MAX_FILES = 20_000  # files looked at (scenes or not) before giving up
_UID = re.compile(r"^uid://[a-z0-9]{1,16}$")
_HEADER = re.compile(rb'^\[gd_scene\b[^\]\n]*\buid="(uid://[a-z0-9]{1,16})"')


def scene_path(project: Path, value: str) -> str:
    """``value`` (a ``run/main_scene``) as the ``res://`` path the engine resolves: a uid this
    project's scenes name, or a path relative to the project (Godot 3 accepts
    ``run/main_scene="pong.tscn"`` and loads ``res://pong.tscn``); else ``value`` unchanged."""
    if _UID.match(value):
        return resolve(project, value) or value
    if "://" in value or value.startswith("/"):
        return value
    parts = [p for p in value.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return value
    return "res://" + "/".join(parts)


def resolve(project: Path, uid: str) -> str | None:
    """The ``res://`` path of the text scene whose header names ``uid``, or None."""
    for rel in visible_files(project, MAX_FILES):
        if rel.endswith(".tscn") and _first_line_uid(project / rel) == uid:
            return "res://" + rel
    return None


def _first_line_uid(path: Path) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        head = os.read(fd, 1024)
    except OSError:
        return None
    finally:
        os.close(fd)
    match = _HEADER.match(head)
    return match.group(1).decode() if match else None

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

import re
from pathlib import Path

from godot_mcp.engine.project.files import visible_files
from godot_mcp.engine.project.tree import read_below

__all__ = ["MAX_FILES", "UID", "index", "resolve", "scene_path"]

MAX_FILES = 20_000  # files looked at (scenes or not) before giving up
UID = re.compile(r"^uid://[a-z0-9]{1,16}$")
_HEADER = re.compile(rb'^\[gd_(?:scene|resource)\b[^\]\n]*\buid="(uid://[a-z0-9]{1,16})"')


def scene_path(project: Path, value: str) -> str:
    """``value`` (a ``run/main_scene``) as the ``res://`` path the engine resolves: a uid this
    project's scenes name, or a path relative to the project (Godot 3 accepts
    ``run/main_scene="pong.tscn"`` and loads ``res://pong.tscn``); else ``value`` unchanged."""
    if UID.match(value):
        return resolve(project, value) or value
    if "://" in value or value.startswith("/"):
        return value
    parts = [p for p in value.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return value
    return "res://" + "/".join(parts)


def resolve(project: Path, uid: str) -> str | None:
    """The ``res://`` path the project names ``uid`` for, or None."""
    return index(project).get(uid) if UID.match(uid) else None


def index(project: Path) -> dict[str, str]:
    """Every uid the project names, with its ``res://`` path: each text scene's or resource's
    header and each ``.uid`` file beside a script (first bytes only; links judged as
    ``tree.read_below`` does), where Godot's file system looks, at most ``MAX_FILES`` files."""
    found: dict[str, str] = {}
    for rel in visible_files(project, MAX_FILES):
        if rel.endswith(".uid"):
            uid = (
                (read_below(project, rel.split("/"), 64) or b"").strip().decode("ascii", "replace")
            )
            if UID.match(uid):
                found.setdefault(uid, "res://" + rel[: -len(".uid")])
        elif rel.endswith((".tscn", ".tres")):
            match = _HEADER.match(read_below(project, rel.split("/"), 1024) or b"")
            if match:
                found.setdefault(match.group(1).decode(), "res://" + rel)
    return found

"""What the engine loads with a scene or a script, read from the project's files and never
executed: the references it follows at load time, transitively.

    file                              references followed
    ────────────────────────────────  ─────────────────────────────────────────────────────
    text scene or resource            each ``[ext_resource path=…]``; the ``preload`` and
    (.tscn .tres .escn)               ``extends "…"`` of its built-in scripts (sections before
                                      its first node or its ``[resource]``, where the engine
                                      keeps them)
    binary scene or resource          each ``res://`` path it stores
    (.scn .res)
    GDScript (.gd)                    ``preload("…")`` and ``extends "…"``, outside strings and
                                      comments
    anything else (a .cs script)      none: a leaf

A path is taken as the engine takes it: ``res://…``, ``uid://…`` (the uid a text scene's or
resource's header names, or a ``.uid`` file beside a script), or relative to the file's own
folder. A ``load`` at run time is not followed: a game may guard it
(``ResourceLoader.exists``), as the official ``misc/os_test`` demo guards its C# script.

A project may be hostile, so the walk is bounded and reads nothing outside the project: each
file once (references may form cycles), at most ``MAX_FILES`` files and ``MAX_BYTES`` of them
(each file's first ``MAX_FILE_BYTES``) and ``MAX_PATHS`` paths named, each file read in one
pass linear in its size, a file opened only where its real place is inside the
project and never through a link on the way; a path whose real place is outside (a link out
of the project, or below one) is reached but never read (``Reached.outside``). Past a bound the
walk stops and what it saw decides. Blocking: call from a worker thread.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from godot_mcp.engine.project import uids
from godot_mcp.engine.project.presets import ConfigSyntaxError, Section, resource_sections
from godot_mcp.engine.project.tree import read_below

__all__ = [
    "MAX_BYTES",
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "MAX_PATHS",
    "Reached",
    "references",
    "walk",
]

MAX_FILES = 5_000  # files read in one walk
MAX_PATHS = 50_000  # paths reached (named) in one walk
MAX_FILE_BYTES = 4 << 20  # of each file, its first bytes (a text scene's references lead it)
MAX_BYTES = 64 << 20  # read in one walk
TEXT = frozenset({".tscn", ".tres", ".escn"})
BINARY = frozenset({".scn", ".res"})
SCRIPT = ".gd"
_SOURCE = "script/source"  # a built-in script's code, in its sub_resource
_ENDS = frozenset({"node", "resource"})  # sections after every reference of a text file
_EXT_RESOURCE = re.compile(r'^\[ext_resource\b[^\n]*?\bpath="([^"\n]{1,4096})"', re.M)
_CONTROL = re.compile(rb"[\x00-\x1f]")
_MAX_PATH = 4096
# GDScript, token by token: a string or a comment is passed whole, so only code counts. A
# string left open (a parse error) runs to its line's end, or the text's for a triple-quoted
# one: every token matches once started and nothing is scanned twice, whatever the text.
_GDSCRIPT = re.compile(
    r'(?P<string>"""(?:[^\\]|\\.)*?(?:"""|\Z)|\'\'\'(?:[^\\]|\\.)*?(?:\'\'\'|\Z)'
    r'|"(?:[^"\\\n]|\\.)*+(?:"|(?=\n)|\Z)|\'(?:[^\'\\\n]|\\.)*+(?:\'|(?=\n)|\Z))'
    r"|(?P<comment>\#[^\n]*)"
    r'|\b(?:preload\s*\(\s*|extends\s+)(?P<quote>["\'])(?P<path>[^"\'\\\n]{1,4096})(?P=quote)',
    re.S,
)


@dataclass
class Reached:
    """What a walk reached: each ``res://`` path once, in the order found, with the path that
    first named it (``None`` for a root); ``names``: each file read and the paths it names;
    ``outside``: the reached paths whose real place is outside the project (never read);
    ``complete``: no bound stopped the walk."""

    by: dict[str, str | None] = field(default_factory=dict)
    names: dict[str, list[str]] = field(default_factory=dict)
    outside: list[str] = field(default_factory=list)
    complete: bool = True

    def reaching(self, leaves: Iterable[str]) -> set[str]:
        """The reached paths that are among ``leaves`` or load one, at any remove."""
        named_by: dict[str, list[str]] = {}
        for path, named in self.names.items():
            for name in named:
                named_by.setdefault(name, []).append(path)
        found = {leaf for leaf in leaves if leaf in self.by}
        queue = deque(found)
        while queue:
            for parent in named_by.get(queue.popleft(), ()):
                if parent not in found:
                    found.add(parent)
                    queue.append(parent)
        return found

    def chain(self, path: str) -> list[str]:
        """The paths from a root to ``path``, each naming the next."""
        out = [path]
        while (parent := self.by.get(out[-1])) is not None and len(out) <= len(self.by):
            out.append(parent)
        return out[::-1]


def walk(project: Path, roots: Iterable[str]) -> Reached:
    """Every path the engine loads with ``roots`` (``res://`` paths), the roots included."""
    root = os.path.realpath(project)
    reached = Reached()
    queue: deque[str] = deque()
    for given in roots:
        path = _absolute(given, "")
        if path is not None and path not in reached.by:
            reached.by[path] = None
            queue.append(path)
    known = _Uids(Path(root))
    files = budget = 0
    while queue:
        path = queue.popleft()
        rel = _relative(path)
        if rel is None:
            continue  # not a place in the project (user://, a path above res://)
        real = os.path.realpath(os.path.join(root, rel))
        if real != root and not real.startswith(root + os.sep):
            reached.outside.append(path)
            continue
        if posixpath.splitext(rel)[1].lower() not in TEXT | BINARY | {SCRIPT}:
            continue  # a leaf: an image, a .cs script
        if files >= MAX_FILES or budget >= MAX_BYTES:
            reached.complete = False
            break
        data = read_below(Path(root), os.path.relpath(real, root).split(os.sep), MAX_FILE_BYTES)
        files += 1
        budget += len(data or b"")
        names = reached.names.setdefault(path, [])
        for named in references(path, data or b""):
            if named.startswith("uid://"):
                found = known.path(named)
                if found is None:
                    continue
                named = found
            if named not in reached.by:
                if len(reached.by) >= MAX_PATHS:
                    reached.complete = False
                    return reached
                reached.by[named] = path
                queue.append(named)
            names.append(named)
    return reached


def references(path: str, data: bytes) -> Iterator[str]:
    """The paths the file ``path`` (its bytes ``data``) names for the engine to load with it:
    ``res://`` paths, relative ones made so, ``uid://`` as written."""
    suffix = posixpath.splitext(path)[1].lower()
    if suffix in BINARY:
        named: Iterable[str] = _stored(data)
    else:
        text = data.decode("utf-8", "replace")
        named = _script_references(text) if suffix == SCRIPT else _text_references(text)
    folder = posixpath.dirname(path.removeprefix("res://"))
    for name in named:
        absolute = _absolute(name, folder)
        if absolute is not None:
            yield absolute


def _stored(data: bytes) -> Iterator[str]:
    """The ``res://`` paths a binary resource stores: each string ends in a NUL, the path
    last in it (after its length). One split and one search a piece: linear whatever the
    bytes."""
    for piece in data.split(b"\0"):
        at = piece.rfind(b"res://")
        path = piece[at:] if at != -1 else b""
        if 6 < len(path) <= _MAX_PATH and not _CONTROL.search(path):
            yield path.decode("utf-8", "replace")


def _text_references(text: str) -> Iterator[str]:
    """A text scene's or resource's ext_resources and its built-in scripts' references; where
    the text does not read (cut at the size bound, or hand-written), its ext_resource lines."""
    named: list[str] = []
    scripts: list[Section] = []  # their source is complete once the walk is past them
    try:
        for section in resource_sections(text, keep=(_SOURCE,), fields=("path", "type")):
            if section.tag in _ENDS:
                break
            path = section.fields.get("path")
            if section.tag == "ext_resource" and isinstance(path, str):
                named.append(path)
            elif section.tag == "sub_resource" and section.fields.get("type") == "GDScript":
                scripts.append(section)
    except ConfigSyntaxError:
        named.extend(m.group(1) for m in _EXT_RESOURCE.finditer(text))
    yield from named
    for script in scripts:
        source = script.properties.get(_SOURCE)
        if isinstance(source, str):
            yield from _script_references(source)


def _script_references(source: str) -> Iterator[str]:
    for match in _GDSCRIPT.finditer(source):
        if match.group("path") is not None:
            yield match.group("path")


def _absolute(name: str, folder: str) -> str | None:
    """``name`` as the engine resolves it from a file in ``folder`` (project-relative)."""
    if name.startswith("uid://"):
        return name
    if not name.startswith("res://"):
        if "://" in name or name.startswith("/") or not name:
            return None
        name = "res://" + posixpath.join(folder, name)
    rel = _relative(name)
    return None if rel is None else "res://" + rel


def _relative(path: str) -> str | None:
    """``res://a/b`` as ``a/b``, ``..`` and ``.`` resolved; None when it leaves the project."""
    if not path.startswith("res://"):
        return None
    parts: list[str] = []
    for part in path[len("res://") :].split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(part)
    return "/".join(parts) if parts and "\0" not in path else None


class _Uids:
    """The project's uids (``uids.index``), read once when a walk first meets one."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._paths: dict[str, str] | None = None

    def path(self, uid: str) -> str | None:
        if not uids.UID.match(uid):
            return None
        if self._paths is None:
            self._paths = uids.index(self.root)
        return self._paths.get(uid)

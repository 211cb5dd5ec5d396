"""Whether a project was ever imported, and which of its files the engine imports.

A project counts as never imported only when it has something to import and no import
folder::

    engine     something to import                                 import folder
    ─────────  ──────────────────────────────────────────────────  ─────────────
    Godot 4    a file the engine imports, or a script declaring     .godot/
               ``class_name`` (its global class cache lives there)
    Godot 3    a file the engine imports                            .import/

A project with nothing to import is never refused. Files are looked for where Godot's file
system looks (hidden files and folders, Godot's caches and folders holding a ``.gdignore``
left out); a file whose own ``.import`` says it is kept as it is (``importer="keep"`` or
``"skip"``) is not imported.

The extensions are the engine's own importers' (textures, audio, scenes and models,
translations; Godot 4 also fonts and shader files), as Godot 3.2, 3.6 and 4.6 import them:
Godot 3.2 imports ``.svgz`` and no ``.mp3``, Godot 3.3 on imports ``.mp3`` (3.6 no longer
``.svgz``). :func:`importable` with a minor version gives the exact set of that engine;
without one, any Godot 3's.

Blocking (reads the project's folders and a few bytes of its sidecars and scripts): call
from a worker thread.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from godot_mcp.engine.project.files import MAX_FILES, visible_files
from godot_mcp.errors import Remedy, Unavailable

__all__ = [
    "MAX_FILES",
    "NeverImported",
    "folder",
    "importable",
    "importable_files",
    "never_imported",
    "refuse_never_imported",
]

_COMMON = frozenset(
    {
        # textures
        "png", "jpg", "jpeg", "webp", "svg", "tga", "bmp", "hdr", "exr",
        # audio
        "wav", "ogg",
        # scenes and models
        "gltf", "glb", "dae", "obj", "fbx", "escn",
        # translations
        "csv",
    }
)  # fmt: skip
_GODOT3 = _COMMON | {"svgz", "mp3"}  # 3.2 imports .svgz, 3.3 and later .mp3
_GODOT4 = _COMMON | {
    "mp3",
    "ttf",
    "otf",
    "ttc",
    "otc",
    "woff",
    "woff2",
    "pfb",
    "fnt",
    "font",
    "glsl",
}
_KEPT = re.compile(rb'^importer="(?:keep|skip)"', re.M)
# A top-level class_name, after annotations such as @tool or @icon("…") on the same line.
_CLASS_NAME = re.compile(rb"^(?:@\w+(?:\([^)\n]*\))?\s+)*class_name\s+[A-Za-z_]", re.M)
_SCRIPT_BYTES = 1 << 20  # a script's head read for its class_name


class NeverImported(Unavailable):
    """A game of a project that was never imported: its resources cannot load."""

    def __init__(self, major: int) -> None:
        self.folder = folder(major)
        super().__init__(
            f"the project was never imported (it has no {self.folder} folder), so its "
            "resources cannot load",
            remedy=Remedy.IMPORT,
        )


def folder(major: int) -> str:
    """The engine's import folder: ``.godot/`` on Godot 4, ``.import/`` on Godot 3."""
    return ".godot/" if major >= 4 else ".import/"


def importable(rel: str, major: int, minor: int | None = None) -> bool:
    """Whether the engine (``major``, and ``minor`` when known) imports the file ``rel``."""
    suffix = os.path.splitext(rel)[1][1:].lower()
    if major >= 4:
        return suffix in _GODOT4
    if minor is not None and suffix in ("svgz", "mp3"):
        return (suffix == "svgz") == (minor <= 2)
    return suffix in _GODOT3


def _head(path: Path, limit: int) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return b""
    with os.fdopen(fd, "rb") as f:
        try:
            return f.read(limit)
        except OSError:
            return b""


def _kept(source: Path) -> bool:
    """The file's own ``.import`` keeps it as it is (Godot 4's ``keep``, ``skip``)."""
    return bool(_KEPT.search(_head(source.with_name(source.name + ".import"), 4096)))


def importable_files(project: Path, major: int, minor: int | None = None) -> list[str]:
    """The project's files the engine imports (relative, ``/``-separated), in path order."""
    return [
        rel
        for rel in visible_files(project)
        if importable(rel, major, minor) and not _kept(project / rel)
    ]


def _declares_class(path: Path) -> bool:
    return bool(_CLASS_NAME.search(_head(path, _SCRIPT_BYTES)))


def never_imported(project: Path, major: int) -> bool:
    """Whether ``project`` has something to import on this engine and no import folder."""
    project = Path(project)
    if (project / folder(major)).is_dir():
        return False
    for rel in visible_files(project):
        path = project / rel
        if importable(rel, major) and not _kept(path):
            return True
        if major >= 4 and rel.endswith(".gd") and _declares_class(path):
            return True
    return False


def refuse_never_imported(project: Path, major: int | None) -> None:
    """Refuse (:class:`NeverImported`) a game of a never-imported project."""
    if major is not None and never_imported(project, major):
        raise NeverImported(major)

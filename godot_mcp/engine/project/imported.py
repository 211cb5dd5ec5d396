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
translations; Godot 4 also fonts and shader files), as Godot 3.2, 3.6 and 4.6 import them
(``engine/profile.py``): Godot 3.2 imports ``.svgz`` and no ``.mp3``, Godot 3.3 on imports
``.mp3`` (3.6 no longer ``.svgz``). :func:`importable` gives the exact set of an engine;
whether a project was never imported, any engine of its major's.

Blocking (reads the project's folders and a few bytes of its sidecars and scripts): call
from a worker thread.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from godot_mcp.engine.profile import EngineProfile
from godot_mcp.engine.project.files import MAX_FILES, visible_files
from godot_mcp.errors import Remedy, Unavailable

__all__ = [
    "MAX_FILES",
    "NeverImported",
    "importable",
    "importable_files",
    "never_imported",
    "refuse_never_imported",
]

_KEPT = re.compile(rb'^importer="(?:keep|skip)"', re.M)
# A top-level class_name, after annotations such as @tool or @icon("…") on the same line.
_CLASS_NAME = re.compile(rb"^(?:@\w+(?:\([^)\n]*\))?\s+)*class_name\s+[A-Za-z_]", re.M)
_SCRIPT_BYTES = 1 << 20  # a script's head read for its class_name


class NeverImported(Unavailable):
    """A game of a project that was never imported: its resources cannot load."""

    def __init__(self, engine: EngineProfile) -> None:
        self.folder = engine.import_folder
        super().__init__(
            f"the project was never imported (it has no {self.folder} folder), so its "
            "resources cannot load",
            remedy=Remedy.IMPORT,
        )


def importable(rel: str, engine: EngineProfile) -> bool:
    """Whether the engine imports the file ``rel``."""
    return _suffix(rel) in engine.imports


def _suffix(rel: str) -> str:
    return os.path.splitext(rel)[1][1:].lower()


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


def importable_files(project: Path, engine: EngineProfile) -> list[str]:
    """The project's files the engine imports (relative, ``/``-separated), in path order."""
    return [
        rel
        for rel in visible_files(project)
        if importable(rel, engine) and not _kept(project / rel)
    ]


def _declares_class(path: Path) -> bool:
    return bool(_CLASS_NAME.search(_head(path, _SCRIPT_BYTES)))


def never_imported(project: Path, engine: EngineProfile) -> bool:
    """Whether ``project`` has something to import on an engine of this one's major and no
    import folder."""
    project = Path(project)
    if (project / engine.import_folder).is_dir():
        return False
    for rel in visible_files(project):
        path = project / rel
        if _suffix(rel) in engine.major_imports and not _kept(path):
            return True
        if engine.class_names_need_import and rel.endswith(".gd") and _declares_class(path):
            return True
    return False


def refuse_never_imported(project: Path, engine: EngineProfile | None) -> None:
    """Refuse (:class:`NeverImported`) a game of a never-imported project (``engine``:
    ``None`` when its version is unknown)."""
    if engine is not None and never_imported(project, engine):
        raise NeverImported(engine)

"""A project's text file read for a client (``project.source``, and the ``code`` of a place).

Only what Godot's file system shows and the project owns as text: a ``res://`` path of plain
parts, none hidden (the engine's ``.import/`` and ``.godot/`` are), never
``export_presets.cfg`` (Godot 3 keeps signing passwords there), never through a link that
leads out of the project, a regular file (a FIFO is never waited on) of at most
``MAX_BYTES``, UTF-8 without NUL bytes. Blocking: call from a worker thread.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from godot_mcp.engine.project import tree
from godot_mcp.errors import InvalidArgument, quoted

__all__ = ["MAX_BYTES", "Source", "read_source"]

MAX_BYTES = 4 << 20
_REFUSED = "project.source reads the project's own text files only"


@dataclass(frozen=True)
class Source:
    """A text file's lines (without their endings) and the SHA-256 of its bytes."""

    lines: list[str]
    sha256: str


def read_source(project: Path, path: str) -> Source:
    """The text file ``path`` (``res://…``) of ``project``; ``InvalidArgument`` saying why not."""
    try:
        rel = tree.relative(path)
    except ValueError as exc:
        raise InvalidArgument(str(exc)) from None
    shown = repr(quoted(path))
    parts = rel.split("/") if rel else []
    if not parts:
        raise InvalidArgument(f"{shown} is a folder; {_REFUSED}")
    if any(p.startswith(".") for p in parts):
        raise InvalidArgument(f"{shown} is hidden (or the engine's own); {_REFUSED}")
    if rel == "export_presets.cfg":
        raise InvalidArgument(f"{shown} may hold signing passwords; {_REFUSED}")
    root = Path(os.path.realpath(project))
    real = Path(os.path.realpath(root / rel))
    if real != root and root not in real.parents:
        raise InvalidArgument(f"{shown} leads out of the project through a link; {_REFUSED}")
    data = tree.read_below(root, real.relative_to(root).parts, MAX_BYTES + 1)
    if data is None:
        raise InvalidArgument(f"{shown} is not a file of the project")
    if len(data) > MAX_BYTES:
        raise InvalidArgument(f"{shown} is larger than {MAX_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = "\0"
    if "\0" in text:
        raise InvalidArgument(f"{shown} is not a text file")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the last line's ending
    return Source([line.removesuffix("\r") for line in lines], hashlib.sha256(data).hexdigest())

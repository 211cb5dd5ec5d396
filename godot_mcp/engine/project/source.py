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
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from godot_mcp.engine.process.redact import printable
from godot_mcp.engine.project import tree
from godot_mcp.errors import InvalidArgument, quoted

__all__ = ["MAX_BYTES", "MAX_CODE", "Source", "code_at", "read_source"]

MAX_BYTES = 4 << 20
MAX_CODE = 200  # characters of a place's code
MAX_PLACE_FILES = 64  # files one answer reads for its places' code
MAX_PLACE_BYTES = 16 << 20  # bytes one answer reads for them
_REFUSED = "project.source reads the project's own text files only"


@dataclass(frozen=True)
class Source:
    """A text file's lines (without their endings) and the SHA-256 of its bytes."""

    lines: list[str]
    sha256: str


def _located(project: Path, path: str) -> tuple[Path, tuple[str, ...]]:
    """The project's real root and the parts of ``path`` (``res://…``) below it, for a file
    ``project.source`` may read; ``InvalidArgument`` saying why not."""
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
    return root, real.relative_to(root).parts


def _text(path: str, data: bytes | None) -> str:
    """The text of ``data`` read for ``path``; ``InvalidArgument`` when it is none."""
    shown = repr(quoted(path))
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
    return text


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the last line's ending
    return [line.removesuffix("\r") for line in lines]


def read_source(project: Path, path: str) -> Source:
    """The text file ``path`` (``res://…``) of ``project``; ``InvalidArgument`` saying why not."""
    root, parts = _located(project, path)
    data = tree.read_below(root, parts, MAX_BYTES + 1)
    return Source(_lines(_text(path, data)), hashlib.sha256(data or b"").hexdigest())


def code_at(
    project: Path,
    places: Iterable[tuple[object, object]],
    max_files: int = MAX_PLACE_FILES,
    max_bytes: int = MAX_PLACE_BYTES,
) -> dict[tuple[str, int], str]:
    """The ``code`` of each place ``(path, line)`` that has one: that line of the file as it
    is now, made printable, trimmed, at most ``MAX_CODE`` characters.

    Under :func:`read_source`'s rules: a place whose file it would refuse, or whose line the
    file does not have, has none (nothing is raised; a game may forge any place). Each file
    is read once; at most ``max_files`` files are looked for (in the order their places first
    come) and ``max_bytes`` read in all, so that places naming thousands of files cost a
    bounded read: the places past either bound have none. Blocking: call from a worker thread.
    """
    files: dict[str, list[str] | None] = {}
    left = max_bytes
    out: dict[tuple[str, int], str] = {}
    for path, line in places:
        if not isinstance(path, str) or type(line) is not int or line < 1:
            continue
        if (path, line) in out:
            continue
        if path not in files:
            if len(files) >= max_files or left <= 0:
                continue
            files[path] = None
            try:
                root, parts = _located(project, path)
                data = tree.read_below(root, parts, min(MAX_BYTES, left) + 1)
                if data is not None:
                    left -= len(data)
                    if left < 0:  # cut by the bound: not read whole
                        continue
                files[path] = _lines(_text(path, data))
            except (InvalidArgument, OSError, ValueError):  # refused, or a name no file has
                continue
        lines = files[path]
        if lines is not None and line <= len(lines):
            out[(path, line)] = printable(lines[line - 1]).strip()[:MAX_CODE]
    return out

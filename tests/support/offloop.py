"""A watch on the store's methods: which of them ran on an event loop's thread.

The store is synchronous (SQLAlchemy, the blob files or bucket): called on the loop, one
slow database answer stalls every session of the server. Tests wrap the store's public
methods (and the export records', the project states') with this watch, drive a server in
the same process, and assert that nothing ran on the loop.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from godot_mcp.store.blobs import Blobs
from godot_mcp.store.exports import ExportRecords
from godot_mcp.store.projects import Projects
from godot_mcp.store.store import ArtifactStore

WATCHED = (ArtifactStore, Blobs, ExportRecords, Projects)
# Not store work: a clock, a forget in memory, the close at shutdown.
PURE = {"now_us", "forget_verified", "close", "key", "threads"}
_depth = threading.local()


def _on_loop() -> bool:
    return asyncio._get_running_loop() is not None


@contextmanager
def store_calls_on_the_loop(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Yields a list that fills with ``Class.method (caller file:line)`` for every outermost
    store call made on an event loop's thread."""
    seen: list[str] = []
    for cls in WATCHED:
        for name, fn in list(vars(cls).items()):
            if name.startswith("_") or name in PURE or not inspect.isfunction(fn):
                continue
            monkeypatch.setattr(cls, name, functools.wraps(fn)(_watch(seen, cls, name, fn)))
    yield seen


def _watch(seen: list[str], cls: type, name: str, fn: Any) -> Any:
    def watched(*args: Any, **kwargs: Any) -> Any:
        depth = getattr(_depth, "n", 0)
        if depth == 0 and _on_loop():
            frames = [
                f
                for f in traceback.extract_stack()[:-1]
                if "/godot_mcp/" in f.filename and "/godot_mcp/store/" not in f.filename
            ]
            last = frames[-1] if frames else None
            where = f"{last.filename.split('/godot_mcp/')[1]}:{last.lineno}" if last else "?"
            seen.append(f"{cls.__name__}.{name} ({where})")
        _depth.n = depth + 1
        try:
            return fn(*args, **kwargs)
        finally:
            _depth.n = depth

    return watched

"""The blob-directory lock: shared while registering, exclusive to delete files.

Registrations hold it shared from their temp file until their rows commit, so
a holder of the exclusive lock knows that no registration is in flight: every
temp file is stale and every published file without a row is an orphan.
``flock`` locks belong to an open file description, so this works between
threads (each acquisition opens the file anew) and between processes, and the
kernel drops a lock when its holder is killed.

A second file, the gate, keeps a busy store from starving the exclusive side:
a shared holder passes through the gate (shared) on its way in, an exclusive
holder keeps the gate (exclusive) while it waits, so new registrations queue
behind it instead of overtaking it forever.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from godot_mcp.errors import Timeout


@contextmanager
def _flock(path: Path, mode: int, timeout: float | None) -> Iterator[bool]:
    """Hold ``flock(mode)`` on ``path``; yields False if not had within ``timeout``."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        waited = 0.0  # counted, not read from a clock: frozen clocks must not hang us
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if timeout is not None and waited >= timeout:
                    yield False
                    return
                time.sleep(delay)
                waited += delay
                delay = min(delay * 2, 0.05)
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class BlobLock:
    """A shared/exclusive ``flock`` on one file of the state dir, with a writer gate."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.gate = path.with_name(path.name + ".gate")

    @contextmanager
    def shared(self, timeout: float = 120.0) -> Iterator[None]:
        """Hold the lock shared (registrations); raise Timeout past ``timeout``."""
        held = _flock(self.path, fcntl.LOCK_SH, timeout)
        with _flock(self.gate, fcntl.LOCK_SH, timeout) as through:
            if not through:
                raise Timeout("the store is busy with maintenance; try again")
            ok = held.__enter__()  # the main lock outlives the gate, released just below
        try:
            if not ok:
                raise Timeout("the store is busy with maintenance; try again")
            yield
        finally:
            held.__exit__(None, None, None)

    @contextmanager
    def exclusive(self, timeout: float | None = 120.0) -> Iterator[bool]:
        """Hold the lock exclusive; yields False when not had within ``timeout``."""
        with _flock(self.gate, fcntl.LOCK_EX, timeout) as gate:
            if not gate:
                yield False
                return
            with _flock(self.path, fcntl.LOCK_EX, timeout) as ok:
                yield ok

"""The blob-directory lock: shared while registering, exclusive to delete files.

Registrations hold it shared from their temp file until their rows commit, so
a holder of the exclusive lock knows that no registration is in flight: every
temp file is stale and every published file without a row is an orphan.
``flock`` locks belong to an open file description, so this works between
threads (each acquisition opens the file anew) and between processes, and the
kernel drops a lock when its holder is killed.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from godot_mcp.errors import Timeout


class BlobLock:
    """A shared/exclusive ``flock`` on one file of the state dir."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @contextmanager
    def _held(self, mode: int, timeout: float | None) -> Iterator[bool]:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
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

    @contextmanager
    def shared(self, timeout: float = 120.0) -> Iterator[None]:
        """Hold the lock shared (registrations); raise Timeout past ``timeout``."""
        with self._held(fcntl.LOCK_SH, timeout) as ok:
            if not ok:
                raise Timeout("the store is busy with maintenance; try again")
            yield

    @contextmanager
    def exclusive(self, timeout: float | None = 120.0) -> Iterator[bool]:
        """Hold the lock exclusive; yields False when not had within ``timeout``."""
        with self._held(fcntl.LOCK_EX, timeout) as ok:
            yield ok

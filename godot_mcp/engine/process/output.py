"""A child's output read as lines, as it comes: one reader for every feature that pipes Godot.

The pipe is read without blocking the loop (``wait_readable`` on its descriptor), in chunks, and
cut into lines with the terminal's escape sequences removed; a line is kept to ``max_line``
characters and a line without end is cut at four times that, so a child that prints without a
newline costs no memory. What the lines mean is the caller's.
"""

from __future__ import annotations

import math
import os
from typing import IO

import anyio

from godot_mcp.engine.process.engine_lines import without_escapes

__all__ = ["MAX_LINE", "PipeLines", "plain"]

MAX_LINE = 10_000  # characters kept of one line


def plain(line: str, max_line: int = MAX_LINE) -> str:
    """``line`` without terminal escape sequences (colours, cursor moves, titles), cut to
    ``max_line`` characters."""
    return without_escapes(line)[:max_line]


class PipeLines:
    """The lines of one pipe (a child's stdout), read chunk by chunk off the loop's back."""

    def __init__(self, pipe: IO[bytes], max_line: int = MAX_LINE) -> None:
        self._pipe = pipe
        self._fd = pipe.fileno()
        os.set_blocking(self._fd, False)
        self._rest = b""
        self._max = max_line
        self.ended = False  # the other end closed: the child and all it started are done

    async def next(self, timeout: float = math.inf) -> list[str] | None:
        """The lines the next chunk completes (``[]`` once the output ended, the last unended
        line flushed before), or ``None`` when nothing came within ``timeout`` seconds."""
        while not self.ended:
            with anyio.move_on_after(max(timeout, 0)) as scope:
                await anyio.wait_readable(self._fd)
            if scope.cancelled_caught:
                return None
            try:
                chunk = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                continue
            if not chunk:
                self.ended = True
            return self._split(chunk)
        return []

    def _split(self, chunk: bytes) -> list[str]:
        whole = (self._rest + chunk).split(b"\n")
        self._rest = whole.pop()
        if (not chunk or len(self._rest) > 4 * self._max) and self._rest:
            whole.append(self._rest[: 4 * self._max])
            self._rest = b""
        return [plain(w.decode("utf-8", "replace").rstrip("\r"), self._max) for w in whole]

    def close(self) -> None:
        """Close our end of the pipe."""
        self._pipe.close()

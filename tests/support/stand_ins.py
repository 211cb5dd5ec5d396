"""Stand-ins for a game process in tests of the game's own code: what the session and its
log reader ask of a child, and a stderr the test writes to."""

from __future__ import annotations

import os
import threading

import anyio

LATE_S = 0.05  # how long after a reply the lines ``say_later`` prints come


class Running:
    """A game process that runs until the test ends, printing what the test writes."""

    def __init__(self) -> None:
        read, self._write = os.pipe()
        self.stderr = open(read, "rb", buffering=0)  # noqa: SIM115 - the session's reader closes it
        self.stdout = None
        self.pid = 0
        self._later: list[threading.Timer] = []

    def poll(self) -> int | None:
        return None

    async def wait(self) -> int:
        await anyio.Event().wait()
        return 0

    async def wait_for(self, timeout: float) -> int | None:
        return None

    def say(self, *lines: str) -> None:
        os.write(self._write, "".join(f"{line}\n" for line in lines).encode())

    def say_later(self, *lines: str) -> None:
        """Print ``lines`` to stderr a moment from now, from another thread."""
        timer = threading.Timer(LATE_S, self.say, lines)
        self._later.append(timer)
        timer.start()

    def close(self) -> None:
        for timer in self._later:
            timer.cancel()
            timer.join()
        os.close(self._write)

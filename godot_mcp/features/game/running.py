"""A running game as its session knows it: its process, its output read into its log, what
its bridge said as it attached, and its state. The session's commands, captures and
lifecycle build on it (``commands.py``, ``capturing.py``, ``session.py``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import IO

import anyio

from godot_mcp.engine.process.child import Child
from godot_mcp.engine.process.redact import Scrubber
from godot_mcp.errors import Malformed
from godot_mcp.features.game.bridge import BridgeConnection
from godot_mcp.features.game.errors import GameError, GameFailed, one_line
from godot_mcp.features.game.gate import Gate
from godot_mcp.features.game.log import GameLog
from godot_mcp.features.game.marks import CallMarks
from godot_mcp.features.game.protocol import Hello, Ready

__all__ = ["RunningGame"]

log = logging.getLogger(__name__)

_DEBUGGER_LINES = frozenset({"PROFILING ALRIGHT!", "PROFILING END!"})


class RunningGame:
    """A game's process and output, and its bridge's first words."""

    def __init__(
        self,
        child: Child,
        mode: str,
        scratch: Path,
        scrub: Scrubber,
    ) -> None:
        self.mode = mode
        # Before the log and its readers: a reader thread asks it from its first line on.
        self.gate: Gate | None = None  # a debugger's breaks, for a session started with one
        self._child = child
        self._marks = CallMarks()  # the marks of the calls in flight, and the last ones
        self.log = GameLog(scrub, take=self._take_mark)
        self._pumps = [
            _pump(self.log, name, pipe)
            for name, pipe in (("stdout", child.stdout), ("stderr", child.stderr))
            if pipe is not None
        ]
        self._scratch = scratch
        self._scrub = scrub
        self._conn: BridgeConnection | None = None
        self._state = "starting"
        self._exit_code: int | None = None
        self._hello: Hello | None = None
        self._ready: Ready | None = None
        self._capture_lock = anyio.Lock()
        # the bridge's failure after a debug start
        self._attach_error: GameError | Malformed | None = None
        self._attached = anyio.Event()  # the bridge connected (or failed to)
        self.data_dir: Path | None = None  # its own XDG_DATA_HOME (user://), its runner's

    @property
    def state(self) -> str:
        """``starting``, ``running``, ``exited`` (on its own) or ``stopped`` (by us)."""
        return self.poll()

    @property
    def exit_code(self) -> int | None:
        """The game's exit code once it ended (negative: killed by that signal)."""
        self.poll()
        return self._exit_code

    @property
    def scrub(self) -> Scrubber:
        """What every text of this game passes before a client sees it."""
        return self._scrub

    @property
    def pid(self) -> int:
        """The game's pid (also its process group id)."""
        return self._child.pid

    @property
    def connected(self) -> bool:
        """Whether the game's bridge connected back (its hello was accepted)."""
        return self._conn is not None

    @property
    def headless(self) -> bool:
        """True when the engine cannot draw: captures are unavailable."""
        return self.mode == "headless" or (self._hello is not None and self._hello.headless)

    @property
    def engine_version(self) -> str | None:
        """The version string the engine reported."""
        return self._hello.engine if self._hello is not None else None

    @property
    def viewport_size(self) -> tuple[int, int] | None:
        """The root viewport size reported when the scene was ready."""
        if self._ready is None:
            return None
        return self._ready.width, self._ready.height

    def poll(self) -> str:
        """Refresh and return the state, noticing a game that exited on its own."""
        code = self._child.poll()
        if code is not None:
            self._exit_code = code
            if self._state in ("starting", "running"):
                self._state = "exited"
        return self._state

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of the game's output, private paths scrubbed."""
        return "\n".join(self.log.tail(lines))

    async def drained(self, timeout: float = 1.0) -> None:
        """Wait (bounded) until the game's output has been read to its end."""
        deadline = time.monotonic() + timeout

        def join() -> None:  # each reader ends at its pipe's end
            for pump in self._pumps:
                pump.join(max(0.0, deadline - time.monotonic()))

        if any(p.is_alive() for p in self._pumps):
            with anyio.move_on_after(timeout):  # a worker thread may be long in coming
                await anyio.to_thread.run_sync(join, abandon_on_cancel=True)

    def _exit_error(self, code: int | None, when: str = "") -> GameError:
        lines = self.log.tail(6, telling=True)
        tail = one_line("\n".join(lines), 400)
        return GameFailed(f"game exited with code {code}{when}: {tail or 'no output'}")

    def _take_mark(self, stream: str, text: str, seq: int) -> bool:
        """Whether a line is the server's own, kept out of the log: a call's marker line
        (``marks.py``), or a debugger's doing. Run by the log, under its lock, on a pipe
        reader's thread."""
        if self.gate is not None and stream == "stdout" and text in _DEBUGGER_LINES:
            return True  # Godot 3.2's answer to the server's own profiler requests
        if self.gate is not None and stream == "stderr" and self.gate.quiet():
            return True  # the engine's words on the server's own evaluation
        return stream == "stderr" and self._marks.take(text, seq)


def _pump(game_log: GameLog, name: str, pipe: IO[bytes]) -> threading.Thread:
    """Read one of the game's pipes into its log until EOF, on a thread of its own.

    A game printing megabytes a second costs this thread, never the event loop's reads of
    other sessions; what the buffer cannot keep is counted as dropped.
    """

    def run() -> None:
        fd = pipe.fileno()
        failed = False
        try:
            while True:
                try:
                    data = os.read(fd, 1 << 16)
                except OSError:
                    data = b""
                try:
                    game_log.feed(name, data)
                except Exception:  # a fault here must not close the pipe under the game
                    if not failed:
                        log.exception("the game's %s could not be logged", name)
                    failed = True
                if not data:
                    return
        finally:
            pipe.close()

    thread = threading.Thread(target=run, name=f"game-{name}", daemon=True)
    thread.start()
    return thread

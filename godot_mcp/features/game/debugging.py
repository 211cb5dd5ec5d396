"""A game's debugger joined to its session (docs/debugging.md): the launch's listener and engine
arguments, the attach within the start's bound, the reader in the games' task group, and what
a break means for the game's log.

The game feature knows only a gate (``features/game/gate.py``) and the debug feature only its
connection; this module is where the two meet.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from pathlib import Path

import anyio.abc

from godot_mcp.engine.debugger import Break, Debugger, DebugListener
from godot_mcp.engine.profile import EngineProfile
from godot_mcp.errors import InvalidArgument, quoted
from godot_mcp.features.game import GameSession

__all__ = ["MAX_BREAKPOINTS", "DebugLaunch", "parse_breakpoints", "project_script"]

log = logging.getLogger(__name__)

MAX_BREAKPOINTS = 100
MAX_LINE = 1_000_000
_PATH = r"res://[^\x00-\x1f\\:,%]+\.gd"  # a script path --breakpoints can carry
_SCRIPT = re.compile(_PATH)
_BREAKPOINT = re.compile(rf"({_PATH}):([0-9]{{1,7}})")


def project_script(project: Path, path: str) -> str:
    """``path`` if it names a script file of the project (a clean ``res://…gd`` path whose file,
    links resolved, is inside it), else ``InvalidArgument`` naming it. Blocking."""
    parts = path[len("res://") :].split("/") if _SCRIPT.fullmatch(path) else [""]
    real = os.path.realpath(project.joinpath(*parts))
    clean = not any(p in ("", ".", "..") for p in parts)
    inside = real.startswith(os.path.realpath(project) + os.sep)
    if not (clean and inside and os.path.isfile(real)):
        raise InvalidArgument(f"{quoted(path)} is not a script of the project")
    return path


def parse_breakpoints(project: Path, items: Iterable[str]) -> dict[str, set[int]]:
    """``res://path.gd:LINE`` strings as ``{path: {line}}``; ``InvalidArgument`` naming the
    first that is not a line of a script of the project. Blocking (looks at the files)."""
    out: dict[str, set[int]] = {}
    for item in items:
        match = _BREAKPOINT.fullmatch(item) if isinstance(item, str) else None
        if match is None or not 1 <= int(match.group(2)) <= MAX_LINE:
            raise InvalidArgument(f"a breakpoint is res://path.gd:LINE, not {quoted(item)!r}")
        path = project_script(project, match.group(1))
        out.setdefault(path, set()).add(int(match.group(2)))
    return out


def engine_list(breakpoints: dict[str, set[int]]) -> str:
    """The engine's ``--breakpoints`` value: ``path:line`` pairs, comma-separated (paths with
    a space spell it ``%20``, as the engine reads them)."""
    pairs = (f"{p}:{n}" for p in sorted(breakpoints) for n in sorted(breakpoints[p]))
    return ",".join(pair.replace(" ", "%20") for pair in pairs)


class DebugLaunch:
    """The debugger of one launch: its listener until the game attached, then the connection."""

    def __init__(
        self,
        listener: DebugListener,
        engine: EngineProfile,
        breakpoints: dict[str, set[int]],
        background: anyio.abc.TaskGroup,
    ) -> None:
        self._listener = listener
        self.engine = engine
        self.breakpoints = breakpoints
        self._background = background
        self.debugger: Debugger | None = None

    @classmethod
    async def open(
        cls,
        engine: EngineProfile,
        breakpoints: dict[str, set[int]],
        background: anyio.abc.TaskGroup,
    ) -> DebugLaunch:
        return cls(await DebugListener.open(), engine, breakpoints, background)

    def engine_args(self) -> list[str]:
        address = f"127.0.0.1:{self._listener.port}"
        args = ["--remote-debug", self.engine.remote_debug(address)]
        if self.breakpoints:
            args += ["--breakpoints", engine_list(self.breakpoints)]
        return args

    async def attach(self, game: GameSession) -> Debugger:
        """The launched game's connection (others refused), read in the background from now
        on; the start's bound is the caller's."""
        try:
            stream = await self._listener.accept(game.pid)
        finally:
            with anyio.CancelScope(shield=True):
                await self._listener.aclose()
        debugger = Debugger(
            stream,
            self.engine,
            {p: set(lines) for p, lines in self.breakpoints.items()},
            on_break=lambda brk: self._noted(game, brk),
            scrub=game.scrub,
        )
        self.debugger = debugger
        self._background.start_soon(self._read, game, debugger)
        return debugger

    def _noted(self, game: GameSession, brk: Break) -> None:
        """Godot 3 stops printing script errors once a debugger is attached: the log gets
        the break's error as the engine would have printed it."""
        if brk.reason == "error" and not self.engine.logs_errors_when_debugged and brk.error:
            top = brk.stack[0] if brk.stack else None
            function = f"{top.function}: " if top else ""
            source = (top.path, top.line) if top else None
            line = f"SCRIPT ERROR: {function}{brk.error}"
            game.log.note("stderr", "error", line, source)  # the log scrubs it

    async def _read(self, game: GameSession, debugger: Debugger) -> None:
        """Read the connection to its end; a game stopped at a break when it is lost is ended
        (it would stay stopped for ever)."""
        try:
            await debugger.run()
        except Exception:  # a fault here must never end the server
            log.exception("reading a game's debugger connection failed")
        finally:
            if debugger.lost_at_break and game.poll() in ("starting", "running"):
                with anyio.CancelScope(shield=True):
                    await game.end(
                        f"the debugger connection was lost while the game was stopped "
                        f"({debugger.lost}); the game was ended"  # the log scrubs its lines
                    )

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            await self._listener.aclose()
            if self.debugger is not None:
                await self.debugger.aclose()

"""What stops a game's frames from outside the bridge: a debugger's break.

A session started with a gate (``GameRunner.start(attach=…)``) asks it before every command
and races every command against it: while the game is stopped its main loop does not run,
so a command that needs a frame answers :class:`GameUnavailable` at once, naming where the
game stopped, and a command already waiting answers the same as soon as the break is seen.
The game feature knows only this protocol; the debugger that implements it is another
feature, joined to the session by the runtime.
"""

from __future__ import annotations

from typing import Protocol

from godot_mcp.errors import Remedy
from godot_mcp.features.game.errors import GameUnavailable

__all__ = ["Gate", "stopped_error"]


class Gate(Protocol):
    def stopped_at(self) -> str | None:
        """Where and why the game is stopped (``res://a.gd:3 (breakpoint)``), or None."""
        ...

    async def until_stopped(self) -> None:
        """Return once the game is stopped (at once if it is); unbounded: raced."""
        ...

    def quiet(self) -> bool:
        """Whether what the engine prints now is the server's own doing (an evaluation's
        error while the game is stopped), kept out of the game's log. Asked from the log's
        reader threads."""
        ...


def stopped_error(where: str) -> GameUnavailable:
    return GameUnavailable(f"the game is stopped at {where}", remedy=Remedy.RESUME)

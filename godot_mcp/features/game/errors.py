"""The one error a game session raises, and the scrubbing of text that leaves this layer.

Errors (part of the one error tree, :mod:`godot_mcp.errors`, which knows nothing of MCP: each
is also the tree's type for its outcome, so nothing maps them by hand)::

    GameError(GodotMcpError)      .message: one path-free line
     ├── GameInvalid              bad scene path, frame count, fps, mode, size
     ├── GameUnavailable          no Godot/Xvfb for the mode, or a capture on a headless session
     ├── GameFailed               the game exited, a scene did not load, a capture was bad
     ├── GameTimeout              a bounded wait ran out (connect, capture, quit)
     └── GameNotFound             the game has no such node

A reply the bridge never sends is the tree's own :class:`~godot_mcp.errors.Malformed` (the
debugger's bytes say theirs with it too).

Every message and log tail goes through a :class:`~godot_mcp.engine.process.redact.Scrubber` first:
private paths (the state dir and its parent, the scratch dir, the package's bridge scripts, the
home dir) become placeholders, and the project dir becomes ``res://``.
"""

from __future__ import annotations

from godot_mcp.errors import (
    Failed,
    GodotMcpError,
    InvalidArgument,
    NotFound,
    Remedy,
    Timeout,
    Unavailable,
)

MAX_MESSAGE = 600


class GameError(GodotMcpError):
    """A game-session operation failed; the subclass says how, ``message`` says why."""

    def __init__(self, message: str, *, remedy: Remedy | None = None, **details: object) -> None:
        super().__init__(one_line(message), remedy=remedy, **details)


class GameInvalid(GameError, InvalidArgument):
    """The request itself is wrong (a bad scene path, frame count, mode)."""


class GameUnavailable(GameError, Unavailable):
    """What the request needs is not there (Godot, a display, a windowed session)."""


class GameFailed(GameError, Failed):
    """The game or the engine failed (exited, did not load, wrote a bad capture)."""


class GameTimeout(GameError, Timeout):
    """A bounded wait ran out."""


class GameNotFound(GameError, NotFound):
    """The game has no such thing (a node path)."""


# The words the bridge protocol uses for its refusals.
BY_WORD: dict[str, type[GameError]] = {
    "invalid_argument": GameInvalid,
    "unavailable": GameUnavailable,
    "failed": GameFailed,
    "timeout": GameTimeout,
    "not_found": GameNotFound,
}


def game_error(exc: GodotMcpError, message: str) -> GameError:
    """The game's error of ``exc``'s outcome (a refusal of the process layer: a display that
    would not start), saying ``message``."""
    return BY_WORD.get(exc.outcome, GameFailed)(message)


def one_line(text: str, limit: int = MAX_MESSAGE) -> str:
    """Collapse ``text`` onto one line and cut it to ``limit`` characters."""
    flat = " / ".join(part.strip() for part in text.splitlines() if part.strip())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"

"""The one error a game session raises, and the scrubbing of text that leaves this layer.

Errors::

    GameError(Exception)        .outcome in OUTCOMES, .message one path-free line
      outcome "invalid_argument"  bad scene path, frame count, fps, mode, size
      outcome "unavailable"       no Godot/Xvfb for the mode, or a capture on a headless session
      outcome "failed"            the game exited, a scene did not load, a capture was malformed
      outcome "timeout"           a bounded wait ran out (connect, capture, quit)

Every message and log tail goes through a :class:`~godot_mcp.godot.redact.Scrubber` first:
private paths (the state dir and its parent, the scratch dir, the package's bridge scripts, the
home dir) become placeholders, and the project dir becomes ``res://``.
"""

from __future__ import annotations

OUTCOMES = frozenset({"failed", "timeout", "unavailable", "invalid_argument"})
MAX_MESSAGE = 600


class GameError(Exception):
    """A game-session operation failed; ``outcome`` says how, ``message`` says why."""

    def __init__(self, outcome: str, message: str) -> None:
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {outcome!r}")
        self.outcome = outcome
        self.message = one_line(message)
        super().__init__(self.message)


def one_line(text: str, limit: int = MAX_MESSAGE) -> str:
    """Collapse ``text`` onto one line and cut it to ``limit`` characters."""
    flat = " / ".join(part.strip() for part in text.splitlines() if part.strip())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"

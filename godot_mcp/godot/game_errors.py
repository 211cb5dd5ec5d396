"""The one error a game session raises, and the scrubbing of text that leaves this layer.

Errors::

    GameError(Exception)        .outcome in OUTCOMES, .message one path-free line
      outcome "invalid_argument"  bad scene path, frame count, fps, mode, size
      outcome "unavailable"       no Godot/Xvfb for the mode, or a capture on a headless session
      outcome "failed"            the game exited, a scene did not load, a capture was malformed
      outcome "timeout"           a bounded wait ran out (connect, capture, quit)

Every message and log tail goes through a :class:`Scrubber` first: private paths (the scratch
dir, the system temp dir, the package's bridge scripts, the home dir) become placeholders, and
the project dir becomes ``res://``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

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


class Scrubber:
    """Replaces private paths in text with placeholders; the project becomes ``res://``."""

    def __init__(self, private: Iterable[tuple[Path | str, str]], project: Path | None = None):
        pairs: list[tuple[str, str]] = []
        if project is not None:
            pairs.append((str(project).rstrip("/") + "/", "res://"))
            pairs.append((str(project).rstrip("/"), "res://"))
        for path, placeholder in private:
            text = str(path).rstrip("/")
            if text:
                pairs.append((text, placeholder))
                real = os.path.realpath(text)
                if real != text:
                    pairs.append((real, placeholder))
        self._pairs = sorted(pairs, key=lambda pair: len(pair[0]), reverse=True)

    def __call__(self, text: str) -> str:
        """Return ``text`` with every known private path replaced."""
        for path, placeholder in self._pairs:
            text = text.replace(path, placeholder)
        return text

    @classmethod
    def default(cls, scratch: Path, project: Path | None = None) -> Scrubber:
        """A scrubber for a runner's scratch dir and the usual private places."""
        here = Path(__file__).resolve().parent
        private: list[tuple[Path | str, str]] = [
            (scratch, "<tmp>"),
            (here, "<godot_mcp>"),
            (tempfile.gettempdir(), "<tmp>"),
        ]
        home = os.path.expanduser("~")
        if home not in ("", "/"):
            private.append((home, "~"))
        return cls(private, project)

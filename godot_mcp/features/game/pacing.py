"""How long a recording may take: bounded first by the game's measured rate, then by the rate
its own frames come at, never past ``MAX_RECORD_WAIT`` s; and frame rates as messages
say them.

A slow game (a 3D project on a machine without a GPU runs at about 1 fps) draws each
recorded frame slower still, since grabbing and saving it costs that frame: a bound taken
from the rate measured before the recording, which leaves that out, ends recordings that
would fit. So a recording is watched while it runs: once two of its frames are written, the
bound is the frames still to come at the rate those came at (capture included), plus
``SLACK`` s, or the first bound if that is later.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

from godot_mcp.features.game.errors import GameInvalid

__all__ = [
    "MAX_RECORD_WAIT",
    "SLACK",
    "fps_text",
    "frames_written",
    "recording_bound",
    "recording_deadline",
    "recording_rate",
]

MAX_RECORD_WAIT = 50  # seconds a recording may take in wall time, however slow the game
SLACK = 5.0  # seconds a recording may take past its frames at its rate


def fps_text(rate: float) -> str:
    """A frame rate as a message says it: whole from 10 fps, one decimal from 1, two
    significant digits below (``0.48``, ``0.05``), so a rate under 1 fps is never ``0``."""
    if rate >= 10:
        return f"{rate:.0f}"
    if rate >= 1:
        return f"{rate:.1f}".removesuffix(".0")
    if rate <= 0:
        return "0"
    decimals = 1 - math.floor(math.log10(rate))
    return f"{rate:.{decimals}f}".rstrip("0").rstrip(".")


def recording_bound(frames: int, fps: int, measured: float) -> float:
    """Seconds a recording may take at first: its frames at the slower of the asked rate
    and the game's measured one, plus ``SLACK``; ``invalid_argument`` past
    ``MAX_RECORD_WAIT`` s."""
    rate = min(float(fps), measured) if measured > 0 else float(fps)
    bound = frames / rate + SLACK
    if bound > MAX_RECORD_WAIT:
        runs = f"the game runs at {fps_text(measured)} fps" if measured > 0 else "not measured yet"
        raise GameInvalid(
            f"{frames} frames at {fps_text(rate)} fps ({runs}) would take {bound:.0f} s; a "
            f"recording waits at most {MAX_RECORD_WAIT} s: ask for fewer frames"
        )
    return bound


def recording_rate(seen: Sequence[float], started: float, now: float) -> float:
    """Frames a second a recording got: its frames seen (``seen``: when each was) over the
    time since it ``started``."""
    return len(seen) / (now - started) if now > started else 0.0


def recording_deadline(
    started: float, seen: Sequence[float], frames: int, first: float, cap: float
) -> float:
    """When a recording of ``frames`` frames that ``started`` then gives up: ``first`` s
    after its start, or later once two frames came (``seen``: when each was), when the rest
    would have come at their rate plus ``SLACK``; never past ``cap`` s after its start."""
    end = started + first
    if len(seen) >= 2 and seen[-1] > seen[0]:
        rate = (len(seen) - 1) / (seen[-1] - seen[0])
        end = max(end, seen[-1] + (frames - len(seen)) / rate + SLACK)
    return min(end, started + cap)


def frames_written(paths: Sequence[Path], known: int) -> int:
    """How many of a recording's frame files exist, in order, counting on from the ``known``
    first (a file is there from when the game begins writing it). Blocking: a worker
    thread's."""
    count = known
    while count < len(paths) and os.path.lexists(paths[count]):
        count += 1
    return count

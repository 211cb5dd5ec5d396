"""Bounded waits on a running game: a frame count, game seconds, a node, a property value,
a log line.

A property wait compares with ``equals``, ``not_equals``, ``less``, ``greater`` (numbers: a
value that is not one is refused at once, typed) or ``changed`` (any value other than the
first one read). Each polls the game once a frame over the bridge (other commands on the
session go on meanwhile) and ends within its timeout.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import anyio

from godot_mcp.errors import Timeout
from godot_mcp.features.game.errors import GameInvalid, GameNotFound
from godot_mcp.features.game.log import GameLog
from godot_mcp.features.game.session import GameSession

FRAME_S = 1 / 60
LOG_POLL_S = 0.05
MAX_WAIT_SECONDS = 30  # game seconds one wait, or one input call's waits, may ask for
INPUT_TIMEOUT = 30.0  # seconds an input call may take, besides its waits in game seconds
SECONDS_TIMEOUT_CAP = 90.0  # seconds an input call may take at most, however slow the game


def input_timeout(events: list[Any]) -> float:
    """How long an input call may take: ``INPUT_TIMEOUT``, plus twice its waits in game
    seconds (a game time scale of 1 runs them in about as many wall seconds, at any frame
    rate), at most ``SECONDS_TIMEOUT_CAP``."""
    waited = sum(e.get("seconds", 0) for e in events if e.get("type") == "wait")
    return min(INPUT_TIMEOUT + 2 * waited, SECONDS_TIMEOUT_CAP)


def same(got: Any, want: Any) -> bool:
    """JSON values equal, numbers to a millionth (floats cross the bridge as text)."""
    if isinstance(got, int | float) and isinstance(want, int | float):
        if isinstance(got, bool) or isinstance(want, bool):
            return got is want
        return abs(float(got) - float(want)) <= 1e-6 * max(1.0, abs(float(want)))
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(same(got[k], want[k]) for k in got)
    if isinstance(got, list) and isinstance(want, list):
        return len(got) == len(want) and all(same(a, b) for a, b in zip(got, want, strict=True))
    return bool(got == want)


CONDITIONS = ("equals", "not_equals", "less", "greater", "changed")
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def as_number(value: Any, prop: str) -> float:
    """A property's value as a number (non-finite floats too); anything else is refused:
    ``less`` and ``greater`` compare numbers."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    special = value.get("value") if isinstance(value, dict) else None
    if value == {"type": "float", "value": special} and special in ("nan", "inf", "-inf"):
        return _NON_FINITE[special]
    kind = value.get("type", "Dictionary") if isinstance(value, dict) else type(value).__name__
    if not isinstance(kind, str) or not kind.isidentifier() or len(kind) > 40:
        kind = "value"  # the game names its own types: a forged name is not repeated
    kind = {"str": "String", "NoneType": "null", "list": "Array"}.get(kind, kind)
    raise GameInvalid(f"{prop} is a {kind}, not a number: less and greater compare numbers")


def holds(until: dict[str, Any], value: Any, first: Any) -> bool:
    """Whether a property wait's condition holds for ``value`` (``first``: the value read when
    the wait began, for ``changed``)."""
    if "equals" in until:
        return same(value, until["equals"])
    if "not_equals" in until:
        return not same(value, until["not_equals"])
    if "changed" in until:
        return not same(value, first)
    number = as_number(value, until["property"])
    if "less" in until:
        return number < until["less"]
    return number > until["greater"]


async def wait_until(
    game: GameSession, until: dict[str, Any], mark: int, timeout: float
) -> dict[str, Any]:
    """Wait for ``until`` (``frames``; ``seconds`` of game time; ``log`` text after log
    sequence ``mark``; ``node`` with ``property`` and a condition of ``CONDITIONS``; ``node``);
    answers ``{frame, value?}``. On timeout raises Timeout with the frame and the last value
    seen."""
    last: dict[str, Any] = {}
    first: list[Any] = []  # the value read first, for ``changed``

    async def frame() -> int:
        return (await game.ping()).frame

    async def timed_out() -> Timeout:
        """The timeout, with the frame reached and the game's measured rate."""
        ping = await game.ping()
        return Timeout(
            f"the condition was not met within {timeout:g} s",
            frame=ping.frame,
            fps=ping.fps,
            **last,
        )

    with anyio.move_on_after(timeout):
        if "frames" in until:
            wait = [{"type": "wait", "frames": until["frames"]}]
            return {"frame": (await game.send_input(wait, timeout=timeout + 1)).frame}
        if "seconds" in until:
            return {"frame": (await game.after(until["seconds"], timeout=timeout + 1)).frame}
        while True:
            if "log" in until:
                page = game.log.read(mark, 1000, "print")
                mark = max(mark, page.next_seq)  # a flood of lines never stalls the scan
                hit = next((e for e in page.entries if until["log"] in e.text), None)
                if hit is not None:
                    return {"frame": await frame(), "value": hit.text}
            elif "property" in until:
                with contextlib.suppress(GameNotFound):  # not there yet
                    values = await game.get(until["node"], [until["property"]])
                    last["value"] = values.values.get(until["property"])
                    if not first:
                        first.append(last["value"])
                    if holds(until, last["value"], first[0]):
                        return {"frame": await frame(), "value": last["value"]}
            else:
                with contextlib.suppress(GameNotFound):
                    await game.tree(until["node"], depth=0, max_nodes=1)
                    return {"frame": await frame()}
            await anyio.sleep(FRAME_S)
    # A frame wait the game still holds was cancelled there as it was abandoned (the
    # bridge drops it), so nothing queued behind it waits for it.
    raise await timed_out()


async def wait_for_line(log: GameLog, since: int, min_level: str, wait: float) -> None:
    """Return once the log holds a line after ``since`` at ``min_level`` or above, or after
    ``wait`` seconds."""
    with anyio.move_on_after(wait):
        while not log.has_new(since, min_level):
            await anyio.sleep(LOG_POLL_S)

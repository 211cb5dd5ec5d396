"""Bounded waits on a running game: a frame count, a node, a property value, a log line.

Each polls the game once a frame over the bridge (other commands on the session go on
meanwhile) and ends within its timeout.
"""

from __future__ import annotations

import contextlib
from typing import Any

import anyio

from godot_mcp.errors import Timeout
from godot_mcp.features.game.errors import GameNotFound
from godot_mcp.features.game.log import GameLog
from godot_mcp.features.game.session import GameSession

FRAME_S = 1 / 60
LOG_POLL_S = 0.05


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


async def wait_until(
    game: GameSession, until: dict[str, Any], mark: int, timeout: float
) -> dict[str, Any]:
    """Wait for ``until`` (``frames``; ``log`` text after log sequence ``mark``; ``node``
    with ``property`` ``equals``; ``node``); answers ``{frame, value?}``. On timeout raises
    Timeout with the frame and the last value seen."""
    last: dict[str, Any] = {}

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
                    if same(last["value"], until["equals"]):
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

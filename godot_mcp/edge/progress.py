"""Progress notifications of one tool call: strictly increasing, ``total`` only when exact."""

from __future__ import annotations

import anyio

from godot_mcp.edge.deps import ToolCall

EVERY_S = 0.5  # at least one notification this often while a call works


class Progress:
    """The progress of one call. Without a progress token nothing is sent."""

    def __init__(self, call: ToolCall) -> None:
        self.call = call
        self.last = 0.0

    async def step(self, done: float, message: str) -> None:
        """Another notification: ``done`` when it moved, else one more than the last."""
        self.last = max(float(done), self.last + 1.0)
        await self.call.progress(self.last, None, message)

    async def ended(self, message: str) -> None:
        """The last notification: its ``total`` equals its value (none if none went before:
        a call that ends within ``EVERY_S`` needs no progress)."""
        if self.last == 0.0:
            return
        self.last += 1.0
        await self.call.progress(self.last, self.last, message)
        # Let the transport write it out before the answer it precedes (a client drops
        # progress that reaches it after the response).
        await anyio.sleep(0.05)

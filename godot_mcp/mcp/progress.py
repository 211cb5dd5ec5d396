"""Progress notifications of one tool call: strictly increasing, ``total`` only when exact."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

from godot_mcp.errors import GodotMcpError
from godot_mcp.mcp.deps import ToolCall

T = TypeVar("T")

EVERY_S = 0.5  # at least one notification this often while a call works


class Progress:
    """The progress of one call. Without a progress token nothing is sent."""

    def __init__(self, call: ToolCall[Any]) -> None:
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


class Status:
    """What a long call is doing, in words, sent every ``EVERY_S`` while :meth:`around` runs."""

    def __init__(self, call: ToolCall, words: str) -> None:
        self.progress = Progress(call)
        self.words = words

    async def say(self, words: str) -> None:
        """Change the words of the next notifications."""
        self.words = words

    async def around(self, work: Callable[[], Awaitable[T]]) -> T:
        """``work()``, with a notification every ``EVERY_S`` while it runs; its typed refusal
        is raised past the task group, not inside a group of one."""
        result: list[T] = []
        refused: GodotMcpError | None = None

        async def tick() -> None:
            while True:
                await anyio.sleep(EVERY_S)
                await self.progress.step(0, self.words)

        async with anyio.create_task_group() as tg:
            tg.start_soon(tick)
            try:
                result.append(await work())
            except GodotMcpError as exc:
                refused = exc
            finally:
                tg.cancel_scope.cancel()
        if refused is not None:
            raise refused
        return result[0]

    async def ended(self, words: str) -> None:
        await self.progress.ended(words)

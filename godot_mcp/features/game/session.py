"""Game sessions: a game launched with the bridge script (``runner.py``), connected, driven
and stopped.

A :class:`GameSession` is a running game (``running.py``) with its bridge commands
(``commands.py``) and captures (``capturing.py``); this module brings its bridge up and the
game down. Every wait is bounded; every failure is a :class:`GameError` (a reply the bridge
never sends: the tree's :class:`~godot_mcp.errors.Malformed`) whose message names no private
path.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import replace

import anyio

from godot_mcp.engine.process import engine_lines
from godot_mcp.engine.process.run import stop_run
from godot_mcp.errors import Malformed
from godot_mcp.features.game.bridge import BridgeClosed, BridgeListener
from godot_mcp.features.game.capture import Capture
from godot_mcp.features.game.capturing import Captures
from godot_mcp.features.game.errors import GameError, GameFailed, one_line
from godot_mcp.features.game.gate import Gate
from godot_mcp.features.game.protocol import Hello, Ready

__all__ = ["Capture", "GameError", "GameSession"]


class GameSession(Captures):
    """One running game, driven through its bridge connection."""

    async def connect(self, listener: BridgeListener) -> None:
        """Wait for the authenticated hello on ``listener``, then for the scene to be ready
        (unbounded: the caller bounds it); a GameError if the game exits first or its scene
        fails to load."""
        try:
            await self._attach(listener)
        finally:
            self._attached.set()

    async def _attach(self, listener: BridgeListener) -> None:
        conn, hello = await self._race(listener.accept, gated=False)
        said = Hello.parse(hello)
        engine = self._scrub.game(said.engine) if said.engine is not None else None
        self._conn, self._hello = conn, replace(said, engine=engine)
        ready = Ready.parse(await self._race(conn.receive_type, "ready", gated=False))
        if not ready.loaded:
            reason = ready.error or "the scene failed to load"
            await self._synced()  # the engine's lines of the failure, before anything is read
            details = [line for line in self.log.tail(12, telling=True) if not _is_noise(line)]
            details = details[-3:]
            if details:
                reason += ": " + one_line("\n".join(details), 300)
            raise GameFailed(self._scrub.game(reason))
        self._ready = ready
        self._state = "running"

    async def attach_gate(self, attach: Callable[[GameSession], Awaitable[Gate]]) -> None:
        """Take the gate ``attach`` gives for this session (a debugger connecting) as its own,
        unless the game exits first: then a GameError saying how it ended. Unbounded: the
        caller bounds it."""
        self.gate = await self._race(attach, self, gated=False)

    async def connect_or_stop(
        self, listener: BridgeListener, background: anyio.abc.TaskGroup
    ) -> None:
        """For a session with a gate (:meth:`attach_gate`): connect the bridge in
        ``background`` and wait until it did or the game stopped at a break first (then it
        is ``running``, stopped, its bridge still to come). The background connect closes
        the listener; it ends with the game at the latest."""
        gate = self.gate
        assert gate is not None
        done = anyio.Event()
        failed: list[BaseException] = []

        async def connect() -> None:
            try:
                await self.connect(listener)
            except (GameError, Malformed) as exc:
                failed.append(exc)
                self._attach_error = exc
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as exc:
                failed.append(exc)
            finally:
                done.set()
                with anyio.CancelScope(shield=True):
                    await listener.aclose()

        async def stopped() -> None:
            await gate.until_stopped()

        background.start_soon(connect)
        async with anyio.create_task_group() as group:

            async def first(fn: Callable[[], Awaitable[None]]) -> None:
                await fn()
                group.cancel_scope.cancel()

            group.start_soon(first, done.wait)
            group.start_soon(first, stopped)
        if failed:
            raise failed[0]
        if self._state == "starting" and gate.stopped_at() is not None:
            self._state = "running"  # stopped at a break: running as far as callers see

    async def end(self, reason: str) -> None:
        """End the game now, its reason written in its log: the session becomes ``exited``
        (a debugger lost while the game was stopped would leave it stopped for ever)."""
        self.log.note("stderr", "error", reason, None)
        await stop_run(self._child)
        self.poll()

    async def stop(self, timeout: float = 5) -> int | None:
        """Ask the game to quit, wait up to ``timeout`` s, then kill its process group."""
        with anyio.CancelScope(shield=True):
            live = self.poll() in ("starting", "running")
            at_break = self.gate is not None and self.gate.stopped_at() is not None
            if live and self._conn is not None and not at_break:
                with anyio.move_on_after(max(0.0, timeout)), contextlib.suppress(BridgeClosed):
                    await self._conn.send({"id": 0, "cmd": "quit"})
                    await self._child.wait()
            await stop_run(self._child)
            if self._conn is not None:
                await self._conn.aclose()
            self.poll()
            if live:
                self._state = "stopped"
            return self._exit_code
        return self._exit_code  # not reached: a shielded scope is never cancelled


def _is_noise(line: str) -> bool:
    """Log lines that say nothing about why a scene failed: not an error, warning or parse
    error, or one of the engine's start-up lines."""
    text = line.strip()
    telling = engine_lines.level(text) != "print" or "parse error" in text.lower()
    return not telling or engine_lines.is_startup(text)

"""A session's bridge commands, each raced against the game's exit and a debugger's breaks.

Every command answers its reply parsed (``protocol.py``) or a :class:`GameError`: the game
exited (with its log's last words), it is stopped at a break (:func:`stopped_error`), its
bridge is not attached yet, or the bridge refused the command.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar, cast

import anyio

from godot_mcp.errors import Malformed, echoes_cut, quoted
from godot_mcp.features.game.bridge import BridgeClosed, keep_number_kinds, outside_res
from godot_mcp.features.game.errors import (
    BY_WORD,
    GameError,
    GameFailed,
    GameInvalid,
    GameTimeout,
    GameUnavailable,
)
from godot_mcp.features.game.gate import stopped_error
from godot_mcp.features.game.log import Entry
from godot_mcp.features.game.protocol import (
    Applied,
    Called,
    Clock,
    Inspected,
    Perf,
    Ping,
    Reached,
    Scripts,
    Tree,
    Values,
    Written,
)
from godot_mcp.features.game.running import RunningGame
from godot_mcp.features.game.scenetree import TreeFilters

__all__ = ["EXIT_WAIT", "MARK_WAIT", "Commands"]

EXIT_WAIT = 2.0
MARK_WAIT = 2.0  # how long a call's end marker may trail its reply (output the pipe still holds)
# The commands whose arguments carry JSON values, and the argument that does.
_VALUES = {"set": "values", "call": "args"}

T = TypeVar("T")


class Commands(RunningGame):
    """The bridge commands of a running game."""

    async def ping(self, timeout: float = 10) -> Ping:
        """The frame the game is at and its measured rate."""
        return Ping.parse(await self._command("ping", timeout))

    async def after(self, seconds: float, timeout: float) -> Reached:
        """Answer once ``seconds`` of game time have passed (``Ping.time``: paused, none)."""
        return Reached.parse(await self._command("after", timeout, seconds=seconds))

    async def send_input(self, events: Sequence[Any], timeout: float = 30) -> Applied:
        """Apply the input events in order (waits included)."""
        return Applied.parse(await self._command("input", timeout, events=list(events)))

    async def tree(
        self,
        root: str,
        depth: int,
        max_nodes: int,
        collapse: bool = False,
        filters: TreeFilters | None = None,
    ) -> Tree:
        """The scene tree below ``root``, ``depth`` levels, at most ``max_nodes`` entries: the
        nodes ``filters`` match (every node without), runs of siblings collapsed with
        ``collapse``."""
        given = filters.command() if filters is not None else {}
        reply = await self._command(
            "tree", root=root, depth=depth, max_nodes=max_nodes, collapse=collapse, **given
        )
        tree = Tree.parse(reply, max_nodes)
        scene = tree.current_scene
        return replace(
            tree,
            nodes=self._scrub.game_json(tree.nodes),
            current_scene=self._scrub.game(scene) if scene is not None else None,
        )

    async def time(self, action: str, frames: int, time_scale: float, timeout: float) -> Clock:
        """Pause, resume, step ``frames`` frames or scale time."""
        reply = await self._command(
            "time", timeout, action=action, frames=frames, time_scale=time_scale
        )
        return Clock.parse(reply)

    async def get(self, path: str, properties: Sequence[str] | None = None) -> Values:
        """A node's class and values (``properties``, or its editor-visible ones)."""
        args: dict[str, Any] = {"path": path}
        if properties:
            args["properties"] = list(properties)
        read = Values.parse(await self._command("get", **args))
        return replace(
            read,
            class_name=self._scrub.game(read.class_name),
            values=self._scrub.game_json(read.values),
        )

    async def set(self, path: str, values: dict[str, Any]) -> Written:
        """Write a node's properties; each as the node holds it after."""
        written = Written.parse(await self._command("set", path=path, values=values))
        return Written(self._scrub.game_json(written.values))

    async def loaded_scripts(self) -> list[str]:
        """The project's scripts the game uses (its nodes' scripts and their bases)."""
        return Scripts.parse("scripts", "scripts", await self._command("scripts")).paths

    async def reload(self, paths: Sequence[str], timeout: float = 30) -> list[str]:
        """Read ``paths`` again and recompile them in the running game (instances keep their
        members); the paths reloaded. The caller makes sure they parse."""
        reply = await self._command("reload", timeout, paths=list(paths))
        return [self._scrub.game(p) for p in Scripts.parse("reload", "reloaded", reply).paths]

    async def perf(self) -> Perf:
        """The engine's performance monitors at one frame."""
        return Perf.parse(await self._command("perf"))

    async def inspect(self, path: str, include: Sequence[str]) -> Inspected:
        """A node's script, methods, signals and connections, groups and properties (the
        parts in ``include``), every text as a client may read it."""
        reply = await self._command("inspect", path=path, include=list(include))
        read = Inspected.parse(reply, include)
        return replace(
            read,
            class_name=self._scrub.game(read.class_name),
            parts=self._scrub.game_json(read.parts),
        )

    async def _command(self, cmd: str, timeout: float = 10, **args: Any) -> dict[str, Any]:
        """One bridge command (scene tree, time, input…): concurrent with any other command.

        The JSON values of ``set`` and ``call`` go with their number kinds kept
        (:func:`~godot_mcp.features.game.bridge.keep_number_kinds`). Raises GameNotFound,
        GameInvalid, GameFailed or GameTimeout as the bridge answers.
        """
        field = _VALUES.get(cmd)
        if field is not None and field in args:
            if (path := outside_res(args[field])) is not None:
                raise GameInvalid(f"an Object path must stay inside res://: {quoted(path)}")
            args[field] = keep_number_kinds(args[field])
        return await self._call(cmd, timeout, exclusive=False, **args)

    async def call(
        self, path: str, method: str, args: Sequence[Any], timeout: float = 10
    ) -> tuple[Any, Entry | None]:
        """Call a node's method: its result, and the first script error the call logged.

        One round trip: the bridge prints this call's two marker lines to stderr just before
        and just after the call and answers after the second, so once the log has read that
        line (already in the pipe), every error line of the call, with its ``At:`` line, is
        in the log between the two.
        """
        first, end = self._marks.issue(2)
        start = self.log.next_seq
        try:
            reply = Called.parse(
                await self._command(
                    "call",
                    timeout,
                    path=path,
                    method=method,
                    args=list(args),
                    marks=[first.token, end.token],
                )
            )
            await self._marks.wait(end, MARK_WAIT)
        finally:
            self._marks.retire(first, end)
        begin = first.seq if first.seq is not None else start
        return self._scrub.game_json(reply.result), self._first_error(begin, end.seq)

    async def _synced(self, timeout: float = MARK_WAIT) -> None:
        """Wait (bounded) until every line the game printed to stderr so far is in its log:
        the bridge prints a marker line there and the log reads up to it."""
        (mark,) = self._marks.issue(1)
        try:
            with anyio.move_on_after(timeout):
                if self._conn is not None:
                    await self._race(self._conn.request, "ping", marks=[mark.token])
                await self._marks.wait(mark, timeout)
        except (GameError, Malformed, BridgeClosed):
            pass  # a game that cannot answer has said what it could
        finally:
            self._marks.retire(mark)

    def _first_error(self, begin: int, end: int | None) -> Entry | None:
        """The first error line on stderr from seq ``begin`` up to ``end`` (None: up to now)."""
        page = self.log.read(begin, 100, "error")
        for entry in page.entries:
            if end is not None and entry.seq >= end:
                break
            if entry.stream == "stderr":
                return entry
        return None

    async def _call(
        self, cmd: str, timeout: float, *, exclusive: bool = True, **args: Any
    ) -> dict[str, Any]:
        """Send one command, racing its reply against the game's exit, within ``timeout``.

        Captures hold the capture lock (one at a time); other commands run concurrently.
        """
        await self._bridge_ready(timeout)
        self._require_running()
        conn = self._conn
        assert conn is not None
        with anyio.move_on_after(timeout) as scope:
            async with self._capture_lock if exclusive else contextlib.nullcontext():
                self._require_running()
                reply = await self._race(conn.request, cmd, **args)
        if scope.cancelled_caught:
            raise GameTimeout(f"the game did not answer {cmd} within {timeout:g} s")
        if not reply.get("ok"):
            kind = BY_WORD.get(str(reply.get("error") or "failed"), GameFailed)
            message = echoes_cut(str(reply.get("message") or f"{cmd} failed"), args)
            raise kind(self._scrub.game(message))
        return reply

    async def _bridge_ready(self, timeout: float) -> None:
        """A debug start answers at a break before the bridge attached: once the game runs
        again, a command waits (bounded) for the bridge rather than being refused."""
        if self._ready is not None or self.gate is None or self.poll() != "running":
            return
        gate = self.gate
        with anyio.move_on_after(timeout):
            async with anyio.create_task_group() as group:

                async def first(fn: Callable[[], Awaitable[None]]) -> None:
                    await fn()
                    group.cancel_scope.cancel()

                group.start_soon(first, self._attached.wait)
                group.start_soon(first, gate.until_stopped)

    def _require_running(self) -> None:
        state = self.poll()
        if state == "exited":
            raise self._exit_error(self._exit_code)
        if state != "running":
            raise GameFailed(f"the game session is {state}")
        if self.gate is not None and (where := self.gate.stopped_at()) is not None:
            raise stopped_error(self._scrub(where))
        if self._attach_error is not None:
            raise self._attach_error
        if self._ready is None:
            raise GameUnavailable("the game has not attached its bridge yet; try again shortly")

    async def while_running(self, fn: Callable[[], Awaitable[T]]) -> T:
        """``fn()`` (a wait made of many commands), unless the game stops at a break first:
        then :func:`stopped_error`, as soon as the break is seen."""
        await self._bridge_ready(EXIT_WAIT * 5)
        self._require_running()
        gate = self.gate
        if gate is None:
            return await fn()
        outcome: list[tuple[bool, Any]] = []

        async def work() -> None:
            try:
                outcome.append((True, await fn()))
            except Exception as exc:  # the wait's own answer (a timeout, a refusal)
                outcome.append((False, exc))
            group.cancel_scope.cancel()

        async def stopped() -> None:
            await gate.until_stopped()
            group.cancel_scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(work)
            group.start_soon(stopped)
        if outcome:
            done, value = outcome[0]
            if not done:
                raise value
            return cast(T, value)
        raise stopped_error(self._scrub(gate.stopped_at() or "a break"))

    async def _race(
        self, fn: Callable[..., Awaitable[T]], *args: Any, gated: bool = True, **kwargs: Any
    ) -> T:
        """Run ``fn`` unless the game exits first, or (``gated``) stops at a debugger's break;
        a closed bridge becomes a GameError, a break :func:`stopped_error`."""
        result: list[T] = []
        gate = self.gate if gated else None

        async def work() -> None:
            with contextlib.suppress(BridgeClosed):
                result.append(await fn(*args, **kwargs))
            group.cancel_scope.cancel()

        async def watch() -> None:
            await self._child.wait()
            group.cancel_scope.cancel()

        async def stopped() -> None:
            assert gate is not None
            await gate.until_stopped()
            group.cancel_scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(work)
            group.start_soon(watch)
            if gate is not None:
                group.start_soon(stopped)
        if result:
            return result[0]
        if gate is not None and (where := gate.stopped_at()) is not None:
            raise stopped_error(self._scrub(where))
        code = await self._child.wait_for(EXIT_WAIT)
        if code is not None:
            self.poll()
            await self.drained()
            raise self._exit_error(code, " before connecting back" if self._conn is None else "")
        raise GameFailed("the game closed its bridge connection")

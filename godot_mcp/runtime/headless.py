"""What project checks and imports share: a headless Godot in the exports' sandbox, one of
the ``--max-exports`` slots while it runs, and scratch in ``scratch/checks/<pid>-<start>/``
(a killed server's is swept like its game scratch)."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import AsyncIterator

import anyio

from godot_mcp.engine.process.availability import Availability, unavailable
from godot_mcp.engine.process.locate import GodotInstall
from godot_mcp.engine.process.run import sandbox_availability
from godot_mcp.engine.project import tree
from godot_mcp.errors import Unavailable
from godot_mcp.runtime.context import Runtime
from godot_mcp.runtime.owner import me


def headless_availability(rt: Runtime) -> Availability:
    """Whether the project's headless Godot can run in the sandbox, and if not why."""
    if not rt.godot.headless:
        why = sandbox_availability()
        if not why.ok:
            return why
        return unavailable("no headless Godot binary found (godot3-server or Godot 4)")
    return sandbox_availability(rt.godot.headless)


class HeadlessWork:
    """The base of a service that runs the project's headless Godot outside an export."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        pid, start = me()
        self.scratch = rt.dirs.scratch_dir / "checks" / f"{pid}-{start}"  # made when used
        self._runs: dict[anyio.CancelScope, anyio.Event] = {}
        self._closed = False

    @contextlib.asynccontextmanager
    async def tracked(self) -> AsyncIterator[None]:
        """One run of the work, cancelled by :meth:`aclose`; refused once the server closes."""
        if self._closed:
            raise Unavailable("the server is shutting down")
        ended = anyio.Event()
        with anyio.CancelScope() as scope:
            self._runs[scope] = ended
            try:
                yield
            finally:
                del self._runs[scope]
                ended.set()
        if scope.cancelled_caught:  # by aclose: the caller gets an answer, not a None
            raise Unavailable("the server is shutting down")

    async def session_ended(self, session_id: str) -> None:
        """Nothing to do: a run is its request's own and ends when the request does."""

    async def aclose(self) -> None:
        """Cancel every run (each stops its engine, shielded and bounded), wait for them, then
        remove this process's scratch."""
        self._closed = True
        for scope in list(self._runs):
            scope.cancel()
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(15):
                for ended in list(self._runs.values()):
                    await ended.wait()
            await self.rt.disk(tree.remove, self.scratch)

    def availability(self) -> Availability:
        return headless_availability(self.rt)

    def make_scratch(self) -> None:
        """This process's scratch, private, with the folders above it (blocking)."""
        self.rt.dirs.scratch("checks")
        self.scratch.mkdir(mode=0o700, exist_ok=True)

    def install(self) -> GodotInstall:
        """The install whose headless engine does the work; ``Unavailable`` saying why not."""
        self.availability().refuse()
        assert self.rt.godot.headless is not None  # availability said so
        return self.rt.godot

    def refuse_low_space(self, need: int, what: str) -> None:
        """``Unavailable`` when the scratch's disk has less than ``need`` bytes free;
        ``what`` ends the refusal (``a check needs about N for …``). Blocking."""
        self.make_scratch()
        try:
            free = shutil.disk_usage(self.scratch).free
        except OSError:
            return
        if free < need:
            raise Unavailable(f"the state dir's disk has {free} bytes free; {what}")

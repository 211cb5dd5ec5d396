"""One run of a headless Godot followed to its end, the same way for every feature that starts
one: a check, an import, a test run, an export, the class reference's dump.

    start    the run's child (``GodotRun.start``: its own process group, the death signal, the
             sandbox); an engine that cannot be executed is the feature's own refusal
    wait     bounded; past its time the feature's own timeout error, the child stopped first
    watch    bounded, looking at the run's work every so often and once more at its exit
    output   the child's stdout as lines (``PipeLines``), for a feature that reads them
    stop     SIGKILL to the whole group (a headless run has nothing to save); the child reaped
             and waited for (bounded) until nothing of its group runs;
             shielded, so a caller cancelled (its request gone, the server shutting down) still
             stops it
    aclose   stop, then the run's scratch removed off the loop (``async with`` does it)

What the output and the run's files mean, and what its errors say, stay with each feature.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Awaitable, Callable
from types import TracebackType

import anyio

from godot_mcp.engine.process.child import Child
from godot_mcp.engine.process.output import PipeLines
from godot_mcp.engine.process.run import CannotStart, GodotRun

__all__ = ["KILL_GRACE_S", "Supervisor"]

KILL_GRACE_S = 5.0  # after SIGKILL, for the reaping and then for the group to be empty

Look = Callable[[int | None], Awaitable[bool]]


class Supervisor:
    """The runs of one job, one child at a time (a check starts Godot again after a crash).

    ``failed``: the feature's error for an engine that cannot be executed, given the reason
    (``CannotStart`` itself by default). ``cleanup``: removes the run's scratch (blocking),
    once its child is stopped.
    """

    def __init__(
        self,
        failed: Callable[[str], Exception] = CannotStart,
        cleanup: Callable[[], object] | None = None,
    ) -> None:
        self._failed = failed
        self._cleanup = cleanup
        self.child: Child | None = None
        self._output: PipeLines | None = None

    async def __aenter__(self) -> Supervisor:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    @property
    def pid(self) -> int | None:
        """The child's pid (its group's id) while there is one."""
        return self.child.pid if self.child is not None else None

    @property
    def returncode(self) -> int | None:
        """The child's exit code once it was reaped (negative: killed by that signal)."""
        return self.child.returncode if self.child is not None else None

    def start(self, run: GodotRun) -> Child:
        """Start ``run`` in place of the last child (stopped by then); call from the event
        loop's thread (``procs``). The feature's ``failed`` if the engine cannot be executed."""
        assert self.child is None or self.child.poll() is not None, "stop() the last run first"
        if self._output is not None:
            self._output.close()
            self._output = None
        try:
            self.child = run.start()
        except CannotStart as exc:
            raise self._failed(exc.message) from None
        return self.child

    def output(self) -> PipeLines:
        """The child's stdout as lines (the run pipes it); one reader a child, closed by whoever
        reads it to its end, or by the next ``start`` or ``aclose``."""
        assert self.child is not None and self.child.stdout is not None, "a piped run first"
        if self._output is None:
            self._output = PipeLines(self.child.stdout)
        return self._output

    async def wait(self, timeout: float, late: Callable[[], Exception] | None = None) -> int | None:
        """Wait at most ``timeout`` s for the child's exit; its code. Past the time ``None``
        (the child still runs), or with ``late`` that error, raised once the child is stopped."""
        assert self.child is not None, "start() first"
        code = await self.child.wait_for(max(timeout, 0.0))
        if code is None and late is not None:
            await self.stop()
            raise late()
        return code

    async def watch(self, timeout: float, every: float, look: Look) -> bool:
        """Wait for the child, calling ``look(code)`` every ``every`` s and as soon as it exits
        (``code``: its exit code, ``None`` while it runs) until ``look`` says the run is done;
        ``False`` when ``timeout`` s passed first (the child is left running)."""
        deadline = time.monotonic() + timeout
        while True:
            code = await self.wait(min(every, deadline - time.monotonic()))
            if await look(code) or code is not None:  # an ended run is looked at once
                return True
            if time.monotonic() >= deadline:
                return False

    def kill(self) -> None:
        """SIGKILL the child's whole group now, without waiting (from code that cannot wait);
        ``stop`` reaps it."""
        if self.child is not None and self.child.poll() is None:
            self.child.signal_group(signal.SIGKILL)

    async def stop(self) -> None:
        """End the child: SIGKILL to its group, reaped and waited for (at most ``KILL_GRACE_S``
        each) until nothing of the group runs. Shielded from cancellation; a run never started,
        or stopped already, is fine."""
        child = self.child
        if child is None:
            return
        with anyio.CancelScope(shield=True):
            await child.kill_all(KILL_GRACE_S)

    async def aclose(self) -> None:
        """Stop the child, close its output and remove the run's scratch; shielded."""
        with anyio.CancelScope(shield=True):
            await self.stop()
            if self._output is not None:
                self._output.close()
                self._output = None
            if self._cleanup is not None:
                await anyio.to_thread.run_sync(self._cleanup)

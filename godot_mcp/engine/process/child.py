"""An awaitable child process that never outlives the server.

The child is forked by :class:`subprocess.Popen` on the calling thread (the event loop's, which
lives as long as the server, as :mod:`godot_mcp.engine.process.procs` requires), in its own
process group with the parent-death signal set. Its exit is awaited through a pidfd, so no
thread and no polling is involved and any number of tasks may wait at once.

The child's pid is its group's id, and the kernel keeps that id for the group only while the
leader is not reaped (or another member lives). So the group is signalled only while that
holds: an exit is first seen without reaping (``waitid(WNOWAIT)``), the group's leftovers are
killed while the leader is still a zombie, and only then is the leader reaped. After that a
signal goes to the group only if members of it still run, never to a pid the kernel may have
given to another process since.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import IO

import anyio

from godot_mcp.engine.process import procs


class Child:
    """A spawned process: its own group, dies with the server, awaitable exit."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self._popen = popen
        self._pidfd: int | None
        try:
            self._pidfd = os.pidfd_open(popen.pid)
        except OSError:
            self._pidfd = None

    @classmethod
    def spawn(
        cls,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        stdout: IO[bytes] | int | None = subprocess.DEVNULL,
        stderr: IO[bytes] | int | None = subprocess.STDOUT,
        pass_fds: Sequence[int] = (),
        cwd: str | None = None,
        untrusted: bool = False,
    ) -> Child:
        """Start ``argv``; raises ``OSError`` if it cannot be executed. ``untrusted``: it runs
        project code unsandboxed (:func:`procs.spawn_argv`)."""
        popen = subprocess.Popen(  # type: ignore[call-overload]
            procs.spawn_argv(argv, untrusted),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            env=dict(env) if env is not None else None,
            pass_fds=tuple(pass_fds),
            cwd=cwd,
            close_fds=True,
            **procs.spawn_kwargs(),
        )
        return cls(popen)

    @property
    def stdout(self) -> IO[bytes] | None:
        """The child's stdout pipe, when spawned with ``stdout=PIPE``."""
        return self._popen.stdout

    @property
    def stderr(self) -> IO[bytes] | None:
        """The child's stderr pipe, when spawned with ``stderr=PIPE``."""
        return self._popen.stderr

    @property
    def pid(self) -> int:
        """The child's pid (also its process group id)."""
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        """The exit code once the child was reaped (negative: killed by that signal)."""
        return self.poll()

    def poll(self) -> int | None:
        """Reap the child if it exited (its group's leftovers killed first); its exit code or
        ``None``."""
        if self._popen.returncode is not None:
            return self._popen.returncode
        try:
            seen = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            seen = None  # not ours to wait for any more: Popen settles its code
        else:
            if seen is None:
                return None  # still running
            procs.kill_group(self.pid, signal.SIGKILL)  # exited, not reaped: the id is ours
        code = self._popen.poll()
        if code is not None:
            self._close_pidfd()
        return code

    async def wait(self) -> int:
        """Wait until the child exits and return its exit code."""
        while (code := self.poll()) is None:
            if self._pidfd is None:
                await anyio.sleep(0.05)
                continue
            fd = os.dup(self._pidfd)
            try:
                await anyio.wait_readable(fd)
            finally:
                os.close(fd)
        return code

    async def wait_for(self, timeout: float) -> int | None:
        """Wait at most ``timeout`` seconds; the exit code, or ``None`` if still running."""
        with anyio.move_on_after(timeout):
            return await self.wait()
        return self.poll()

    def communicate(self, timeout: float) -> tuple[int | None, bytes, bytes]:
        """Blocking: read the child's pipes to their end and reap it, at most ``timeout`` s;
        its code (``None``: past the bound, when its whole group is killed) and what it printed.
        For a short run on a worker thread, which it outlives no child of."""
        try:
            out, err = self._popen.communicate(timeout=timeout)
            code = self._popen.returncode
        except subprocess.TimeoutExpired:
            procs.kill_group(self.pid)  # not reaped yet: the group id is still its
            try:
                out, err = self._popen.communicate(timeout=5)
            except subprocess.TimeoutExpired:  # a member that left the group holds the pipe
                self._popen.wait()
                out, err = b"", b""
            code = None
        self._close_pidfd()
        return code, out or b"", err or b""

    def signal_group(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to the child's whole process group, while the group id is its."""
        if self._popen.returncode is None or procs.group_running(self.pid):
            procs.kill_group(self.pid, sig)

    async def terminate(self, grace: float = 2.0) -> int | None:
        """SIGTERM the group, wait up to ``grace`` s, then SIGKILL it; the exit code."""
        if self.poll() is None:
            self.signal_group(signal.SIGTERM)
            await self.wait_for(grace)
        return await self.kill()

    async def kill(self, grace: float = 5.0) -> int | None:
        """SIGKILL the group (leftovers included) and reap the child."""
        self.signal_group(signal.SIGKILL)
        with anyio.CancelScope(shield=True):
            return await self.wait_for(grace)
        return self.returncode  # not reached: a shielded scope is never cancelled

    async def kill_all(self, grace: float = 5.0) -> None:
        """SIGKILL the group, reap the child, then wait (bounded) until nothing of it runs.

        A sandboxed child's own children are not ours to reap: wait until none of them
        runs any more (an orphaned zombie is left to the machine's init).
        """
        await self.kill(grace)
        with anyio.CancelScope(shield=True), anyio.move_on_after(grace):
            # The scan reads every /proc/PID/stat of the machine: off the loop.
            while await anyio.to_thread.run_sync(procs.group_running, self.pid):
                await anyio.sleep(0.01)

    def _close_pidfd(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

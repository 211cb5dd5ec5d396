"""A private X display (Xvfb) for windowed games when the server has no ``DISPLAY``.

One Xvfb per runner, started on first need and shared by its sessions: ``-displayfd`` lets Xvfb
pick a free display number, ``-nolisten tcp`` keeps it off the network, and a private cookie
file (``-auth``, also handed to the games as ``XAUTHORITY``) keeps other local users out. It is
spawned through :mod:`godot_mcp.engine.process.child`, so it dies with the server.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import struct
from pathlib import Path

import anyio

from godot_mcp.engine.process import environment
from godot_mcp.engine.process.child import Child
from godot_mcp.errors import Failed, Timeout, Unavailable

SCREEN = "1280x720x24"
START_TIMEOUT = 10.0
_FAMILY_WILD = 0xFFFF


def xauthority_entry(cookie: bytes) -> bytes:
    """One ``.Xauthority`` record matching any host and display with ``cookie``."""

    def field(data: bytes) -> bytes:
        return struct.pack(">H", len(data)) + data

    return (
        struct.pack(">H", _FAMILY_WILD)
        + field(b"")
        + field(b"")
        + field(b"MIT-MAGIC-COOKIE-1")
        + field(cookie)
    )


class PrivateDisplay:
    """A lazily started Xvfb; :meth:`env` starts it, :meth:`aclose` kills it."""

    def __init__(self, xvfb: str, scratch: Path, screen: str = SCREEN) -> None:
        self._xvfb = xvfb
        self._scratch = scratch
        self._screen = screen
        self._child: Child | None = None
        self._display: str | None = None
        self._auth = scratch / "xvfb.auth"
        self._log = scratch / "xvfb.log"
        self._lock = anyio.Lock()

    @property
    def pid(self) -> int | None:
        """The Xvfb pid while it runs."""
        return self._child.pid if self._child and self._child.poll() is None else None

    async def env(self, timeout: float = START_TIMEOUT) -> dict[str, str]:
        """``DISPLAY`` and ``XAUTHORITY`` for a game, starting Xvfb if it is not running."""
        async with self._lock:
            if self._child is None or self._child.poll() is not None:
                await self._start(timeout)
            assert self._display is not None
            return {"DISPLAY": self._display, "XAUTHORITY": str(self._auth)}

    async def _start(self, timeout: float) -> None:
        self._display = None
        self._scratch.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._auth, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as auth:
            auth.write(xauthority_entry(secrets.token_bytes(16)))
        read_end, write_end = os.pipe()
        try:
            with open(self._log, "wb") as log:
                argv = [
                    self._xvfb,
                    "-displayfd", str(write_end),
                    "-screen", "0", self._screen,
                    "-nolisten", "tcp",
                    "-auth", str(self._auth),
                ]  # fmt: skip
                try:
                    # Nothing of the server's environment but the locale and PATH.
                    env = environment.for_sandbox(os.environ)
                    self._child = Child.spawn(argv, env=env, stdout=log, pass_fds=(write_end,))
                except OSError as exc:
                    raise Unavailable(f"cannot start Xvfb: {exc.strerror}") from None
            os.close(write_end)
            write_end = -1
            number = await self._read_display(read_end, timeout)
        finally:
            os.close(read_end)
            if write_end >= 0:
                os.close(write_end)
        self._display = f":{number}"

    async def _read_display(self, fd: int, timeout: float) -> int:
        os.set_blocking(fd, False)
        data = b""
        assert self._child is not None
        with anyio.move_on_after(timeout) as scope:
            while not data.endswith(b"\n"):
                await anyio.wait_readable(fd)
                try:
                    chunk = os.read(fd, 64)
                except BlockingIOError:
                    continue
                if not chunk:
                    break
                data += chunk
        if data.strip().isdigit():
            return int(data)
        await self._child.kill()
        self._child = None
        if scope.cancelled_caught:
            raise Timeout(f"Xvfb did not report a display within {timeout:g} s")
        reason = "Xvfb exited before reporting a display"
        with contextlib.suppress(OSError):
            tail = self._log.read_text("utf-8", "replace").strip().splitlines()[-1:]
            if tail:
                reason += f": {tail[0]}"
        raise Failed(reason)

    async def aclose(self) -> None:
        """Kill Xvfb (and anything left in its process group)."""
        async with self._lock:
            if self._child is not None:
                await self._child.terminate(grace=2.0)
                self._child = None
            self._display = None
            self._auth.unlink(missing_ok=True)
            self._log.unlink(missing_ok=True)

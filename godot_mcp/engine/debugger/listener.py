"""A loopback listener for one game's debugger connection, and who is on its other end.

The engine's debugger protocol has no secret to prove who connects, so the listener checks the
peer itself: the connecting socket must be one of the launched process's own descriptors. The
kernel says which socket a loopback connection's other end is (``/proc/net/tcp``: its inode,
by the two addresses) and whose descriptors hold it (``/proc/PID/fd``). Another local process
that connects first is closed and the listener keeps waiting; the first connection that is the
game's is kept, and the listener closes.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import anyio
import anyio.abc

__all__ = ["DebugListener", "socket_owned_by"]


def _hex_address(host: str, port: int) -> str:
    """``/proc/net/tcp``'s spelling of an IPv4 address: the bytes in host order, then port."""
    packed = socket.inet_aton(host)
    return f"{int.from_bytes(packed, 'little'):08X}:{port:04X}"


def _inode(local: tuple[str, int], remote: tuple[str, int]) -> int | None:
    """The inode of the TCP socket whose own address is ``local`` and peer is ``remote``."""
    want = (_hex_address(*local), _hex_address(*remote))
    try:
        lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) > 9 and (fields[1], fields[2]) == want:
            return int(fields[9])
    return None


def socket_owned_by(pid: int, local: tuple[str, int], remote: tuple[str, int]) -> bool:
    """True when process ``pid`` holds the socket at ``local`` connected to ``remote``.
    Blocking (reads ``/proc``)."""
    inode = _inode(local, remote)
    if not inode:
        return False
    target = f"socket:[{inode}]"
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                return True
        except OSError:
            continue
    return False


class DebugListener:
    """Listens on 127.0.0.1 (a free port) for the debugger connection of one launch."""

    def __init__(self, listener: anyio.abc.SocketListener) -> None:
        self._listener = listener
        self.refused = 0  # connections from other processes, closed

    @classmethod
    async def open(cls) -> DebugListener:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        (only,) = listener.listeners
        return cls(only)  # type: ignore[arg-type]

    @property
    def port(self) -> int:
        return int(self._listener.extra(anyio.abc.SocketAttribute.local_port))

    async def accept(self, pid: int) -> anyio.abc.SocketStream:
        """The first connection made by process ``pid``; others are closed as they come.
        Bound it with the caller's own deadline."""
        while True:
            stream = await self._listener.accept()
            raw = stream.extra(anyio.abc.SocketAttribute.raw_socket)
            ours, theirs = raw.getsockname()[:2], raw.getpeername()[:2]
            owned = await anyio.to_thread.run_sync(socket_owned_by, pid, theirs, ours)
            if owned:
                return stream
            self.refused += 1
            await stream.aclose()

    async def aclose(self) -> None:
        await self._listener.aclose()

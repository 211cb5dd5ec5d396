"""The debugger's messages on the wire, as each engine frames them (recorded, both engines).

Both engines send packets: a 32-bit little-endian length, then one Variant
(:mod:`godot_mcp.engine.debugger.variant`). What a message is differs:

* **Godot 3** (``ScriptDebuggerRemote``): the game sends a message as several packets, its
  name (a String), the count of its arguments (an int), then each argument as a packet of its
  own; the debugger sends one packet, an Array ``[name, arg…]``.
* **Godot 4** (``RemoteDebugger``): one packet an Array ``[name, thread_id, [arg…]]``, both
  ways.

A game is free to send anything, so :class:`Framer` takes no packet larger than
``MAX_PACKET`` (refused from its length, before its bytes are kept), no message with more
than ``MAX_ARGS`` arguments, and raises :class:`Malformed` for anything that breaks the
framing; the caller then drops the connection.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from godot_mcp.engine.debugger.variant import Malformed, decode_all, encode

__all__ = ["MAX_ARGS", "MAX_PACKET", "Framer", "Message"]

MAX_PACKET = 8 << 20  # bytes of one packet (a frame of many large variables fits)
MAX_ARGS = 1 << 20  # arguments of one Godot 3 message (each is a packet of at least 8 bytes)
MESSAGE_PACKETS = 2  # a Godot 3 message's packets together hold at most this many MAX_PACKETs


@dataclass(frozen=True)
class Message:
    """One debugger message: its name, its arguments and (Godot 4) the thread it is about."""

    name: str
    args: list[Any]
    thread: int = 1


class Framer:
    """Messages out of one connection's bytes, and commands into them, for one engine."""

    def __init__(self, major: int, max_packet: int = MAX_PACKET) -> None:
        self.major = major
        self._max = max_packet
        self._buf = bytearray()
        self._name: str | None = None  # Godot 3: the message being gathered
        self._count: int | None = None
        self._args: list[Any] = []
        self._gathered = 0  # bytes of the Godot 3 message being gathered
        self._broken: Malformed | None = None

    @property
    def pending(self) -> int:
        """Bytes received that no message has taken yet."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[Message]:
        """The messages ``data`` completes; :class:`Malformed` once the framing is broken
        (the framer is then of no further use). Messages that came whole before the break
        are answered first, the break on the next call."""
        if self._broken is not None:
            raise self._broken
        self._buf += data
        out: list[Message] = []
        try:
            while len(self._buf) >= 4:
                message = self._next()
                if message is False:
                    break
                if isinstance(message, Message):
                    out.append(message)
        except Malformed as exc:
            self._broken = exc
            if not out:
                raise
        return out

    def _next(self) -> Message | bool | None:
        """The message the next packet completes, None if it completes none, False if the
        packet has not fully come."""
        (size,) = struct.unpack_from("<I", self._buf)
        if size > self._max:
            raise Malformed(f"a packet of {size} bytes is larger than {self._max}")
        if len(self._buf) < 4 + size:
            return False
        if self.major < 4:
            self._gathered += 4 + size
            if self._gathered > MESSAGE_PACKETS * self._max:
                raise Malformed(f"a message is larger than {MESSAGE_PACKETS * self._max} bytes")
        value = decode_all(memoryview(self._buf)[4 : 4 + size], self.major)
        del self._buf[: 4 + size]
        return self._packet(value)

    def _packet(self, value: Any) -> Message | None:
        if self.major >= 4:
            ok = isinstance(value, list) and len(value) == 3
            if not ok or not isinstance(value[0], str) or not isinstance(value[2], list):
                raise Malformed("a message is not [name, thread, arguments]")
            thread = value[1] if isinstance(value[1], int) else 1
            return Message(value[0], value[2], thread)
        if self._name is None:
            if not isinstance(value, str):
                raise Malformed("a message does not start with its name")
            self._name = value
            return None
        if self._count is None:
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_ARGS:
                raise Malformed("a message has no valid argument count")
            self._count = value
        else:
            self._args.append(value)
        if len(self._args) < self._count:
            return None
        message = Message(self._name, self._args)
        self._name, self._count, self._args, self._gathered = None, None, [], 0
        return message

    def command(self, name: str, args: list[Any], thread: int = 1) -> bytes:
        """The packet that sends the command ``name`` with ``args`` to the game."""
        value = [name, *args] if self.major < 4 else [name, thread, args]
        body = encode(value, self.major)
        return struct.pack("<I", len(body)) + body

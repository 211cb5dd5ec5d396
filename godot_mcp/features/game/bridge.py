"""The server end of the game bridge: a loopback listener and a JSON-lines connection.

Protocol (one JSON object per ``\\n``-terminated UTF-8 line, both ways):

* game → server, first line: ``{"type": "hello", "secret", "engine", "os", "headless"}``; a
  connection whose first line is not a hello with this launch's secret is closed unanswered;
* game → server, once the scene is in: ``{"type": "ready", "scene", "loaded", "error",
  "width", "height"}``;
* server → game: ``{"id": n, "cmd": "screenshot" | "record" | "ping" | "quit", ...}``;
  game → server: ``{"id": n, "ok": true, ...}`` or ``{"id": n, "ok": false, "error": outcome,
  "message": text}``.

The secret reaches the game in the ``GODOT_MCP_SECRET`` environment variable, never in argv.

Godot values as JSON keep their number kinds across the bridge, though Godot's JSON parser reads
every number as a float: the bridge takes a plain integral number for an int, so the server
sends a float that is integral (``1.0``) or not finite as ``{"type": "float", "value": x}``
and an int a double cannot hold (beyond ±2^53) as ``{"type": "int", "value": "digits"}``
(:func:`keep_number_kinds`). Replies write ints as ints and floats as floats.

A ``call`` carries two fresh random ``marks``, ``[B, E]``; the bridge prints the marker lines
``godot-mcp-mark B`` and ``godot-mcp-mark E`` to stderr just before and just after calling the
method, then answers. So the script errors the call raised (on stderr, in order, each with its
``At:`` line) are the ones between the two lines, all of them once E is read: no wait on a
clock. Only the server and the bridge know a mark before it is printed (and E is printed after
the method returned), so a game printing marker lines cannot move a call's bounds; lines
naming a mark the server issued are kept out of the game's log (:func:`parse_mark`).
"""

from __future__ import annotations

import contextlib
import hmac
import json
import math
import re
import secrets
from typing import Any

import anyio
from anyio.abc import SocketAttribute, SocketListener, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from godot_mcp.features.game.errors import GameFailed

# The bridge's settings travel in the game's environment, where no game argument can reach:
# the launch's secret, the server's port and the scene to run (absent: the main scene).
SECRET_ENV = "GODOT_MCP_SECRET"
PORT_ENV = "GODOT_MCP_PORT"
SCENE_ENV = "GODOT_MCP_SCENE"
# How long a connection may stay silent before its hello. The bridge connects as the engine
# starts but speaks on its first frame, which a heavy first scene (Godot 3's default sky on
# software OpenGL: 5-12 s here) delays; every connection is vetted on its own and the start's
# own deadline bounds them all, so a silent one costs nobody else anything.
AUTH_TIMEOUT = 60.0
MAX_LINE = 4 * 1024 * 1024
MARK_PREFIX = "godot-mcp-mark "
_MARK = re.compile(r"godot-mcp-mark ([0-9a-f]{32})")
_EXACT = 2**53  # every int of at most this size is a double too


def new_mark() -> str:
    """A fresh mark for one marker line (128 random bits, in hex)."""
    return secrets.token_hex(16)


def parse_mark(line: str) -> str | None:
    """The mark a marker line names, else None."""
    if not line.startswith(MARK_PREFIX):
        return None
    match = _MARK.fullmatch(line)
    return match.group(1) if match else None


def keep_number_kinds(value: Any) -> Any:
    """A JSON value as the bridge must receive it to tell its ints from its floats.

    The bridge reads a plain integral number as an int: a float that is integral (or nan,
    inf) is tagged ``{"type": "float", "value": …}``; an int beyond ±2^53, which Godot's
    parser would round, ``{"type": "int", "value": "digits"}``. Values already tagged so (by
    the agent) pass as they are.
    """
    if isinstance(value, bool) or not isinstance(value, int | float | list | dict):
        return value
    if isinstance(value, int):
        return value if -_EXACT <= value <= _EXACT else {"type": "int", "value": str(value)}
    if isinstance(value, float):
        if math.isnan(value):
            return {"type": "float", "value": "nan"}
        if math.isinf(value):
            return {"type": "float", "value": "inf" if value > 0 else "-inf"}
        return {"type": "float", "value": value} if value.is_integer() else value
    if isinstance(value, list):
        return [keep_number_kinds(v) for v in value]
    if value.get("type") in ("float", "int"):
        return value
    return {k: keep_number_kinds(v) for k, v in value.items()}


def outside_res(value: Any, depth: int = 0) -> str | None:
    """The first ``res://`` path of an ``Object`` in a JSON value that leaves the project once
    normalised (``..``, ``.``, an empty segment, a backslash, which the engine reads as ``/``);
    else None. The bridges refuse these too: this answers before anything is sent."""
    if depth > 64:
        return None
    if isinstance(value, list):
        items: list[Any] = value
    elif isinstance(value, dict):
        path = value.get("path")
        if value.get("type") == "Object" and isinstance(path, str) and path.startswith("res://"):
            parts = path[len("res://") :].split("/")
            if "\\" in path or any(p in ("", ".", "..") for p in parts):
                return path
        items = [*value.keys(), *value.values()]
    else:
        return None
    for item in items:
        if (found := outside_res(item, depth + 1)) is not None:
            return found
    return None


class BridgeClosed(GameFailed):
    """The game closed the connection (or sent something that is not a JSON object); the
    session answers with why the game ended instead (``commands.py``'s race)."""


class BridgeConnection:
    """An authenticated JSON-lines connection to one game."""

    def __init__(self, stream: SocketStream) -> None:
        self._stream = stream
        self._reader = BufferedByteReceiveStream(stream)
        self._next_id = 0
        self._send_lock = anyio.Lock()
        self._recv_lock = anyio.Lock()
        self._replies: dict[int, dict[str, Any]] = {}
        self._waiting: set[int] = set()

    async def receive(self) -> dict[str, Any]:
        """The next message from the game."""
        try:
            line = await self._reader.receive_until(b"\n", MAX_LINE)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError) as exc:
            raise BridgeClosed("the game closed the connection") from exc
        except anyio.DelimiterNotFound as exc:
            raise BridgeClosed("the game sent an over-long line") from exc
        try:
            # Godot 3 writes a string's control characters raw (a node named "a\x01b"):
            # read them as they are rather than losing the game for one name.
            # NaN, Infinity and 1e400 read as floats: a value answers them as a Godot float
            # (edge.outcomes.clean); a protocol field checks its numbers are finite.
            message = json.loads(line, strict=False)
        except (ValueError, RecursionError) as exc:  # a value nested past what Python reads
            raise BridgeClosed("the game sent a line that is not JSON") from exc
        if not isinstance(message, dict):
            raise BridgeClosed("the game sent a line that is not a JSON object")
        return message

    async def send(self, message: dict[str, Any]) -> None:
        """Send one message to the game (as UTF-8: Godot 3 does not join the two
        ``\\uXXXX`` escapes of a character past U+FFFF)."""
        line = json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n"
        data = line.encode("utf-8", "backslashreplace")
        try:
            async with self._send_lock:  # one line at a time, never interleaved
                await self._stream.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise BridgeClosed("the game closed the connection") from exc

    async def receive_type(self, kind: str) -> dict[str, Any]:
        """Skip messages until one of ``{"type": kind}`` arrives."""
        while True:
            message = await self.receive()
            if message.get("type") == kind:
                return message

    async def request(self, cmd: str, **args: Any) -> dict[str, Any]:
        """Send a command and wait for its reply; any number may be in flight at once.

        Whoever holds the receive lock reads one message and files it under its id; a caller
        whose reply was filed by another takes it from there. So a command the game answers
        late (a recording, a step of many frames) never delays a quick one.
        """
        self._next_id += 1
        ident = self._next_id
        self._waiting.add(ident)
        sent = False
        try:
            await self.send({"id": ident, "cmd": cmd, **args})
            sent = True
            while ident not in self._replies:
                async with self._recv_lock:
                    if ident in self._replies:
                        break
                    message = await self.receive()
                    other = message.get("id")
                    if isinstance(other, int) and other in self._waiting:
                        self._replies[other] = message
            return self._replies.pop(ident)
        except BaseException:
            if sent and ident not in self._replies:
                await self._cancel(ident)
            raise
        finally:
            self._waiting.discard(ident)
            self._replies.pop(ident, None)

    async def _cancel(self, ident: int) -> None:
        """Tell the game a command's caller stopped waiting, so it drops the command (an
        input job, a frame wait, a step) and nothing queued behind it waits for it. Its own
        answer is not awaited; a closed connection has nothing left to cancel."""
        self._next_id += 1
        with (
            anyio.CancelScope(shield=True),
            anyio.move_on_after(1),
            contextlib.suppress(Exception),
        ):
            await self.send({"id": self._next_id, "cmd": "cancel", "target": ident})

    async def aclose(self) -> None:
        """Close the connection."""
        await anyio.aclose_forcefully(self._stream)


class BridgeListener:
    """A per-launch loopback listener with a per-launch secret."""

    def __init__(self, listener: SocketListener, secret: str) -> None:
        self._listener = listener
        self.secret = secret
        self.refused = 0

    @classmethod
    async def open(cls) -> BridgeListener:
        """Listen on an ephemeral port of 127.0.0.1 with a fresh random secret."""
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        (only,) = listener.listeners
        return cls(only, secrets.token_urlsafe(32))  # type: ignore[arg-type]

    @property
    def port(self) -> int:
        """The port the game must connect to."""
        return int(self._listener.extra(SocketAttribute.local_port))

    async def accept(self) -> tuple[BridgeConnection, dict[str, Any]]:
        """The first connection that proves the secret, and its hello; others are closed.

        Unbounded: the caller puts a deadline around it.
        """
        winner: tuple[BridgeConnection, dict[str, Any]] | None = None

        async def vet(stream: SocketStream) -> None:
            nonlocal winner
            conn = BridgeConnection(stream)
            hello: dict[str, Any] | None = None
            try:
                with anyio.move_on_after(AUTH_TIMEOUT):
                    hello = await conn.receive()
            except BridgeClosed:
                hello = None
            finally:
                if hello is None or not self._authentic(hello) or winner is not None:
                    self.refused += 1
                    with anyio.CancelScope(shield=True):
                        await conn.aclose()
            if hello is not None and self._authentic(hello) and winner is None:
                winner = (conn, hello)
                group.cancel_scope.cancel()

        async with anyio.create_task_group() as group:
            while winner is None:
                stream = await self._listener.accept()
                group.start_soon(vet, stream)
        assert winner is not None
        return winner

    def _authentic(self, hello: dict[str, Any]) -> bool:
        offered = hello.get("secret")
        return (
            hello.get("type") == "hello"
            and isinstance(offered, str)
            and hmac.compare_digest(offered.encode(), self.secret.encode())
        )

    async def aclose(self) -> None:
        """Stop listening."""
        await self._listener.aclose()

"""A game's own output, as lines an agent can read: levels, sources, a bounded buffer.

The server reads the game's stdout and stderr itself from the start of the process, so
start-up crashes are in the log too. Each line becomes an :class:`Entry`:

* ``seq`` increases and is never reused; ``stream`` is the pipe it came from (order is exact
  within a stream, by arrival across the two);
* ``level``: ``error`` for ``ERROR:``/``SCRIPT ERROR:``/``USER ERROR:`` lines and parse
  errors, ``warning`` for ``WARNING:``/``USER WARNING:``, else ``print``;
* ``text`` carries no terminal escape sequences (``print_rich`` colours them);
* ``source``: where a project error or warning happened. Godot names it on the lines that
  follow (Godot 3: ``   At: res://lab.gd:33.``; Godot 4: ``   at: _ready (res://lab.gd:33)``
  and, since 4.3, a ``GDScript backtrace`` block): those lines are folded into the entry
  before them in the same stream, never returned on their own;
* a line longer than ``MAX_LINE`` characters is cut and flagged ``truncated``.

* ``startup``: the engine's start-up lines that say nothing about the project (the banner,
  the renderer, this machine's locale and audio fallbacks, Godot 4's Vulkan probe, see
  :mod:`engine_lines`) are kept and marked, never dropped; they keep their level but a
  ``min_level`` above ``print`` leaves them out.

No line is left out. The buffer keeps at least ``MAX_LINES`` lines or ``MAX_BYTES`` of
text, whichever holds fewer, and counts what fell out: a reader is told how many lines it
missed (``dropped``), never nothing.
"""

from __future__ import annotations

import base64
import binascii
import re
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from godot_mcp.engine.process import engine_lines
from godot_mcp.engine.process.redact import printable

__all__ = ["LEVELS", "MAX_LINE", "Entry", "GameLog", "Page", "decode_cursor", "encode_cursor"]

MAX_LINES = 10_000
MAX_BYTES = 4 << 20
MAX_LINE = 10_000
LEVELS = ("print", "warning", "error")
_RANK = {name: i for i, name in enumerate(LEVELS)}
_AT3 = re.compile(r"^\s+At: (.*?)\.?\s*$")  # Godot 3: "   At: res://x.gd:3."
_AT4 = re.compile(r"^\s+at: (.*)$")  # Godot 4: "   at: _ready (res://x.gd:3)"
_FRAME = re.compile(r"^\s+(?:GDScript backtrace|\[\d+\] )")  # Godot 4.3+ backtrace lines
_RES = re.compile(r"(res://[^\s():]+?):(\d+)")


@dataclass
class Entry:
    """One line of the game's output."""

    seq: int
    stream: str
    level: str
    text: str
    source: tuple[str, int] | None = None
    truncated: bool = False
    startup: bool = False
    code: str | None = None  # the source's line as the file is now, set where answered

    def as_dict(self) -> dict[str, object]:
        """The entry as ``runtime.log.read`` answers it."""
        out: dict[str, object] = {
            "seq": self.seq,
            "stream": self.stream,
            "level": self.level,
            "text": self.text,
        }
        if self.source is not None:
            where: dict[str, object] = {"path": self.source[0], "line": self.source[1]}
            if self.code is not None:
                where["code"] = self.code
            out["source"] = where
        if self.truncated:
            out["truncated"] = True
        if self.startup:
            out["startup"] = True
        return out

    @property
    def rank(self) -> int:
        """Its rank for ``min_level``: a start-up line is read at ``print`` whatever its
        level, so asking for errors (or waiting for one) is not answered by the engine's
        own probes."""
        return 0 if self.startup else _RANK[self.level]

    def size(self) -> int:
        """Bytes this entry holds against the buffer's bound."""
        return len(self.text) + 64


@dataclass(frozen=True)
class Page:
    """What one read returns."""

    entries: list[Entry]
    next_seq: int
    dropped: int


class GameLog:
    """The bounded, parsed output of one game; fed raw bytes, read by cursor."""

    def __init__(
        self,
        scrub: Callable[[str], str] = lambda s: s,
        max_lines: int = MAX_LINES,
        max_bytes: int = MAX_BYTES,
        take: Callable[[str, str, int], bool] | None = None,
    ) -> None:
        """``take(stream, text, seq)``: a line it answers True for is the session's own (the
        bridge's markers), never kept; ``seq`` is the one the next kept line gets."""
        self.scrub = scrub
        self.take = take
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.entries: deque[Entry] = deque()
        self.next_seq = 0
        self.dropped = 0  # entries that fell out of the buffer so far
        self._bytes = 0
        self._partial: dict[str, bytes] = {}
        self._last: dict[str, Entry | None] = {}
        self._probe: dict[str, bool] = {}  # the stream's last line was the renderer's probe
        self.lock = threading.Lock()  # fed by the pipe readers' threads, read by the loop

    # -- feeding ---------------------------------------------------------------------------

    def feed(self, stream: str, data: bytes) -> None:
        """Take a chunk read from ``stream`` (``stdout``/``stderr``); empty data means EOF."""
        with self.lock:
            self._feed(stream, data)

    def _feed(self, stream: str, data: bytes) -> None:
        if not data:
            rest = self._partial.pop(stream, b"")
            if rest:
                self._line(stream, rest)
            return
        buf = self._partial.get(stream, b"") + data
        *lines, rest = buf.split(b"\n")
        for raw in lines:
            self._line(stream, raw)
        if len(rest) > 4 * MAX_LINE:  # a line without end: cut it now, do not hold it
            self._line(stream, rest)
            rest = b""
        self._partial[stream] = rest

    def _line(self, stream: str, raw: bytes) -> None:
        text = printable(raw.decode("utf-8", "replace"))  # the game's text: no escapes, no \r
        if not text.strip():
            return
        if self.take is not None and self.take(stream, text, self.next_seq):
            return
        last = self._last.get(stream)
        if last is not None and self._fold(last, text):
            return
        level = engine_lines.level(text)
        truncated = len(text) > MAX_LINE
        after_probe = self._probe.get(stream, False)
        self._probe[stream] = engine_lines.is_probe(text)
        entry = Entry(
            self.next_seq,
            stream,
            level,
            self.scrub(text[:MAX_LINE]),
            self._source(text) if level != "print" else None,
            truncated,
            engine_lines.is_startup(text, after_probe),
        )
        self._append(entry)
        self._last[stream] = entry

    def _append(self, entry: Entry) -> None:
        """Keep ``entry``; the oldest go while the buffer is past its bounds."""
        self.next_seq += 1
        self.entries.append(entry)
        self._bytes += entry.size()
        while self.entries and (len(self.entries) > self.max_lines or self._bytes > self.max_bytes):
            gone = self.entries.popleft()
            self._bytes -= gone.size()
            self.dropped += 1

    def note(self, stream: str, level: str, text: str, source: tuple[str, int] | None) -> None:
        """Add a line the server writes for the game (a debugger's error that the engine
        did not print), printable, scrubbed and bounded as every line."""
        with self.lock:
            shown = self.scrub(printable(text)[:MAX_LINE])
            self._append(Entry(self.next_seq, stream, level, shown, source))
            self._last[stream] = None

    def _fold(self, entry: Entry, text: str) -> bool:
        """Fold a location or backtrace line into the entry it belongs to."""
        match = _AT3.match(text) or _AT4.match(text)
        if match is None and not _FRAME.match(text):
            return False
        if entry.source is None and entry.level != "print":
            entry.source = self._source(text)
        return True

    def _source(self, text: str) -> tuple[str, int] | None:
        """The project location a line names; none for a path that leaves ``res://`` or
        names anything the scrubber would replace (a game can print any ``At:`` line)."""
        match = _RES.search(text)
        if match is None:
            return None
        path = match.group(1)
        if any(p in ("", ".", "..") for p in path[6:].split("/")) or self.scrub(path) != path:
            return None
        return path, int(match.group(2))

    # -- reading ---------------------------------------------------------------------------

    def read(
        self,
        after: int | None,
        max_lines: int,
        min_level: str = "print",
        fits: Callable[[Entry], bool] = lambda _e: True,
    ) -> Page:
        """Entries from seq ``after`` on (absent: the oldest kept), at ``min_level`` or above.

        ``fits`` decides whether one more entry still fits the answer (its size bound).
        ``next_seq`` is where the next read goes on; ``dropped`` counts lines that fell out
        of the buffer before where this read started.
        """
        with self.lock:
            return self._read(after, max_lines, min_level, fits)

    def _read(
        self, after: int | None, max_lines: int, min_level: str, fits: Callable[[Entry], bool]
    ) -> Page:
        oldest = self.entries[0].seq if self.entries else self.next_seq
        start = oldest if after is None else max(after, 0)
        dropped = self.dropped if after is None else max(0, min(oldest, self.next_seq) - start)
        rank = _RANK[min_level]
        out: list[Entry] = []
        next_seq = max(start, oldest)
        for entry in self._from(max(start, oldest)):
            if entry.rank >= rank:
                if len(out) >= max_lines or not fits(entry):
                    break
                out.append(entry)
            next_seq = entry.seq + 1
        return Page(out, next_seq, dropped)

    def _from(self, seq: int) -> Iterator[Entry]:
        if not self.entries:
            return
        first = self.entries[0].seq
        for i in range(max(0, seq - first), len(self.entries)):
            yield self.entries[i]

    def has_new(self, seq: int, min_level: str = "print") -> bool:
        """True when a line at ``min_level`` or above arrived at or after ``seq``."""
        rank = _RANK[min_level]
        with self.lock:
            return any(e.rank >= rank for e in self._from(seq))

    def tail(self, lines: int, telling: bool = False) -> list[str]:
        """The texts of the last ``lines`` entries; ``telling``: only those that are not the
        engine's start-up lines."""
        with self.lock:
            kept = [e for e in self.entries if not (telling and e.startup)]
            return [e.text for e in kept[-lines:]] if lines > 0 else []

    def text(self) -> str:
        """The whole kept log as text, one line per entry (for ``runtime.log.capture``)."""
        with self.lock:
            return self._text()

    def _text(self) -> str:
        rows = []
        if self.dropped:
            rows.append(f"[{self.dropped} earlier line(s) fell out of the buffer]")
        for e in self.entries:
            where = f"  ({e.source[0]}:{e.source[1]})" if e.source else ""
            cut = " [truncated]" if e.truncated else ""
            rows.append(f"{e.seq:>6} {e.stream} {e.level}: {e.text}{cut}{where}")
        return "\n".join(rows) + ("\n" if rows else "")


def encode_cursor(seq: int) -> str:
    """The opaque cursor of a position in a game's log."""
    return base64.urlsafe_b64encode(f"log:{seq}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    """The position a cursor names; ValueError if it is not one of ours."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise ValueError("invalid cursor") from None
    head, _, number = raw.partition(":")
    if head != "log" or not number.isdigit() or len(number) > 18:
        raise ValueError("invalid cursor")
    # Base64 decoding forgives stray trailing characters: only the exact form is ours.
    if encode_cursor(int(number)) != cursor:
        raise ValueError("invalid cursor")
    return int(number)

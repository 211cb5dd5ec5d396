"""The marker lines that bound a call's span of the game's stderr (``bridge.py``'s marks).

The bridge prints a call's first mark just before the call and its second just after, and
answers after the second; a ping given a mark prints it before answering. The game's log hands
every marker line to :meth:`CallMarks.take` on its pipe reader's thread and keeps it out. A
call that needs its span waits on an event that reader sets as it reads the line.
"""

from __future__ import annotations

import threading

import anyio

from godot_mcp.features.game.bridge import MARK_PREFIX, new_mark, parse_mark

__all__ = ["CallMarks", "Mark"]

RETIRED = 64  # the last marks used, whose late lines are still kept out


class Mark:
    """One issued mark: its token, and once its line was read, the seq of the next line kept."""

    def __init__(self) -> None:
        self.token = new_mark()
        self.seq: int | None = None
        self.read = threading.Event()  # set by the reader with ``seq``, or as it is retired


class CallMarks:
    """The marks of a session's calls in flight, and the ones retired lately."""

    def __init__(self) -> None:
        self._open: dict[str, Mark] = {}
        self._retired: dict[str, None] = {}

    def issue(self, count: int) -> list[Mark]:
        """``count`` new marks, whose lines :meth:`take` notes from now on."""
        marks = [Mark() for _ in range(count)]
        for mark in marks:
            self._open[mark.token] = mark
        return marks

    def retire(self, *marks: Mark) -> None:
        """Forget ``marks``: their lines are still kept out, but no longer noted."""
        for mark in marks:
            self._retired[mark.token] = None  # first: a line read in between is still kept out
            self._open.pop(mark.token, None)
            mark.read.set()  # frees a wait given up on
        while len(self._retired) > RETIRED:
            self._retired.pop(next(iter(self._retired)))

    def take(self, text: str, seq: int) -> bool:
        """Note a stderr line naming a mark (only its first line counts); whether the log keeps
        it out. Run by the log, under its lock, on a pipe reader's thread: a line naming a
        mark no call was given (a game printing one) is the game's own and stays."""
        if not text.startswith(MARK_PREFIX):
            return False
        token = parse_mark(text)
        if token is None:
            return False
        mark = self._open.get(token)
        if mark is None:
            return token in self._retired
        if mark.seq is None:
            mark.seq = seq
            mark.read.set()
        return True

    async def wait(self, mark: Mark, timeout: float) -> None:
        """Return once ``mark``'s line was read (at once if it was), or after ``timeout`` s."""
        if mark.seq is not None:
            return
        with anyio.move_on_after(timeout):
            await anyio.to_thread.run_sync(mark.read.wait, timeout, abandon_on_cancel=True)

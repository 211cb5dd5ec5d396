"""The ``--max-exports`` slots: one count for exports and project checks, one refusal.

An export takes its slot before anything is copied and keeps it until its Godot has ended
(``Slot.keep``; its watcher gives it back); a check holds one while it runs. Taking a slot
and counting it are one step on the event loop, so concurrent starts cannot overshoot.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from godot_mcp.errors import Unavailable


class Slot:
    """One slot taken; given back once (``release``), however often it is asked."""

    def __init__(self, slots: Slots) -> None:
        self._slots = slots
        self.kept = False
        self._held = True

    def keep(self) -> None:
        """Hold the slot past the block that took it (a started export's watcher gives it
        back when the export ends)."""
        self.kept = True

    def release(self) -> None:
        if self._held:
            self._held = False
            self._slots.held -= 1


class Slots:
    """At most ``limit`` exports and checks of this server at once."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0

    def refuse_when_full(self) -> None:
        """Unavailable when every slot is taken (before any work is done for a start)."""
        if self.held >= self.limit:
            raise Unavailable(
                f"{self.limit} exports and checks are running (this server's --max-exports); "
                "wait for one to end or cancel it first"
            )

    @contextlib.contextmanager
    def take(self) -> Iterator[Slot]:
        """A slot for the block; given back at its end unless the block kept it."""
        self.refuse_when_full()
        self.held += 1
        slot = Slot(self)
        try:
            yield slot
        finally:
            if not slot.kept:
                slot.release()

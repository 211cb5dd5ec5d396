"""Whether a tool can work on this server, and if not why: ``server.profile`` says it of each
tool as ``available`` or ``unavailable: <why>``, and a refusal says the why."""

from __future__ import annotations

from dataclasses import dataclass

from godot_mcp.errors import Unavailable

__all__ = ["AVAILABLE", "Availability", "unavailable"]


@dataclass(frozen=True)
class Availability:
    """Available when ``why`` is ``None``; its ``str`` is what ``server.profile`` answers."""

    why: str | None = None

    @property
    def ok(self) -> bool:
        return self.why is None

    def refuse(self, error: type[Unavailable] = Unavailable) -> None:
        """Raise ``error`` (an ``Unavailable``) saying why, unless available."""
        if self.why is not None:
            raise error(self.why)

    def __str__(self) -> str:
        return "available" if self.why is None else f"unavailable: {self.why}"


AVAILABLE = Availability()


def unavailable(why: str) -> Availability:
    return Availability(why)

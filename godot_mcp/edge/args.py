"""Validation of tool arguments (the SDK does not check them against the schema)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from godot_mcp.errors import InvalidArgument


class Args:
    """Typed access to one call's arguments; unknown names are refused."""

    def __init__(self, raw: Mapping[str, Any] | None, allowed: set[str]) -> None:
        if raw is not None and not isinstance(raw, Mapping):
            raise InvalidArgument("arguments must be an object")
        self.raw = dict(raw or {})
        unknown = sorted(set(self.raw) - allowed)
        if unknown:
            raise InvalidArgument(f"unknown argument(s): {', '.join(unknown)}")

    def string(self, name: str, default: str | None = None, *, required: bool = False) -> str:
        """A string argument."""
        value = self.raw.get(name, default)
        if value is None and required:
            raise InvalidArgument(f"{name} is required")
        if not isinstance(value, str) or (required and not value):
            raise InvalidArgument(f"{name} must be a non-empty string")
        return value

    def optional_string(self, name: str) -> str | None:
        """A string argument that may be absent or null."""
        value = self.raw.get(name)
        if value is None:
            return None
        if not isinstance(value, str):
            raise InvalidArgument(f"{name} must be a string")
        return value

    def choice(self, name: str, choices: tuple[str, ...], default: str) -> str:
        """One of ``choices``."""
        value = self.raw.get(name, default)
        if value not in choices:
            raise InvalidArgument(f"{name} must be one of {', '.join(choices)}")
        return str(value)

    def integer(self, name: str, low: int, high: int, default: int) -> int:
        """An integer in ``[low, high]`` (a float with an integral value is accepted)."""
        value = self.raw.get(name, default)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise InvalidArgument(f"{name} must be an integer from {low} to {high}")
        return value

    def number(self, name: str, low: float, high: float, default: float) -> float:
        """A number in ``[low, high]``."""
        value = self.raw.get(name, default)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not (low <= value <= high)
        ):
            raise InvalidArgument(f"{name} must be a number from {low} to {high}")
        return float(value)

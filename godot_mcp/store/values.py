"""Plain values that cross the store's boundary."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import BinaryIO

Clock = Callable[[], datetime]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def utc_now() -> datetime:
    """The default clock (freezegun moves it in tests)."""
    return datetime.now(UTC)


def to_us(moment: datetime) -> int:
    """A datetime as integer microseconds since the epoch."""
    return (moment - _EPOCH) // timedelta(microseconds=1)


def from_us(us: int) -> datetime:
    """Integer microseconds since the epoch as an aware UTC datetime."""
    return _EPOCH + timedelta(microseconds=us)


@dataclass(frozen=True)
class Limits:
    """The three limits a user can set and ``server.profile`` reports."""

    max_output_bytes: int = 512 * 1024
    store_budget_bytes: int = 256 * 1024 * 1024
    retention_seconds: int = 900


@dataclass(frozen=True)
class Caller:
    """Who asks: principal, MCP session (None on stdio), server launch (None on stdio), project."""

    principal: str
    session_id: str | None
    launch_id: str | None
    project_id: int


@dataclass(frozen=True)
class NewArtifact:
    """Bytes to register and what they are.

    ``source`` is bytes, a readable binary file object, or a path to read.
    ``expected_sha256``/``expected_size``, when given, must match or nothing is kept.
    """

    media_type: str
    source: bytes | BinaryIO | Path
    frames: int | None = None
    width: int | None = None
    height: int | None = None
    name: str | None = None
    expected_sha256: str | None = None
    expected_size: int | None = None


@dataclass(frozen=True)
class ArtifactInfo:
    """A registered artifact as callers see it (no location)."""

    id: str
    uri: str
    media_type: str
    size: int
    sha256: str
    created_at: datetime
    expires_at: datetime
    generation: int
    frames: int | None = None
    width: int | None = None
    height: int | None = None
    name: str | None = None
    export_id: str | None = None


@dataclass(frozen=True)
class ReadResult:
    """The bytes of one admitted range and what describes them."""

    uri: str
    media_type: str
    offset: int
    length: int
    size: int
    sha256: str
    data: bytes


@dataclass(frozen=True)
class Page:
    """One page of a listing and the opaque cursor of the next (None at the end)."""

    items: list[ArtifactInfo]
    next_cursor: str | None


@dataclass(frozen=True)
class StoreLayout:
    """Where the store keeps things under its private state dir."""

    state_dir: Path

    @property
    def db_path(self) -> Path:
        return self.state_dir / "store.db"

    @property
    def blob_dir(self) -> Path:
        return self.state_dir / "blobs"

    @property
    def quarantine_dir(self) -> Path:
        return self.state_dir / "quarantine"

    @property
    def lock_path(self) -> Path:
        return self.state_dir / "blobs.lock"

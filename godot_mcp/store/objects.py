"""The object-store seam: what the artifact store needs from wherever bytes are kept.

An object store keeps named byte strings in two areas, ``blobs`` (served) and
``quarantine`` (withdrawn, kept for an operator). It knows nothing of digests, budgets or
rows: content addressing, staging, block verification and quarantine policy live above it,
once, in ``store.blobs.Blobs``. Implementations: a private directory of this host
(``store.directory.DirectoryObjects``), an S3-compatible bucket that several hosts share
(``store.s3.S3Objects``), and an in-memory one for unit tests (``tests/support``).

Every read answers the object's ``Version``: an opaque value that changes whenever the
object is written again with other bytes (a file's identity, a bucket object's ETag), so
that a reader can tell "the object I verified" from "an object under the same name".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

Recorded = Callable[[str | None], str | None]  # the database's blob store record

Area = Literal["blobs", "quarantine"]


@dataclass(frozen=True)
class Version:
    """One object's size and an opaque tag; equal versions mean the same stored bytes."""

    size: int
    tag: str


@dataclass(frozen=True)
class Listed:
    """One object as a listing names it: its name in its area, and when it was last written
    (microseconds since the epoch, by the store's own clock)."""

    name: str
    modified_us: int


@dataclass(frozen=True)
class Upload:
    """Bytes to store: a staged temp file of this host, or bytes in memory; ``sha256`` is the
    hex SHA-256 the store may ask its server to check the bytes against."""

    size: int
    sha256: str
    path: Path | None = None
    data: bytes | None = None


class ObjectStore(Protocol):
    """Named objects in two areas. Names are what the layer above chose (a blob's SHA-256)
    or what ``list`` answered (strays included). Missing objects are never an error to
    ``delete`` or ``move_aside``; ``get_range`` raises NotFound for one.

    ``shared``: other hosts write the same store (their uploads are guarded by leases in the
    database, not by this host's lock). ``memory_stage``: bytes in memory up to this size are
    handed to ``put`` as they are (0: always a temp file, e.g. to publish by rename).
    Where temp files go is the object store's own business: ``temp_path`` names a fresh
    one in a private place of this host, ``temps`` lists those left behind.
    """

    shared: bool
    memory_stage: int

    def temp_path(self) -> Path: ...
    def temps(self) -> Iterator[Path]: ...

    def put(self, name: str, upload: Upload) -> Version: ...
    def get_range(self, name: str, offset: int, length: int) -> tuple[bytes, Version]: ...
    def head(self, name: str) -> Version | None: ...
    def delete(self, name: str) -> None: ...
    def list(self, area: Area) -> Iterator[Listed]: ...
    def move_aside(self, name: str) -> None: ...
    def close(self) -> None: ...
    def claim(self, recorded: Recorded) -> None:
        """Make sure a database serves only this store (``shared.py``): ``recorded(propose)``
        answers the store the database records, recording ``propose`` when it records
        none; ``ConfigError`` when it is another's. Bucket stores also mark themselves."""
        ...

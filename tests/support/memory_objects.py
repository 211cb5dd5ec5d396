"""An object store in memory (``store/objects.py``) for unit tests of the layers above it.

It keeps what a real store keeps (named bytes in two areas, a version that changes on every
write, a modification time) and refuses what a bucket refuses (bytes that are not their
SHA-256). ``down`` makes every call fail as an unreachable store does; ``outsider_write``
changes bytes behind the store's back, as a disk fault or an operator does.
"""

from __future__ import annotations

import hashlib
import itertools
import secrets
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from godot_mcp.errors import BlobStoreUnavailable, IntegrityError, NotFound
from godot_mcp.store.objects import Area, Listed, Recorded, Upload, Version
from godot_mcp.store.shared import claim_location


class MemoryObjects:
    memory_stage = 1 << 30

    def __init__(self, staging: Path, shared: bool = False) -> None:
        self.staging = staging
        staging.mkdir(parents=True, mode=0o700, exist_ok=True)
        self.shared = shared
        self.ident = secrets.token_hex(16)
        self.down = False
        self.calls: Counter[str] = Counter()
        self._areas: dict[str, dict[str, tuple[bytes, Version, int]]] = {
            "blobs": {},
            "quarantine": {},
        }
        self._tags = itertools.count(1)
        self._lock = threading.Lock()

    def temp_path(self) -> Path:
        return self.staging / f"stage-{secrets.token_hex(12)}"

    def temps(self) -> Iterator[Path]:
        yield from self.staging.iterdir()

    def claim(self, recorded: Recorded) -> None:
        """Named by an id of its own, as a directory is by the id kept in it."""
        claim_location(recorded, f"memory {self.ident}")

    def _call(self, what: str) -> None:
        self.calls[what] += 1
        if self.down:
            raise BlobStoreUnavailable("the blob store cannot be reached")

    def _keep(self, area: str, name: str, data: bytes) -> Version:
        version = Version(len(data), f"v{next(self._tags)}")
        self._areas[area][name] = (data, version, time.time_ns() // 1000)
        return version

    def put(self, name: str, upload: Upload) -> Version:
        self._call("put")
        data = upload.data if upload.data is not None else Path(upload.path or "").read_bytes()
        if hashlib.sha256(data).hexdigest() != upload.sha256 or len(data) != upload.size:
            raise IntegrityError("the blob store received other bytes than were sent")
        with self._lock:
            return self._keep("blobs", name, data)

    def get_range(self, name: str, offset: int, length: int) -> tuple[bytes, Version]:
        self._call("get_range")
        with self._lock:
            held = self._areas["blobs"].get(name)
        if held is None:
            raise NotFound("artifact not found")
        data, version, _ = held
        return data[offset : offset + length], version

    def head(self, name: str) -> Version | None:
        self._call("head")
        with self._lock:
            held = self._areas["blobs"].get(name)
        return None if held is None else held[1]

    def delete(self, name: str) -> None:
        self._call("delete")
        with self._lock:
            self._areas["blobs"].pop(name, None)

    def move_aside(self, name: str) -> None:
        self._call("move_aside")
        with self._lock:
            held = self._areas["blobs"].pop(name, None)
            if held is not None:
                self._keep("quarantine", f"{name}.{next(self._tags)}", held[0])

    def list(self, area: Area) -> Iterator[Listed]:
        self._call("list")
        with self._lock:
            items = sorted(self._areas[area].items())
        for name, (_, _, modified) in items:
            yield Listed(name, modified)

    def close(self) -> None:
        pass

    # -- what an outsider does ----------------------------------------------------

    def outsider_write(self, name: str, data: bytes, age_s: float = 0.0) -> None:
        """Bytes under ``name`` written behind the store's back (``age_s`` seconds ago)."""
        with self._lock:
            self._keep("blobs", name, data)
            held = self._areas["blobs"][name]
            self._areas["blobs"][name] = (held[0], held[1], held[2] - int(age_s * 1e6))

    def bytes_of(self, name: str, area: str = "blobs") -> bytes | None:
        with self._lock:
            held = self._areas[area].get(name)
        return None if held is None else held[0]

    def names(self, area: str = "blobs") -> list[str]:
        with self._lock:
            return sorted(self._areas[area])

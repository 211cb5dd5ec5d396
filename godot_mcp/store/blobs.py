"""Content-addressed blobs over any object store (``store/objects.py``), once.

Each distinct content is one object of the raw bytes named by its SHA-256. Staging,
hashing, block verification, versions and quarantine are done here for every object store;
block digests live in the database, never with the bytes.

Write path: temp file (O_EXCL, 0600) in the store's staging directory, or the bytes as they
are in memory when the store takes them so -> hash while written (SHA-256 and one xxh3-64
per block) -> fsync -> ``put`` (a rename into the shard and an fsync of it; an upload the
server checks against the SHA-256). A crash anywhere leaves at most a temp file or an
unreferenced blob, which reconciliation removes; never a published blob with other bytes
than its name.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import xxhash

from godot_mcp.errors import IntegrityError, NotFound, StorageError, Unavailable
from godot_mcp.store.directory import mkdir_private
from godot_mcp.store.faults import checkpoint
from godot_mcp.store.objects import ObjectStore, Upload, Version

__all__ = ["mkdir_private"]  # re-exported: the store makes its own directories with it

BLOCK_SIZE = 64 * 1024
CHUNK = 16 * BLOCK_SIZE
VERIFY_CHUNK = 128 * BLOCK_SIZE  # one ranged read of a full verification or re-hash
_SHA_RE = re.compile(r"[0-9a-f]{64}")
_HASHER = ThreadPoolExecutor(max_workers=2, thread_name_prefix="blob-hash")


def is_sha256(value: str) -> bool:
    """True for a lowercase hex SHA-256, the only thing a blob path is built from."""
    return _SHA_RE.fullmatch(value) is not None


def block_digest(data: bytes | memoryview) -> bytes:
    """The per-block integrity digest (xxh3-64, 8 bytes)."""
    return xxhash.xxh3_64_digest(data)


@dataclass(frozen=True)
class Blocks:
    """A blob's block digests (8 bytes each) and the block size they were taken at (the
    blob row's own: a store opened with another block size still reads older blobs)."""

    digests: bytes
    size: int


def check_block_size(block_size: int) -> int:
    """``block_size`` if it is a power of two from 4 KiB to 1 MiB: it then divides every
    chunk that is staged or verified, so block digests line up with byte offsets."""
    if not (4096 <= block_size <= CHUNK and block_size & (block_size - 1) == 0):
        raise ValueError("block_size must be a power of two from 4 KiB to 1 MiB")
    return block_size


class StaleMark(Unavailable):
    """A read found the blob at another version than the one it was given (the object was
    written again): look again, and verify it in full, before serving it."""

    def __init__(self) -> None:
        super().__init__("the artifact was written again while it was read")


@dataclass(frozen=True)
class StagedBlob:
    """Bytes written and fsynced to a temp file (or kept in memory when they came so and the
    store takes them so), hashed, not yet published."""

    temp_path: Path | None
    sha256: str
    size: int
    block_digests: bytes
    data: bytes | None = None


def stage_file(temp: Path, source: bytes | BinaryIO, block_size: int) -> StagedBlob:
    """Write ``source`` to the new temp file ``temp`` while hashing it; fsync it."""
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise StorageError(f"cannot create a blob: {exc.strerror}") from None
    sha = hashlib.sha256()
    digests = bytearray()
    size = 0

    def hash_chunk(chunk: memoryview) -> None:
        sha.update(chunk)
        for start in range(0, len(chunk), block_size):
            digests.extend(block_digest(chunk[start : start + block_size]))

    try:
        for chunk in _chunks(source):
            # Hash on a helper thread while this one writes: both release the GIL.
            hashed = _HASHER.submit(hash_chunk, chunk)
            view = chunk
            try:
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
            finally:
                hashed.result()
            size += len(chunk)
            checkpoint("stage.chunk")
        os.fsync(fd)
    except OSError as exc:
        os.close(fd)
        temp.unlink(missing_ok=True)
        raise StorageError(f"cannot write a blob: {exc.strerror or exc}") from None
    except BaseException:
        os.close(fd)
        temp.unlink(missing_ok=True)
        raise
    os.close(fd)
    checkpoint("stage.done")
    return StagedBlob(temp, sha.hexdigest(), size, bytes(digests))


def stage_memory(data: bytes | bytearray | memoryview, block_size: int) -> StagedBlob:
    """Hash bytes that are in memory already, keeping them there (no temp file)."""
    view = memoryview(data)
    digests = bytearray()
    for start in range(0, len(view), block_size):
        digests.extend(block_digest(view[start : start + block_size]))
        if (start + block_size) % CHUNK == 0 or start + block_size >= len(view):
            checkpoint("stage.chunk")  # as a file's staging passes it, chunk by chunk
    checkpoint("stage.done")
    return StagedBlob(
        None, hashlib.sha256(view).hexdigest(), len(view), bytes(digests), bytes(view)
    )


def checked_range(
    data: bytes, first: int, offset: int, length: int, digests: bytes, bs: int, where: str
) -> bytes:
    """``[offset, offset+length)`` out of ``data``, the whole blocks from block ``first`` on,
    after checking each block against its digest; IntegrityError names ``where`` it changed."""
    for i in range(len(data) // bs + (len(data) % bs > 0)):
        block = memoryview(data)[i * bs : (i + 1) * bs]
        want = digests[(first + i) * 8 : (first + i + 1) * 8]
        if len(want) != 8 or block_digest(block) != want:
            raise IntegrityError(f"artifact bytes changed {where}")
    start = offset - first * bs
    out = data[start : start + length]
    if len(out) != length:
        raise IntegrityError(f"artifact bytes changed {where}")
    return out


def discard_staged(staged: StagedBlob) -> None:
    """Drop what ``staged`` left on disk, if anything."""
    if staged.temp_path is not None:
        staged.temp_path.unlink(missing_ok=True)


def _chunks(source: bytes | BinaryIO) -> Iterator[memoryview]:
    if isinstance(source, bytes | bytearray | memoryview):
        view = memoryview(source)
        for start in range(0, len(view), CHUNK):
            yield view[start : start + CHUNK]
        return
    buf = bytearray(CHUNK)
    while True:
        n = source.readinto(buf)  # type: ignore[attr-defined]
        if not n:
            return
        # Keep chunks block-aligned so block digests line up with offsets.
        while n < CHUNK:
            more = source.readinto(memoryview(buf)[n:])  # type: ignore[attr-defined]
            if not more:
                break
            n += more
        yield memoryview(buf)[:n]


class Blobs:
    """Blobs named by their SHA-256 in an object store, read and verified block by block.

    Every read is given the ``Version`` its caller verified (or looked up) and raises
    StaleMark when the object's bytes are another version now; a block whose digest does not
    match raises IntegrityError. What is missing reads as NotFound (or None, for lookups).
    """

    def __init__(self, objects: ObjectStore, block_size: int = BLOCK_SIZE) -> None:
        self.objects = objects
        self.block_size = check_block_size(block_size)

    # -- writing -------------------------------------------------------------

    def stage(self, source: bytes | BinaryIO) -> StagedBlob:
        """Hash ``source``: bytes in memory stay there when the store takes them so; anything
        else goes to a fresh temp file of the staging directory, fsynced."""
        if (
            isinstance(source, bytes | bytearray | memoryview)
            and len(source) <= self.objects.memory_stage
        ):
            return stage_memory(source, self.block_size)
        return stage_file(self.objects.temp_path(), source, self.block_size)

    def publish(self, staged: StagedBlob) -> Version:
        """Make the staged bytes the blob named by their SHA-256; the temp file goes either
        way. Answers the stored object's version."""
        try:
            return self.objects.put(
                staged.sha256,
                Upload(staged.size, staged.sha256, staged.temp_path, staged.data),
            )
        finally:
            discard_staged(staged)

    def discard(self, staged: StagedBlob) -> None:
        """Drop a staged temp file that will not be published."""
        discard_staged(staged)

    # -- reading -------------------------------------------------------------

    def head(self, sha256: str, size: int) -> Version | None:
        """The blob's version when it is there with the expected size, else None."""
        if not is_sha256(sha256):
            return None
        version = self.objects.head(sha256)
        return version if version is not None and version.size == size else None

    def exists(self, sha256: str, size: int) -> bool:
        """True when the blob is there with the expected size."""
        return self.head(sha256, size) is not None

    def read(
        self, sha256: str, offset: int, length: int, blocks: Blocks, version: Version
    ) -> bytes:
        """``[offset, offset+length)`` out of one read of the whole blocks it touches, every
        block checked against its digest."""
        if length == 0:
            return b""
        bs = blocks.size
        first, last = offset // bs, (offset + length - 1) // bs
        data = self._range(sha256, first * bs, (last - first + 1) * bs, version)
        return checked_range(data, first, offset, length, blocks.digests, bs, "in the blob store")

    def verify(self, sha256: str, blocks: Blocks, version: Version) -> bool:
        """True when every block of the blob (at ``version``) matches its recorded digest;
        False at the first that does not, or when the blob is gone."""
        bs, digests = check_block_size(blocks.size), blocks.digests
        index = 0
        try:
            for chunk in self._chunks(sha256, version):
                for start in range(0, len(chunk), bs):
                    want = digests[index * 8 : index * 8 + 8]
                    if block_digest(memoryview(chunk)[start : start + bs]) != want:
                        return False
                    index += 1
        except NotFound:
            return False
        return index * 8 == len(digests)

    def hash_blob(self, sha256: str) -> tuple[str, int] | None:
        """Re-hash a blob in full: ``(sha256, size)``, or None if it is gone. A store that
        cannot be reached raises; it never counts as missing."""
        version = self.objects.head(sha256) if is_sha256(sha256) else None
        if version is None:
            return None
        h = hashlib.sha256()
        size = 0
        try:
            for chunk in self._chunks(sha256, version):
                h.update(chunk)
                size += len(chunk)
        except NotFound:
            return None
        return h.hexdigest(), size

    def _chunks(self, sha256: str, version: Version) -> Iterator[bytes]:
        for offset in range(0, version.size, VERIFY_CHUNK):
            yield self._range(sha256, offset, VERIFY_CHUNK, version)

    def _range(self, sha256: str, offset: int, length: int, version: Version) -> bytes:
        if not is_sha256(sha256):
            raise NotFound("artifact not found")
        data, seen = self.objects.get_range(sha256, offset, length)
        if seen != version:
            raise StaleMark
        return data

    # -- removing and listing --------------------------------------------------

    def delete(self, sha256: str) -> None:
        """Remove a blob (missing is fine)."""
        if is_sha256(sha256):
            self.objects.delete(sha256)

    def quarantine(self, sha256: str) -> None:
        """Move a blob whose bytes no longer match out of the served area."""
        if is_sha256(sha256):
            self.objects.move_aside(sha256)

    def quarantined(self) -> int:
        """How many withdrawn blobs are kept aside."""
        return sum(1 for _ in self.objects.list("quarantine"))

    def iter_blobs(self, older_than_us: int | None = None) -> Iterator[str]:
        """Every blob's name, or only those last written before ``older_than_us``."""
        for item in self.objects.list("blobs"):
            if is_sha256(item.name) and (older_than_us is None or item.modified_us < older_than_us):
                yield item.name

    def iter_strays(self) -> Iterator[str]:
        """What the served area holds that is not a blob's name."""
        for item in self.objects.list("blobs"):
            if not is_sha256(item.name):
                yield item.name

    def remove_stray(self, name: str) -> None:
        """Remove one stray ``iter_strays`` named."""
        self.objects.delete(name)

    def iter_temp(self) -> Iterator[Path]:
        """This host's staging temp files (stale once no registration of this host runs)."""
        yield from self.objects.temps()

    def close(self) -> None:
        """Release the object store's connections."""
        self.objects.close()

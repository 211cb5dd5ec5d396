"""The content-addressed blob directory.

Each distinct content is one plain file of the raw bytes, named by its SHA-256,
under ``blobs/ab/cd/<sha256>``; directories are 0700, files 0600. Temp files
live in ``blobs/.tmp`` (same filesystem, so publishing is a rename). Block
digests live in the database, never in here.

Write path: temp file (O_EXCL, 0600) -> write while hashing (SHA-256 and one
xxh3-64 per block) -> fsync -> rename into the shard -> fsync the shard dir.
A crash anywhere leaves at most a temp file or an unreferenced blob, which
reconciliation removes; never a published file with other bytes than its name.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

import xxhash

from godot_mcp.errors import IntegrityError, NotFound, StorageError
from godot_mcp.store.faults import checkpoint

BLOCK_SIZE = 64 * 1024
CHUNK = 16 * BLOCK_SIZE
_SHA_RE = re.compile(r"[0-9a-f]{64}")
_TMP_PREFIX = "stage-"
_HASHER = ThreadPoolExecutor(max_workers=2, thread_name_prefix="blob-hash")


def is_sha256(value: str) -> bool:
    """True for a lowercase hex SHA-256, the only thing a blob path is built from."""
    return _SHA_RE.fullmatch(value) is not None


def block_digest(data: bytes | memoryview) -> bytes:
    """The per-block integrity digest (xxh3-64, 8 bytes)."""
    return xxhash.xxh3_64_digest(data)


class StaleMark(Exception):
    """A read found the blob other than the fingerprint the store last saw (a shared store's
    object was uploaded again): look again, and verify it in full, before serving it."""


@dataclass(frozen=True)
class StagedBlob:
    """Bytes written and fsynced to a temp file (or, for a bucket, kept in memory when they
    came so), hashed, not yet published."""

    temp_path: Path | None
    sha256: str
    size: int
    block_digests: bytes
    data: bytes | None = None


class BlobStore(Protocol):
    """What the artifact store needs from a byte store: a private directory (``FsBlobStore``)
    or an S3-compatible bucket that several hosts share (``store.s3.S3BlobStore``).

    Both stage locally (a temp file hashed while written, ``stage_file``); ``publish`` makes
    the staged bytes the blob named by their SHA-256. A ``shared`` store is written by other
    hosts too: the artifact store then guards uploads with leases in the database, not with
    the local blob lock, and an unreferenced blob is an orphan only once it is older than
    ``orphan_grace_us``.
    """

    block_size: int
    shared: bool
    orphan_grace_us: int

    def stage(self, source: bytes | BinaryIO) -> StagedBlob: ...
    def publish(self, staged: StagedBlob) -> None: ...
    def discard(self, staged: StagedBlob) -> None: ...
    def fingerprint(
        self, sha256: str, size: int, recheck: bool = True
    ) -> tuple[int, int, int, int] | None: ...
    def verify(self, sha256: str, digests: bytes) -> bool: ...
    def read(
        self,
        sha256: str,
        offset: int,
        length: int,
        digests: bytes,
        mark: tuple[int, int, int, int] | None = None,
    ) -> bytes: ...
    def exists(self, sha256: str, size: int) -> bool: ...
    def delete(self, sha256: str) -> None: ...
    def quarantine(self, sha256: str) -> None: ...
    def quarantined(self) -> int: ...
    def hash_blob(self, sha256: str) -> tuple[str, int] | None: ...
    def iter_blobs(self, older_than_us: int | None = None) -> Iterator[str]: ...
    def iter_strays(self) -> Iterator[str]: ...
    def remove_stray(self, name: str) -> None: ...
    def iter_temp(self) -> Iterator[Path]: ...
    def close(self) -> None: ...


def stage_file(tmp_dir: Path, source: bytes | BinaryIO, block_size: int) -> StagedBlob:
    """Write ``source`` to a fresh temp file in ``tmp_dir`` while hashing it; fsync it."""
    temp = tmp_dir / f"{_TMP_PREFIX}{secrets.token_hex(12)}"
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


def mkdir_private(path: Path) -> None:
    """Make ``path`` (and missing parents) a 0700 directory."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path, 0o700)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FsBlobStore:
    """Blob files in a private, hash-sharded directory (one host's; the local lock guards it)."""

    shared = False
    orphan_grace_us = 0  # reconcile holds the exclusive lock: no registration is in flight

    def __init__(self, root: Path, quarantine_dir: Path, block_size: int = BLOCK_SIZE) -> None:
        self.root = root
        self.tmp_dir = root / ".tmp"
        self.quarantine_dir = quarantine_dir
        self.block_size = block_size
        mkdir_private(self.tmp_dir)
        mkdir_private(quarantine_dir)
        if not (root / "ff").is_dir():  # first shard level made once, not on the write path
            for i in range(256):
                mkdir_private(root / f"{i:02x}")
            _fsync_dir(root)

    def path_of(self, sha256: str) -> Path:
        """The file of a blob; refuses anything but a hex SHA-256."""
        if not is_sha256(sha256):
            raise NotFound("artifact not found")
        return self.root / sha256[:2] / sha256[2:4] / sha256

    def stage(self, source: bytes | BinaryIO) -> StagedBlob:
        """Write ``source`` to a fresh temp file while hashing it; fsync it."""
        return stage_file(self.tmp_dir, source, self.block_size)

    def publish(self, staged: StagedBlob) -> None:
        """Rename the temp file into its shard and fsync the directory.

        Replacing an existing file is safe: same name, same bytes.
        """
        final = self.path_of(staged.sha256)
        try:
            if not final.parent.is_dir():
                mkdir_private(final.parent.parent)
                mkdir_private(final.parent)
                _fsync_dir(final.parent.parent)
                _fsync_dir(final.parent.parent.parent)
            assert staged.temp_path is not None  # a directory stages to files only
            os.replace(staged.temp_path, final)
            checkpoint("publish.renamed")
            _fsync_dir(final.parent)
        except OSError as exc:
            discard_staged(staged)
            raise StorageError(f"cannot publish a blob: {exc.strerror or exc}") from None

    def discard(self, staged: StagedBlob) -> None:
        """Drop a staged temp file that will not be published."""
        discard_staged(staged)

    def exists(self, sha256: str, size: int) -> bool:
        """True when the blob file is there with the expected size."""
        return self.fingerprint(sha256, size) is not None

    def fingerprint(
        self, sha256: str, size: int, recheck: bool = True
    ) -> tuple[int, int, int, int] | None:
        """(inode, size, mtime, ctime) of a blob file of the expected size, else None (a stat
        is cheap: ``recheck`` makes no difference here)."""
        try:
            st = self.path_of(sha256).stat()
        except OSError:
            return None
        if st.st_size != size:
            return None
        return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns

    def verify(self, sha256: str, digests: bytes) -> bool:
        """True when every block of the blob matches its recorded digest."""
        bs = self.block_size
        try:
            with open(self.path_of(sha256), "rb", buffering=0) as f:
                index = 0
                while True:
                    block = f.read(bs)
                    if not block:
                        return index * 8 == len(digests)
                    if block_digest(block) != digests[index * 8 : index * 8 + 8]:
                        return False
                    index += 1
        except OSError:
            return False

    def read(
        self,
        sha256: str,
        offset: int,
        length: int,
        digests: bytes,
        mark: tuple[int, int, int, int] | None = None,
    ) -> bytes:
        """Read ``[offset, offset+length)``, verifying every block it touches (``mark`` is
        for stores whose reads can tell it; a file's is its stat, checked before)."""
        if length == 0:
            return b""
        bs = self.block_size
        first, last = offset // bs, (offset + length - 1) // bs
        try:
            with open(self.path_of(sha256), "rb", buffering=0) as f:
                data = os.pread(f.fileno(), (last - first + 1) * bs, first * bs)
        except FileNotFoundError:
            raise NotFound("artifact not found") from None
        return checked_range(data, first, offset, length, digests, bs, "on disk")

    def hash_blob(self, sha256: str) -> tuple[str, int] | None:
        """Re-hash a blob file in full: ``(sha256, size)``, or None if it is gone."""
        try:
            with open(self.path_of(sha256), "rb", buffering=0) as f:
                h = hashlib.file_digest(f, "sha256")
                return h.hexdigest(), f.tell()
        except FileNotFoundError:
            return None

    def delete(self, sha256: str) -> None:
        """Remove a blob file (missing is fine)."""
        self.path_of(sha256).unlink(missing_ok=True)

    def quarantine(self, sha256: str) -> None:
        """Move a blob whose bytes no longer match out of the served tree."""
        src = self.path_of(sha256)
        try:
            os.replace(src, self.quarantine_dir / f"{sha256}.{secrets.token_hex(4)}")
        except FileNotFoundError:
            pass

    def quarantined(self) -> int:
        """How many withdrawn blobs are kept aside."""
        return sum(1 for _ in self.quarantine_dir.iterdir())

    def iter_blobs(self, older_than_us: int | None = None) -> Iterator[str]:
        """Every blob name present in the shards (only well-formed names), or only those last
        written before ``older_than_us``."""
        for first in sorted(self.root.iterdir()):
            if first.name == ".tmp" or not first.is_dir():
                continue
            for second in sorted(first.iterdir()):
                if not second.is_dir():
                    continue
                for entry in sorted(second.iterdir()):
                    name = entry.name
                    if not (
                        is_sha256(name) and name[:2] == first.name and name[2:4] == second.name
                    ):
                        continue  # a stray, for iter_strays
                    if older_than_us is None or _mtime_us(entry) < older_than_us:
                        yield name

    def iter_strays(self) -> Iterator[str]:
        """Files in the shard tree whose name is not where their SHA-256 says (paths relative
        to the blob directory)."""
        for first in self.root.iterdir():
            if first.name in (".tmp", ".store-id"):  # temp files; the directory's own id
                continue
            if not first.is_dir():
                yield first.name
                continue
            for second in first.iterdir():
                if not second.is_dir():
                    yield f"{first.name}/{second.name}"
                    continue
                for entry in second.iterdir():
                    if (
                        not is_sha256(entry.name)
                        or entry.name[:2] != first.name
                        or (entry.name[2:4] != second.name)
                    ):
                        yield f"{first.name}/{second.name}/{entry.name}"

    def remove_stray(self, name: str) -> None:
        """Remove one stray that ``iter_strays`` named (a directory with what is in it)."""
        path = self.root / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)

    def iter_temp(self) -> Iterator[Path]:
        """Temp files of registrations (stale once no registration runs)."""
        yield from self.tmp_dir.iterdir()

    def close(self) -> None:
        """Nothing to release for a directory."""


def _mtime_us(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns // 1000
    except OSError:
        return 0

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


@dataclass(frozen=True)
class StagedBlob:
    """Bytes written and fsynced to a temp file, hashed, not yet published."""

    temp_path: Path
    sha256: str
    size: int
    block_digests: bytes


class BlobStore(Protocol):
    """What the artifact store needs from a byte store (a directory, or S3 later)."""

    def stage(self, source: bytes | BinaryIO) -> StagedBlob: ...
    def publish(self, staged: StagedBlob) -> None: ...
    def discard(self, staged: StagedBlob) -> None: ...
    def fingerprint(self, sha256: str, size: int) -> tuple[int, int, int, int] | None: ...
    def verify(self, sha256: str, digests: bytes) -> bool: ...
    def read(self, sha256: str, offset: int, length: int, digests: bytes) -> bytes: ...
    def exists(self, sha256: str, size: int) -> bool: ...
    def delete(self, sha256: str) -> None: ...
    def quarantine(self, sha256: str) -> None: ...
    def hash_blob(self, sha256: str) -> tuple[str, int] | None: ...
    def iter_blobs(self) -> Iterator[str]: ...
    def iter_temp(self) -> Iterator[Path]: ...


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
    """Blob files in a private, hash-sharded directory."""

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
        temp = self.tmp_dir / f"{_TMP_PREFIX}{secrets.token_hex(12)}"
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as exc:
            raise StorageError(f"cannot create a blob: {exc.strerror}") from None
        sha = hashlib.sha256()
        digests = bytearray()
        size = 0

        def hash_chunk(chunk: memoryview) -> None:
            sha.update(chunk)
            for start in range(0, len(chunk), self.block_size):
                digests.extend(block_digest(chunk[start : start + self.block_size]))

        try:
            for chunk in self._chunks(source):
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

    def _chunks(self, source: bytes | BinaryIO) -> Iterator[memoryview]:
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
            os.replace(staged.temp_path, final)
            checkpoint("publish.renamed")
            _fsync_dir(final.parent)
        except OSError as exc:
            staged.temp_path.unlink(missing_ok=True)
            raise StorageError(f"cannot publish a blob: {exc.strerror or exc}") from None

    def discard(self, staged: StagedBlob) -> None:
        """Drop a staged temp file that will not be published."""
        staged.temp_path.unlink(missing_ok=True)

    def exists(self, sha256: str, size: int) -> bool:
        """True when the blob file is there with the expected size."""
        return self.fingerprint(sha256, size) is not None

    def fingerprint(self, sha256: str, size: int) -> tuple[int, int, int, int] | None:
        """(inode, size, mtime, ctime) of a blob file of the expected size, else None."""
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

    def read(self, sha256: str, offset: int, length: int, digests: bytes) -> bytes:
        """Read ``[offset, offset+length)``, verifying every block it touches."""
        if length == 0:
            return b""
        bs = self.block_size
        first, last = offset // bs, (offset + length - 1) // bs
        try:
            with open(self.path_of(sha256), "rb", buffering=0) as f:
                data = os.pread(f.fileno(), (last - first + 1) * bs, first * bs)
        except FileNotFoundError:
            raise NotFound("artifact not found") from None
        for i in range(last - first + 1):
            block = memoryview(data)[i * bs : (i + 1) * bs]
            want = digests[(first + i) * 8 : (first + i + 1) * 8]
            if len(want) != 8 or block_digest(block) != want:
                raise IntegrityError("artifact bytes changed on disk")
        start = offset - first * bs
        out = data[start : start + length]
        if len(out) != length:
            raise IntegrityError("artifact bytes changed on disk")
        return out

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

    def iter_blobs(self) -> Iterator[str]:
        """Every blob name present in the shards (only well-formed names)."""
        for first in sorted(self.root.iterdir()):
            if first.name == ".tmp" or not first.is_dir():
                continue
            for second in sorted(first.iterdir()):
                if not second.is_dir():
                    continue
                for entry in sorted(second.iterdir()):
                    name = entry.name
                    if is_sha256(name) and name[:2] == first.name and name[2:4] == second.name:
                        yield name  # anything else is a stray, for iter_strays

    def iter_strays(self) -> Iterator[Path]:
        """Files in the shard tree whose name is not where their SHA-256 says."""
        for first in self.root.iterdir():
            if first.name in (".tmp", ".store-id"):  # temp files; the directory's own id
                continue
            if not first.is_dir():
                yield first
                continue
            for second in first.iterdir():
                if not second.is_dir():
                    yield second
                    continue
                for entry in second.iterdir():
                    if (
                        not is_sha256(entry.name)
                        or entry.name[:2] != first.name
                        or (entry.name[2:4] != second.name)
                    ):
                        yield entry

    def iter_temp(self) -> Iterator[Path]:
        """Temp files of registrations (stale once no registration runs)."""
        yield from self.tmp_dir.iterdir()

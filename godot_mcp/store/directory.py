"""The object store of one host: a private, hash-sharded directory.

A blob named by its SHA-256 is the plain file ``ab/cd/<sha256>`` of the raw bytes;
directories are 0700, files 0600; temp files live in ``.tmp`` (same filesystem, so
publishing is a rename, then an fsync of the shard directory). Withdrawn files are moved to
a quarantine directory beside it. A file's version is its identity (inode, size, mtime,
ctime): publishing again renames another file in.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

from godot_mcp.errors import NotFound, StorageError
from godot_mcp.store.failures import os_error
from godot_mcp.store.faults import checkpoint
from godot_mcp.store.objects import Area, Listed, Recorded, Upload, Version
from godot_mcp.store.shared import claim_location, directory_location

_SKIPPED = (".tmp", ".store-id")  # temp files; the directory's own id (store/shared.py)


def mkdir_private(path: Path) -> None:
    """Make ``path`` (and missing parents) a 0700 directory."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path, 0o700)


def fsync_dir(path: Path) -> None:
    """Make a directory's entries durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _is_sha256(name: str) -> bool:
    return len(name) == 64 and all(c in "0123456789abcdef" for c in name)


def _version(st: os.stat_result) -> Version:
    return Version(st.st_size, f"{st.st_ino}.{st.st_mtime_ns}.{st.st_ctime_ns}")


class PrivateStaging:
    """Temp files in ``staging``, a private directory of this host."""

    staging: Path

    def temp_path(self) -> Path:
        """A fresh name for a temp file."""
        return self.staging / f"stage-{secrets.token_hex(12)}"

    def temps(self) -> Iterator[Path]:
        """The temp files there now (those left behind, once nothing stages)."""
        yield from self.staging.iterdir()


class DirectoryObjects(PrivateStaging):
    """Objects as files of a private directory (one host's; the local lock guards it)."""

    shared = False
    memory_stage = 0  # publishing is a rename: bytes are always staged to a file

    def __init__(self, root: Path, quarantine_dir: Path) -> None:
        self.root = root
        self.staging = root / ".tmp"
        self.quarantine_dir = quarantine_dir
        mkdir_private(self.staging)
        mkdir_private(quarantine_dir)
        if not (root / "ff").is_dir():  # first shard level made once, not on the write path
            for i in range(256):
                mkdir_private(root / f"{i:02x}")
            fsync_dir(root)

    def claim(self, recorded: Recorded) -> None:
        """A directory is named by the random id kept in it (``shared.directory_location``)."""
        claim_location(recorded, directory_location(self.root))

    def path_of(self, name: str) -> Path:
        """The file of a blob (a SHA-256's shard), or of a stray ``list`` named (``./path``)."""
        if _is_sha256(name):
            return self.root / name[:2] / name[2:4] / name
        parts = name.removeprefix("./").split("/")
        if not name.startswith("./") or any(p in ("", ".", "..") for p in parts):
            raise NotFound("artifact not found")
        return self.root.joinpath(*parts)

    def put(self, name: str, upload: Upload) -> Version:
        """Rename the staged temp file into its shard and fsync the directory (replacing a
        file of the same name is safe: same name, same bytes)."""
        final = self.path_of(name)
        temp = upload.path
        try:
            if temp is None:  # bytes in memory: staged here first, to publish by rename
                temp = self.staging / f"put-{secrets.token_hex(12)}"
                with open(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
                    f.write(upload.data or b"")
                    os.fsync(f.fileno())
            if not final.parent.is_dir():
                mkdir_private(final.parent.parent)
                mkdir_private(final.parent)
                fsync_dir(final.parent.parent)
                fsync_dir(final.parent.parent.parent)
            os.replace(temp, final)
            checkpoint("publish.renamed")
            fsync_dir(final.parent)
            return _version(final.stat())
        except OSError as exc:
            if temp is not None:
                temp.unlink(missing_ok=True)
            raise os_error("cannot publish a blob", exc) from None

    def get_range(self, name: str, offset: int, length: int) -> tuple[bytes, Version]:
        """Up to ``length`` bytes from ``offset``, and the version of the file they came from."""
        try:
            with open(self.path_of(name), "rb", buffering=0) as f:
                version = _version(os.fstat(f.fileno()))
                return os.pread(f.fileno(), length, offset), version
        except FileNotFoundError:
            raise NotFound("artifact not found") from None
        except OSError as exc:
            raise os_error("cannot read a blob", exc) from None

    def head(self, name: str) -> Version | None:
        """The file's version, or None when it is not there (a stat: cheap). A file that
        cannot be looked at raises: it never counts as missing."""
        try:
            return _version(self.path_of(name).stat())
        except NotFound:
            return None
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise os_error("cannot look at a blob", exc) from None

    def delete(self, name: str) -> None:
        """Remove a file (a stray directory with what is in it, a stray link itself, never
        what it points to); missing is fine."""
        path = self.path_of(name)
        try:
            self._inside(path)
            if path.is_symlink() or not path.is_dir():
                path.unlink(missing_ok=True)
            else:
                shutil.rmtree(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise os_error("cannot remove a blob", exc) from None

    def move_aside(self, name: str) -> None:
        """Move a file out of the served tree into the quarantine directory."""
        try:
            os.replace(self.path_of(name), self.quarantine_dir / f"{name}.{secrets.token_hex(4)}")
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise os_error("cannot set a blob aside", exc) from None

    def _inside(self, path: Path) -> None:
        """Refuse a path whose directories (below the root) are links: removing through one
        would reach outside the blob directory."""
        for parent in path.relative_to(self.root).parents:
            if parent != Path(".") and (self.root / parent).is_symlink():
                raise StorageError("a blob path runs through a link")

    def list(self, area: Area) -> Iterator[Listed]:
        """Every entry of an area. In ``blobs``, a file where its SHA-256 says is named by it;
        anything else in the shard tree by its path, ``./ab/cd/x`` (a stray for the layer
        above: never a SHA-256, even where a file of that name lies elsewhere). Links are
        never followed: a link is itself the stray."""
        try:
            if area == "quarantine":
                for entry in _entries(self.quarantine_dir):
                    yield Listed(entry.name, _mtime_us(entry))
                return
            for first in _entries(self.root):
                if first.name in _SKIPPED:
                    continue
                if not first.is_dir(follow_symlinks=False):
                    yield Listed(f"./{first.name}", _mtime_us(first))
                    continue
                for second in _entries(Path(first.path)):
                    if not second.is_dir(follow_symlinks=False):
                        yield Listed(f"./{first.name}/{second.name}", _mtime_us(second))
                        continue
                    for entry in _entries(Path(second.path)):
                        name = entry.name
                        placed = (
                            _is_sha256(name)
                            and (name[:2], name[2:4]) == (first.name, second.name)
                            and not entry.is_symlink()
                        )
                        shown = name if placed else f"./{first.name}/{second.name}/{name}"
                        yield Listed(shown, _mtime_us(entry))
        except OSError as exc:
            raise os_error("cannot list the blob store", exc) from None

    def close(self) -> None:
        """Nothing to release for a directory."""


def _entries(path: Path) -> list[os.DirEntry[str]]:
    with os.scandir(path) as it:
        return sorted(it, key=lambda e: e.name)


def _mtime_us(entry: os.DirEntry[str]) -> int:
    try:
        return entry.stat(follow_symlinks=False).st_mtime_ns // 1000
    except OSError:
        return 0

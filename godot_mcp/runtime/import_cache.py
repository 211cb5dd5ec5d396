"""What the engine's import wrote into a private copy of a project, kept for later copies.

A test run imports its copy of the project before the tests run (Godot 4 always, Godot 3 a
never-imported project's). The import reads the copy's files, so what it writes follows from
them and from the engine: this cache keeps what one import wrote, under a key that hashes
every file of the copy as the import found it (its path and its bytes), every folder, and the
engine's identity; a later copy whose files hash to the same key is given those writes instead
of an engine run. The project's generation plays no part. Layout, in the server's private state
dir::

    imports/                            0700
        <key>/                          one entry (64 hex digits), published by one rename
            manifest.json               what the import did to the copy: the files it wrote
                                        (path, size, SHA-256, mode, mtime), the folders it
                                        made, the paths it removed
            files/…                     the files it wrote, at their paths in the copy
        .partial-<pid>-<start>-<rand>/  an entry being written
        .trash-<pid>-<start>-<rand>/    an entry being removed

- **Taken before any test code runs.** :meth:`ImportCache.capture` reads the copy right after
  the import's engine has ended and before the runner starts, so nothing a test writes into
  its copy (its ``.godot/``, its ``*.import``) can reach the cache.
- **Published whole or not at all.** An entry is written into a partial dir, its manifest last,
  and renamed to its key. A kill -9 mid-write leaves a partial dir, never an entry; partial dirs
  whose owner (pid and start time) is gone are swept with the other scratch (:func:`sweep`).
  When two runs publish the same key, the second rename fails and that copy is dropped.
- **Read as untrusted.** Nothing in the cache is followed through a link: the entry, its
  ``files/`` and every file in it are opened one component at a time with ``O_NOFOLLOW``, and
  every file's SHA-256 and size are checked while it is copied. An entry that is not exactly what
  its manifest says is removed (a link itself, never what it points to), and the run imports.
- **Bounded.** At most ``max_entries`` entries and ``max_bytes`` of files; the least recently
  used go first. An entry being read holds a shared ``flock``; eviction takes it exclusively
  without waiting and passes over an entry in use.

Blocking throughout (hashing, copying, walking): call from a worker thread.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import stat
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from godot_mcp.engine.project import tree
from godot_mcp.runtime.owner import alive, me
from godot_mcp.store.blobs import is_sha256
from godot_mcp.store.faults import checkpoint

__all__ = [
    "MAX_BYTES",
    "MAX_ENTRIES",
    "Applied",
    "CacheStats",
    "Held",
    "ImportCache",
    "Snapshot",
    "sweep",
]

FORMAT = 1  # bump when the key or the entry's layout changes
MAX_ENTRIES = 16
MAX_BYTES = 1 << 30
MANIFEST = "manifest.json"
FILES = "files"
PARTIAL = ".partial-"
TRASH = ".trash-"
_MAX_MANIFEST = 64 << 20
_MAX_PATHS = 250_000
_CHUNK = 1 << 20
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NOT_A_FOLDER = -1  # what _open_entry answers for a link or a file named as an entry

Applied = Literal["reused", "absent", "spoiled"]


@dataclass(frozen=True)
class Held:
    """A file of the copy as the snapshot found it: its bytes' SHA-256 and size, and the
    ``(inode, size, mtime, ctime)`` that tells, after the import, whether it was written."""

    size: int
    digest: str
    sig: tuple[int, int, int, int]


@dataclass(frozen=True)
class Snapshot:
    """A copy before its import: its key, its files and its folders (relative paths)."""

    key: str
    files: Mapping[str, Held]
    dirs: frozenset[str]


@dataclass
class CacheStats:
    """What the cache did in this process: copies given an entry (``reused``), lookups that
    found none usable (``absent``), entries that failed their checks after a copy was changed
    (``spoiled``), entries published (``kept``) and entries removed (``dropped``: unusable or
    evicted)."""

    reused: int = 0
    absent: int = 0
    spoiled: int = 0
    kept: int = 0
    dropped: int = 0


@dataclass
class ImportCache:
    """The import cache in ``root`` (made when first written)."""

    root: Path
    max_entries: int = MAX_ENTRIES
    max_bytes: int = MAX_BYTES
    stats: CacheStats = field(default_factory=CacheStats)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # -- the key -------------------------------------------------------------------------

    def snapshot(self, copy: Path, identity: str) -> Snapshot | None:
        """Hash the copy as the import will find it; ``identity`` names the engine and how it
        imports (:func:`godot_mcp.features.importer.copies.engine_identity`). ``None`` when the
        copy holds anything but files and folders (a copy made by ``tree.copy`` never does)
        or cannot be read whole."""
        try:
            return _snapshot(copy, identity)
        except OSError:
            return None

    # -- reading an entry ------------------------------------------------------------------

    def apply(self, snap: Snapshot, copy: Path) -> Applied:
        """Give ``copy`` (as ``snap`` found it) what the import wrote when an entry has its
        key: ``reused``; ``absent`` when none is usable (the copy is untouched); ``spoiled``
        when the entry turned out bad after the copy was changed (make the copy again)."""
        root = self._open_root(create=False)
        if root is None:
            return self._count("absent")
        try:
            return self._apply(root, snap.key, copy)
        except OSError:  # the disk failed a read: the copy may have been changed
            return self._count("spoiled")
        finally:
            os.close(root)

    def _apply(self, root: int, key: str, copy: Path) -> Applied:
        entry = _open_entry(root, key)
        if entry is None or entry == _NOT_A_FOLDER:
            if entry == _NOT_A_FOLDER:
                self._drop(root, key)  # a link is removed, never followed
            return self._count("absent")
        outcome: Applied = "absent"  # a manifest that does not read changed nothing
        try:
            manifest = _read_manifest(entry, key)
            files = _open_dir(entry, FILES) if manifest is not None else None
            if manifest is not None and files is not None:
                try:
                    with contextlib.suppress(OSError):
                        os.utime(entry)  # used now: the last to be evicted
                    outcome = "reused" if _give(files, manifest, copy) else "spoiled"
                finally:
                    os.close(files)
        finally:
            os.close(entry)  # and its lock
        if outcome != "reused":
            self._drop(root, key)
        return self._count(outcome)

    # -- publishing an entry ---------------------------------------------------------------

    def capture(self, snap: Snapshot, copy: Path) -> bool:
        """Keep what the import wrote into ``copy`` (which ``snap`` saw before it) under
        ``snap``'s key; call after the import's engine ended and before anything else runs
        in the copy. ``False`` when nothing was kept: the import left a link or a special
        file, its output exceeds the cache, or the key was published meanwhile."""
        root = self._open_root(create=True)
        if root is None:
            return False
        try:
            if _exists(root, snap.key):
                return False
            made = _changes(snap, copy)
            if made is None or made[0]["bytes"] > self.max_bytes:
                return False
            manifest, written = made
            kept = self._publish(root, snap.key, copy, manifest, written)
            if kept:
                self._count("kept")
                self._evict(root, keep=snap.key)
            return kept
        finally:
            os.close(root)

    def _publish(
        self,
        root: int,
        key: str,
        copy: Path,
        manifest: dict[str, Any],
        written: list[str],
    ) -> bool:
        partial = PARTIAL + _owner_tag()
        os.mkdir(partial, 0o700, dir_fd=root)
        try:
            entry = os.open(partial, _DIR, dir_fd=root)
            try:
                os.mkdir(FILES, 0o700, dir_fd=entry)
                files = os.open(FILES, _DIR, dir_fd=entry)
                try:
                    for rel, row in zip(written, manifest["files"], strict=True):
                        if not _keep_file(copy / rel, files, rel, row):
                            return False
                        checkpoint("import-cache-file")
                finally:
                    os.close(files)
                data = json.dumps(manifest, separators=(",", ":")).encode()
                _write_new(entry, MANIFEST, data)
            finally:
                os.close(entry)
            checkpoint("import-cache-publish")
            try:
                os.rename(partial, key, src_dir_fd=root, dst_dir_fd=root)
            except OSError as exc:  # another run published this key first
                if exc.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.EISDIR, errno.ENOTDIR):
                    return False
                raise
            partial = ""
            return True
        finally:
            if partial:
                tree.remove(self.root / partial)

    # -- bounds ----------------------------------------------------------------------------

    def _evict(self, root: int, keep: str = "") -> None:
        """Remove the least recently used entries past the bounds (never ``keep``, nor an
        entry in use)."""
        rows: list[tuple[int, str, int]] = []
        for name in _names(root):
            if not is_sha256(name):
                continue
            fd = _open_dir(root, name)
            if fd is None:  # a link or a file where an entry belongs
                tree.remove(self.root / name)
                continue
            try:
                used = os.fstat(fd).st_mtime_ns
                read = _read_manifest(fd, name)
            finally:
                os.close(fd)
            if read is None:
                self._drop(root, name)
                continue
            rows.append((used, name, int(read["bytes"])))
        rows.sort(reverse=True)
        count = total = 0
        for _used, name, size in rows:
            if name == keep or (count < self.max_entries and total + size <= self.max_bytes):
                count, total = count + 1, total + size
                continue
            self._drop(root, name)

    def _drop(self, root: int, name: str) -> None:
        """Remove the entry ``name`` unless someone reads it: renamed aside, then removed."""
        try:
            fd = os.open(name, _DIR, dir_fd=root)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                tree.remove(self.root / name)  # the link itself
                self._count("dropped")
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return  # being read: left for a later pass
            aside = TRASH + _owner_tag()
            try:
                os.rename(name, aside, src_dir_fd=root, dst_dir_fd=root)
            except OSError:
                return
        finally:
            os.close(fd)
        self._count("dropped")
        tree.remove(self.root / aside)

    def entries(self) -> list[str]:
        """The keys of the entries published (for tests and the admin)."""
        root = self._open_root(create=False)
        if root is None:
            return []
        try:
            return sorted(n for n in _names(root) if is_sha256(n))
        finally:
            os.close(root)

    # -- helpers ---------------------------------------------------------------------------

    def _open_root(self, create: bool) -> int | None:
        """The cache dir, opened without following a link; ``None`` when it is missing (and
        not to be made) or is anything but a folder."""
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(self.root, 0o700)
        try:
            return os.open(self.root, _DIR)
        except OSError:
            return None

    def _count(self, what: Applied | Literal["kept", "dropped"]) -> Any:
        with self._lock:
            setattr(self.stats, what, getattr(self.stats, what) + 1)
        return what


def sweep(root: Path) -> int:
    """Remove what killed servers left in the cache dir ``root`` (partial entries, entries
    being removed) and anything that is not an entry (a link, a stray file); returns how many.
    A live server's partial entry is left alone."""
    try:
        fd = os.open(root, _DIR)
    except OSError:
        return 0
    removed = 0
    try:
        for name in _names(fd):
            owned = name.startswith((PARTIAL, TRASH))
            if is_sha256(name) and _open_is_dir(fd, name):
                continue
            if owned and _owner_alive(name):
                continue
            tree.remove(root / name)
            removed += 1
    finally:
        os.close(fd)
    return removed


# -- the copy, before and after its import -------------------------------------------------


def _snapshot(copy: Path, identity: str) -> Snapshot | None:
    walked = _walk(copy)
    if walked is None:
        return None
    files, dirs = walked
    digest = hashlib.sha256(f"godot-mcp import cache {FORMAT}\0{identity}\0".encode())
    held: dict[str, Held] = {}
    for rel in sorted([*files, *dirs], key=os.fsencode):
        name = os.fsencode(rel)
        if rel in dirs:
            digest.update(b"D" + name + b"\0")
            continue
        got = _hash_file(copy / rel)
        if got is None:
            return None
        held[rel] = got
        digest.update(b"F" + name + b"\0%d\0" % got.size + bytes.fromhex(got.digest))
    return Snapshot(digest.hexdigest(), held, frozenset(dirs))


def _walk(top: Path) -> tuple[dict[str, os.stat_result], set[str]] | None:
    """Every file (with its ``lstat``) and folder below ``top``, relative; ``None`` when
    anything else is there (a link, a FIFO, a socket, a device)."""
    files: dict[str, os.stat_result] = {}
    dirs: set[str] = set()
    stack = [""]
    while stack:
        rel = stack.pop()
        with os.scandir(top / rel if rel else top) as found:
            for item in found:
                path = f"{rel}/{item.name}" if rel else item.name
                st = item.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    dirs.add(path)
                    stack.append(path)
                elif stat.S_ISREG(st.st_mode):
                    files[path] = st
                else:
                    return None
        if len(files) + len(dirs) > _MAX_PATHS:
            return None
    return files, dirs


def _hash_file(path: Path) -> Held | None:
    try:
        fd = os.open(path, _READ)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        digest = hashlib.file_digest(f, "sha256").hexdigest()
        st = os.fstat(fd)
    return Held(st.st_size, digest, _sig(st))


def _sig(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _changes(snap: Snapshot, copy: Path) -> tuple[dict[str, Any], list[str]] | None:
    """What the import did to ``copy`` since ``snap``: the manifest without its files' digests
    (filled as they are kept) and the paths of the files written; ``None`` when the import left
    anything but files and folders."""
    walked = _walk(copy)
    if walked is None:
        return None
    files, dirs = walked
    before = set(snap.files) | snap.dirs
    gone = sorted(
        (
            p
            for p in before
            if (p in snap.dirs and p not in dirs) or (p in snap.files and p not in files)
        ),
        key=os.fsencode,
    )
    removed: list[str] = []
    for rel in gone:  # a removed folder takes what it held with it
        if not any(rel.startswith(r + "/") for r in removed[-1:]):
            removed.append(rel)
    made = sorted((p for p in dirs if p not in snap.dirs), key=os.fsencode)
    written: list[str] = []
    rows: list[list[Any]] = []
    total = 0
    for rel in sorted(files, key=os.fsencode):
        st = files[rel]
        held = snap.files.get(rel)
        if held is not None and held.sig == _sig(st):
            continue  # not written since the snapshot
        if held is not None:
            now = _hash_file(copy / rel)
            if now is None:
                return None
            if (now.size, now.digest) == (held.size, held.digest):
                continue  # rewritten with the same bytes
        written.append(rel)
        rows.append([rel, st.st_size, "", stat.S_IMODE(st.st_mode), st.st_mtime_ns])
        total += st.st_size
    modes = [[rel, stat.S_IMODE(os.lstat(copy / rel).st_mode)] for rel in made]
    manifest = {
        "format": FORMAT,
        "key": snap.key,
        "removed": removed,
        "dirs": modes,
        "files": rows,
        "bytes": total,
    }
    return manifest, written


def _keep_file(source: Path, files: int, rel: str, row: list[Any]) -> bool:
    """Copy the copy's file ``rel`` into the entry's ``files`` dir, its digest into ``row``;
    ``False`` when it is no longer the regular file the walk saw."""
    try:
        src = os.open(source, _READ)
    except OSError:
        return False
    try:
        st = os.fstat(src)
        if not stat.S_ISREG(st.st_mode) or st.st_size != row[1]:
            return False
        *parents, name = rel.split("/")
        at = _make_dirs(files, parents)
        try:
            out = os.open(
                name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=at
            )
        finally:
            if at != files:
                os.close(at)
        try:
            digest = hashlib.sha256()
            done = 0
            while chunk := os.read(src, _CHUNK):
                digest.update(chunk)
                _write_all(out, chunk)
                done += len(chunk)
        finally:
            os.close(out)
        if done != row[1]:
            return False
        row[2] = digest.hexdigest()
        return True
    finally:
        os.close(src)


# -- giving a copy an entry ----------------------------------------------------------------


def _give(files: int, manifest: dict[str, Any], copy: Path) -> bool:
    """Apply the entry's manifest to ``copy``, each file checked while it is copied;
    ``False`` at the first thing that is not as the manifest says."""
    try:
        for rel in manifest["removed"]:
            tree.remove(copy / rel)
        for rel, mode in manifest["dirs"]:
            target = copy / rel
            try:
                os.mkdir(target, 0o700)
            except FileExistsError:
                if not stat.S_ISDIR(os.lstat(target).st_mode):
                    return False
            os.chmod(target, (mode | 0o700) & 0o777)
        for rel, size, digest, mode, mtime in manifest["files"]:
            if not _give_file(files, rel, copy / rel, size, digest, mode, mtime):
                return False
    except OSError:
        return False
    return True


def _give_file(
    files: int, rel: str, target: Path, size: int, digest: str, mode: int, mtime: int
) -> bool:
    src = _open_below(files, rel)
    if src is None:
        return False
    try:
        if not stat.S_ISREG(os.fstat(src).st_mode):
            return False
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        out = os.open(target, flags, 0o600)
        try:
            got = hashlib.sha256()
            done = 0
            while chunk := os.read(src, min(_CHUNK, size - done + 1)):
                done += len(chunk)
                if done > size:
                    return False
                got.update(chunk)
                _write_all(out, chunk)
            if done != size or got.hexdigest() != digest:
                return False
            os.fchmod(out, (mode | 0o600) & 0o777)
            os.utime(out, ns=(mtime, mtime))
        finally:
            os.close(out)
        return True
    finally:
        os.close(src)


def _read_manifest(entry: int, key: str) -> dict[str, Any] | None:
    """The entry's manifest, checked in shape (every path plain and relative); ``None`` when
    it is missing, a link, too large, or not what this cache writes."""
    fd = _open_below(entry, MANIFEST)
    if fd is None:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_MANIFEST:
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(_MAX_MANIFEST + 1)
    finally:
        os.close(fd)
    if len(data) > _MAX_MANIFEST:
        return None
    try:
        manifest = json.loads(data)
        ok = (
            manifest["format"] == FORMAT
            and manifest["key"] == key
            and all(_plain(p) for p in manifest["removed"])
            and all(_plain(p) and _int(m) for p, m in manifest["dirs"])
            and all(
                _plain(p)
                and _int(s)
                and isinstance(d, str)
                and is_sha256(d)
                and _int(m)
                and _int(t)
                for p, s, d, m, t in manifest["files"]
            )
            and len(manifest["files"]) + len(manifest["dirs"]) <= _MAX_PATHS
            and manifest["bytes"] == sum(row[1] for row in manifest["files"])
        )
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None
    return manifest if ok else None


def _plain(rel: object) -> bool:
    """A relative path of plain names: no ``..``, no empty part, no leading ``/``."""
    if not isinstance(rel, str) or not rel or "\0" in rel:
        return False
    return all(p not in ("", ".", "..") for p in rel.split("/"))


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# -- descriptors, never through a link -------------------------------------------------------


def _open_entry(root: int, key: str) -> int | None:
    """The entry ``key``, opened and locked shared; ``None`` when it is absent or being
    removed, ``_NOT_A_FOLDER`` when a link or a file has its name (not followed)."""
    try:
        fd = os.open(key, _DIR, dir_fd=root)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            return _NOT_A_FOLDER
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        st = os.stat(key, dir_fd=root, follow_symlinks=False)
        if (st.st_dev, st.st_ino) == _dev_ino(os.fstat(fd)):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def _dev_ino(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _open_dir(at: int, name: str) -> int | None:
    try:
        return os.open(name, _DIR, dir_fd=at)
    except OSError:
        return None


def _open_is_dir(at: int, name: str) -> bool:
    fd = _open_dir(at, name)
    if fd is None:
        return False
    os.close(fd)
    return True


def _open_below(at: int, rel: str) -> int | None:
    """``rel`` below the folder ``at``, each step opened without following a link and a FIFO
    never waited on; ``None`` when it is not there or a step is a link."""
    *parents, name = rel.split("/")
    fd = at
    try:
        for part in parents:
            step = os.open(part, _DIR, dir_fd=fd)
            if fd != at:
                os.close(fd)
            fd = step
        return os.open(name, _READ, dir_fd=fd)
    except OSError:
        return None
    finally:
        if fd != at:
            os.close(fd)


def _make_dirs(at: int, parts: list[str]) -> int:
    """The folder ``at/parts…``, made where missing (0700), opened without following a link;
    the caller closes it unless it is ``at``."""
    fd = at
    for part in parts:
        with contextlib.suppress(FileExistsError):
            os.mkdir(part, 0o700, dir_fd=fd)
        try:
            step = os.open(part, _DIR, dir_fd=fd)
        finally:
            if fd != at:
                os.close(fd)
        fd = step
    return fd


def _write_new(at: int, name: str, data: bytes) -> None:
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=at)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _exists(root: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=root, follow_symlinks=False)
    except OSError:
        return False
    return True


def _names(root: int) -> Iterator[str]:
    try:
        yield from os.listdir(root)
    except OSError:
        return


def _owner_tag() -> str:
    pid, start = me()
    return f"{pid}-{start}-{os.urandom(6).hex()}"


def _owner_alive(name: str) -> bool:
    parts = name.split("-")  # .partial or .trash, pid, start ticks, random
    return len(parts) == 4 and parts[1].isdigit() and alive(int(parts[1]), parts[2])

"""A private, link-free copy of a project: what exports (and checks) run Godot on.

A project may hold symbolic links. Godot follows them, so a link is judged where the project
is, never where a copy of it lands::

    target normalized at the link's place      what happens
    ─────────────────────────────────────────  ──────────────────────────────────────────────
    outside the project (absolute or ``..``)   refused (LinkOutside), existing or dangling
    a loop (ELOOP), or a folder holding it      refused (LinkLoop)
    inside, dangling                            left out: Godot finds nothing there either
    inside, a file                              copied as a plain file with the target's bytes
    inside, a folder                            copied as a plain folder, its links judged again

So the copy holds no link at all: nothing in it can re-point from its new place. A refusal
names the work refused (``reader``: "exports read the project only", "imports …", "checks …",
"test runs …", "reloads …"). A plan made with ``leave_out`` refuses nothing: links out and
loops are left out and listed (``Plan.left_out``), for work that must refuse only what reaches
one (a reload). ``plan``
walks the project once and decides everything before a byte is copied; ``copy`` then opens
every source from a descriptor of the project root, one component at a time with
``O_NOFOLLOW``, so a file swapped for a link after the plan fails the copy instead of being
followed. Sockets, FIFOs and devices are skipped (not project content, and a FIFO would block
the copy). VCS folders (``.git``, ``.hg``, ``.svn``) are not copied.

Errors (each with ``res_path`` and a one-line ``message`` naming no filesystem path)::

    TreeError(Exception)
     ├── LinkOutside     a link leads out of the project
     ├── LinkLoop        a link loops, or a folder link contains itself
     ├── TooManyEntries  more than MAX_ENTRIES files and folders, or nested over MAX_DEPTH
     └── TreeChanged     the project changed between plan and copy
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from godot_mcp.errors import InvalidArgument, quoted

__all__ = [
    "EXPORTS",
    "MAX_ENTRIES",
    "LinkLoop",
    "LinkOutside",
    "Plan",
    "TooManyEntries",
    "TreeChanged",
    "TreeError",
    "copy",
    "disk_full",
    "link_outside",
    "plan",
    "read_below",
    "read_file",
    "remove",
]

MAX_ENTRIES = 250_000
MAX_DEPTH = 128
EXPORTS = "exports"  # the work a refusal names: "exports read the project only"
VCS_DIRS = frozenset({".git", ".hg", ".svn"})
_CHUNK = 1 << 20


class TreeError(InvalidArgument):
    """The project cannot be copied as it is; ``res_path`` names the entry (a refusal of the
    request, in the one error tree)."""

    def __init__(self, res_path: str, message: str) -> None:
        super().__init__(message)
        self.res_path = res_path


class LinkOutside(TreeError):
    """A symbolic link whose target lies outside the project."""


class LinkLoop(TreeError):
    """A symbolic link that loops, or a folder link that contains itself."""


class TooManyEntries(TreeError):
    """The project has more entries than a copy is allowed to make."""


class TreeChanged(TreeError):
    """An entry changed between the plan and the copy."""


@dataclass(frozen=True)
class Entry:
    """One thing to make in the copy: ``rel`` there, read from ``source`` (both relative)."""

    rel: str
    source: str
    is_dir: bool
    size: int = 0
    mode: int = 0o644


@dataclass
class Plan:
    """Every folder and file of the copy, in creation order, and the bytes they hold."""

    root: Path
    root_id: tuple[int, int] = (0, 0)  # (st_dev, st_ino) of the root when planned
    entries: list[Entry] = field(default_factory=list)
    bytes: int = 0
    links: int = 0
    reader: str = EXPORTS  # the work refusals name
    left_out: list[str] | None = None  # links out and loops left out (None: refused instead)

    @property
    def files(self) -> int:
        """How many files the copy holds."""
        return sum(1 for e in self.entries if not e.is_dir)


def res_path(rel: str) -> str:
    """The ``res://`` path of a project-relative path, printable on one line.

    Undecodable bytes of a file name show as ``\\xNN``, control characters as ``?``.
    """
    text = os.fsencode(rel).decode("utf-8", "backslashreplace")
    return "res://" + "".join(c if c.isprintable() else "?" for c in text)


def relative(given: str) -> str:
    """``res://a/b/`` as ``a/b`` (``res://`` as ``""``); ``ValueError`` saying why for anything
    that is not a plain project path (another scheme, ``..``, empty parts, a NUL)."""
    if not isinstance(given, str) or not given.startswith("res://"):
        raise ValueError(f"{quoted(given)!r} is not a res:// path")
    rel = given[len("res://") :]
    rel = rel[:-1] if rel.endswith("/") else rel
    parts = rel.split("/") if rel else []
    if any(p in ("", ".", "..") for p in parts) or "\\" in rel or "\0" in rel:
        raise ValueError(f"{quoted(given)!r} is not a plain res:// path")
    return rel


def plan(project: Path, reader: str = EXPORTS, leave_out: bool = False) -> Plan:
    """Walk ``project`` (not following links) and decide the whole copy; raises TreeError,
    whose message names ``reader`` ("checks read the project only"). With ``leave_out``, a
    link out of the project or a loop is left out of the plan and listed in ``left_out``
    (project-relative) instead of refused."""
    root = Path(os.path.realpath(project))
    st = os.stat(root)
    out = Plan(root, (st.st_dev, st.st_ino), reader=reader, left_out=[] if leave_out else None)
    _walk(out, root, "", "", (root,))
    return out


def link_outside(rel: str, reader: str = EXPORTS) -> LinkOutside:
    """The refusal of the link out of the project at ``rel``, naming the work refused."""
    where = res_path(rel)
    return LinkOutside(
        where,
        f"{where} is a symbolic link to a place outside the project; {reader} read the "
        "project only",
    )


def _walk(out: Plan, root: Path, rel: str, source: str, chain: tuple[Path, ...]) -> None:
    """Plan the folder whose real place is ``root/source``, to appear at ``rel`` in the copy."""
    here = root / source if source else root
    if len(chain) > MAX_DEPTH:
        raise TooManyEntries(
            res_path(rel), f"{res_path(rel)} is nested too deep (over {MAX_DEPTH})"
        )
    try:
        names = sorted(os.listdir(here))
    except OSError as exc:
        raise TreeChanged(
            res_path(rel), f"{res_path(rel)} cannot be read: {exc.strerror}"
        ) from None
    for name in names:
        if name in VCS_DIRS:
            continue
        rel_child = f"{rel}/{name}" if rel else name
        src_child = f"{source}/{name}" if source else name
        try:
            st = os.lstat(here / name)
        except FileNotFoundError:
            continue
        except OSError as exc:  # a name too long for the system, a folder we may not enter
            raise TreeChanged(
                res_path(rel_child), f"{res_path(rel_child)[:300]} cannot be read: {exc.strerror}"
            ) from None
        if stat.S_ISLNK(st.st_mode):
            out.links += 1
            try:
                target = _resolve_link(root, here / name, rel_child, out.reader)
            except (LinkOutside, LinkLoop):
                if out.left_out is None:
                    raise
                out.left_out.append(rel_child)
                continue
            if target is None:
                continue  # dangling inside the project: Godot finds nothing there either
            src_child = target.relative_to(root).as_posix() if target != root else ""
            try:
                st = os.stat(target)
            except OSError as exc:
                raise TreeChanged(
                    res_path(rel_child),
                    f"{res_path(rel_child)[:300]} cannot be read: {exc.strerror}",
                ) from None
            if stat.S_ISDIR(st.st_mode) and any(target == c for c in chain):
                if out.left_out is not None:
                    out.left_out.append(rel_child)
                    continue
                raise LinkLoop(
                    res_path(rel_child),
                    f"{res_path(rel_child)} is a link to a folder that contains it; "
                    f"{out.reader} cannot follow a loop",
                )
        _add(out, rel_child)
        if stat.S_ISDIR(st.st_mode):
            out.entries.append(Entry(rel_child, src_child, True, mode=stat.S_IMODE(st.st_mode)))
            _walk(out, root, rel_child, src_child, (*chain, root / src_child))
        elif stat.S_ISREG(st.st_mode):
            mode = stat.S_IMODE(st.st_mode)
            out.entries.append(Entry(rel_child, src_child, False, st.st_size, mode))
            out.bytes += st.st_size
        # sockets, FIFOs, devices: not project content


def _add(out: Plan, rel: str) -> None:
    if len(out.entries) >= MAX_ENTRIES:
        raise TooManyEntries(
            res_path(rel), f"the project has more than {MAX_ENTRIES} files and folders"
        )


def _resolve_link(root: Path, link: Path, rel: str, reader: str = EXPORTS) -> Path | None:
    """The real target of ``link`` if it stays in the project; None when it dangles inside."""
    try:
        target = Path(os.path.realpath(link, strict=True))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LinkLoop(res_path(rel), f"{res_path(rel)} is a link that loops") from None
        # Dangling: judge where it would point, as if it existed.
        dangling = Path(os.path.realpath(link))
        if not _inside(root, dangling):
            raise link_outside(rel, reader) from None
        return None
    if not _inside(root, target):
        raise link_outside(rel, reader)
    return target


def _inside(root: Path, path: Path) -> bool:
    return path == root or path.is_relative_to(root)


def copy(p: Plan, dst: Path) -> int:
    """Make the copy at ``dst`` (which must not exist); returns the bytes copied.

    Sources are opened below a descriptor of the project root with ``O_NOFOLLOW`` on every
    component: an entry that became a link since the plan raises TreeChanged.
    """
    dst.mkdir(mode=0o700)
    try:
        root_fd = os.open(p.root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
            raise TreeChanged("res://", "the project moved while it was being copied") from None
        raise
    copied = 0
    try:
        st = os.fstat(root_fd)
        if (st.st_dev, st.st_ino) != p.root_id:
            raise TreeChanged("res://", "the project changed while it was being copied; try again")
        for entry in p.entries:
            target = dst / entry.rel
            if entry.is_dir:
                target.mkdir(mode=0o700)
                continue
            copied += _copy_file(root_fd, entry, target)
        for entry in reversed(p.entries):  # folders last, so their own writes do not change them
            if entry.is_dir:
                os.chmod(dst / entry.rel, (entry.mode | 0o700) & 0o777)
    finally:
        os.close(root_fd)
    return copied


def _copy_file(root_fd: int, entry: Entry, target: Path) -> int:
    fd = _open_below(root_fd, entry)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _changed(entry)
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            done = 0
            while True:
                chunk = os.read(fd, min(_CHUNK, entry.size - done + 1))
                if not chunk:
                    break
                if done + len(chunk) > entry.size:  # grew since the plan: the preflight lied
                    raise _changed(entry)
                view = memoryview(chunk)
                while view:
                    n = os.write(out, view)
                    view = view[n:]
                done += len(chunk)
            os.fchmod(out, (entry.mode | 0o600) & 0o777)
            os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns))
        finally:
            os.close(out)
        return done
    finally:
        os.close(fd)


def _open_below(root_fd: int, entry: Entry) -> int:
    """Open ``entry.source`` below ``root_fd`` without following any link on the way."""
    parts = entry.source.split("/")
    fd = root_fd
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            # O_NONBLOCK: a FIFO swapped in since the plan must not block the copy.
            flags = os.O_RDONLY | os.O_NOFOLLOW | (os.O_NONBLOCK if last else os.O_DIRECTORY)
            try:
                nxt = os.open(part, flags, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                    raise _changed(entry) from None
                raise
            if fd != root_fd:
                os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        if fd != root_fd:
            os.close(fd)
        raise


def read_file(root: Path, name: str, limit: int = 1 << 20, reader: str = EXPORTS) -> bytes:
    """A small project file (``project.godot``, ``export_presets.cfg``), read safely.

    A link is judged as in ``plan`` (outside the project: TreeError naming ``reader``); the
    file must be a regular file of at most ``limit`` bytes (a FIFO would block, ``/dev/zero``
    never end): else OSError. A missing file is FileNotFoundError.
    """
    real_root = Path(os.path.realpath(root))
    path = real_root / name
    target = path
    if stat.S_ISLNK(os.lstat(path).st_mode):
        resolved = _resolve_link(real_root, path, name, reader)
        if resolved is None:
            raise FileNotFoundError(errno.ENOENT, f"{name} is a dangling link")
        target = resolved
    fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, f"{name} is not a regular file")
        if st.st_size > limit:
            raise OSError(errno.EFBIG, f"{name} is larger than {limit} bytes")
        data = os.read(fd, limit + 1)
        if len(data) > limit:
            raise OSError(errno.EFBIG, f"{name} is larger than {limit} bytes")
        return data
    finally:
        os.close(fd)


def read_below(root: Path, parts: Iterable[str], limit: int) -> bytes | None:
    """At most ``limit`` bytes of the regular file ``root/parts…``, ``root`` and each step
    opened without following a link, a FIFO never waited on; ``None`` when it is not there or
    not a regular file. For what a sandboxed run wrote, where anything may be a link."""
    names = list(parts)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(root, flags | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        for name in names[:-1]:
            step = os.open(name, flags | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = step
        step = os.open(names[-1], flags | os.O_NONBLOCK, dir_fd=fd)
        os.close(fd)
        fd = step
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, left = [], limit
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def remove(path: Path) -> None:
    """Remove a tree even where its own files took their permissions away (never raises).

    Work dirs hold what a sandboxed Godot wrote: a folder it made unreadable must not stay
    behind for ever on a server that does not run as root.
    """
    if not os.path.lexists(path):
        return
    if not os.path.isdir(path) or os.path.islink(path):
        with contextlib.suppress(OSError):
            os.unlink(path)
        return
    shutil.rmtree(path, ignore_errors=True)
    if not os.path.lexists(path):
        return
    stack = [str(path)]  # give every folder left back to its owner, then remove again
    while stack:
        folder = stack.pop()
        with contextlib.suppress(OSError):
            os.chmod(folder, 0o700, follow_symlinks=False)
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            stack.extend(e.path for e in entries if e.is_dir(follow_symlinks=False))
    shutil.rmtree(path, ignore_errors=True)


def disk_full(directory: Path, slack: int = 256 * 1024) -> bool:
    """True when the filesystem of ``directory`` has (almost) no space left."""
    try:
        return shutil.disk_usage(directory).free < slack
    except OSError:
        return False


def _changed(entry: Entry) -> TreeChanged:
    where = res_path(entry.rel)
    return TreeChanged(where, f"{where} changed while the project was being copied; try again")

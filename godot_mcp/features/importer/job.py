"""The engine's own import of a project, headless, on a private copy, in the exports' sandbox.

An import runs project code (editor plugins, ``tool`` scripts) and rewrites what it runs on,
so it runs on a copy (``tree.copy``: no link in it) inside the sandbox, which sees the copy
and its work dir read-write and nothing private::

    <work_dir>/
        project/     the copy (``copy``; a check's or an export's copy may be elsewhere)
        xdg/         the run's XDG dirs and home: editor settings, caches

How each engine imports, and when it is done::

    engine    command                                   done when
    ────────  ────────────────────────────────────────  ──────────────────────────────────────
    Godot 4   --headless --import --path COPY           the engine exits
    Godot 3   --editor --path COPY (the headless        every imported file has its .import
              server build; its editor never honours    (with [deps] source_file) and all its
              --quit)                                   dest_files, and its .md5 record names
                                                        the file's bytes; then the editor is
                                                        killed

A file counts as imported (``Outcome.files``) when its ``.import`` is complete and not
``valid=false`` (a file the engine could not read gets a ``.import`` all the same: it is in
``Outcome.failed``). The Godot 3 state is read twice, a poll apart, before the editor is
killed, so nothing is taken while the engine writes it.

:func:`install` then moves the result into the project: only the import folder (``.godot/``
or ``.import/``) and the ``*.import`` and ``*.uid`` files of the project's own files, each
written only when its bytes differ, through descriptors opened without following links, each
file renamed into place (so a reader never sees half a file). ``project.godot`` is never
written. The editor's own state under ``.godot/editor/`` (its layout, folding) is written only
where the project has none.

Errors::

    ImportFailed(Failed)     the engine could not run the import to its end
    ImportTimeout(Timeout)   the import did not end within its time limit
"""

from __future__ import annotations

import collections
import contextlib
import errno
import hashlib
import os
import re
import secrets
import shutil
import stat
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import anyio

from godot_mcp.engine.process.engine_lines import Reason
from godot_mcp.engine.process.output import PipeLines
from godot_mcp.engine.process.redact import PathPair, Scrubber, as_res
from godot_mcp.engine.process.run import GodotRun, on_copy
from godot_mcp.engine.process.supervisor import Supervisor
from godot_mcp.engine.profile import EngineProfile, profile_of
from godot_mcp.engine.project import imported, tree
from godot_mcp.errors import Failed, Timeout

__all__ = [
    "ImportFailed",
    "ImportTimeout",
    "Importer",
    "Outcome",
    "install",
    "time_limit",
]

POLL_S = 0.25  # how often the copy is looked at while the engine imports
TMP_BYTES = 256 << 20  # what the engine may write to /tmp and /dev/shm in the sandbox
MAX_MESSAGE = 1000
_SOURCE = re.compile(r'^source_file="', re.M)
_DEST = re.compile(r"^dest_files=\[(.*?)\]", re.M | re.S)
_RES = re.compile(r'"res://([^"]+)"')
_INVALID = re.compile(r"^valid=false\s*$", re.M)
_MD5 = re.compile(rb'^source_md5="([0-9a-f]{32})"', re.M)
_SIDECAR_BYTES = 1 << 20
_CHUNK = 1 << 20
_EDITOR_STATE = ".godot/editor/"  # written only where the project has none, but its cache
_CACHE_NAME = re.compile(r"^filesystem_cache\d*$")

Progress = Callable[[int, int], Awaitable[None]]


class ImportFailed(Failed):
    """The engine could not run the import to its end."""


class ImportTimeout(Timeout):
    """The import did not end within its time limit."""


@dataclass
class Outcome:
    """What one import did: the files the engine imported, those it could not, its time."""

    files: int
    failed: list[str] = field(default_factory=list)  # res:// paths
    seconds: float = 0.0


def time_limit(files: int) -> float:
    """Seconds an import of ``files`` imported files may take: a start-up allowance plus
    half a second a file, at most an hour."""
    return min(60.0 + 0.5 * files, 3600.0)


class Importer:
    """One import: the engine run on ``copy``, followed to its end."""

    def __init__(
        self,
        binary: str,
        version: str | None,
        work_dir: Path,
        copy: Path,
        env: Mapping[str, str] | None = None,
        private: Iterable[PathPair] = (),
        engine: str = "Godot",
        names: Iterable[PathPair] = (),
    ) -> None:
        """``version``: the engine's ``--version``; ``engine``: how failures name it
        (``Godot 4.6.3``); ``names``: more paths texts name as the project (the original)."""
        self.binary = binary
        self.profile = profile_of(version)
        self.engine = engine
        self.work_dir = Path(work_dir)
        self.copy = Path(copy)
        self.env = dict(os.environ if env is None else env)  # the run's policy filters it
        self.expected: list[str] = []
        self._run = Supervisor(ImportFailed)
        self._md5: dict[str, tuple[tuple[int, int], str]] = {}
        self._seen: dict[str, tuple[tuple[int, ...], bool | None]] = {}
        self.redact = Scrubber.for_run(
            [*as_res(self.copy), *names, (self.work_dir, "<scratch>")], list(private)
        )

    def prepare(self) -> None:
        """Make the work dir and list the files to import (blocking: use a thread). The copy
        must be there already."""
        (self.work_dir / "xdg").mkdir(parents=True, mode=0o700, exist_ok=True)
        self.expected = imported.importable_files(self.copy, self.profile)

    def godot_run(self) -> GodotRun:
        """The import as a Godot run: sandboxed, writing only its work dir and the copy, its
        output piped to the reader."""
        args = [*self.profile.import_flags, "--path", str(self.copy)]
        return on_copy(
            self.binary, args, self.work_dir, self.env, self.work_dir, self.copy, TMP_BYTES
        )

    def launch(self) -> None:
        """Spawn the engine; call from the event loop's thread."""
        self._run.start(self.godot_run())

    async def run(self, timeout: float, progress: Progress | None = None) -> Outcome:
        """Follow the import to its end; no process of it is left when this returns."""
        assert self._run.child is not None, "launch() first"
        began = time.monotonic()
        output = _Output()
        total = len(self.expected)
        last: tuple[int, tuple[object, ...]] = (-1, ())  # the last look: files imported, state

        async def look(exited: int | None) -> bool:
            nonlocal last
            done, _, state = await anyio.to_thread.run_sync(self._status)
            if progress is not None:
                await progress(done, total)
            # Godot 3's editor never quits: complete, and unchanged since the last look.
            complete = not self.profile.import_exits and done == total and last == (done, state)
            last = (done, state)
            return exited is not None or complete

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(output.read, self._run.output())
                ended = await self._run.watch(timeout, POLL_S, look)
                await self.stop()
                with anyio.move_on_after(5):
                    await output.closed.wait()
                group.cancel_scope.cancel()
        finally:
            await self.stop()
        if not ended:  # raised past the task group, not inside a group of one
            raise ImportTimeout(
                f"the import did not finish within {timeout:.0f} s "
                f"({last[0]} of {total} files imported)"
            )
        code = self._run.returncode
        done, failed, _ = await anyio.to_thread.run_sync(self._status)
        # Godot 4 ends its import by itself; either engine may crash on its way out.
        if not ((self.profile.import_exits and code == 0) or done == total):
            why = self.redact(output.reason.text)[:MAX_MESSAGE]
            raise ImportFailed(
                f"{self.engine} exited with code {code} after importing {done} of "
                f"{total} files" + (f": {why}" if why else "")
            )
        return Outcome(done - len(failed), failed, round(time.monotonic() - began, 3))

    def _status(self) -> tuple[int, list[str], tuple[object, ...]]:
        """How many expected files are imported (failed ones included), which failed, and a
        signature of what was looked at (blocking)."""
        done, failed, state = 0, [], []
        for rel in self.expected:
            ok, sig = self._imported(rel)
            state.append(sig)
            if ok is not None:
                done += 1
                if not ok:
                    failed.append(tree.res_path(rel))
        return done, failed, tuple(state)

    def _imported(self, rel: str) -> tuple[bool | None, tuple[int, ...]]:
        """``True`` imported, ``False`` the engine could not, ``None`` not (yet) imported;
        and the signature of the files that say so."""
        sidecar = self.copy / (rel + ".import")
        record = self.copy / self.profile.import_records / _record_name(rel)
        sig = (*_stat_sig(self.copy / rel), *_stat_sig(sidecar), *_stat_sig(record))
        cached = self._seen.get(rel)
        if cached is not None and cached[0] == sig:
            return cached[1], sig
        result = self._judge(rel, sidecar, record)
        self._seen[rel] = (sig, result)
        return result, sig

    def _judge(self, rel: str, sidecar: Path, record: Path) -> bool | None:
        text = tree_text(sidecar)
        if text is None or not _SOURCE.search(text):
            return None
        dest = _DEST.search(text)
        for name in _RES.findall(dest.group(1)) if dest else []:
            if not _regular(self.copy / name):
                return None
        source_md5 = _MD5.search(tree_bytes(record, 4096) or b"")
        if source_md5 is None or source_md5.group(1).decode() != self._source_md5(rel):
            return None
        return _INVALID.search(text) is None

    def _source_md5(self, rel: str) -> str:
        path = self.copy / rel
        key = _stat_sig(path)[:2]
        cached = self._md5.get(rel)
        if cached is not None and cached[0] == key:
            return cached[1]
        digest = hashlib.md5(usedforsecurity=False)
        try:
            with open(path, "rb") as f:
                while chunk := f.read(1 << 20):
                    digest.update(chunk)
        except OSError:
            return ""
        self._md5[rel] = ((key[0], key[1]), digest.hexdigest())
        return digest.hexdigest()

    async def stop(self) -> None:
        """Kill what is left of the process group and reap it (bounded, shielded)."""
        await self._run.stop()


class _Output:
    """The engine's output, read as it comes: only why it failed is kept."""

    def __init__(self) -> None:
        self.reason = Reason(re.compile(r"make_dir_recursive|Method failed|Condition \""))
        self.closed = anyio.Event()
        self.tail: collections.deque[str] = collections.deque(maxlen=20)

    async def read(self, out: PipeLines) -> None:
        try:
            while not out.ended:
                for line in await out.next() or ():
                    self.reason.see(line)
                    self.tail.append(line)
        finally:
            out.close()
            self.closed.set()


def _record_name(rel: str) -> str:
    """The name of the engine's ``.md5`` record of ``rel`` in its import folder."""
    digest = hashlib.md5(("res://" + rel).encode(), usedforsecurity=False).hexdigest()
    return f"{os.path.basename(rel)}-{digest}.md5"


def _stat_sig(path: Path) -> tuple[int, int, int]:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return (-1, -1, -1)
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path, follow_symlinks=False).st_mode)
    except OSError:
        return False


def tree_bytes(path: Path, limit: int) -> bytes | None:
    """At most ``limit`` bytes of a regular file (not through a link), or None."""
    return tree.read_below(path.parent, [path.name], limit)


def tree_text(path: Path) -> str | None:
    data = tree_bytes(path, _SIDECAR_BYTES)
    return None if data is None else data.decode("utf-8", "replace")


# -- moving the result into the project -----------------------------------------------------


def results(copy: Path, engine: EngineProfile) -> list[str]:
    """What of the copy goes into the project (relative paths): the import folder's files,
    then each ``*.import`` (complete: it names its source) and ``*.uid`` of a file of the
    copy. Regular files only; the import folder's first, so no ``.import`` ever names a
    file that is not there yet."""
    top = engine.import_folder.rstrip("/")
    cache: list[str] = []
    sidecars: list[str] = []
    for here, dirs, files in os.walk(copy, followlinks=False):
        rel = Path(here).relative_to(copy).as_posix()
        rel = "" if rel == "." else rel
        if rel == "":
            dirs[:] = sorted(d for d in dirs if d not in tree.VCS_DIRS)
        else:
            dirs.sort()
        inside = rel == top or rel.startswith(top + "/")
        for name in sorted(files):
            path = f"{rel}/{name}" if rel else name
            if not _regular(copy / path):
                continue
            if inside:
                cache.append(path)
                continue
            base, suffix = os.path.splitext(path)
            if suffix not in (".import", ".uid") or not _regular(copy / base):
                continue
            if suffix == ".import" and not _SOURCE.search(tree_text(copy / path) or ""):
                continue
            sidecars.append(path)
    return cache + sidecars


def install(copy: Path, project: Path, engine: EngineProfile) -> list[str]:
    """Move the import's result from ``copy`` into ``project`` (blocking); the relative
    paths written. Nothing is followed through a link; a file whose place in the project is
    taken by a folder (or a folder's by a file) is left out."""
    written: list[str] = []
    root = os.open(project, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        for rel in results(copy, engine):
            if _install_one(copy / rel, root, rel):
                written.append(rel)
    finally:
        os.close(root)
    return written


def _install_one(source: Path, root: int, rel: str) -> bool:
    *parents, name = rel.split("/")
    fds: list[int] = []
    try:
        at = root
        for part in parents:
            try:
                os.mkdir(part, 0o777, dir_fd=at)
            except FileExistsError:
                pass
            try:
                at = os.open(
                    part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=at
                )
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    return False
                raise
            fds.append(at)
        with open(os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb") as src:
            try:
                st = os.stat(name, dir_fd=at, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            if st is not None:
                if stat.S_ISDIR(st.st_mode):
                    return False
                editor_state = rel.startswith(_EDITOR_STATE) and not _CACHE_NAME.match(name)
                if editor_state or (stat.S_ISREG(st.st_mode) and _same(at, name, src)):
                    return False
                src.seek(0)
            tmp = f".{name}.{secrets.token_hex(6)}.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(tmp, flags, 0o666, dir_fd=at)
            try:
                with os.fdopen(fd, "wb") as out:
                    shutil.copyfileobj(src, out, _CHUNK)
                os.replace(tmp, name, src_dir_fd=at, dst_dir_fd=at)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=at)
                raise
        return True
    finally:
        for fd in fds:
            os.close(fd)


def _same(at: int, name: str, src: BinaryIO) -> bool:
    """Whether the project's file ``name`` (in folder ``at``) holds the bytes of ``src``."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=at)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        try:
            if os.fstat(fd).st_size != os.fstat(src.fileno()).st_size:
                return False
            while True:
                mine, theirs = src.read(_CHUNK), f.read(_CHUNK)
                if mine != theirs:
                    return False
                if not mine:
                    return True
        except OSError:
            return False

"""``project.import``: the engine's own import of the project, and of private copies.

The import runs on a private copy in the exports' sandbox (``godot/importer.py``) and only
its result (the import folder, ``*.import`` and ``*.uid`` files) is moved into the project;
``project.godot`` is never written, so the generation does not change. It holds one of the
``--max-exports`` slots while it runs, and one import of the project runs at a time (of this
server, and of every server on this state dir: a lock file in its scratch). Its scratch (the
copy, the engine's XDG dirs) lives in ``scratch/checks/<pid>-<start>/``, swept like a check's
when a server was killed.

:func:`import_copy` imports a private copy in place when it was never imported: what a check
(or an export) runs on its own copy first, saying so in its answer (:func:`copy_imported`);
:func:`imported_copy` makes that copy for a check, which otherwise runs on the project itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio

from godot_mcp.errors import Failed, Unavailable
from godot_mcp.godot import importer, tree
from godot_mcp.godot.imported import never_imported
from godot_mcp.godot.importer import Importer, Outcome, Progress
from godot_mcp.godot.redact import as_res
from godot_mcp.runtime.context import Runtime
from godot_mcp.runtime.exports import ExportService
from godot_mcp.runtime.owner import me
from godot_mcp.store.ids import new_id

SLACK = 64 << 20  # free space an import needs besides its copy (the imported files)
RUNNING = "an import of this project is running; wait for it to end"
COPY_IMPORTED = (
    "the project was never imported, so its private copy was imported first "
    "(as the editor would) and that copy was {what}"
)


def copy_imported(what: str) -> str:
    """The warning of a check (``what``: ``checked``) or an export (``exported``) whose
    private copy was imported first."""
    return COPY_IMPORTED.format(what=what)


class ImportService:
    """Runs the project imports of one server process."""

    def __init__(self, rt: Runtime, exports: ExportService) -> None:
        self.rt = rt
        self.exports = exports
        pid, start = me()
        self.scratch = rt.store.layout.scratch_dir / "checks" / f"{pid}-{start}"
        self._running = False

    def availability(self) -> str:
        return self.exports.availability()

    async def run(self, progress: Progress | None = None) -> Outcome:
        """Import the project: the engine on a private copy, then its result moved in."""
        why = self.availability()
        if why != "available":
            raise Unavailable(why.removeprefix("unavailable: "))
        install = self.rt.godot
        assert install.headless is not None  # availability said so
        began = time.monotonic()
        if self._running:
            raise Unavailable(RUNNING)
        self._running = True  # one step on the loop with the test above: no second one starts
        try:
            with self.rt.slots.take(), await self.rt.blocking(self._lock):
                plan = await self.rt.blocking(tree.plan, self.rt.project)
                work = self.scratch / new_id()
                job = Importer(
                    install.headless,
                    install.headless_version,
                    work,
                    work / "project",
                    private=self.rt.private_paths(),
                    engine=install.headless_name,
                    names=as_res(self.rt.project),
                )
                try:
                    await self.rt.blocking(self._copy, plan, work)
                    await self.rt.blocking(job.prepare)
                    job.launch()
                    outcome = await job.run(importer.time_limit(len(job.expected)), progress)
                    await self.rt.blocking(importer.install, job.copy, self.rt.project, job.major)
                    outcome.seconds = round(time.monotonic() - began, 3)  # the copy included
                    return outcome
                except OSError as exc:
                    raise Failed(f"the import could not be done: {exc.strerror or exc}") from None
                finally:
                    with anyio.CancelScope(shield=True):
                        await job.stop()
                        await self.rt.blocking(tree.remove, work)
        finally:
            self._running = False

    def _lock(self) -> contextlib.AbstractContextManager[None]:
        """The project's import lock (blocking to take: use a thread), or Unavailable."""
        self.scratch.mkdir(parents=True, mode=0o700, exist_ok=True)
        key = hashlib.sha256(os.fsencode(os.path.realpath(self.rt.project))).hexdigest()[:32]
        path = self.scratch.parent / f"import-{key}.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise Unavailable(RUNNING) from None
        return _held(fd)

    def _copy(self, plan: tree.Plan, work: Path) -> None:
        """The work dir with the project's copy, after a look at the free space."""
        need = plan.bytes * 2 + SLACK
        try:
            free = shutil.disk_usage(self.scratch).free
        except OSError:
            free = need
        if free < need:
            raise Unavailable(
                f"the state dir's disk has {free} bytes free; this import needs about {need} "
                "(a copy of the project and what the engine imports)"
            )
        work.mkdir(mode=0o700)
        tree.copy(plan, work / "project")


@contextlib.contextmanager
def _held(fd: int) -> Iterator[None]:
    try:
        yield
    finally:
        os.close(fd)  # the lock goes with the descriptor


async def import_copy(
    rt: Runtime, copy: Path, work_dir: Path, progress: Progress | None = None
) -> Outcome | None:
    """Import the private copy ``copy`` in place when it was never imported (``None``: it
    needed nothing). The engine's XDG dirs go to ``work_dir`` (made here, removed after);
    the caller holds its slot. Refusals are the import's (``ImportFailed``, ``ImportTimeout``)."""
    install = rt.godot
    if install.headless is None:
        raise Unavailable("no headless Godot binary found (godot3-server or Godot 4)")
    if not await rt.blocking(never_imported, copy, install.headless_major or 3):
        return None
    job = Importer(
        install.headless,
        install.headless_version,
        work_dir,
        copy,
        private=rt.private_paths(),
        engine=install.headless_name,
        names=as_res(rt.project),
    )
    try:
        await rt.blocking(job.prepare)
        job.launch()
        return await job.run(importer.time_limit(len(job.expected)), progress)
    finally:
        with anyio.CancelScope(shield=True):
            await job.stop()
            await rt.blocking(tree.remove, work_dir)


@dataclass(frozen=True)
class ImportedCopy:
    """A never-imported project's private copy, imported: its own plan, the work dir that
    holds it (removed by the caller when done) and the warning its answer carries."""

    plan: tree.Plan
    work: Path
    warning: str


async def imported_copy(
    rt: Runtime, plan: tree.Plan, work: Path, what: str, progress: Progress | None = None
) -> ImportedCopy | None:
    """For a project that was never imported: a private copy of ``plan`` in ``work``
    (made here), imported; ``None`` when the project needs no import. ``what``: what the
    caller does with the copy (``checked``), for the warning."""
    if not await rt.blocking(never_imported, rt.project, rt.godot.headless_major or 3):
        return None
    copy = work / "project"
    try:
        await rt.blocking(work.mkdir, 0o700)
        await rt.blocking(tree.copy, plan, copy)
        await import_copy(rt, copy, work / "import", progress)
        return ImportedCopy(await rt.blocking(tree.plan, copy), work, copy_imported(what))
    except BaseException:
        with anyio.CancelScope(shield=True):
            await rt.blocking(tree.remove, work)
        raise

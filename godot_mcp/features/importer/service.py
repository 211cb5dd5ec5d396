"""``project.import``: the engine's own import of the project, and of private copies.

The import runs on a private copy in the exports' sandbox (``features/importer/job.py``) and only
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
import time
from collections.abc import Iterator
from pathlib import Path

import anyio

from godot_mcp.engine.process.redact import as_res
from godot_mcp.engine.project import tree
from godot_mcp.errors import Failed, Unavailable
from godot_mcp.features import importer
from godot_mcp.features.importer import Importer, Outcome, Progress
from godot_mcp.runtime.context import Runtime
from godot_mcp.runtime.headless import HeadlessWork
from godot_mcp.store.ids import new_id

SLACK = 64 << 20  # free space an import needs besides its copy (the imported files)
RUNNING = "an import of this project is running; wait for it to end"


class ImportService(HeadlessWork):
    """Runs the project imports of one server process."""

    def __init__(self, rt: Runtime) -> None:
        super().__init__(rt)
        self._running = False

    async def run(self, progress: Progress | None = None) -> Outcome:
        """Import the project: the engine on a private copy, then its result moved in."""
        install = self.install()
        assert install.headless is not None
        began = time.monotonic()
        if self._running:
            raise Unavailable(RUNNING)
        self._running = True  # one step on the loop with the test above: no second one starts
        try:
            async with self.tracked():
                with self.rt.slots.take(), await self.rt.disk(self._lock):
                    plan = await self.rt.disk(tree.plan, self.rt.project, "imports")
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
                        await self.rt.disk(self._copy, plan, work)
                        await self.rt.disk(job.prepare)
                        job.launch()
                        outcome = await job.run(importer.time_limit(len(job.expected)), progress)
                        await self.rt.disk(importer.install, job.copy, self.rt.project, job.profile)
                        outcome.seconds = round(time.monotonic() - began, 3)  # the copy included
                        return outcome
                    except OSError as exc:
                        why = exc.strerror or exc
                        raise Failed(f"the import could not be done: {why}") from None
                    finally:
                        with anyio.CancelScope(shield=True):
                            await job.stop()
                            await self.rt.disk(tree.remove, work)
        finally:
            self._running = False

    def _lock(self) -> contextlib.AbstractContextManager[None]:
        """The project's import lock (blocking to take: use a thread), or Unavailable."""
        self.make_scratch()
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
        self.refuse_low_space(
            need,
            f"this import needs about {need} (a copy of the project and what the engine imports)",
        )
        work.mkdir(mode=0o700)
        tree.copy(plan, work / "project")


@contextlib.contextmanager
def _held(fd: int) -> Iterator[None]:
    try:
        yield
    finally:
        os.close(fd)  # the lock goes with the descriptor

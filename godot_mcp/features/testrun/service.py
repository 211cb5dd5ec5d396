"""``project.test``: the project's own tests (GUT, gdUnit4) run by their own runner on a private
copy, and the JUnit report they wrote registered as an artifact of the caller.

Read-only for callers (the project is left byte for byte as it was), so any caller may run
one; it is the same kind of work as a check (a headless Godot in the exports' sandbox, here
with the copy and its work dir writable) and holds one of the ``--max-exports`` slots while it
runs. On Godot 4 the copy is imported first, always, as the editor would have done before a
developer runs the tests; on Godot 3 only a never-imported project's copy is. ``timeout``
covers both. What an import wrote is kept in the import cache (``runtime/import_cache.py``)
before the tests run, and a later copy of the same files is given it without an import.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import anyio

from godot_mcp.engine.process.redact import as_res
from godot_mcp.engine.project import tree
from godot_mcp.engine.project.imported import never_imported
from godot_mcp.engine.project.source import code_at
from godot_mcp.errors import Failed, GodotMcpError, TooLarge, Unavailable
from godot_mcp.features.importer import ImportFailed, ImportTimeout
from godot_mcp.features.importer.copies import Reused, copy_imported, import_or_reuse
from godot_mcp.features.testrun import (
    NAMES,
    JUnitReport,
    Selection,
    TestJob,
    choose,
    frameworks,
    gut_config,
    invocation,
    nothing_to_run,
    read_report,
    refuse_without_runner,
    select,
)
from godot_mcp.runtime.context import Runtime
from godot_mcp.runtime.headless import HeadlessWork
from godot_mcp.runtime.import_cache import ImportCache
from godot_mcp.store.ids import new_id
from godot_mcp.store.values import ArtifactInfo, Caller, NewArtifact

__all__ = ["TestOutcome", "TestService"]

SLACK = 64 << 20  # free space a run needs besides its copy (imports, what the tests write)
REPORT_TYPE = "application/xml"
REUSED = "the copy's import reused from an earlier run: no file it reads has changed"

Words = Callable[[str], Awaitable[None]]


@dataclass
class TestOutcome:
    """What one run answers: the counts and failures of its report, the report as an artifact
    (``None``: not kept, ``message`` says why), the runner's last lines; ``unreadable``: why
    the report could not be read (the answer is then ``failed``)."""

    __test__ = False

    framework: str
    report: JUnitReport
    artifact: ArtifactInfo | None = None
    log_tail: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    message: str | None = None
    unreadable: str | None = None


class TestService(HeadlessWork):
    """Runs the project tests of one server process."""

    __test__ = False

    def __init__(self, rt: Runtime) -> None:
        super().__init__(rt)
        self.imports = ImportCache(rt.dirs.imports_dir)
        self.copies_imported = 0  # copies the engine imported
        self.copies_reused = 0  # copies given an earlier import's writes instead

    async def run(
        self,
        caller: Caller,
        generation: int,
        paths: Sequence[str] | None,
        framework: str,
        timeout: float,
        progress: Words | None = None,
    ) -> TestOutcome:
        """Run the tests; refusals are typed, nothing is kept after but the report."""
        async with self.tracked():
            install = self.install()
            assert install.headless is not None
            chosen = choose(await self.rt.disk(frameworks, self.rt.project), framework)
            if chosen == "gdunit4" and not install.headless_profile.runs_gdunit4:
                raise Unavailable(
                    f"gdUnit4 runs on Godot 4 only; this server's Godot is {install.headless_name}"
                )
            plan = await self.rt.disk(tree.plan, self.rt.project, "test runs")
            selection = select(plan, paths, chosen)
            refuse_without_runner(plan, chosen)
            config = await self.rt.disk(gut_config, self.rt.project) if chosen == "gut" else None
            nothing = nothing_to_run(plan, chosen, selection, config)
            if nothing is not None:  # said before anything is copied or started
                return TestOutcome(chosen, JUnitReport(), message=nothing)
            with self.rt.slots.take():
                need = plan.bytes + SLACK
                self.refuse_low_space(need, f"this run needs about {need} (a copy of the project)")
                work = self.scratch / new_id()
                try:
                    return await self._run(
                        caller, generation, plan, work, chosen, selection, config, timeout, progress
                    )
                except OSError as exc:
                    raise Failed(f"the tests could not be run: {exc.strerror or exc}") from None
                except GodotMcpError as exc:  # a failed or timed-out run still names its runner
                    exc.details.setdefault("framework", chosen)
                    raise
                finally:
                    with anyio.CancelScope(shield=True):
                        await self.rt.disk(tree.remove, work)

    async def _run(
        self,
        caller: Caller,
        generation: int,
        plan: tree.Plan,
        work: Path,
        chosen: str,
        selection: Selection,
        config: bytes | None,
        timeout: float,
        progress: Words | None,
    ) -> TestOutcome:
        install = self.rt.godot
        assert install.headless is not None
        profile = install.headless_profile
        deadline = time.monotonic() + timeout
        copy = work / "project"
        await self.rt.disk(work.mkdir, 0o700)
        await self.rt.disk(tree.copy, plan, copy)
        warnings: list[str] = []
        never = await self.rt.disk(never_imported, self.rt.project, profile)
        if profile.imports_before_tests or never:
            await self._import(plan, copy, work / "import", deadline, progress)
        if never:
            warnings.append(copy_imported("given to the test runner"))
        run = invocation(chosen, profile, copy, work / "run", selection, config)
        warnings.extend([run.note] if run.note is not None else [])
        job = TestJob(
            install.headless,
            chosen,
            run,
            work / "run",
            copy,
            private=self.rt.private_paths(),
            names=as_res(self.rt.project),
            engine=install.headless_name,
        )
        try:
            await self.rt.disk(job.prepare)
            job.launch()

            ran = await job.run(max(0.0, deadline - time.monotonic()), progress, timeout)
        finally:
            with anyio.CancelScope(shield=True):
                await job.stop()
        outcome = TestOutcome(chosen, JUnitReport(), log_tail=ran.log_tail, warnings=warnings)
        if ran.report is None:  # the runner said it found no test, and wrote no report
            outcome.message = f"{NAMES[chosen]} found no tests to run"
            return outcome
        read = await self.rt.disk(read_report, ran.report, job.redact)
        if read.report is None:
            outcome.unreadable = f"the {NAMES[chosen]} report could not be read: {read.why}"
        else:
            outcome.report = await self._with_code(read.report)
        if ran.exit_code is None:
            warnings.append(
                "the runner wrote its report but did not exit within timeout_seconds; it was "
                "stopped"
            )
        try:
            if read.kept is not None:
                item = NewArtifact(REPORT_TYPE, read.kept)
                outcome.artifact = await self.rt.blocking(
                    self.rt.store.register, caller, generation, item
                )
        except TooLarge as exc:
            outcome.message = f"the report was not kept: {exc.message}"
        if outcome.unreadable is None and outcome.report.tests == 0 and outcome.message is None:
            outcome.message = f"{NAMES[chosen]} ran no tests"
        return outcome

    async def _with_code(self, report: JUnitReport) -> JUnitReport:
        """``report`` with each failure's ``code``: its line as the project's file is now (the
        project's, not the copy's the run used)."""
        places = [(c.path, c.line) for c in report.cases if c.path is not None and c.line]
        if not places:
            return report
        codes = await self.rt.disk(code_at, self.rt.project, places)
        cases = [replace(c, code=codes.get((c.path or "", c.line or 0))) for c in report.cases]
        return replace(report, cases=cases)

    async def _import(
        self, plan: tree.Plan, copy: Path, work: Path, deadline: float, progress: Words | None
    ) -> None:
        """Import the copy as the editor would, within what is left of the run's time, or give
        it what an import of the same files wrote before."""

        async def imported(done: int, total: int) -> None:
            if progress is not None:
                await progress(f"importing the copy: {done} of {total} files")

        left = max(1.0, deadline - time.monotonic())
        try:
            done = await import_or_reuse(
                self.rt, self.imports, plan, copy, work, imported, limit=left
            )
        except ImportTimeout as exc:  # the import's own words, said as the run's step
            _said_as_step(exc, "importing the project's copy took all of timeout_seconds")
            raise
        except ImportFailed as exc:
            _said_as_step(exc, "the project's copy could not be imported")
            raise
        if isinstance(done, Reused):
            self.copies_reused += 1
            if progress is not None:
                await progress(REUSED)
        elif done is not None:
            self.copies_imported += 1


def _said_as_step(exc: GodotMcpError, step: str) -> None:
    exc.message = f"{step}: {exc.message}"
    exc.args = (exc.message,)
    exc.details["log_tail"] = []

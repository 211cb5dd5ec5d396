"""``project.check``: the project's scripts, scenes and resources checked by its own Godot.

Read-only for callers (it answers what it found and keeps nothing), so any caller may run
one; it is the same kind of work as an export (a headless Godot in the sandbox, here with
the project bound read-only) and holds one of the ``--max-exports`` slots while it runs.
Its scratch (the list of files, the check script, Godot's XDG dirs) lives in
``scratch/checks/<pid>-<start>/``: a killed server's is swept like its game scratch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import anyio

from godot_mcp.engine.project import tree
from godot_mcp.engine.project.facts import newer_engine
from godot_mcp.engine.project.source import code_at
from godot_mcp.errors import Failed
from godot_mcp.features import check
from godot_mcp.features.check import Progress, Report
from godot_mcp.features.check.job import Problem
from godot_mcp.features.importer.copies import imported_copy
from godot_mcp.features.importer.service import ImportService
from godot_mcp.runtime.context import Runtime
from godot_mcp.runtime.headless import HeadlessWork
from godot_mcp.store.ids import new_id

SLACK = 16 << 20  # free space a check needs for Godot's own writes (XDG dirs, user://)


class CheckService(HeadlessWork):
    """Runs the project checks of one server process."""

    def __init__(self, rt: Runtime) -> None:
        super().__init__(rt)
        self.imports = ImportService(rt)  # project.import, and a check's own copy

    async def run(
        self,
        paths: Sequence[str] | None,
        progress: Progress | None = None,
        reader: str = "checks",
        leave_out: bool = False,
    ) -> Report:
        """Check the project (under ``paths``); refusals are typed, nothing is kept after.
        ``reader``: the work a link out of the project is refused for ("checks read the
        project only"); with ``leave_out`` such links are left out instead (a reload's check,
        whose scripts were seen to reach none)."""
        async with self.tracked():
            install = self.install()
            # Bad paths (a link out of the project, a path not in it) are refused before capacity
            # is looked at: their errors are the tree's InvalidArgument.
            plan = await self.rt.disk(tree.plan, self.rt.project, reader, leave_out)
            files = check.select(plan, paths)
            with self.rt.slots.take():
                self.refuse_low_space(SLACK, f"a check needs about {SLACK} for Godot's own files")
                # A never-imported project is checked on a private copy, imported first.
                copied = await imported_copy(self.rt, plan, self.scratch / new_id(), "checked")
                plan = copied.plan if copied is not None else plan
                assert install.headless is not None
                job = check.Check(
                    install.headless,
                    install.headless_profile,
                    self.scratch / new_id(),
                    plan.root if copied is not None else self.rt.project,
                    private=self.rt.private_paths(),
                    engine=install.headless_name,
                    dotnet=install.headless_dotnet,
                )
                try:
                    await self.rt.disk(job.prepare, plan, files)
                    job.launch()
                    report = await job.run(check.time_limit(len(files)), progress)
                    newer = newer_engine(job.facts.features, install.headless_version)
                    report.warnings.extend([newer] if newer else [])
                    report.warnings.extend([copied.warning] if copied is not None else [])
                    report.problems = await self._with_code(report.problems)
                    return report
                except OSError as exc:
                    why = exc.strerror or exc
                    raise Failed(f"the check could not be prepared: {why}") from None
                finally:
                    with anyio.CancelScope(shield=True):
                        await job.stop()
                        await self.rt.disk(job.cleanup)
                        if copied is not None:
                            await self.rt.disk(tree.remove, copied.work)

    async def _with_code(self, problems: list[Problem]) -> list[Problem]:
        """``problems`` with each line's ``code`` as the project's file is now (the project's,
        not the copy's a check may have run on)."""
        places = [(p.path, p.line) for p in problems if p.line is not None]
        if not places:
            return problems
        codes = await self.rt.disk(code_at, self.rt.project, places)
        return [replace(p, code=codes.get((p.path, p.line or 0))) for p in problems]

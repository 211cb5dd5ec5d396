"""Managed exports: start, watch, register outputs all-or-nothing, cancel.

Each export runs a headless Godot on a private snapshot (``godot.export``). Its
row in the store records the caller it is bound to and the process that runs
it, so a restarted server (or ``godot-mcp-admin reconcile``) can tell an export
whose server was killed (``interrupted``, evidence kept) from one still running.
Outputs register once the process has exited 0 and every expected file exists,
in one transaction, bound to the generation current when the export started.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from pathlib import Path

import anyio

from godot_mcp.engine.process.availability import Availability
from godot_mcp.engine.project import tree
from godot_mcp.engine.project.facts import export_warnings
from godot_mcp.engine.project.imported import never_imported
from godot_mcp.engine.project.presets import (
    Preset,
)
from godot_mcp.errors import Failed, GodotMcpError, NotFound, Unavailable
from godot_mcp.features.export import (
    RUNNING,
    VERIFYING,
    ExportJob,
    ExportRunner,
    ExportSetupError,
    plan_export,
    template_bytes,
)
from godot_mcp.features.export.recovery import settle_interrupted
from godot_mcp.features.importer.copies import copy_imported, import_copy
from godot_mcp.runtime.context import Runtime
from godot_mcp.runtime.ended import EndedSessions
from godot_mcp.runtime.headless import headless_availability
from godot_mcp.runtime.owner import me
from godot_mcp.runtime.slots import Slot
from godot_mcp.store.binding import bound_to, check_owner, unknown
from godot_mcp.store.exports import ExportRecord, ExportRecords
from godot_mcp.store.ids import is_valid_id, new_id
from godot_mcp.store.store import release_session_id
from godot_mcp.store.values import ArtifactInfo, Caller, NewArtifact

log = logging.getLogger(__name__)
EXPORT_TIMEOUT_S = 1800.0


@dataclass
class ExportView:
    """What ``project.export.status`` reports."""

    id: str
    preset: str | None  # None for a platform export
    kind: str
    state: str
    outputs: list[ArtifactInfo]
    error: str | None
    log_tail: str | None
    platform: str | None = None  # a platform export's platform (PLATFORMS)
    # its copy was imported first (docs/godot.md, Import), C#, a newer engine
    warnings: tuple[str, ...] = ()


def _view(
    row: ExportRecord, state: str, outputs: list[ArtifactInfo], error: str | None, tail: str | None
) -> ExportView:
    preset = None if row.platform else row.preset
    return ExportView(row.id, preset, row.kind, state, outputs, error, tail, row.platform)


class ExportService:
    """Runs the exports of one server process."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.store = rt.store
        self.records = ExportRecords(rt.store)
        self.jobs: dict[str, ExportJob] = {}
        self._ended = EndedSessions()
        self._unsettled: dict[str, tuple[str, str | None, str | None, int]] = {}
        self._done: dict[str, anyio.Event] = {}  # set when an export of this process ends
        self._warnings: dict[str, list[str]] = {}  # exports whose copy was imported first
        self._importing: dict[str, anyio.CancelScope] = {}  # exports importing their copy now
        self._closing = False  # the server is shutting down: what ends now was cancelled so
        self._stack = AsyncExitStack()
        self._tg: anyio.abc.TaskGroup | None = None

    async def start(self) -> None:
        """Settle exports a killed server left behind; open the watcher task group."""
        await self.rt.blocking(settle_interrupted, self.store)
        # The sandbox probe runs bwrap and the engine (seconds, at worst): once, here, off
        # the loop; server.profile and every export then read its cached answer.
        await self.rt.disk(self.availability)
        await self.rt.disk(_private_dir, self.rt.dirs.exports_dir)
        self._tg = await self._stack.enter_async_context(anyio.create_task_group())

    def availability(self) -> Availability:
        return headless_availability(self.rt)

    async def begin(
        self,
        caller: Caller,
        generation: int,
        preset_name: str | None,
        kind: str,
        platform: str | None = None,
    ) -> str:
        """Start an export of ``preset_name`` or, instead, of ``platform`` (exactly one of
        them); returns its id at once.

        Refused before anything is copied: neither or both, an unknown preset, a link out of
        the project (``invalid_argument``), no slot or not enough free space (``unavailable``).
        """
        profile = self.rt.godot.headless_profile
        plan = await self.rt.disk(
            plan_export, self.rt.project, preset_name, platform, kind, profile
        )
        self.availability().refuse()
        self.rt.slots.refuse_when_full()
        install = self.rt.godot
        assert install.headless is not None  # availability said so
        await self.rt.disk(plan.refuse_unsafe, self.rt.private_paths())
        runner = ExportRunner(
            install.headless,
            self.rt.dirs.exports_dir,
            profile=install.headless_profile,
            private=self.rt.private_paths(),
            engine=install.headless_name,
        )
        with self.rt.slots.take() as slot:  # a started export's watcher gives it back
            return await self._launch(
                runner, caller, generation, plan.preset, kind, plan.expected, slot, platform
            )

    async def _launch(
        self,
        runner: ExportRunner,
        caller: Caller,
        generation: int,
        preset: Preset,
        kind: str,
        expected: list[str],
        slot: Slot,
        platform: str | None = None,
    ) -> str:
        project = self.rt.project
        plan = await self.rt.disk(tree.plan, project)  # a link out: InvalidArgument
        await self.rt.disk(self._check_space, plan, runner, preset, kind)
        export_id = new_id()
        await self.rt.blocking(
            self.records.create,
            export_id,
            caller,
            generation,
            "" if platform else preset.name,
            kind,
            me(),
            platform,
        )
        try:
            job = await runner.start_async(
                project,
                preset,
                kind,
                export_id,
                expected,
                plan,
                write_preset=platform is not None,
                launch=False,
            )
            profile = self.rt.godot.headless_profile
            import_first = await self.rt.disk(never_imported, job.snapshot_dir, profile)
            version = self.rt.godot.headless_version
            warned = await self.rt.disk(export_warnings, job.snapshot_dir, version)
            if import_first:  # the watcher imports the copy, then launches (docs/godot.md, Import)
                warned.append(copy_imported("exported"))
            else:
                job.launch()
            if warned:
                self._warnings[export_id] = warned
        except ExportSetupError as exc:
            log.warning("export %s could not be prepared: %s", export_id, exc)
            await self._settle(export_id, "failed", exc.message, None)
            raise
        except OSError as exc:
            log.warning("export %s could not be prepared: %s", export_id, exc)
            why = "the copy could not be made"
            await self._settle(export_id, "failed", why, None)
            raise Failed(why) from None
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._settle(export_id, "cancelled", "the request was cancelled", None)
            raise
        except Exception:
            log.exception("export %s could not be started", export_id)
            await self._settle(export_id, "failed", "the export could not be started", None)
            raise Failed("the export could not be started") from None
        self.jobs[export_id] = job
        self._done.setdefault(export_id, anyio.Event())
        slot.keep()
        assert self._tg is not None
        self._tg.start_soon(self._watch, job, caller, generation, slot, import_first)
        if caller.session_id is not None and caller.session_id in self._ended:
            # The session ended while the project was being copied: nobody can use it.
            await job.cancel()
            raise Unavailable("the MCP session ended")
        return export_id

    def _check_space(
        self, plan: tree.Plan, runner: ExportRunner, preset: Preset, kind: str
    ) -> None:
        """Unavailable when the state dir's disk cannot hold a copy plus outputs of its size."""
        need = 2 * plan.bytes + template_bytes(runner.env, preset, kind, self.rt.project)
        try:
            free = shutil.disk_usage(self.rt.dirs.exports_dir).free
        except OSError:
            return
        if free < need:
            raise Unavailable(
                f"the state dir's disk has {free} bytes free; this export needs about {need} "
                "(a copy of the project and outputs of its size)"
            )

    async def _watch(
        self,
        job: ExportJob,
        caller: Caller,
        generation: int,
        slot: Slot,
        import_first: bool = False,
    ) -> None:
        """Follow one export to its end; whatever fails here ends the export, never the server.
        ``import_first``: its never-imported copy is imported here, then its Godot launched."""
        outcome: tuple[str, str | None, str | None] = ("failed", "internal error", None)
        try:
            if import_first:
                with anyio.CancelScope() as importing:  # a cancel of the export ends it
                    self._importing[job.export_id] = importing
                    try:
                        await import_copy(self.rt, job.snapshot_dir, job.work_dir / "import")
                    except GodotMcpError as exc:
                        if job.state == "pending":
                            why = f"the copy could not be imported: {exc.message}"
                            outcome = ("failed", why, None)
                            job.kill()
                            return
                    finally:
                        self._importing.pop(job.export_id, None)
                if job.state != "pending":  # cancelled while its copy was imported
                    outcome = ("cancelled", None, None)
                    return
                job.launch()
            state = await job.wait(EXPORT_TIMEOUT_S)
            if state in (RUNNING, VERIFYING):
                job.kill()
                limit = f"{EXPORT_TIMEOUT_S:.0f} s"
                outcome = (
                    "failed",
                    f"the export did not finish within {limit} and was stopped",
                    job.log_tail(),
                )
            elif state == "succeeded":
                outcome = await self._register(job, caller, generation)
            elif state == "failed":
                outcome = ("failed", job.error, job.log_tail())
            elif state == "cancelled":
                outcome = ("cancelled", "the server shut down" if self._closing else None, None)
        except anyio.get_cancelled_exc_class():
            # Only the server's shutdown cancels a watcher (aclose, which killed the job).
            outcome = ("cancelled", "the server shut down", None)
            raise
        except Exception:
            log.exception("watching export %s failed", job.export_id)
        finally:
            with anyio.CancelScope(shield=True):
                if job.state in (RUNNING, VERIFYING):
                    job.kill()
                await job.reap()
                slot.release()  # its Godot has ended
                await self._settle(job.export_id, *outcome)
                await self.rt.disk(job.cleanup)
                self.jobs.pop(job.export_id, None)

    async def _register(
        self, job: ExportJob, caller: Caller, generation: int
    ) -> tuple[str, str | None, str | None]:
        items = [
            NewArtifact("application/octet-stream", path, name=name) for name, path in job.outputs
        ]
        try:
            await self.rt.blocking(
                lambda: self.store.register_group(caller, generation, items, job.export_id)
            )
        except GodotMcpError as exc:
            total = sum(p.stat().st_size for _, p in job.outputs if p.exists())
            why = f"the outputs ({total} bytes) could not be stored: {exc.message}"
            return "failed", why, job.log_tail()
        if caller.session_id is not None and caller.session_id in self._ended:
            # The session ended while its outputs were being stored: nobody can read them.
            with contextlib.suppress(GodotMcpError):
                await self.rt.blocking(
                    release_session_id, self.store, caller.launch_id or "", caller.session_id
                )
        return "succeeded", None, None

    async def _settle(
        self, export_id: str, state: str, error: str | None, tail: str | None
    ) -> None:
        """Record an export's end; kept in memory (and retried) while the database refuses."""
        self._unsettled[export_id] = (state, error, tail, self.store.now_us())
        await self.rt.blocking(self._flush)
        done = self._done.pop(export_id, None)  # waiters hold it; later ones find it settled
        if done is not None:
            done.set()

    async def wait_settled(self, export_id: str, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) until the export has left ``running``; True if it has.

        Awaits this process's completion event; an export of another server on the same
        store is looked up in the database instead, twice a second.
        """
        with anyio.move_on_after(max(0.0, timeout)):
            while not await self.settled(export_id):
                done = self._done.get(export_id)
                if done is not None:
                    await done.wait()
                else:
                    await anyio.sleep(0.5)
        return await self.settled(export_id)

    def _flush(self) -> None:
        """Write the ends the database refused so far; never raises."""
        for export_id, (state, error, tail, ended) in list(self._unsettled.items()):
            try:
                self.records.finish(export_id, state, error, tail, ended)
            except Exception as exc:  # a full disk: the export's end waits in memory
                log.warning("export %s: its end is not stored yet: %s", export_id, exc)
                return
            self._unsettled.pop(export_id, None)

    def _row(self, caller: Caller, export_id: str) -> ExportRecord:
        if not isinstance(export_id, str) or not is_valid_id(export_id):
            raise unknown("export")
        row = self.records.get(export_id)
        if row is None:
            raise unknown("export")
        check_owner(caller, bound_to(row), "export")
        return row

    async def view(self, caller: Caller, export_id: str) -> ExportView:
        """The caller's export as ``project.export.status`` reports it."""
        return await self.rt.blocking(self._view, caller, export_id)

    def _view(self, caller: Caller, export_id: str) -> ExportView:
        self._flush()
        row = self._row(caller, export_id)
        warned = tuple(self._warnings.get(export_id, ()))
        if export_id in self._unsettled:  # the database refused its end: say it from memory
            state, error, tail, _ = self._unsettled[export_id]
            return replace(_view(row, state, [], error, tail), warnings=warned)
        outputs: list[ArtifactInfo] = []
        if row.state == "succeeded":
            outputs = live_outputs(
                self.store.export_artifacts(export_id), lambda a: self.store.info(caller, a.id)
            )
        return replace(_view(row, row.state, outputs, row.error, row.log_tail), warnings=warned)

    def warnings(self, export_id: str) -> list[str]:
        """What the export's answers say besides its state: its copy was imported first, C#
        on an engine without .NET, a project saved by a newer engine."""
        return list(self._warnings.get(export_id, ()))

    def running(self) -> int:
        """How many of this server's exports (and project checks) are running or starting."""
        return self.rt.slots.held

    def progress(self, export_id: str) -> tuple[int, int, str] | None:
        """Bytes written so far, the estimate, and the job's state (running or verifying)."""
        job = self.jobs.get(export_id)
        if job is None or job.state not in (RUNNING, VERIFYING):
            return None
        done, estimate = job.progress()
        return done, estimate, job.state

    async def settled(self, export_id: str) -> bool:
        """True once the export has left ``running``."""
        if export_id in self._unsettled:
            return True
        return await self.rt.blocking(self.records.state, export_id) != "running"

    async def cancel(self, caller: Caller, export_id: str) -> str:
        """Cancel the caller's export; returns its final state."""
        row = await self.rt.blocking(self._row, caller, export_id)
        job = self.jobs.get(export_id)
        if row.state != "running" or job is None:
            return row.state
        if (importing := self._importing.get(export_id)) is not None:
            importing.cancel()
        await job.cancel()
        await self.wait_settled(export_id, 30)
        # As status says it: an end being written (or refused by the database) is in memory.
        return (await self.view(caller, export_id)).state

    async def session_ended(self, session_id: str) -> None:
        """Kill the exports of an ended HTTP session."""
        self._ended.add(session_id)
        for export_id, job in list(self.jobs.items()):
            row = await self.rt.blocking(self.records.get, export_id)
            if (
                row is not None
                and row.session_id == session_id
                and job.state
                in (
                    RUNNING,
                    "pending",  # importing its copy first
                )
            ):
                if (importing := self._importing.get(export_id)) is not None:
                    importing.cancel()
                await job.cancel()

    async def aclose(self) -> None:
        """Stop every running export of this process (graceful shutdown): each one's watcher
        records it as cancelled, "the server shut down", and removes its work dir."""
        self._closing = True
        for job in list(self.jobs.values()):
            if job.state in (RUNNING, VERIFYING):
                job.kill()
                await job.reap()
        await self._stack.aclose()


def _private_dir(path: Path) -> None:
    path.mkdir(mode=0o700, exist_ok=True)
    os.chmod(path, 0o700)


def live_outputs(
    artifacts: Sequence[ArtifactInfo], describe: Callable[[ArtifactInfo], ArtifactInfo]
) -> list[ArtifactInfo]:
    """A succeeded export's outputs the caller can still read: those released since (expired,
    an older generation) are left out; any other failure (the store unreachable) is raised,
    so an answer never lists fewer outputs than there are without saying why."""
    kept = []
    for artifact in artifacts:
        try:
            kept.append(describe(artifact))
        except NotFound:
            continue
    return kept

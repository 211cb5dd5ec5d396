"""Private copies of a never-imported project, imported first: what a check and an export
run on (``project.import`` itself is :mod:`imports`). Kept apart from it so that the export
service, which ``project.import`` takes its slots from, can call it too.

A test run's copy is imported through :func:`import_or_reuse`: what an earlier import of the
same files by the same engine wrote is taken from the import cache
(``runtime/import_cache.py``) instead of running the engine, and what a new import writes is
kept there before anything else runs in the copy.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import anyio

from godot_mcp.engine.process.environment import for_sandbox
from godot_mcp.engine.process.locate import GodotInstall
from godot_mcp.engine.process.redact import as_res
from godot_mcp.engine.project import tree
from godot_mcp.engine.project.imported import never_imported
from godot_mcp.errors import Unavailable
from godot_mcp.features import importer
from godot_mcp.features.importer import Importer, Outcome, Progress
from godot_mcp.runtime.context import Runtime
from godot_mcp.runtime.import_cache import ImportCache, Snapshot

__all__ = [
    "COPY_IMPORTED",
    "ImportedCopy",
    "Reused",
    "copy_imported",
    "engine_identity",
    "import_copy",
    "import_or_reuse",
    "imported_copy",
]

COPY_IMPORTED = (
    "the project was never imported, so its private copy was imported first "
    "(as the editor would) and that copy was {what}"
)


def copy_imported(what: str) -> str:
    """The warning of a check (``what``: ``checked``) or an export (``exported``) whose
    private copy was imported first."""
    return COPY_IMPORTED.format(what=what)


async def import_copy(
    rt: Runtime,
    copy: Path,
    work_dir: Path,
    progress: Progress | None = None,
    *,
    always: bool = False,
    limit: float | None = None,
) -> Outcome | None:
    """Import the private copy ``copy`` in place when it was never imported, or ``always``
    (``None``: it needed nothing). The engine's XDG dirs go to ``work_dir`` (made here,
    removed after); the caller holds its slot. ``limit``: seconds the import may take at
    most. Refusals are the import's (``ImportFailed``, ``ImportTimeout``)."""
    install = rt.godot
    if install.headless is None:
        raise Unavailable("no headless Godot binary found (godot3-server or Godot 4)")
    if not always and not await rt.disk(never_imported, copy, install.headless_profile):
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
        await rt.disk(job.prepare)
        job.launch()
        bound = importer.time_limit(len(job.expected))
        return await job.run(bound if limit is None else min(bound, limit), progress)
    finally:
        with anyio.CancelScope(shield=True):
            await job.stop()
            await rt.disk(tree.remove, work_dir)


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
    if not await rt.disk(never_imported, rt.project, rt.godot.headless_profile):
        return None
    copy = work / "project"
    try:
        await rt.disk(work.mkdir, 0o700)
        await rt.disk(tree.copy, plan, copy)
        await import_copy(rt, copy, work / "import", progress)
        return ImportedCopy(await rt.disk(tree.plan, copy), work, copy_imported(what))
    except BaseException:
        with anyio.CancelScope(shield=True):
            await rt.disk(tree.remove, work)
        raise


@dataclass(frozen=True)
class Reused:
    """A copy given what an earlier import of the same files wrote: no engine ran."""


def engine_identity(install: GodotInstall) -> str:
    """What besides the copy's files decides what an import writes (blocking: a ``stat``): the
    headless engine (its path, its version, the inode, size and times of its binary) and how
    it is run (its import flags, the sandbox's locale). The cache's own format number stands
    for the rest of how this server imports."""
    binary = install.headless or ""
    real = os.path.realpath(binary)
    try:
        st = os.stat(real)
        seen = f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"
    except OSError:
        seen = "-"
    locale = sorted((k, v) for k, v in for_sandbox(os.environ).items() if k != "PATH")
    flags = " ".join(install.headless_profile.import_flags)
    return f"{real}|{seen}|{install.headless_version}|{flags}|{locale}"


async def import_or_reuse(
    rt: Runtime,
    cache: ImportCache,
    plan: tree.Plan,
    copy: Path,
    work_dir: Path,
    progress: Progress | None = None,
    *,
    limit: float | None = None,
) -> Outcome | Reused | None:
    """Import the copy ``copy`` of ``plan`` as :func:`import_copy` with ``always``, unless the
    cache holds what an import of the same files by the same engine wrote: the copy then gets
    that (``Reused``). A new import's writes are kept before this returns, so nothing that runs
    in the copy afterwards reaches the cache. Refusals are the import's."""
    identity = await rt.disk(engine_identity, rt.godot)
    snap = await rt.disk(cache.snapshot, copy, identity)
    if snap is not None:
        applied = await rt.disk(cache.apply, snap, copy)
        if applied == "reused":
            return Reused()
        if applied == "spoiled":  # the entry failed its checks after the copy was changed
            await rt.disk(tree.remove, copy)
            await rt.disk(tree.copy, plan, copy)
            snap = await rt.disk(cache.snapshot, copy, identity)
    outcome = await import_copy(rt, copy, work_dir, progress, always=True, limit=limit)
    if snap is not None:
        with anyio.CancelScope(shield=True):
            await rt.disk(_keep, cache, snap, copy)
    return outcome


def _keep(cache: ImportCache, snap: Snapshot, copy: Path) -> bool:
    """Keep the import's writes; the run goes on without them when they cannot be kept
    (a full disk, a cache dir that is not a folder)."""
    try:
        return cache.capture(snap, copy)
    except OSError:
        return False

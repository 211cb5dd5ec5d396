"""Assembling a running server: store, startup reconciliation, Godot services, MCP edge.

One process serves one transport. Startup reconciles the store (under the
exclusive blob lock, so another process on the same state dir is safe), then
settles exports a killed server left behind. Shutdown stops every game and
export this process started and releases what only this launch could read.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
from mcp.server import Server

from godot_mcp.config import Settings
from godot_mcp.engine.process.locate import locate_godot
from godot_mcp.engine.process.redact import private_roots
from godot_mcp.features.api import tools as api_tools
from godot_mcp.features.check import tools as check_tools
from godot_mcp.features.core import tools as core_tools
from godot_mcp.features.debug import tools as debug_tools
from godot_mcp.features.export import tools as export_tools
from godot_mcp.features.game import tools as game_tools
from godot_mcp.features.game import tools_inspect as inspect_tools
from godot_mcp.features.game import tools_perf as perf_tools
from godot_mcp.features.importer import tools as import_tools
from godot_mcp.features.services import ServerDeps, close_services, session_ended
from godot_mcp.features.testrun import tools as test_tools
from godot_mcp.mcp.deps import Transport
from godot_mcp.mcp.disclosure import Disclosure
from godot_mcp.mcp.server import build_server, preview_budget
from godot_mcp.mcp.spec import Tool
from godot_mcp.runtime.context import Runtime
from godot_mcp.runtime.heartbeat import keep_beating
from godot_mcp.runtime.releases import Releases
from godot_mcp.store.ids import new_id
from godot_mcp.store.reconcile import reconcile
from godot_mcp.store.store import ArtifactStore, release_launch

log = logging.getLogger(__name__)


def shipped_tools() -> list[Tool]:
    """Every tool the shipped server offers: each feature's, registered here."""
    return [
        *core_tools.TOOLS,
        *game_tools.TOOLS,
        *perf_tools.TOOLS,
        *inspect_tools.TOOLS,
        *debug_tools.TOOLS,
        *export_tools.TOOLS,
        *check_tools.TOOLS,
        *import_tools.TOOLS,
        *test_tools.TOOLS,
        *api_tools.TOOLS,
    ]


@dataclass
class App:
    """A built server and what it runs on."""

    server: Server
    deps: ServerDeps

    async def on_session_end(self, session_id: str) -> None:
        """An HTTP MCP session ended: release its artifacts, stop its games and exports."""
        await session_ended(self.deps, session_id)


@asynccontextmanager
async def open_app(
    settings: Settings,
    project: Path,
    transport: Transport,
    extra_tools: Sequence[Tool] = (),
) -> AsyncIterator[App]:
    """Open the store, reconcile it, start services, build the server; clean up on exit."""
    from godot_mcp.features.api.service import ApiService
    from godot_mcp.features.check.service import CheckService
    from godot_mcp.features.core.service import CoreService
    from godot_mcp.features.debug.service import DebugService
    from godot_mcp.features.export.service import ExportService
    from godot_mcp.features.game.service import GameService
    from godot_mcp.features.testrun.service import TestService

    # Opening the store migrates its database, and locating Godot runs `--version`: both
    # block, so both run on worker threads, as everything the server does on the store.
    store = await anyio.to_thread.run_sync(
        lambda: ArtifactStore(
            settings.state_dir,
            settings.limits,
            database_url=settings.database_url,
            blob_store_url=settings.blob_store_url,
        )
    )
    try:
        report = await anyio.to_thread.run_sync(reconcile, store)  # before serving
        log.info("startup reconcile: %s", report.as_dict())
        godot = await anyio.to_thread.run_sync(
            locate_godot, settings.godot, settings.godot_headless
        )
        runtime = Runtime(
            store=store,
            project=project,
            godot=godot,
            capacity=settings.capacity,
            private=tuple(private_roots(settings.state_dir, *settings.state_dir_spellings)),
        )
        exports = ExportService(runtime)
        await exports.start()
        games = GameService(runtime)
        await games.start_service()
        launch_id = new_id() if transport == "http" else None
        checks = CheckService(runtime)
        deps = ServerDeps(
            runtime=runtime,
            transport=transport,
            launch_id=launch_id,
            limits=settings.limits,
            disclosure=Disclosure.of(transport, settings.allow_runtime_writes),
            core=CoreService(runtime),
            games=games,
            debug=DebugService(games, checks),
            exports=exports,
            checks=checks,
            tests=TestService(runtime),
            api=ApiService(runtime),
            names=settings.tool_names,
            toolsets=settings.toolsets,
            releases=Releases(runtime, launch_id) if launch_id is not None else None,
        )
        try:
            async with anyio.create_task_group() as tg:
                if deps.releases is not None:
                    tg.start_soon(deps.releases.run)
                if store.shared_database:
                    tg.start_soon(keep_beating, runtime)
                try:
                    server = build_server(deps, [*shipped_tools(), *extra_tools])
                    games.preview_budget = preview_budget(server, settings.limits.max_output_bytes)
                    yield App(server, deps)
                finally:
                    tg.cancel_scope.cancel()
        finally:
            await close_services(deps)  # the exports' task group closes in its own scope
            if deps.launch_id is not None:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(release_launch, store, deps.launch_id)
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(store.close)

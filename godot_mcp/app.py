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
from godot_mcp.edge.deps import ServerDeps, Transport
from godot_mcp.edge.disclosure import Disclosure
from godot_mcp.edge.server import build_server
from godot_mcp.edge.spec import Tool
from godot_mcp.godot.process.locate import locate_godot
from godot_mcp.godot.process.redact import private_roots
from godot_mcp.runtime.context import Runtime
from godot_mcp.runtime.heartbeat import keep_beating
from godot_mcp.runtime.releases import Releases
from godot_mcp.services import close_services, session_ended
from godot_mcp.store.ids import new_id
from godot_mcp.store.reconcile import reconcile
from godot_mcp.store.store import ArtifactStore, release_launch

log = logging.getLogger(__name__)


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
    from godot_mcp.runtime.api import ApiService
    from godot_mcp.runtime.checks import CheckService
    from godot_mcp.runtime.exports import ExportService
    from godot_mcp.runtime.games import GameService
    from godot_mcp.runtime.testing import TestService

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
        deps = ServerDeps(
            runtime=runtime,
            transport=transport,
            launch_id=launch_id,
            limits=settings.limits,
            disclosure=Disclosure.of(transport, settings.allow_runtime_writes),
            games=games,
            exports=exports,
            checks=CheckService(runtime, exports),
            tests=TestService(runtime, exports),
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
                    yield App(build_server(deps, extra_tools), deps)
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

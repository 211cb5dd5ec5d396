"""The core tools' service: the engine found, the project's facts, its generation."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from godot_mcp.engine.process.redact import printable
from godot_mcp.engine.project.imported import never_imported
from godot_mcp.engine.project.info import ProjectInfo, read_info
from godot_mcp.engine.project.source import Source, read_source
from godot_mcp.runtime.context import Runtime


class CoreService:
    """What ``server.profile``, ``project.info`` and ``project.reload`` read and change."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    def godot(self) -> dict[str, Any]:
        """The engine this server runs, as ``server.profile`` says it."""
        install = self.rt.godot
        return {
            "version": install.version,
            "headless_version": install.headless_version,
            "major": install.major,
            "dotnet": install.dotnet,
        }

    def capacity(self, games_running: int, exports_running: int) -> dict[str, int]:
        """The ``capacity`` object of ``server.profile``."""
        cap = self.rt.capacity
        return {
            "max_game_sessions": cap.max_game_sessions,
            "max_exports": cap.max_exports,
            "game_sessions_running": games_running,
            "exports_running": exports_running,
        }

    async def info(self) -> ProjectInfo:
        """The project's name, main scene, presets and what it needs of its engine; a warning
        when a game of it would be refused as never imported (said before a start fails)."""
        install = self.rt.godot
        version = install.version or install.headless_version
        info = await self.rt.disk(read_info, self.rt.project, version)
        if install.major is not None:
            engine = install.profile
            if await self.rt.disk(never_imported, self.rt.project, engine):
                warning = (
                    f"the project was never imported (it has no {engine.import_folder} folder): "
                    "a game of it is refused until it is"
                )
                info = replace(info, warnings=[*info.warnings, warning])
        return info

    async def reload(self) -> int:
        """Advance the project's generation (the project is read anew); the new one."""
        state = await self.rt.blocking(self.rt.store.projects.advance, self.rt.project)
        return state.generation

    async def source(self, path: str) -> Source:
        """A text file of the project, its lines made printable for a client (tabs kept)."""
        read = await self.rt.disk(read_source, self.rt.project, path)
        return Source([printable(line) for line in read.lines], read.sha256)

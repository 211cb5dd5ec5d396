"""``project.api``: the class reference of the engine this server runs, dumped once per
engine version into ``<state>/api/`` and kept in memory after first use
(``features/api/reference.py``).

A killed server's partial dump (``<state>/api/.partial-<pid>-<start>-…``) is removed when the
next server starts, at the next dump and by ``godot-mcp-admin reconcile``; a live one's never."""

from __future__ import annotations

import anyio

from godot_mcp.engine.process.availability import AVAILABLE, Availability, unavailable
from godot_mcp.features import api
from godot_mcp.runtime.context import Runtime
from godot_mcp.runtime.dirs import RuntimeDirs
from godot_mcp.store.store import ArtifactStore


def sweep_dead_dumps(store: ArtifactStore) -> int:
    """Remove the partial class-reference dumps of server processes that are gone (judged by
    pid and start time, so a reused pid is not taken for their owner); returns how many."""
    return api.sweep_partials(RuntimeDirs(store.layout.state_dir).api_dir)


class ApiService:
    """Answers about the engine's own API; the dump happens on the first question."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        sweep_dead_dumps(rt.store)
        self._index: api.ApiIndex | None = None
        self._lock = anyio.Lock()
        self.last_dump: api.DumpReport | None = None

    def availability(self) -> Availability:
        install = self.rt.godot
        if not install.headless or not install.headless_version:
            return unavailable("no headless Godot found to dump its class reference")
        return AVAILABLE

    async def index(self) -> api.ApiIndex:
        """The engine's reference, dumped if this engine version has none yet."""
        if self._index is not None:
            return self._index
        async with self._lock:
            if self._index is None:
                self.availability().refuse()
                install = self.rt.godot
                assert install.headless is not None and install.headless_version is not None
                self.last_dump = await api.dump(
                    install.headless,
                    install.headless_profile,
                    self.rt.dirs.api_dir,
                    install.headless_version,
                )
                self._index = await self.rt.disk(
                    api.ApiIndex, self.last_dump.path, install.headless_name
                )
            return self._index

    async def lookup(self, name: str, member: str | None) -> dict[str, object]:
        """The answer about ``name`` (and ``member``). Off the loop: a class is parsed on
        first use, and close names for a miss compare against every name."""
        api.check_class(name)
        if member is not None:
            api.check_member(member)
        index = await self.index()
        return await self.rt.disk(index.lookup, name, member)

"""What the runtime services (game sessions, exports) run on: one typed object per server."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio

from godot_mcp.engine.process.locate import GodotInstall
from godot_mcp.engine.process.redact import PathPair, private_roots
from godot_mcp.runtime.dirs import RuntimeDirs
from godot_mcp.runtime.slots import Slots
from godot_mcp.store.store import ArtifactStore

T = TypeVar("T")
DISK_THREADS = 4  # disk work at once (walks, copies, removals), beside the database's


@dataclass(frozen=True)
class Capacity:
    """How many games and exports one server process runs at once."""

    max_game_sessions: int = 4
    max_exports: int = 2


@dataclass(frozen=True)
class Runtime:
    """The store, the project and the Godot found, as the services of one server use them.
    What a caller may be told of a refusal is not the services' concern: they raise the
    precise error and the edge's disclosure policy decides."""

    store: ArtifactStore
    project: Path
    godot: GodotInstall
    capacity: Capacity = field(default_factory=Capacity)
    private: tuple[PathPair, ...] = ()  # paths no text to a client may name (the state dir)

    _limiter: list[anyio.CapacityLimiter] = field(default_factory=list, repr=False)
    _disk: list[anyio.CapacityLimiter] = field(default_factory=list, repr=False)
    _slots: list[Slots] = field(default_factory=list, repr=False)

    @property
    def slots(self) -> Slots:
        """The ``--max-exports`` slots exports and checks share (``runtime/slots.py``)."""
        if not self._slots:
            self._slots.append(Slots(self.capacity.max_exports))
        return self._slots[0]

    async def blocking(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` (store work) on a worker thread: the one way the services reach the
        synchronous store from the event loop. At most as many at once as the store's
        database connections (``ArtifactStore.threads``), so a slow database makes callers
        wait their turn, never the loop."""
        if not self._limiter:
            self._limiter.append(anyio.CapacityLimiter(self.store.threads))
        call = functools.partial(fn, *args, **kwargs)
        return await anyio.to_thread.run_sync(call, limiter=self._limiter[0])

    async def disk(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` (a project walk, a copy, a removal, a probe of the engine) on a worker
        thread of its own limiter: a slow disk or a large project never holds the threads
        the database work waits for, nor the other way round."""
        if not self._disk:
            self._disk.append(anyio.CapacityLimiter(DISK_THREADS))
        call = functools.partial(fn, *args, **kwargs)
        return await anyio.to_thread.run_sync(call, limiter=self._disk[0])

    @property
    def dirs(self) -> RuntimeDirs:
        """The runtime's folders under the state dir (exports, evidence, scratch, api)."""
        return RuntimeDirs(self.store.layout.state_dir)

    def private_paths(self) -> tuple[PathPair, ...]:
        """What no text to a client may name: as configured, else the state dir and parent."""
        return self.private or tuple(private_roots(self.store.layout.state_dir))

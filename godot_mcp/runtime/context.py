"""What the runtime services (game sessions, exports) run on: one typed object per server."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from godot_mcp.godot.locate import GodotInstall
from godot_mcp.godot.redact import PathPair, private_roots
from godot_mcp.store.store import ArtifactStore


@dataclass(frozen=True)
class Capacity:
    """How many games and exports one server process runs at once."""

    max_game_sessions: int = 4
    max_exports: int = 2


@dataclass(frozen=True)
class Runtime:
    """The store, the project and the Godot found, as the services of one server use them.

    ``http``: callers are HTTP principals, so another caller's thing answers exactly like an
    unknown one (the uniform refusal).
    """

    store: ArtifactStore
    project: Path
    godot: GodotInstall
    http: bool
    capacity: Capacity = field(default_factory=Capacity)
    private: tuple[PathPair, ...] = ()  # paths no text to a client may name (the state dir)
    allow_writes: bool = False  # runtime.node.set/call over HTTP (--allow-runtime-writes)

    def private_paths(self) -> tuple[PathPair, ...]:
        """What no text to a client may name: as configured, else the state dir and parent."""
        return self.private or tuple(private_roots(self.store.layout.state_dir))

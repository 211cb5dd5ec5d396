"""runtime.perf.read: a running game's performance at a glance, from the engine's monitors."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp import types

from godot_mcp.features.game.tools import SESSION_ID
from godot_mcp.mcp.outcomes import ok
from godot_mcp.mcp.spec import INTEGER, NULL, NUMBER, Tool

if TYPE_CHECKING:
    from godot_mcp.features.services import Call


FIELDS = {
    "fps": {"anyOf": [NUMBER, NULL]},
    "frame_ms": NUMBER,
    "physics_ms": NUMBER,
    "memory_static_bytes": INTEGER,
    "objects": INTEGER,
    "nodes": INTEGER,
    "orphan_nodes": INTEGER,
    "draw_calls": {"anyOf": [INTEGER, NULL]},
    "frame": INTEGER,
}


async def perf_read(call: Call) -> types.CallToolResult:
    perf = await call.deps.games.perf(call.caller, call.args["session_id"])
    return ok(**{name: getattr(perf, name) for name in FIELDS})


TOOLS = [
    Tool(
        "runtime.perf.read",
        "Read a game's performance",
        "The engine's own performance monitors, read at one frame in one round trip: fps "
        "(null until 0.5 s of frames), "
        "frame_ms (process time), physics_ms, memory_static_bytes, objects, nodes, "
        "orphan_nodes, draw_calls (null where nothing draws, e.g. headless) and the frame "
        "they were read at.",
        perf_read,
        args=(SESSION_ID,),
        answer=FIELDS,
        required=tuple(FIELDS),
        read_only=True,
        idempotent=True,
        toolset="game",
    ),
]

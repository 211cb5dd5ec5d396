"""Game-session tools: runtime.session.*, screenshot and recording captures."""

from __future__ import annotations

from typing import Any

from mcp import types

from godot_mcp.edge.args import Args
from godot_mcp.edge.deps import ServerDeps, ToolCall, ToolSpec, schema
from godot_mcp.edge.describe import artifact_dict, resource_link
from godot_mcp.edge.outcomes import ok
from godot_mcp.errors import InvalidArgument
from godot_mcp.runtime.games import GameService, Managed

MAX_RECORDING_S = 30


def _service(call: ToolCall) -> GameService:
    service: GameService = call.deps.service("games")
    return service


def _availability(*modes: str) -> Any:
    """Available when any of ``modes`` is; else the first mode's reason."""

    def check(deps: ServerDeps) -> str:
        service = deps.services.get("games")
        if service is None:
            return "unavailable: not started"
        answers = [service.availability(m) for m in modes]
        return "available" if "available" in answers else answers[0]

    return check


def _session(m: Managed) -> dict[str, Any]:
    out: dict[str, Any] = {"id": m.id, "mode": m.game.mode, "state": m.game.poll()}
    if m.game.exit_code is not None:
        out["exit_code"] = m.game.exit_code
    return out


async def session_start(call: ToolCall) -> types.CallToolResult:
    args = Args(call.arguments, {"mode", "scene"})
    mode = args.choice("mode", ("windowed", "headless"), "windowed")
    scene = args.optional_string("scene")
    managed = await _service(call).start(call.caller, mode, scene)
    return ok(session=_session(managed))


async def session_list(call: ToolCall) -> types.CallToolResult:
    Args(call.arguments, set())
    return ok(sessions=[_session(m) for m in _service(call).list(call.caller)])


async def session_stop(call: ToolCall) -> types.CallToolResult:
    session_id = Args(call.arguments, {"session_id"}).string("session_id", required=True)
    managed = await _service(call).stop(call.caller, session_id)
    return ok(state=managed.game.poll(), exit_code=managed.game.exit_code)


async def screenshot(call: ToolCall) -> types.CallToolResult:
    session_id = Args(call.arguments, {"session_id"}).string("session_id", required=True)
    info = await _service(call).screenshot(call.caller, call.generation, session_id)
    return ok([resource_link(info)], artifact=artifact_dict(info))


async def recording(call: ToolCall) -> types.CallToolResult:
    args = Args(call.arguments, {"session_id", "frames", "fps"})
    session_id = args.string("session_id", required=True)
    frames = args.integer("frames", 2, 300, 30)
    fps = args.integer("fps", 1, 60, 10)
    if frames / fps > MAX_RECORDING_S:
        raise InvalidArgument(
            f"{frames} frames at {fps} fps is {frames / fps:.1f} s of game time; "
            f"at most {MAX_RECORDING_S} s"
        )
    info = await _service(call).record(call.caller, call.generation, session_id, frames, fps)
    return ok([resource_link(info)], artifact=artifact_dict(info))


_SID = {"session_id": {"type": "string"}}

TOOLS = [
    ToolSpec(
        "runtime.session.start",
        "Start the project's main scene (or a res:// scene) in a managed game session: "
        "windowed (captures work) or headless.",
        schema(
            {
                "mode": {"type": "string", "enum": ["windowed", "headless"], "default": "windowed"},
                "scene": {"type": "string", "description": "res://path/to/scene.tscn"},
            }
        ),
        session_start,
        _availability("windowed", "headless"),
    ),
    ToolSpec(
        "runtime.session.list",
        "Your game sessions and their state.",
        schema(),
        session_list,
    ),
    ToolSpec(
        "runtime.session.stop",
        "Stop a game session; answers its final state and exit code.",
        schema(_SID, ["session_id"]),
        session_stop,
    ),
    ToolSpec(
        "runtime.screenshot.capture",
        "Capture one PNG of what the engine drew into the root viewport of a windowed session.",
        schema(_SID, ["session_id"]),
        screenshot,
        _availability("windowed"),
    ),
    ToolSpec(
        "runtime.recording.capture",
        "Capture an animated PNG: frames (2-300, default 30) at fps (1-60, default 10), "
        "at most 30 s of game time.",
        schema(
            {
                **_SID,
                "frames": {"type": "integer", "minimum": 2, "maximum": 300, "default": 30},
                "fps": {"type": "integer", "minimum": 1, "maximum": 60, "default": 10},
            },
            ["session_id"],
        ),
        recording,
        _availability("windowed"),
    ),
]

"""Export tools: ``project.export``, ``project.export.status``, ``project.export.cancel``."""

from __future__ import annotations

import time
from typing import Any

import anyio
from mcp import types

from godot_mcp.edge.args import Args
from godot_mcp.edge.deps import ServerDeps, ToolCall, ToolSpec, schema
from godot_mcp.edge.describe import artifact_dict, resource_link
from godot_mcp.edge.outcomes import ok
from godot_mcp.godot.presets import KINDS
from godot_mcp.runtime.exports import ExportService, ExportView

PROGRESS_EVERY_S = 0.5


def describe(view: ExportView) -> dict[str, Any]:
    """The ``export`` object of tool answers."""
    out: dict[str, Any] = {
        "id": view.id,
        "preset": view.preset,
        "kind": view.kind,
        "state": view.state,
        "outputs": [artifact_dict(o) for o in view.outputs],
    }
    if view.error:
        out["error"] = view.error
    if view.log_tail:
        out["log_tail"] = view.log_tail
    return out


def _service(call: ToolCall) -> ExportService:
    service: ExportService = call.deps.service("exports")
    return service


def availability(deps: ServerDeps) -> str:
    service = deps.services.get("exports")
    return service.availability() if service is not None else "unavailable: not started"


async def export_start(call: ToolCall) -> types.CallToolResult:
    args = Args(call.arguments, {"preset", "kind"})
    preset = args.string("preset", required=True)
    kind = args.choice("kind", KINDS, "release")
    export_id = await _service(call).begin(call.caller, call.generation, preset, kind)
    return ok(export={"id": export_id, "state": "running"})


async def export_status(call: ToolCall) -> types.CallToolResult:
    args = Args(call.arguments, {"export_id", "wait_seconds"})
    export_id = args.string("export_id", required=True)
    wait = args.number("wait_seconds", 0, 60, 0)
    service = _service(call)
    view = service.view(call.caller, export_id)
    if view.state == "running" and wait > 0:
        deadline = time.monotonic() + wait
        next_note = 0.0
        while time.monotonic() < deadline and not service.settled(export_id):
            now = time.monotonic()
            if now >= next_note:
                progress = service.progress(export_id)
                if progress is not None:
                    done, total = progress
                    await call.progress(done, total, f"{done} of about {total} bytes written")
                next_note = now + PROGRESS_EVERY_S
            await anyio.sleep(0.05)
        view = service.view(call.caller, export_id)
    links: list[types.ContentBlock] = [resource_link(o) for o in view.outputs]
    return ok(links, export=describe(view))


async def export_cancel(call: ToolCall) -> types.CallToolResult:
    export_id = Args(call.arguments, {"export_id"}).string("export_id", required=True)
    state = await _service(call).cancel(call.caller, export_id)
    return ok(export={"id": export_id, "state": state}, state=state)


TOOLS = [
    ToolSpec(
        "project.export",
        "Export the project with one of its presets (kind release, debug or pack). Answers at "
        "once with the export's id; follow it with project.export.status.",
        schema(
            {
                "preset": {"type": "string", "description": "an export preset name"},
                "kind": {"type": "string", "enum": list(KINDS), "default": "release"},
            },
            ["preset"],
        ),
        export_start,
        availability,
    ),
    ToolSpec(
        "project.export.status",
        "State of an export; on success its outputs as artifacts. wait_seconds (0-60) waits "
        "for the export to end, with progress notifications when a progress token is given.",
        schema(
            {
                "export_id": {"type": "string"},
                "wait_seconds": {"type": "number", "minimum": 0, "maximum": 60, "default": 0},
            },
            ["export_id"],
        ),
        export_status,
        availability,
    ),
    ToolSpec(
        "project.export.cancel",
        "Cancel a running export: its process is stopped and nothing is registered.",
        schema({"export_id": {"type": "string"}}, ["export_id"]),
        export_cancel,
        availability,
    ),
]

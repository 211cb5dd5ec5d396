"""Export tools: ``project.export``, ``project.export.status``, ``project.export.cancel``."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from mcp import types

from godot_mcp.engine.process.availability import Availability
from godot_mcp.engine.project.presets import KINDS, PLATFORMS
from godot_mcp.errors import InvalidArgument
from godot_mcp.features.export.service import ExportView
from godot_mcp.mcp.budget import fit_text
from godot_mcp.mcp.describe import artifact_dict, resource_link
from godot_mcp.mcp.outcomes import ok
from godot_mcp.mcp.progress import EVERY_S, Progress
from godot_mcp.mcp.spec import ARTIFACT, NULL, STRING, Arg, Tool

if TYPE_CHECKING:
    from godot_mcp.features.services import Call, ServerDeps


MAX_WAIT_S = 50  # below the 60 s default request timeout of common clients
STATES = ("running", "succeeded", "failed", "interrupted", "cancelled")


def describe(view: ExportView) -> dict[str, Any]:
    """The ``export`` object of tool answers."""
    out: dict[str, Any] = {
        "id": view.id,
        "preset": view.preset,
        "kind": view.kind,
        "state": view.state,
        "outputs": [artifact_dict(o) for o in view.outputs],
    }
    if view.platform is not None:
        out["platform"] = view.platform
    if view.error:
        out["error"] = view.error
    if view.log_tail:
        out["log_tail"] = view.log_tail
    if view.warnings:
        out["warnings"] = list(view.warnings)
    return out


def availability(deps: ServerDeps) -> Availability:
    return deps.exports.availability()


async def export_start(call: Call) -> types.CallToolResult:
    a = call.args
    if (a["preset"] is None) == (a["platform"] is None):
        raise InvalidArgument(
            f"give exactly one of preset (a preset of the project) and platform "
            f"({', '.join(PLATFORMS)}: the engine's default options)"
        )
    export_id = await call.deps.exports.begin(
        call.caller, call.generation, a["preset"], a["kind"], a["platform"]
    )
    started: dict[str, Any] = {"id": export_id, "state": "running"}
    if warnings := call.deps.exports.warnings(export_id):
        started["warnings"] = warnings
    return ok(export=started)


async def export_status(call: Call) -> types.CallToolResult:
    export_id, wait = call.args["export_id"], call.args["wait_seconds"]
    service = call.deps.exports
    view = await service.view(call.caller, export_id)
    if view.state == "running" and wait > 0:
        progress = Progress(call)
        deadline = time.monotonic() + wait
        while not await service.settled(export_id) and (left := deadline - time.monotonic()) > 0:
            done, estimate, state = service.progress(export_id) or (0, 0, "running")
            if state == "verifying":
                await progress.step(done, f"{done} bytes written; checking the outputs")
            else:
                await progress.step(done, f"{done} bytes written of about {estimate}")
            await service.wait_settled(export_id, min(EVERY_S, left))
        view = await service.view(call.caller, export_id)
        if view.state != "running":
            await progress.ended(f"the export {view.state}")
    links: list[types.ContentBlock] = [resource_link(o) for o in view.outputs]
    export = describe(view)
    result = ok(links, export=export)
    budget = call.budget
    if "log_tail" in export and not budget.fits(result):  # its last lines, as many as fit
        without = ok(links, export={**export, "log_tail": ""})
        room = budget.room - budget.wire_size(without)
        export["log_tail"] = fit_text(export["log_tail"], room, keep="end")
        result = ok(links, export=export)
    return result


async def export_cancel(call: Call) -> types.CallToolResult:
    export_id = call.args["export_id"]
    state = await call.deps.exports.cancel(call.caller, export_id)
    return ok(export={"id": export_id, "state": state}, state=state)


EXPORT_ID = Arg("export_id", "string", "an id from {project.export}", required=True)
_STATE = {"enum": list(STATES)}
_EXPORT = {
    "type": "object",
    "properties": {
        "id": STRING,
        "preset": {"anyOf": [STRING, NULL]},
        "platform": {"enum": list(PLATFORMS)},
        "kind": {"enum": list(KINDS)},
        "state": _STATE,
        "outputs": {"type": "array", "items": ARTIFACT},
        "error": STRING,
        "log_tail": STRING,
        "warnings": {"type": "array", "items": STRING},
    },
    "required": ["id", "preset", "kind", "state", "outputs"],
    "additionalProperties": False,
}
_STARTED = {
    "type": "object",
    "properties": {"id": STRING, "state": _STATE, "warnings": {"type": "array", "items": STRING}},
    "required": ["id", "state"],
    "additionalProperties": False,
}

TOOLS = [
    Tool(
        "project.export",
        "Export the project",
        "Export the project with one of its presets, or a platform's default options (pack needs "
        "no templates; release and debug need that platform's); exactly one of preset and "
        "platform. Answers at once with the export's id while Godot exports a private copy "
        "(seconds to minutes); follow it with {project.export.status}. warnings say what to "
        "know of the outputs.",
        export_start,
        args=(
            Arg(
                "preset",
                "string",
                "an export preset name ({project.info} lists them)",
                schema_extra={"minLength": 1},
            ),
            Arg(
                "platform",
                "string",
                "instead of preset: export with the engine's default options for it; outputs "
                "named from the project's name",
                choices=PLATFORMS,
            ),
            Arg("kind", "string", choices=KINDS, default="release"),
        ),
        answer={"export": _STARTED},
        required=("export",),
        availability=availability,
        toolset="export",
    ),
    Tool(
        "project.export.status",
        "Export status",
        "State of an export; on success its outputs as artifacts. With wait_seconds it returns as "
        "soon as the export ends or the time is up, with progress notifications.",
        export_status,
        args=(
            EXPORT_ID,
            Arg("wait_seconds", "number", minimum=0, maximum=MAX_WAIT_S, default=0),
        ),
        answer={"export": _EXPORT},
        required=("export",),
        read_only=True,
        idempotent=True,
        availability=availability,
        toolset="export",
    ),
    Tool(
        "project.export.cancel",
        "Cancel an export",
        "Cancel a running export: its process is stopped, its scratch removed and nothing is "
        "registered. An export that already ended keeps its state.",
        export_cancel,
        args=(EXPORT_ID,),
        answer={"export": _STARTED, "state": _STATE},
        required=("export", "state"),
        destructive=True,
        idempotent=True,
        availability=availability,
        toolset="export",
    ),
]

"""``project.import``: the engine's own import of the project, its result moved in."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp import types

from godot_mcp.engine.process.availability import Availability, unavailable
from godot_mcp.features.importer import Outcome
from godot_mcp.mcp.disclosure import WRITES_DISABLED
from godot_mcp.mcp.outcomes import ok
from godot_mcp.mcp.progress import Status
from godot_mcp.mcp.spec import INTEGER, NUMBER, Tool

if TYPE_CHECKING:
    from godot_mcp.features.services import Call, ServerDeps


def availability(deps: ServerDeps) -> Availability:
    """It writes into the project: over HTTP only with --allow-runtime-writes."""
    if not deps.disclosure.writes:
        return unavailable(WRITES_DISABLED)
    return deps.checks.imports.availability()


async def project_import(call: Call) -> types.CallToolResult:
    call.deps.disclosure.require_writes()
    status = Status(call, "starting Godot")

    async def seen(done: int, total: int) -> None:
        await status.say(f"{done} of {total} files imported")

    outcome: Outcome = await status.around(lambda: call.deps.checks.imports.run(seen))
    ended = f"the import ended: {outcome.files} files imported"
    if outcome.failed:
        ended += f"; the engine could not import {', '.join(outcome.failed[:5])}"
        ended += f" and {len(outcome.failed) - 5} more" if len(outcome.failed) > 5 else ""
    await status.ended(ended[:1000])
    return ok(imported={"files": outcome.files}, seconds=outcome.seconds)


TOOLS = [
    Tool(
        "project.import",
        "Import the project",
        "The engine's own import of the project (as the editor does on first open), headless "
        "on a private copy; only what it writes is moved in: .godot/ (Godot 4) or .import/ "
        "(Godot 3), *.import and *.uid files. A game of a never-imported project is refused "
        "until then. Seconds to minutes, with progress; one at a time, holding an export slot. "
        "Over HTTP only with --allow-runtime-writes.",
        project_import,
        answer={
            "imported": {
                "type": "object",
                "properties": {"files": INTEGER},
                "required": ["files"],
                "additionalProperties": False,
            },
            "seconds": NUMBER,
        },
        required=("imported", "seconds"),
        idempotent=True,
        availability=availability,
        toolset="import",
    ),
]

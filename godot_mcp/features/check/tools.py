"""``project.check``: every script and scene error of the project, before running the game."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mcp import types

from godot_mcp.engine.process.availability import Availability
from godot_mcp.engine.process.redact import printable
from godot_mcp.mcp.outcomes import ok
from godot_mcp.mcp.progress import Status
from godot_mcp.mcp.spec import BOOLEAN, CODE, INTEGER, STRING, Arg, Tool, check_paths

if TYPE_CHECKING:
    from godot_mcp.features.services import Call, ServerDeps


KINDS = ("parse", "load", "missing_dependency")
MAX_PATHS = 100


async def project_check(call: Call) -> types.CallToolResult:
    status = Status(call, "starting Godot")

    async def seen(done: int, total: int) -> None:
        await status.say(f"{done} of {total} files checked")

    report = await status.around(lambda: call.deps.checks.run(call.args["paths"], seen))
    await status.ended(f"the check ended: {len(report.problems)} errors")
    # A path is a file's name, the project's own text (messages are made printable by the
    # check); shown as a client may read it.
    errors = [{**p.as_dict(), "path": printable(p.path)} for p in report.problems]
    warnings = [printable(w) for w in report.warnings]

    def build(kept: Sequence[Any]) -> types.CallToolResult:
        fields: dict[str, Any] = {"warnings": warnings} if warnings else {}
        return ok(
            errors=list(kept),
            checked={"scripts": report.scripts, "scenes": report.scenes},
            truncated=len(kept) < len(errors) or report.more > 0,
            **fields,
        )

    result, _ = call.budget.fit_list(errors, build)
    return result


def availability(deps: ServerDeps) -> Availability:
    return deps.checks.availability()


_ERROR = {
    "type": "object",
    "properties": {
        "path": STRING,
        "line": INTEGER,
        "code": CODE,
        "message": STRING,
        "kind": {"enum": list(KINDS)},
    },
    "required": ["path", "message", "kind"],
    "additionalProperties": False,
}
_CHECKED = {
    "type": "object",
    "properties": {"scripts": INTEGER, "scenes": INTEGER},
    "required": ["scripts", "scenes"],
    "additionalProperties": False,
}

TOOLS = [
    Tool(
        "project.check",
        "Check the project's scripts and scenes",
        "Parse every GDScript and load every scene and resource (or those under paths) with the "
        "project's own Godot, headless; nothing changes, no game runs. Each problem once, with "
        "its res:// path, line (parse errors), code and kind: parse, load (a class this "
        "Godot lacks, C# without .NET…) or missing_dependency. outcome "
        "ok whenever the check ran, errors [] when clean; warnings say a newer Godot saved it, "
        "or name C# scripts the game does not need. Holds an export slot.",
        project_check,
        args=(
            Arg(
                "paths",
                "array",
                "res:// files or folders to check; default the whole project",
                min_items=1,
                max_items=MAX_PATHS,
                schema_extra={"items": {"type": "string", "maxLength": 4096}},
                check=check_paths,
            ),
        ),
        answer={
            "errors": {"type": "array", "items": _ERROR},
            "checked": _CHECKED,
            "truncated": BOOLEAN,
            "warnings": {"type": "array", "items": STRING},
        },
        required=("errors", "checked", "truncated"),
        read_only=True,
        idempotent=True,
        availability=availability,
        toolset="check",
    ),
]

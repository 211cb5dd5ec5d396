"""Tools that need no Godot: profile, project info and reload, artifact reads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mcp import types

from godot_mcp.errors import InvalidArgument
from godot_mcp.mcp.outcomes import ok
from godot_mcp.mcp.resources import blob_contents, read_artifact
from godot_mcp.mcp.spec import BOOLEAN, INTEGER, NULL, STRING, TOOLSETS, Arg, Tool

if TYPE_CHECKING:
    from godot_mcp.features.services import Call


async def server_profile(call: Call) -> types.CallToolResult:
    deps, tools = call.deps, call.tools
    return ok(
        limits={
            "max_output_bytes": deps.limits.max_output_bytes,
            "store_budget_bytes": deps.limits.store_budget_bytes,
            "retention_seconds": deps.limits.retention_seconds,
        },
        capacity=deps.core.capacity(deps.games.running(), deps.exports.running()),
        transport=deps.transport,
        godot=deps.core.godot(),
        toolsets={name: name in deps.toolsets for name in TOOLSETS},
        availability={tools.listed(t): str(t.availability(deps)) for t in tools.all},
    )


async def project_info(call: Call) -> types.CallToolResult:
    info = await call.deps.core.info()
    fields: dict[str, Any] = {"warnings": info.warnings} if info.warnings else {}
    actions = list(info.input_map.items())

    def build(kept: Sequence[tuple[str, list[dict[str, Any]]]]) -> types.CallToolResult:
        cut: dict[str, Any] = {"input_map_truncated": True} if len(kept) < len(actions) else {}
        return ok(
            name=info.name,
            generation=call.generation,
            main_scene=info.main_scene,
            export_presets=info.presets,
            dotnet=info.dotnet,
            engine_features=info.features,
            input_map=dict(kept),
            **fields,
            **cut,
        )

    result, _ = call.budget.fit_list(actions, build)
    return result


async def project_reload(call: Call) -> types.CallToolResult:
    return ok(generation=await call.deps.core.reload())


MAX_SOURCE_LINES = 400  # lines one project.source call may ask for


async def project_source(call: Call) -> types.CallToolResult:
    a = call.args
    first = a["from_line"]
    last = a["to_line"] if a["to_line"] is not None else first + 199
    if last < first:
        raise InvalidArgument(f"to_line ({last}) is before from_line ({first})")
    if last - first + 1 > MAX_SOURCE_LINES:
        raise InvalidArgument(f"at most {MAX_SOURCE_LINES} lines a call (from_line..to_line)")
    read = await call.deps.core.source(a["path"])
    asked = [
        {"line": n, "text": read.lines[n - 1]} for n in range(first, min(last, len(read.lines)) + 1)
    ]

    def build(kept: Sequence[dict[str, Any]]) -> types.CallToolResult:
        truncated = len(kept) < len(asked)
        return ok(
            lines=list(kept), total_lines=len(read.lines), sha256=read.sha256, truncated=truncated
        )

    result, _ = call.budget.fit_list(asked, build)
    return result


async def artifacts_read(call: Call) -> types.CallToolResult:
    uri = call.args["uri"]
    result = await read_artifact(call.deps, call.caller, uri)  # caller resolved once per call
    return ok(
        [types.EmbeddedResource(resource=blob_contents(result))],
        uri=uri,
        mime_type=result.media_type,
        offset=result.offset,
        length=result.length,
        size=result.size,
        sha256=result.sha256,
    )


_NULLABLE_STRING = {"anyOf": [STRING, NULL]}
_AVAILABILITY = {"type": "object", "additionalProperties": STRING}
_EVENTS = {"type": "array", "items": {"type": "object", "properties": {"type": STRING}}}

TOOLS = [
    Tool(
        "server.profile",
        "Server profile",
        "Limits, capacity, transport, the Godot found (godot.dotnet: whether it is a .NET "
        "build, which C# projects need), and which tools are available (and why not). Cheap: "
        "reads no project file.",
        server_profile,
        answer={
            "limits": {
                "type": "object",
                "properties": {
                    "max_output_bytes": INTEGER,
                    "store_budget_bytes": INTEGER,
                    "retention_seconds": INTEGER,
                },
                "required": ["max_output_bytes", "store_budget_bytes", "retention_seconds"],
                "additionalProperties": False,
            },
            "capacity": {
                "type": "object",
                "properties": {
                    "max_game_sessions": INTEGER,
                    "max_exports": INTEGER,
                    "game_sessions_running": INTEGER,
                    "exports_running": INTEGER,
                },
                "required": [
                    "max_game_sessions",
                    "max_exports",
                    "game_sessions_running",
                    "exports_running",
                ],
                "additionalProperties": False,
            },
            "transport": {"enum": ["stdio", "http"]},
            "godot": {
                "type": "object",
                "properties": {
                    "version": _NULLABLE_STRING,
                    "headless_version": _NULLABLE_STRING,
                    "major": {"anyOf": [INTEGER, NULL]},
                    "dotnet": {"anyOf": [BOOLEAN, NULL]},
                },
                "required": ["version", "headless_version", "major", "dotnet"],
                "additionalProperties": False,
            },
            "toolsets": {
                "type": "object",
                "properties": {name: BOOLEAN for name in TOOLSETS},
                "required": list(TOOLSETS),
                "additionalProperties": False,
            },
            "availability": _AVAILABILITY,
        },
        required=("limits", "capacity", "transport", "godot", "toolsets", "availability"),
        read_only=True,
        idempotent=True,
        toolset="core",
    ),
    Tool(
        "project.info",
        "Project info",
        "The project's name, generation, main scene (res://; a uid:// resolved), export preset "
        "names, dotnet (uses C#: needs a .NET Godot), engine_features (config/features; [] on "
        "Godot 3) and input_map (each action's events as {runtime.input.send} takes them). "
        "warnings: saved by a newer Godot than this server runs, or never imported.",
        project_info,
        answer={
            "name": STRING,
            "generation": INTEGER,
            "main_scene": _NULLABLE_STRING,
            "export_presets": {"type": "array", "items": STRING},
            "dotnet": BOOLEAN,
            "engine_features": {"type": "array", "items": STRING},
            "warnings": {"type": "array", "items": STRING},
            "input_map": {"type": "object", "additionalProperties": _EVENTS},
            "input_map_truncated": BOOLEAN,
        },
        required=(
            "name",
            "generation",
            "main_scene",
            "export_presets",
            "dotnet",
            "engine_features",
            "input_map",
        ),
        read_only=True,
        idempotent=True,
        toolset="core",
    ),
    Tool(
        "project.reload",
        "Start a new project generation",
        "Start a new project generation: every artifact of older generations stops resolving "
        "(their bytes are released at the next registration).",
        project_reload,
        answer={"generation": INTEGER},
        required=("generation",),
        destructive=True,
        toolset="core",
    ),
    Tool(
        "project.source",
        "Read a project text file",
        "A res:// text file's lines, numbered, with the file's sha256: from_line..to_line, 200 "
        "lines by default, at most 400. Never export_presets.cfg, hidden or import folders, or a "
        "link out of the project; a binary file is refused. truncated: fewer lines than asked, to "
        "fit the answer.",
        project_source,
        args=(
            Arg("path", "string", "res:// path", required=True, schema_extra={"maxLength": 4096}),
            Arg("from_line", "integer", minimum=1, maximum=10_000_000, default=1),
            Arg("to_line", "integer", "default from_line + 199", minimum=1, maximum=10_000_000),
        ),
        answer={
            "lines": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"line": INTEGER, "text": STRING},
                    "required": ["line", "text"],
                },
            },
            "total_lines": INTEGER,
            "sha256": STRING,
            "truncated": BOOLEAN,
        },
        required=("lines", "total_lines", "sha256", "truncated"),
        read_only=True,
        idempotent=True,
        toolset="core",
    ),
    Tool(
        "artifacts.read",
        "Read an artifact",
        "Read an artifact URI (optionally ?offset=O&length=L) for clients that never read "
        "resources; answers the bytes as an embedded resource, with the same checks as "
        "resources/read. At most max_output_bytes per call: read larger artifacts in ranges.",
        artifacts_read,
        args=(
            Arg(
                "uri",
                "string",
                "godot-mcp://artifacts/ID[?offset=O&length=L]",
                required=True,
                schema_extra={"maxLength": 1024},
            ),
        ),
        answer={
            "uri": STRING,
            "mime_type": STRING,
            "offset": INTEGER,
            "length": INTEGER,
            "size": INTEGER,
            "sha256": STRING,
        },
        required=("uri", "mime_type", "offset", "length", "size", "sha256"),
        read_only=True,
        idempotent=True,
        raw_bytes=True,
        toolset="core",
    ),
]

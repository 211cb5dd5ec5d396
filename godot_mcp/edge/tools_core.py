"""Tools that need no Godot: profile, project info and reload, artifact reads."""

from __future__ import annotations

from typing import Any

from mcp import types

from godot_mcp.edge.args import Args
from godot_mcp.edge.deps import ServerDeps, ToolCall, ToolSpec, schema
from godot_mcp.edge.outcomes import ok
from godot_mcp.edge.resources import blob_contents, read_artifact
from godot_mcp.godot.presets import (
    PresetsError,
    project_name,
    read_config,
    read_presets,
)


def _godot_facts(deps: ServerDeps) -> dict[str, Any]:
    install = deps.services.get("godot")
    return {
        "version": getattr(install, "version", None),
        "headless_version": getattr(install, "headless_version", None),
    }


async def server_profile(call: ToolCall) -> types.CallToolResult:
    Args(call.arguments, set())
    deps = call.deps
    tools = deps.services["tools"]
    return ok(
        limits={
            "max_output_bytes": deps.limits.max_output_bytes,
            "store_budget_bytes": deps.limits.store_budget_bytes,
            "retention_seconds": deps.limits.retention_seconds,
        },
        transport=deps.transport,
        godot=_godot_facts(deps),
        availability={name: spec.availability(deps) for name, spec in tools.items()},
    )


def _main_scene(deps: ServerDeps) -> str | None:
    try:
        config = read_config(deps.project / "project.godot")
    except (OSError, ValueError):
        return None
    scene = config.get("application", {}).get("run/main_scene")
    return scene if isinstance(scene, str) and scene else None


async def project_info(call: ToolCall) -> types.CallToolResult:
    Args(call.arguments, set())
    try:
        presets = [p.name for p in read_presets(call.deps.project)]
    except PresetsError:
        presets = []
    try:
        name = project_name(call.deps.project)
    except OSError:
        name = call.deps.project.name
    return ok(
        name=name,
        generation=call.generation,
        main_scene=_main_scene(call.deps),
        export_presets=presets,
    )


async def project_reload(call: ToolCall) -> types.CallToolResult:
    Args(call.arguments, set())
    state = call.deps.store.projects.advance(call.deps.project)
    return ok(generation=state.generation)


async def artifacts_read(call: ToolCall) -> types.CallToolResult:
    uri = Args(call.arguments, {"uri"}).string("uri", required=True)
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


TOOLS = [
    ToolSpec(
        "server.profile",
        "Limits, transport, the Godot found, and which tools are available (and why not).",
        schema(),
        server_profile,
    ),
    ToolSpec(
        "project.info",
        "The project's name, current generation, main scene and export preset names.",
        schema(),
        project_info,
    ),
    ToolSpec(
        "project.reload",
        "Start a new project generation: every artifact of older generations stops resolving.",
        schema(),
        project_reload,
    ),
    ToolSpec(
        "artifacts.read",
        "Read an artifact URI (optionally ?offset=O&length=L) for clients that never read "
        "resources; answers the bytes as an embedded resource, with the same checks.",
        schema(
            {"uri": {"type": "string", "description": "godot-mcp://artifacts/ID[?offset&length]"}},
            ["uri"],
        ),
        artifacts_read,
    ),
]

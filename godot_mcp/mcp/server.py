"""The MCP server factory: one low-level ``Server`` over the store and the Godot layer."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from typing import Any

from mcp import types
from mcp.server import Server
from mcp.server.context import ServerRequestContext

import godot_mcp
from godot_mcp.errors import GodotMcpError, InvalidArgument, quoted
from godot_mcp.mcp.budget import Budget, Framing
from godot_mcp.mcp.deps import Core, ToolCall, identify
from godot_mcp.mcp.outcomes import refusal, tool_result
from godot_mcp.mcp.remedies import remedied
from godot_mcp.mcp.resources import make_handlers
from godot_mcp.mcp.spec import Tool, Tools
from godot_mcp.store.values import Caller

log = logging.getLogger(__name__)


def on(tools: Sequence[Tool], toolsets: Collection[str]) -> list[Tool]:
    """The tools a server offers: the core ones and those of ``toolsets``. Another is
    neither listed nor callable: a call to it answers as an unknown tool does."""
    return [t for t in tools if t.toolset == "core" or t.toolset in toolsets]


def build_server(deps: Core, offered: Sequence[Tool]) -> Server:
    """Build the server over ``offered``, of which it serves the core tools and its toolsets'."""
    tools = Tools(on(offered, deps.toolsets), deps.names)
    declared = [t.declaration(deps.names) for t in tools.all]
    ok_shapes = {t.name: t.ok_schema() for t in tools.all}
    limit = deps.limits.max_output_bytes
    server_info: dict[str, Any] = {}  # what the SDK stamps on 2026-era results, once built

    async def on_list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=declared, ttl_ms=0, cache_scope="private")

    async def on_call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = tools.find(params.name)
        framing = Framing.of(deps.transport, ctx.protocol_version, server_info)
        budget = Budget(limit, ctx.request_id, framing)
        try:
            if tool is None:
                raise InvalidArgument(f"unknown tool: {quoted(params.name)}")
            raw = params.arguments
            if raw is not None and not isinstance(raw, dict):
                raise InvalidArgument("arguments must be an object")
            who = identify(ctx, deps)
            state = await deps.runtime.blocking(deps.store.projects.observe, deps.project)
            args = tool.parse(raw)
            call = ToolCall(
                ctx=ctx,
                deps=deps,
                who=who,
                caller=Caller(who.principal, who.session_id, who.launch_id, state.id),
                generation=state.generation,
                args=args,
                tools=tools,
                budget=budget,
            )
            result = await tool.handler(call)
            if tool.raw_bytes:  # artifact bytes: bounded by their raw length, as resources/read
                return result
            return budget.bounded(result, ok_shapes[tool.name])
        except GodotMcpError as exc:
            return budget.bounded(refusal(remedied(deps.disclosure.shown(exc), deps, tools)))
        except Exception:
            log.exception("tool %s failed", params.name[:100])
            return tool_result({"outcome": "failed", "message": "internal error"})

    server = Server(
        "godot-mcp",
        version=godot_mcp.__version__,
        instructions=(
            "Drive a Godot project: start a game session, capture screenshots and recordings, "
            "export the project. Bytes come back as godot-mcp://artifacts/ resources: read "
            "them (in byte ranges when large) while they are fresh; they expire."
        ),
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        **make_handlers(deps),
    )
    server_info.update(server.server_info_stamp)
    return server


def preview_budget(server: Server, limit: int) -> Callable[[], int]:
    """What an image made before its answer's request is known may take: it fits the widest
    framing of ``server``'s answers under ``limit``."""
    return Budget(limit, None, Framing.widest(dict(server.server_info_stamp))).image_bytes

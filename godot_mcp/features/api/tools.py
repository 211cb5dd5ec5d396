"""``project.api``: the engine's own class reference, as the engine this server runs has it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp import types

from godot_mcp.engine.process.availability import Availability
from godot_mcp.features.api import KINDS, MAX_NAME
from godot_mcp.mcp.budget import Budget, cost
from godot_mcp.mcp.outcomes import tool_result
from godot_mcp.mcp.spec import BOOLEAN, NULL, STRING, Arg, Tool

if TYPE_CHECKING:
    from godot_mcp.features.services import Call, ServerDeps


async def project_api(call: Call) -> types.CallToolResult:
    answer = await call.deps.api.lookup(call.args["class"], call.args["member"])
    members = answer.get("members")
    if not isinstance(members, dict):
        return tool_result({"outcome": "ok", **answer})

    def build(kept: dict[str, list[str]]) -> types.CallToolResult:
        truncated = any(len(kept[kind]) < len(names) for kind, names in members.items())
        return tool_result({"outcome": "ok", **answer, "members": kept, "truncated": truncated})

    return _fit(members, build, call.budget)


def _fit(
    members: dict[str, list[str]],
    build: Callable[[dict[str, list[str]]], types.CallToolResult],
    budget: Budget,
) -> types.CallToolResult:
    """The answer with every kind's names, each list cut (never a name) to share what the
    budget leaves: small lists whole first, then measured once and stepped down."""
    left = budget.room - budget.wire_size(build({kind: [] for kind in members}))
    counts: dict[str, int] = {}
    kinds = sorted(members, key=lambda kind: len(members[kind]))
    for i, kind in enumerate(kinds):
        share, used, n = left // (len(kinds) - i), 0, 0
        for name in members[kind]:
            c = cost(name)
            if used + c > share:
                break
            used, n = used + c, n + 1
        counts[kind], left = n, left - used

    def cut() -> types.CallToolResult:
        return build({kind: names[: counts[kind]] for kind, names in members.items()})

    result = cut()
    size = budget.wire_size(result)
    while size > budget.room and any(counts.values()):
        over = size - budget.room
        kind = max(counts, key=lambda k: counts[k])
        while counts[kind] > 0 and over > 0:
            counts[kind] -= 1
            over -= cost(members[kind][counts[kind]])
        result = cut()
        size = budget.wire_size(result)
    return result


def availability(deps: ServerDeps) -> Availability:
    return deps.api.availability()


_NAMES = {"type": "array", "items": STRING}
_MEMBERS = {
    "type": "object",
    "properties": {kind: _NAMES for kind in KINDS},
    "required": list(KINDS),
    "additionalProperties": False,
}
_MEMBER = {
    "type": "object",
    "properties": {
        "name": STRING,
        "kind": {"enum": ["method", "property", "signal", "constant", "theme_item"]},
        "signature": STRING,
        "description": {"anyOf": [STRING, NULL]},
        "defined_in": STRING,
    },
    "required": ["name", "kind", "signature", "description", "defined_in"],
    "additionalProperties": False,
}
_NAME: dict[str, Any] = {"maxLength": MAX_NAME}

TOOLS = [
    Tool(
        "project.api",
        "Look up the engine's own API",
        "The engine's own class reference for a class or one member (method, property, "
        "signal, constant, theme item), so answers match the game's engine (Godot 3's "
        "Label.margin_left is Godot 4's offset_left). A class answers inherits (nearest first) "
        "and its own members by kind; a member its kind, signature, description and defined_in. "
        "Unknown: not_found with close_names. The first call takes seconds.",
        project_api,
        args=(
            Arg(
                "class",
                "string",
                "a class name: Label, Node2D, @GlobalScope",
                required=True,
                schema_extra=_NAME,
            ),
            Arg(
                "member",
                "string",
                "a method, property, signal, constant or theme item of it or its ancestors",
                schema_extra=_NAME,
            ),
        ),
        answer={
            "class": STRING,
            "inherits": _NAMES,
            "members": _MEMBERS,
            "truncated": BOOLEAN,
            "member": _MEMBER,
        },
        required=("class", "inherits"),
        read_only=True,
        idempotent=True,
        availability=availability,
        toolset="api",
    ),
]

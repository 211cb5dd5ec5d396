"""runtime.node.inspect: a running game's node as its code sees it, in one bridge round trip."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mcp import types

from godot_mcp.features.game.protocol import INSPECT_LISTS
from godot_mcp.features.game.tools import SESSION_ID, VALUE
from godot_mcp.mcp.budget import cost, json_size, marker
from godot_mcp.mcp.outcomes import ok
from godot_mcp.mcp.spec import BOOLEAN, CODE, INTEGER, NULL, STRING, Arg, Tool

if TYPE_CHECKING:
    from godot_mcp.features.services import Call

PARTS = ("script", "methods", "signals", "groups", "properties")
# The order lists give way in when an answer must shrink: the last ones first.
_KEEP_ORDER = ("groups", "signals", "connected_in", "methods", "properties")


async def node_inspect(call: Call) -> types.CallToolResult:
    a = call.args
    include = PARTS if a["include"] is None else tuple(a["include"])
    read = await call.deps.games.inspect(call.caller, a["session_id"], a["path"], include)
    budget = call.budget
    items: list[tuple[str, Any]] = []
    for key in _KEEP_ORDER:
        for item in read.parts.get(key, ()):
            if key == "properties" and cost(item["value"]) >= budget.room:
                item = {**item, "value": marker(json_size(item["value"]))}  # larger than any answer
            items.append((key, item))

    def build(kept: Sequence[tuple[str, Any]]) -> types.CallToolResult:
        lists: dict[str, list[Any]] = {k: [] for k in INSPECT_LISTS if k in read.parts}
        for key, item in kept:
            lists[key].append(item)
        cut = {k for k in lists if k in read.truncated or len(lists[k]) < len(read.parts[k])}
        fields: dict[str, Any] = {"class": read.class_name}
        if "script" in read.parts:
            fields["script"] = read.parts["script"]
        fields.update(lists)
        return ok(**fields, truncated=[k for k in INSPECT_LISTS if k in cut])

    result, _ = budget.fit_list(items, build)
    return result


def _object(**fields: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": fields,
        "required": [k for k in fields if k not in ("class_name", "code")],
        "additionalProperties": False,
    }


def _list(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": item}


ANSWER: dict[str, Any] = {
    "class": STRING,
    "script": {"anyOf": [_object(path=STRING, class_name=STRING, extends=STRING), NULL]},
    "methods": _list(
        _object(
            name=STRING, args=_list(STRING), path=STRING, line={"anyOf": [INTEGER, NULL]}, code=CODE
        )
    ),
    "signals": _list(_object(name=STRING, connections=_list(_object(node=STRING, method=STRING)))),
    "connected_in": _list(_object(node=STRING, signal=STRING, method=STRING)),
    "groups": _list(STRING),
    "properties": _list(_object(name=STRING, type=STRING, exported=BOOLEAN, value=VALUE)),
    "truncated": _list({"enum": list(INSPECT_LISTS)}),
}

TOOLS = [
    Tool(
        "runtime.node.inspect",
        "Inspect a node",
        "Its script (path, class_name, extends), script methods (res:// path, func line), "
        "signals with connections, connected_in, groups, script variables and changed "
        "properties. Lists hold at most 200; truncated names those cut.",
        node_inspect,
        args=(
            SESSION_ID,
            Arg(
                "path",
                "string",
                "an absolute node path",
                required=True,
                schema_extra={"maxLength": 1024},
            ),
            Arg(
                "include",
                "array",
                "default all",
                schema_extra={"items": {"enum": list(PARTS)}, "uniqueItems": True},
            ),
        ),
        answer=ANSWER,
        required=("class", "truncated"),
        read_only=True,
        idempotent=True,
        toolset="game",
    ),
]

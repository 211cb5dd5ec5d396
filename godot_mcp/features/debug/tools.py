"""runtime.debug.*: the engine's own debugger on a game started with ``debug``
(docs/debugging.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mcp import types

from godot_mcp.engine.debugger import MAX_VARIABLES, Break
from godot_mcp.engine.process.availability import Availability, unavailable
from godot_mcp.engine.process.redact import Scrubber
from godot_mcp.features.debug.service import MAX_PATHS
from godot_mcp.features.game.debugging import MAX_BREAKPOINTS
from godot_mcp.features.game.tools import (
    SESSION_ID,
    VALUE,
    availability_of,
)
from godot_mcp.mcp.budget import Budget, cost, fit_text
from godot_mcp.mcp.disclosure import WRITES_DISABLED
from godot_mcp.mcp.outcomes import ok
from godot_mcp.mcp.spec import BOOLEAN, CODE, INTEGER, STRING, Arg, Tool

if TYPE_CHECKING:
    from godot_mcp.features.services import Call, ServerDeps


ACTIONS = ("continue", "step", "next", "out", "break")
REASONS = ("breakpoint", "error", "step", "break")
MAX_ERROR = 1000  # characters of a stop's error (the engines' are one short line)
FRAME_FLOOR = 64  # bytes a frame takes in an answer at least (its keys, twice: the mirror)

BREAKPOINT_LIST = {"type": "array", "items": {"type": "string", "maxLength": 1100}}
FRAME = {
    "type": "object",
    "properties": {"path": STRING, "line": INTEGER, "function": STRING, "code": CODE},
    "required": ["path", "line", "function"],
    "additionalProperties": False,
}
MEASURED = {
    "type": "object",
    "properties": {
        "function": STRING,
        "path": STRING,
        "line": INTEGER,
        "code": CODE,
        "calls": INTEGER,
        "self_ms": {"type": "number"},
        "total_ms": {"type": "number"},
    },
    "required": ["function", "path", "line", "calls", "self_ms", "total_ms"],
    "additionalProperties": False,
}
STATE = {
    "state": {"enum": ["running", "break"]},
    "reason": {"enum": list(REASONS)},
    "error": STRING,
    "stack": {"type": "array", "items": FRAME},
    "depth": INTEGER,
    "truncated": BOOLEAN,
}


def _state(brk: Break | None, scrub: Scrubber, budget: Budget) -> types.CallToolResult:
    """A break as answered: the game's own texts as a client gets them (printable, scrubbed),
    the stack's innermost frames that fit the answer, ``depth`` the whole stack's."""
    if brk is None:
        return ok(state="running")
    head: dict[str, Any] = {"state": "break", "reason": brk.reason}
    depth = len(brk.stack)

    def build(kept: Sequence[dict[str, Any]]) -> types.CallToolResult:
        return ok(**head, stack=list(kept), depth=depth, truncated=len(kept) < depth)

    if brk.error is not None:
        error = scrub.game(brk.error)
        head["error"] = error[:MAX_ERROR]
        over = budget.wire_size(build([])) - budget.room
        if over > 0:  # an error longer than an answer: its start
            head["error"] = fit_text(head["error"], cost(head["error"]) - over)
    fitting = brk.stack[: budget.room // FRAME_FLOOR + 1]  # at most as many as could fit
    frames = [
        _with_code(
            scrub.game_json({"path": f.path, "line": f.line, "function": f.function}), f.code
        )
        for f in fitting
    ]
    result, _ = budget.fit_list(frames, build)
    return result


def _with_code(place: dict[str, Any], code: str | None) -> dict[str, Any]:
    """A place as answered, with its line's ``code`` when it has one (the project's own text,
    as ``project.source`` answers it: not the game's, so not scrubbed as the game's)."""
    return place if code is None else {**place, "code": code}


async def breakpoints(call: Call) -> types.CallToolResult:
    a = call.args
    held = await call.deps.debug.breakpoints(
        call.caller, a["session_id"], a["set"] or [], a["clear"] or []
    )
    return ok(breakpoints=held)


async def state(call: Call) -> types.CallToolResult:
    a = call.args
    brk, scrub = await call.deps.debug.state(call.caller, a["session_id"], a["wait_seconds"])
    return _state(brk, scrub, call.budget)


async def variables(call: Call) -> types.CallToolResult:
    a = call.args
    return ok(**await call.deps.debug.variables(call.caller, a["session_id"], a["frame"]))


async def evaluate(call: Call) -> types.CallToolResult:
    call.deps.disclosure.require_writes()
    a = call.args
    value = await call.deps.debug.evaluate(
        call.caller, a["session_id"], a["expression"], a["frame"]
    )
    return ok(value=value)


async def control(call: Call) -> types.CallToolResult:
    a = call.args
    brk, scrub = await call.deps.debug.control(
        call.caller, a["session_id"], a["action"], a["timeout_seconds"]
    )
    if brk is None:
        return ok(state="running")
    return _state(brk, scrub, call.budget)


async def profile(call: Call) -> types.CallToolResult:
    a = call.args
    got, scrub = await call.deps.debug.profile(call.caller, a["session_id"], a["seconds"])
    rows = [
        _with_code(
            {
                "function": scrub.game(m.function),
                "path": scrub.game(m.path),
                "line": m.line,
                "calls": m.calls,
                "self_ms": m.self_ms,
                "total_ms": m.total_ms,
            },
            m.code,
        )
        for m in got.functions[: a["max_functions"]]
    ]

    def build(kept: Sequence[dict[str, Any]]) -> types.CallToolResult:
        truncated = len(kept) < len(got.functions)
        return ok(frames=got.frames, functions=list(kept), dropped=got.dropped, truncated=truncated)

    result, _ = call.budget.fit_list(rows, build)
    return result


async def reload(call: Call) -> types.CallToolResult:
    a = call.args
    done = await call.deps.debug.reload(call.caller, a["session_id"], a["paths"] or [])
    return ok(reloaded=done)


def reload_availability(deps: ServerDeps) -> Availability:
    return deps.debug.reload_availability()


def evaluate_availability(deps: ServerDeps) -> Availability:
    if not deps.disclosure.writes:
        return unavailable(WRITES_DISABLED)
    return deps.debug.evaluate_availability() or availability_of(deps)


_FRAME_ARG = Arg("frame", "integer", "index into stack", minimum=0, maximum=1000, default=0)
_VALUES = {"type": "object", "additionalProperties": VALUE}

TOOLS = [
    Tool(
        "runtime.debug.breakpoints",
        "Set or clear breakpoints",
        "Set and clear res://path.gd:LINE breakpoints of a game started with debug; answers "
        "every breakpoint in force.",
        breakpoints,
        args=(
            SESSION_ID,
            Arg("set", "array", max_items=MAX_BREAKPOINTS, schema_extra={"items": STRING}),
            Arg("clear", "array", max_items=MAX_BREAKPOINTS, schema_extra={"items": STRING}),
        ),
        answer={"breakpoints": BREAKPOINT_LIST},
        required=("breakpoints",),
        idempotent=True,
        availability=availability_of,
        toolset="debug",
    ),
    Tool(
        "runtime.debug.state",
        "Where a debugged game is",
        "Whether a debugged game runs or is stopped at a break, and there why (breakpoint, "
        "error, step, break) and its stack, innermost first (as many frames as fit; depth is "
        "the whole stack's); wait_seconds waits for a break.",
        state,
        args=(
            SESSION_ID,
            Arg("wait_seconds", "number", "wait for a break", minimum=0, maximum=30, default=0),
        ),
        answer=STATE,
        required=("state",),
        read_only=True,
        idempotent=True,
        availability=availability_of,
        toolset="debug",
    ),
    Tool(
        "runtime.debug.variables",
        "Read a stopped frame's variables",
        f"The locals and the members (self and its script variables) of one frame of a "
        f"stopped game, as JSON values; at most {MAX_VARIABLES} of each.",
        variables,
        args=(SESSION_ID, _FRAME_ARG),
        answer={"locals": _VALUES, "members": _VALUES, "truncated": BOOLEAN},
        required=("locals", "members", "truncated"),
        read_only=True,
        idempotent=True,
        availability=availability_of,
        toolset="debug",
    ),
    Tool(
        "runtime.debug.evaluate",
        "Evaluate an expression at a break",
        "Evaluate an expression of the engine's own language in a stopped frame (its self and "
        "locals in scope; $Node and %Unique as in scripts); Godot 4 only. Over HTTP only with "
        "--allow-runtime-writes.",
        evaluate,
        args=(
            SESSION_ID,
            Arg(
                "expression",
                "string",
                required=True,
                schema_extra={"minLength": 1, "maxLength": 1000},
            ),
            _FRAME_ARG,
        ),
        answer={"value": VALUE},
        required=("value",),
        destructive=True,
        availability=evaluate_availability,
        toolset="debug",
    ),
    Tool(
        "runtime.debug.control",
        "Continue, step or break a game",
        "Resume a stopped game (continue), step into, over or out of calls, or stop it now "
        "(break); answers the state after it, the new break for steps and break.",
        control,
        args=(
            SESSION_ID,
            Arg("action", "string", choices=ACTIONS, required=True),
            Arg("timeout_seconds", "number", minimum=0.1, maximum=30, default=10),
        ),
        answer=STATE,
        required=("state",),
        idempotent=False,
        availability=availability_of,
        toolset="debug",
    ),
    Tool(
        "runtime.profile.capture",
        "Profile a debugged game's scripts",
        "Run the engine's own script profiler for some seconds of a game started with debug: "
        "the functions it measured with calls, self and total ms, busiest (self) first; "
        "dropped counts those whose figures were no finite numbers.",
        profile,
        args=(
            SESSION_ID,
            Arg("seconds", "number", "wall-clock seconds", minimum=0.1, maximum=10, default=2),
            Arg("max_functions", "integer", minimum=1, maximum=200, default=50),
        ),
        answer={
            "frames": INTEGER,
            "functions": {"type": "array", "items": MEASURED},
            "dropped": INTEGER,
            "truncated": BOOLEAN,
        },
        required=("frames", "functions", "dropped", "truncated"),
        read_only=True,
        availability=availability_of,
        toolset="debug",
    ),
    Tool(
        "runtime.scripts.reload",
        "Reload changed scripts in a game",
        "Make a running game use its scripts as they are on disk now, without a restart "
        "(members keep their values); checked first: a script that does not parse is "
        "refused with its place. Default: every script the game uses.",
        reload,
        args=(
            SESSION_ID,
            Arg(
                "paths",
                "array",
                "res://…gd scripts",
                min_items=1,
                max_items=MAX_PATHS,
                schema_extra={"items": {"type": "string", "maxLength": 1024}},
            ),
        ),
        answer={"reloaded": {"type": "array", "items": STRING}},
        required=("reloaded",),
        idempotent=True,
        availability=reload_availability,
        toolset="debug",
    ),
]

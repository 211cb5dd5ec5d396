"""Game-session tools: runtime.session.*, screenshot and recording captures."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator
from mcp import types

from godot_mcp.engine.process.availability import Availability, unavailable
from godot_mcp.engine.profile import GODOT_4
from godot_mcp.errors import InvalidArgument
from godot_mcp.features.game import (
    LEVELS,
    MAX_ARG_CHARS,
    MAX_ARGS,
    MAX_FPS,
    MAX_FRAMES,
    MAX_RECORD_SECONDS,
    MIN_FPS,
    MIN_FRAMES,
    Preview,
    check_game_args,
    encode_cursor,
)
from godot_mcp.features.game.debugging import MAX_BREAKPOINTS
from godot_mcp.features.game.scenetree import (
    DEFAULT_MAX_NODES,
    DEFAULT_TREE_BYTES,
    MAX_FILTER_CHARS,
    MAX_SCRIPT_CHARS,
    TreeFilters,
    check_class,
    check_group,
    check_name,
    check_script,
)
from godot_mcp.features.game.waiting import MAX_WAIT_SECONDS
from godot_mcp.mcp.budget import Budget, cost, fit_text, json_size, marker
from godot_mcp.mcp.describe import artifact_dict, resource_link
from godot_mcp.mcp.disclosure import WRITES_DISABLED
from godot_mcp.mcp.outcomes import ok
from godot_mcp.mcp.spec import (
    ARTIFACT,
    BOOLEAN,
    CODE,
    INTEGER,
    NULL,
    NUMBER,
    STRING,
    Arg,
    AvailabilityOf,
    Tool,
)
from godot_mcp.store.values import ArtifactInfo

if TYPE_CHECKING:
    from godot_mcp.features.services import Call, ServerDeps


MODES = ("windowed", "headless")


def _availability(*modes: str) -> AvailabilityOf:
    """Available when any of ``modes`` is; else the first mode's reason."""

    def check(deps: ServerDeps) -> Availability:
        return deps.games.any_availability(*modes)

    return check


def availability_of(deps: ServerDeps) -> Availability:
    """A tool on any running game: available when either mode is."""
    return _availability("windowed", "headless")(deps)


async def session_start(call: Call) -> types.CallToolResult:
    a = call.args
    managed = await call.deps.games.start(
        call.caller, a["mode"], a["scene"], a["args"], a["debug"], a["breakpoints"]
    )
    fields: dict[str, Any] = {"warnings": list(managed.warnings)} if managed.warnings else {}
    return ok(session=managed.summary(), **fields)


async def session_list(call: Call) -> types.CallToolResult:
    return ok(sessions=[m.summary() for m in call.deps.games.list(call.caller)])


async def session_stop(call: Call) -> types.CallToolResult:
    managed = await call.deps.games.stop(call.caller, call.args["session_id"])
    stopped = managed.summary()
    return ok(state=stopped["state"], exit_code=stopped.get("exit_code"))


async def screenshot(call: Call) -> types.CallToolResult:
    a = call.args
    info, preview = await call.deps.games.screenshot(
        call.caller, call.generation, a["session_id"], a["preview_px"]
    )
    return _with_preview(info, preview, _SHOT_PREVIEW)


async def recording(call: Call) -> types.CallToolResult:
    a = call.args
    info, sheet = await call.deps.games.record(
        call.caller, call.generation, a["session_id"], a["frames"], a["fps"], a["preview_px"]
    )
    return _with_preview(info, sheet, _SHEET_PREVIEW)


def _with_preview(
    info: ArtifactInfo, preview: Preview | None, fields: dict[str, Any]
) -> types.CallToolResult:
    """A capture's answer: its artifact and link, and the preview as an ``image`` block every
    host shows the model, described by the declared ``fields`` of ``preview`` (or null)."""
    blocks: list[types.ContentBlock] = [resource_link(info)]
    shown = None
    if preview is not None:
        data = base64.b64encode(preview.png).decode("ascii")
        blocks.append(types.ImageContent(data=data, mime_type="image/png"))
        shown = {name: _plain(getattr(preview, name)) for name in fields}
    return ok(blocks, artifact=artifact_dict(info), preview=shown)


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _preview_px(default: int, what: str) -> Arg:
    return Arg(
        "preview_px",
        "integer",
        f"{what}; 0 = none",
        minimum=0,
        maximum=MAX_PREVIEW_PX,
        default=default,
    )


SESSION_ID = Arg(
    "session_id", "string", "a game session id", required=True, schema_extra={"maxLength": 64}
)
_STATES = {"enum": ["starting", "running", "exited", "stopped"]}
_SESSION = {
    "type": "object",
    "properties": {
        "id": STRING,
        "mode": {"enum": list(MODES)},
        "state": _STATES,
        "exit_code": INTEGER,
        "debug": BOOLEAN,
    },
    "required": ["id", "mode", "state"],
    "additionalProperties": False,
}
_CAPTURE = {"artifact": ARTIFACT}
MAX_PREVIEW_PX = 1280
_SHOT_PREVIEW = {"width": INTEGER, "height": INTEGER}
_SHEET_PREVIEW = {
    **_SHOT_PREVIEW,
    "frames": {"type": "array", "items": INTEGER},
    "columns": INTEGER,
}


def _answer_with(preview: dict[str, Any]) -> dict[str, Any]:
    """A capture's answer: the artifact, and ``preview`` with exactly these fields or null."""
    shape = {
        "type": "object",
        "properties": preview,
        "required": list(preview),
        "additionalProperties": False,
    }
    return {"artifact": ARTIFACT, "preview": {"anyOf": [shape, NULL]}}


TOOLS = [
    Tool(
        "runtime.session.start",
        "Start a game session",
        "Start the main scene (or a res:// scene) in a game session, windowed (captures work) or "
        "headless, with the game's own args; sessions run side by side (about a second to start). "
        "warnings say what to know first: C# scripts that will not load without .NET, or the "
        "game's own files written into the project.",
        session_start,
        args=(
            Arg("mode", "string", choices=MODES, default="windowed"),
            Arg(
                "scene",
                "string",
                "res://path/to/scene.tscn; default the main scene",
                schema_extra={"maxLength": 1024},
            ),
            Arg(
                "args",
                "array",
                "the game's own arguments, after -- (Godot 4: OS.get_cmdline_user_args())",
                default=[],
                min_items=0,
                max_items=MAX_ARGS,
                schema_extra={"items": {"type": "string", "maxLength": MAX_ARG_CHARS}},
                check=lambda value: check_game_args(value, GODOT_4),  # the engine's own at start
            ),
            Arg(
                "debug",
                "boolean",
                "attach the engine's debugger (the debug tools need it)",
                default=False,
            ),
            Arg(
                "breakpoints",
                "array",
                "res://path.gd:LINE, in force from the first frame; with debug",
                default=[],
                max_items=MAX_BREAKPOINTS,
                schema_extra={"items": {"type": "string", "maxLength": 1100}},
            ),
        ),
        answer={"session": _SESSION, "warnings": {"type": "array", "items": STRING}},
        required=("session",),
        availability=_availability("windowed", "headless"),
        toolset="core",
    ),
    Tool(
        "runtime.session.list",
        "List game sessions",
        "Your game sessions and their state (starting, running, exited with its code, "
        "stopped). Cheap: no Godot call.",
        session_list,
        answer={"sessions": {"type": "array", "items": _SESSION}},
        required=("sessions",),
        read_only=True,
        idempotent=True,
        toolset="core",
    ),
    Tool(
        "runtime.session.stop",
        "Stop a game session",
        "Stop a game session (quit, then kill its process group); answers its final state and "
        "exit code.",
        session_stop,
        args=(SESSION_ID,),
        answer={"state": _STATES, "exit_code": {"anyOf": [INTEGER, NULL]}},
        required=("state", "exit_code"),
        destructive=True,
        idempotent=False,
        toolset="core",
    ),
    Tool(
        "runtime.screenshot.capture",
        "Capture a screenshot",
        "One PNG of what the engine drew into the root viewport of a windowed session, as an "
        "artifact, shown in the answer downscaled to preview_px on its long edge. Tens of "
        "milliseconds at 1280x720.",
        screenshot,
        args=(SESSION_ID, _preview_px(640, "long edge of the image shown in the answer")),
        answer=_answer_with(_SHOT_PREVIEW),
        required=("artifact", "preview"),
        availability=_availability("windowed"),
        toolset="game",
    ),
    Tool(
        "runtime.recording.capture",
        "Capture a recording",
        f"An animated PNG of frames at fps (at most {MAX_RECORD_SECONDS} s of game time) as an "
        "artifact, with a contact sheet in the answer: up to 16 frames in time order, each "
        "labelled with its frame index. Takes frames/fps game seconds or more.",
        recording,
        args=(
            SESSION_ID,
            Arg(
                "frames",
                "integer",
                minimum=MIN_FRAMES,
                maximum=MAX_FRAMES,
                default=30,
            ),
            Arg("fps", "integer", minimum=MIN_FPS, maximum=MAX_FPS, default=10),
            _preview_px(1024, "long edge of the contact sheet shown in the answer"),
        ),
        answer=_answer_with(_SHEET_PREVIEW),
        required=("artifact", "preview"),
        availability=_availability("windowed"),
        toolset="game",
    ),
]


async def log_read(call: Call) -> types.CallToolResult:
    a = call.args
    budget = call.budget

    def answer(lines: list[Any], next_seq: int, dropped: int, state: str) -> types.CallToolResult:
        return ok(lines=lines, next_cursor=encode_cursor(next_seq), dropped=dropped, state=state)

    widest = answer([], 1 << 62, 1 << 62, "starting")  # every field but the lines at its largest
    page, state = await call.deps.games.read_log(
        call.caller,
        a["session_id"],
        a["cursor"],
        a["max_lines"],
        a["min_level"],
        a["wait_seconds"],
        budget.taker(widest),
    )
    lines = [e.as_dict() for e in page.entries]
    seqs = [e.seq for e in page.entries]

    def build(kept: Sequence[Any]) -> types.CallToolResult:
        n = len(kept)  # the next read starts at the first line left out
        next_seq = page.next_seq if n == len(lines) else seqs[n]
        return answer(list(kept), next_seq, page.dropped, state)

    result, _ = budget.fit_list(lines, build, shrink=_shorter_line)
    return result


def _shorter_line(line: dict[str, Any], room: int) -> dict[str, Any] | None:
    """``line`` with its text cut to fit ``room`` bytes (flagged truncated), or None."""
    rest = {**line, "text": "", "truncated": True}
    left = room - cost(rest)
    return {**rest, "text": fit_text(line["text"], left)} if left > 0 else None


async def log_capture(call: Call) -> types.CallToolResult:
    info = await call.deps.games.capture_log(call.caller, call.generation, call.args["session_id"])
    return ok([resource_link(info)], artifact=artifact_dict(info))


_LINE = {
    "type": "object",
    "properties": {
        "seq": INTEGER,
        "stream": {"enum": ["stdout", "stderr"]},
        "level": {"enum": list(LEVELS)},
        "text": STRING,
        "source": {
            "type": "object",
            "properties": {"path": STRING, "line": INTEGER, "code": CODE},
            "required": ["path", "line"],
            "additionalProperties": False,
        },
        "truncated": {"const": True},
        "startup": {"const": True},
    },
    "required": ["seq", "stream", "level", "text"],
    "additionalProperties": False,
}

TOOLS += [
    Tool(
        "runtime.log.read",
        "Read a game's log",
        "The game's own stdout and stderr from its start: lines with their level and, for errors "
        "and warnings, the res:// place Godot names; startup marks the engine's own lines. Page "
        "with next_cursor; dropped counts lines that fell out of the bounded buffer. Cheap: no "
        "Godot call.",
        log_read,
        args=(
            SESSION_ID,
            Arg(
                "cursor",
                "string",
                "next_cursor of a previous answer; default the oldest line",
                schema_extra={"maxLength": 64},
            ),
            Arg("max_lines", "integer", minimum=1, maximum=1000, default=200),
            Arg("min_level", "string", choices=LEVELS, default="print"),
            Arg(
                "wait_seconds",
                "number",
                "wait for at least one new line at min_level",
                minimum=0,
                maximum=30,
                default=0,
            ),
        ),
        answer={
            "lines": {"type": "array", "items": _LINE},
            "next_cursor": STRING,
            "dropped": INTEGER,
            "state": _STATES,
        },
        required=("lines", "next_cursor", "dropped", "state"),
        read_only=True,
        idempotent=True,
        toolset="game",
    ),
    Tool(
        "runtime.log.capture",
        "Capture a game's log",
        "The whole log kept so far as a text/plain artifact (read it as a resource), with the "
        "same binding, retention and budget as every artifact.",
        log_capture,
        args=(SESSION_ID,),
        answer=_CAPTURE,
        required=("artifact",),
        toolset="game",
    ),
]


# -- inspection, time and input (the bridge answers; see docs/godot.md, "The bridge") --------

_EVENT_FIELDS: dict[str, dict[str, Any]] = {
    "action": {
        "action": {"type": "string", "minLength": 1, "maxLength": 200},
        "pressed": BOOLEAN,
        "strength": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "key": {
        "key": {"type": "string", "minLength": 1, "maxLength": 40},
        "pressed": BOOLEAN,
        "shift": BOOLEAN,
        "ctrl": BOOLEAN,
        "alt": BOOLEAN,
        "meta": BOOLEAN,
    },
    "mouse_button": {
        "button": {"enum": ["left", "right", "middle", "wheel_up", "wheel_down"]},
        "x": NUMBER,
        "y": NUMBER,
        "pressed": BOOLEAN,
        "double_click": BOOLEAN,
    },
    "joypad_button": {
        "button": {"type": "integer", "minimum": 0, "maximum": 127},
        "pressed": BOOLEAN,
    },
    "joypad_motion": {
        "axis": {"type": "integer", "minimum": 0, "maximum": 9},
        "value": {"type": "number", "minimum": -1, "maximum": 1},
    },
    "mouse_motion": {"x": NUMBER, "y": NUMBER},
    "text": {"text": {"type": "string", "minLength": 1, "maxLength": 1000}},
    "wait": {
        "frames": {"type": "integer", "minimum": 1, "maximum": 600},
        "seconds": {"type": "number", "minimum": 0.01, "maximum": MAX_WAIT_SECONDS},
    },
}
_EVENT_REQUIRED = {
    "action": ["action"],
    "key": ["key"],
    "mouse_button": ["button", "x", "y"],
    "joypad_button": ["button"],
    "joypad_motion": ["axis", "value"],
    "mouse_motion": ["x", "y"],
    "text": ["text"],
    "wait": [],
}
EVENT_SCHEMA = {
    "oneOf": [
        {
            "type": "object",
            "properties": {"type": {"const": kind}, **fields},
            "required": ["type", *_EVENT_REQUIRED[kind]],
            "additionalProperties": False,
        }
        for kind, fields in _EVENT_FIELDS.items()
    ]
}
_EVENTS = Draft202012Validator(EVENT_SCHEMA)


def check_events(events: list[Any]) -> list[Any]:
    """Each event as its schema defines it; the first wrong one is named by its index."""
    for i, event in enumerate(events):
        kind = event.get("type") if isinstance(event, dict) else None
        if kind not in _EVENT_FIELDS:
            raise InvalidArgument(f"events[{i}].type must be one of {', '.join(_EVENT_FIELDS)}")
        if not _EVENTS.is_valid(event):
            fields = ", ".join(sorted(_EVENT_FIELDS[kind]))
            raise InvalidArgument(f"events[{i}] is not a valid {kind} event (fields: {fields})")
    return events


def check_input_events(events: list[Any]) -> list[Any]:
    """``check_events``; each wait in frames or in game seconds, and at most
    ``MAX_WAIT_SECONDS`` game seconds of waits in all."""
    check_events(events)
    for i, event in enumerate(events):
        if event["type"] == "wait" and len(event) != 2:
            raise InvalidArgument(f"events[{i}] waits either frames or seconds (one of them)")
    waited = sum(e.get("seconds", 0) for e in events if e["type"] == "wait")
    if waited > MAX_WAIT_SECONDS:
        raise InvalidArgument(
            f"the waits add up to {waited:g} game seconds; one call waits at most "
            f"{MAX_WAIT_SECONDS} (send the rest in another call)"
        )
    return events


async def input_send(call: Call) -> types.CallToolResult:
    a = call.args
    applied = await call.deps.games.send_input(call.caller, a["session_id"], a["events"])
    return ok(applied=applied.applied, frame=applied.frame)


async def scene_tree(call: Call) -> types.CallToolResult:
    a = call.args
    filters = TreeFilters(a["name"], a["class"], a["group"], a["script"])
    most, budget = a["max_nodes"], call.budget
    if most is None:  # the default listing: 300 entries, at most 16 KB as sent
        most = DEFAULT_MAX_NODES
        room = min(budget.room, DEFAULT_TREE_BYTES)
        budget = Budget(room, budget.request_id, budget.framing)
    tree = await call.deps.games.tree(
        call.caller, a["session_id"], a["root"], a["depth"], most, a["collapse"], filters
    )
    found = tree.nodes

    def build(nodes: Sequence[Any]) -> types.CallToolResult:
        return ok(
            nodes=list(nodes),
            total=tree.total,
            truncated=tree.truncated or len(nodes) < len(found),
            current_scene=tree.current_scene,
        )

    result, _ = budget.fit_list(found, build)
    return result


async def time_control(call: Call) -> types.CallToolResult:
    a = call.args
    action = a["action"]
    if action == "step" and a["frames"] is None:
        raise InvalidArgument("frames is required for step")
    if action == "scale" and a["time_scale"] is None:
        raise InvalidArgument("time_scale is required for scale")
    frames = a["frames"] or 1
    clock = await call.deps.games.time(
        call.caller, a["session_id"], action, frames, a["time_scale"] or 1.0
    )
    return ok(paused=clock.paused, time_scale=clock.time_scale, frame=clock.frame)


_FILTER = {"maxLength": MAX_FILTER_CHARS}
_SCRIPT = {"maxLength": MAX_SCRIPT_CHARS}
_NODE = {
    "type": "object",
    "properties": {
        "path": STRING,
        "name": STRING,
        "class": STRING,
        "children": INTEGER,
        "script": STRING,
    },
    "required": ["path", "name", "class", "children"],
    "additionalProperties": False,
}
_RUN = {  # a collapsed run of siblings
    "type": "object",
    "properties": {
        "path": STRING,
        "class": STRING,
        "script": STRING,
        "count": INTEGER,
        "last": STRING,
    },
    "required": ["path", "class", "count", "last"],
    "additionalProperties": False,
}

TOOLS += [
    Tool(
        "runtime.input.send",
        "Send input to a game",
        "Send input events through the engine's input pipeline (as if a player made them; "
        "never the host's pointer), in order, with waits between them; works while paused. "
        "A joypad_motion holds its axis at value. "
        "Without pressed, an action, key or button is pressed and released on the next frame. "
        "Takes a frame per event and per frame waited.",
        input_send,
        args=(
            SESSION_ID,
            Arg(
                "events",
                "array",
                "action, key, mouse_button, mouse_motion, joypad_*, text or wait events",
                required=True,
                min_items=1,
                max_items=100,
                schema_extra={"items": EVENT_SCHEMA},
                check=check_input_events,
            ),
        ),
        answer={"applied": INTEGER, "frame": INTEGER},
        required=("applied", "frame"),
        toolset="game",
    ),
    Tool(
        "runtime.scene.tree",
        "Look at a game's scene tree",
        "The running game's nodes depth-first from root: path, name, class, child count, "
        "script; collapse makes 4+ alike leaf siblings one {path, class, count, last}. Compact: "
        "read this instead of a screenshot. truncated says when more than max_nodes entries "
        "(or max_output_bytes) exist; total counts the nodes (matches).",
        scene_tree,
        args=(
            SESSION_ID,
            Arg(
                "root",
                "string",
                "an absolute node path",
                default="/root",
                schema_extra={"maxLength": 1024},
            ),
            Arg("depth", "integer", minimum=1, maximum=64, default=6),
            Arg("max_nodes", "integer", "default 300 within 16 KB", minimum=1, maximum=5000),
            Arg("collapse", "boolean", default=True),
            Arg("name", "string", "glob", schema_extra=_FILTER, check=check_name),
            Arg("class", "string", "subclasses match", schema_extra=_FILTER, check=check_class),
            Arg("group", "string", schema_extra=_FILTER, check=check_group),
            Arg("script", "string", "res:// path", schema_extra=_SCRIPT, check=check_script),
        ),
        answer={
            "nodes": {"type": "array", "items": {"anyOf": [_NODE, _RUN]}},
            "total": INTEGER,
            "truncated": BOOLEAN,
            "current_scene": {"anyOf": [STRING, NULL]},
        },
        required=("nodes", "total", "truncated", "current_scene"),
        read_only=True,
        idempotent=True,
        toolset="game",
    ),
    Tool(
        "runtime.time.control",
        "Control a game's time",
        "Pause or resume the scene tree, step exactly frames process frames (then stay "
        "paused), or set Engine.time_scale. frame is the engine's process-frame counter.",
        time_control,
        args=(
            SESSION_ID,
            Arg("action", "string", choices=("pause", "resume", "step", "scale"), required=True),
            Arg("frames", "integer", "for step", minimum=1, maximum=600),
            Arg("time_scale", "number", "for scale", minimum=0.01, maximum=100),
        ),
        answer={"paused": BOOLEAN, "time_scale": NUMBER, "frame": INTEGER},
        required=("paused", "time_scale", "frame"),
        toolset="game",
    ),
]


# -- node values as JSON, both ways (docs/godot.md) -------------------------------------------


def writes_availability(deps: ServerDeps) -> Availability:
    if not deps.disclosure.writes:
        return unavailable(WRITES_DISABLED)
    return _availability("windowed", "headless")(deps)


async def node_get(call: Call) -> types.CallToolResult:
    a = call.args
    read = await call.deps.games.get_values(
        call.caller, a["session_id"], a["path"], a["properties"]
    )
    budget = call.budget
    # A value larger than a whole answer stands as a marker; the others shrink as a list.
    pairs = [
        (k, v if cost(v) < budget.room else marker(json_size(v))) for k, v in read.values.items()
    ]

    def build(kept: Sequence[tuple[str, Any]]) -> types.CallToolResult:
        truncated = read.truncated or len(kept) < len(pairs)
        fields: dict[str, Any] = {"class": read.class_name, "values": dict(kept)}
        return ok(**fields, truncated=truncated)

    result, _ = budget.fit_list(pairs, build)
    return result


async def node_set(call: Call) -> types.CallToolResult:
    call.deps.disclosure.require_writes()
    a = call.args
    written = await call.deps.games.set_values(call.caller, a["session_id"], a["path"], a["values"])
    return ok(values=written.values)


async def node_call(call: Call) -> types.CallToolResult:
    call.deps.disclosure.require_writes()
    a = call.args
    result = await call.deps.games.call_method(
        call.caller, a["session_id"], a["path"], a["method"], a["args"]
    )
    return ok(result=result)


_PATH = Arg(
    "path",
    "string",
    "an absolute node path (/root/Main/Player)",
    required=True,
    schema_extra={"maxLength": 1024},
)
# Any JSON value (a Godot value as JSON), spelled out: untyped schemas lint badly.
VALUE: dict[str, Any] = {
    "anyOf": [{"type": k} for k in ("null", "boolean", "number", "string", "array", "object")]
}

TOOLS += [
    Tool(
        "runtime.node.get",
        "Read a node's values",
        "A node's class and property values as JSON (Vector2 {x, y}, Color {r, g, b, a}, …); "
        "default the script's variables, then the node's stored properties, at most 100 "
        "(truncated says when there were more).",
        node_get,
        args=(
            SESSION_ID,
            _PATH,
            Arg(
                "properties",
                "array",
                "property names; default the script's variables and the stored properties",
                min_items=1,
                max_items=1000,
                schema_extra={"items": {"type": "string", "maxLength": 200}},
            ),
        ),
        answer={"class": STRING, "values": {"type": "object"}, "truncated": BOOLEAN},
        required=("class", "values", "truncated"),
        read_only=True,
        idempotent=True,
        toolset="game",
    ),
    Tool(
        "runtime.node.set",
        "Set a node's values",
        "Set properties of a node (values as {runtime.node.get} answers them); answers each one "
        "read back after setting. Over HTTP only with --allow-runtime-writes.",
        node_set,
        args=(
            SESSION_ID,
            _PATH,
            Arg(
                "values",
                "object",
                "{name: value}",
                required=True,
                schema_extra={"minProperties": 1, "maxProperties": 200},
            ),
        ),
        answer={"values": {"type": "object"}},
        required=("values",),
        idempotent=True,
        availability=writes_availability,
        toolset="game",
    ),
    Tool(
        "runtime.node.call",
        "Call a node's method",
        "Call a method of a node (arguments as {runtime.node.get} answers values); answers its "
        "result. A script error raised by the method answers failed with its text and place. "
        "Over HTTP only with --allow-runtime-writes: a method can make the game do anything.",
        node_call,
        args=(
            SESSION_ID,
            _PATH,
            Arg("method", "string", required=True, schema_extra={"maxLength": 200}),
            Arg("args", "array", default=[], max_items=100, schema_extra={"items": VALUE}),
        ),
        answer={"result": VALUE},
        required=("result",),
        destructive=True,
        availability=writes_availability,
        toolset="game",
    ),
]


UNTIL_SCHEMA = {
    "oneOf": [
        {
            "type": "object",
            "properties": {"node": {"type": "string", "minLength": 1, "maxLength": 1024}},
            "required": ["node"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {
                "frames": {"type": "integer", "minimum": 1, "maximum": 3600},
                "seconds": {"type": "number", "minimum": 0.01, "maximum": MAX_WAIT_SECONDS},
            },
            "minProperties": 1,
            "maxProperties": 1,
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {
                "node": {"type": "string", "minLength": 1, "maxLength": 1024},
                "property": {"type": "string", "minLength": 1, "maxLength": 200},
                "equals": VALUE,
                "not_equals": VALUE,
                "less": NUMBER,
                "greater": NUMBER,
                "changed": {"const": True},
            },
            "required": ["node", "property"],
            "minProperties": 3,
            "maxProperties": 3,
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {
                "log": {"type": "string", "minLength": 1, "maxLength": 1000},
                "cursor": {"type": "string", "minLength": 1, "maxLength": 200},
            },
            "required": ["log"],
            "additionalProperties": False,
        },
    ]
}
_UNTIL = Draft202012Validator(UNTIL_SCHEMA)


def check_until(until: dict[str, Any]) -> dict[str, Any]:
    if not _UNTIL.is_valid(until):
        raise InvalidArgument(
            'until must be one of {"frames": N}, {"seconds": S}, {"node": PATH}, '
            '{"node": PATH, "property": NAME, and one of "equals": VALUE, "not_equals": VALUE, '
            '"less": NUMBER, "greater": NUMBER, "changed": true}, {"log": TEXT, "cursor"?: CURSOR}'
        )
    return until


async def wait(call: Call) -> types.CallToolResult:
    a = call.args
    reached = await call.deps.games.wait(
        call.caller, a["session_id"], a["until"], a["timeout_seconds"]
    )
    return ok(**reached)


TOOLS += [
    Tool(
        "runtime.wait",
        "Wait for something in a game",
        "Wait (bounded) until frames or game seconds passed, a node exists, a property meets its "
        "condition, or a log line newer than the call (or than cursor from {runtime.log.read}) "
        "contains a text; on timeout answers timeout with the last value seen. Other calls on the "
        "session go on meanwhile.",
        wait,
        args=(
            SESSION_ID,
            Arg(
                "until",
                "object",
                "the condition",
                required=True,
                schema_extra=UNTIL_SCHEMA,
                check=check_until,
            ),
            Arg("timeout_seconds", "number", minimum=0.1, maximum=30, default=10),
        ),
        answer={"frame": {"anyOf": [INTEGER, NULL]}, "value": VALUE},
        required=("frame",),
        read_only=True,
        toolset="game",
    ),
]

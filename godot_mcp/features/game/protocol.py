"""The bridge's replies as typed values: each is parsed once, here, as it arrives.

A game's script can answer the bridge itself (a hostile project shares its process), so a
reply is read field by field against what ``bridge3.gd`` and ``bridge4.gd`` send; a missing
or mistyped field is a :class:`Malformed` naming the command and the field, never a
``KeyError`` above this module. Numbers cross as JSON: Godot 3 may send an integer as
``5.0``, so an integral float counts as an integer; a boolean is never a number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from godot_mcp.errors import Malformed
from godot_mcp.features.game.errors import one_line
from godot_mcp.features.game.scenetree import COLLAPSE_RUN

# The deepest a value in a reply may nest: Godot values as JSON are bounded to depth 8, each
# level at most a few JSON levels deep. Deeper is a forged reply, refused before anything
# recurses into it.
MAX_DEPTH = 64
# The fastest a game's measured rate can honestly be (a frame a microsecond); faster is forged.
MAX_FPS = 1_000_000.0

__all__ = [
    "Applied",
    "Called",
    "Clock",
    "FrameReport",
    "Hello",
    "Inspected",
    "Malformed",
    "Perf",
    "Ping",
    "Reached",
    "Ready",
    "Tree",
    "Values",
    "Written",
    "frame_reports",
]


def malformed(cmd: str, field: str, why: str) -> Malformed:
    """The game answered ``cmd`` with a reply the bridge never sends: ``field`` ``why``."""
    return Malformed(one_line(f"the game's answer to {cmd} is malformed: {field} {why}"))


class _Reply:
    """One reply, read field by field (each reader raises ``Malformed``)."""

    def __init__(self, cmd: str, reply: Any) -> None:
        if not isinstance(reply, dict):
            raise malformed(cmd, "the reply", "is not an object")
        self.cmd = cmd
        self.reply = reply

    def _get(self, key: str, optional: bool) -> Any:
        if key not in self.reply or (optional and self.reply[key] is None):
            if optional:
                return None
            raise malformed(self.cmd, key, "is missing")
        return self.reply[key]

    def integer(self, key: str, optional: bool = False) -> int | None:
        value = self._get(key, optional)
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise malformed(self.cmd, key, "is not an integer")
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            raise malformed(self.cmd, key, "is not an integer")
        return int(value)

    def count(self, key: str) -> int:
        value = self.integer(key)
        assert value is not None
        if value < 0:
            raise malformed(self.cmd, key, "is negative")
        return value

    def number(self, key: str) -> float:
        value = self._get(key, False)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise malformed(self.cmd, key, "is not a number")
        if not math.isfinite(value):
            raise malformed(self.cmd, key, "is not finite")
        return value

    def rate(self, key: str) -> float | None:
        """A measured frame rate: null until the game measured one, else a number in
        ``[0, MAX_FPS]``, kept to 3 significant digits (decimals below 1 fps)."""
        if key in self.reply and self.reply[key] is None:
            return None
        value = self.number(key)
        if not 0 <= value <= MAX_FPS:
            raise malformed(self.cmd, key, f"is outside 0..{MAX_FPS:g}")
        return float(f"{value:.3g}") if value < 1000 else round(value)

    def flag(self, key: str) -> bool:
        value = self._get(key, False)
        if not isinstance(value, bool):
            raise malformed(self.cmd, key, "is not true or false")
        return value

    def text(self, key: str, optional: bool = False) -> str | None:
        value = self._get(key, optional)
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise malformed(self.cmd, key, "is not a string")
        return value

    def items(self, key: str) -> list[Any]:
        value = self._get(key, False)
        if not isinstance(value, list):
            raise malformed(self.cmd, key, "is not a list")
        return value

    def mapping(self, key: str) -> dict[str, Any]:
        value = self._get(key, False)
        if not isinstance(value, dict):
            raise malformed(self.cmd, key, "is not an object")
        return self.shallow(key, value)

    def shallow(self, key: str, value: Any) -> Any:
        """``value`` unless it nests deeper than ``MAX_DEPTH`` (looked at without recursing)."""
        stack = [(value, 1)]
        while stack:
            item, depth = stack.pop()
            if isinstance(item, dict | list):
                if depth > MAX_DEPTH:
                    raise malformed(self.cmd, key, f"nests deeper than {MAX_DEPTH} levels")
                items = item.values() if isinstance(item, dict) else item
                stack.extend((child, depth + 1) for child in items)
        return value


@dataclass(frozen=True)
class Hello:
    """The game's first message: its engine's version string and whether it draws."""

    engine: str | None
    headless: bool

    @classmethod
    def parse(cls, reply: Any) -> Hello:
        r = _Reply("hello", reply)
        return cls(r.text("engine", optional=True) or None, bool(reply.get("headless")))


@dataclass(frozen=True)
class Ready:
    """The scene was loaded (or not, and why); the window's size."""

    loaded: bool
    error: str | None
    width: int
    height: int

    @classmethod
    def parse(cls, reply: Any) -> Ready:
        r = _Reply("ready", reply)
        return cls(
            bool(reply.get("loaded")),
            r.text("error", optional=True) or None,
            r.integer("width", optional=True) or 0,
            r.integer("height", optional=True) or 0,
        )


@dataclass(frozen=True)
class Ping:
    """The frame the game is at, its frames per second over at least the last 0.5 s (None
    before its frames span that long) and its game time in seconds."""

    frame: int
    fps: float | None
    time: float = 0.0

    @classmethod
    def parse(cls, reply: Any) -> Ping:
        r = _Reply("ping", reply)
        time = r.number("time") if "time" in reply else 0.0
        if time < 0:
            raise malformed("ping", "time", "is negative")
        return cls(r.count("frame"), r.rate("fps"), float(time))


@dataclass(frozen=True)
class Reached:
    """``after``: the frame at which the game time asked for had passed."""

    frame: int

    @classmethod
    def parse(cls, reply: Any) -> Reached:
        return cls(_Reply("after", reply).count("frame"))


@dataclass(frozen=True)
class Applied:
    """``input``: how many events were applied, at which frame the last one was."""

    applied: int
    frame: int

    @classmethod
    def parse(cls, reply: Any) -> Applied:
        r = _Reply("input", reply)
        return cls(r.count("applied"), r.count("frame"))


@dataclass(frozen=True)
class Tree:
    """``tree``: the nodes (the scene tree's shape, passed through), how many there were in all."""

    nodes: list[dict[str, Any]]
    total: int
    truncated: bool
    current_scene: str | None

    @classmethod
    def parse(cls, reply: Any, max_nodes: int | None = None) -> Tree:
        """The listing, entries (collapsed runs included) checked against each other: at most
        ``max_nodes`` of them, and ``total`` the sum of their counts unless it was cut."""
        r = _Reply("tree", reply)
        items = r.items("nodes")
        if max_nodes is not None and len(items) > max_nodes:
            raise malformed("tree", "nodes", f"holds more than max_nodes ({max_nodes}) entries")
        nodes = [_node(item) for item in items]
        total, truncated = r.count("total"), r.flag("truncated")
        listed = sum(node.get("count", 1) for node in nodes)
        if listed > total or (not truncated and listed != total):
            raise malformed("tree", "total", f"is {total} but the entries count {listed} nodes")
        return cls(nodes, total, truncated, r.text("current_scene", True))


def _node(item: Any) -> dict[str, Any]:
    """One node of a ``tree`` reply: path, name, class, children, script; or a run of
    siblings (:func:`_run`)."""
    if not isinstance(item, dict):
        raise malformed("tree", "nodes", "holds something other than objects")
    if "count" in item:
        return _run(item)
    r = _Reply("tree", item)
    node: dict[str, Any] = {
        "path": r.text("path"),
        "name": r.text("name"),
        "class": r.text("class"),
        "children": r.count("children"),
    }
    if (script := r.text("script", optional=True)) is not None:
        node["script"] = script
    return node


def _run(item: dict[str, Any]) -> dict[str, Any]:
    """A collapsed run of a ``tree`` reply: its first node's path, class and script, how many
    siblings (at least ``COLLAPSE_RUN``) and the last one's path."""
    r = _Reply("tree", item)
    run: dict[str, Any] = {key: r.text(key) for key in ("path", "class")}
    if (script := r.text("script", optional=True)) is not None:
        run["script"] = script
    count = r.count("count")
    if count < COLLAPSE_RUN:
        raise malformed("tree", "count", f"is under {COLLAPSE_RUN}")
    run["count"] = count
    run["last"] = r.text("last")
    return run


@dataclass(frozen=True)
class Clock:
    """``time``: whether the game is paused, its time scale, the frame it is at."""

    paused: bool
    time_scale: float
    frame: int

    @classmethod
    def parse(cls, reply: Any) -> Clock:
        r = _Reply("time", reply)
        return cls(r.flag("paused"), r.number("time_scale"), r.count("frame"))


@dataclass(frozen=True)
class Values:
    """``get``: the node's class and the values read (as JSON values, passed through)."""

    class_name: str
    values: dict[str, Any]
    truncated: bool

    @classmethod
    def parse(cls, reply: Any) -> Values:
        r = _Reply("get", reply)
        name = r.text("class")
        assert name is not None
        return cls(name, r.mapping("values"), r.flag("truncated"))


@dataclass(frozen=True)
class Written:
    """``set``: each value as the node holds it after the write."""

    values: dict[str, Any]

    @classmethod
    def parse(cls, reply: Any) -> Written:
        return cls(_Reply("set", reply).mapping("values"))


@dataclass(frozen=True)
class Scripts:
    """``scripts`` and ``reload``: ``res://`` script paths (those in use; those reloaded)."""

    paths: list[str]

    @classmethod
    def parse(cls, cmd: str, key: str, reply: Any) -> Scripts:
        items = _Reply(cmd, reply).items(key)
        if not all(isinstance(p, str) and p.startswith("res://") for p in items):
            raise malformed(cmd, key, "are not res:// paths")
        return cls(items)


@dataclass(frozen=True)
class Called:
    """``call``: the method's result (a JSON value, passed through)."""

    result: Any

    @classmethod
    def parse(cls, reply: Any) -> Called:
        r = _Reply("call", reply)
        return cls(r.shallow("result", r._get("result", optional=True)))


@dataclass(frozen=True)
class Perf:
    """``perf``: the engine's own monitors, read at one frame."""

    fps: float | None  # None until the game's frames span 0.5 s
    frame_ms: float
    physics_ms: float
    memory_static_bytes: int
    objects: int
    nodes: int
    orphan_nodes: int
    draw_calls: int | None  # None where nothing draws (headless)
    frame: int

    @classmethod
    def parse(cls, reply: Any) -> Perf:
        r = _Reply("perf", reply)
        return cls(
            fps=r.rate("fps"),
            frame_ms=r.number("frame_ms"),
            physics_ms=r.number("physics_ms"),
            memory_static_bytes=r.count("memory_static_bytes"),
            objects=r.count("objects"),
            nodes=r.count("nodes"),
            orphan_nodes=r.count("orphan_nodes"),
            draw_calls=r.integer("draw_calls", optional=True),
            frame=r.count("frame"),
        )


@dataclass(frozen=True)
class FrameReport:
    """One captured frame: its size, what grabbing and saving it cost, and the mode of its
    raw pixels beside the PNG (``RGB``, ``RGBA``; None: none were written)."""

    width: int
    height: int
    ms: float
    raw: str | None


def frame_reports(cmd: str, reply: Any, count: int) -> list[FrameReport]:
    """The ``count`` frame reports of a ``screenshot`` or ``record`` reply."""
    frames = _Reply(cmd, reply).items("frames")
    if len(frames) != count:
        raise malformed(cmd, "frames", f"holds {len(frames)} reports, not {count}")
    out = []
    for item in frames:
        r = _Reply(cmd, item)
        width, height = r.count("width"), r.count("height")
        grab = r.number("grab_ms") if "grab_ms" in item else 0.0
        save = r.number("save_ms") if "save_ms" in item else 0.0
        raw = item.get("raw") if item.get("raw") in ("RGB", "RGBA") else None
        out.append(FrameReport(width, height, float(grab) + float(save), raw))
    return out


INSPECT_LISTS = ("methods", "signals", "connected_in", "groups", "properties")
MAX_INSPECT_ITEMS = 200  # items a list of ``inspect``
MAX_INSPECT_TEXT = 4096  # characters of a name, path or type in an ``inspect`` reply


@dataclass(frozen=True)
class Inspected:
    """``inspect``: a node's class and the parts asked for (``script``, ``methods``, ``signals``
    with ``connected_in``, ``groups``, ``properties``), each list at most 200 items (a signal's
    connections too), and the lists that were cut. Every field is checked and every text
    bounded: a game may forge the reply."""

    class_name: str
    parts: dict[str, Any]
    truncated: list[str]

    @classmethod
    def parse(cls, reply: Any, include: Sequence[str]) -> Inspected:
        r = _Reply("inspect", reply)
        said = r.items("truncated")
        if not all(name in INSPECT_LISTS for name in said):
            raise malformed("inspect", "truncated", "names something other than its lists")
        cut = set(said)
        parts: dict[str, Any] = {}
        if "script" in include:
            parts["script"] = _script(r._get("script", optional=True))
        for key in INSPECT_LISTS:
            if key in include or (key == "connected_in" and "signals" in include):
                items = r.items(key)
                if len(items) > MAX_INSPECT_ITEMS:
                    cut.add(key)
                parts[key] = [_item(r, key, item, cut) for item in items[:MAX_INSPECT_ITEMS]]
        name = _text("class", r._get("class", False))
        return cls(name, parts, [k for k in INSPECT_LISTS if k in cut and k in parts])


def _text(field: str, value: Any) -> str:
    if not isinstance(value, str):
        raise malformed("inspect", field, "is not a string")
    if len(value) > MAX_INSPECT_TEXT:
        raise malformed("inspect", field, f"is longer than {MAX_INSPECT_TEXT} characters")
    return value


def _fields(field: str, item: Any, names: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise malformed("inspect", field, "holds something other than objects")
    return {name: _text(f"{field}.{name}", item.get(name)) for name in names}


def _script(value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    out = _fields("script", value, ("path",))
    if "class_name" in value:
        out["class_name"] = _text("script.class_name", value["class_name"])
    out["extends"] = _text("script.extends", value.get("extends"))
    return out


def _item(r: _Reply, key: str, item: Any, cut: set[str]) -> Any:
    """One item of the list ``key`` of an ``inspect`` reply, checked."""
    if key == "groups":
        return _text("groups", item)
    if key == "connected_in":
        return _fields(key, item, ("node", "signal", "method"))
    if key == "methods":
        out = _fields(key, item, ("name",))
        out["args"] = [_text("methods.args", a) for a in _bounded(key, item, "args", cut)]
        out["path"] = _text("methods.path", item.get("path"))
        line = _Reply("inspect", item).integer("line", optional=True)
        if line is not None and line < 1:
            raise malformed("inspect", "methods.line", "is not a line number")
        out["line"] = line
        return out
    if key == "signals":
        out = _fields(key, item, ("name",))
        connections = _bounded(key, item, "connections", cut)
        out["connections"] = [
            _fields(f"{key}.connections", c, ("node", "method")) for c in connections
        ]
        return out
    out = _fields(key, item, ("name", "type"))
    exported = item.get("exported")
    if not isinstance(exported, bool):
        raise malformed("inspect", "properties.exported", "is not true or false")
    out["exported"] = exported
    if "value" not in item:
        raise malformed("inspect", "properties.value", "is missing")
    out["value"] = r.shallow("properties.value", item["value"])
    return out


def _bounded(key: str, item: dict[str, Any], field: str, cut: set[str]) -> list[Any]:
    """The list ``field`` of an item of ``key``, cut to 200 items (``key`` then says so)."""
    value = item.get(field)
    if not isinstance(value, list):
        raise malformed("inspect", f"{key}.{field}", "is not a list")
    if len(value) > MAX_INSPECT_ITEMS:
        cut.add(key)
    return value[:MAX_INSPECT_ITEMS]

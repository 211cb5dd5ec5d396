"""The bridge's replies parsed into typed values; a reply the bridge never sends is a typed
refusal naming the command and the field (pure logic)."""

from __future__ import annotations

import pytest

from godot_mcp.errors import Failed
from godot_mcp.features.game.protocol import (
    Applied,
    Called,
    Clock,
    FrameReport,
    Hello,
    Malformed,
    Perf,
    Ping,
    Ready,
    Tree,
    Values,
    Written,
    frame_reports,
)

PERF = {
    "id": 3,
    "ok": True,
    "fps": 60.0,
    "frame_ms": 1.5,
    "physics_ms": 0.25,
    "memory_static_bytes": 1048576.0,  # Godot 3 may send an integer as a float
    "objects": 120,
    "nodes": 14,
    "orphan_nodes": 0,
    "draw_calls": None,
    "frame": 512,
}


def test_each_reply_is_read_as_the_bridges_send_it() -> None:
    assert Ping.parse({"id": 1, "ok": True, "fps": 59.5, "frame": 10}) == Ping(10, 59.5)
    assert Applied.parse({"applied": 3, "frame": 7.0}) == Applied(3, 7)
    node = {"path": "/root/Main", "name": "Main", "class": "Node2D", "children": 2}
    assert Tree.parse(
        {"nodes": [node], "total": 4, "truncated": True, "current_scene": "/root/Main"}
    ) == Tree([node], 4, True, "/root/Main")
    assert Tree.parse({"nodes": [], "total": 0, "truncated": False, "current_scene": None}) == (
        Tree([], 0, False, None)
    )
    assert Clock.parse({"paused": True, "time_scale": 0.5, "frame": 90}) == Clock(True, 0.5, 90)
    read = Values.parse({"class": "Sprite", "values": {"position": [1, 2]}, "truncated": False})
    assert read == Values("Sprite", {"position": [1, 2]}, False)
    assert Written.parse({"values": {"visible": False}}) == Written({"visible": False})
    assert Called.parse({"result": {"type": "Vector2", "x": 1}}).result == {
        "type": "Vector2",
        "x": 1,
    }
    assert Called.parse({"id": 2, "ok": True}).result is None  # a method returning nothing
    perf = Perf.parse(PERF)
    assert (perf.memory_static_bytes, perf.draw_calls, perf.frame) == (1048576, None, 512)
    assert Hello.parse({"type": "hello", "engine": "3.2.3.stable", "headless": True}) == Hello(
        "3.2.3.stable", True
    )
    assert Ready.parse({"loaded": False, "error": "error 19"}) == Ready(False, "error 19", 0, 0)
    frames = frame_reports(
        "record",
        {"frames": [{"width": 64, "height": 32, "grab_ms": 1.5, "save_ms": 2, "raw": "RGBA"}]},
        1,
    )
    assert frames == [FrameReport(64, 32, 3.5, "RGBA")]


@pytest.mark.parametrize(
    ("parse", "reply", "message"),
    [
        (Ping.parse, {"fps": 60}, "the game's answer to ping is malformed: frame is missing"),
        (Ping.parse, [], "the game's answer to ping is malformed: the reply is not an object"),
        (
            Ping.parse,
            {"frame": None, "fps": 60},
            "the game's answer to ping is malformed: frame is not an integer",
        ),
        (
            Values.parse,
            {"class": None, "values": {}, "truncated": False},
            "the game's answer to get is malformed: class is not a string",
        ),
        (
            Applied.parse,
            {"applied": True, "frame": 1},
            "the game's answer to input is malformed: applied is not an integer",
        ),
        (
            Applied.parse,
            {"applied": 1.5, "frame": 1},
            "the game's answer to input is malformed: applied is not an integer",
        ),
        (
            Applied.parse,
            {"applied": -1, "frame": 1},
            "the game's answer to input is malformed: applied is negative",
        ),
        (
            Tree.parse,
            {"nodes": ["x"], "total": 1, "truncated": False},
            "the game's answer to tree is malformed: nodes holds something other than objects",
        ),
        (
            Tree.parse,
            {"nodes": [{"path": "/root", "name": "root", "class": "Viewport"}], "total": 1},
            "the game's answer to tree is malformed: children is missing",
        ),
        (
            Tree.parse,
            {"nodes": [], "total": 0, "truncated": 0},
            "the game's answer to tree is malformed: truncated is not true or false",
        ),
        (
            Clock.parse,
            {"paused": False, "time_scale": float("nan"), "frame": 1},
            "the game's answer to time is malformed: time_scale is not finite",
        ),
        (
            Values.parse,
            {"class": 3, "values": {}, "truncated": False},
            "the game's answer to get is malformed: class is not a string",
        ),
        (
            Written.parse,
            {"values": []},
            "the game's answer to set is malformed: values is not an object",
        ),
        (
            Perf.parse,
            {**PERF, "objects": "many"},
            "the game's answer to perf is malformed: objects is not an integer",
        ),
        (
            lambda r: frame_reports("screenshot", r, 1),
            {"frames": []},
            "the game's answer to screenshot is malformed: frames holds 0 reports, not 1",
        ),
        (
            lambda r: frame_reports("record", r, 1),
            {"frames": [{"width": 8}]},
            "the game's answer to record is malformed: height is missing",
        ),
    ],
)
def test_a_reply_the_bridge_never_sends_is_a_typed_failure(parse, reply, message) -> None:
    with pytest.raises(Malformed) as refused:
        parse(reply)
    assert isinstance(refused.value, Failed)
    assert (refused.value.outcome, refused.value.message) == ("failed", message)

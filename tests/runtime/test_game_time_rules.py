"""Waits in game seconds, property conditions and measured rates in the fast lane: the
bridge's replies read field by field, the conditions, the input call's bounds, and the tools
over the fake engine (the real lanes: ``tests/runtime/test_game_time.py``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import anyio
import pytest

from godot_mcp.errors import InvalidArgument, Malformed
from godot_mcp.features.game.errors import GameInvalid
from godot_mcp.features.game.pacing import recording_bound
from godot_mcp.features.game.protocol import Perf, Ping, Reached
from godot_mcp.features.game.tools import check_input_events, check_until
from godot_mcp.features.game.waiting import as_number, holds, input_timeout
from tests.runtime.test_fake_engine import call, fake_server, ok

pytestmark = pytest.mark.usefixtures("fake_display")

PERF = {
    "frame_ms": 1.0,
    "physics_ms": 0.5,
    "memory_static_bytes": 1,
    "objects": 1,
    "nodes": 1,
    "orphan_nodes": 0,
    "draw_calls": None,
    "frame": 9,
}


@pytest.mark.parametrize(
    ("sent", "read"),
    [
        (None, None),  # not measured yet: the frames do not span 0.5 s
        (59.94, 59.9),
        (0.49731, 0.497),  # below 1 fps the decimals stay
        (0.000123456, 0.000123),
        (1234.5, 1234),
        (0, 0.0),
    ],
)
def test_a_measured_rate_is_read_as_sent_to_three_digits_or_null(
    sent: float | None, read: float | None
) -> None:
    assert Ping.parse({"fps": sent, "frame": 3, "time": 1.5}) == Ping(3, read, 1.5)
    assert Perf.parse({**PERF, "fps": sent}).fps == read


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ({"frame": 3}, "fps is missing"),
        ({"fps": "fast", "frame": 3}, "fps is not a number"),
        ({"fps": True, "frame": 3}, "fps is not a number"),
        ({"fps": 1e300, "frame": 3}, "fps is outside 0..1e+06"),
        ({"fps": -0.5, "frame": 3}, "fps is outside 0..1e+06"),
        ({"fps": math.inf, "frame": 3}, "fps is not finite"),
        ({"fps": 60, "frame": 3, "time": -1}, "time is negative"),
        ({"fps": 60, "frame": 3, "time": "late"}, "time is not a number"),
    ],
)
def test_a_forged_rate_or_game_time_is_malformed(reply: dict[str, Any], why: str) -> None:
    with pytest.raises(Malformed) as caught:
        Ping.parse(reply)
    assert caught.value.message == f"the game's answer to ping is malformed: {why}"


def test_a_forged_game_time_wait_answer_is_malformed() -> None:
    assert Reached.parse({"frame": 12, "time": 2.0}) == Reached(12)
    with pytest.raises(Malformed) as caught:
        Reached.parse({"frame": -3})
    assert caught.value.message == "the game's answer to after is malformed: frame is negative"


@pytest.mark.parametrize(
    ("condition", "value", "first", "met"),
    [
        ({"equals": 2}, 2.0, 0, True),
        ({"equals": 2}, 3, 0, False),
        ({"not_equals": "a"}, "b", "a", True),
        (
            {"not_equals": {"type": "Vector2", "x": 1, "y": 2}},
            {"type": "Vector2", "x": 1, "y": 2},
            0,
            False,
        ),
        ({"less": 1}, 0.5, 0, True),
        ({"less": 1}, 1, 0, False),
        ({"greater": 1}, 1, 0, False),
        ({"greater": 1}, {"type": "float", "value": "inf"}, 0, True),
        ({"less": 1}, {"type": "float", "value": "nan"}, 0, False),
        ({"greater": 1}, {"type": "float", "value": "nan"}, 0, False),
        ({"changed": True}, 5, 5, False),
        ({"changed": True}, 6, 5, True),
        ({"changed": True}, [1, 2], [1, 2], False),
    ],
)
def test_each_property_condition(condition: dict[str, Any], value: Any, first: Any, met: bool):
    assert holds({"node": "/root/N", "property": "p", **condition}, value, first) is met


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("calm", "String"),
        (True, "bool"),
        (None, "null"),
        ([1], "Array"),
        ({"a": 1}, "Dictionary"),
        ({"type": "Vector2", "x": 1, "y": 2}, "Vector2"),
        ({"type": "x" * 41}, "value"),  # a game names its own types: a forged name is not said
        ({"type": ["Vector2"]}, "value"),
        ({"type": "a b"}, "value"),
        ({"type": "float", "value": ["nan"]}, "float"),
    ],
)
def test_less_and_greater_refuse_a_value_that_is_no_number(value: Any, kind: str) -> None:
    with pytest.raises(GameInvalid) as caught:
        as_number(value, "level")
    assert (
        caught.value.message == f"level is a {kind}, not a number: less and greater compare numbers"
    )


PRESS = {"type": "action", "action": "jump"}


def test_an_input_call_waits_at_most_30_game_seconds_bounded_in_wall_time() -> None:
    thirty = [PRESS, {"type": "wait", "seconds": 20}, {"type": "wait", "seconds": 10}]
    assert check_input_events(thirty) == thirty
    assert input_timeout(thirty) == 90  # 30 s, and twice the waits, capped
    assert input_timeout([PRESS, {"type": "wait", "seconds": 10}]) == 50
    assert input_timeout([PRESS, {"type": "wait", "frames": 600}]) == 30
    over = [*thirty, {"type": "wait", "seconds": 0.01}]
    with pytest.raises(InvalidArgument) as caught:
        check_input_events(over)
    assert caught.value.message == (
        "the waits add up to 30.01 game seconds; one call waits at most 30 "
        "(send the rest in another call)"
    )
    for wrong in ({"type": "wait"}, {"type": "wait", "frames": 1, "seconds": 1}):
        with pytest.raises(InvalidArgument) as caught:
            check_input_events([PRESS, wrong])
        assert caught.value.message == "events[1] waits either frames or seconds (one of them)"
    with pytest.raises(InvalidArgument):
        check_input_events([{"type": "wait", "seconds": 30.5}])
    with pytest.raises(InvalidArgument):
        check_input_events([{"type": "wait", "seconds": 0.005}])


NODE = {"node": "/root/Main", "property": "visible"}


@pytest.mark.parametrize(
    "until",
    [
        {"seconds": 0.005},
        {"seconds": 30.5},
        {"seconds": 1, "frames": 2},
        {},
        NODE,
        {**NODE, "changed": False},
        {**NODE, "less": "3"},
        {**NODE, "greater": True},
        {**NODE, "equals": 1, "less": 2},
    ],
)
def test_a_wait_takes_one_condition_of_its_shape(until: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgument):
        check_until(until)


@pytest.mark.anyio
async def test_game_seconds_waits_over_the_fake_engine(tmp_path: Path, fake_major: int) -> None:
    with anyio.fail_after(60):
        async with fake_server(tmp_path, major=fake_major) as c:
            sid = (await ok(c, "runtime.session.start", {"mode": "headless"}))["session"]["id"]
            waited = await ok(c, "runtime.wait", {"session_id": sid, "until": {"seconds": 0.1}})
            assert waited["frame"] >= 6
            events = [{"type": "key", "key": "A"}, {"type": "wait", "seconds": 0.05}, PRESS]
            sent = await ok(c, "runtime.input.send", {"session_id": sid, "events": events})
            assert sent["applied"] == 3
            until = {**NODE, "not_equals": False}
            assert (await ok(c, "runtime.wait", {"session_id": sid, "until": until}))["value"]
            until = {**NODE, "less": 1}
            refused = await call(c, "runtime.wait", {"session_id": sid, "until": until})
            assert refused == {
                "outcome": "invalid_argument",
                "message": "visible is a bool, not a number: less and greater compare numbers",
            }
            await ok(c, "runtime.time.control", {"session_id": sid, "action": "pause"})
            args = {"session_id": sid, "until": {"seconds": 0.05}, "timeout_seconds": 0.5}
            paused = await call(c, "runtime.wait", args)
            assert paused["outcome"] == "timeout", paused
            assert paused["message"] == "the condition was not met within 0.5 s"
            await ok(c, "runtime.session.stop", {"session_id": sid})


def test_a_recording_refused_before_the_rate_is_measured_never_says_0_fps() -> None:
    with pytest.raises(GameInvalid) as refused:
        recording_bound(300, 1, 0.0)
    assert refused.value.message == (
        "300 frames at 1 fps (not measured yet) would take 305 s; a recording waits at most "
        "50 s: ask for fewer frames"
    )

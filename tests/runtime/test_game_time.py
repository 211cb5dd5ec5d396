"""Waits in game time and honest frame rates, on a real Godot.

The fixture's scene sums its own process steps (``t``: its game time) and notes the game time
each press of ``tap`` reached it at, and the wall-clock time of each of its frames; its frame
rate is set through a method. Nothing here depends on how fast the machine is: a press lands
on the first frame at or past its game time, so the gap between two presses is the wait
asked for plus less than one frame's step, whatever the steps were.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.runtime.test_captures import ok
from tests.support.engines import Engine
from tests.support.servers import stdio_client
from tests.support.slow_game import slow_project

pytestmark = [pytest.mark.anyio, pytest.mark.godot]

PROJECT = """config_version=4

[application]

config/name="game time"
run/main_scene="res://clock.tscn"

[input]

tap={
"deadzone": 0.5,
"events": [  ]
}
"""

CLOCK_GD = """extends Node2D

var t := 0.0
var presses := []
var steps := []
var stamps := []
var level := 0
var word := "calm"

func set_rate(n):
\tEngine.target_fps = n

func set_level_later(n):
\tyield(get_tree().create_timer(0.5, false), "timeout")
\tlevel = n

func _process(delta):
\tt += delta
\tif presses.size() > 0 and steps.size() < 900:
\t\tsteps.append(delta)
\tstamps.append([Engine.get_idle_frames(), OS.get_ticks_usec(), t])
\tif stamps.size() > 900:
\t\tstamps.pop_front()

func _unhandled_input(event):
\tif event is InputEventAction and event.action == "tap" and event.pressed:
\t\tpresses.append(t)
"""

GODOT4 = [
    ("Engine.target_fps", "Engine.max_fps"),
    ("Engine.get_idle_frames()", "Engine.get_process_frames()"),
    ("OS.get_ticks_usec()", "Time.get_ticks_usec()"),
    (
        'yield(get_tree().create_timer(0.5, false), "timeout")',
        "await get_tree().create_timer(0.5, false).timeout",
    ),
]


def clock_project(engine: Engine, root: Path) -> Path:
    root.mkdir(parents=True)
    script = CLOCK_GD
    if engine.major >= 4:
        for old, new in GODOT4:
            script = script.replace(old, new)
    (root / "project.godot").write_text(engine.port(PROJECT))
    (root / "clock.gd").write_text(script)
    (root / "clock.tscn").write_text(engine.scene("clock.gd"))
    return root


@asynccontextmanager
async def clock_game(tmp_path: Path, engine: Engine) -> AsyncIterator[tuple[Client, str]]:
    project = clock_project(engine, tmp_path / "clock")
    async with stdio_client(project, tmp_path / "state") as c:
        sid = (await ok(c, "runtime.session.start", {"mode": "headless"}))["session"]["id"]
        yield c, sid
        await ok(c, "runtime.session.stop", {"session_id": sid})


async def values(c: Client, sid: str, *names: str) -> dict[str, Any]:
    got = await ok(
        c, "runtime.node.get", {"session_id": sid, "path": "/root/Root", "properties": list(names)}
    )
    return got["values"]


async def call(c: Client, sid: str, method: str, *args: Any) -> Any:
    body = await ok(
        c,
        "runtime.node.call",
        {"session_id": sid, "path": "/root/Root", "method": method, "args": list(args)},
    )
    return body["result"]


async def wait(c: Client, sid: str, until: dict[str, Any], timeout: float = 10) -> dict[str, Any]:
    r = await c.call_tool(
        "runtime_wait", {"session_id": sid, "until": until, "timeout_seconds": timeout}
    )
    return r.structured_content


PRESS = {"type": "action", "action": "tap", "pressed": True}
RELEASE = {"type": "action", "action": "tap", "pressed": False}
EPS = 1e-5


@pytest.mark.parametrize("rate", [60, 5])
async def test_press_wait_press_in_game_seconds_is_the_same_at_60_and_at_5_fps(
    tmp_path: Path, engine: Engine, rate: int
):
    with anyio.fail_after(120):
        async with clock_game(tmp_path, engine) as (c, sid):
            await call(c, sid, "set_rate", rate)
            sent = await ok(
                c,
                "runtime.input.send",
                {
                    "session_id": sid,
                    "events": [
                        PRESS,
                        {"type": "wait", "seconds": 0.3},
                        PRESS,
                        RELEASE,
                        {"type": "action", "action": "tap"},  # a tap: pressed, released
                        {"type": "wait", "seconds": 0.2},
                        {"type": "wait", "seconds": 0.2},
                        PRESS,
                    ],
                },
            )
            assert sent["applied"] == 8
            got = await values(c, sid, "presses", "steps")
            presses, steps = got["presses"], got["steps"]
            assert len(presses) == 4, presses
            longest = max(steps)
            # The second press lands on the first frame at or past 0.3 game seconds after the
            # first, at any frame rate.
            assert 0.3 - EPS <= presses[1] - presses[0] < 0.3 + longest + EPS, (presses, steps)
            # The release and the tap each went in on a frame of their own.
            assert 0 < presses[2] - presses[1] <= 2 * longest + EPS, (presses, steps)
            # Waits in a row add up, counted from the tap's press (its own release, made a
            # frame later, takes nothing from them).
            assert 0.4 - EPS <= presses[3] - presses[2] < 0.4 + longest + EPS, (presses, steps)
            if rate == 5:  # a frame's step is about 0.2 s here: frame waits would differ
                assert longest > 0.1, steps


def _stamp(stamps: list[list[Any]], frame: int) -> tuple[int, float]:
    """The wall-clock microseconds and the scene's game time at ``frame``."""
    (found,) = [(us, t) for f, us, t in stamps if f == frame]
    return found


async def test_a_seconds_wait_counts_game_time_scaled_and_not_while_paused(
    tmp_path: Path, engine: Engine
):
    with anyio.fail_after(120):
        async with clock_game(tmp_path, engine) as (c, sid):
            scale = {"session_id": sid, "action": "scale", "time_scale": 4}
            start = (await ok(c, "runtime.time.control", scale))["frame"]
            done = await wait(c, sid, {"seconds": 2}, timeout=30)
            assert done["outcome"] == "ok", done
            stamps = (await values(c, sid, "stamps"))["stamps"]
            steps = [b[2] - a[2] for a, b in itertools.pairwise(stamps)]
            (us0, t0), (us1, t1) = _stamp(stamps, start), _stamp(stamps, done["frame"])
            # The wait began at or after the frame the scale went in, and ended on the first
            # frame past 2 game seconds: at least 2, and less than 2 and a frame's step more
            # from the frame before it began...
            assert t1 - t0 >= 2 - EPS, (t0, t1)
            # ... each game second a quarter of a wall second.
            assert abs((t1 - t0) / ((us1 - us0) / 1e6) - 4) < 0.4, (t0, t1, us0, us1, steps)
            scale["time_scale"] = 1
            await ok(c, "runtime.time.control", scale)

            await ok(c, "runtime.time.control", {"session_id": sid, "action": "pause"})
            t0 = (await values(c, sid, "t"))["t"]
            stopped = await wait(c, sid, {"seconds": 0.05}, timeout=1)
            assert stopped["outcome"] == "timeout", stopped
            assert stopped["message"] == "the condition was not met within 1 s", stopped
            assert (await values(c, sid, "t"))["t"] == t0
            # The abandoned wait was dropped by the game: resumed, a new one ends in time.
            await ok(c, "runtime.time.control", {"session_id": sid, "action": "resume"})
            assert (await wait(c, sid, {"seconds": 0.05}))["outcome"] == "ok"


async def test_each_property_condition_succeeds_and_times_out(tmp_path: Path, engine: Engine):
    with anyio.fail_after(120):
        async with clock_game(tmp_path, engine) as (c, sid):
            node = {"node": "/root/Root", "property": "level"}
            # Met at once by the value as it is.
            for cond, want in (("equals", 0), ("not_equals", 5), ("less", 1), ("greater", -1)):
                done = await wait(c, sid, {**node, cond: want})
                assert (done["outcome"], done["value"]) == ("ok", 0), (cond, done)
            # Never met: each times out with the last value seen.
            for cond, want in (("equals", 7), ("not_equals", 0), ("less", 0), ("greater", 0)):
                done = await wait(c, sid, {**node, cond: want}, timeout=0.5)
                assert (done["outcome"], done["value"]) == ("timeout", 0), (cond, done)
            done = await wait(c, sid, {**node, "changed": True}, timeout=0.5)
            assert (done["outcome"], done["value"]) == ("timeout", 0), done
            # Met by a change the game makes half a game second after it resumes (the wait
            # reads its first value at once).
            await ok(c, "runtime.time.control", {"session_id": sid, "action": "pause"})
            await call(c, sid, "set_level_later", 3)
            changed: list[dict[str, Any]] = []

            async def wait_changed() -> None:
                changed.append(await wait(c, sid, {**node, "changed": True}))

            async with anyio.create_task_group() as group:
                group.start_soon(wait_changed)
                await anyio.lowlevel.checkpoint()
                await ok(c, "runtime.time.control", {"session_id": sid, "action": "resume"})
            assert (changed[0]["outcome"], changed[0]["value"]) == ("ok", 3), changed
            await call(c, sid, "set_level_later", 9)
            done = await wait(c, sid, {**node, "greater": 5})
            assert (done["outcome"], done["value"]) == ("ok", 9), done
            # less and greater compare numbers: a String is refused at once, typed.
            word = {"node": "/root/Root", "property": "word"}
            done = await wait(c, sid, {**word, "less": 3})
            assert done == {
                "outcome": "invalid_argument",
                "message": "word is a String, not a number: less and greater compare numbers",
            }, done
            done = await wait(c, sid, {**word, "not_equals": "calm"}, timeout=0.3)
            assert (done["outcome"], done["value"]) == ("timeout", "calm"), done


async def test_input_waits_over_30_game_seconds_are_refused(tmp_path: Path, engine: Engine):
    with anyio.fail_after(120):
        async with clock_game(tmp_path, engine) as (c, sid):
            events = [PRESS, {"type": "wait", "seconds": 20}, {"type": "wait", "seconds": 10.5}]
            r = await c.call_tool("runtime_input_send", {"session_id": sid, "events": events})
            assert r.structured_content == {
                "outcome": "invalid_argument",
                "message": "the waits add up to 30.5 game seconds; one call waits at most 30 "
                "(send the rest in another call)",
            }
            both = [PRESS, {"type": "wait", "seconds": 1, "frames": 2}]
            r = await c.call_tool("runtime_input_send", {"session_id": sid, "events": both})
            assert r.structured_content == {
                "outcome": "invalid_argument",
                "message": "events[1] waits either frames or seconds (one of them)",
            }
            assert (await values(c, sid, "presses"))["presses"] == []  # nothing was sent


def _rate_over(stamps: list[list[int]], frame: int) -> float | None:
    """The rate the bridge says at ``frame``, recomputed from the scene's own frame stamps:
    frames over the shortest run of the last ones spanning 0.5 s, None before."""
    at = {f: us for f, us, _t in stamps}
    end = at[frame]
    for f, us, _t in sorted(stamps, reverse=True):
        if f <= frame and end - us >= 500_000:
            return (frame - f) * 1e6 / (end - us)
    return None


async def test_fps_is_null_until_half_a_second_of_frames_then_measured(
    tmp_path: Path, engine: Engine
):
    with anyio.fail_after(120):
        async with clock_game(tmp_path, engine) as (c, sid):
            first = await ok(c, "runtime.perf.read", {"session_id": sid})
            await wait(c, sid, {"seconds": 1})
            later = await ok(c, "runtime.perf.read", {"session_id": sid})
            stamps = (await values(c, sid, "stamps"))["stamps"]
            # The scene's first frame comes after the bridge's: its span is the shorter one.
            own_first = _rate_over(stamps, first["frame"])
            if first["fps"] is None:
                assert own_first is None, (first, stamps[:40])
            elif own_first is not None:
                assert abs(first["fps"] - own_first) <= 0.05 * own_first, (first, own_first)
            expected = _rate_over(stamps, later["frame"])
            assert expected is not None and later["fps"] is not None, later
            assert abs(later["fps"] - expected) <= 0.05 * expected, (later, expected)


async def test_a_game_at_half_a_frame_a_second_says_its_rate_with_decimals(
    tmp_path: Path, engine: Engine
):
    project = slow_project(engine, tmp_path / "slow")
    with anyio.fail_after(150):
        async with stdio_client(project, tmp_path / "state") as c:
            sid = (await ok(c, "runtime.session.start"))["session"]["id"]
            await ok(
                c,
                "runtime.wait",
                {"session_id": sid, "until": {"frames": 3}, "timeout_seconds": 30},
            )
            perf = await ok(c, "runtime.perf.read", {"session_id": sid})
            # Every frame takes at least 2 s: the rate is at most half a frame a second.
            assert perf["fps"] is not None and 0.05 < perf["fps"] <= 0.5 + EPS, perf
            assert perf["fps"] != round(perf["fps"]), perf
            r = await c.call_tool(
                "runtime_recording_capture",
                {"session_id": sid, "frames": 300, "fps": 10, "preview_px": 0},
            )
            body = r.structured_content
            assert body["outcome"] == "invalid_argument", body
            assert re.search(r"\(the game runs at 0\.\d+ fps\)", body["message"]), body
            timed_out = await c.call_tool(
                "runtime_wait",
                {"session_id": sid, "until": {"frames": 50}, "timeout_seconds": 0.5},
            )
            late = timed_out.structured_content
            assert late["outcome"] == "timeout" and 0.05 < late["fps"] <= 0.5 + EPS, late
            await ok(c, "runtime.session.stop", {"session_id": sid})


# A game that forges what the bridge answers: it sets the bridge's own counters (its script
# is the scene tree's) and answers the bridge's pending game-time waits itself, every frame,
# paused or not.
FORGER_GD = """extends Node2D

var mode := ""

func _ready():
\tpause_mode = PAUSE_MODE_PROCESS

func _process(_delta):
\tvar tree = get_tree()
\tif mode == "time":
\t\ttree.set("_game_time", -5.0)
\telif mode == "after":
\t\ttree.set("_game_time", 0.0)
\t\tfor timer in tree.get("_timers"):
\t\t\ttree.call("_send", {"id": timer["id"], "ok": true, "frame": -3})
\t\ttree.set("_timers", [])
\telif mode == "rate":
\t\ttree.set("_frames_seen", 4000000000000000000)
"""


async def test_a_game_forging_its_rate_time_or_wait_answers_gets_typed_refusals(
    tmp_path: Path, engine: Engine
):
    root = tmp_path / "forger"
    root.mkdir()
    script = FORGER_GD
    if engine.major >= 4:
        script = script.replace(
            "pause_mode = PAUSE_MODE_PROCESS", "process_mode = PROCESS_MODE_ALWAYS"
        )
    (root / "project.godot").write_text(engine.port(PROJECT.replace("clock.tscn", "forger.tscn")))
    (root / "forger.gd").write_text(script)
    (root / "forger.tscn").write_text(engine.scene("forger.gd"))
    nowhere = {"node": "/root/Nowhere"}

    async def forge(c: Client, sid: str, mode: str) -> None:
        args = {"session_id": sid, "path": "/root/Root", "values": {"mode": mode}}
        await ok(c, "runtime.node.set", args)

    def malformed(cmd: str, why: str) -> dict[str, Any]:
        return {"outcome": "failed", "message": f"the game's answer to {cmd} is malformed: {why}"}

    with anyio.fail_after(120):
        async with stdio_client(root, tmp_path / "state") as c:
            sid = (await ok(c, "runtime.session.start", {"mode": "headless"}))["session"]["id"]
            await forge(c, sid, "time")
            timed_out = await wait(c, sid, nowhere, timeout=0.2)
            assert timed_out == malformed("ping", "time is negative"), timed_out

            await forge(c, sid, "after")
            await ok(c, "runtime.time.control", {"session_id": sid, "action": "pause"})
            early = await wait(c, sid, {"seconds": 20}, timeout=5)
            assert early == malformed("after", "frame is negative"), early

            while (await ok(c, "runtime.perf.read", {"session_id": sid}))["fps"] is None:
                await wait(c, sid, {"frames": 5})  # until the game's frames span 0.5 s
            await forge(c, sid, "rate")
            perf = await c.call_tool("runtime_perf_read", {"session_id": sid})
            want = malformed("perf", "fps is outside 0..1e+06")
            assert perf.structured_content == want, perf.structured_content
            timed_out = await wait(c, sid, nowhere, timeout=0.2)
            assert timed_out == malformed("ping", "fps is outside 0..1e+06"), timed_out

            # The session stays usable through all of it.
            await forge(c, sid, "")
            got = await values(c, sid, "mode")
            assert got == {"mode": ""}
            await ok(c, "runtime.session.stop", {"session_id": sid})

"""What a hostile game sends over its debugger reaches a client as an answer the official SDK
client accepts (it validates ``structuredContent`` against each tool's ``outputSchema``): finite
numbers, texts without terminal escapes, a stack or a profile that fits ``max_output_bytes``.
The fake engine (``tests/support/fake_godot.py``) plays the game, speaking Godot 3's protocol
and Godot 4's;
``tests/runtime/test_debugger_limits.py`` does the same on the real engines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from godot_mcp.engine.debugger import Break, Frame
from godot_mcp.engine.process.redact import Scrubber
from godot_mcp.features.debug.tools import MAX_ERROR, _state
from godot_mcp.mcp.budget import Budget
from tests.runtime.test_fake_engine import call, fake_server, ok
from tests.support import fake_godot
from tests.support.projects import make_project

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("fake_display")]


def project_with(tmp_path: Path, *scripts: str) -> Path:
    """The fake's project with ``main.gd`` and ``scripts`` (the fake's cues: a breakpoint set
    on ``res://deep.gd`` makes its next stop 40,000 frames deep, and so on)."""
    project = make_project(tmp_path / "project")
    for name in ("main.gd", *scripts):
        (project / name).write_text("extends Node\n" * 20)
    return project


async def debugged(c: Any, cue: str) -> dict[str, str]:
    session = (await ok(c, "runtime.session.start", {"debug": True}))["session"]
    sid = {"session_id": session["id"]}
    await ok(c, "runtime.debug.breakpoints", {**sid, "set": [f"res://{cue}:1"]})
    return sid


async def test_a_profile_answers_finite_numbers_and_counts_the_rows_it_dropped(
    tmp_path: Path, fake_major: int
) -> None:
    project_with(tmp_path, "poisoned_profile.gd")
    with anyio.fail_after(60):
        async with fake_server(tmp_path, major=fake_major) as c:
            sid = await debugged(c, "poisoned_profile.gd")
            measured = await ok(c, "runtime.profile.capture", {**sid, "seconds": 0.2})
    # 1e306 s is infinite in ms, three frames of 1e308 s infinite summed, NaN no number.
    assert measured == {
        "outcome": "ok",
        "frames": 3,
        "functions": [
            {
                "function": "red",
                "path": "res://main.gd",
                "line": 18,
                "code": "extends Node",
                "calls": 3,
                "self_ms": 9.0,
                "total_ms": 12.0,
            },
            {
                "function": "_process",
                "path": "res://main.gd",
                "line": 5,
                "code": "extends Node",
                "calls": 3,
                "self_ms": 3.0,
                "total_ms": 6.0,
            },
        ],
        "dropped": 3,
        "truncated": False,
    }


async def test_a_profile_larger_than_an_answer_answers_its_busiest_rows(
    tmp_path: Path, fake_major: int
) -> None:
    project_with(tmp_path, "huge_profile.gd")
    with anyio.fail_after(60):
        async with fake_server(tmp_path, max_output_bytes=9000, major=fake_major) as c:
            sid = await debugged(c, "huge_profile.gd")
            args = {**sid, "seconds": 0.2, "max_functions": 200}
            measured = await ok(c, "runtime.profile.capture", args)
    busiest = [  # 600 functions of 900-character names, the busiest (self) first
        {
            "function": f"f{i:03d}_" + "x" * 895,
            "path": "res://main.gd",
            "line": i + 1,
            "calls": 3,
            "self_ms": round(1e-5 * (i + 1) * 3 * 1000, 3),
            "total_ms": round(2e-5 * (i + 1) * 3 * 1000, 3),
        }
        for i in reversed(range(600))
    ]
    shown = len(measured["functions"])
    assert 1 <= shown < 10, shown
    assert measured == {
        "outcome": "ok",
        "frames": 3,
        "functions": busiest[:shown],
        "dropped": 0,
        "truncated": True,
    }


def frames(depth: int, top_line: int) -> list[dict[str, Any]]:
    """The fake's deep stack as answered: its stop, then res://main.gd:1, 2, … in ``f``; the
    code of the 20 lines main.gd has."""
    top = {"path": "res://main.gd", "line": top_line, "function": "_ready"}
    stack = [top, *({"path": "res://main.gd", "line": i, "function": "f"} for i in range(1, depth))]
    return [f | {"code": "extends Node"} if f["line"] <= 20 else f for f in stack]


async def test_a_stack_larger_than_an_answer_answers_its_innermost_frames(
    tmp_path: Path, fake_major: int
) -> None:
    project_with(tmp_path, "deep.gd")
    with anyio.fail_after(60):
        async with fake_server(tmp_path, max_output_bytes=4096, major=fake_major) as c:
            sid = await debugged(c, "deep.gd")
            at = await ok(c, "runtime.debug.state", {**sid, "wait_seconds": 10})
            shown = len(at["stack"])
            assert 2 <= shown < 50, shown
            assert at == {
                "outcome": "ok",
                "state": "break",
                "reason": "break",
                "stack": frames(shown, 7),
                "depth": fake_godot.DEEP,
                "truncated": True,
            }
            stepped = await ok(c, "runtime.debug.control", {**sid, "action": "next"})
            assert stepped == {
                **at,
                "reason": "step",
                "stack": frames(len(stepped["stack"]), 8),
            }
            assert len(stepped["stack"]) == shown
            await ok(c, "runtime.debug.control", {**sid, "action": "continue"})
            await ok(c, "runtime.session.stop", sid)


async def test_a_stops_texts_reach_the_client_without_terminal_escapes(
    tmp_path: Path, fake_major: int
) -> None:
    project_with(tmp_path, "escapes.gd")
    with anyio.fail_after(60):
        async with fake_server(tmp_path, major=fake_major) as c:
            sid = await debugged(c, "escapes.gd")
            at = await ok(c, "runtime.debug.state", {**sid, "wait_seconds": 10})
            assert at == {
                "outcome": "ok",
                "state": "break",
                "reason": "error",
                "error": "forged error ",  # was "forged error \x1b]0;pwned\x07\x1b[2J"
                "stack": [
                    {"path": "res://main.gd", "line": 7, "function": "red", "code": "extends Node"}
                ],
                "depth": 1,
                "truncated": False,
            }
            values = await ok(c, "runtime.debug.variables", sid)
            assert values["locals"] == {"line": 7, "cwd": "<tmp>", "name": "value"}
            errors = await ok(c, "runtime.log.read", {**sid, "min_level": "error"})
            # Godot 3 prints no error once a debugger is attached: the server writes it; Godot 4
            # prints its own, the function on the line after it.
            text = {3: "SCRIPT ERROR: red: forged error ", 4: "SCRIPT ERROR: forged error "}
            assert errors["lines"][-1]["text"] == text[fake_major]
            assert errors["lines"][-1]["source"] == {
                "path": "res://main.gd",
                "line": 7,
                "code": "extends Node",
            }
            stepped = await ok(c, "runtime.debug.control", {**sid, "action": "next"})
            assert stepped["stack"] == [
                {"path": "res://main.gd", "line": 8, "function": "red", "code": "extends Node"}
            ]
            await ok(c, "runtime.session.stop", sid)


@pytest.mark.parametrize("given", ["res://main.gd:3\n", "res://main.gd:3\r", " res://main.gd:3"])
async def test_a_breakpoint_is_exactly_what_it_says(
    tmp_path: Path, given: str, fake_major: int
) -> None:
    project_with(tmp_path)
    refusal = {
        "outcome": "invalid_argument",
        "message": f"a breakpoint is res://path.gd:LINE, not {given!r}",
    }
    with anyio.fail_after(60):
        async with fake_server(tmp_path, major=fake_major) as c:
            start = {"debug": True, "breakpoints": [given]}
            assert await call(c, "runtime.session.start", start) == refusal
            sid = (await ok(c, "runtime.session.start", {"debug": True}))["session"]["id"]
            later = {"session_id": sid, "set": [given]}
            assert await call(c, "runtime.debug.breakpoints", later) == refusal
            cleared = {"session_id": sid, "clear": [given]}
            assert await call(c, "runtime.debug.breakpoints", cleared) == refusal
            listed = await ok(c, "runtime.debug.breakpoints", {"session_id": sid})
            assert listed["breakpoints"] == []
            scene = await call(c, "runtime.session.start", {"scene": "res://main.tscn\n"})
            assert scene == {
                "outcome": "invalid_argument",
                "message": "scene must be a res:// path to a .tscn or .scn file, without '..'",
            }


@pytest.mark.parametrize("limit", [1024, 4096, 512 * 1024])
def test_a_stops_error_is_cut_to_what_an_answer_holds(limit: int) -> None:
    stack = [Frame("res://a.gd", i + 1, "f", i) for i in range(100)]
    budget = Budget(limit)
    answer = _state(Break("error", "e" * 100_000, stack), Scrubber([], secrets=[]), budget)
    body = answer.structured_content
    assert budget.fits(answer) and body is not None and body["outcome"] == "ok"
    assert body["error"] == "e" * len(body["error"])
    assert 0 < len(body["error"]) <= MAX_ERROR
    assert (body["depth"], body["truncated"]) == (100, len(body["stack"]) < 100)
    if limit > 4096:
        assert (len(body["error"]), len(body["stack"])) == (MAX_ERROR, 100)


async def test_what_a_game_says_its_self_is_reaches_a_refusal_printable(tmp_path: Path) -> None:
    """A get_node that fails makes the server ask the game what its self is; the class it
    names (with a title change and a screen clear in it) is said without them. Godot 4 only:
    Godot 3's debugger has no evaluation."""
    project_with(tmp_path)
    with anyio.fail_after(60):
        async with fake_server(tmp_path, major=4) as c:
            start = {"debug": True, "breakpoints": ["res://main.gd:3"]}
            sid = {"session_id": (await ok(c, "runtime.session.start", start))["session"]["id"]}
            at = await ok(c, "runtime.debug.state", {**sid, "wait_seconds": 10})
            assert at["state"] == "break"
            refused = await call(c, "runtime.debug.evaluate", {**sid, "expression": "$Far.name"})
            assert refused == {
                "outcome": "invalid_argument",
                "message": "On call to 'get_node': the frame's self is a RefCounted, not a "
                "Node: $Path and %Name mean get_node on self, which only a Node has; evaluate "
                "in a frame whose self is a Node (its index as frame), or reach the scene as "
                'Engine.get_main_loop().current_scene.get_node("…")',
            }
            await ok(c, "runtime.session.stop", sid)

"""Every game tool's handler, its refusals and its answer shape, in the fast lane: the real
server in process (an in-memory MCP client), the real session, bridge and process code, and
``tests/support/fake_godot.py`` in the engine's place. The real lanes run the same tools on
real engines; this one runs in seconds and needs no engine or display."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from godot_mcp.app import open_app
from godot_mcp.config import Settings
from godot_mcp.mcp.spec import NameStyle
from godot_mcp.store.values import Limits
from tests.support import fake_godot
from tests.support.offloop import store_calls_on_the_loop
from tests.support.projects import make_project

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("fake_display")]


@asynccontextmanager
async def fake_server(
    tmp_path: Path,
    writes: bool = True,
    max_output_bytes: int = Limits.max_output_bytes,
    names: NameStyle = "underscore",
    major: int = 3,
) -> AsyncIterator[Client]:
    """A server over a fake engine playing Godot ``major``, on a project of our own, reached
    in process."""
    fake = fake_godot.script(tmp_path / "engine", major)
    headless = fake if major >= 4 else fake_godot.script(tmp_path / "engine", 3, server=True)
    settings = Settings(
        state_dir=tmp_path / "state",
        godot=str(fake),
        godot_headless=str(headless),
        limits=Limits(max_output_bytes=max_output_bytes),
        allow_runtime_writes=writes,
        tool_names=names,
    )
    project = make_project(tmp_path / "project")  # kept when the test wrote one already
    async with open_app(settings, project, "stdio") as app, Client(app.server) as client:
        yield client


async def call(client: Client, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    result = await client.call_tool(tool.replace(".", "_"), args or {})
    assert result.structured_content is not None, result
    return result.structured_content


async def ok(client: Client, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    answer = await call(client, tool, args)
    assert answer["outcome"] == "ok", answer
    return answer


# What the engines' bridges name differently: the fake's Player, a 3D transform.
SPRITE = {3: "Sprite", 4: "Sprite2D"}
TRANSFORM = {3: "Transform", 4: "Transform3D"}
VERSION = {3: fake_godot.VERSION, 4: fake_godot.VERSION4}


async def test_a_game_is_seen_touched_inspected_and_stopped(
    tmp_path: Path, fake_major: int
) -> None:
    with anyio.fail_after(60):
        async with fake_server(tmp_path, major=fake_major) as c:
            profile = await ok(c, "server.profile")
            assert profile["godot"]["version"] == VERSION[fake_major]
            assert profile["godot"]["major"] == fake_major
            started = await ok(c, "runtime.session.start", {"mode": "windowed"})
            sid = started["session"]["id"]
            assert started["session"]["state"] == "running"
            listed = await ok(c, "runtime.session.list")
            assert [s["id"] for s in listed["sessions"]] == [sid]

            tree = await ok(c, "runtime.scene.tree", {"session_id": sid})
            assert [n["path"] for n in tree["nodes"]] == [
                "/root",
                "/root/Main",
                "/root/Main/Player",
            ]
            assert (tree["total"], tree["truncated"], tree["current_scene"]) == (
                3,
                False,
                "/root/Main",
            )
            one = await ok(c, "runtime.scene.tree", {"session_id": sid, "max_nodes": 1})
            assert (len(one["nodes"]), one["total"], one["truncated"]) == (1, 3, True)

            got = await ok(c, "runtime.node.get", {"session_id": sid, "path": "/root/Main/Player"})
            assert got["class"] == SPRITE[fake_major]
            assert got["values"]["position"] == {"type": "Vector2", "x": 10, "y": 20}
            at = {"session_id": sid, "path": "/root/Main", "properties": ["aim"]}
            aim = (await ok(c, "runtime.node.get", at))["values"]["aim"]
            assert aim == {
                "type": TRANSFORM[fake_major],
                "basis": {"type": "Basis", "x": [1, 0, 0], "y": [0, 1, 0], "z": [0, 0, 1]},
                "origin": [0, 0, 2],
            }
            moved = {"position": {"type": "Vector2", "x": 5, "y": 6}}
            written = await ok(
                c,
                "runtime.node.set",
                {"session_id": sid, "path": "/root/Main/Player", "values": moved},
            )
            assert written["values"] == moved
            called = await ok(
                c,
                "runtime.node.call",
                {"session_id": sid, "path": "/root/Main", "method": "get_name"},
            )
            assert called["result"] == "Main"
            raised = await call(
                c,
                "runtime.node.call",
                {"session_id": sid, "path": "/root/Main", "method": "explode"},
            )
            assert raised == {
                "outcome": "failed",
                "message": "explode raised a script error: SCRIPT ERROR: explode: it blew up "
                "(res://main.gd:7)",
            }
            missing = await call(c, "runtime.node.get", {"session_id": sid, "path": "/root/No"})
            assert missing == {"outcome": "not_found", "message": "no node at /root/No"}

            sent = await ok(
                c,
                "runtime.input.send",
                {"session_id": sid, "events": [{"type": "key", "key": "A"}]},
            )
            assert sent["applied"] == 1 and sent["frame"] >= 0
            paused = await ok(c, "runtime.time.control", {"session_id": sid, "action": "pause"})
            assert paused["paused"] is True and paused["time_scale"] == 1
            stepped = await ok(
                c, "runtime.time.control", {"session_id": sid, "action": "step", "frames": 5}
            )
            assert stepped["frame"] == paused["frame"] + 5
            waited = await ok(
                c,
                "runtime.wait",
                {"session_id": sid, "until": {"node": "/root/Main/Player"}, "timeout_seconds": 5},
            )
            assert waited["frame"] == stepped["frame"]  # paused: the clock stands

            perf = await ok(c, "runtime.perf.read", {"session_id": sid})
            assert (perf["fps"], perf["nodes"], perf["draw_calls"]) == (60, 3, 3)

            log = await ok(c, "runtime.log.read", {"session_id": sid})
            texts = [line["text"] for line in log["lines"]]
            assert "fake game ready" in texts and "key A pressed=True" in texts

            shot = (await ok(c, "runtime.screenshot.capture", {"session_id": sid}))["artifact"]
            data = await fetch(c, shot)
            assert data == fake_godot.png(64, 48, (200, 40, 40))
            assert (shot["width"], shot["height"], shot["frames"]) == (64, 48, 1)
            recording = await ok(
                c, "runtime.recording.capture", {"session_id": sid, "frames": 3, "fps": 10}
            )
            apng = await fetch(c, recording["artifact"])
            assert apng.startswith(b"\x89PNG") and b"acTL" in apng
            assert recording["artifact"]["frames"] == 3

            captured = (await ok(c, "runtime.log.capture", {"session_id": sid}))["artifact"]
            logged = await fetch(c, captured)
            assert b"fake game ready" in logged and b"key A pressed=True" in logged
            read = await ok(c, "artifacts.read", {"uri": shot["uri"]})
            assert (read["offset"], read["length"], read["size"]) == (0, len(data), len(data))
            info = await ok(c, "project.info")
            assert info["generation"] == 1 and info["dotnet"] is False
            reloaded = await ok(c, "project.reload")
            assert reloaded["generation"] == 2

            stopped = await ok(c, "runtime.session.stop", {"session_id": sid})
            assert stopped == {"outcome": "ok", "state": "stopped", "exit_code": 0}
            gone = await call(c, "runtime.scene.tree", {"session_id": sid})
            assert gone["outcome"] == "not_found"


async def fetch(c: Client, artifact: dict[str, Any]) -> bytes:
    """An artifact's bytes through resources/read, checked against its digest."""
    read = await c.read_resource(artifact["uri"])
    (contents,) = read.contents
    data = base64.b64decode(contents.blob)  # type: ignore[union-attr]
    assert hashlib.sha256(data).hexdigest() == artifact["sha256"]
    return data


async def test_the_game_tools_refuse_clearly_and_lose_nothing(
    tmp_path: Path, fake_major: int
) -> None:
    with anyio.fail_after(60):
        async with fake_server(tmp_path, major=fake_major) as c:
            unknown = await call(c, "runtime.scene.tree", {"session_id": "A" * 22})
            assert unknown == {"outcome": "not_found", "message": "no such game session"}
            failed = await call(c, "runtime.session.start", {"scene": "res://nowhere.tscn"})
            assert failed["outcome"] == "failed"
            assert failed["message"].startswith(
                "scene res://nowhere.tscn failed to load (error 19): "
            )
            assert "ERROR: Failed loading resource: res://nowhere.tscn." in failed["message"]
            assert (await ok(c, "runtime.session.list"))["sessions"] == []

            headless = (await ok(c, "runtime.session.start", {"mode": "headless"}))["session"]
            refused = await call(c, "runtime.screenshot.capture", {"session_id": headless["id"]})
            assert refused == {
                "outcome": "unavailable",
                "message": "captures need a windowed session; this one is headless",
            }
            perf = await ok(c, "runtime.perf.read", {"session_id": headless["id"]})
            assert (perf["nodes"], perf["draw_calls"]) == (3, None)  # nothing draws
            args = {"session_id": headless["id"], "until": {"frames": 600}, "timeout_seconds": 1}
            timed_out = await call(c, "runtime.wait", args)
            assert timed_out["outcome"] == "timeout" and timed_out["fps"] == 60
            # The abandoned wait was cancelled in the game: the next input is not held.
            with anyio.fail_after(3):
                sent = await ok(
                    c,
                    "runtime.input.send",
                    {"session_id": headless["id"], "events": [{"type": "key", "key": "B"}]},
                )
            assert sent["applied"] == 1
            await ok(c, "runtime.session.stop", {"session_id": headless["id"]})

            (tmp_path / "project" / "malformed.tscn").write_text("[gd_scene format=2]\n")
            odd = (await ok(c, "runtime.session.start", {"scene": "res://malformed.tscn"}))[
                "session"
            ]
            tree = await call(c, "runtime.scene.tree", {"session_id": odd["id"]})
            assert tree == {
                "outcome": "failed",
                "message": "the game's answer to tree is malformed: nodes is not a list",
            }
            perf = await call(c, "runtime.perf.read", {"session_id": odd["id"]})
            assert perf == {
                "outcome": "failed",
                "message": "the game's answer to perf is malformed: fps is not a number",
            }
            assert (await ok(c, "runtime.session.list"))["sessions"][0]["state"] == "running"

            # Values nested past any the bridge sends are refused before anything recurses
            # into them; a line nested past what Python's json reads costs one command.
            (tmp_path / "project" / "deep.tscn").write_text("[gd_scene format=2]\n")
            deep = (await ok(c, "runtime.session.start", {"scene": "res://deep.tscn"}))["session"]
            at = {"session_id": deep["id"], "path": "/root/Main"}
            got = await call(c, "runtime.node.get", at)
            assert got == {
                "outcome": "failed",
                "message": "the game's answer to get is malformed: values nests deeper than 64 "
                "levels",
            }
            called = await call(c, "runtime.node.call", {**at, "method": "get_name"})
            assert called["message"] == (
                "the game's answer to call is malformed: result nests deeper than 64 levels"
            )
            perf = await call(c, "runtime.perf.read", {"session_id": deep["id"]})
            assert perf == {"outcome": "failed", "message": "the game closed its bridge connection"}
            await ok(c, "runtime.scene.tree", {"session_id": deep["id"]})


async def test_exports_and_checks_run_the_engine_in_the_sandbox(
    tmp_path: Path, fake_major: int
) -> None:
    with anyio.fail_after(60):
        async with fake_server(tmp_path, major=fake_major) as c:
            availability = (await ok(c, "server.profile"))["availability"]
            assert availability["project_export"] == "available", availability
            started = await ok(c, "project.export", {"platform": "linux", "kind": "pack"})
            export = started["export"]
            while export["state"] == "running":
                args = {"export_id": export["id"], "wait_seconds": 10}
                export = (await ok(c, "project.export.status", args))["export"]
            assert export["state"] == "succeeded", export
            (output,) = export["outputs"]
            data = await fetch(c, output)
            assert data.startswith(b"GDPC") and b"res://project.godot" in data
            again = await ok(c, "project.export.cancel", {"export_id": export["id"]})
            assert again["state"] == "succeeded"  # an export that ended keeps its state

            release = await ok(c, "project.export", {"platform": "linux", "kind": "release"})
            args = {"export_id": release["export"]["id"], "wait_seconds": 20}
            failed = (await ok(c, "project.export.status", args))["export"]
            assert failed["state"] == "failed"
            assert "No export template found" in failed["log_tail"]

            checked = await ok(c, "project.check")
            assert (checked["errors"], checked["truncated"]) == ([], False)
            (tmp_path / "project" / "broken.gd").write_text("BROKEN\n")
            broken = await ok(c, "project.check")
            assert [(e["path"], e["kind"]) for e in broken["errors"]] == [
                ("res://broken.gd", "parse")
            ]


async def test_the_projects_tests_run_on_a_copy_and_their_report_is_kept(
    tmp_path: Path, fake_major: int
) -> None:
    project = make_project(tmp_path / "project")
    (project / "addons" / "gut").mkdir(parents=True)
    (project / "addons" / "gut" / "gut_cmdln.gd").write_text("# the fake engine is the runner\n")
    (project / "test").mkdir()
    (project / "test" / "test_a.gd").write_text(
        "func test_one():\n\tpass\n\nfunc test_two():\n\tFAIL\n"
    )
    (project / ".gutconfig.json").write_text('{"dirs": ["res://test"]}')
    with anyio.fail_after(60):
        async with fake_server(tmp_path, major=fake_major) as c:
            ran = await ok(c, "project.test")
            assert ran["counts"] == {
                "tests": 2,
                "passed": 1,
                "failed": 1,
                "errors": 0,
                "skipped": 0,
            }
            assert ran["failures"] == [
                {
                    "suite": "res://test/test_a.gd",
                    "test": "test_two",
                    "path": "res://test/test_a.gd",
                    "message": "it said FAIL at line -1",
                }
            ]
            report = await fetch(c, ran["report"])
            assert report.count(b"<testcase ") == 2 and b"<failure" in report
            (project / "test" / "test_b.gd").write_text("func test_stuck():\n\tHANG\n")
            args = {"paths": ["res://test/test_b.gd"], "timeout_seconds": 2}
            stuck = await call(c, "project.test", args)
            assert stuck["outcome"] == "timeout", stuck
            assert stuck["log_tail"][-1] == "* test_stuck"
            (project / "test" / "test_b.gd").write_text("func test_dies():\n\tDIE\n")
            died = await call(c, "project.test", {"paths": ["res://test/test_b.gd"]})
            assert died["outcome"] == "failed", died
            # killed by a signal: the sandbox's own exit says 128 + 9
            assert died["message"] == (
                "the test runner exited with code 137 without writing its report"
            )
    assert not (project / ".import").exists() and not list(project.glob("test/*.xml"))


async def test_a_debugged_game_stops_steps_and_nothing_waits_on_it(
    tmp_path: Path, fake_major: int
) -> None:
    """The debug tools over the fake's debugger (each engine's protocol): a breakpoint in
    force from the start, the stack and variables, a step, a step out and an evaluation where
    the engine has them, every frame tool refused at once while stopped, continue, break; and
    the refusals of a session started without debug."""
    project = make_project(tmp_path / "project")
    (project / "main.gd").write_text("extends Node2D\n" * 20)
    with anyio.fail_after(60):
        async with fake_server(tmp_path, major=fake_major) as c:
            bad = await call(c, "runtime.session.start", {"breakpoints": ["res://main.gd:3"]})
            assert bad == {"outcome": "invalid_argument", "message": "breakpoints need debug: true"}
            bad = await call(
                c, "runtime.session.start", {"debug": True, "breakpoints": ["res://nope.gd:3"]}
            )
            assert bad["message"] == "res://nope.gd is not a script of the project"
            args = {"debug": True, "breakpoints": ["res://main.gd:3"]}
            session = (await ok(c, "runtime.session.start", args))["session"]
            assert (session["state"], session["debug"]) == ("running", True)
            sid = {"session_id": session["id"]}
            stopped = await ok(c, "runtime.debug.state", sid)
            assert stopped == {
                "outcome": "ok",
                "state": "break",
                "reason": "breakpoint",
                "stack": [
                    {
                        "path": "res://main.gd",
                        "line": 3,
                        "function": "_ready",
                        "code": "extends Node2D",
                    }
                ],
                "depth": 1,
                "truncated": False,
            }
            values = await ok(c, "runtime.debug.variables", sid)
            assert values["locals"] == {"line": 3, "cwd": "<tmp>"}  # scrubbed as the log is
            assert values["members"] == {  # each engine's Variant types, as values
                "self": {"type": "Object", "id": 1174},
                "speed": 42,
                "state": "idle",  # a StringName on Godot 4, a String on 3
                "aim": {
                    "type": TRANSFORM[fake_major],
                    "basis": {"type": "Basis", "x": [1, 0, 0], "y": [0, 1, 0], "z": [0, 0, 1]},
                    "origin": [0, 0.5, 2],
                },
            }
            where = "the game is stopped at res://main.gd:3 (breakpoint); "
            for tool, more in (
                ("runtime.scene.tree", {}),
                ("runtime.perf.read", {}),
                ("runtime.node.inspect", {"path": "/root/Main"}),
                ("runtime.screenshot.capture", {}),
                ("runtime.node.get", {"path": "/root/Main"}),
            ):
                with anyio.fail_after(2):
                    refused = await call(c, tool, {**sid, **more})
                assert refused == {
                    "outcome": "unavailable",
                    "message": where + "resume it with runtime_debug_control",
                }, tool
            assert (await ok(c, "runtime.log.read", sid))["state"] == "running"

            stepped = await ok(c, "runtime.debug.control", {**sid, "action": "next"})
            assert (stepped["reason"], stepped["stack"][0]["line"]) == ("step", 4)
            out = await call(c, "runtime.debug.control", {**sid, "action": "out"})
            evaluated = await call(c, "runtime.debug.evaluate", {**sid, "expression": "speed"})
            failed = await call(c, "runtime.debug.evaluate", {**sid, "expression": "nope"})
            child = await call(c, "runtime.debug.evaluate", {**sid, "expression": "$Jump.name"})
            lone = await call(c, "runtime.debug.evaluate", {**sid, "expression": "1 + $"})
            assert lone == {
                "outcome": "invalid_argument",
                "message": "expression: a node name is needed after '$', not the end "
                '($Name, $Name/Child or $"Name") (at its end)',
            }
            if fake_major == 3:
                assert out["message"] == "Godot 3.2.3's debugger has no step out"
                assert evaluated == failed == child
                assert evaluated == {
                    "outcome": "unavailable",
                    "message": "Godot 3.2.3's debugger has no evaluation",
                }
                line = 4
            else:
                assert (out["reason"], out["stack"][0]["line"]) == ("step", 5)
                assert evaluated == {"outcome": "ok", "value": 42}
                assert failed == {
                    "outcome": "invalid_argument",
                    "message": "Invalid named index 'nope' for base type Object: 'nope' is no "
                    "local of this frame and no property, constant or method of its self; the "
                    "expression also sees autoloads and engine singletons, but no class names "
                    '(reach a script as ResourceLoader.load("res://….gd")) and no other '
                    "frame's locals (evaluate those with that frame's index as frame); "
                    "runtime_debug_variables lists the frame's names",
                }
                assert child == {"outcome": "ok", "value": "Jump"}
                line = 5
            at = await ok(c, "runtime.debug.variables", sid)
            assert at["locals"] == {"line": line, "cwd": "<tmp>"}
            far = await call(c, "runtime.debug.variables", {**sid, "frame": 5})
            assert far == {
                "outcome": "invalid_argument",
                "message": "frame 5 is not in the stack (1 frames)",
            }
            listed = await ok(
                c,
                "runtime.debug.breakpoints",
                {
                    **sid,
                    "set": ["res://main.gd:12", "res://main.gd:9"],
                    "clear": ["res://main.gd:3"],
                },
            )
            assert listed["breakpoints"] == ["res://main.gd:9", "res://main.gd:12"]
            # At a break the debugger is asked (Godot 3 reloads every script), after a check.
            reloaded = await ok(c, "runtime.scripts.reload", {**sid, "paths": ["res://main.gd"]})
            assert reloaded["reloaded"] == ["res://main.gd"]
            (project / "broken.gd").write_text("BROKEN\n")
            refused = await call(c, "runtime.scripts.reload", {**sid, "paths": ["res://broken.gd"]})
            assert refused == {
                "outcome": "invalid_argument",
                "message": "res://broken.gd:1: BROKEN is no code; the game keeps its old code",
            }
            (project / "broken.gd").unlink()
            going = await ok(c, "runtime.debug.control", {**sid, "action": "continue"})
            assert going == {"outcome": "ok", "state": "running"}
            await ok(c, "runtime.scene.tree", sid)  # frames again
            measured = await ok(c, "runtime.profile.capture", {**sid, "seconds": 0.2})
            assert measured["frames"] == 3
            assert measured["functions"] == [
                {
                    "function": "_process",
                    "path": "res://main.gd",
                    "line": 5,
                    "code": "extends Node2D",
                    "calls": 3,
                    "self_ms": 3.0,
                    "total_ms": 6.0,
                }
            ]
            assert (measured["dropped"], measured["truncated"]) == (0, False)
            running = await ok(c, "runtime.scripts.reload", sid)  # through the bridge
            assert running["reloaded"] == ["res://main.gd"]
            not_stopped = await call(c, "runtime.debug.control", {**sid, "action": "step"})
            assert not_stopped["message"] == "the game is not stopped"
            broken = await ok(c, "runtime.debug.control", {**sid, "action": "break"})
            assert (broken["state"], broken["reason"], broken["stack"]) == ("break", "break", [])
            again = await ok(c, "runtime.debug.control", {**sid, "action": "break"})
            assert again == broken  # nothing sent: a second break would resume the game
            stopped_profile = await call(c, "runtime.profile.capture", sid)
            assert stopped_profile == {
                "outcome": "unavailable",
                "message": "the game is stopped at a break between frames; "
                "resume it with runtime_debug_control",
            }
            stopped = await ok(c, "runtime.session.stop", sid)
            assert stopped["state"] == "stopped"

            plain = (await ok(c, "runtime.session.start"))["session"]
            assert "debug" not in plain
            for tool in ("runtime.debug.state", "runtime.debug.variables"):
                refused = await call(c, tool, {"session_id": plain["id"]})
                assert refused == {
                    "outcome": "unavailable",
                    "message": "the session was started without debug",
                }


async def test_a_lost_or_garbled_debugger_never_stalls_the_server(
    tmp_path: Path, fake_major: int
) -> None:
    """A debugger connection that ends while the game is stopped ends the game (it would
    stay stopped for ever); one that sends what is not the protocol is dropped, and the game
    and the server go on."""
    project = make_project(tmp_path / "project")
    for name in ("main.gd", "drop.gd", "garbage.gd", "leak.gd"):
        (project / name).write_text("extends Node\n" * 5)
    with anyio.fail_after(60):
        async with fake_server(tmp_path, major=fake_major) as c:
            args = {"debug": True, "breakpoints": ["res://main.gd:3"]}
            stopped = (await ok(c, "runtime.session.start", args))["session"]["id"]
            await ok(c, "runtime.debug.state", {"session_id": stopped, "wait_seconds": 5})
            drop = {"session_id": stopped, "set": ["res://drop.gd:1"]}
            await call(c, "runtime.debug.breakpoints", drop)
            while (await ok(c, "runtime.session.list"))["sessions"][0]["state"] != "exited":
                await anyio.sleep(0.05)
            (listed,) = (await ok(c, "runtime.session.list"))["sessions"]
            assert listed["debug"] is False
            errors = await ok(c, "runtime.log.read", {"session_id": stopped, "min_level": "error"})
            assert errors["lines"][-1]["text"] == (
                "the debugger connection was lost while the game was stopped "
                "(the game closed the debugger connection); the game was ended"
            )
            await ok(c, "runtime.session.stop", {"session_id": stopped})

            running = (await ok(c, "runtime.session.start", {"debug": True}))["session"]["id"]
            sid = {"session_id": running}
            # A game that stops in a path outside the project: no frame of it is shown.
            await ok(c, "runtime.debug.breakpoints", {**sid, "set": ["res://leak.gd:1"]})
            at = await ok(c, "runtime.debug.state", {**sid, "wait_seconds": 5})
            assert (at["state"], at["stack"]) == ("break", [])
            refused = await call(c, "runtime.scene.tree", sid)
            assert refused["message"] == (
                "the game is stopped at a break between frames; "
                "resume it with runtime_debug_control"
            )
            await ok(c, "runtime.debug.control", {**sid, "action": "continue"})
            await call(c, "runtime.debug.breakpoints", {**sid, "set": ["res://garbage.gd:1"]})
            lost = "the debugger connection was lost: the game sent what is not the debugger's "
            lost += "protocol: unknown type id 250"
            with anyio.fail_after(5):
                while (await call(c, "runtime.debug.state", sid)).get("message") != lost:
                    await anyio.sleep(0.05)
            assert (await ok(c, "runtime.session.list"))["sessions"][0]["debug"] is False
            assert (await ok(c, "runtime.scene.tree", sid))["nodes"]  # the game goes on


def engine_processes(folder: Path) -> list[int]:
    """The pids of processes running the fake engine copied into ``folder``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if entry.name.isdigit() and str(folder).encode() in cmdline:
            found.append(int(entry.name))
    return found


# What hangs for each headless service, and how it is asked for: a check of a file the fake
# engine never finishes loading, a test run whose one test never ends.
HANGING = {
    "check": {"hang.gd": "HANG\n"},
    "test": {
        "addons/gut/gut_cmdln.gd": "# the fake engine is the runner\n",
        "test/test_stuck.gd": "func test_stuck():\n\tHANG\n",
    },
}


@pytest.mark.parametrize("work", sorted(HANGING))
async def test_a_graceful_shutdown_ends_headless_work_still_running(
    tmp_path: Path, work: str
) -> None:
    """A check or test run whose engine never finishes answers at shutdown, leaves no process
    and no scratch, and one asked for after it is refused; the project is as it was."""
    from godot_mcp.errors import Unavailable
    from godot_mcp.store.values import Caller

    project = make_project(tmp_path / "project")
    for rel, text in HANGING[work].items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text)
    before = {p: p.read_bytes() if p.is_file() else None for p in project.rglob("*")}
    engine = tmp_path / "engine"
    settings = Settings(
        tmp_path / "state", str(fake_godot.script(engine)), str(engine / "fake-godot"), Limits()
    )
    caller = Caller("local", None, None, 0)  # never reached: nothing is registered

    def ask(app: Any) -> Any:
        if work == "check":
            return app.deps.checks.run(None)
        return app.deps.tests.run(caller, 0, ["res://test"], "auto", 300)

    answers: list[str] = []

    async def start(app: Any) -> None:
        try:
            await ask(app)
        except Unavailable as exc:
            answers.append(exc.message)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg, open_app(settings, project, "stdio") as app:
            tg.start_soon(start, app)
            while not engine_processes(engine):
                await anyio.sleep(0.05)
        assert answers == ["the server is shutting down"]
        assert engine_processes(engine) == []
        assert list((tmp_path / "state" / "scratch" / "checks").iterdir()) == []
        with pytest.raises(Unavailable, match="shutting down"):
            await ask(app)
    assert {p: p.read_bytes() if p.is_file() else None for p in project.rglob("*")} == before


async def test_the_class_reference_is_dumped_once_and_looked_up(
    tmp_path: Path, fake_major: int
) -> None:
    left = {3: "margin_left", 4: "offset_left"}[fake_major]  # each engine's Control
    with anyio.fail_after(60):
        async with fake_server(tmp_path, major=fake_major) as c:
            found = await ok(c, "project.api", {"class": "Control", "member": left})
            assert found["member"]["defined_in"] == "Control"
            assert found["member"]["signature"] == f"{left}: float = 0.0"
            assert found["member"]["description"] == "Distance to the left edge."
            inherited = await ok(
                c, "project.api", {"class": "Control", "member": "get_child_count"}
            )
            assert inherited["member"]["defined_in"] == "Node"
            assert inherited["inherits"][:1] == ["Node"]
            typo = left.replace("left", "lft")
            missing = await call(c, "project.api", {"class": "Control", "member": typo})
            assert missing["outcome"] == "not_found"
            assert missing["close_names"] == [left]
            unknown = await call(c, "project.api", {"class": "Label"})
            assert unknown["outcome"] == "not_found" and "Label" in unknown["message"]
    (dump,) = [p for p in (tmp_path / "state" / "api").iterdir() if not p.name.startswith(".")]
    assert sorted(p.name for p in dump.rglob("*.xml")) == ["Control.xml", "Node.xml"]


async def test_a_never_imported_project_is_refused_then_imported(
    tmp_path: Path, fake_major: int
) -> None:
    project = make_project(tmp_path / "project")
    (project / "icon.png").write_bytes(fake_godot.png(4, 4, (1, 2, 3)))
    folder = {3: ".import", 4: ".godot/imported"}[fake_major]  # each engine's import folder
    with anyio.fail_after(60):
        async with fake_server(tmp_path, major=fake_major) as c:
            warned = await ok(c, "project.info")
            assert warned["warnings"] == [
                f"the project was never imported (it has no {folder.split('/')[0]}/ folder): "
                "a game of it is refused until it is"
            ]
            refused = await call(c, "runtime.session.start", {"mode": "headless"})
            assert refused == {
                "outcome": "unavailable",
                "message": f"the project was never imported (it has no {folder.split('/')[0]}/ "
                "folder), so its resources cannot load: import it with project_import first",
            }
            imported = await ok(c, "project.import")
            assert imported["imported"] == {"files": 1}
            assert "warnings" not in await ok(c, "project.info")
            started = await ok(c, "runtime.session.start", {"mode": "headless"})
            await ok(c, "runtime.session.stop", {"session_id": started["session"]["id"]})
    assert (project / "icon.png.import").read_text().count('source_file="res://icon.png"') == 1
    (record,) = (project / folder).glob("icon.png-*.md5")
    assert record.read_text().startswith('source_md5="')


async def test_a_link_out_is_refused_in_each_works_words_and_reloads_only_where_reached(
    tmp_path: Path, fake_major: int
) -> None:
    """One link out of the project: a check, an import, a test run and an export each refuse
    naming their own work; a reload refuses only a script that is or loads a link out."""
    project = make_project(tmp_path / "project")
    (project / "main.gd").write_text("extends Node2D\n")
    (project / "uses.gd").write_text('extends "res://mid.gd"\n')
    (project / "mid.gd").write_text('extends Node2D\nconst Level = preload("res://level.tscn")\n')
    (project / "level.tscn").write_text(
        '[gd_scene load_steps=2 format=2]\n\n[ext_resource path="res://linked.gd" '
        'type="Script" id=1]\n\n[node name="Level" type="Node"]\nscript = ExtResource( 1 )\n'
    )
    (project / "addons" / "gut").mkdir(parents=True)
    (tmp_path / "outside.gd").write_text("extends Node\n")
    (project / "linked.gd").symlink_to(tmp_path / "outside.gd")
    link = "res://linked.gd is a symbolic link to a place outside the project; "
    with anyio.fail_after(60):
        async with fake_server(tmp_path, major=fake_major) as c:
            for tool, args, reader in (
                ("project.check", {}, "checks"),
                ("project.import", {}, "imports"),
                ("project.test", {}, "test runs"),
                ("project.export", {"platform": "linux", "kind": "pack"}, "exports"),
            ):
                refused = await call(c, tool, args)
                assert refused == {
                    "outcome": "invalid_argument",
                    "message": f"{link}{reader} read the project only",
                }, tool
            sid = {"session_id": (await ok(c, "runtime.session.start"))["session"]["id"]}
            assert (await ok(c, "runtime.scripts.reload", sid))["reloaded"] == ["res://main.gd"]
            named = await ok(c, "runtime.scripts.reload", {**sid, "paths": ["res://main.gd"]})
            assert named["reloaded"] == ["res://main.gd"]
            refused = await call(
                c, "runtime.scripts.reload", {**sid, "paths": ["res://main.gd", "res://uses.gd"]}
            )
            assert refused == {
                "outcome": "invalid_argument",
                "message": "res://uses.gd loads res://linked.gd, which leads out of the project "
                "through a symbolic link; reloads read the project only, and the game keeps "
                "its old code",
            }
            await ok(c, "runtime.session.stop", sid)


async def test_a_project_file_reads_as_numbered_lines_that_fit_the_answer(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project")
    lines = [f"var line_{n} = {n}  # \x1b[31m" for n in range(1, 501)]
    raw = ("\n".join(lines) + "\n").encode()
    (project / "long.gd").write_bytes(raw)
    with anyio.fail_after(60):
        async with fake_server(tmp_path, max_output_bytes=4096) as c:
            first = await ok(c, "project.source", {"path": "res://long.gd"})
            assert first["total_lines"] == 500
            assert first["sha256"] == hashlib.sha256(raw).hexdigest()
            assert first["truncated"] is True and 10 < len(first["lines"]) < 200
            assert first["lines"][:2] == [
                {"line": 1, "text": "var line_1 = 1  # "},  # no escape reaches a client
                {"line": 2, "text": "var line_2 = 2  # "},
            ]
            tail = await ok(c, "project.source", {"path": "res://long.gd", "from_line": 499})
            assert [x["line"] for x in tail["lines"]] == [499, 500] and not tail["truncated"]
            past = await call(
                c, "project.source", {"path": "res://long.gd", "from_line": 1, "to_line": 401}
            )
            assert past["outcome"] == "invalid_argument"
            assert past["message"] == "at most 400 lines a call (from_line..to_line)"
            hidden = await call(c, "project.source", {"path": "res://export_presets.cfg"})
            assert hidden["outcome"] == "invalid_argument"


def test_every_shipped_tool_is_called_in_this_lane() -> None:
    from godot_mcp.app import shipped_tools

    source = Path(__file__).read_text()
    missing = [t.name for t in shipped_tools() if f'"{t.name}"' not in source]
    assert missing == []


async def test_no_store_call_runs_on_the_loop_in_captures_or_at_shutdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_major: int
) -> None:
    """Windowed captures, a recording, an export left running and a graceful shutdown with a
    game still running (and, over HTTP, the launch's release): every store call is made on
    a worker thread."""
    with store_calls_on_the_loop(monkeypatch) as seen, anyio.fail_after(60):
        async with fake_server(tmp_path, major=fake_major) as c:
            sid = (await ok(c, "runtime.session.start"))["session"]["id"]
            await ok(c, "runtime.screenshot.capture", {"session_id": sid, "preview_px": 32})
            args = {"session_id": sid, "frames": 2, "fps": 10, "preview_px": 64}
            await ok(c, "runtime.recording.capture", args)
            await ok(c, "runtime.log.capture", {"session_id": sid})
            await ok(c, "project.export", {"platform": "linux", "kind": "pack"})
        assert seen == [], "\n".join(dict.fromkeys(seen))
        settings = Settings(tmp_path / "state", None, None, Limits())
        async with open_app(settings, tmp_path / "project", "http") as app:
            assert app.deps.launch_id is not None
        assert seen == [], "\n".join(dict.fromkeys(seen))


async def test_a_games_values_reach_the_client_printable_and_without_private_paths(
    tmp_path: Path, fake_major: int
) -> None:
    """Whatever a game hands back as a value (a property read, written or waited for, a
    method's result) or as a refusal's text passes the game-text scrubber: no escape
    sequence, no control character but a value's own newlines and tabs, no private path."""
    state = tmp_path / "state"
    odd = f"{state}/saves\x1b]0;pwned\x07\x1b[2J\nline\ttab\x01\u202e"
    shown = "<state>/saves\nline\ttab"
    with anyio.fail_after(60):
        async with fake_server(tmp_path, major=fake_major) as c:
            sid = (await ok(c, "runtime.session.start"))["session"]["id"]
            player = {"session_id": sid, "path": "/root/Main/Player"}
            written = await ok(c, "runtime.node.set", {**player, "values": {"note": [odd]}})
            assert written["values"] == {"note": [shown]}
            read = await ok(c, "runtime.node.get", {**player, "properties": ["note"]})
            assert read["values"] == {"note": [shown]}
            called = await ok(c, "runtime.node.call", {**player, "method": "echo", "args": [odd]})
            assert called["result"] == shown
            keyed = await ok(
                c, "runtime.node.call", {**player, "method": "echo", "args": [{odd: odd}]}
            )
            assert keyed["result"] == {shown: shown}
            until = {"node": "/root/Main/Player", "property": "note", "equals": [shown]}
            waited = await ok(c, "runtime.wait", {"session_id": sid, "until": until})
            assert waited["value"] == [shown]
            # What is compared is what a client is shown: the raw value is never an oracle.
            until["equals"] = [odd]
            args = {"session_id": sid, "until": until, "timeout_seconds": 0.3}
            raw = await call(c, "runtime.wait", args)
            assert (raw["outcome"], raw["value"]) == ("timeout", [shown])
            refused = await call(c, "runtime.node.get", {**player, "properties": [odd]})
            message = "no property <state>/saves / line\ttab"  # a message is one line
            assert refused == {"outcome": "not_found", "message": message}
            await ok(c, "runtime.session.stop", {"session_id": sid})

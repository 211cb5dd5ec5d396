"""The line at every place (interface §13): a log entry's source, a debugger frame, a profile
row, a project.check problem and a project.test failure carry ``code``, the line's text as the
project's file is now, on a real Godot; the places a game forges get none, and cost nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from godot_mcp.engine.project.source import MAX_CODE
from tests.runtime.conftest import require_godot
from tests.runtime.test_captures import ok
from tests.runtime.test_project_test import gut_project
from tests.support.engines import Engine
from tests.support.rawstdio import raw_stdio
from tests.support.servers import stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]

PROJECT = 'config_version=4\n\n[application]\n\nconfig/name="places"\n'
SECRET = "SECRET-OUTSIDE-THE-PROJECT"
PRESETS = '[preset.0]\n\nname="Linux"\nkeystore/release_password="PRESET-PASSWORD"\n'

LOG_GD = """\
extends Node2D

func _ready():
\tprinterr("ERROR: forged presets\\n   At: res://export_presets.cfg:1.")
\tprinterr("ERROR: forged link\\n   At: res://out.gd:1.")
\tprinterr("ERROR: forged hidden\\n   At: res://.hidden.gd:1.")
\tprinterr("ERROR: forged far\\n   At: res://log.gd:999999999.")
\tprinterr("ERROR: forged zero\\n   At: res://log.gd:0.")
\tprinterr("ERROR: forged up\\n   At: res://../../etc/passwd:1.")
\tprinterr("ERROR: forged absolute\\n   At: /etc/passwd:1.")
\tprinterr("ERROR: forged missing\\n   At: res://missing.gd:1.")
\tprinterr("ERROR: forged real\\n   At: res://log.gd:3.")
\tcall_deferred("_boom")

func _boom():
\tvar nothing = null
\tnothing.explode()  # the last line
"""
BOOM_LINE = 17

DEBUG_GD = """\
extends Node2D

var frames = 0

func _ready():
\tvar total = add_up(2, 3)
\tprint("total ", total)

func add_up(a, b):
\tvar sum = a + b
\treturn sum

func _process(delta):
\tframes += 1
\tbusy()

func busy():
\tvar s = 0
\tfor i in range(2000):
\t\ts += i
\treturn s
"""


def project(root: Path, engine: Engine, files: dict[str, str]) -> Path:
    """A project of ``files`` (path: text) beside a file outside it, linked in as out.gd."""
    root.mkdir(parents=True)
    (root / "project.godot").write_text(engine.port(PROJECT))
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def private_free(answer: Any, *texts: str) -> None:
    sent = json.dumps(answer)
    for text in texts:
        assert text not in sent, text


async def test_a_log_source_carries_its_line_and_a_forged_one_none(
    tmp_path: Path, engine: Engine
) -> None:
    require_godot("godot3-server")
    outside = tmp_path / "secret.gd"
    outside.write_text(f"{SECRET}\n")
    files = {
        "log.gd": LOG_GD,
        "log.tscn": engine.scene("log.gd"),
        "export_presets.cfg": PRESETS,
        ".hidden.gd": "HIDDEN-LINE\n",
    }
    root = project(tmp_path / "p", engine, files)
    (root / "out.gd").symlink_to(outside)
    with anyio.fail_after(120):
        async with stdio_client(root, tmp_path / "state") as c:
            start = {"mode": "headless", "scene": "res://log.tscn"}
            sid = (await ok(c, "runtime.session.start", start))["session"]["id"]
            errors: list[dict[str, Any]] = []
            cursor: dict[str, str] = {}
            while not any("explode" in e["text"] for e in errors):
                page = await ok(
                    c,
                    "runtime.log.read",
                    {"session_id": sid, "min_level": "error", "wait_seconds": 5, **cursor},
                )
                errors += page["lines"]
                cursor = {"cursor": page["next_cursor"]}
            await ok(c, "runtime.session.stop", {"session_id": sid})
    places = {e["text"]: e.get("source") for e in errors if "forged" in e["text"]}
    assert places == {
        "ERROR: forged presets": {"path": "res://export_presets.cfg", "line": 1},
        "ERROR: forged link": {"path": "res://out.gd", "line": 1},
        "ERROR: forged hidden": {"path": "res://.hidden.gd", "line": 1},
        "ERROR: forged far": {"path": "res://log.gd", "line": 999999999},
        "ERROR: forged zero": {"path": "res://log.gd", "line": 0},
        "ERROR: forged up": None,
        "ERROR: forged absolute": None,
        "ERROR: forged missing": {"path": "res://missing.gd", "line": 1},
        "ERROR: forged real": {"path": "res://log.gd", "line": 3, "code": "func _ready():"},
    }
    (boom,) = [e for e in errors if "explode" in e["text"]]
    # The line as the file has it, trimmed of its tabs and spaces on both sides.
    assert boom["source"] == {
        "path": "res://log.gd",
        "line": BOOM_LINE,
        "code": "nothing.explode()  # the last line",
    }
    private_free(errors, SECRET, "PRESET-PASSWORD", "HIDDEN-LINE")


async def test_a_stop_s_frames_and_a_profile_s_rows_carry_their_lines(
    tmp_path: Path, engine: Engine
) -> None:
    require_godot("godot3-server")
    files = {"debug.gd": DEBUG_GD, "debug.tscn": engine.scene("debug.gd")}
    root = project(tmp_path / "p", engine, files)
    with anyio.fail_after(150):
        async with stdio_client(root, tmp_path / "state") as c:
            start = {
                "mode": "headless",
                "scene": "res://debug.tscn",
                "debug": True,
                "breakpoints": ["res://debug.gd:10"],
            }
            sid = {"session_id": (await ok(c, "runtime.session.start", start))["session"]["id"]}
            at = await ok(c, "runtime.debug.state", {**sid, "wait_seconds": 30})
            assert (at["state"], at["reason"]) == ("break", "breakpoint")
            assert at["stack"] == [
                {
                    "path": "res://debug.gd",
                    "line": 10,
                    "function": "add_up",
                    "code": "var sum = a + b",
                },
                {
                    "path": "res://debug.gd",
                    "line": 6,
                    "function": "_ready",
                    "code": "var total = add_up(2, 3)",
                },
            ]
            # The line as the file is now, not as the game loaded it.
            edited = DEBUG_GD.replace("\tvar sum = a + b\n", "\tvar sum = a + b  # edited\n")
            (root / "debug.gd").write_text(edited)
            again = await ok(c, "runtime.debug.state", sid)
            assert [f["code"] for f in again["stack"]] == [
                "var sum = a + b  # edited",
                "var total = add_up(2, 3)",
            ]
            (root / "debug.gd").write_text(DEBUG_GD)
            stepped = await ok(c, "runtime.debug.control", {**sid, "action": "next"})
            assert stepped["stack"][0] == {
                "path": "res://debug.gd",
                "line": 11,
                "function": "add_up",
                "code": "return sum",
            }
            await ok(c, "runtime.debug.breakpoints", {**sid, "clear": ["res://debug.gd:10"]})
            await ok(c, "runtime.debug.control", {**sid, "action": "continue"})
            measured = await ok(c, "runtime.profile.capture", {**sid, "seconds": 1})
            await ok(c, "runtime.session.stop", sid)
    (busy,) = [f for f in measured["functions"] if f["function"] == "busy"]
    # Godot 3 names a function's func line, Godot 4 its first body line.
    where = {3: (17, "func busy():"), 4: (18, "var s = 0")}[engine.major]
    assert (busy["path"], busy["line"], busy["code"]) == ("res://debug.gd", *where)
    assert all("code" in f for f in measured["functions"] if f["path"] == "res://debug.gd")


CHECKED = {
    "ok.gd": "extends Node\n\nfunc f():\n\treturn 1\n",
    # line 7: an identifier nobody declared
    "sub/undeclared.gd": (
        "extends Node\n\nfunc f():\n\treturn 1\n\nfunc g():\n\treturn   nobody + 1\n"
    ),
    # Godot 3 names the ext_resource line (3), Godot 4 the line that uses it (6)
    "bad.tscn": (
        '[gd_scene load_steps=2 format=2]\n\n[ext_resource path="res://missing.gd" '
        'type="Script" id=1]\n\n[node name="Bad" type="Node"]\nscript = ExtResource( 1 )\n'
    ),
}


async def test_a_check_problem_carries_its_line(tmp_path: Path, engine: Engine) -> None:
    require_godot("godot3-server", "bwrap")
    root = project(tmp_path / "p", engine, {k: engine.port(v) for k, v in CHECKED.items()})
    with anyio.fail_after(120):
        async with stdio_client(root, tmp_path / "state") as c:
            checked = await ok(c, "project.check", {})
    by_path = {e["path"]: e for e in checked["errors"]}
    undeclared = by_path["res://sub/undeclared.gd"]
    assert "nobody" in undeclared["message"]
    assert {k: undeclared[k] for k in ("kind", "line", "code")} == {
        "kind": "parse",
        "line": 7,
        "code": "return   nobody + 1",
    }
    bad = by_path["res://bad.tscn"]
    line, code = {
        3: (3, '[ext_resource path="res://missing.gd" type="Script" id=1]'),
        4: (6, 'script = ExtResource("1")'),
    }[engine.major]
    assert {k: bad[k] for k in ("kind", "line", "code")} == {
        "kind": "missing_dependency",
        "line": line,
        "code": code,
    }
    assert set(by_path) == {"res://sub/undeclared.gd", "res://bad.tscn"}


TESTED = """\
extends "res://addons/gut/test.gd"

func test_fails():
\tassert_eq(2 + 2, 5, 'two and two make five')

func test_names_its_place():
\tassert_true(false, 'see res://test/test_places.gd:7')

func test_names_a_place_up():
\tassert_true(false, 'see res://../../etc/passwd.gd:1')

func test_names_a_hidden_place():
\tassert_true(false, 'see res://.hidden.gd:1')
"""


async def test_a_test_failure_carries_its_line(tmp_path: Path, engine: Engine) -> None:
    require_godot("godot3-server", "bwrap")
    root = gut_project(tmp_path / "p", **{"test/test_places.gd": TESTED})
    (root / ".hidden.gd").write_text("HIDDEN-LINE\n")
    with anyio.fail_after(120):
        async with stdio_client(root, tmp_path / "state") as c:
            answer = await ok(c, "project.test", {})
    places = {
        f["test"]: {k: f[k] for k in ("path", "line", "code") if k in f} for f in answer["failures"]
    }
    # GUT 7 on Godot 3 names no line of its own; a message naming a place gives one.
    fails = {"line": 4, "code": "assert_eq(2 + 2, 5, 'two and two make five')"}
    assert places == {
        "test_fails": {"path": "res://test/test_places.gd", **(fails if engine.major == 4 else {})},
        "test_names_its_place": {
            "path": "res://test/test_places.gd",
            "line": 7,
            "code": "assert_true(false, 'see res://test/test_places.gd:7')",
        },
        "test_names_a_place_up": {"path": "res://../../etc/passwd.gd", "line": 1},
        "test_names_a_hidden_place": {"path": "res://.hidden.gd", "line": 1},
    }
    private_free(answer, "HIDDEN-LINE")


LONG = "# " + "x" * 248
MANY_GD = f"""\
extends Node2D
{LONG}

func _ready():
\tfor i in range(300):
\t\tprinterr("ERROR: e%d\\n   At: res://many.gd:2." % i)
"""


async def test_code_counts_in_the_answer_s_size(tmp_path: Path, engine: Engine) -> None:
    """Pages of the log whose every line carries 200 characters of code fit a small
    max_output_bytes as sent, and go on where they stopped: no line lost or said twice."""
    require_godot("godot3-server")
    files = {"many.gd": MANY_GD, "many.tscn": engine.scene("many.gd")}
    root = project(tmp_path / "p", engine, files)
    limit = 4096
    errors: list[dict[str, Any]] = []
    pages = 0
    with anyio.fail_after(180):
        async with raw_stdio(root, tmp_path / "state", "--max-output-bytes", str(limit)) as s:

            async def call(tool: str, args: dict[str, Any]) -> dict[str, Any]:
                line = await s.call(tool, args)
                assert len(line) <= limit, (tool, len(line))
                body = json.loads(line)["result"]["structuredContent"]
                assert body["outcome"] == "ok", body
                return dict(body)

            start = {"mode": "headless", "scene": "res://many.tscn"}
            sid = (await call("runtime_session_start", start))["session"]["id"]
            cursor: dict[str, str] = {}
            while len(errors) < 300:
                args = {"session_id": sid, "min_level": "error", "max_lines": 1000, **cursor}
                page = await call("runtime_log_read", {**args, "wait_seconds": 5})
                errors += page["lines"]
                pages += page["lines"] != []
                cursor = {"cursor": page["next_cursor"]}
            await call("runtime_session_stop", {"session_id": sid})
    assert [e["text"] for e in errors] == [f"ERROR: e{i}" for i in range(300)]
    code = "# " + "x" * (MAX_CODE - 2)
    assert all(e["source"] == {"path": "res://many.gd", "line": 2, "code": code} for e in errors)
    assert pages >= 300 * len(code) // limit  # the code took room: many pages

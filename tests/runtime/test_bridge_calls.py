"""node.call, node.set and node.get across the bridge: one round trip per call, writes that
must take, and JSON numbers that keep their kind (int or float) both ways, on both engines."""

from __future__ import annotations

import statistics
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from godot_mcp.features.game.bridge import keep_number_kinds, new_mark, parse_mark
from godot_mcp.features.game.log import GameLog
from tests.runtime.test_captures import ok
from tests.support import engines
from tests.support.engines import Engine
from tests.support.servers import stdio_client

PROJECT = """config_version=4

[application]

config/name="calls"
run/main_scene="res://calls.tscn"
"""

# Godot 3 and 4 alike, but for the lines marked ENGINE: each engine's own spelling below.
CALLS_GD = """extends Node2D

var mixed = [9, 2.5, "x"]
var table = {"n": 9, "f": 2.5, "s": "x", "deep": [1, 2.5]}
var whole = 1
var ratio = 0.5
var label = "hi"
var noisy = false
SETTERS

func echo(value):
	return value

func kinds_of(value):
	if typeof(value) == TYPE_ARRAY:
		var out = []
		for item in value:
			out.append(kinds_of(item))
		return out
	if typeof(value) == TYPE_DICTIONARY:
		var out = {}
		for key in value:
			out[str(key)] = kinds_of(value[key])
		return out
	if typeof(value) == TYPE_INT:
		return "int"
	if typeof(value) == FLOAT_TYPE:
		return "float"
	return "other"

func kinds(name):
	return kinds_of(get(name))

func boom():
	var nothing = null
	nothing.explode()

func forge():
	printerr("godot-mcp-mark " + "0".repeat(32))
	return 1

func forge_then_boom():
	printerr("godot-mcp-mark " + "f".repeat(32))
	var nothing = null
	nothing.explode()

func _process(_delta):
	if noisy:
		push_error("noise from _process")
"""

SETTERS3 = """var guarded = 1 setget _set_guarded
var clamped = 0 setget _set_clamped

func _set_guarded(_value):
	pass

func _set_clamped(value):
	clamped = 10 if value > 10 else value
"""
# Godot 4: the same setters, and typed containers (typed dictionaries are 4.4+).
SETTERS4 = """var guarded = 1:
	set(_value):
		pass
var clamped = 0:
	set(value):
		clamped = 10 if value > 10 else value
var scores: Dictionary[String, int] = {"a": 1}
var counts: Array[int] = [1]

func typed_scores():
	return [scores.is_typed(), scores.get_typed_key_builtin(), scores.get_typed_value_builtin()]
"""


def calls_script(engine: Engine) -> str:
    """calls.gd in the engine's own syntax (its setters on the line marked SETTERS)."""
    if engine.major == 3:
        text = CALLS_GD.replace("FLOAT_TYPE", "TYPE_REAL").replace("SETTERS", SETTERS3)
    else:
        text = CALLS_GD.replace("FLOAT_TYPE", "TYPE_FLOAT").replace("SETTERS", SETTERS4)
    return text


def explode_lines(engine: Engine) -> list[int]:
    """The lines of calls.gd that raise: in boom, then in forge_then_boom."""
    lines = calls_script(engine).splitlines()
    return [i + 1 for i, line in enumerate(lines) if line == "\tnothing.explode()"]


@pytest.fixture(scope="module")
def calls_project(tmp_path_factory: pytest.TempPathFactory, engine: Engine) -> Iterator[Path]:
    project = tmp_path_factory.mktemp(f"calls-{engine.name}") / "project"
    project.mkdir()
    (project / "project.godot").write_text(engine.port(PROJECT))
    (project / "calls.gd").write_text(calls_script(engine))
    (project / "calls.tscn").write_text(engine.scene("calls.gd"))
    yield project


@asynccontextmanager
async def game(project: Path, state: Path) -> AsyncIterator[tuple[object, str]]:
    async with stdio_client(project, state) as c:
        sid = (await ok(c, "runtime.session.start", {"mode": "headless"}))["session"]["id"]
        try:
            yield c, sid
        finally:
            await ok(c, "runtime.session.stop", {"session_id": sid})


def kind(value: object) -> str:
    """A JSON value's kind as Python's json read it: ints and floats apart."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, list):
        return str([kind(v) for v in value])
    if isinstance(value, dict):
        return str({k: kind(v) for k, v in sorted(value.items())})
    return type(value).__name__


async def call(c, sid: str, method: str, *args: object):
    return await c.call_tool(
        "runtime_node_call",
        {"session_id": sid, "path": "/root/Root", "method": method, "args": list(args)},
    )


async def get(c, sid: str, *names: str) -> dict:
    got = await ok(
        c, "runtime.node.get", {"session_id": sid, "path": "/root/Root", "properties": list(names)}
    )
    return got["values"]


async def set_values(c, sid: str, values: dict):
    return await c.call_tool(
        "runtime_node_set", {"session_id": sid, "path": "/root/Root", "values": values}
    )


@pytest.mark.anyio
@pytest.mark.godot
async def test_a_call_is_one_round_trip_and_names_its_own_script_error(
    calls_project: Path, tmp_path: Path, engine: Engine
):
    boom_at, forged_at = explode_lines(engine)
    with anyio.fail_after(120):
        async with game(calls_project, tmp_path / "state") as (c, sid):
            took = []
            for _ in range(7):
                t = time.perf_counter()
                r = await call(c, sid, "echo", 1)
                took.append(time.perf_counter() - t)
                assert r.structured_content == {"outcome": "ok", "result": 1}
            # Before, every call waited 300 ms for late error lines; now it is one round trip.
            assert statistics.median(took) < 0.15, took

            r = await call(c, sid, "boom")
            body = r.structured_content
            assert body["outcome"] == "failed", body
            assert body["message"].startswith("boom raised a script error: SCRIPT ERROR: "), body
            assert "explode" in body["message"], body
            assert body["message"].endswith(f"(res://calls.gd:{boom_at})"), body

            # A game printing marker lines moves no call's bounds, and its lines stay its own.
            r = await call(c, sid, "forge")
            assert r.structured_content == {"outcome": "ok", "result": 1}
            r = await call(c, sid, "forge_then_boom")
            body = r.structured_content
            assert body["outcome"] == "failed", body
            assert body["message"].endswith(f"(res://calls.gd:{forged_at})"), body

            # Errors the game raises outside a call are not the call's.
            r = await set_values(c, sid, {"noisy": True})
            assert r.structured_content["outcome"] == "ok", r.structured_content
            await ok(c, "runtime.wait", {"session_id": sid, "until": {"log": "noise from"}})
            for _ in range(5):
                r = await call(c, sid, "echo", "quiet")
                assert r.structured_content == {"outcome": "ok", "result": "quiet"}
            r = await set_values(c, sid, {"noisy": False})
            assert r.structured_content["outcome"] == "ok", r.structured_content

            page = await ok(c, "runtime.log.read", {"session_id": sid, "max_lines": 1000})
            texts = [line["text"] for line in page["lines"]]
            marks = [t for t in texts if t.startswith("godot-mcp-mark")]
            assert marks == ["godot-mcp-mark " + "0" * 32, "godot-mcp-mark " + "f" * 32], marks
            errors = [line for line in page["lines"] if line["level"] == "error"]
            assert any("explode" in e["text"] for e in errors), errors


@pytest.mark.anyio
@pytest.mark.godot
@pytest.mark.usefixtures("engine")
async def test_json_numbers_keep_their_kind_through_get_set_and_call(
    calls_project: Path, tmp_path: Path
):
    with anyio.fail_after(120):
        async with game(calls_project, tmp_path / "state") as (c, sid):
            values = await get(c, sid, "mixed", "table", "whole", "ratio")
            assert values["mixed"] == [9, 2.5, "x"]
            assert kind(values["mixed"]) == kind([9, 2.5, "x"])
            assert kind(values["table"]) == kind({"n": 9, "f": 2.5, "s": "", "deep": [1, 2.5]})
            assert kind(values["whole"]) == "int" and kind(values["ratio"]) == "float"

            big, low = 2**60 + 1, -(2**63)
            sent = [7, 1.0, 2.5, "y", {"k": 3, "big": big, "low": low, "f": -4.0}, [0, 0.0]]
            r = await set_values(c, sid, {"mixed": sent, "table": {"n": 10, "f": 3.0}})
            back = r.structured_content
            assert back["outcome"] == "ok", back
            assert back["values"]["mixed"] == sent
            assert kind(back["values"]["mixed"]) == kind(sent)
            assert kind(back["values"]["table"]) == kind({"n": 10, "f": 3.0})
            again = await get(c, sid, "mixed", "table")
            assert again["mixed"] == sent and kind(again["mixed"]) == kind(sent)
            # The game's own values have the kinds sent, not only their JSON.
            r = await call(c, sid, "kinds", "mixed")
            assert r.structured_content["result"] == [
                "int",
                "float",
                "float",
                "other",
                {"k": "int", "big": "int", "low": "int", "f": "float"},
                ["int", "float"],
            ]

            # Arguments and results of calls too.
            args = [9, 2.5, 1.0, {"n": 4, "big": big}, [-3, -3.0]]
            r = await call(c, sid, "echo", args)
            assert r.structured_content["result"] == args
            assert kind(r.structured_content["result"]) == kind(args)
            r = await call(c, sid, "kinds_of", args)
            assert r.structured_content["result"] == [
                "int",
                "float",
                "float",
                {"n": "int", "big": "int"},
                ["int", "float"],
            ]

            # A number given to a typed property takes that property's kind.
            r = await set_values(c, sid, {"whole": 3.0, "ratio": 2})
            assert r.structured_content["outcome"] == "ok", r.structured_content
            values = r.structured_content["values"]
            assert values == {"whole": 3, "ratio": 2.0}
            assert kind(values["whole"]) == "int" and kind(values["ratio"]) == "float"

            r = await set_values(c, sid, {"whole": {"type": "int", "value": "12x"}})
            assert r.structured_content["outcome"] == "invalid_argument", r.structured_content
            r = await set_values(c, sid, {"whole": {"type": "int", "value": str(2**63)}})
            assert r.structured_content["outcome"] == "invalid_argument", r.structured_content
            assert "64 bits" in r.structured_content["message"]


@pytest.mark.anyio
@pytest.mark.godot
@pytest.mark.usefixtures("engine")
async def test_a_write_that_does_not_take_is_refused(calls_project: Path, tmp_path: Path):
    with anyio.fail_after(120):
        async with game(calls_project, tmp_path / "state") as (c, sid):
            r = await set_values(c, sid, {"guarded": 5})
            body = r.structured_content
            assert body == {
                "outcome": "invalid_argument",
                "message": "guarded did not take 5: it reads back 1",
            }, body
            r = await set_values(c, sid, {"clamped": 50})
            body = r.structured_content
            assert body["outcome"] == "invalid_argument", body
            assert body["message"] == "clamped did not take 50: it reads back 10", body
            r = await set_values(c, sid, {"clamped": 7})
            assert r.structured_content == {"outcome": "ok", "values": {"clamped": 7}}

            r = await set_values(c, sid, {"label": "changed", "guarded": 2})
            body = r.structured_content
            assert body["outcome"] == "invalid_argument", body
            assert body["message"].endswith("(the other values were set)"), body
            assert (await get(c, sid, "label")) == {"label": "changed"}

            if engines.current().major < 4:
                return
            # Godot 4.4+: typed dictionaries convert as typed arrays do, or are refused.
            r = await set_values(c, sid, {"scores": {"b": 2, "c": 3.0}, "counts": [4, 5.0]})
            body = r.structured_content
            assert body == {
                "outcome": "ok",
                "values": {"scores": {"b": 2, "c": 3}, "counts": [4, 5]},
            }, body
            assert kind(body["values"]["scores"]) == kind({"b": 2, "c": 3})
            assert (await get(c, sid, "scores", "counts")) == body["values"]
            r = await call(c, sid, "typed_scores")
            assert r.structured_content["result"] == [True, 4, 2]  # String keys, int values
            r = await set_values(c, sid, {"scores": {"d": "four"}})
            body = r.structured_content
            assert body["outcome"] == "invalid_argument", body
            assert body["message"] == 'value for scores: the value of "d" is String, not int'
            r = await set_values(c, sid, {"scores": {"d": 4.5}})
            assert r.structured_content["outcome"] == "invalid_argument"
            assert (await get(c, sid, "scores")) == {"scores": {"b": 2, "c": 3}}


# -- the server's half, without a game -----------------------------------------------------


def test_numbers_are_tagged_only_where_godots_parser_would_lose_their_kind() -> None:
    assert keep_number_kinds([9, 2.5, "x", True, None]) == [9, 2.5, "x", True, None]
    assert keep_number_kinds({"a": 1.0, "b": [2**53, 2**53 + 1, -(2**60)]}) == {
        "a": {"type": "float", "value": 1.0},
        "b": [
            2**53,
            {"type": "int", "value": str(2**53 + 1)},
            {"type": "int", "value": str(-(2**60))},
        ],
    }
    assert keep_number_kinds(float("nan")) == {"type": "float", "value": "nan"}
    assert keep_number_kinds(-float("inf")) == {"type": "float", "value": "-inf"}
    assert keep_number_kinds({"type": "Vector2", "x": 1.0, "y": 0.5}) == {
        "type": "Vector2",
        "x": {"type": "float", "value": 1.0},
        "y": 0.5,
    }
    tagged = {"type": "float", "value": 3.0}
    assert keep_number_kinds(tagged) == tagged  # tagged already: left as it is


def test_marker_lines_of_issued_marks_stay_out_of_the_log() -> None:
    issued = new_mark()
    assert len(issued) == 32 and parse_mark(f"godot-mcp-mark {issued}") == issued
    assert parse_mark(f"godot-mcp-mark {issued} ") is None
    assert parse_mark("godot-mcp-mark xyz") is None
    seen: list[tuple[str, int]] = []

    def take(stream: str, text: str, seq: int) -> bool:
        if stream == "stderr" and parse_mark(text) == issued:
            seen.append((text, seq))
            return True
        return False

    log = GameLog(take=take)
    log.feed("stderr", b"SCRIPT ERROR: x\n")
    log.feed("stderr", f"godot-mcp-mark {issued}\n".encode())
    log.feed("stderr", b"   At: res://a.gd:3.\n")  # still folds into the error before it
    log.feed("stderr", f"godot-mcp-mark {'0' * 32}\n".encode())
    texts = [(e.text, e.source) for e in log.read(None, 10).entries]
    assert texts == [("SCRIPT ERROR: x", ("res://a.gd", 3)), ("godot-mcp-mark " + "0" * 32, None)]
    assert seen == [(f"godot-mcp-mark {issued}", 1)]

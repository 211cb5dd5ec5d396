"""runtime.node.inspect through the fake engine (Godot 3 and 4): the answer as the bridge gives
it, and what a hostile game could answer instead: lists far past 200, texts and values too large
for an answer, a number where a name goes. Every answer is bounded and typed."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from godot_mcp.mcp.budget import Budget
from godot_mcp.mcp.outcomes import tool_result
from tests.runtime.test_fake_engine import call, fake_server, ok

pytestmark = pytest.mark.anyio


def sent_size(body: dict, limit: int) -> int:
    """The bytes ``body`` takes as sent over stdio (its text mirror and envelope included)."""
    return Budget(limit).wire_size(tool_result(body))


async def test_a_node_is_inspected_in_one_round_trip(tmp_path: Path, fake_major: int) -> None:
    with anyio.fail_after(60):
        async with fake_server(tmp_path, major=fake_major) as c:
            sid = (await ok(c, "runtime.session.start"))["session"]["id"]
            main = await ok(c, "runtime.node.inspect", {"session_id": sid, "path": "/root/Main"})
            assert main == {
                "outcome": "ok",
                "class": "Node2D",
                "script": {"path": "res://main.gd", "extends": "Node2D"},
                "methods": [{"name": "_ready", "args": [], "path": "res://main.gd", "line": 3}],
                "signals": [{"name": "hit", "connections": []}],
                "connected_in": [],
                "groups": ["players"],
                "properties": [
                    {"name": "visible", "type": "Variant", "exported": False, "value": True},
                    {
                        "name": "position",
                        "type": "Variant",
                        "exported": False,
                        "value": {"type": "Vector2", "x": 0, "y": 0},
                    },
                    {
                        "name": "aim",
                        "type": "Variant",
                        "exported": False,
                        "value": {
                            "type": "Transform" if fake_major == 3 else "Transform3D",
                            "basis": {
                                "type": "Basis",
                                "x": [1, 0, 0],
                                "y": [0, 1, 0],
                                "z": [0, 0, 1],
                            },
                            "origin": [0, 0, 2],
                        },
                    },
                ],
                "truncated": [],
            }
            groups = {"session_id": sid, "path": "/root/Main/Player", "include": ["groups"]}
            assert await ok(c, "runtime.node.inspect", groups) == {
                "outcome": "ok",
                "class": "Sprite" if fake_major == 3 else "Sprite2D",
                "groups": [],
                "truncated": [],
            }
            missing = await call(c, "runtime.node.inspect", {"session_id": sid, "path": "/root/X"})
            assert missing == {"outcome": "not_found", "message": "no node at /root/X"}


@pytest.mark.parametrize("limit", [9_000, 512 * 1024])
async def test_a_forged_inspection_is_bounded_and_typed(
    tmp_path: Path, fake_major: int, limit: int
) -> None:
    """5,000 items a list, a signal with 300 connections and a 300,000-character value: each
    list cut to 200 (or what fits) and named in ``truncated``, the value a marker of its size;
    a name that is not a string is a typed failure naming the field."""
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "project.godot").write_text("config_version=4\n")
    (tmp_path / "project" / "forged.tscn").write_text("[gd_scene format=2]\n")
    with anyio.fail_after(60):
        async with fake_server(tmp_path, major=fake_major, max_output_bytes=limit) as c:
            start = {"scene": "res://forged.tscn", "mode": "headless"}
            sid = (await ok(c, "runtime.session.start", start))["session"]["id"]
            huge = await ok(c, "runtime.node.inspect", {"session_id": sid, "path": "/root/Huge"})
            assert sent_size(huge, limit) <= limit
            every = ["methods", "signals", "connected_in", "groups", "properties"]
            assert huge["truncated"] == every
            assert huge["groups"] == [f"g{i:04d}" for i in range(len(huge["groups"]))]
            assert huge["methods"] == [
                {"name": f"m{i}", "args": ["a"], "path": "res://huge.gd", "line": i + 1}
                for i in range(len(huge["methods"]))
            ]
            if limit > 9_000:
                assert [len(huge[k]) for k in every] == [200, 1, 200, 200, 200]
                (signal,) = huge["signals"]
                assert len(signal["connections"]) == 200
                big = json.dumps("é" * 300_000, ensure_ascii=False).encode()
                assert huge["properties"][0] == {
                    "name": "big",
                    "type": "String",
                    "exported": False,
                    "value": {"type": "truncated", "bytes": len(big)},
                }
                assert huge["properties"][199]["name"] == "p198"
            else:
                assert huge["properties"] == [] and 0 < len(huge["groups"]) <= 200

            odd = await call(c, "runtime.node.inspect", {"session_id": sid, "path": "/root/Odd"})
            assert odd == {
                "outcome": "failed",
                "message": "the game's answer to inspect is malformed: "
                "methods.name is not a string",
            }
            assert (await ok(c, "runtime.session.list"))["sessions"][0]["state"] == "running"

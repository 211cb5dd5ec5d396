"""The scene tree's filters and collapsed runs (§13) without an engine: the arguments refused
before anything reaches the game, the filters passed on to it, and a listing read back
against itself (a game may forge it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from godot_mcp.errors import Malformed
from godot_mcp.features.game.protocol import Tree
from tests.runtime.test_fake_engine import SPRITE, call, fake_server, ok

pytestmark = pytest.mark.anyio

RUN = {"path": "/root/A1", "class": "Sprite", "count": 4, "last": "/root/A4"}
NODE = {"path": "/root", "name": "root", "class": "Viewport", "children": 4}


def test_a_run_is_read_with_its_count_and_last_sibling() -> None:
    reply = {"nodes": [NODE, RUN], "total": 5, "truncated": False, "current_scene": None}
    assert Tree.parse(reply, max_nodes=2) == Tree([NODE, RUN], 5, False, None)
    scripted = {**RUN, "script": "res://a.gd"}
    cut = {"nodes": [scripted], "total": 90, "truncated": True, "current_scene": "/root/A"}
    assert Tree.parse(cut, max_nodes=1).nodes == [scripted]


PREFIX = "the game's answer to tree is malformed: "


@pytest.mark.parametrize(
    ("nodes", "total", "truncated", "message"),
    [
        ([NODE, NODE, NODE], 3, False, "nodes holds more than max_nodes (2) entries"),
        ([{**RUN, "count": 3}], 3, False, "count is under 4"),
        ([{**RUN, "count": True}], 4, False, "count is not an integer"),
        ([{**RUN, "count": -5}], 4, False, "count is negative"),
        ([{k: v for k, v in RUN.items() if k != "last"}], 4, False, "last is missing"),
        ([{**RUN, "last": None}], 4, False, "last is not a string"),
        ([{**RUN, "path": 7}], 4, False, "path is not a string"),
        ([RUN], 7, False, "total is 7 but the entries count 4 nodes"),
        ([RUN, NODE], 3, True, "total is 3 but the entries count 5 nodes"),
    ],
)
def test_a_forged_listing_is_refused(
    nodes: list[Any], total: int, truncated: bool, message: str
) -> None:
    reply = {"nodes": nodes, "total": total, "truncated": truncated, "current_scene": None}
    with pytest.raises(Malformed) as refused:
        Tree.parse(reply, max_nodes=2)
    assert refused.value.message == PREFIX + message


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"name": "Main/Player"}, "name is a glob on a node's name, which never holds '/' "),
        ({"name": "a.b"}, "name is a glob on a node's name, which never holds '.' "),
        ({"name": ""}, "name must not be empty"),
        ({"name": "x" * 201}, "name is longer than 200 characters"),
        ({"name": "a\x01"}, "name must not hold control characters"),
        ({"name": "*a*b*c*d*"}, "name may hold at most 4 '*'"),
        ({"class": "Node 2D"}, "class must be a class name (letters, digits and _)"),
        ({"class": "2D"}, "class must be a class name (letters, digits and _)"),
        ({"group": "\n"}, "group must not hold control characters"),
        ({"group": "g" * 201}, "group is longer than 200 characters"),
        ({"script": "player.gd"}, "script must be a plain res:// path, e.g. res://player.gd"),
        ({"script": "res://../x.gd"}, "script must be a plain res:// path, e.g. res://player.gd"),
        ({"script": "res://a//b.gd"}, "script must be a plain res:// path, e.g. res://player.gd"),
        ({"script": "user://x.gd"}, "script must be a plain res:// path, e.g. res://player.gd"),
        ({"script": "res://"}, "script must name a file, e.g. res://player.gd"),
        ({"script": "res://" + "a" * 1100}, "script is longer than 1024 characters"),
        ({"collapse": "yes"}, "collapse must be true or false"),
    ],
)
async def test_filter_arguments_that_make_no_sense_are_refused(
    tmp_path: Path, args: dict[str, Any], message: str
) -> None:
    with anyio.fail_after(60):
        async with fake_server(tmp_path) as c:
            refused = await call(c, "runtime.scene.tree", {"session_id": "A" * 22, **args})
    assert refused["outcome"] == "invalid_argument"
    assert refused["message"].startswith(message), refused


async def test_the_filters_reach_the_game(tmp_path: Path, fake_major: int) -> None:
    with anyio.fail_after(60):
        async with fake_server(tmp_path, major=fake_major) as c:
            sid = (await ok(c, "runtime.session.start", {"mode": "headless"}))["session"]["id"]
            player = {
                "path": "/root/Main/Player",
                "name": "Player",
                "class": SPRITE[fake_major],
                "children": 0,
            }
            named = await ok(c, "runtime.scene.tree", {"session_id": sid, "name": "Pl?y*"})
            assert (named["nodes"], named["total"]) == ([player], 1)
            stars = {"session_id": sid, "name": "**P***a*y*****"}  # runs of stars are one
            assert (await ok(c, "runtime.scene.tree", stars))["nodes"] == [player]
            scripted = await ok(
                c, "runtime.scene.tree", {"session_id": sid, "script": "res://main.gd"}
            )
            assert [n["path"] for n in scripted["nodes"]] == ["/root/Main"]
            kind = {"session_id": sid, "class": SPRITE[fake_major], "collapse": False}
            assert (await ok(c, "runtime.scene.tree", kind))["nodes"] == [player]
            nobody = await ok(c, "runtime.scene.tree", {"session_id": sid, "group": "nobody"})
            assert (nobody["nodes"], nobody["total"], nobody["truncated"]) == ([], 0, False)

"""§13's scene tree an agent can read, on a real game: runs of alike siblings collapsed,
filters by name, class (subclasses and class_name), group and script, totals that still count
nodes, the default answer's size as sent, and a game that forges its listing."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.runtime.test_captures import ok
from tests.support.engines import Engine
from tests.support.interceptor import interceptor
from tests.support.rawstdio import RawStdio, raw_stdio
from tests.support.servers import ServedProject, serve_project

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]

BLADES = 142
DEFAULT_LIMIT = 16 * 1024  # §13: the default answer on a demo project, as sent

MAIN = """extends Node2D

func _ready():
	$Row/Sign.add_to_group("signs")
"""
ENEMY = "extends Node2D\nclass_name Enemy\n"
BOSS = """extends "res://enemy.gd"

func _ready():
	add_to_group("foes")
"""
GLOBAL_CLASSES3 = """
_global_script_classes=[ {
"base": "Node2D",
"class": "Enemy",
"language": "GDScript",
"path": "res://enemy.gd"
} ]
_global_script_class_icons={
"Enemy": ""
}
"""


def _node(name: str, kind: str, parent: str, extra: str = "") -> str:
    where = f' parent="{parent}"' if parent else ""
    return f'[node name="{name}" type="{kind}"{where}{extra}]\n'


def main_scene() -> str:
    """Main: 142 blades of grass; a row of 3 sprites, a label and 5 sprites; four enemies
    (a class_name script, in a group set in the scene), a boss (a script extending theirs,
    its group added in code) and a plain node; a crowd of 5 sprites, the last with a hat."""
    out = [
        "[gd_scene load_steps=4 format=2]\n\n",
        '[ext_resource path="res://main.gd" type="Script" id=1]\n',
        '[ext_resource path="res://enemy.gd" type="Script" id=2]\n',
        '[ext_resource path="res://boss.gd" type="Script" id=3]\n\n',
        '[node name="Main" type="Node2D"]\nscript = ExtResource( 1 )\n\n',
        _node("Grass", "Node2D", "."),
    ]
    out += [_node(f"Blade{i}", "Sprite", "Grass") for i in range(1, BLADES + 1)]
    out.append(_node("Row", "Node2D", "."))
    out += [_node(f"A{i}", "Sprite", "Row") for i in (1, 2, 3)]
    out.append(_node("Sign", "Label", "Row"))
    out += [_node(f"B{i}", "Sprite", "Row") for i in range(1, 6)]
    out.append(_node("Enemies", "Node2D", "."))
    for i in range(1, 5):
        out.append(_node(f"E{i}", "Node2D", "Enemies", ' groups=[ "foes" ]'))
        out.append("script = ExtResource( 2 )\n")
    out.append(_node("Boss", "Node2D", "Enemies") + "script = ExtResource( 3 )\n")
    out.append(_node("Plain", "Node2D", "Enemies"))
    out.append(_node("Crowd", "Node2D", "."))
    out += [_node(f"C{i}", "Sprite", "Crowd") for i in range(1, 6)]
    out.append(_node("Hat", "Sprite", "Crowd/C5"))
    return "\n".join(out)


# A node that answers the bridge's tree commands asking for a group "forged-…" itself, with
# listings the bridge never sends, and hands every other command on to the bridge
# (tests/support/interceptor.py).
FORGED = 'typeof(cmd) == TYPE_DICTIONARY and str(cmd.get("group", "")).begins_with("forged")'
ANSWER = 'tree.call("_send", _forged(cmd))'
FORGER_HEAD4 = interceptor(4, FORGED, ANSWER)
FORGER_HEAD3 = interceptor(3, FORGED, ANSWER)
FORGER_TAIL = """
func _forged(cmd):
	var kind = str(cmd.get("group"))
	var nodes = []
	var total = 0
	var long_path = "/root/" + "x".repeat(5000)
	if kind == "forged-many":
		for i in range(int(cmd.get("max_nodes")) + 1):
			nodes.append({"path": "/root/N", "name": "N", "class": "Node", "children": 0})
		total = nodes.size()
	elif kind == "forged-run":
		nodes = [{"path": "/root/A", "class": "Node", "count": 2, "last": "/root/B"}]
		total = 2
	elif kind == "forged-total":
		nodes = [{"path": "/root/A", "class": "Node", "count": 40, "last": "/root/B"}]
		total = 7
	elif kind == "forged-huge":
		for i in range(int(cmd.get("max_nodes"))):
			nodes.append({"path": long_path, "class": "Node", "count": 1000000, "last": long_path})
		total = nodes.size() * 1000000
	return {"id": int(cmd.get("id")), "ok": true, "nodes": nodes, "total": total,
		"truncated": false, "current_scene": "/root/Forger"}
"""
# String.repeat is Godot 4's; Godot 3 builds the path by hand.
FORGER_TAIL3 = FORGER_TAIL.replace(
    'var long_path = "/root/" + "x".repeat(5000)',
    'var long_path = "/root/"\n\tfor i in range(5000):\n\t\tlong_path += "x"',
)


@pytest.fixture(scope="module")
def tree_project(tmp_path_factory: pytest.TempPathFactory, engine: Engine) -> Path:
    base = tmp_path_factory.mktemp(f"readable-tree-{engine.name}")
    project = base / "project"
    project.mkdir()
    settings = 'config_version=4\n\n[application]\n\nconfig/name="tree"\n'
    settings += 'run/main_scene="res://main.tscn"\n'
    if engine.major == 3:  # Godot 3 knows a script's class_name from this list only
        settings = settings.replace("config_version=4\n", "config_version=4\n" + GLOBAL_CLASSES3)
    (project / "project.godot").write_text(engine.port(settings))
    (project / "main.gd").write_text(MAIN)
    (project / "enemy.gd").write_text(ENEMY)
    (project / "boss.gd").write_text(BOSS)
    (project / "main.tscn").write_text(engine.port(main_scene()))
    head, tail = (FORGER_HEAD3, FORGER_TAIL3) if engine.major == 3 else (FORGER_HEAD4, FORGER_TAIL)
    (project / "forger.gd").write_text(head + tail)
    (project / "forger.tscn").write_text(
        engine.scene("forger.gd", "Node").replace("Root", "Forger")
    )
    if engine.major == 4:  # a class_name script needs the global class cache of .godot/
        xdg = {
            k: str(base / k.lower()) for k in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME")
        }
        argv = [*engine.headless_argv(), "--path", str(project), "--import"]
        subprocess.run(argv, env={**os.environ, **xdg}, timeout=180, capture_output=True)
        assert (project / ".godot" / "global_script_class_cache.cfg").is_file()
    return project


@pytest.fixture(scope="module")
def tree_env(
    tree_project: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServedProject]:
    served = serve_project(tree_project, tmp_path_factory.mktemp("tree-state"))
    yield served
    served.http.stop()


@asynccontextmanager
async def game(
    tree_project: Path, tmp_path: Path, scene: str = "res://main.tscn"
) -> AsyncIterator[tuple[RawStdio, str]]:
    """A headless game of the fixture over raw stdio (answers as sent), and its session id."""
    async with raw_stdio(tree_project, tmp_path / "state") as session:
        start = {"mode": "headless", "scene": scene}
        started = json.loads(await session.call("runtime_session_start", start))
        sid = started["result"]["structuredContent"]["session"]["id"]
        try:
            yield session, sid
        finally:
            await session.call("runtime_session_stop", {"session_id": sid})


async def tree(session: RawStdio, sid: str, **args: Any) -> tuple[int, dict[str, Any]]:
    """The scene tree's answer and its size as sent."""
    line = await session.call("runtime_scene_tree", {"session_id": sid, **args})
    return len(line), json.loads(line)["result"]["structuredContent"]


def leaf(path: str, kind: str, children: int = 0, script: str | None = None) -> dict[str, Any]:
    node = {"path": path, "name": path.rsplit("/", 1)[-1], "class": kind, "children": children}
    return node | ({"script": script} if script else {})


def run(first: str, kind: str, count: int, last: str, script: str | None = None) -> dict:
    out: dict[str, Any] = {"path": first, "class": kind}
    if script:
        out["script"] = script
    return out | {"count": count, "last": last}


def listing(nodes: list[dict[str, Any]]) -> int:
    return sum(n.get("count", 1) for n in nodes)


M = "/root/Main"


def expected_default(engine: Engine) -> list[dict[str, Any]]:
    sprite = "Sprite" if engine.major == 3 else "Sprite2D"
    root = "Viewport" if engine.major == 3 else "Window"
    return [
        leaf("/root", root, 1),
        leaf(M, "Node2D", 4, "res://main.gd"),
        leaf(f"{M}/Grass", "Node2D", BLADES),
        run(f"{M}/Grass/Blade1", sprite, BLADES, f"{M}/Grass/Blade{BLADES}"),
        leaf(f"{M}/Row", "Node2D", 9),
        leaf(f"{M}/Row/A1", sprite),
        leaf(f"{M}/Row/A2", sprite),
        leaf(f"{M}/Row/A3", sprite),  # three alike: not a run
        leaf(f"{M}/Row/Sign", "Label"),
        run(f"{M}/Row/B1", sprite, 5, f"{M}/Row/B5"),
        leaf(f"{M}/Enemies", "Node2D", 6),
        run(f"{M}/Enemies/E1", "Node2D", 4, f"{M}/Enemies/E4", "res://enemy.gd"),
        leaf(f"{M}/Enemies/Boss", "Node2D", 0, "res://boss.gd"),
        leaf(f"{M}/Enemies/Plain", "Node2D"),
        leaf(f"{M}/Crowd", "Node2D", 5),
        run(f"{M}/Crowd/C1", sprite, 4, f"{M}/Crowd/C4"),
        leaf(f"{M}/Crowd/C5", sprite, 1),  # its hat is listed: not in the run
        leaf(f"{M}/Crowd/C5/Hat", sprite),
    ]


async def test_the_default_listing_collapses_runs_and_still_counts_every_node(
    tree_project: Path, tmp_path: Path, engine: Engine
):
    with anyio.fail_after(120):
        async with game(tree_project, tmp_path) as (session, sid):
            sent, body = await tree(session, sid)
            want = expected_default(engine)
            assert body == {
                "outcome": "ok",
                "nodes": want,
                "total": 169,
                "truncated": False,
                "current_scene": M,
            }
            assert listing(want) == 169
            assert sent <= DEFAULT_LIMIT, sent

            # Uncollapsed: every node, as §5 listed them (over 16 KB: max_nodes named).
            sent, whole = await tree(session, sid, collapse=False, max_nodes=300)
            assert len(whole["nodes"]) == whole["total"] == 169 and sent > DEFAULT_LIMIT
            assert whole["truncated"] is False
            # Without max_nodes, the same listing is cut to 16 KB as sent, and says so.
            sent, cut = await tree(session, sid, collapse=False)
            assert sent <= DEFAULT_LIMIT and cut["truncated"] is True and cut["total"] == 169
            assert cut["nodes"] == whole["nodes"][: len(cut["nodes"])]
            assert len(cut["nodes"]) > 40
            assert all("count" not in n for n in whole["nodes"])
            assert [n["path"] for n in whole["nodes"][3:6]] == [
                f"{M}/Grass/Blade1",
                f"{M}/Grass/Blade2",
                f"{M}/Grass/Blade3",
            ]

            # max_nodes counts entries: a run is one.
            _, four = await tree(session, sid, max_nodes=4)
            assert (four["nodes"], four["total"], four["truncated"]) == (want[:4], 169, True)

            # At the depth limit a node's children are not listed: the crowd is one run of 5.
            _, crowd = await tree(session, sid, root=f"{M}/Crowd", depth=1)
            sprite = want[3]["class"]
            assert crowd["nodes"] == [
                leaf(f"{M}/Crowd", "Node2D", 5),
                run(f"{M}/Crowd/C1", sprite, 5, f"{M}/Crowd/C5"),
            ]
            assert crowd["total"] == 6


async def test_filters_list_the_matches_and_total_counts_them(
    tree_project: Path, tmp_path: Path, engine: Engine
):
    sprite = "Sprite" if engine.major == 3 else "Sprite2D"
    enemies = [
        run(f"{M}/Enemies/E1", "Node2D", 4, f"{M}/Enemies/E4", "res://enemy.gd"),
        leaf(f"{M}/Enemies/Boss", "Node2D", 0, "res://boss.gd"),
    ]
    with anyio.fail_after(180):
        async with game(tree_project, tmp_path) as (session, sid):

            async def matches(**args: Any) -> tuple[list[dict[str, Any]], int]:
                _, body = await tree(session, sid, **args)
                assert body["outcome"] == "ok", body
                assert body["truncated"] is False
                assert listing(body["nodes"]) == body["total"]
                return body["nodes"], body["total"]

            # A glob: 1, 10-19 and 100-142 are one run once filtered, Blade1 to Blade142.
            assert await matches(name="Blade1*") == (
                [run(f"{M}/Grass/Blade1", sprite, 54, f"{M}/Grass/Blade142")],
                54,
            )
            names, total = await matches(name="Blade1*", collapse=False)
            assert total == 54 and [n["name"] for n in names[:3]] == [
                "Blade1",
                "Blade10",
                "Blade11",
            ]
            assert await matches(name="?1") == (
                [
                    leaf(f"{M}/Row/A1", sprite),
                    leaf(f"{M}/Row/B1", sprite),
                    leaf(f"{M}/Enemies/E1", "Node2D", 0, "res://enemy.gd"),
                    leaf(f"{M}/Crowd/C1", sprite),
                ],
                4,
            )
            # A class matches its subclasses: every Node2D but the label and the root. The
            # label filtered out, A1-A3 and B1-B5 are one run of 8.
            node2d = expected_default(engine)[1:]
            del node2d[4:9]
            node2d.insert(4, run(f"{M}/Row/A1", sprite, 8, f"{M}/Row/B5"))
            assert await matches(**{"class": "Node2D"}) == (node2d, 167)
            assert await matches(**{"class": sprite, "name": "C*"}) == (
                [run(f"{M}/Crowd/C1", sprite, 5, f"{M}/Crowd/C5")],  # the hat is not listed
                5,
            )
            # A script's class_name, and the scripts extending it; the same by group (set in
            # the scene and in code) and by script.
            assert await matches(**{"class": "Enemy"}) == (enemies, 5)
            assert await matches(group="foes") == (enemies, 5)
            assert await matches(script="res://enemy.gd") == (enemies, 5)
            assert await matches(script="res://boss.gd") == ([enemies[1]], 1)
            assert await matches(group="signs") == ([leaf(f"{M}/Row/Sign", "Label")], 1)
            assert await matches(**{"class": "Control"}) == ([leaf(f"{M}/Row/Sign", "Label")], 1)
            assert await matches(**{"class": "Camera2D"}) == ([], 0)
            assert await matches(group="nobody", root=f"{M}/Row") == ([], 0)

            _, unknown = await tree(session, sid, **{"class": "Enemyy"})
            assert unknown == {
                "outcome": "invalid_argument",
                "message": "class Enemyy is neither an engine class nor a class_name of the "
                "project",
            }
            _, bad = await tree(session, sid, name="Main/Row")
            assert bad == {
                "outcome": "invalid_argument",
                "message": "name is a glob on a node's name, which never holds '/' (use root "
                "for a place in the tree)",
            }


async def test_a_game_forging_its_listing_is_refused_and_stays_bounded(
    tree_env: ServedProject,
):
    with anyio.fail_after(120):
        async with tree_env.connect("http", "alice") as c:
            start = {"mode": "headless", "scene": "res://forger.tscn"}
            sid = (await ok(c, "runtime.session.start", start))["session"]["id"]

            async def forged(kind: str, **args: Any) -> dict[str, Any]:
                r = await c.call_tool(
                    "runtime_scene_tree", {"session_id": sid, "group": f"forged-{kind}", **args}
                )
                return dict(r.structured_content or {})

            prefix = "the game's answer to tree is malformed: "
            assert await forged("many", max_nodes=10) == {
                "outcome": "failed",
                "message": prefix + "nodes holds more than max_nodes (10) entries",
            }
            assert await forged("run") == {
                "outcome": "failed",
                "message": prefix + "count is under 4",
            }
            assert await forged("total") == {
                "outcome": "failed",
                "message": prefix + "total is 7 but the entries count 40 nodes",
            }
            # Entries of the right shape, 300 of 10 KB each: cut to fit, and said so.
            huge = await forged("huge", max_nodes=300)
            assert huge["outcome"] == "ok" and huge["truncated"] is True
            assert 1 <= len(huge["nodes"]) < 300 and huge["total"] == 300_000_000
            assert len(json.dumps(huge)) <= 512 * 1024
            # The default listing's 16 KB hold not even one of them.
            assert await forged("huge") == {
                "outcome": "ok",
                "nodes": [],
                "total": 300_000_000,
                "truncated": True,
                "current_scene": "/root/Forger",
            }
            # The game goes on, and its real tree is read as ever.
            real = await ok(c, "runtime.scene.tree", {"session_id": sid, "depth": 1})
            assert real["current_scene"] == "/root/Forger" and real["total"] == 2
            await ok(c, "runtime.session.stop", {"session_id": sid})

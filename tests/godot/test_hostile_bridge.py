"""The bridge as a hostile caller or project would try it, on a real Godot (3.2 and 4.6): its
settings cannot be reached from the game's arguments, it runs no scene outside ``res://``, it
loads no Object from outside the project, and a game cannot read the server's environment."""

from __future__ import annotations

import socket
from pathlib import Path

import anyio
import pytest

from godot_mcp.engine.process.locate import GodotInstall
from godot_mcp.features.game import runner as runner_module
from godot_mcp.features.game.errors import GameFailed, GameInvalid
from godot_mcp.features.game.runner import GameRunner
from tests.support.engines import Engine

pytestmark = [pytest.mark.godot, pytest.mark.anyio]

EVIL_SCRIPT = 'extends Node\n\nfunc _init():\n\tprint("EVIL RAN")\n'


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def evil_scene(engine: Engine) -> str:
    """A scene whose embedded script prints ``EVIL RAN`` as soon as it is instanced."""
    source = EVIL_SCRIPT.replace("\n", "\\n").replace("\t", "\\t").replace('"', '\\"')
    if engine.major == 3:
        return (
            "[gd_scene load_steps=2 format=2]\n\n"
            f'[sub_resource type="GDScript" id=1]\nscript/source = "{source}"\n\n'
            '[node name="Evil" type="Node"]\nscript = SubResource( 1 )\n'
        )
    return (
        "[gd_scene load_steps=2 format=3]\n\n"
        f'[sub_resource type="GDScript" id="GDScript_e"]\nscript/source = "{source}"\n\n'
        '[node name="Evil" type="Node"]\nscript = SubResource("GDScript_e")\n'
    )


@pytest.fixture
def outside(tmp_path: Path, engine: Engine) -> Path:
    """A folder outside the project holding an evil scene and an evil script."""
    place = tmp_path / "outside"
    place.mkdir()
    (place / "evil.tscn").write_text(evil_scene(engine))
    (place / "evil.gd").write_text(EVIL_SCRIPT)
    return place


@pytest.fixture
async def runner(godot_install: GodotInstall, tmp_path: Path):
    runner = GameRunner(godot_install, tmp_path / "scratch")
    try:
        yield runner
    finally:
        with anyio.fail_after(15):
            await runner.aclose()


async def test_no_game_argument_reaches_the_bridge_settings(
    runner: GameRunner, demo_project: Path, outside: Path, engine: Engine
):
    """The bridge reads its port and scene from its environment: arguments that once steered
    it now reach the game as they are, and the game runs its own scene, connected to us."""
    decoy = socket.socket()
    decoy.bind(("127.0.0.1", 0))
    decoy.listen(4)
    decoy.setblocking(False)
    port = decoy.getsockname()[1]
    evil = f"--mcp-scene={outside / 'evil.tscn'}"
    if engine.major == 3:  # which reads an argument ending in .tscn as its scene: refused there
        evil += "/"
    args = [evil, f"--mcp-port={port}", "--mcp-scene=res://x"]
    try:
        with anyio.fail_after(60):
            game = await runner.start(demo_project, "headless", args=args)
            tree = await game.tree("/root", depth=2, max_nodes=50)
            await anyio.sleep(0.5)  # time for a bridge that read the port to try it
            with pytest.raises(BlockingIOError):
                decoy.accept()
            assert tree.current_scene is not None and tree.current_scene.endswith("Main")
            assert "EVIL RAN" not in game.log.text()
            await game.stop()
    finally:
        decoy.close()


async def test_the_bridge_refuses_a_scene_outside_res(
    runner: GameRunner,
    demo_project: Path,
    outside: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    """Even handed an absolute scene (the server's own check switched off), the bridge
    refuses it and runs nothing of it."""
    monkeypatch.setattr(runner_module, "validate_scene", lambda scene: scene)
    for scene in (str(outside / "evil.tscn"), f"res://../{outside.name}/evil.tscn"):
        with anyio.fail_after(60), pytest.raises(GameFailed) as failed:
            await runner.start(demo_project, "headless", scene=scene)
        assert "is not a res:// path inside the project" in failed.value.message
    for game in list(runner._sessions):
        assert "EVIL RAN" not in game.log.text()


async def test_an_object_path_leaving_res_is_refused_by_the_server_and_the_bridge(
    runner: GameRunner, demo_project: Path, outside: Path
):
    """``res://../…`` in an Object value: the server refuses it before sending, and the bridge
    refuses it too when it comes straight over the wire."""
    depth = len(demo_project.parts)
    escape = "res://" + "../" * depth + str(outside / "evil.gd").lstrip("/")
    spellings = [escape, escape.replace("/", "\\").replace("res:\\\\", "res://"), "res://./x.gd"]
    with anyio.fail_after(60):
        game = await runner.start(demo_project, "headless")
        for path in spellings:
            value = {"script": {"type": "Object", "path": path}}
            with pytest.raises(GameInvalid) as refused:
                await game.set("/root/Main", value)
            assert refused.value.message == f"an Object path must stay inside res://: {path}"
            with pytest.raises(GameInvalid) as bridge:
                await game._call("set", 10, exclusive=False, path="/root/Main", values=value)
            assert "an Object path must stay inside res://" in bridge.value.message
        await anyio.sleep(0.3)
        assert "EVIL RAN" not in game.log.text()
        await game.stop()

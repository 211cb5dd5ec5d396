"""A debug start whose game never connects its debugger answers ``failed`` within the start's
bound and ends the game (the fake engine in the game's place: it ignores ``--remote-debug``
for the scene ``res://nodebug.tscn``)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from godot_mcp.engine.process.locate import GodotInstall
from godot_mcp.engine.profile import profile_of
from godot_mcp.features.game import GameRunner
from godot_mcp.features.game.debugging import DebugLaunch
from godot_mcp.features.game.errors import GameFailed
from tests.support import fake_godot
from tests.support.projects import make_project

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_debugger_that_never_connects_fails_the_start_and_ends_the_game(
    tmp_path: Path,
) -> None:
    fake = str(fake_godot.script(tmp_path / "engine"))
    install = GodotInstall(fake, fake, fake_godot.VERSION, fake_godot.VERSION, 3, None, None)
    project = make_project(tmp_path / "project")
    (project / "nodebug.tscn").write_text("[gd_scene format=2]\n")
    runner = GameRunner(install, tmp_path / "scratch")
    try:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                launch = await DebugLaunch.open(profile_of(3), {}, tg)
                began = anyio.current_time()
                with pytest.raises(GameFailed) as failed:
                    await runner.start(
                        project,
                        "headless",
                        "res://nodebug.tscn",
                        timeout=1.5,
                        engine_args=launch.engine_args(),
                        attach=launch.attach,
                        background=tg,
                    )
                assert anyio.current_time() - began < 5
                assert failed.value.message.startswith(
                    "the game's debugger did not connect within 1.5 s; the game was ended"
                )
                assert runner.sessions == []
                assert not [
                    p
                    for p in Path("/proc").iterdir()
                    if p.name.isdigit() and _runs(p, str(tmp_path / "engine"))
                ]
                await launch.aclose()
                tg.cancel_scope.cancel()
    finally:
        await runner.aclose()


def _runs(proc: Path, what: str) -> bool:
    try:
        return what.encode() in (proc / "cmdline").read_bytes()
    except OSError:
        return False

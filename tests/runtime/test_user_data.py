"""A game's own files (its user://: its saves and the engine's logs/godot.log) on every engine:
under a data dir private to its session, removed with it, wherever the engine lets the server
choose; written into the project by Godot 3.2.3 for a project without
application/config/name, which runtime.session.start says in `warnings`."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest

from tests.runtime.test_captures import ok
from tests.support.engines import Engine
from tests.support.servers import stdio_client
from tests.support.trees import tree_digest

pytestmark = [pytest.mark.anyio, pytest.mark.godot]

PROJECT = """config_version=4

[application]
NAME
run/main_scene="res://save.tscn"
"""

SAVE3 = """extends Node

func _ready():
\tprint("USERDIR " + OS.get_user_data_dir())
\tvar f = File.new()
\tf.open("user://save.txt", File.WRITE)
\tf.store_string("saved")
\tf.close()
\tprint("SAVED")
"""
SAVE4 = """extends Node

func _ready():
\tprint("USERDIR " + OS.get_user_data_dir())
\tvar f = FileAccess.open("user://save.txt", FileAccess.WRITE)
\tf.store_string("saved")
\tf.close()
\tprint("SAVED")
"""

INTO_PROJECT = (
    "the project has no application/config/name, and Godot 3.2.3 keeps an unnamed project's "
    "user:// in the project folder itself: the game's own files (the engine's "
    "logs/godot.log, whatever it saves to user://) will be written into the project; give "
    "the project a name to keep them out of it"
)


def save_project(engine: Engine, root: Path, name: str | None) -> Path:
    root.mkdir(parents=True)
    named = f'\nconfig/name="{name}"' if name is not None else ""
    (root / "project.godot").write_text(engine.port(PROJECT.replace("\nNAME", named)))
    (root / "save.gd").write_text(SAVE3 if engine.major == 3 else SAVE4)
    (root / "save.tscn").write_text(engine.scene("save.gd", "Node"))
    return root


async def _run_once(project: Path, state: Path) -> tuple[dict, str, list[str]]:
    """Start a headless game of ``project``, let it save; its start's answer, the user data
    dir it printed (as the client reads it) and the files in the session's data dir."""
    async with stdio_client(project, state) as c:
        started = await ok(c, "runtime.session.start", {"mode": "headless"})
        sid = started["session"]["id"]
        lines: list[dict] = []
        while not any(line["text"] == "SAVED" for line in lines):
            await anyio.sleep(0.1)
            lines = (await ok(c, "runtime.log.read", {"session_id": sid}))["lines"]
        (data,) = state.rglob("data-*")
        files = sorted(str(p.relative_to(data)) for p in data.rglob("*") if p.is_file())
        await ok(c, "runtime.session.stop", {"session_id": sid})
    (printed,) = [line["text"] for line in lines if line["text"].startswith("USERDIR ")]
    return started, printed.removeprefix("USERDIR "), files


async def test_a_games_user_data_is_its_sessions_own_or_the_start_says_it_goes_into_the_project(
    tmp_path: Path, engine: Engine
):
    state = tmp_path / "state"
    with anyio.fail_after(120):
        named = save_project(engine, tmp_path / "named", "saver")
        before = tree_digest(named)
        started, user_dir, files = await _run_once(named, state)
        assert "warnings" not in started, started
        assert re.fullmatch(r"<tmp>/data-\w+/godot/app_userdata/saver", user_dir), user_dir
        saver = "godot/app_userdata/saver"
        assert files == [f"{saver}/logs/godot.log", f"{saver}/save.txt"], files
        assert tree_digest(named) == before
        assert list(state.rglob("data-*")) == []  # removed with its session

        unnamed = save_project(engine, tmp_path / "unnamed", None)
        before = tree_digest(unnamed)
        started, user_dir, files = await _run_once(unnamed, state)
    if engine.lane == 3:  # Godot 3.2.3: user:// is the project itself
        assert started["warnings"] == [INTO_PROJECT]
        assert user_dir == "res://" and files == []
        added = sorted(set(tree_digest(unnamed)) - set(before))
        assert added == ["logs", "logs/godot.log", "save.txt"]
    else:  # Godot 3.6.2 and 4.6.3: under the data dir the server chose
        assert "warnings" not in started, started
        assert re.fullmatch(r"<tmp>/data-\w+/godot/app_userdata/\[unnamed project\]", user_dir)
        unnamed_dir = "godot/app_userdata/[unnamed project]"
        assert files == [f"{unnamed_dir}/logs/godot.log", f"{unnamed_dir}/save.txt"], files
        assert tree_digest(unnamed) == before
    assert list(state.rglob("data-*")) == []

"""A refusal whose way out is another tool names it as ``tools/list`` spells it, in both
name styles, through a client over the fake engine."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from godot_mcp.mcp.spec import NameStyle, wire_name
from tests.runtime.test_fake_engine import call, fake_server, ok
from tests.support import fake_godot
from tests.support.projects import make_project

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("fake_display")]


@pytest.mark.parametrize("names", ["underscore", "dotted"])
async def test_a_refusal_names_the_tool_that_helps_as_listed(
    tmp_path: Path, names: NameStyle
) -> None:
    control = wire_name("runtime.debug.control", names)
    importer = wire_name("project.import", names)
    project = make_project(tmp_path / "project")
    (project / "main.gd").write_text("extends Node2D\n" * 20)
    (project / "icon.png").write_bytes(fake_godot.png(4, 4, (1, 2, 3)))
    with anyio.fail_after(60):
        async with fake_server(tmp_path, names=names) as c:
            listed = {t.name for t in (await c.list_tools()).tools}
            assert {control, importer} <= listed
            never = await call(c, "runtime.session.start")
            assert never == {
                "outcome": "unavailable",
                "message": "the project was never imported (it has no .import/ folder), so its "
                f"resources cannot load: import it with {importer} first",
            }
            await ok(c, "project.import")
            args = {"debug": True, "breakpoints": ["res://main.gd:3"]}
            sid = {"session_id": (await ok(c, "runtime.session.start", args))["session"]["id"]}
            at = await ok(c, "runtime.debug.state", {**sid, "wait_seconds": 5})
            assert at["state"] == "break"
            stopped = await call(c, "runtime.scene.tree", sid)
            assert stopped == {
                "outcome": "unavailable",
                "message": "the game is stopped at res://main.gd:3 (breakpoint); "
                f"resume it with {control}",
            }
            await ok(c, "runtime.debug.control", {**sid, "action": "continue"})
            running = await call(c, "runtime.debug.variables", sid)
            assert running == {
                "outcome": "unavailable",
                "message": f"the game is not stopped; stop it first ({control} break)",
            }

"""No store call runs on the event loop: every tool and resource request of a real server (in
this process, a real headless Godot) reaches the store through the worker-thread boundary."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

from godot_mcp.app import open_app
from godot_mcp.config import Settings
from godot_mcp.store.values import Limits
from tests.runtime.conftest import copy_demo, require_godot
from tests.runtime.test_captures import ok
from tests.support.offloop import store_calls_on_the_loop

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]


async def test_no_store_call_runs_on_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_godot("godot3-server", "bwrap")
    project = copy_demo(tmp_path / "demo")
    settings = Settings(tmp_path / "state", None, None, Limits())
    with store_calls_on_the_loop(monkeypatch) as seen, anyio.fail_after(240):
        async with open_app(settings, project, "stdio") as app, Client(app.server) as c:
            await ok(c, "server.profile")
            await ok(c, "project.info")
            sid = (await ok(c, "runtime.session.start", {"mode": "headless"}))["session"]["id"]
            await ok(c, "runtime.session.list")
            await ok(c, "runtime.log.read", {"session_id": sid})
            await ok(c, "runtime.scene.tree", {"session_id": sid})
            log = await ok(c, "runtime.log.capture", {"session_id": sid})
            await ok(c, "runtime.session.stop", {"session_id": sid})
            export = (await ok(c, "project.export", {"preset": "Pack", "kind": "pack"}))["export"]
            status = await ok(
                c, "project.export.status", {"export_id": export["id"], "wait_seconds": 50}
            )
            assert status["export"]["state"] == "succeeded", status
            listed = (await c.list_resources()).resources[0]
            await c.read_resource(listed.uri)
            await ok(c, "artifacts.read", {"uri": log["artifact"]["uri"]})
            await ok(c, "project.check")
            await ok(c, "project.import")
            await ok(c, "project.api", {"class": "Label", "member": "text"})
            await ok(c, "project.reload")
            await ok(c, "project.info")
            assert seen == [], "\n".join(dict.fromkeys(seen))
            app.deps.store.bytes_in_use()  # the watch itself: a call on the loop is seen
            assert seen == ["ArtifactStore.bytes_in_use (?)"]

"""Faults in background work, private paths, children: the server lives on, says nothing private."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import anyio
import pytest

from tests.runtime.conftest import copy_demo, require_godot
from tests.runtime.test_captures import fetch, ok
from tests.runtime.test_exports import run_export
from tests.support import engines
from tests.support.disks import tmpfs
from tests.support.procs import children, zombies
from tests.support.servers import http_client, make_tokens, run_admin, start_http, stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]


async def test_a_full_3_mib_disk_never_ends_the_server(tmp_path):
    require_godot("godot3", "godot3-server", "godot3-runner", "Xvfb")
    project = copy_demo(tmp_path / "demo")
    data_home = tmp_path / "xdg-data"
    engines.current().install_templates(data_home)
    env = {"DISPLAY": "", "XDG_DATA_HOME": str(data_home)}
    with tmpfs(tmp_path / "disk", "3m") as disk, anyio.fail_after(240):
        state = disk / "state"
        async with stdio_client(project, state, env=env) as c:
            sid = (await ok(c, "runtime.session.start"))["session"]["id"]
            shot = (await ok(c, "runtime.screenshot.capture", {"session_id": sid}))["artifact"]
            first = await fetch(c, shot)
            # The disk filled up to its last 256 KiB: a short recording's frames overflow it
            # however slowly the game runs on a loaded machine.
            free = shutil.disk_usage(disk).free
            (disk / "filler").write_bytes(b"\0" * max(0, free - (256 << 10)))
            for _ in range(2):
                r = await c.call_tool(
                    "runtime.recording.capture", {"session_id": sid, "frames": 60, "fps": 10}
                )
                body = r.structured_content
                assert body["outcome"] in ("failed", "too_large"), body
                if body["outcome"] == "failed":
                    assert "disk is full" in body["message"], body
            r = await c.call_tool("project.export", {"preset": "Linux/X11", "kind": "release"})
            body = r.structured_content
            if body["outcome"] == "ok":
                body = (await run_export_status(c, body["export"]["id"]))["export"]
                assert body["state"] == "failed", body
            else:
                assert body["outcome"] == "unavailable" and "free" in body["message"], body
            # The server answers, the first screenshot is intact, the game still listed.
            await ok(c, "server.profile")
            assert await fetch(c, shot, chunk=7000) == first
            listed = (await ok(c, "runtime.session.list"))["sessions"]
            assert [(s["id"], s["state"]) for s in listed] == [(sid, "running")]
            await ok(c, "runtime.session.stop", {"session_id": sid})
        done = run_admin("reconcile", "--json", "--state-dir", str(state))
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["missing_dropped"] == report["mismatched_dropped"] == 0


async def run_export_status(client, export_id: str) -> dict:
    r = await client.call_tool(
        "project.export.status", {"export_id": export_id, "wait_seconds": 50}
    )
    assert r.structured_content["outcome"] == "ok", r.structured_content
    return r.structured_content


PRINTS_ITS_PATHS = """\
extends Node2D

func _ready():
\tvar chain = PoolStringArray()
\tvar p = OS.get_environment("XAUTHORITY")
\twhile p != "" and p != "/" and chain.size() < 12:
\t\tchain.append(p)
\t\tp = p.get_base_dir()
\tprint("CHAIN " + chain.join(" ; "))
\tvar s = OS.get_environment("GODOT_MCP_STATE_DIR")
\tprint("STATE " + s + " ; " + s.get_base_dir() + " ; " + s + "/blobs")
\tget_tree().quit(3)
"""


async def test_no_text_names_the_state_dir_its_parent_or_anything_below(tmp_path):
    require_godot("godot3", "godot3-server", "Xvfb")
    # Outside /tmp and $HOME, so no generic temp-dir rule can hide a leak.
    base = Path(tempfile.mkdtemp(prefix="godot-mcp-private-", dir="/var/tmp"))
    alias = base.with_name(base.name + "-alias")  # the state dir by another name, via a link
    alias.symlink_to(base)
    try:
        state = base / "state"
        project = copy_demo(tmp_path / "demo")
        leaky = PRINTS_ITS_PATHS
        if engines.current().major == 4:
            leaky = leaky.replace("PoolStringArray", "PackedStringArray")
            leaky = leaky.replace('chain.join(" ; ")', '" ; ".join(chain)')
        (project / "leaky.gd").write_text(leaky)
        (project / "leaky.tscn").write_text(engines.current().scene("leaky.gd"))
        empty = tmp_path / "no-templates"
        empty.mkdir()
        env = {
            "DISPLAY": "",
            "GODOT_MCP_STATE_DIR": str(alias / "state"),
            "XDG_DATA_HOME": str(empty),
        }
        texts = []
        with anyio.fail_after(180):
            async with stdio_client(project, state, env=env) as c:
                r = await c.call_tool(
                    "runtime.session.start", {"scene": "res://leaky.tscn", "mode": "windowed"}
                )
                assert r.structured_content["outcome"] == "failed", r.structured_content
                texts.append(r.structured_content["message"])
                body = await run_export(c, "Linux/X11", "debug")
                assert body["state"] == "failed", body
                texts += [body["error"], body.get("log_tail", "")]
        message = texts[0]
        chain = "<tmp>/xvfb.auth ; <tmp> ; <state>/scratch/games ; <state>/scratch ; <state>"
        assert f"CHAIN {chain} ; <private> ; /var/tmp ; /var" in message, message
        # The server's own variables are not the game's: it cannot learn the state dir so.
        assert "STATE  ;  ; /blobs" in message, message
        for text in texts:
            assert str(base) not in text and str(state) not in text, text
            assert str(alias) not in text, text
            assert os.path.realpath(base) not in text, text
    finally:
        alias.unlink()
        shutil.rmtree(base, ignore_errors=True)


async def test_games_of_an_ended_http_session_are_reaped(tmp_path):
    require_godot("godot3-server")
    project = copy_demo(tmp_path / "demo")
    state = tmp_path / "state"
    tokens = make_tokens(state, ["alice"])
    server = start_http(project, state, tokens=tokens)
    try:
        with anyio.fail_after(90):
            for _ in range(2):
                async with http_client(server.url, tokens["alice"]) as c:
                    await ok(c, "runtime.session.start", {"mode": "headless"})
                    await ok(c, "runtime.session.start", {"mode": "headless"})
                    assert len(children(server.process.pid)) == 2
                # The client's DELETE ended the session: its games are killed and reaped.
                deadline = time.monotonic() + 15
                while children(server.process.pid) and time.monotonic() < deadline:
                    await anyio.sleep(0.05)
                assert children(server.process.pid) == []
                while zombies(server.process.pid) and time.monotonic() < deadline:
                    await anyio.sleep(0.05)
                assert zombies(server.process.pid) == []
    finally:
        server.stop()

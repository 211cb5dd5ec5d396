"""Managed exports of a real project through real servers."""

from __future__ import annotations

import itertools
import json
import os
import signal

import anyio
import pytest
from mcp import MCPError

from tests.godot.export_fixtures import is_partial, make_big_project
from tests.runtime.conftest import copy_demo, require_godot
from tests.runtime.test_captures import fetch, ok
from tests.support import engines
from tests.support.procs import children, cmdline, wait_gone
from tests.support.servers import run_admin, serve_project, stdio_client
from tests.support.trees import tree_digest

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]


async def run_export(client, preset: str, kind: str, wait: float = 50) -> dict:
    started = await ok(client, "project.export", {"preset": preset, "kind": kind})
    assert started["export"]["state"] == "running"
    notes: list[tuple[float, float | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        notes.append((done, total))

    r = await client.call_tool(
        "project_export_status",
        {"export_id": started["export"]["id"], "wait_seconds": wait},
        progress_callback=progress,
    )
    body = r.structured_content["export"]
    body["_notes"] = notes
    return body


async def test_a_pack_reads_back_identically_over_stdio_and_http(tmp_path):
    require_godot("godot3-server")
    project = copy_demo(tmp_path / "demo")
    before = tree_digest(project)
    served = serve_project(project, tmp_path / "state")
    got = {}
    try:
        with anyio.fail_after(120):
            for transport in ("stdio", "http"):
                async with served.connect(transport) as c:
                    body = await run_export(c, "Pack", "pack")
                    assert body["state"] == "succeeded", body
                    notes = body["_notes"]  # strictly increasing; total only when exact: at the end
                    assert notes and all(a[0] < b[0] for a, b in itertools.pairwise(notes))
                    assert all(total is None for _, total in notes[:-1])
                    assert notes[-1][1] == notes[-1][0]
                    (out,) = body["outputs"]
                    assert out["name"] == "demo.pck"
                    assert out["mime_type"] == "application/octet-stream"
                    got[transport] = (out["sha256"], await fetch(c, out, chunk=1000))
    finally:
        served.http.stop()
    assert got["stdio"] == got["http"]
    assert tree_digest(project) == before


async def test_a_full_export_registers_binary_and_pack_together(tmp_path):
    require_godot("godot3-server", "godot3-runner")
    project = copy_demo(tmp_path / "demo")
    before = tree_digest(project)
    data_home = tmp_path / "xdg-data"
    engines.current().install_templates(data_home)
    with anyio.fail_after(180):
        async with stdio_client(
            project, tmp_path / "state", env={"XDG_DATA_HOME": str(data_home)}
        ) as c:
            body = await run_export(c, "Linux/X11", "release")
            assert body["state"] == "succeeded", body
            names = sorted(o["name"] for o in body["outputs"])
            assert names == ["demo.pck", "demo.x86_64"]
            binary = next(o for o in body["outputs"] if o["name"] == "demo.x86_64")
            head = await c.read_resource(f"{binary['uri']}?length=4")
            import base64

            assert base64.b64decode(head.contents[0].blob) == b"\x7fELF"
            listed = {r.uri for r in (await c.list_resources()).resources}
            assert {o["uri"] for o in body["outputs"]} <= listed
    assert tree_digest(project) == before


async def test_bad_presets_are_refused_at_once_naming_the_known_ones(tmp_path):
    require_godot("godot3-server")
    project = copy_demo(tmp_path / "demo")
    with anyio.fail_after(60):
        async with stdio_client(project, tmp_path / "state") as c:
            r = await c.call_tool("project.export", {"preset": "Nope"})
            assert r.structured_content["outcome"] == "invalid_argument"
            assert "'Linux/X11', 'Pack'" in r.structured_content["message"]
            r = await c.call_tool("project.export", {"preset": "Pack", "kind": "zip"})
            assert r.structured_content["outcome"] == "invalid_argument"
            (project / "export_presets.cfg").unlink()
            r = await c.call_tool("project.export", {"preset": "Pack"})
            assert r.structured_content["outcome"] == "invalid_argument"
            assert "export_presets.cfg" in r.structured_content["message"]
            assert (await c.list_resources()).resources == []


async def test_missing_templates_fail_with_godots_message_and_no_private_paths(tmp_path):
    require_godot("godot3-server")
    project = copy_demo(tmp_path / "demo")
    empty = tmp_path / "no-templates"
    empty.mkdir()
    with anyio.fail_after(120):
        async with stdio_client(
            project, tmp_path / "state", env={"XDG_DATA_HOME": str(empty)}
        ) as c:
            body = await run_export(c, "Linux/X11", "debug")
            assert body["state"] == "failed" and body["outputs"] == []
            text = body["error"] + body.get("log_tail", "")
            assert "template" in text.lower()
            assert str(tmp_path) not in text and "/tmp/" not in text
            # The failure names the engine that failed, by its version.
            version = engines.current().template_dir.rsplit("/", 1)[1].removesuffix(".stable")
            assert body["error"].startswith(f"Godot {version} exited "), body["error"]
            assert (await c.list_resources()).resources == []
    assert not (project / ".import").exists()


async def test_outputs_larger_than_the_budget_fail_and_register_nothing(tmp_path):
    require_godot("godot3-server")
    project = copy_demo(tmp_path / "demo")
    with anyio.fail_after(120):
        async with stdio_client(project, tmp_path / "state", "--store-budget-bytes", "1000") as c:
            body = await run_export(c, "Pack", "pack")
            assert body["state"] == "failed" and body["outputs"] == []
            assert "budget" in body["error"]
            assert (await c.list_resources()).resources == []
    status = run_admin("status", "--json", "--state-dir", str(tmp_path / "state"))
    assert json.loads(status.stdout)["bytes_in_use"] == 0


async def start_pack(c) -> str:
    """Start a pack export of the client's project; its id."""
    return (await ok(c, "project.export", {"preset": "Pack", "kind": "pack"}))["export"]["id"]


async def test_cancel_stops_a_running_export_and_removes_its_scratch(tmp_path):
    require_godot("godot3-server")
    project = make_big_project(tmp_path / "big", 384)
    before = tree_digest(project)
    state = tmp_path / "state"
    with anyio.fail_after(120):
        async with stdio_client(project, state) as c:
            eid = await start_pack(c)
            work = state / "exports" / eid
            cancelled = await ok(c, "project.export.cancel", {"export_id": eid})  # at once
            assert cancelled["state"] == "cancelled"
            body = (await ok(c, "project.export.status", {"export_id": eid}))["export"]
            assert body["state"] == "cancelled" and body["outputs"] == []
            assert not work.exists()
            assert (await c.list_resources()).resources == []

            # Two exports run at a time: of three asked for together, one is refused.
            answers: list[dict] = []

            async def ask() -> None:
                r = await c.call_tool("project.export", {"preset": "Pack", "kind": "pack"})
                answers.append(r.structured_content)

            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(ask)
            assert sorted(a["outcome"] for a in answers) == ["ok", "ok", "unavailable"]
            for a in answers:  # one may finish first on a slow machine: not a failure
                if a["outcome"] == "ok":
                    final = await ok(c, "project.export.cancel", {"export_id": a["export"]["id"]})
                    assert final["state"] in ("cancelled", "succeeded")
    assert tree_digest(project) == before


async def test_an_export_running_at_a_graceful_shutdown_is_cancelled_and_says_so(tmp_path):
    require_godot("godot3-server")
    project = make_big_project(tmp_path / "big", 384)
    state = tmp_path / "state"
    with anyio.fail_after(120):
        async with stdio_client(project, state) as c:
            eid = await start_pack(c)
            work = state / "exports" / eid
            while not (work / "out").is_dir():
                await anyio.sleep(0.02)
        # The client closed the server's stdin: it shut down, the export still running.
        assert not work.exists()
        async with stdio_client(project, state) as c:
            body = (await ok(c, "project.export.status", {"export_id": eid}))["export"]
    assert body["state"] == "cancelled" and body["outputs"] == []
    assert body["error"] == "the server shut down"


def _server_pid(state) -> int:
    for pid in children(os.getpid()):
        if str(state) in cmdline(pid) and "serve" in cmdline(pid):
            return pid
    raise AssertionError("no server child found")


async def test_a_killed_server_leaves_an_interrupted_export_with_evidence(tmp_path):
    require_godot("godot3-server")
    project = make_big_project(tmp_path / "big", 384)
    before = tree_digest(project)
    state = tmp_path / "state"
    with anyio.fail_after(180):
        try:
            async with stdio_client(project, state, "--retention-seconds", "1") as c:
                eid = await start_pack(c)
                out = state / "exports" / eid / "out"
                cache = state / "exports" / eid / "xdg" / "cache"
                while not [f for f in out.glob("*") if is_partial(f.name)] and not list(
                    cache.rglob("*tmp*")
                ):
                    await anyio.sleep(0.02)
                server = _server_pid(state)
                kids = children(server)
                assert any(engines.current().headless in cmdline(k) for k in kids)
                os.kill(server, signal.SIGKILL)
                await anyio.sleep(0.5)
        except (Exception, BaseExceptionGroup):
            pass  # the client loses its server mid-call: expected
        assert wait_gone(kids, timeout=10) == []

        async with stdio_client(project, state, "--retention-seconds", "1") as c:
            body = (await ok(c, "project.export.status", {"export_id": eid}))["export"]
            assert body["state"] == "interrupted" and body["outputs"] == []
            assert "evidence" in body["error"]
            assert (await c.list_resources()).resources == []
            with pytest.raises(MCPError):
                await c.read_resource("godot-mcp://artifacts/" + eid)

    def evidence() -> list[dict]:
        done = run_admin("evidence", "list", "--json", "--state-dir", str(state))
        assert done.returncode == 0, done.stderr
        assert str(tmp_path) not in done.stdout
        return json.loads(done.stdout)

    (entry,) = evidence()
    assert entry["export_id"] == eid and entry["files"] >= 1 and entry["bytes"] > 0
    assert not (state / "exports" / eid).exists()
    await anyio.sleep(1.2)  # past the 1 s retention: neither retention nor reconcile removes it
    rec = run_admin("reconcile", "--json", "--retention-seconds", "1", "--state-dir", str(state))
    assert rec.returncode == 0, rec.stderr
    assert evidence() == [entry]
    purge = run_admin("evidence", "purge", eid, "--state-dir", str(state))
    assert purge.returncode == 0 and evidence() == []
    assert tree_digest(project) == before


async def test_a_preset_without_a_usable_file_name_is_refused_and_leaves_nothing(tmp_path):
    require_godot("godot3-server")
    project = copy_demo(tmp_path / "demo")
    presets = project / "export_presets.cfg"
    presets.write_text(
        presets.read_text()
        + '\n[preset.2]\n\nname="Dotdot"\nplatform="Linux/X11"\nrunnable=false\n'
        'export_filter="all_resources"\nexport_path="build/.."\n'
    )
    with anyio.fail_after(60):
        async with stdio_client(project, tmp_path / "state") as c:
            r = await c.call_tool("project.export", {"preset": "Dotdot", "kind": "release"})
            assert r.structured_content["outcome"] == "invalid_argument"
            assert "Dotdot" in r.structured_content["message"]
    report = run_admin("reconcile", "--json", "--state-dir", str(tmp_path / "state"))
    assert json.loads(report.stdout)["extra"]["exports_interrupted"] == 0
    assert (
        json.loads(
            run_admin("evidence", "list", "--json", "--state-dir", str(tmp_path / "state")).stdout
        )
        == []
    )

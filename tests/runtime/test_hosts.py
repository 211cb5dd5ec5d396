"""What hosts rely on, with real Godot: idle sessions cleaned up, capacities, answers that
validate against each tool's own outputSchema."""

from __future__ import annotations

import json
import time

import anyio
import httpx2
import pytest
from jsonschema import Draft202012Validator

from godot_mcp.app import shipped_tools
from tests.godot.export_fixtures import make_big_project
from tests.runtime.conftest import copy_demo, require_godot
from tests.support import engines
from tests.support.procs import children, zombies
from tests.support.rawmcp import raw_session
from tests.support.servers import make_tokens, run_admin, start_http, stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]


async def test_an_idle_session_ends_like_a_delete_even_with_its_get_stream_open(tmp_path):
    """Idle = no POST: an open GET stream (SDK clients reopen it themselves) is not activity."""
    require_godot("godot3-server")
    project = make_big_project(tmp_path / "big", mb=256)
    state = tmp_path / "state"
    tokens = make_tokens(state, ["alice"])
    server = start_http(project, state, "--http-session-idle-seconds", "2", tokens=tokens)
    try:
        with anyio.fail_after(120):
            async with raw_session(server.url, tokens["alice"]) as s:
                headers = {**s.headers, "mcp-session-id": s.session_id or ""}
                headers["accept"] = "text/event-stream"
                async with httpx2.AsyncClient(timeout=None) as stream_http:
                    request = stream_http.build_request("GET", s.url, headers=headers)
                    stream = await stream_http.send(request, stream=True)
                    assert stream.status_code == 200
                    game = await s.call("runtime_session_start", {"mode": "headless"})
                    assert game["outcome"] == "ok", game
                    made = await s.call("test_produce", {"size": 4096})
                    assert made["outcome"] == "ok", made
                    started = await s.call("project_export", {"preset": "Pack", "kind": "pack"})
                    assert started["outcome"] == "ok", started
                    assert len(children(server.process.pid)) >= 2  # the game and the export
                    # No POST from now on; the GET stream stays open.
                    deadline = time.monotonic() + 30
                    while children(server.process.pid) and time.monotonic() < deadline:
                        await anyio.sleep(0.1)
                    assert children(server.process.pid) == [], "games/exports outlived idleness"
                    assert zombies(server.process.pid) == []
                    await stream.aclose()
                gone = await s.post("tools/call", {"name": "server_profile", "arguments": {}})
                assert gone.status_code == 404  # the session is over, as after DELETE
        status = json.loads(run_admin("status", "--json", "--state-dir", str(state)).stdout)
        assert status["bytes_in_use"] == 0  # its artifact was released
    finally:
        server.stop()


async def test_capacities_are_reported_and_enforced(tmp_path):
    require_godot("godot3-server")
    project = make_big_project(tmp_path / "big", mb=64)
    extra = ("--max-game-sessions", "1", "--max-exports", "1")
    with anyio.fail_after(120):
        async with stdio_client(project, tmp_path / "state", *extra) as c:
            profile = (await c.call_tool("server_profile", {})).structured_content
            assert profile["capacity"] == {
                "max_game_sessions": 1,
                "max_exports": 1,
                "game_sessions_running": 0,
                "exports_running": 0,
            }
            first = await c.call_tool("runtime_session_start", {"mode": "headless"})
            assert first.structured_content["outcome"] == "ok"
            second = await c.call_tool("runtime_session_start", {"mode": "headless"})
            assert second.structured_content["outcome"] == "unavailable"
            assert "--max-game-sessions" in second.structured_content["message"]
            answers = []

            async def ask() -> None:
                r = await c.call_tool("project_export", {"preset": "Pack", "kind": "pack"})
                answers.append(r.structured_content)

            async with anyio.create_task_group() as tg:
                for _ in range(2):
                    tg.start_soon(ask)
            assert sorted(a["outcome"] for a in answers) == ["ok", "unavailable"], answers
            refused = next(a for a in answers if a["outcome"] == "unavailable")
            assert "--max-exports" in refused["message"]
            profile = (await c.call_tool("server_profile", {})).structured_content
            assert profile["capacity"]["game_sessions_running"] == 1
            export_id = next(a for a in answers if a["outcome"] == "ok")["export"]["id"]
            await c.call_tool("project_export_cancel", {"export_id": export_id})


async def test_every_tool_answers_what_its_output_schema_says(tmp_path):
    require_godot("godot3", "godot3-server", "godot3-runner", "Xvfb")
    project = copy_demo(tmp_path / "demo")
    data_home = tmp_path / "xdg-data"
    engines.current().install_templates(data_home)
    env = {"DISPLAY": "", "XDG_DATA_HOME": str(data_home)}
    answers: dict[str, list[dict]] = {}
    with anyio.fail_after(180):
        async with stdio_client(project, tmp_path / "state", env=env) as c:
            schemas = {t.name: t.output_schema for t in (await c.list_tools()).tools}

            async def call(name: str, args: dict | None = None) -> dict:
                r = await c.call_tool(name, args or {})
                answers.setdefault(name, []).append(r.structured_content)
                return r.structured_content

            await call("server_profile")
            await call("project_info")
            sid = (await call("runtime_session_start"))["session"]["id"]
            await call("runtime_session_list")
            await call("runtime_log_read", {"session_id": sid, "max_lines": 5})
            await call("runtime_log_capture", {"session_id": sid})
            await call("runtime_scene_tree", {"session_id": sid, "max_nodes": 3})
            await call("runtime_time_control", {"session_id": sid, "action": "pause"})
            await call("runtime_time_control", {"session_id": sid, "action": "step", "frames": 2})
            await call(
                "runtime_input_send", {"session_id": sid, "events": [{"type": "wait", "frames": 1}]}
            )
            scene = (await call("runtime_scene_tree", {"session_id": sid}))["current_scene"]
            await call("runtime_node_get", {"session_id": sid, "path": scene})
            position = {"type": "Vector2", "x": 1, "y": 2}
            await call(
                "runtime_node_set",
                {"session_id": sid, "path": scene, "values": {"position": position}},
            )
            await call(
                "runtime_node_call",
                {"session_id": sid, "path": scene, "method": "get_child_count"},
            )
            await call("runtime_wait", {"session_id": sid, "until": {"frames": 2}})
            await call("runtime_perf_read", {"session_id": sid})
            await call("runtime_node_inspect", {"session_id": sid, "path": scene})
            await call("runtime_node_inspect", {"session_id": sid, "path": "/root/Nope"})
            await call(
                "runtime_wait",
                {"session_id": sid, "until": {"node": "/root/Nope"}, "timeout_seconds": 0.2},
            )
            shot = (await call("runtime_screenshot_capture", {"session_id": sid}))["artifact"]
            await call("runtime_recording_capture", {"session_id": sid, "frames": 2, "fps": 10})
            await call("artifacts_read", {"uri": shot["uri"] + "?length=10"})
            await call("artifacts_read", {"uri": shot["uri"] + "?offset=99999999"})
            await call("runtime_session_stop", {"session_id": sid})
            where = "res://spinner.gd:20"
            start = {"mode": "headless", "debug": True, "breakpoints": [where]}
            d = {"session_id": (await call("runtime_session_start", start))["session"]["id"]}
            await call("runtime_debug_state", {**d, "wait_seconds": 10})
            await call("runtime_debug_variables", d)
            await call("runtime_debug_evaluate", {**d, "expression": "t + 1"})  # Godot 3: no
            await call("runtime_debug_control", {**d, "action": "next"})
            await call("runtime_debug_breakpoints", {**d, "clear": [where]})
            await call("runtime_scripts_reload", {**d, "paths": ["res://spinner.gd"]})
            await call("runtime_debug_control", {**d, "action": "continue"})
            await call("runtime_profile_capture", {**d, "seconds": 0.5})
            await call("runtime_debug_control", {**d, "action": "step"})  # not stopped
            await call("runtime_session_stop", d)
            export = (await call("project_export", {"preset": "Pack", "kind": "pack"}))["export"]
            await call("project_export_status", {"export_id": export["id"], "wait_seconds": 30})
            await call("project_export_cancel", {"export_id": export["id"]})
            full = (await call("project_export", {"preset": "Linux/X11"}))["export"]
            await call("project_export_status", {"export_id": full["id"], "wait_seconds": 30})
            await call("project_export", {"preset": "Nope"})
            await call("project_check")
            await call("project_check", {"paths": ["res://nope"]})
            await call("project_import")
            await call("project_test")  # the demo carries no framework
            await call("project_test", {"framework": "gut", "paths": ["res://nope"]})
            await call("project_api", {"class": "Node"})
            await call("project_api", {"class": "Node", "member": "add_child"})
            await call("project_api", {"class": "Node", "member": "nope_nope"})
            await call("project_source", {"path": "res://spinner.gd", "to_line": 3})
            await call("project_source", {"path": "res://export_presets.cfg"})
            await call("runtime_session_stop", {"session_id": "A" * 22})
            await call("project_reload")
    listed = {t.name.replace(".", "_") for t in shipped_tools()}
    assert set(answers) == listed, listed - set(answers)
    for name, bodies in answers.items():
        validator = Draft202012Validator(schemas[name])
        for body in bodies:
            errors = [e.message for e in validator.iter_errors(body)]
            assert errors == [], (name, body, errors)
    outcomes = {b["outcome"] for bodies in answers.values() for b in bodies}
    assert {"ok", "invalid_argument", "not_found"} <= outcomes

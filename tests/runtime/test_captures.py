"""Screenshots and recordings of a real game, end to end over both transports."""

from __future__ import annotations

import base64
import hashlib
import io
import time

import anyio
import pytest
from PIL import Image, ImageChops, ImageStat

from tests.mcp.conftest import Connect
from tests.runtime.conftest import copy_demo, require_godot
from tests.support.engines import Engine
from tests.support.servers import stdio_client
from tests.support.trees import tree_digest

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]


async def ok(client, tool: str, args: dict | None = None) -> dict:
    r = await client.call_tool(tool.replace(".", "_"), args or {})
    assert r.structured_content["outcome"] == "ok", r.structured_content
    assert not r.is_error
    return r.structured_content


async def fetch(client, artifact: dict, chunk: int = 40_000) -> bytes:
    """Reassemble an artifact from ranged resources/read calls."""
    data = bytearray()
    while len(data) < artifact["size"]:
        length = min(chunk, artifact["size"] - len(data))
        r = await client.read_resource(f"{artifact['uri']}?offset={len(data)}&length={length}")
        (c,) = r.contents
        assert c.mime_type == artifact["mime_type"] and c.meta["offset"] == len(data)
        data += base64.b64decode(c.blob)
    assert hashlib.sha256(data).hexdigest() == artifact["sha256"]
    return bytes(data)


async def test_a_windowed_session_captures_a_screenshot_and_a_recording(
    game_connect: Connect, engine: Engine
):
    with anyio.fail_after(120):
        async with game_connect() as c:
            godot = (await ok(c, "server.profile"))["godot"]
            assert godot["major"] == engine.major
            assert godot["version"].startswith(engine.version)
            session = (await ok(c, "runtime.session.start"))["session"]
            assert (session["mode"], session["state"]) == ("windowed", "running")
            shot_answer = await c.call_tool(
                "runtime.screenshot.capture", {"session_id": session["id"]}
            )
            shot = shot_answer.structured_content["artifact"]
            links = [b for b in shot_answer.content if b.type == "resource_link"]
            assert [(b.uri, b.mime_type, b.size) for b in links] == [
                (shot["uri"], "image/png", shot["size"])
            ]
            png = await fetch(c, shot)
            image = Image.open(io.BytesIO(png))
            assert image.format == "PNG" and image.size == (shot["width"], shot["height"])
            assert shot["frames"] == 1 and shot["mime_type"] == "image/png"
            extrema = image.convert("RGB").getextrema()
            assert any(lo != hi for lo, hi in extrema), "the screenshot is uniform"

            rec = (
                await ok(
                    c,
                    "runtime.recording.capture",
                    {"session_id": session["id"], "frames": 6, "fps": 10},
                )
            )["artifact"]
            assert (rec["mime_type"], rec["frames"]) == ("image/apng", 6)
            apng = Image.open(io.BytesIO(await fetch(c, rec)))
            assert apng.is_animated and apng.n_frames == 6
            assert apng.size == (rec["width"], rec["height"])
            frames = []
            for i in range(apng.n_frames):
                apng.seek(i)
                assert apng.info.get("duration") == 100
                frames.append(apng.convert("RGB").copy())
            diff = ImageChops.difference(frames[0], frames[-1])
            assert sum(ImageStat.Stat(diff).sum) > 0, "the recording does not move"

            listed = [s["id"] for s in (await ok(c, "runtime.session.list"))["sessions"]]
            assert listed == [session["id"]]
            stopped = await ok(c, "runtime.session.stop", {"session_id": session["id"]})
            assert stopped["state"] == "stopped"


async def test_a_headless_session_answers_unavailable_at_once(game_connect: Connect):
    with anyio.fail_after(60):
        async with game_connect() as c:
            before = (await c.list_resources()).resources
            session = (await ok(c, "runtime.session.start", {"mode": "headless"}))["session"]
            for tool, args in (
                ("runtime.screenshot.capture", {}),
                ("runtime.recording.capture", {"frames": 3, "fps": 5}),
            ):
                t = time.monotonic()
                r = await c.call_tool(tool, {"session_id": session["id"], **args})
                assert r.is_error and r.structured_content["outcome"] == "unavailable"
                assert time.monotonic() - t < 5
            assert (await c.list_resources()).resources == before
            await ok(c, "runtime.session.stop", {"session_id": session["id"]})


async def test_bad_requests_get_typed_outcomes(game_connect: Connect):
    with anyio.fail_after(60):
        async with game_connect() as c:
            cases = [
                (
                    "runtime.session.start",
                    {"scene": "res://../etc/passwd.tscn"},
                    "invalid_argument",
                ),
                ("runtime.session.start", {"mode": "fullscreen"}, "invalid_argument"),
                ("runtime.session.start", {"scene": "res://missing.tscn"}, "failed"),
                ("runtime.screenshot.capture", {"session_id": "A" * 22}, "not_found"),
                (
                    "runtime.recording.capture",
                    {"session_id": "A" * 22, "frames": 1},
                    "invalid_argument",
                ),
                (
                    "runtime.recording.capture",
                    {"session_id": "A" * 22, "frames": 300, "fps": 5},
                    "invalid_argument",
                ),
            ]
            for tool, args, outcome in cases:
                r = await c.call_tool(tool, args)
                assert r.structured_content["outcome"] == outcome, (tool, args, r)
                assert "/tmp" not in r.structured_content["message"]


async def test_another_callers_session_is_refused(game_env):
    with anyio.fail_after(60):
        async with game_env.connect("http", "alice") as a:
            sid = (await ok(a, "runtime.session.start"))["session"]["id"]
            async with game_env.connect("http", "bob") as b:
                r = await b.call_tool("runtime.screenshot.capture", {"session_id": sid})
                unknown = await b.call_tool("runtime.screenshot.capture", {"session_id": "A" * 22})
                assert r.structured_content == unknown.structured_content  # reveals nothing
                assert r.structured_content["outcome"] == "not_found"
                assert (await ok(b, "runtime.session.list"))["sessions"] == []
            async with game_env.connect("http", "alice") as a2:  # same token, other session
                r = await a2.call_tool("runtime.session.stop", {"session_id": sid})
                assert r.structured_content["outcome"] == "not_found"
            await ok(a, "runtime.session.stop", {"session_id": sid})


async def test_sessions_leave_the_project_byte_for_byte_unchanged(tmp_path):
    require_godot("godot3", "Xvfb")
    project = copy_demo(tmp_path / "demo")
    before = tree_digest(project)
    with anyio.fail_after(120):
        async with stdio_client(project, tmp_path / "state") as c:
            for mode in ("windowed", "headless"):
                sid = (await ok(c, "runtime.session.start", {"mode": mode}))["session"]["id"]
                if mode == "windowed":
                    await ok(c, "runtime.screenshot.capture", {"session_id": sid})
                await ok(c, "runtime.session.stop", {"session_id": sid})
    assert tree_digest(project) == before


async def test_a_capture_over_the_budget_is_too_large_and_keeps_nothing(tmp_path):
    require_godot("godot3", "Xvfb")
    project = copy_demo(tmp_path / "demo")
    with anyio.fail_after(120):
        async with stdio_client(project, tmp_path / "state", "--store-budget-bytes", "2000") as c:
            sid = (await ok(c, "runtime.session.start"))["session"]["id"]
            for tool, args in (
                ("runtime.screenshot.capture", {}),
                ("runtime.recording.capture", {"frames": 2, "fps": 10}),
            ):
                r = await c.call_tool(tool, {"session_id": sid, **args})
                assert r.structured_content["outcome"] == "too_large", r.structured_content
            assert (await c.list_resources()).resources == []
            await ok(c, "runtime.session.stop", {"session_id": sid})
    blobs = [p for p in (tmp_path / "state" / "blobs").rglob("*") if p.is_file()]
    assert blobs == []
    assert [p for p in (tmp_path / "state" / "scratch").rglob("*") if p.is_file()] == []


async def test_concurrent_starts_never_run_more_than_four_games(tmp_path):
    require_godot("godot3-server")
    project = copy_demo(tmp_path / "demo")
    outcomes: list[str] = []
    with anyio.fail_after(120):
        async with stdio_client(project, tmp_path / "state") as c:

            async def start() -> None:
                r = await c.call_tool("runtime.session.start", {"mode": "headless"})
                outcomes.append(r.structured_content["outcome"])

            async with anyio.create_task_group() as tg:
                for _ in range(8):
                    tg.start_soon(start)
            sessions = (await ok(c, "runtime.session.list"))["sessions"]
            for s in sessions:
                await ok(c, "runtime.session.stop", {"session_id": s["id"]})
    assert outcomes.count("ok") == 4 == len(sessions)
    assert outcomes.count("unavailable") == 4

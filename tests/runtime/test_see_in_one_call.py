"""§9 on a real game over both transports: previews the model sees, contact sheets,
sessions with their own arguments, and the engine's performance monitors."""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from PIL import Image, ImageChops, ImageStat

from godot_mcp.features.game.preview import GAP_PX, LABEL_PX, sheet_frames, sheet_layout
from tests.mcp.conftest import Connect, transport_factory
from tests.runtime.test_captures import fetch, ok
from tests.support.engines import Engine
from tests.support.servers import ServedProject, serve_project, stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]

PROBE = """extends Node

func _ready():
	var args = []
	if OS.has_method("get_cmdline_user_args"):
		args = OS.call("get_cmdline_user_args")
	else:
		args = OS.get_cmdline_args()
	var out = ""
	var lengths = ""
	for a in args:
		out += "<" + a + ">"
		lengths += "<" + str(a.length()) + ">"
	print("GAME_ARGS " + out)
	print("GAME_ARG_LENGTHS " + lengths)
"""


@pytest.fixture(scope="module")
def probe_env(tmp_path_factory: pytest.TempPathFactory, engine: Engine) -> Iterator[ServedProject]:
    """The demo, with a scene that prints the arguments the game was given."""
    base = tmp_path_factory.mktemp(f"see-{engine.name}")
    project = engine.copy_demo(base / "demo")
    (project / "args_probe.gd").write_text(PROBE)
    (project / "args_probe.tscn").write_text(engine.scene("args_probe.gd", "Node"))
    served = serve_project(project, base / "state", "--max-game-sessions", "3")
    yield served
    served.http.stop()


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest, probe_env: ServedProject) -> Connect:
    return transport_factory(request.param, probe_env)


def _image_blocks(answer) -> list[Image.Image]:
    blocks = [b for b in answer.content if b.type == "image"]
    assert all(b.mime_type == "image/png" for b in blocks)
    return [Image.open(io.BytesIO(base64.b64decode(b.data))) for b in blocks]


def _mean_diff(a: Image.Image, b: Image.Image) -> float:
    stat = ImageStat.Stat(ImageChops.difference(a.convert("RGB"), b.convert("RGB")))
    return sum(stat.mean) / 3


async def test_a_screenshot_answers_a_preview_of_the_same_frame(connect: Connect):
    with anyio.fail_after(120):
        async with connect() as c:
            sid = (await ok(c, "runtime.session.start"))["session"]["id"]
            await ok(c, "runtime.time.control", {"session_id": sid, "action": "pause"})
            answer = await c.call_tool("runtime_screenshot_capture", {"session_id": sid})
            shot = answer.structured_content["artifact"]
            (preview,) = _image_blocks(answer)
            full = Image.open(io.BytesIO(await fetch(c, shot))).convert("RGB")
            scale = 640 / max(full.size)
            want = (round(full.width * scale), round(full.height * scale))
            assert preview.size == want
            assert answer.structured_content["preview"] == {"width": want[0], "height": want[1]}
            # The preview is the artifact's frame, downscaled (an independent resize agrees).
            reference = full.resize(want, Image.Resampling.BOX)
            assert _mean_diff(preview, reference) < 2.0
            assert _mean_diff(preview, Image.new("RGB", want, (0, 0, 0))) > 10

            whole = await c.call_tool(
                "runtime_screenshot_capture", {"session_id": sid, "preview_px": 1280}
            )
            (same,) = _image_blocks(whole)
            assert same.size == full.size  # never scaled up; paused: the very same frame
            assert ImageChops.difference(same.convert("RGB"), full).getbbox() is None

            bare = await c.call_tool(
                "runtime_screenshot_capture", {"session_id": sid, "preview_px": 0}
            )
            assert bare.structured_content["preview"] is None and _image_blocks(bare) == []
            assert [b.type for b in bare.content] == ["text", "resource_link"]
            for bad in (-1, 1281, "640"):
                r = await c.call_tool(
                    "runtime_screenshot_capture", {"session_id": sid, "preview_px": bad}
                )
                assert r.structured_content["outcome"] == "invalid_argument", bad
            await ok(c, "runtime.session.stop", {"session_id": sid})


async def test_a_recording_answers_a_contact_sheet_of_its_frames(connect: Connect):
    with anyio.fail_after(150):
        async with connect() as c:
            sid = (await ok(c, "runtime.session.start"))["session"]["id"]
            answer = await c.call_tool(
                "runtime_recording_capture", {"session_id": sid, "frames": 20, "fps": 10}
            )
            rec = answer.structured_content["artifact"]
            info = answer.structured_content["preview"]
            (sheet,) = _image_blocks(answer)
            assert info["frames"] == sheet_frames(20) and len(info["frames"]) == 16
            assert info["frames"][0] == 0 and info["frames"][-1] == 19
            assert info["columns"] == 4 and sheet.size == (info["width"], info["height"])
            assert sheet.width <= 1024

            apng = Image.open(io.BytesIO(await fetch(c, rec)))
            frames = []
            for i in range(apng.n_frames):
                apng.seek(i)
                frames.append(apng.convert("RGB").copy())
            cols = info["columns"]
            layout = sheet_layout(frames[0].size, 20, 1024)
            assert layout is not None and (layout.cells, layout.columns) == (16, cols)
            assert sheet.size == layout.size
            cell_w, cell_h = layout.cell
            small = [f.resize((cell_w, cell_h), Image.Resampling.BOX) for f in frames]
            for n, index in enumerate(info["frames"]):
                x = (n % cols) * (cell_w + GAP_PX)
                y = (n // cols) * (cell_h + LABEL_PX + GAP_PX)
                cell = sheet.crop((x, y, x + cell_w, y + cell_h))
                diffs = [_mean_diff(cell, f) for f in small]
                assert diffs[index] < 2.0, (n, index, diffs[index])
                # In time order: the cell is closer to its own frame than to far-off ones.
                assert diffs[index] <= min(diffs) + 0.5, (n, index, diffs)
                label = sheet.crop((x, y + cell_h, x + cell_w, y + cell_h + LABEL_PX))
                assert label.convert("L").getextrema()[1] > 150, "the cell has no label"
            first = sheet.crop((0, 0, cell_w, cell_h))
            last_n = len(info["frames"]) - 1
            x, y = (
                (last_n % cols) * (cell_w + GAP_PX),
                (last_n // cols) * (cell_h + LABEL_PX + GAP_PX),
            )
            assert _mean_diff(first, sheet.crop((x, y, x + cell_w, y + cell_h))) > 1.0

            few = await c.call_tool(
                "runtime_recording_capture",
                {"session_id": sid, "frames": 3, "fps": 10, "preview_px": 300},
            )
            few_info = few.structured_content["preview"]
            (few_sheet,) = _image_blocks(few)
            assert few_info["frames"] == [0, 1, 2] and few_info["columns"] == 2
            assert few_sheet.width <= 300
            none = await c.call_tool(
                "runtime_recording_capture",
                {"session_id": sid, "frames": 2, "fps": 10, "preview_px": 0},
            )
            assert none.structured_content["preview"] is None and _image_blocks(none) == []
            await ok(c, "runtime.session.stop", {"session_id": sid})


async def test_a_tall_windows_contact_sheet_is_at_most_preview_px_on_its_long_edge(
    tmp_path: Path, engine: Engine
):
    """A 64x2048 window once gave a 262x8246 sheet: the whole sheet fits 1024 px, its
    cells in one row."""
    project = engine.copy_demo(tmp_path / "demo")
    config = (project / "project.godot").read_text()
    config = re.sub(r"(window/size/(?:viewport_)?width)=\d+", r"\1=64", config)
    config = re.sub(r"(window/size/(?:viewport_)?height)=\d+", r"\1=2048", config)
    (project / "project.godot").write_text(config)
    with anyio.fail_after(120):
        async with stdio_client(project, tmp_path / "state") as c:
            sid = (await ok(c, "runtime.session.start"))["session"]["id"]
            answer = await c.call_tool(
                "runtime_recording_capture", {"session_id": sid, "frames": 20, "fps": 30}
            )
            rec = answer.structured_content["artifact"]
            info = answer.structured_content["preview"]
            (sheet,) = _image_blocks(answer)
            await ok(c, "runtime.session.stop", {"session_id": sid})
    assert (rec["width"], rec["height"]) == (64, 2048)
    assert sheet.size == (info["width"], info["height"]) and max(sheet.size) <= 1024
    layout = sheet_layout((64, 2048), 20, 1024)
    assert layout is not None and sheet.size == layout.size == (526, 1024)
    assert (info["columns"], info["frames"]) == (16, sheet_frames(20))


async def _game_args(c, sid: str) -> list[str]:
    """The arguments the probe scene printed, from the session's log."""
    with anyio.fail_after(20):
        while True:
            page = await ok(c, "runtime.log.read", {"session_id": sid, "max_lines": 500})
            for line in page["lines"]:
                if line["text"].startswith("GAME_ARGS "):
                    text = line["text"].removeprefix("GAME_ARGS ")
                    return text.removeprefix("<").removesuffix(">").split("><") if text else []
            await anyio.sleep(0.2)


async def test_sessions_side_by_side_each_with_its_own_args(connect: Connect, engine: Engine):
    server_args = ["--role=server", "--port=7000", "two words", "ünïcode", ""]
    client_args = ["--role=client", "--name=bob"]
    with anyio.fail_after(120):
        async with connect() as c:
            scene = "res://args_probe.tscn"
            a = await ok(c, "runtime.session.start", {"scene": scene, "args": server_args})
            b = await ok(c, "runtime.session.start", {"scene": scene, "args": client_args})
            ids = [a["session"]["id"], b["session"]["id"]]
            listed = (await ok(c, "runtime.session.list"))["sessions"]
            assert [(s["id"], s["state"]) for s in listed] == [(i, "running") for i in ids]
            got_a, got_b = await _game_args(c, ids[0]), await _game_args(c, ids[1])
            assert got_a[-len(server_args) :] == server_args
            assert got_b[-len(client_args) :] == client_args
            if engine.major >= 4:  # after --, the game's arguments and nothing else
                assert got_a == server_args and got_b == client_args
            # Godot 4 keeps an engine option after -- for the game; Godot 3 would read it.
            engine_opt = await c.call_tool(
                "runtime_session_start", {"scene": scene, "args": ["--path", "/tmp"]}
            )
            if engine.major >= 4:
                sid = engine_opt.structured_content["session"]["id"]
                assert (await _game_args(c, sid))[-2:] == ["--path", "/tmp"]
                ids.append(sid)
            else:
                assert engine_opt.structured_content == {
                    "outcome": "invalid_argument",
                    "message": "args[0] '--path' is an option Godot 3 reads itself, even after "
                    "--; spell it another way (e.g. with =value)",
                }
            for sid in ids:
                await ok(c, "runtime.session.stop", {"session_id": sid})


async def test_bad_args_are_refused_by_name(connect: Connect):
    cases = [
        (["ok", "a\0b"], "args[1] holds a NUL character"),
        ([str(i) for i in range(33)], "args must hold 0 to 32 items"),
        (["x" * 257], "args[0] is 257 characters; at most 256"),
        (
            [" x"],
            "args[0] begins or ends with a space or control character, which the engine "
            "would strip before the game sees it",
        ),
        ([1], "args[0] must be a string"),
        ("--role=server", "args must be a list"),
    ]
    with anyio.fail_after(60):
        async with connect() as c:
            for args, message in cases:
                r = await c.call_tool("runtime_session_start", {"args": args})
                assert r.structured_content == {
                    "outcome": "invalid_argument",
                    "message": message,
                }, args
            assert (await ok(c, "runtime.session.list"))["sessions"] == []


async def test_perf_reads_the_engine_monitors(connect: Connect):
    with anyio.fail_after(120):
        async with connect() as c:
            for mode in ("windowed", "headless"):
                sid = (await ok(c, "runtime.session.start", {"mode": mode}))["session"]["id"]
                first = await ok(c, "runtime.perf.read", {"session_id": sid})
                await ok(c, "runtime.wait", {"session_id": sid, "until": {"frames": 5}})
                second = await ok(c, "runtime.perf.read", {"session_id": sid})
                assert second["frame"] >= first["frame"] + 5
                await ok(c, "runtime.time.control", {"session_id": sid, "action": "pause"})
                perf = await ok(c, "runtime.perf.read", {"session_id": sid})
                tree = await ok(
                    c,
                    "runtime.scene.tree",
                    {"session_id": sid, "depth": 64, "max_nodes": 5000},
                )
                assert perf["nodes"] == tree["total"] > 1
                assert perf["objects"] > perf["nodes"] and perf["orphan_nodes"] >= 0
                assert perf["memory_static_bytes"] > 0
                assert perf["fps"] is None or perf["fps"] > 0  # null until 0.5 s of frames
                assert perf["frame_ms"] >= 0 and perf["physics_ms"] >= 0
                if mode == "headless":
                    assert perf["draw_calls"] is None
                else:
                    assert isinstance(perf["draw_calls"], int) and perf["draw_calls"] > 0
                await ok(c, "runtime.session.stop", {"session_id": sid})
            r = await c.call_tool("runtime_perf_read", {"session_id": "0" * 26})
            assert r.structured_content["outcome"] == "not_found"

"""A hostile project answers the bridge's capture command itself, on a real game over HTTP: a
FIFO left at the capture path, and a decompression bomb (an all-black 12000x12000 PNG of
0.4 MB) answered as the frame. The server refuses both, typed, and keeps answering everyone.

The project's autoload reads the server's commands off the bridge's own connection before the
bridge does (a script's members are open to every script of the game), plants its file at the
paths a capture command names, answers it with its own frame report, and hands every other
command on to the bridge."""

from __future__ import annotations

import struct
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from godot_mcp.features.game.files import NOT_REGULAR, TOO_MANY_PIXELS
from tests.runtime.test_captures import ok
from tests.support.engines import Engine
from tests.support.interceptor import interceptor
from tests.support.servers import ServedProject, serve_project

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]

BOMB_SIDE = 12000

# Both answer each capture command themselves, as the mode file says, and hand every other
# command on to the bridge (tests/support/interceptor.py).
TAKES = (
    'typeof(cmd) == TYPE_DICTIONARY and cmd.get("cmd") in ["screenshot", "record"] \\\n'
    '\t\t\t\tand mode != "none"'
)
MODE4 = '\t\tvar mode = FileAccess.get_file_as_string("res://mode.txt").strip_edges()\n'
MODE3 = (
    "\t\tvar f = File.new()\n"
    '\t\tf.open("res://mode.txt", File.READ)\n'
    "\t\tvar mode = f.get_as_text().strip_edges()\n"
    "\t\tf.close()\n"
)
HOSTILE4 = (
    interceptor(4, TAKES, "_answer(tree, cmd, mode)", MODE4)
    + """
func _answer(tree, cmd, mode):
	var paths = [cmd.get("path")] if cmd.get("cmd") == "screenshot" else cmd.get("paths")
	var side = 64
	for p in paths:
		if mode == "fifo":
			DirAccess.remove_absolute(p)
			OS.execute("mkfifo", [p])
		else:
			side = BOMB_SIDE
			var f = FileAccess.open(p, FileAccess.WRITE)
			f.store_buffer(FileAccess.get_file_as_bytes("res://bomb.bin"))
			f.close()
	var frames = []
	for p in paths:
		frames.append({"width": side, "height": side, "grab_ms": 1, "save_ms": 1})
	tree.call("_send", {"id": int(cmd.get("id")), "ok": true, "frames": frames})
"""
)

HOSTILE3 = (
    interceptor(3, TAKES, "_answer(tree, cmd, mode)", MODE3)
    + """
func _answer(tree, cmd, mode):
	var paths = [cmd.get("path")] if cmd.get("cmd") == "screenshot" else cmd.get("paths")
	var side = 64
	for p in paths:
		if mode == "fifo":
			Directory.new().remove(p)
			OS.execute("mkfifo", [p], true)
		else:
			side = BOMB_SIDE
			var src = File.new()
			src.open("res://bomb.bin", File.READ)
			var bomb = src.get_buffer(src.get_len())
			src.close()
			var out = File.new()
			out.open(p, File.WRITE)
			out.store_buffer(bomb)
			out.close()
	var frames = []
	for p in paths:
		frames.append({"width": side, "height": side, "grab_ms": 1, "save_ms": 1})
	tree.call("_send", {"id": int(cmd.get("id")), "ok": true, "frames": frames})
"""
)


def chunk(kind: bytes, data: bytes) -> bytes:
    crc = struct.pack(">I", zlib.crc32(kind + data))
    return struct.pack(">I", len(data)) + kind + data + crc


def black_png(side: int) -> bytes:
    """An all-black ``side`` x ``side`` 8-bit RGB PNG, compressed as far as zlib goes."""
    pack = zlib.compressobj(9)
    row = bytes(1 + 3 * side)  # filter byte 0, then black pixels
    idat = b"".join(pack.compress(row) for _ in range(side)) + pack.flush()

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    )


@pytest.fixture(scope="module")
def hostile_env(
    tmp_path_factory: pytest.TempPathFactory, engine: Engine
) -> Iterator[ServedProject]:
    """The demo with the hostile autoload, served over HTTP (alice and bob)."""
    base = tmp_path_factory.mktemp(f"hostile-captures-{engine.name}")
    project = engine.copy_demo(base / "demo")
    script = HOSTILE4 if engine.major >= 4 else HOSTILE3
    (project / "hostile.gd").write_text(script.replace("BOMB_SIDE", str(BOMB_SIDE)))
    (project / "bomb.bin").write_bytes(black_png(BOMB_SIDE))
    (project / "mode.txt").write_text("none\n")
    with open(project / "project.godot", "a") as settings:
        settings.write('\n[autoload]\n\nHostile="*res://hostile.gd"\n')
    served = serve_project(project, base / "state")
    yield served
    served.http.stop()


def peak_rss(pid: int) -> int:
    """The process's peak resident set so far, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


async def test_a_fifo_answered_as_a_capture_is_refused_and_nobody_waits(
    hostile_env: ServedProject,
):
    """Once, the server opened the FIFO on its event loop and stopped answering everyone."""
    (hostile_env.project / "mode.txt").write_text("fifo\n")
    answers: dict[str, object] = {}
    with anyio.fail_after(90):
        async with (
            hostile_env.connect("http", "alice") as a,
            hostile_env.connect("http", "bob") as b,
        ):
            sid = (await ok(a, "runtime.session.start"))["session"]["id"]

            async def shoot(tool: str, args: dict) -> None:
                started = time.monotonic()
                r = await a.call_tool(tool, {"session_id": sid, **args})
                answers[tool] = (r.structured_content, time.monotonic() - started)

            async def others() -> None:
                for _ in range(10):  # another caller, answered all along
                    with anyio.fail_after(5):
                        await ok(b, "server.profile")
                    await anyio.sleep(0.1)
                answers["others"] = True

            async with anyio.create_task_group() as group:
                group.start_soon(others)
                group.start_soon(shoot, "runtime_screenshot_capture", {})
            async with anyio.create_task_group() as group:
                group.start_soon(others)
                group.start_soon(shoot, "runtime_recording_capture", {"frames": 3, "fps": 10})
            assert answers["others"] is True
            for tool in ("runtime_screenshot_capture", "runtime_recording_capture"):
                content, took = answers[tool]
                assert content == {"outcome": "failed", "message": NOT_REGULAR}, tool
                assert took < 10, tool
            # The game goes on and its ordinary calls are answered.
            await ok(a, "runtime.scene.tree", {"session_id": sid, "depth": 1})
            await ok(a, "runtime.session.stop", {"session_id": sid})


async def test_a_decompression_bomb_answered_as_a_capture_is_refused_undecoded(
    hostile_env: ServedProject,
):
    """Once, one preview of it added 561 MiB to the server's resident set."""
    (hostile_env.project / "mode.txt").write_text("bomb\n")
    server = hostile_env.http.process.pid
    message = TOO_MANY_PIXELS.format(width=BOMB_SIDE, height=BOMB_SIDE, side=8192)
    with anyio.fail_after(90):
        async with hostile_env.connect("http", "alice") as a:
            sid = (await ok(a, "runtime.session.start"))["session"]["id"]
            before = peak_rss(server)
            shot = await a.call_tool(
                "runtime_screenshot_capture", {"session_id": sid, "preview_px": 640}
            )
            rec = await a.call_tool(
                "runtime_recording_capture",
                {"session_id": sid, "frames": 2, "fps": 10, "preview_px": 640},
            )
            grew = peak_rss(server) - before
            assert shot.structured_content == {"outcome": "failed", "message": message}
            assert rec.structured_content == {"outcome": "failed", "message": message}
            assert grew < 64 << 20, f"the server's peak RSS grew by {grew >> 20} MiB"
            await ok(a, "runtime.session.stop", {"session_id": sid})

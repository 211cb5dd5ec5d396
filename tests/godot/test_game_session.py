"""Game sessions against a real Godot (3.2 and 4.6) under a real (private) Xvfb: no mocks."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import itertools
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from PIL import Image, ImageChops, ImageSequence

from godot_mcp.engine.process.locate import (
    GodotInstall,
    headless_availability,
    locate_godot,
    windowed_availability,
)
from godot_mcp.features.game.bridge import BridgeListener
from godot_mcp.features.game.errors import (
    GameError,
    GameFailed,
    GameInvalid,
    GameTimeout,
    GameUnavailable,
)
from godot_mcp.features.game.runner import GameRunner
from tests.support.engines import Engine
from tests.support.trees import tree_digest

pytestmark = [pytest.mark.godot, pytest.mark.anyio]

REPO = Path(__file__).resolve().parents[2]
SMALL = (320, 240)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    return tmp_path / "scratch"


@pytest.fixture
async def runner(godot_install: GodotInstall, scratch: Path) -> AsyncIterator[GameRunner]:
    runner = GameRunner(godot_install, scratch)
    try:
        yield runner
    finally:
        with anyio.fail_after(15):
            await runner.aclose()


def live_group_members(pgid: int) -> list[int]:
    """Pids (not zombies) whose process group is ``pgid``."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        if fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def is_alive(pid: int) -> bool:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return raw[raw.rindex(")") + 2 :].split()[0] not in ("Z", "X")


async def wait_until(predicate, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.05)


def write_scene(engine: Engine, project: Path, name: str, script: str) -> str:
    (project / f"{name}.gd").write_text(script)
    (project / f"{name}.tscn").write_text(engine.scene(f"{name}.gd"))
    return f"res://{name}.tscn"


def fake_game(tmp_path: Path, body: str) -> str:
    """An executable that stands in for Godot and never runs the bridge."""
    path = tmp_path / "fake-godot"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


def test_locate_finds_the_engine_and_its_headless_build_and_reads_their_versions(
    godot_install: GodotInstall, engine: Engine, tmp_path: Path
) -> None:
    # A PATH holding this engine's binaries alone: the root Godot 3.6 runs in holds Godot 4
    # too, which the whole PATH would give first.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in {engine.windowed, engine.headless, "Xvfb"}:
        found_at = shutil.which(name)
        assert found_at, name
        (bin_dir / name).symlink_to(found_at)
    found = locate_godot(env={"PATH": str(bin_dir)})
    assert found.major == engine.major and found.version
    assert found.version.startswith(engine.version)
    # Godot 3 runs headless as its server build, Godot 4 as itself with --headless.
    assert found.headless and found.headless.endswith("/" + engine.headless)
    assert found.headless_version == found.version
    assert found.display is None and found.xvfb
    assert str(windowed_availability(found)) == "available"
    assert str(headless_availability(found)) == "available"


def test_availability_says_why_when_nothing_is_installed(tmp_path: Path) -> None:
    nothing = locate_godot(env={"PATH": str(tmp_path)})
    assert (nothing.binary, nothing.headless, nothing.xvfb) == (None, None, None)
    assert str(windowed_availability(nothing)).startswith("unavailable: no Godot binary found")
    assert str(headless_availability(nothing)).startswith("unavailable: no headless Godot found")
    no_display = dataclasses.replace(nothing, binary="/x/godot3", version="3.2.3")
    assert str(windowed_availability(no_display)) == "unavailable: no DISPLAY and no Xvfb installed"


async def test_a_windowed_screenshot_is_a_png_of_the_reported_size_with_varied_pixels(
    runner: GameRunner, demo_project: Path
) -> None:
    with anyio.fail_after(30):
        session = await runner.start(demo_project, size=SMALL)
        assert (session.mode, session.state) == ("windowed", "running")
        shot = await session.screenshot()
        assert shot.media_type == "image/png"
        assert (shot.width, shot.height, shot.frames) == (*SMALL, 1)
        assert shot.engine_ms > 0
        data = shot.path.read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
        with Image.open(io.BytesIO(data)) as image:
            assert image.size == SMALL
            colours = image.convert("RGB").getcolors(maxcolors=1 << 16) or []
        assert len(colours) >= 4, "the scene draws several colours"
        assert max(count for count, _ in colours) < 0.9 * SMALL[0] * SMALL[1]
        assert await session.stop() == 0
        assert session.state == "stopped"
        await wait_until(lambda: live_group_members(session.pid) == [], timeout=5)


async def test_a_recording_is_an_apng_whose_frames_differ_because_the_scene_moves(
    runner: GameRunner, demo_project: Path, scratch: Path
) -> None:
    with anyio.fail_after(40):
        session = await runner.start(demo_project, size=SMALL)
        rec = await session.record(frames=6, fps=10)
    assert (rec.media_type, rec.width, rec.height, rec.frames) == ("image/apng", *SMALL, 6)
    with Image.open(rec.path) as anim:
        assert anim.format == "PNG"
        assert anim.is_animated and anim.n_frames == 6
        assert anim.info.get("loop") == 0
        frames, durations = [], []
        for frame in ImageSequence.Iterator(anim):
            durations.append(frame.info.get("duration"))
            frames.append(frame.convert("RGB"))
    assert durations == [100.0] * 6
    assert all(f.size == SMALL for f in frames)
    for before, after in itertools.pairwise(frames):
        assert ImageChops.difference(before, after).getbbox() is not None
    leftovers = [p.name for p in scratch.iterdir() if p.name.startswith("rec-") and p != rec.path]
    assert leftovers == []


async def test_sessions_leave_the_project_byte_for_byte_unchanged(
    runner: GameRunner, demo_project: Path
) -> None:
    before = tree_digest(demo_project)
    with anyio.fail_after(40):
        windowed = await runner.start(demo_project, size=SMALL)
        await windowed.screenshot()
        await windowed.record(frames=2, fps=30)
        headless = await runner.start(demo_project, mode="headless")
        await windowed.stop()
        await headless.stop()
    assert tree_digest(demo_project) == before


async def test_a_headless_session_refuses_both_captures_at_once(
    runner: GameRunner, demo_project: Path
) -> None:
    with anyio.fail_after(20):
        session = await runner.start(demo_project, mode="headless")
        assert session.mode == "headless" and session.headless
        started = time.monotonic()
        for capture in (session.screenshot(), session.record(frames=2, fps=10)):
            with pytest.raises(GameError) as caught:
                await capture
            assert isinstance(caught.value, GameUnavailable)
        assert time.monotonic() - started < 0.5
        assert session.state == "running"
        await session.stop()


async def test_a_game_that_exits_before_connecting_fails_with_its_exit_code(
    godot_install: GodotInstall, scratch: Path, demo_project: Path, tmp_path: Path
) -> None:
    fake = fake_game(tmp_path, "echo 'no bridge here' >&2; exit 7")
    runner = GameRunner(dataclasses.replace(godot_install, headless=fake), scratch)
    try:
        with anyio.fail_after(10):
            with pytest.raises(GameError) as caught:
                await runner.start(demo_project, mode="headless")
    finally:
        await runner.aclose()
    assert isinstance(caught.value, GameFailed)
    assert "game exited with code 7 before connecting back" in caught.value.message
    assert "no bridge here" in caught.value.message
    assert str(tmp_path) not in caught.value.message
    assert runner.sessions == []


async def test_a_game_that_never_connects_back_times_out_and_is_killed(
    godot_install: GodotInstall, scratch: Path, demo_project: Path, tmp_path: Path
) -> None:
    fake = fake_game(tmp_path, 'echo "pid $$"; sleep 60')
    runner = GameRunner(dataclasses.replace(godot_install, headless=fake), scratch)
    started = time.monotonic()
    try:
        with anyio.fail_after(10):
            with pytest.raises(GameError) as caught:
                await runner.start(demo_project, mode="headless", timeout=1.5)
    finally:
        await runner.aclose()
    assert isinstance(caught.value, GameTimeout)
    assert "did not connect back within 1.5 s" in caught.value.message
    assert time.monotonic() - started < 8
    # The game's own output, read from its pipe, is in the message.
    pid = int(caught.value.message.rsplit("pid ", 1)[1].split()[0])
    await wait_until(lambda: live_group_members(pid) == [], timeout=5)
    assert list(scratch.iterdir()) == []


async def test_a_game_whose_first_frame_comes_late_still_connects() -> None:
    """The bridge connects as the engine starts and says hello on its first frame, which a
    heavy first scene delays (real Godot 3 projects' default sky on software OpenGL: 5-12 s
    here): a connection silent for 7 s is still the game's, within the start's deadline."""
    listener = await BridgeListener.open()
    try:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                accepted: list[dict[str, object]] = []

                async def accept() -> None:
                    conn, hello = await listener.accept()
                    accepted.append(hello)
                    await conn.aclose()

                group.start_soon(accept)
                game = await anyio.connect_tcp("127.0.0.1", listener.port)
                await anyio.sleep(7)
                hello = {"type": "hello", "secret": listener.secret, "engine": "late"}
                await game.send(json.dumps(hello).encode() + b"\n")
                await wait_until(lambda: bool(accepted), timeout=5)
                await game.aclose()
    finally:
        await listener.aclose()
    assert accepted[0]["engine"] == "late" and listener.refused == 0


async def test_a_connection_without_the_secret_is_refused() -> None:
    listener = await BridgeListener.open()
    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                accepted: list[dict[str, object]] = []

                async def accept() -> None:
                    conn, hello = await listener.accept()
                    accepted.append(hello)
                    await conn.aclose()

                group.start_soon(accept)
                intruder = await anyio.connect_tcp("127.0.0.1", listener.port)
                await intruder.send(b'{"type":"hello","secret":"guess"}\n')
                with pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
                    await intruder.receive()
                await intruder.aclose()
                with socket.create_connection(("127.0.0.1", listener.port)) as game:
                    hello = {"type": "hello", "secret": listener.secret, "engine": "x"}
                    game.sendall(json.dumps(hello).encode() + b"\n")
                    await wait_until(lambda: bool(accepted))
    finally:
        await listener.aclose()
    assert accepted[0]["engine"] == "x"
    assert listener.refused == 1


@pytest.mark.parametrize(
    ("scene", "contents", "expected"),
    [
        ("res://missing.tscn", None, "does not exist"),
        ("res://broken.tscn", "this is not a scene\n[[[", "failed to load"),
    ],
)
async def test_a_scene_that_fails_to_load_is_reported_not_hung(
    runner: GameRunner, demo_project: Path, scene: str, contents: str | None, expected: str
) -> None:
    if contents is not None:
        (demo_project / scene.removeprefix("res://")).write_text(contents)
    with anyio.fail_after(20):
        with pytest.raises(GameError) as caught:
            await runner.start(demo_project, mode="headless", scene=scene)
    assert isinstance(caught.value, GameFailed)
    assert expected in caught.value.message and scene in caught.value.message
    # Only the engine's errors explain a failed load, never its start-up lines.
    for noise in ("Godot Engine", "OpenGL", "V-Sync", "Vulkan", "Using Device"):
        assert noise not in caught.value.message, caught.value.message
    if contents is None:
        assert caught.value.message.startswith(f"scene {scene} does not exist"), caught.value
    assert runner.sessions == []


async def test_a_failed_start_carries_the_engines_lines_every_time(
    runner: GameRunner, demo_project: Path, engine: Engine
) -> None:
    """The reason is read once the engine's lines are in the log (the bridge marks its
    stderr), never before the pipe reader has caught up: six starts, six explanations."""
    (demo_project / "broken_ref.tscn").write_text("this is not a scene\n[[[")
    for _ in range(6):
        with anyio.fail_after(30), pytest.raises(GameFailed) as caught:
            await runner.start(demo_project, mode="headless", scene="res://broken_ref.tscn")
        message = caught.value.message
        assert message.startswith("scene res://broken_ref.tscn failed to load"), message
        assert "ERROR: " in message, message  # the engine's own lines
    assert runner.sessions == []


async def test_a_game_that_quits_by_itself_is_reported_with_its_exit_code(
    runner: GameRunner, demo_project: Path, engine: Engine
) -> None:
    wait = {
        3: "\tyield(get_tree().create_timer(0.3), 'timeout')\n",
        4: "\tawait get_tree().create_timer(0.3).timeout\n",
    }[engine.major]
    scene = write_scene(
        engine,
        demo_project,
        "quitter",
        "extends Node2D\n\nfunc _ready():\n\tprint('quitting now')\n"
        + wait
        + "\tget_tree().quit(3)\n",
    )
    with anyio.fail_after(20):
        session = await runner.start(demo_project, scene=scene, size=SMALL)
        await wait_until(lambda: session.poll() == "exited")
        with pytest.raises(GameError) as caught:
            await session.screenshot()
    assert session.exit_code == 3
    assert isinstance(caught.value, GameFailed)
    assert caught.value.message.startswith("game exited with code 3: ")
    assert "quitting now" in caught.value.message
    assert "quitting now" in session.log_tail()


async def test_a_capture_of_a_game_that_dies_meanwhile_fails_without_hanging(
    runner: GameRunner, demo_project: Path
) -> None:
    with anyio.fail_after(30):
        session = await runner.start(demo_project, size=SMALL)
        async with anyio.create_task_group() as group:
            errors: list[GameError] = []

            async def record() -> None:
                try:
                    await session.record(frames=60, fps=10)
                except GameError as exc:
                    errors.append(exc)

            group.start_soon(record)
            await anyio.sleep(0.5)
            os.kill(session.pid, signal.SIGKILL)
    assert errors and isinstance(errors[0], GameFailed)
    assert errors[0].message.startswith("game exited with code -9")
    assert session.state == "exited"


@pytest.mark.parametrize(
    ("frames", "fps"), [(1, 10), (301, 60), (10, 0), (10, 61), (100, 3), (True, 10)]
)
async def test_recording_arguments_out_of_range_are_invalid(
    runner: GameRunner, demo_project: Path, frames: int, fps: int
) -> None:
    with anyio.fail_after(20):
        session = await runner.start(demo_project, mode="headless")
        with pytest.raises(GameError) as caught:
            await session.record(frames=frames, fps=fps)
    assert isinstance(caught.value, GameInvalid)


@pytest.mark.parametrize(
    "scene",
    [
        "main.tscn",
        "/etc/passwd.tscn",
        "res://../outside.tscn",
        "res://sub/../../x.tscn",
        "res://main.gd",
        "user://main.tscn",
        "res://a\nb.tscn",
    ],
)
async def test_a_bad_scene_path_is_invalid_and_starts_nothing(
    runner: GameRunner, demo_project: Path, scene: str, scratch: Path
) -> None:
    with anyio.fail_after(5):
        with pytest.raises(GameError) as caught:
            await runner.start(demo_project, scene=scene)
    assert isinstance(caught.value, GameInvalid)
    assert runner.sessions == []
    assert not scratch.exists() or not list(scratch.glob("game-*.log"))


CRASH_CHILD = """
import json, sys
from pathlib import Path
import anyio
from godot_mcp.engine.process.locate import locate_godot
from godot_mcp.features.game.runner import GameRunner
import dataclasses

async def main():
    install = dataclasses.replace(locate_godot(), display=None)
    runner = GameRunner(install, Path(sys.argv[2]))
    session = await runner.start(Path(sys.argv[1]), size=(320, 240))
    print(json.dumps({"game": session.pid, "xvfb": runner.xvfb_pid}), flush=True)
    await anyio.sleep_forever()

anyio.run(main)
"""


def listening_x_sockets(pid: int) -> list[Path]:
    """The ``/tmp/.X11-unix/X<n>`` sockets process ``pid`` listens on."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    found = []
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[6] in inodes and fields[7].startswith("/tmp/.X11-unix/X"):
            found.append(Path(fields[7]))
    return found


def test_a_server_killed_with_sigkill_leaves_no_game_or_xvfb_behind(
    godot_install: GodotInstall, demo_project: Path, scratch: Path
) -> None:
    server = subprocess.Popen(
        [sys.executable, "-c", CRASH_CHILD, str(demo_project), str(scratch)],
        stdout=subprocess.PIPE,
        cwd=REPO,
        start_new_session=True,
    )
    try:
        assert server.stdout is not None
        ready, _, _ = select.select([server.stdout], [], [], 30)
        assert ready, "the child server never reported its game"
        pids = json.loads(server.stdout.readline())
        assert is_alive(pids["game"]) and is_alive(pids["xvfb"])
        sockets = listening_x_sockets(pids["xvfb"])
        assert sockets, "the private Xvfb listens on a unix socket"
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=5)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (is_alive(pids["game"]) or is_alive(pids["xvfb"])):
            time.sleep(0.05)
        assert not is_alive(pids["game"]) and not is_alive(pids["xvfb"])
        assert live_group_members(pids["game"]) == []
        assert live_group_members(pids["xvfb"]) == []
        for path in sockets:  # a SIGKILLed Xvfb cannot remove its socket
            path.unlink(missing_ok=True)
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=5)

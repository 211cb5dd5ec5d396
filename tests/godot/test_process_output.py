"""The one reader of a child's output, and the one short run (``GodotRun.probe``), on real
pipes and real processes."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from godot_mcp.engine.process.locate import read_version
from godot_mcp.engine.process.output import PipeLines
from godot_mcp.engine.process.run import GodotRun

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_lines_come_whole_plain_and_bounded() -> None:
    r, w = os.pipe()
    with open(r, "rb", buffering=0) as pipe:
        out = PipeLines(pipe, max_line=8)
        os.write(w, b"\x1b[1;31mERROR\x1b[0m: one\r\ntw")
        assert await out.next(1) == ["ERROR: o"]
        assert await out.next(0.05) is None  # nothing more came: the half line waits
        os.write(w, b"o\n" + b"x" * 40)
        # A line without end is cut at 4x the bytes (the rest of it dropped), then to 8.
        assert await out.next(1) == ["two", "x" * 8]
        os.write(w, b"tail")
        os.close(w)
        got = []
        while not out.ended:
            got += await out.next(1) or []
        assert got == ["tail"]
        assert await out.next(1) == []


def _program(folder: Path, body: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "engine"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_a_version_is_read_with_nothing_secret_in_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "hunter22-secret")
    monkeypatch.setenv("GODOT_MCP_DATABASE_URL", "postgresql://u:pw123456@h/db")
    seen = tmp_path / "env.txt"
    engine = _program(tmp_path, f'echo "4.6.3.stable.fake"; env | cut -d= -f1 > {seen}\n')
    assert read_version(engine) == "4.6.3.stable.fake"
    names = set(seen.read_text().split())
    assert names <= {"PATH", "LANG", "LC_ALL", "PWD", "SHLVL", "_"}, names  # no HOME either
    assert read_version(_program(tmp_path / "b", "echo no version here\n")) is None
    assert read_version(str(tmp_path / "missing")) is None


def test_a_probe_past_its_bound_is_killed_with_its_group(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    engine = _program(tmp_path, f"sleep 600 & echo $! > {marker}; wait\n")
    began = time.monotonic()
    probe = GodotRun(engine, [], tmp_path).probe(0.5)
    assert probe.code is None and time.monotonic() - began < 5
    pid = int(marker.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        if state == "Z":
            break
        time.sleep(0.02)
    alive = Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text()
    assert not alive, "the probe's child outlived it"


def test_a_log_that_fails_never_closes_the_pipe_under_the_game() -> None:
    """The game's output is read to its end whatever the log does with it: a reader that
    stopped would close the pipe, and the game would die of SIGPIPE at its next print."""
    from godot_mcp.features.game.log import GameLog
    from godot_mcp.features.game.running import _pump

    def broken(stream: str, text: str, seq: int) -> bool:
        raise RuntimeError("a fault in the log")

    r, w = os.pipe()
    pipe = open(r, "rb", buffering=0)  # noqa: SIM115 - the reader closes it
    reader = _pump(GameLog(take=broken), "stdout", pipe)
    for _ in range(2000):  # well past the pipe's buffer
        os.write(w, b"x" * 100 + b"\n")
    os.close(w)
    reader.join(10)
    assert not reader.is_alive()

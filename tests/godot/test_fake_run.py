"""GodotRun with a stand-in engine (a shell script in Godot's place): what a run's child
sees and how every run stops, tested without an engine. The real runs (games, exports,
checks) are tested on both engines in the rest of the suite."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import pytest

from godot_mcp.engine.process.run import CannotStart, GodotRun, stop_run, xdg_homes

pytestmark = pytest.mark.anyio

SERVER_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/someone",
    "LANG": "C.UTF-8",
    "DISPLAY": ":9",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMIK7MDENGbPxRfiCY",
    "GODOT_MCP_DATABASE_URL": "postgresql+psycopg://mcp:hunter2hunter2@db/store",
    "GITHUB_TOKEN": "ghp_0123456789abcdef",
    "SOME_TOOL_SETTING": "1",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _state(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return "gone"
    return stat.rpartition(")")[2].split()[0]


def _engine(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-godot"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return str(script)


async def test_a_game_run_sees_what_godot_needs_and_what_the_run_adds_only(tmp_path) -> None:
    out = tmp_path / "env.txt"
    engine = _engine(tmp_path, 'env > "$1"\necho "args: $*"\n')
    with open(tmp_path / "log", "wb") as log:
        run = GodotRun(
            engine,
            [str(out), "--path", "game"],
            tmp_path,
            base_env=SERVER_ENV,
            extra_env={"GODOT_MCP_BRIDGE_SECRET": "bridge", **xdg_homes(tmp_path / "xdg")},
            stdout=log,
        )
        child = run.start()
        with anyio.fail_after(20):
            assert await child.wait() == 0
    seen = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    seen.pop("PWD", None)  # the shell's own
    seen.pop("SHLVL", None)
    seen.pop("_", None)
    assert seen == {
        "PATH": "/usr/bin:/bin",
        "HOME": "/home/someone",
        "LANG": "C.UTF-8",
        "DISPLAY": ":9",
        "GODOT_MCP_BRIDGE_SECRET": "bridge",
        "XDG_CONFIG_HOME": f"{tmp_path}/xdg/config",
        "XDG_CACHE_HOME": f"{tmp_path}/xdg/cache",
        "XDG_DATA_HOME": f"{tmp_path}/xdg/data",
    }
    assert (tmp_path / "log").read_text() == f"args: {out} --path game\n"


async def test_stopping_a_run_ends_its_whole_process_group(tmp_path) -> None:
    pids = tmp_path / "pids"
    engine = _engine(tmp_path, f'sleep 300 &\necho $! > "{pids}"\nexec sleep 300\n')
    run = GodotRun(engine, [], tmp_path, base_env=SERVER_ENV)
    child = run.start()
    with anyio.fail_after(20):
        while not pids.exists() or not pids.read_text().strip():
            await anyio.sleep(0.01)
    grandchild = int(pids.read_text())
    assert os.getpgid(grandchild) == child.pid  # the run's own group
    with anyio.fail_after(20):
        await stop_run(child, grace=5)
    assert child.returncode == -9
    assert _state(grandchild) in ("gone", "Z")  # killed; a zombie is left to the machine's init
    await stop_run(None)  # a run that never started stops too


async def test_an_engine_that_cannot_be_executed_is_a_typed_refusal(tmp_path) -> None:
    for binary in (str(tmp_path / "missing"), str(tmp_path)):
        with pytest.raises(CannotStart, match=r"^cannot start Godot: "):
            GodotRun(binary, [], tmp_path, base_env=SERVER_ENV, stdout=subprocess.PIPE).start()

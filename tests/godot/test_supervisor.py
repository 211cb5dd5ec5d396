"""The one supervisor of a headless run, on real processes (a shell in the engine's place):
its time limit is the caller's error, its stop ends the whole group (a child that ignores
SIGTERM, a grandchild in its group), a cancelled caller still stops it and removes its
scratch, and nothing it started is left running or unreaped."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import anyio
import pytest

from godot_mcp.engine.process import procs
from godot_mcp.engine.process.run import GodotRun
from godot_mcp.engine.process.supervisor import Supervisor
from godot_mcp.errors import Failed, Timeout

pytestmark = pytest.mark.anyio

ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


class RunLate(Timeout):
    """A feature's own timeout, as the features pass theirs."""


class RunFailed(Failed):
    """A feature's own refusal of a run that cannot start."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _shell(tmp_path: Path, script: str, piped: bool = False) -> GodotRun:
    run = GodotRun("sh", ["-c", script], tmp_path, base_env=ENV)
    return GodotRun(run.binary, run.args, run.cwd, base_env=ENV, stdout=-1) if piped else run


def _state(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return "gone"
    return stat.rpartition(")")[2].split()[0]


async def _pid_in(path: Path) -> int:
    with anyio.fail_after(20):
        while not path.exists() or not path.read_text().strip():
            await anyio.sleep(0.01)
    return int(path.read_text())


def _nothing_left(leader: int, *others: int) -> None:
    assert not procs.group_running(leader)
    assert _state(leader) == "gone"  # reaped: no zombie of ours
    for pid in others:  # not ours to reap: killed, a zombie at most until init reaps it
        assert _state(pid) in ("gone", "Z")


async def test_past_its_time_limit_the_callers_error_is_raised_and_nothing_is_left(
    tmp_path: Path,
) -> None:
    pids = tmp_path / "pids"
    run = _shell(tmp_path, f'sleep 300 & echo $! > "{pids}"; exec sleep 300')
    supervisor = Supervisor(RunFailed)
    child = supervisor.start(run)
    grandchild = await _pid_in(pids)
    assert os.getpgid(grandchild) == child.pid  # the run's own group
    began = time.monotonic()
    with pytest.raises(RunLate, match=r"^too late$"):
        await supervisor.wait(0.5, lambda: RunLate("too late"))
    assert time.monotonic() - began < 10
    assert supervisor.returncode == -signal.SIGKILL  # no grace by default: killed at once
    _nothing_left(child.pid, grandchild)


async def test_a_child_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = f"trap '' TERM; sleep 300 & echo $! > \"{pids}\"; exec sleep 300"
    supervisor = Supervisor()
    child = supervisor.start(_shell(tmp_path, script))
    grandchild = await _pid_in(pids)
    began = time.monotonic()
    with anyio.fail_after(20):
        await supervisor.stop()
    assert time.monotonic() - began < 10
    assert child.returncode == -signal.SIGKILL
    _nothing_left(child.pid, grandchild)
    await supervisor.stop()  # stopped already: nothing more to do


async def test_a_run_that_ends_by_itself_gives_its_code_and_a_stop_after_is_harmless(
    tmp_path: Path,
) -> None:
    supervisor = Supervisor()
    child = supervisor.start(_shell(tmp_path, "exit 3"))
    with anyio.fail_after(20):
        assert await supervisor.wait(20, lambda: RunLate("never")) == 3
        await supervisor.stop()
    assert supervisor.returncode == 3
    _nothing_left(child.pid)
    await Supervisor().stop()  # a run that never started stops too


async def test_a_cancelled_caller_still_stops_the_run_and_removes_its_scratch(
    tmp_path: Path,
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "file").write_text("work")
    pids = tmp_path / "pids"
    run = _shell(tmp_path, f'sleep 300 & echo $! > "{pids}"; exec sleep 300')
    supervisor = Supervisor(cleanup=lambda: (scratch / "file").unlink() or scratch.rmdir())
    began = time.monotonic()
    with anyio.move_on_after(1) as scope:
        async with supervisor:
            child = supervisor.start(run)
            await supervisor.wait(300)
    assert scope.cancelled_caught and time.monotonic() - began < 10
    assert supervisor.returncode is not None
    _nothing_left(child.pid, await _pid_in(pids))
    assert not scratch.exists()


async def test_an_engine_that_cannot_be_executed_is_the_callers_refusal(tmp_path: Path) -> None:
    supervisor = Supervisor(RunFailed)
    missing = GodotRun(str(tmp_path / "missing"), [], tmp_path, base_env=ENV)
    with pytest.raises(RunFailed, match=r"^cannot start Godot: "):
        supervisor.start(missing)
    assert supervisor.child is None and supervisor.pid is None


async def test_a_watch_looks_until_the_run_is_done_or_its_time_is_up(tmp_path: Path) -> None:
    seen: list[int | None] = []

    async def look(code: int | None) -> bool:
        seen.append(code)
        return code is not None

    supervisor = Supervisor()
    supervisor.start(_shell(tmp_path, "sleep 0.3; exit 0"))
    with anyio.fail_after(20):
        assert await supervisor.watch(20, 0.05, look)
    assert seen[-1] == 0 and None in seen[:-1]  # looked while it ran, then at its exit

    seen.clear()
    child = supervisor.start(_shell(tmp_path, "exec sleep 300"))
    began = time.monotonic()
    assert not await supervisor.watch(0.3, 0.05, look)
    assert 0.3 <= time.monotonic() - began < 5 and set(seen) == {None}
    await supervisor.stop()
    _nothing_left(child.pid)


async def test_the_output_is_read_as_lines_run_after_run(tmp_path: Path) -> None:
    supervisor = Supervisor()
    for word in ("one", "two"):
        supervisor.start(_shell(tmp_path, f"echo {word}; echo done", piped=True))
        out = supervisor.output()
        assert supervisor.output() is out  # one reader a child
        got: list[str] = []
        with anyio.fail_after(20):
            while not out.ended:
                got += await out.next() or []
        assert got == [word, "done"]
        await supervisor.aclose()

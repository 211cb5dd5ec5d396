"""A killed server's partial ``project.api`` dump (``<state>/api/.partial-*``) is removed at the
next dump, the next server start and by ``godot-mcp-admin reconcile``; a live owner's never.
Owners are real processes: a child killed with -9 is a dead one, a running child a live one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from godot_mcp.engine.profile import profile_of
from godot_mcp.features.api import reference as api
from godot_mcp.runtime.owner import me, start_ticks
from godot_mcp.store.store import ArtifactStore
from tests.godot.test_api import fake_engine
from tests.support.engines import Engine
from tests.support.projects import make_project
from tests.support.servers import run_admin, serve_args, server_env, stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def owner_of(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    start = start_ticks(proc.pid)
    assert start is not None
    return proc.pid, start


def killed_owner() -> tuple[int, str]:
    """A process that ran and was killed with -9 (and reaped): (pid, start ticks)."""
    proc = subprocess.Popen(["sleep", "60"])
    owner = owner_of(proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert start_ticks(proc.pid) is None
    return owner


@pytest.fixture
def live_child() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "300"])
    yield proc
    proc.kill()
    proc.wait(timeout=10)


def partial(api_dir: Path, owner: tuple[int, str] | None, tail: str = "a1b2c3d4e5f6") -> Path:
    """A partial dump dir as a dump leaves it: XML under ``out/``, ``cwd`` and ``home``."""
    name = f".partial-{owner[0]}-{owner[1]}-{tail}" if owner else api.partial_name()
    path = api_dir / name
    (path / "out" / "doc" / "classes").mkdir(parents=True)
    (path / "out" / "doc" / "classes" / "Node.xml").write_text("<class name='Node'/>\n")
    (path / "cwd").mkdir()
    (path / "home" / ".cache").mkdir(parents=True)
    return path


def names(api_dir: Path) -> set[str]:
    return {p.name for p in api_dir.iterdir()} if api_dir.is_dir() else set()


def test_a_dead_owners_partial_is_swept_a_live_ones_kept(tmp_path, live_child):
    api_dir = tmp_path / "api"
    dead = partial(api_dir, killed_owner())
    mine = partial(api_dir, None)  # this process: alive
    live = partial(api_dir, owner_of(live_child))
    pid, start = owner_of(live_child)
    reused = partial(api_dir, (pid, str(int(start) + 1)))  # the pid now names another process
    # The older name (no start time): judged by its pid, and by its age.
    legacy_dead = partial(api_dir, None)
    legacy_dead = legacy_dead.rename(api_dir / f".partial-{killed_owner()[0]}-0a1b2c3d4e5f")
    legacy_live = partial(api_dir, None)
    legacy_live = legacy_live.rename(api_dir / f".partial-{live_child.pid}-0a1b2c3d4e5f")
    legacy_old = partial(api_dir, None)
    legacy_old = legacy_old.rename(api_dir / f".partial-{os.getpid()}-ffffffffffff")
    old = time.time() - api.STALE_PARTIAL_S - 60
    os.utime(legacy_old, (old, old))
    kept = api_dir / "3.2.3.stable"  # a finished dump is never touched
    kept.mkdir()

    assert api.sweep_partials(api_dir) == 4
    assert names(api_dir) == {mine.name, live.name, legacy_live.name, kept.name}
    for gone in (dead, reused, legacy_dead, legacy_old):
        assert not gone.exists()
    assert (live / "out" / "doc" / "classes" / "Node.xml").is_file()
    assert api.sweep_partials(api_dir) == 0
    assert api.sweep_partials(tmp_path / "no-such-dir") == 0


def test_a_partial_dump_is_named_after_its_owner():
    pid, start = me()
    name = api.partial_name()
    assert name.startswith(f".partial-{pid}-{start}-"), name


async def test_the_next_dump_removes_a_dead_owners_partial_not_a_live_ones(tmp_path, live_child):
    api_dir = tmp_path / "api"
    dead = partial(api_dir, killed_owner())
    live = partial(api_dir, owner_of(live_child))
    report = await api.dump(fake_engine(tmp_path, "ok"), profile_of(3), api_dir, "3.2.3.stable")
    assert report.dumped
    assert names(api_dir) == {"3.2.3.stable", live.name}
    assert not dead.exists()


def test_reconcile_removes_a_dead_owners_partial_dump_and_says_so(tmp_path, live_child):
    state = tmp_path / "state"
    ArtifactStore(state).close()
    api_dir = state / "api"
    dead = partial(api_dir, killed_owner())
    also_dead = partial(api_dir, killed_owner())
    live = partial(api_dir, owner_of(live_child))
    done = run_admin("reconcile", "--json", "--state-dir", str(state))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["extra"]["dead_api_dumps_removed"] == 2
    assert names(api_dir) == {live.name}
    assert not dead.exists() and not also_dead.exists()
    again = run_admin("reconcile", "--state-dir", str(state))
    assert again.returncode == 0, again.stderr
    assert "dead_api_dumps_removed" in again.stdout
    # No store yet: the key is there all the same.
    empty = run_admin("reconcile", "--json", "--state-dir", str(tmp_path / "none"))
    assert json.loads(empty.stdout)["extra"]["dead_api_dumps_removed"] == 0


def _send(proc: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
    proc.stdin.flush()


def kill_a_server_mid_dump(project: Path, state: Path) -> tuple[Path, tuple[int, str]]:
    """A real stdio server asked for ``project.api``, killed with -9 while its dump is
    partial; the partial dir it left and the server's (pid, start ticks)."""
    proc = subprocess.Popen(
        serve_args(project, state),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=server_env(),
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        owner = owner_of(proc)
        _send(
            proc,
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "killer", "version": "1"},
                },
            },
        )
        _send(proc, {"method": "notifications/initialized"})
        _send(
            proc,
            {
                "id": 2,
                "method": "tools/call",
                "params": {
                    "name": "project_api",
                    "arguments": {"class": "Node"},
                },
            },
        )
        deadline = time.monotonic() + 60
        found: list[Path] = []
        while not found:
            assert time.monotonic() < deadline, "the server never began its dump"
            assert proc.poll() is None, "the server exited"
            api_dir = state / "api"
            found = [
                p
                for p in (api_dir.iterdir() if api_dir.is_dir() else [])
                if p.name.startswith(".partial-") and (p / "home").is_dir()
            ]
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    (left,) = found
    assert left.name.startswith(f".partial-{owner[0]}-{owner[1]}-"), left.name
    return left, owner


async def test_a_server_killed_mid_dump_leaves_a_partial_the_next_server_removes(
    tmp_path, engine: Engine, live_child
):
    engine.require()
    project = make_project(tmp_path / "project")
    state = tmp_path / "state"
    left, _ = kill_a_server_mid_dump(project, state)
    time.sleep(0.5)  # the engine it had started dies with it (the parent-death signal)
    assert left.is_dir()  # what the killed server left
    live = partial(state / "api", owner_of(live_child))
    with anyio.fail_after(180):
        async with stdio_client(project, state) as c:
            assert not left.exists()  # gone at the start, before any dump
            assert live.is_dir()
            r = await c.call_tool("project_api", {"class": "Node"})
    assert r.structured_content["outcome"] == "ok", r.structured_content
    dumps = {p.name for p in (state / "api").iterdir() if not p.name.startswith(".")}
    assert len(dumps) == 1, dumps
    assert names(state / "api") - dumps == {live.name}

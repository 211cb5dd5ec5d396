"""Child processes: the death signal without preexec_fn, and no signal to a group id that may
belong to someone else by then (real processes)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import anyio
import pytest

from godot_mcp.engine.process import procs
from godot_mcp.engine.process.child import Child

pytestmark = pytest.mark.anyio

PDEATHSIG = """
import ctypes, os
libc = ctypes.CDLL(None)
sig = ctypes.c_int()
libc.prctl(2, ctypes.byref(sig), 0, 0, 0)  # PR_GET_PDEATHSIG
print(sig.value, os.getpgrp() == os.getpid(), flush=True)
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_child_has_the_death_signal_and_its_own_group_without_preexec_fn() -> None:
    assert "preexec_fn" not in procs.spawn_kwargs()
    child = Child.spawn([sys.executable, "-c", PDEATHSIG], stdout=subprocess.PIPE)
    assert child.stdout is not None
    with anyio.fail_after(20):
        assert await child.wait() == 0
    assert child.stdout.read().decode().split() == [str(int(signal.SIGKILL)), "True"]


def test_a_missing_program_fails_before_any_fork(tmp_path) -> None:
    with pytest.raises(OSError) as caught:
        Child.spawn([str(tmp_path / "no-such-godot")])
    assert caught.value.errno == 2
    text = tmp_path / "not-executable"
    text.write_text("#!/bin/sh\n")
    with pytest.raises(OSError) as caught:
        Child.spawn([str(text)])
    assert caught.value.errno == 13


def _gone_or_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except FileNotFoundError:
        return True
    return stat[stat.rfind(")") + 2] in "ZX"


LEAVES_ONE_BEHIND = "sleep 60 & echo $!; exit 7"


async def test_leftovers_die_before_the_leader_is_reaped_and_never_after(monkeypatch) -> None:
    child = Child.spawn(["/bin/sh", "-c", LEAVES_ONE_BEHIND], stdout=subprocess.PIPE)
    assert child.stdout is not None
    left = int(child.stdout.readline())
    with anyio.fail_after(20):
        assert await child.wait() == 7
    # The sleep was in the group: killed when the leader's exit was seen, before reaping.
    deadline = time.monotonic() + 10
    while procs.group_running(child.pid):
        assert time.monotonic() < deadline, "the leftover outlived its group's leader"
        await anyio.sleep(0.02)
    assert _gone_or_zombie(left)
    # Reaped and its group empty: its pid may be another process's group id by now, so
    # nothing is signalled any more.
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(procs, "kill_group", lambda pid, sig=9: sent.append((pid, sig)))
    child.signal_group()
    assert await child.kill() == 7
    await child.kill_all(0.1)
    assert sent == []


async def test_a_running_group_is_still_signalled() -> None:
    child = Child.spawn(["/bin/sh", "-c", "sleep 60"])
    assert child.poll() is None
    child.signal_group(signal.SIGTERM)
    with anyio.fail_after(20):
        assert await child.wait() == -signal.SIGTERM

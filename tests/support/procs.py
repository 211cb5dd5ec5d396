"""Looking at processes through /proc (for kill -9 tests)."""

from __future__ import annotations

import os
import time

from godot_mcp.runtime.owner import proc_stat


def _stat(pid: int) -> tuple[str, int] | None:
    fields = proc_stat(pid)
    return (fields[0], int(fields[1])) if fields and len(fields) > 1 else None


def children(pid: int) -> list[int]:
    """Live (non-zombie) direct children of ``pid``."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st and st[1] == pid and st[0] != "Z":
                out.append(int(entry))
    return out


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    st = _stat(pid)
    return st is not None and st[0] != "Z"


def wait_gone(pids: list[int], timeout: float = 10.0) -> list[int]:
    """Wait (bounded) until every pid is dead; returns those still alive."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def zombies(pid: int) -> list[int]:
    """Direct children of ``pid`` that exited and were never reaped."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st and st[1] == pid and st[0] == "Z":
                out.append(int(entry))
    return out

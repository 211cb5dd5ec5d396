"""Which server process owns a running export, and whether it still lives.

A pid alone can be reused; the pair (pid, start time in clock ticks from
``/proc/PID/stat``) names one process for the whole life of the machine boot.
"""

from __future__ import annotations

import os


def proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (field 3 first), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("ascii", "replace")
    except OSError:
        return None
    return raw[raw.rfind(")") + 2 :].split()


def start_ticks(pid: int) -> str | None:
    """The start time of ``pid`` (field 22 of /proc/PID/stat), or None if it is gone."""
    fields = proc_stat(pid)
    return fields[19] if fields and len(fields) > 19 else None


def me() -> tuple[int, str]:
    """This process: (pid, start ticks)."""
    pid = os.getpid()
    return pid, start_ticks(pid) or "?"


def alive(pid: int, start: str) -> bool:
    """True while the process that registered as (pid, start) runs."""
    now = start_ticks(pid)
    return now is not None and now == start

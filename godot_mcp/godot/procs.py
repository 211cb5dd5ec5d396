"""Child processes that never outlive the server.

Every child (a game, an export, a private Xvfb) is started in its own process
group and with ``PR_SET_PDEATHSIG = SIGKILL``, so the kernel kills it when the
server dies, even by ``kill -9``. The death signal fires when the *thread* that
forked the child exits, so children must be spawned from a thread that lives as
long as the server (the event loop's thread); never from a short-lived worker.
"""

from __future__ import annotations

import ctypes
import os
import signal
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def child_preexec() -> Callable[[], None]:
    """Return a ``preexec_fn`` that ties the child's life to this process.

    If the parent already died between fork and prctl, the child exits at once.
    """
    expected = os.getpid()

    def _preexec() -> None:
        _die_with_parent()
        if os.getppid() != expected:
            os._exit(1)

    return _preexec


def spawn_kwargs() -> dict[str, object]:
    """Keyword arguments for ``subprocess.Popen``/``anyio.open_process``."""
    return {"start_new_session": True, "preexec_fn": child_preexec()}


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    """Signal the whole process group led by ``pid``; a gone group is fine."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def group_running(pid: int) -> bool:
    """True while a process of the group led by ``pid`` still runs (zombies do not count).

    A sandbox's init is orphaned when the sandbox exits and stays a zombie until the
    machine's init reaps it, which may take seconds: it runs nothing and holds nothing.
    """
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                raw = f.read().decode("ascii", "replace")
        except OSError:
            continue
        fields = raw[raw.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(pid) and fields[0] not in ("Z", "X"):
            return True
    return False

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


def group_gone(pid: int) -> bool:
    """True once no process (a zombie included) is left in the group led by ``pid``."""
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False

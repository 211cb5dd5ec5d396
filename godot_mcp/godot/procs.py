"""Child processes that never outlive the server.

Every child (a game, an export, a check, a private Xvfb) is started in its own process group
(``setsid`` in the forked child, done by CPython's own C code) and with the parent-death
signal ``SIGKILL``, so the kernel kills it when the server dies, even by ``kill -9``. The
signal is set by util-linux's ``setpriv --pdeathsig KILL``, which then executes the real
command in the same process: no Python runs between fork and exec (CPython documents
``preexec_fn`` as unsafe in a process with threads, and the server has several). The death
signal fires when the *thread* that forked the child exits, so children must be spawned from
a thread that lives as long as the server (the event loop's thread); never from a
short-lived worker. A sandboxed child also has bwrap's ``--die-with-parent``.
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
import signal
from collections.abc import Sequence

__all__ = ["group_running", "kill_group", "spawn_argv", "spawn_kwargs"]


def spawn_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` started with the parent-death signal set; ``OSError`` (as ``Popen`` would
    raise) when its program cannot be executed, so a missing binary fails before a fork."""
    program = argv[0]
    found = shutil.which(program)
    if found is None:
        error = errno.EACCES if os.path.exists(program) else errno.ENOENT
        raise OSError(error, os.strerror(error), program)
    setpriv = _setpriv()
    if setpriv is None:
        raise OSError(errno.ENOENT, "setpriv (util-linux) is needed to start children", "setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--", found, *argv[1:]]


@functools.cache
def _setpriv() -> str | None:
    """util-linux's setpriv, looked up once per process."""
    return shutil.which("setpriv", path="/usr/bin:/bin") or shutil.which("setpriv")


def spawn_kwargs() -> dict[str, object]:
    """Keyword arguments for ``subprocess.Popen`` (with :func:`spawn_argv`)."""
    return {"start_new_session": True}


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

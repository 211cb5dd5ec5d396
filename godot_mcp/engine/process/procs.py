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

A game runs project code outside any sandbox, as the server's user. So before the first one
starts, the server makes itself non-dumpable (``PR_SET_DUMPABLE`` 0): the kernel then lets no
process without ``CAP_SYS_PTRACE`` open its ``/proc/PID/environ``, ``mem`` or ``maps``, even one
of the same user. A game started by a server running as root is given no capabilities at all
(``setpriv`` empties its bounding and inheritable sets), so it cannot read them either.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import shutil
import signal
from collections.abc import Sequence

__all__ = ["group_running", "kill_group", "protect_server", "spawn_argv", "spawn_kwargs"]

_PR_SET_DUMPABLE = 4


def spawn_argv(argv: Sequence[str], untrusted: bool = False) -> list[str]:
    """``argv`` started with the parent-death signal set; ``OSError`` (as ``Popen`` would
    raise) when its program cannot be executed, so a missing binary fails before a fork.

    ``untrusted``: the child runs project code unsandboxed (a game): the server is made
    non-dumpable first, and a root server's child gets no capabilities."""
    program = argv[0]
    found = shutil.which(program)
    if found is None:
        error = errno.EACCES if os.path.exists(program) else errno.ENOENT
        raise OSError(error, os.strerror(error), program)
    setpriv = _setpriv()
    if setpriv is None:
        raise OSError(errno.ENOENT, "setpriv (util-linux) is needed to start children", "setpriv")
    flags = ["--pdeathsig", "KILL"]
    if untrusted:
        protect_server()
        flags += ["--inh-caps=-all", "--ambient-caps=-all"]
        if os.geteuid() == 0:  # only root may empty the bounding set, and only root needs it
            flags += ["--bounding-set=-all"]
    return [setpriv, *flags, "--", found, *argv[1:]]


@functools.cache
def protect_server() -> None:
    """Make this process non-dumpable, once: its environment and memory are then closed to
    every process without ``CAP_SYS_PTRACE`` (``OSError`` if the kernel refuses)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"prctl(PR_SET_DUMPABLE): {os.strerror(error)}")


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

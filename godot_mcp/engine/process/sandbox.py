"""A mount namespace for an export's Godot: it sees the project copy, and nothing private.

Vetting the snapshot is not enough: Godot reads paths from many places (an ``.import`` file's
``[remap] path="../../../store.db"``, a preset's ``custom_template/release="/etc/shadow"``)
and an export runs project code (editor plugins, ``tool`` scripts). So each export's Godot
runs under bubblewrap (``bwrap``) with an allow-list view of the filesystem::

    /usr (and the /bin, /lib… links), a few /etc files   read-only: the engine and its libraries
    /dev (read-only), /proc (its own pid namespace)      private
    /tmp, /dev/shm                                      private, writable (size-bounded for checks)
    / itself                                            read-only; no capabilities, even as root
    the export's work dir                               read-write: snapshot, out, XDG dirs
    the Godot binary's dir, the user's export templates read-only, when outside /usr
    an export's custom template (one file)              read-only, bound from an open descriptor
    a project check's project                           read-only, bound from an open
                                                        descriptor of its planned root

and no network, no IPC, its own UTS and pid namespaces. The state dir (the store database,
the blobs, other exports) and the user's files are simply not there. bwrap is started
without ``--new-session`` so the export's process group (and its death signal) hold.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = ["bwrap", "wrap"]

_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/fonts",
    "/etc/localtime",
)


def bwrap() -> str | None:
    """The bubblewrap binary, if installed."""
    return shutil.which("bwrap")


def wrap(
    argv: Sequence[str],
    *,
    rw: Iterable[Path],
    ro: Iterable[Path],
    cwd: Path,
    home: Path,
    ro_fds: Iterable[tuple[int, Path]] = (),
    tmp_size: int | None = None,
) -> list[str]:
    """``argv`` run inside the sandbox with ``rw`` and ``ro`` (absolute paths) visible.

    ``ro_fds``: open directories (or regular files: an export's custom template) bound
    read-only at their paths (the caller passes the descriptors to the child), so what is
    bound is what was opened, whatever the path names by then. ``tmp_size``: the bytes
    ``/tmp`` and ``/dev/shm`` (memory) may hold.
    """
    binary = bwrap() or "bwrap"
    args = [
        binary,
        "--die-with-parent",
        "--cap-drop",
        "ALL",  # run as root, bwrap would leave the sandbox its capabilities (remount, mknod)
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
    ]
    for top in _SYSTEM:
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for etc in _ETC:
        if os.path.exists(etc):
            args += ["--ro-bind", etc, etc]
    args += ["--dev", "/dev", "--remount-ro", "/dev", "--proc", "/proc"]
    for place in ("/tmp", "/dev/shm"):
        args += ([] if tmp_size is None else ["--size", str(tmp_size)]) + ["--tmpfs", place]
    for fd, dest in ro_fds:
        args += ["--ro-bind-fd", str(fd), str(dest)]
    seen: set[str] = set()
    for flag, paths in (("--ro-bind", ro), ("--bind", rw)):
        for path in paths:
            for form in dict.fromkeys([os.path.abspath(path), os.path.realpath(path)]):
                if form not in seen and os.path.exists(form) and not _under_system(form):
                    seen.add(form)
                    args += [flag, form, form]
    # Nothing but the mounts above is writable: not the sandbox's own root, not /dev.
    args += ["--remount-ro", "/"]
    args += ["--setenv", "HOME", str(home), "--chdir", str(cwd), "--", *argv]
    return args


def _under_system(path: str) -> bool:
    return any(path == top or path.startswith(top + "/") for top in _SYSTEM)

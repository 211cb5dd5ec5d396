"""One way to run Godot. A game, an export and a check are each a :class:`GodotRun`: what to
run, what of the server's environment it may see, whether it is sandboxed, where its output
goes and how it stops; what the output means is theirs.

* **Environment**: the policy of :mod:`environment`, chosen by the confinement: a sandboxed
  run (an export, a check) gets the locale and a plain ``PATH``; a game gets what Godot needs
  to draw and sound. What the run adds (the display, the bridge secret, its XDG dirs) goes on
  top. Nothing else of the server's environment reaches project code.
* **Sandbox or none**: a :class:`Confinement` is ``sandbox.wrap``'s view (what is bound
  read-write, read-only, or from an open descriptor); the engine is started by its real path,
  whose directory is bound read-only.
* **Output**: the child's stdout and stderr, as ``subprocess`` takes them (a pipe, a file).
* **Stop**: :func:`stop_run` kills the process group, reaps the child and waits (bounded) until
  nothing of it runs: the sandbox's own children included. A headless run (a check, an import,
  a test run, an export, the class reference's dump) is followed to its end by a
  :class:`~godot_mcp.engine.process.supervisor.Supervisor`, which asks its group to end
  (SIGTERM) before it kills it.

The child is a :class:`Child` (own process group, parent-death signal, pidfd exit).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from godot_mcp.engine.process import engine_lines, environment, sandbox
from godot_mcp.engine.process.availability import AVAILABLE, Availability, unavailable
from godot_mcp.engine.process.child import Child
from godot_mcp.errors import Failed

__all__ = [
    "CannotStart",
    "Confinement",
    "GodotRun",
    "Probe",
    "on_copy",
    "sandbox_availability",
    "stop_run",
    "xdg_homes",
]


class CannotStart(Failed):
    """The engine could not be executed (missing, not executable, no ``setpriv``)."""


@dataclass(frozen=True)
class Confinement:
    """What a sandboxed run sees besides the system (``sandbox.wrap``)."""

    home: Path
    rw: Sequence[Path] = ()
    ro: Sequence[Path] = ()
    ro_fds: Sequence[tuple[int, Path]] = ()  # open descriptors bound read-only at these paths
    tmp_size: int | None = None  # bytes /tmp and /dev/shm may hold


@dataclass(frozen=True)
class Probe:
    """What a short run printed and how it ended (``code`` None: killed at its bound)."""

    code: int | None
    stdout: str
    stderr: str


@dataclass(frozen=True)
class GodotRun:
    """One run of ``binary`` with ``args`` in ``cwd``."""

    binary: str
    args: Sequence[str]
    cwd: Path
    base_env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    extra_env: Mapping[str, str] = field(default_factory=dict)
    confinement: Confinement | None = None  # None: run as the server's user, unsandboxed
    stdout: IO[bytes] | int = subprocess.DEVNULL
    stderr: IO[bytes] | int = subprocess.STDOUT

    def environment(self) -> dict[str, str]:
        """The child's whole environment: the policy's allow-list, then what the run adds."""
        policy = environment.for_game if self.confinement is None else environment.for_sandbox
        return {**policy(self.base_env), **self.extra_env}

    def engine_path(self) -> str:
        """The engine as the child starts it: by its real path inside a sandbox (whose
        ``PATH`` is a plain one), else as found on the server's ``PATH``."""
        found = shutil.which(self.binary) or self.binary
        return found if self.confinement is None else os.path.realpath(found)

    def command(self) -> list[str]:
        """The full command line, inside the sandbox when confined."""
        engine = self.engine_path()
        godot = [engine, *self.args]
        c = self.confinement
        if c is None:
            return godot
        return sandbox.wrap(
            godot,
            rw=c.rw,
            ro=[Path(engine).parent, *c.ro],
            cwd=self.cwd,
            home=c.home,
            ro_fds=c.ro_fds,
            tmp_size=c.tmp_size,
        )

    def start(self) -> Child:
        """Spawn the run; call from the thread whose life bounds the child's (the event
        loop's, see :mod:`procs`). :class:`CannotStart` if the engine cannot be executed."""
        fds = [fd for fd, _ in self.confinement.ro_fds] if self.confinement else []
        try:
            return Child.spawn(
                self.command(),
                env=self.environment(),
                stdout=self.stdout,
                stderr=self.stderr,
                pass_fds=fds,
                cwd=str(self.cwd),
                untrusted=self.confinement is None,
            )
        except OSError as exc:
            raise CannotStart(f"cannot start Godot: {exc.strerror or exc}") from None

    def probe(self, timeout: float) -> Probe:
        """Run to the end, at most ``timeout`` s, and what it printed (a ``--version``). Blocking:
        call from a worker thread, which this call outlives no child of: past the bound the
        whole group is killed and reaped before it returns. :class:`CannotStart` as ``start``."""
        piped = replace(self, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        code, out, err = piped.start().communicate(timeout)
        return Probe(code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))


def on_copy(
    binary: str,
    args: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    work_dir: Path,
    copy: Path,
    tmp_size: int,
) -> GodotRun:
    """A sandboxed run that writes only ``work_dir`` and a private ``copy`` of the project
    (an import, a test run): its home and XDG dirs in ``work_dir/xdg``, its output piped."""
    xdg = work_dir / "xdg"
    return GodotRun(
        binary,
        args,
        cwd,
        base_env=env,
        extra_env=xdg_homes(xdg),
        confinement=Confinement(home=xdg, rw=[work_dir, copy], tmp_size=tmp_size),
        stdout=subprocess.PIPE,
    )


def xdg_homes(base: Path | str) -> dict[str, str]:
    """A run's own XDG config, cache and data dirs, under ``base``: Godot writes its editor
    settings, caches and user data there, never into the server's user's."""
    return {f"XDG_{n.upper()}_HOME": f"{base}/{n}" for n in ("config", "cache", "data")}


@functools.cache
def sandbox_availability(engine: str | None = None) -> Availability:
    """Whether exports can be sandboxed on this machine, and if not why. Blocking.

    With ``engine`` (a Godot binary), the probe is that engine printing its version inside
    the sandbox, as an export or check would start it: a sandbox that starts ``/bin/true``
    but not the engine (its libraries, its folder) is not available.
    """
    if sandbox.bwrap() is None:
        return unavailable(
            "exports run Godot in a sandbox and need bubblewrap (apt-get install bubblewrap)"
        )
    run = GodotRun(
        engine or "/bin/true",
        ["--version"] if engine else [],
        Path("/"),
        base_env=os.environ,
        confinement=Confinement(home=Path("/tmp")),
    )
    try:
        probe = run.probe(timeout=20)
    except CannotStart as exc:
        why = exc.message.removeprefix("cannot start Godot: ")
        return unavailable(f"bubblewrap cannot start: {why}")
    output = (probe.stdout + probe.stderr).splitlines()
    # Godot's --version exit status means nothing (3.2.3 exits 255): its answer does.
    if probe.code == 0 if engine is None else engine_lines.version_line(probe.stdout):
        return AVAILABLE
    why = engine_lines.first_reason(output) or (
        f"exit status {probe.code}" if probe.code is not None else "no answer within 20 s"
    )
    if engine:  # the engine by its name, not where it is
        real = run.engine_path()
        why = why.replace(real, Path(real).name).replace(str(Path(real).parent) + "/", "")
    why = why[:200]
    if engine is None or any(line.startswith("bwrap:") for line in output):
        return unavailable(f"bubblewrap cannot make a sandbox here: {why}")
    return unavailable(f"the engine does not start in the sandbox: {why}")


async def stop_run(child: Child | None, grace: float = 5.0) -> None:
    """Stop a run: SIGKILL its process group, reap it, and wait (bounded, shielded) until
    nothing of it runs. A game asked to quit first (through its bridge) ends here too."""
    if child is not None:
        await child.kill_all(grace)

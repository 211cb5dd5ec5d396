"""Run Godot exports in private scratch space, one process per export.

An export rewrites the project it runs on (``.import/``, a reformatted ``project.godot``) and
writes editor settings under the XDG dirs, even when it fails. So every export runs on a private
copy of the project, with private XDG dirs, and writes into a private output dir::

    <work_root>/<export_id>/
        snapshot/      copy of the project made by ``tree``: no link in it (links inside the
                       project become plain copies of their targets, links out of it refuse
                       the export before anything is copied); VCS dirs left out; .import/
                       (Godot 3) and .godot/ (Godot 4) kept so nothing needs a re-import.
        out/           Godot's output dir. Godot writes <name>.tmp and renames it when done;
                       for a desktop export the binary is finished before the .pck
        xdg/config/    XDG_CONFIG_HOME: editor settings, project metadata
        xdg/cache/     XDG_CACHE_HOME: Godot assembles the pack here first (godot/packtmp.tmp,
                       then godot/packtmp) and copies it into out/
        xdg/data/      XDG_DATA_HOME: Godot creates godot/app_userdata/ here; godot/templates
                       (Godot 3) and godot/export_templates (Godot 4) link to the user's, so the
                       installed export templates are found and never written
        log.txt        Godot's stdout and stderr

A preset's ``custom_template/<kind>`` named by absolute path (``/usr/bin/godot3-runner``, a
self-built template under ``/opt``) is used when it is a plausible template for the preset's
platform (``open_custom_template``: a regular file once links are resolved, with the magic of an
ELF executable, a zip or a PE executable). The file is opened once, checked from that descriptor,
and the descriptor alone is bound read-only into the sandbox at ``TEMPLATE_MOUNT/<kind>``; the
snapshot's ``export_presets.cfg`` gets an override pointing the preset there. So Godot reads
exactly the file that was checked, and nothing else of the machine.

A job's directory name is its export id. When a server dies mid-export, ``leftovers(work_dir)``
lists what that export had written, for the recovery routine to move into its evidence area.

Children are started by ``Child.spawn`` (own process group, death signal), which ties
them to the *thread* that started them: call ``ExportRunner.start``/``start_async`` from the event
loop's thread, never from a short-lived worker.

Every text handed out (``error``, ``log_tail``) has private paths replaced: the output dir by
``<export>``, the snapshot and the source project by ``<project>``, the template dirs by
``<templates>``, anything else under the work root by ``<scratch>``, the home dir by ``~``.

Outputs are verified whole before a job succeeds (``verify``): Godot 3.2.3 exits 0 after a
failed write on a full disk, so a job whose process exited 0 with every file written is
``verifying`` until each output has passed its check, then ``succeeded`` or ``failed``.

Errors::

    ExportError(Exception)
     └── ExportSetupError    the work dir could not be prepared (bad id, id in use, copy failed,
                             the project changed while it was copied)

A link out of the project raises ``tree.TreeError`` from ``prepare`` before anything is made.
An export that runs and fails is not an exception: the job ends in state ``failed`` with an
``error`` message built from Godot's own ``ERROR:`` lines or from the failed check.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import stat
import struct
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio

from godot_mcp.godot import environment, sandbox, tree, verify
from godot_mcp.godot.child import Child
from godot_mcp.godot.presets import (
    KINDS,
    PRESETS_FILE,
    Preset,
    PresetsError,
    find_preset,
    read_config,
    read_presets,
)
from godot_mcp.godot.redact import PathPair, Scrubber

RUNNING, SUCCEEDED, FAILED, CANCELLED = "running", "succeeded", "failed", "cancelled"
VERIFYING = "verifying"  # exited 0, outputs being checked: still "running" to callers
_ID = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$")  # never "." or ".."
_TEMPLATE_DIRS = ("templates", "export_templates")
_LINUX = ("linux/x11", "linux", "linuxbsd", "x11")
_WINDOWS = ("windows desktop", "windows")
_ZIPPED = ("android", "html5", "web", "mac osx", "macos", "osx", "ios", "uwp")
TEMPLATE_MOUNT = "/run/godot-mcp/custom_template"  # where a sandboxed export sees its template
_BLANK = "".join(map(chr, range(33)))  # what Godot's strip_edges() strips
_FLAGS = {
    3: {"pack": ["--export-pack"], "release": ["--export"], "debug": ["--export-debug"]},
    4: {
        "pack": ["--headless", "--export-pack"],
        "release": ["--headless", "--export-release"],
        "debug": ["--headless", "--export-debug"],
    },
}
_NOISE = (
    re.compile(r"Invalid locale '"),
    re.compile(r"Unsupported locale '"),
    re.compile(r'key "patch_list"'),
)


class ExportError(Exception):
    """Base of the export layer's errors."""


class ExportSetupError(ExportError):
    """The export's private work dir could not be prepared."""


class ExportRunner:
    """Starts exports of a project with one headless Godot binary.

    ``env`` is the base environment for Godot (default: this process's). The user's export
    templates are looked up under its ``XDG_DATA_HOME`` (else ``$HOME/.local/share``).
    ``godot_major`` picks the command-line flags; only Godot 3 is verified.
    """

    def __init__(
        self,
        headless_binary: str,
        work_root: Path,
        env: Mapping[str, str] | None = None,
        godot_major: int = 3,
        private: Sequence[PathPair] = (),
        sandboxed: bool = True,
        engine: str = "Godot",
    ) -> None:
        """``sandboxed``: run Godot under ``godot.sandbox`` (seeing only its work dir);
        ``engine``: how failures name it (``Godot 4.6.3``)."""
        self.sandboxed = sandboxed
        self.engine = engine
        self.headless_binary = headless_binary
        self.work_root = Path(work_root)
        self.env = dict(os.environ if env is None else env)
        self.private = list(private)
        if godot_major not in _FLAGS:
            raise ValueError(f"unsupported Godot major version {godot_major}")
        self.godot_major = godot_major

    def start(
        self,
        project: Path,
        preset: Preset,
        kind: str,
        export_id: str,
        expected: list[str],
        plan: tree.Plan | None = None,
    ) -> ExportJob:
        """Copy the project, then spawn Godot; returns the running job.

        Blocks while the project is copied; see ``start_async`` to copy off the loop.
        """
        job = self.prepare(project, preset, kind, export_id, expected, plan)
        job.launch()
        return job

    async def start_async(
        self,
        project: Path,
        preset: Preset,
        kind: str,
        export_id: str,
        expected: list[str],
        plan: tree.Plan | None = None,
    ) -> ExportJob:
        """Like ``start``, copying in a worker thread and spawning in the calling thread."""
        try:
            job = await anyio.to_thread.run_sync(
                self.prepare, project, preset, kind, export_id, expected, plan
            )
        except anyio.get_cancelled_exc_class():
            shutil.rmtree(self.work_root / export_id, ignore_errors=True)
            raise
        job.launch()
        return job

    def prepare(
        self,
        project: Path,
        preset: Preset,
        kind: str,
        export_id: str,
        expected: list[str],
        plan: tree.Plan | None = None,
    ) -> ExportJob:
        """Build the work dir (snapshot, out, XDG dirs) without starting Godot.

        ``plan`` is the project's copy plan (``tree.plan``), made here when not given; a link
        out of the project raises its ``tree.TreeError`` before anything is created.
        Thread-safe; the returned job must still be ``launch()``-ed from the loop's thread.
        """
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
        if not expected or any("/" in n or n in ("", ".", "..") for n in expected):
            raise ValueError("expected must be a non-empty list of plain file names")
        if not _ID.match(export_id):
            raise ExportSetupError(f"export id {export_id!r} is not a safe directory name")
        if not (Path(project) / "project.godot").is_file():
            raise ExportSetupError("the project has no project.godot")
        if plan is None:
            plan = tree.plan(Path(project))
        try:
            template_fd = open_custom_template(preset, kind)
        except TemplateRefused as exc:
            raise ExportSetupError(exc.message) from None
        try:
            return self._prepare(project, preset, kind, export_id, expected, plan, template_fd)
        except BaseException:
            if template_fd is not None:
                os.close(template_fd)
            raise

    def _prepare(
        self,
        project: Path,
        preset: Preset,
        kind: str,
        export_id: str,
        expected: list[str],
        plan: tree.Plan,
        template_fd: int | None,
    ) -> ExportJob:
        self.work_root.mkdir(parents=True, exist_ok=True)
        work_dir = self.work_root / export_id
        try:
            work_dir.mkdir()
        except FileExistsError:
            raise ExportSetupError(f"export id {export_id!r} is already in use") from None
        try:
            content = tree.copy(plan, work_dir / "snapshot")
            for sub in ("out", "xdg/config", "xdg/cache", "xdg/data/godot"):
                (work_dir / sub).mkdir(parents=True)
            user_godot = _user_data_home(self.env) / "godot"
            for name in _TEMPLATE_DIRS:
                if (user_godot / name).is_dir():
                    (work_dir / "xdg/data/godot" / name).symlink_to(user_godot / name)
            if template_fd is not None and self.sandboxed:
                _point_snapshot_at(work_dir / "snapshot", preset, kind, f"{TEMPLATE_MOUNT}/{kind}")
        except tree.TreeError as exc:
            shutil.rmtree(work_dir, ignore_errors=True)
            raise ExportSetupError(exc.message) from None
        except ExportSetupError:
            shutil.rmtree(work_dir, ignore_errors=True)
            raise
        except OSError as exc:
            shutil.rmtree(work_dir, ignore_errors=True)
            raise ExportSetupError(f"cannot prepare the export: {exc.strerror or exc}") from None
        template = template_bytes(self.env, preset, kind)
        return ExportJob(
            self,
            Path(project),
            work_dir,
            preset,
            kind,
            list(expected),
            estimate=2 * content + template,
            template_fd=template_fd,
        )


class ExportJob:
    """One export: its process, its state and its private work dir."""

    def __init__(
        self,
        runner: ExportRunner,
        project: Path,
        work_dir: Path,
        preset: Preset,
        kind: str,
        expected: list[str],
        estimate: int,
        template_fd: int | None = None,
    ) -> None:
        """``template_fd``: the checked custom template (``open_custom_template``), owned by
        the job from here: bound into the sandbox at launch, closed once Godot has it."""
        self.export_id = work_dir.name
        self.preset = preset
        self.kind = kind
        self.expected = expected
        self.work_dir = work_dir
        self.out_dir = work_dir / "out"
        self.snapshot_dir = work_dir / "snapshot"
        self.log_path = work_dir / "log.txt"
        self.state = "pending"
        self.error: str | None = None
        self.exit_code: int | None = None
        self.outputs: list[tuple[str, Path]] = []
        self.started_at: float | None = None
        self.ended_at: float | None = None
        self._runner = runner
        self._proc: Child | None = None
        self._estimate = max(estimate, 1)
        self._high_water = 0
        self._low_space = False  # the disk was seen (almost) full while Godot ran
        self._cancelling = False
        self._template_fd = template_fd
        self._release_template = (
            weakref.finalize(self, os.close, template_fd) if template_fd is not None else None
        )
        self.redact = _scrubber(runner, project, work_dir)

    @property
    def pid(self) -> int | None:
        """The Godot process id while it has one."""
        return self._proc.pid if self._proc else None

    def command(self) -> list[str]:
        """The Godot command line of this export (inside the sandbox when the runner has one)."""
        flags = _FLAGS[self._runner.godot_major][self.kind]
        binary = shutil.which(self._runner.headless_binary) or self._runner.headless_binary
        if self._runner.sandboxed:
            binary = os.path.realpath(binary)  # the sandbox's PATH is a plain one
        godot = [
            binary,
            "--path",
            str(self.snapshot_dir),
            *flags,
            self.preset.name,
            str(self.out_dir / self.expected[0]),
        ]
        if not self._runner.sandboxed:
            return godot
        seen = [Path(binary).parent, *_template_paths(self._runner.env)]
        return sandbox.wrap(
            godot,
            rw=[self.work_dir],
            ro=seen,
            cwd=self.work_dir,
            home=self.work_dir / "xdg",
            ro_fds=self._template_binds(),
        )

    def _template_binds(self) -> list[tuple[int, Path]]:
        """The checked custom template, bound where the snapshot's preset looks for it."""
        if self._template_fd is None:
            return []
        return [(self._template_fd, Path(TEMPLATE_MOUNT) / self.kind)]

    def launch(self) -> None:
        """Spawn Godot; call from the thread whose life bounds the child's (the event loop's)."""
        if self.state != "pending":
            raise RuntimeError(f"export {self.export_id} was already launched")
        env = {k: v for k, v in self._runner.env.items() if k not in ("PWD", "OLDPWD")}
        if self._runner.sandboxed:
            env = environment.for_sandbox(env)
        env["XDG_CONFIG_HOME"] = str(self.work_dir / "xdg/config")
        env["XDG_CACHE_HOME"] = str(self.work_dir / "xdg/cache")
        env["XDG_DATA_HOME"] = str(self.work_dir / "xdg/data")
        self.state = RUNNING
        self.started_at = time.monotonic()
        sandboxed = self._runner.sandboxed
        fds = [fd for fd, _ in self._template_binds()] if sandboxed else []
        try:
            with open(self.log_path, "wb") as log:
                try:
                    self._proc = Child.spawn(
                        self.command(), env=env, stdout=log, pass_fds=fds, cwd=str(self.work_dir)
                    )
                except OSError as exc:
                    self._end(FAILED, f"cannot start Godot: {exc.strerror or exc}")
        finally:
            self._close_template()  # the sandbox holds its own bind of it now

    def _close_template(self) -> None:
        if self._release_template is not None:
            self._release_template()  # closes the descriptor, once
        self._template_fd = None

    def poll(self) -> str:
        """The current state; notices the process's exit (non-blocking).

        A process that exited 0 and wrote every expected file leaves the job ``verifying``
        until ``verify`` has checked each output whole (``wait`` does that off the loop).
        """
        if self.state != RUNNING or self._proc is None:
            return self.state
        code = self._proc.poll()
        self._low_space = self._low_space or tree.disk_full(self.out_dir)
        if code is None:
            return RUNNING
        self.exit_code = code
        if self._cancelling:  # killed by cancel(): its exit is not a failure
            self._end(CANCELLED, None)
            return self.state
        missing = [n for n in self.expected if not (self.out_dir / n).is_file()]
        if code == 0 and not missing:
            self.outputs = [(n, self.out_dir / n) for n in self.expected]
            self.state = VERIFYING
        elif code != 0:
            godot = self._runner.engine
            self._end(FAILED, _with_reason(f"{godot} exited with code {code}", self._summary()))
        else:
            wrote = ", ".join(missing)
            self._end(
                FAILED,
                _with_reason(
                    f"{self._runner.engine} exited 0 but did not write {wrote}", self._summary()
                ),
            )
        return self.state

    def verify(self) -> str:
        """Check every output whole (blocking: run it on a worker thread); returns the state.

        Godot may exit 0 after a failed write (a full disk), so "exit 0 and the files exist"
        proves nothing: each output is checked against its format and its template.
        """
        if self.state != VERIFYING:
            return self.state
        candidates = template_candidates(
            self._runner.env, self.preset, self.kind, self.snapshot_dir
        )
        try:
            for name, path in self.outputs:
                verify.verify_output(
                    name,
                    path,
                    platform=self.preset.platform,
                    kind=self.kind,
                    embedded=self.preset.embed_pck,
                    templates=candidates,
                )
        except verify.OutputInvalid as exc:
            reason = exc.message
            if self._low_space or tree.disk_full(self.out_dir):
                reason += " (the state dir's disk ran full during the export)"
            if self.state == VERIFYING:
                self._end(FAILED, f"Godot exited 0 but an output is not whole: {reason}")
            return self.state
        except OSError as exc:
            if self.state == VERIFYING:
                self._end(FAILED, f"an output could not be checked: {exc.strerror or exc}")
            return self.state
        if self.state == VERIFYING:
            self._end(SUCCEEDED, None)
        return self.state

    async def wait(self, timeout: float) -> str:
        """Wait at most ``timeout`` seconds for the export to end (outputs verified).

        Wakes on the process's exit (a pidfd); looks at the disk every 50 ms meanwhile.
        """
        with anyio.move_on_after(max(timeout, 0.0)):
            while self.poll() == RUNNING and self._proc is not None:
                await self._proc.wait_for(0.05)
        if self.poll() == VERIFYING:
            await anyio.to_thread.run_sync(self.verify)
        return self.state

    def progress(self) -> tuple[int, int]:
        """``(done, total)`` bytes: an estimate, never decreasing, ``done == total`` at success.

        ``done`` counts what Godot has written so far in ``out/`` (``.tmp`` included) and in its
        scratch cache; ``total`` is twice the snapshot's size (the pack is assembled in the cache,
        then copied out) plus the export template for a desktop export.
        """
        if self.state == SUCCEEDED:
            size = sum(p.stat().st_size for _, p in self.outputs if p.exists())
            return size, size
        now = _tree_bytes(self.out_dir) + _tree_bytes(self.work_dir / "xdg/cache")
        self._high_water = max(self._high_water, now)
        total = max(self._estimate, self._high_water + 1)
        return self._high_water, total

    def kill(self) -> None:
        """Signal the export's process group now (never blocks) and mark it cancelled.

        The process is reaped by ``reap`` (or the next ``poll``), not here.
        """
        self._cancelling = self.state in (RUNNING, VERIFYING, "pending")
        if self._proc is not None and self._proc.poll() is None:
            self._proc.signal_group()
        if self.state in (RUNNING, VERIFYING, "pending"):
            if self._proc is not None:
                self.exit_code = self._proc.returncode
            self._end(CANCELLED, None)

    async def reap(self, grace: float = 5.0) -> None:
        """Kill what is left of the process group and reap it (bounded, shielded).

        The sandbox's own children are reaped by its init: wait until the group is empty.
        """
        if self._proc is not None:
            await self._proc.kill_all(grace)

    async def cancel(self) -> str:
        """Kill a running export and remove its work dir; returns the final state.

        An export that already ended keeps its state (and its work dir, for ``cleanup``).
        """
        if self.poll() not in (RUNNING, VERIFYING, "pending"):
            return self.state
        self.kill()
        await self.reap()
        await anyio.to_thread.run_sync(self.cleanup)
        return self.state

    def cleanup(self) -> None:
        """Remove the work dir (outputs included): call once the outputs are registered."""
        if self.state in (RUNNING, VERIFYING):
            self.kill()
        self._close_template()
        tree.remove(self.work_dir)

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of Godot's output, private paths replaced."""
        text = _read_tail(self.log_path)
        return self.redact("\n".join(text.splitlines()[-lines:])) if lines > 0 else ""

    def _summary(self) -> str:
        return self.redact(_error_summary(_read_tail(self.log_path)))

    def _end(self, state: str, error: str | None) -> None:
        self._close_template()
        self.state = state
        self.error = error
        self.ended_at = time.monotonic()


def leftovers(work_dir: Path) -> list[Path]:
    """What an export in ``work_dir`` had written: ``out/``, its scratch cache, its log.

    Partial outputs show as ``*.tmp``; the scratch cache holds the partly assembled pack.
    """
    found: list[Path] = []
    for sub in ("out", "xdg/cache"):
        root = work_dir / sub
        if root.is_dir():
            found.extend(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())
    if (work_dir / "log.txt").is_file():
        found.append(work_dir / "log.txt")
    return sorted(found)


def work_dirs(work_root: Path) -> list[Path]:
    """Every export work dir under ``work_root`` (each named by its export id)."""
    if not work_root.is_dir():
        return []
    return sorted(p for p in work_root.iterdir() if p.is_dir() and _ID.match(p.name))


def _user_data_home(env: Mapping[str, str]) -> Path:
    data = env.get("XDG_DATA_HOME", "")
    if data and os.path.isabs(data):
        return Path(data)
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".local" / "share"


def template_candidates(
    env: Mapping[str, str], preset: Preset, kind: str, project: Path | None = None
) -> list[Path]:
    """The Linux export templates a ``kind`` export of ``preset`` may have been made from.

    The preset's custom template first, then the user's installed ones of every version
    (Godot 3 ``templates/<version>/linux_x11_64_release``, Godot 4
    ``export_templates/<version>/linux_release.<arch>``). Empty for packs and other platforms.
    """
    if kind == "pack" or preset.platform.strip().lower() not in _LINUX:
        return []
    found: list[Path] = []
    custom = preset.custom_template(kind)
    if custom.startswith("res://") and project is not None:
        found.append(project / custom.removeprefix("res://"))
    elif custom and os.path.isabs(custom):
        found.append(Path(custom))
    user_godot = _user_data_home(env) / "godot"
    bits = "64" if preset.bits_64 else "32"
    found += sorted(user_godot.glob(f"templates/*/linux_x11_{bits}_{kind}"))
    found += sorted(user_godot.glob(f"export_templates/*/linux_{kind}.*"))
    return [p for p in found if p.is_file()]


def _template_paths(env: Mapping[str, str]) -> list[Path]:
    """The user's template dirs and the real files their entries point at (for the sandbox)."""
    user_godot = _user_data_home(env) / "godot"
    found: list[Path] = []
    for name in _TEMPLATE_DIRS:
        root = user_godot / name
        if not root.is_dir():
            continue
        found.append(root)
        for entry in root.glob("*/*"):
            if entry.is_symlink() and entry.exists():
                found.append(Path(os.path.realpath(entry)))
    return found


class TemplateRefused(ExportError):
    """A preset's custom template may not be used; ``message`` says why (no path in it)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def custom_template_refusal(env: Mapping[str, str], preset: Preset, kind: str) -> str | None:
    """Why the preset's custom template for ``kind`` may not be used, or None.

    A ``res://`` template is project content (judged with the snapshot). Any other one is read
    from the machine, so it must be named by absolute path and be a plausible template for the
    preset's platform (``open_custom_template``). ``env`` is not used (kept for callers).
    """
    del env
    try:
        fd = open_custom_template(preset, kind)
    except TemplateRefused as exc:
        return exc.message
    if fd is not None:
        os.close(fd)
    return None


def open_custom_template(preset: Preset, kind: str) -> int | None:
    """A read-only descriptor of the preset's custom template named by absolute path.

    ``None`` when the preset names none for ``kind`` or names a ``res://`` one. Otherwise the
    path (links followed) must name a regular file (not a directory, FIFO, device or socket:
    it is opened ``O_PATH`` first, so opening never blocks nor wakes a device) that the server
    can read, whose first bytes are those of a template for the preset's platform: an ELF
    executable for Linux, a PE executable for Windows, a zip for Android, Web/HTML5, macOS, iOS
    and UWP. ``TemplateRefused`` else, its message naming the reason and never a path (not
    even where a link leads). The caller closes the descriptor.
    """
    custom = preset.custom_template(kind)
    if not custom or custom.startswith("res://"):
        return None
    where = f"preset {preset.name!r}: its custom_template/{kind}"
    path = custom.strip(_BLANK)
    if not os.path.isabs(path):
        raise TemplateRefused(
            f"{where} lies outside the project and is neither a res:// path nor an absolute "
            "path; exports read nothing else"
        )
    try:
        fd = _open_regular(path)
        try:
            _check_magic(fd, preset.platform)
        except BaseException:
            os.close(fd)
            raise
    except _NotTemplate as exc:
        raise TemplateRefused(
            f"{where} lies outside the project and is not an export template for "
            f"{preset.platform or 'its platform'}: {exc.args[0]}"
        ) from None
    return fd


class _NotTemplate(Exception):
    pass


def _open_regular(path: str) -> int:
    """``path`` opened read-only, refused unless (links followed) it is a regular file."""
    try:
        handle = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        raise _NotTemplate("it does not exist") from None
    except NotADirectoryError:
        raise _NotTemplate("it does not exist") from None
    except OSError as exc:
        raise _NotTemplate(f"it cannot be opened ({exc.strerror or 'error'})") from None
    try:
        _require_regular(os.fstat(handle).st_mode)
        try:  # the very file the O_PATH descriptor names, whatever the path names by now
            fd = os.open(
                f"/proc/self/fd/{handle}",
                os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK,
            )
        except OSError as exc:
            raise _NotTemplate(f"it cannot be read ({exc.strerror or 'error'})") from None
    finally:
        os.close(handle)
    try:
        _require_regular(os.fstat(fd).st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _require_regular(mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        what = "a directory"
    elif stat.S_ISFIFO(mode):
        what = "a FIFO"
    elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        what = "a device"
    elif stat.S_ISSOCK(mode):
        what = "a socket"
    else:
        what = "not a file"
    raise _NotTemplate(f"it is {what}, not a regular file")


def _check_magic(fd: int, platform: str) -> None:
    """Refuse a file whose first bytes are not those of a template for ``platform``."""
    key = platform.strip().lower()
    try:
        head = os.pread(fd, 64, 0)
        if key in _LINUX:
            if not _is_elf_executable(head):
                raise _NotTemplate("not an ELF executable")
        elif key in _WINDOWS:
            if not _is_pe(fd, head):
                raise _NotTemplate("not a Windows (PE) executable")
        elif key in _ZIPPED:
            if not head.startswith(b"PK\x03\x04"):
                raise _NotTemplate("not a zip archive")
        else:
            raise _NotTemplate("no export template format is known for this platform")
    except OSError as exc:
        raise _NotTemplate(f"it cannot be read ({exc.strerror or 'error'})") from None


def _is_elf_executable(head: bytes) -> bool:
    """ELF magic, a known class and byte order, and type executable (or PIE: shared object)."""
    if len(head) < 18 or not head.startswith(b"\x7fELF") or head[4] not in (1, 2):
        return False
    if head[5] not in (1, 2):
        return False
    (e_type,) = struct.unpack_from("<H" if head[5] == 1 else ">H", head, 16)
    return e_type in (2, 3)  # ET_EXEC, ET_DYN


def _is_pe(fd: int, head: bytes) -> bool:
    """``MZ`` and, where its header says, the ``PE\\0\\0`` signature."""
    if len(head) < 64 or not head.startswith(b"MZ"):
        return False
    (offset,) = struct.unpack_from("<I", head, 0x3C)
    return os.pread(fd, 4, offset) == b"PE\0\0"


def _point_snapshot_at(snapshot: Path, preset: Preset, kind: str, dest: str) -> None:
    """Make the snapshot's copy of ``preset`` take its ``kind`` template from ``dest``.

    Appends a ``[preset.N.options]`` section with the one key: ConfigFile readers (Godot's and
    ``presets``) merge a repeated section, the later value winning. Read back to be sure.
    """
    path = snapshot / PRESETS_FILE
    try:
        sections = read_config(path)
        indices = sorted(
            int(m.group(1))
            for name, values in sections.items()
            if (m := re.fullmatch(r"preset\.(\d+)", name)) and values.get("name") == preset.name
        )
        if not indices:
            raise ExportSetupError(f"the copy of the project has no preset {preset.name!r}")
        with open(path, "a", encoding="utf-8") as f:
            f.write(f'\n[preset.{indices[0]}.options]\n\ncustom_template/{kind}="{dest}"\n')
        again = find_preset(read_presets(snapshot), preset.name)
    except (OSError, ValueError, PresetsError):
        raise ExportSetupError("cannot point the export's preset at its template") from None
    if kind == "release":
        wanted = dataclasses.replace(preset, custom_release=dest)
    else:
        wanted = dataclasses.replace(preset, custom_debug=dest)
    if again != wanted:
        raise ExportSetupError(
            f"the copy of preset {preset.name!r} is not the preset that was checked "
            f"(did {PRESETS_FILE} change meanwhile?)"
        )


def template_bytes(
    env: Mapping[str, str], preset: Preset, kind: str, project: Path | None = None
) -> int:
    """The size of the largest candidate template (0 when there is none)."""
    found = template_candidates(env, preset, kind, project)
    return max((p.stat().st_size for p in found), default=0)


def _tree_bytes(root: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def _read_tail(path: Path, limit: int = 256 * 1024) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - limit))
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _error_summary(log: str, keep: int = 3) -> str:
    """Godot's last meaningful ``ERROR:`` messages (function prefix and noise dropped)."""
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in log.splitlines():
        if line.startswith(("ERROR: ", "SCRIPT ERROR: ")):
            message = line.split(": ", 1)[1]
            message = re.sub(r"^[A-Za-z_][\w:]*: ", "", message)
            current = [message]
            blocks.append(current)
        elif line.strip().lower().startswith("at: "):
            current = None
        elif current is not None and line.strip():
            current.append(line.strip())
    kept = ["\n".join(b) for b in blocks if not any(n.search(b[0]) for n in _NOISE)]
    return "\n".join(kept[-keep:])[-2000:]


def _with_reason(headline: str, summary: str) -> str:
    return f"{headline}: {summary}" if summary else headline


def _scrubber(runner: ExportRunner, project: Path, work_dir: Path) -> Scrubber:
    pairs: list[PathPair] = [
        (TEMPLATE_MOUNT, "<custom_template>"),
        (work_dir / "out", "<export>"),
        (work_dir / "snapshot", "<project>"),
        (project, "<project>"),
        (work_dir, "<scratch>"),
        (runner.work_root, "<scratch>"),
    ]
    user_godot = _user_data_home(runner.env) / "godot"
    for name in _TEMPLATE_DIRS:
        pairs.append((work_dir / "xdg/data/godot" / name, "<templates>"))
        pairs.append((user_godot / name, "<templates>"))
    pairs += runner.private
    home = runner.env.get("HOME") or os.path.expanduser("~")
    if home and home != "/":
        pairs.append((Path(home), "~"))
    return Scrubber(pairs)

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

Godot is started as a ``GodotRun`` (``engine/process/run.py``: own process group, death signal, the
sandbox), which ties it to the *thread* that started it: call ``ExportRunner.start``/
``start_async`` from the event loop's thread, never from a short-lived worker. Which
templates an export may use is ``features/export/templates.py``'s to say.

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

import contextlib
import dataclasses
import functools
import os
import re
import shutil
import subprocess
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import IO

import anyio

from godot_mcp.engine.process.engine_lines import is_startup, without_escapes
from godot_mcp.engine.process.redact import PathPair, Scrubber
from godot_mcp.engine.process.run import CannotStart, Confinement, GodotRun, xdg_homes
from godot_mcp.engine.process.supervisor import Supervisor
from godot_mcp.engine.profile import GODOT_3, EngineProfile
from godot_mcp.engine.project import tree
from godot_mcp.engine.project.presets import (
    KINDS,
    PRESETS_FILE,
    Preset,
    PresetsError,
    find_preset,
    platform_presets_text,
    read_config,
    read_presets,
)
from godot_mcp.errors import Failed
from godot_mcp.features.export.templates import (
    TEMPLATE_DIRS,
    TEMPLATE_MOUNT,
    TemplateRefused,
    open_custom_template,
    template_bytes,
    template_candidates,
    template_paths,
    user_data_home,
)
from godot_mcp.features.export.verify import OutputInvalid, verify_output

RUNNING, SUCCEEDED, FAILED, CANCELLED = "running", "succeeded", "failed", "cancelled"
VERIFYING = "verifying"  # exited 0, outputs being checked: still "running" to callers
_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}")  # never "." or ".."
_NOISE = (
    re.compile(r"Invalid locale '"),
    re.compile(r"Unsupported locale '"),
    re.compile(r'key "patch_list"'),
)


class ExportError(Failed):
    """Base of the export layer's errors."""


class ExportSetupError(ExportError):
    """The export's private work dir could not be prepared."""


@dataclasses.dataclass(frozen=True)
class ExportRunner:
    """How one server exports: its headless Godot binary, where exports work, the base
    environment and what no text may name (frozen: no export changes it).

    ``env`` is the base environment for Godot (default: this process's); the user's export
    templates are looked up under its ``XDG_DATA_HOME`` (else ``$HOME/.local/share``).
    ``profile`` (the engine's) picks the command-line flags. ``engine``: how failures name it
    (``Godot 4.6.3``). Godot always runs under ``godot.sandbox``, seeing only its work dir
    (``ExportJob.launch``).
    """

    headless_binary: str
    work_root: Path
    env: Mapping[str, str] = dataclasses.field(default_factory=lambda: dict(os.environ))
    profile: EngineProfile = GODOT_3
    private: tuple[PathPair, ...] = ()
    engine: str = "Godot"

    def __post_init__(self) -> None:
        object.__setattr__(self, "work_root", Path(self.work_root))
        object.__setattr__(self, "env", dict(self.env))
        object.__setattr__(self, "private", tuple(self.private))

    def start(
        self,
        project: Path,
        preset: Preset,
        kind: str,
        export_id: str,
        expected: list[str],
        plan: tree.Plan | None = None,
        *,
        write_preset: bool = False,
    ) -> ExportJob:
        """Copy the project, then spawn Godot; returns the running job.

        Blocks while the project is copied; see ``start_async`` to copy off the loop.
        """
        job = self.prepare(
            project, preset, kind, export_id, expected, plan, write_preset=write_preset
        )
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
        *,
        write_preset: bool = False,
        launch: bool = True,
    ) -> ExportJob:
        """Like ``start``, copying in a worker thread and spawning in the calling thread
        (``launch=False``: the caller launches it, once it has done more to the snapshot)."""
        try:
            job = await anyio.to_thread.run_sync(
                functools.partial(
                    self.prepare,
                    project,
                    preset,
                    kind,
                    export_id,
                    expected,
                    plan,
                    write_preset=write_preset,
                )
            )
        except anyio.get_cancelled_exc_class():
            shutil.rmtree(self.work_root / export_id, ignore_errors=True)
            raise
        if launch:
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
        *,
        write_preset: bool = False,
    ) -> ExportJob:
        """Build the work dir (snapshot, out, XDG dirs) without starting Godot.

        ``plan`` is the project's copy plan (``tree.plan``), made here when not given; a link
        out of the project raises its ``tree.TreeError`` before anything is created.
        ``write_preset``: ``preset`` is not the project's (``presets.platform_preset``): the
        snapshot's ``export_presets.cfg`` is replaced by one holding it alone, so the project's
        own presets (if any) play no part and the project itself is never written.
        Thread-safe; the returned job must still be ``launch()``-ed from the loop's thread.
        """
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
        if not expected or any("/" in n or n in ("", ".", "..") for n in expected):
            raise ValueError("expected must be a non-empty list of plain file names")
        if not _ID.fullmatch(export_id):
            raise ExportSetupError(f"export id {export_id!r} is not a safe directory name")
        if not (Path(project) / "project.godot").is_file():
            raise ExportSetupError("the project has no project.godot")
        if plan is None:
            plan = tree.plan(Path(project))
        try:
            template_fd = open_custom_template(preset, kind, self.private)
        except TemplateRefused as exc:
            raise ExportSetupError(exc.message) from None
        try:
            return self._prepare(
                project, preset, kind, export_id, expected, plan, template_fd, write_preset
            )
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
        write_preset: bool,
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
            user_godot = user_data_home(self.env) / "godot"
            for name in TEMPLATE_DIRS:
                if (user_godot / name).is_dir():
                    (work_dir / "xdg/data/godot" / name).symlink_to(user_godot / name)
            if write_preset:
                _write_preset(work_dir / "snapshot", preset, self.profile)
            if template_fd is not None:
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
        self._run = Supervisor(cleanup=self.cleanup)
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
        return self._run.pid

    def godot_run(self, log: IO[bytes] | int = subprocess.DEVNULL) -> GodotRun:
        """This export as a Godot run: sandboxed, writing only its work dir, its output
        (stdout and stderr) to ``log``."""
        flags = self._runner.profile.export_flags[self.kind]
        xdg = self.work_dir / "xdg"
        return GodotRun(
            self._runner.headless_binary,
            [
                "--path",
                str(self.snapshot_dir),
                *flags,
                self.preset.name,
                str(self.out_dir / self.expected[0]),
            ],
            self.work_dir,
            base_env=self._runner.env,
            extra_env=xdg_homes(xdg),
            confinement=Confinement(
                home=xdg,
                rw=[self.work_dir],
                ro=template_paths(self._runner.env),
                ro_fds=self._template_binds(),
            ),
            stdout=log,
        )

    def command(self) -> list[str]:
        """The full command line of this export, the sandbox included."""
        return self.godot_run().command()

    def _template_binds(self) -> list[tuple[int, Path]]:
        """The checked custom template, bound where the snapshot's preset looks for it."""
        if self._template_fd is None:
            return []
        return [(self._template_fd, Path(TEMPLATE_MOUNT) / self.kind)]

    def launch(self) -> None:
        """Spawn Godot; call from the thread whose life bounds the child's (the event loop's)."""
        if self.state != "pending":
            raise RuntimeError(f"export {self.export_id} was already launched")
        self.state = RUNNING
        self.started_at = time.monotonic()
        try:
            with open(self.log_path, "wb") as log:
                try:
                    self._run.start(self.godot_run(log))
                except CannotStart as exc:
                    self._end(FAILED, exc.message)
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
        if self.state != RUNNING or self._run.child is None:
            return self.state
        code = self._run.child.poll()
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
                verify_output(
                    name,
                    path,
                    platform=self.preset.platform,
                    kind=self.kind,
                    embedded=self.preset.embed_pck,
                    templates=candidates,
                )
        except OutputInvalid as exc:
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

        async def ended(code: int | None) -> bool:
            return self.poll() != RUNNING

        if self.poll() == RUNNING and self._run.child is not None:
            await self._run.watch(timeout, 0.05, ended)
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
        self._run.kill()
        if self.state in (RUNNING, VERIFYING, "pending"):
            if self._run.child is not None:
                self.exit_code = self._run.returncode
            self._end(CANCELLED, None)

    async def reap(self) -> None:
        """Kill what is left of the process group and reap it (bounded, shielded).

        The sandbox's own children are reaped by its init: wait until the group is empty.
        """
        await self._run.stop()

    async def cancel(self) -> str:
        """Kill a running export and remove its work dir; returns the final state.

        An export that already ended keeps its state (and its work dir, for ``cleanup``).
        """
        if self.poll() not in (RUNNING, VERIFYING, "pending"):
            return self.state
        self.kill()
        await self._run.aclose()  # reaped, then the work dir removed
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
    return sorted(p for p in work_root.iterdir() if p.is_dir() and _ID.fullmatch(p.name))


def _write_preset(snapshot: Path, preset: Preset, engine: EngineProfile) -> None:
    """Make ``preset`` the snapshot's only export preset (``platform_presets_text``)."""
    path = snapshot / PRESETS_FILE
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with open(fd, "w", encoding="utf-8") as f:
        f.write(platform_presets_text(preset, engine))


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
            return without_escapes(f.read().decode("utf-8", errors="replace"))
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
    blocks = [b for b in blocks if not is_startup(b[0])]  # the engine's start-up/shutdown noise
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
    user_godot = user_data_home(runner.env) / "godot"
    for name in TEMPLATE_DIRS:
        pairs.append((work_dir / "xdg/data/godot" / name, "<templates>"))
        pairs.append((user_godot / name, "<templates>"))
    return Scrubber.for_run(pairs, runner.private, runner.env.get("HOME"))

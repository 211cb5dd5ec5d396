"""Launching games: a :class:`GameRunner` owns the sessions it started and (when the server
has no ``DISPLAY``) one private Xvfb.

Each launch listens on its own loopback port with its own secret
(:mod:`godot_mcp.features.game.bridge`) and runs ``godot --path PROJECT --audio-driver Dummy
--script <bridge> -- ARGS``; the bridge script lives in this package and nothing is written
into the project. The bridge's own settings (port, secret, scene) go in the game's
environment, never on the command line, where the game's own ``ARGS`` could reach them.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio

from godot_mcp.engine.process.display import PrivateDisplay
from godot_mcp.engine.process.locate import (
    GodotInstall,
    headless_availability,
    windowed_availability,
)
from godot_mcp.engine.process.redact import PathPair, Scrubber, as_res
from godot_mcp.engine.process.run import CannotStart, GodotRun
from godot_mcp.engine.profile import EngineProfile
from godot_mcp.errors import GodotMcpError
from godot_mcp.features.game.args import check_game_args
from godot_mcp.features.game.bridge import PORT_ENV, SCENE_ENV, SECRET_ENV, BridgeListener
from godot_mcp.features.game.errors import (
    GameFailed,
    GameInvalid,
    GameTimeout,
    GameUnavailable,
    game_error,
    one_line,
)
from godot_mcp.features.game.gate import Gate
from godot_mcp.features.game.session import GameSession
from godot_mcp.features.game.userdata import new_data_dir

__all__ = ["MAX_SIZE", "MIN_SIZE", "MODES", "GameRunner", "bridge_script", "validate_scene"]

MODES = ("windowed", "headless")
MIN_SIZE, MAX_SIZE = 16, 8192
_SCENE = re.compile(r"res://[^\x00-\x1f\\]+\.(?:tscn|scn)")


def validate_scene(scene: str | None) -> str | None:
    """``scene`` if it is a ``res://…tscn``/``.scn`` path without ``..``; else invalid_argument."""
    if scene is None:
        return None
    if (
        not isinstance(scene, str)
        or len(scene) > 1024
        or not _SCENE.fullmatch(scene)
        or ".." in scene.split("/")
        or "/./" in scene
    ):
        raise GameInvalid("scene must be a res:// path to a .tscn or .scn file, without '..'")
    return scene


def _validate_size(size: tuple[int, int] | None) -> tuple[int, int] | None:
    if size is None:
        return None
    if (
        not isinstance(size, tuple)
        or len(size) != 2
        or not all(isinstance(v, int) and MIN_SIZE <= v <= MAX_SIZE for v in size)
    ):
        raise GameInvalid(f"size must be (width, height), each {MIN_SIZE} to {MAX_SIZE}")
    return size


def bridge_script(engine: EngineProfile) -> Path:
    """The bridge script for an engine's GDScript."""
    return Path(__file__).resolve().parent / engine.script("bridge")


class GameRunner:
    """Starts game sessions for one Godot install; :meth:`aclose` ends them all."""

    def __init__(
        self, install: GodotInstall, scratch_dir: Path, private: Sequence[PathPair] = ()
    ) -> None:
        """``private``: more ``(path, placeholder)`` pairs no text may name (the state dir)."""
        self.install = install
        self.scratch_dir = Path(scratch_dir)
        self.private = list(private)
        self._sessions: list[GameSession] = []
        self._display: PrivateDisplay | None = None
        self._closed = False

    @property
    def sessions(self) -> list[GameSession]:
        """The sessions started by this runner that were not released yet."""
        return list(self._sessions)

    async def release(self, session: GameSession, timeout: float = 5) -> int | None:
        """Stop ``session`` (see :meth:`GameSession.stop`) and forget it, its log with it."""
        try:
            return await session.stop(timeout)
        finally:
            with contextlib.suppress(ValueError):
                self._sessions.remove(session)
            await _remove(session.data_dir)

    @property
    def xvfb_pid(self) -> int | None:
        """The private Xvfb's pid while it runs."""
        return self._display.pid if self._display else None

    async def start(
        self,
        project: Path,
        mode: str = "windowed",
        scene: str | None = None,
        timeout: float = 20,
        size: tuple[int, int] | None = None,
        args: Sequence[str] = (),
        engine_args: Sequence[str] = (),
        attach: Callable[[GameSession], Awaitable[Gate]] | None = None,
        background: anyio.abc.TaskGroup | None = None,
    ) -> GameSession:
        """Launch ``project`` with the bridge and wait until its scene is running; ``args``
        go to the game after ``--`` (``features/game/args.py``), ``engine_args`` (the server's
        own, a debugger's address) to the engine.

        ``attach``: a debugger, awaited with the new session within the start's bound; its
        gate is the session's. Such a start answers once the scene runs or the game stopped
        at a break, whichever comes first; in the second case the bridge attaches later, in
        ``background``."""
        if self._closed:
            raise GameFailed("the game runner is closed")
        if mode not in MODES:
            raise GameInvalid("mode must be 'windowed' or 'headless'")
        scene = validate_scene(scene)
        size = _validate_size(size)
        if not timeout > 0:
            raise GameInvalid("timeout must be positive")
        project = Path(project).resolve()
        if not (project / "project.godot").is_file():
            raise GameInvalid("the project has no project.godot")
        self.scratch_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        scrub = Scrubber.for_run([*as_res(project), (self.scratch_dir, "<tmp>")], self.private)

        inst = self.install
        engine = inst.profile_for(mode)
        if mode == "windowed":
            availability, binary = windowed_availability(inst), inst.binary
            flags = list(engine.windowed_flags)
        else:
            availability, binary = headless_availability(inst), inst.headless
            flags = list(engine.headless_flags)
        availability.refuse(GameUnavailable)
        assert binary is not None  # availability said so
        game_args = check_game_args(args, engine)

        env: dict[str, str] = {}  # on top of the game's allow-list (engine/process/run.py)
        if os.environ.get("LANG", "C").split(".")[0] in ("", "C", "POSIX"):
            # Godot reads its locale from LANG and logs two errors for "C"; it falls back
            # to "en" either way, so say "en" and keep the log tails readable.
            env["LANG"] = "en_US.UTF-8"
        if mode == "windowed":
            try:
                env.update(await self._display_env())
            except GodotMcpError as exc:  # the display's refusal, as the game's
                raise game_error(exc, scrub(exc.message)) from None

        # The game's user:// (its saves, the engine's logs) is its session's own (userdata.py).
        version = inst.version_for(mode)
        data = await anyio.to_thread.run_sync(new_data_dir, self.scratch_dir, project, version)
        env["XDG_DATA_HOME"] = str(data)
        try:
            listener = await BridgeListener.open()
        except BaseException:
            await _remove(data)
            raise
        env[SECRET_ENV] = listener.secret
        env[PORT_ENV] = str(listener.port)
        if scene is not None:
            env[SCENE_ENV] = scene
        argv = [*flags, "--path", str(project), "--audio-driver", "Dummy", *engine_args]
        if size is not None:
            argv += ["--resolution", f"{size[0]}x{size[1]}"]
        argv += ["--script", str(bridge_script(engine)), "--", *game_args]
        run = GodotRun(
            binary,
            argv,
            self.scratch_dir,
            extra_env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            child = run.start()
        except CannotStart as exc:
            await listener.aclose()
            await _remove(data)
            raise GameUnavailable(exc.message) from None
        session = GameSession(child, mode, self.scratch_dir, scrub)
        session.data_dir = data
        self._sessions.append(session)
        handed_over = False  # the listener is the background connect's to close
        try:
            with anyio.fail_after(timeout):
                if attach is None or background is None:
                    await session.connect(listener)
                else:
                    await session.attach_gate(attach)
                    handed_over = True
                    await session.connect_or_stop(listener, background)
        except TimeoutError:
            await self._discard(session)
            tail = one_line(session.log_tail(6), 400)
            if attach is not None and session.gate is None:
                raise GameFailed(
                    f"the game's debugger did not connect within {timeout:g} s; the game was "
                    f"ended: {tail or 'no output'}"
                ) from None
            what = "load its scene" if session.connected else "connect back"
            raise GameTimeout(
                f"the game did not {what} within {timeout:g} s: {tail or 'no output'}",
            ) from None
        except BaseException:
            await self._discard(session)
            raise
        finally:
            if not handed_over:
                with anyio.CancelScope(shield=True):
                    await listener.aclose()
        return session

    async def _discard(self, session: GameSession) -> None:
        """Kill a session that failed to start (its log stays until :meth:`aclose`)."""
        await session.stop(timeout=0)
        with contextlib.suppress(ValueError):
            self._sessions.remove(session)
        await _remove(session.data_dir)

    async def _display_env(self) -> dict[str, str]:
        if self.install.display:
            env = {"DISPLAY": self.install.display}
            if xauthority := os.environ.get("XAUTHORITY"):
                env["XAUTHORITY"] = xauthority
            return env
        if not self.install.xvfb:
            raise GameUnavailable("no DISPLAY and no Xvfb installed")
        if self._display is None:
            self._display = PrivateDisplay(self.install.xvfb, self.scratch_dir)
        return await self._display.env()

    async def aclose(self) -> None:
        """Stop every session, delete their logs, then stop the private Xvfb."""
        self._closed = True
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as group:
                for session in self._sessions:
                    group.start_soon(session.stop, 2.0)
            for session in self._sessions:
                await _remove(session.data_dir)
            self._sessions.clear()
            if self._display is not None:
                await self._display.aclose()


async def _remove(folder: Path | None) -> None:
    """Remove a session's own folder (links in it are removed, never followed), off the
    loop; whatever the game left there goes with it."""
    if folder is not None:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(shutil.rmtree, folder, True)

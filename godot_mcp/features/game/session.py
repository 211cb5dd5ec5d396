"""Game sessions: launch a project with the bridge script, capture frames, stop it.

A :class:`GameRunner` owns the sessions it started and (when the server has no ``DISPLAY``) one
private Xvfb. Each launch listens on its own loopback port with its own secret
(:mod:`godot_mcp.features.game.bridge`) and
runs ``godot --path PROJECT --audio-driver Dummy --script
<bridge> -- ARGS``; the bridge script lives in this package and nothing is written into the
project. The bridge's own settings (port, secret, scene) go in the game's environment, never on
the command line, where the game's own ``ARGS`` could reach them. Every wait is bounded;
every failure is a :class:`GameError` (a reply the bridge never sends: the tree's
:class:`~godot_mcp.errors.Malformed`) whose message names no private path.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, Any, TypeVar, cast

import anyio

from godot_mcp.engine.process import engine_lines
from godot_mcp.engine.process.child import Child
from godot_mcp.engine.process.display import PrivateDisplay
from godot_mcp.engine.process.locate import (
    GodotInstall,
    headless_availability,
    windowed_availability,
)
from godot_mcp.engine.process.redact import PathPair, Scrubber, as_res
from godot_mcp.engine.process.run import CannotStart, GodotRun, stop_run
from godot_mcp.engine.project.tree import disk_full
from godot_mcp.errors import Failed, GodotMcpError, Malformed, echoes_cut, quoted
from godot_mcp.features.game.args import check_game_args
from godot_mcp.features.game.bridge import (
    MARK_PREFIX,
    PORT_ENV,
    SCENE_ENV,
    SECRET_ENV,
    BridgeClosed,
    BridgeConnection,
    BridgeListener,
    keep_number_kinds,
    new_mark,
    outside_res,
    parse_mark,
)
from godot_mcp.features.game.capture import (
    Capture,
    Digest,
    assemble_apng,
    check_png,
    check_screenshot,
)
from godot_mcp.features.game.errors import (
    BY_WORD,
    GameError,
    GameFailed,
    GameInvalid,
    GameTimeout,
    GameUnavailable,
    game_error,
    one_line,
)
from godot_mcp.features.game.gate import Gate, stopped_error
from godot_mcp.features.game.log import Entry, GameLog
from godot_mcp.features.game.pacing import (
    MAX_RECORD_WAIT,
    fps_text,
    frames_written,
    recording_bound,
    recording_deadline,
    recording_rate,
)
from godot_mcp.features.game.preview import Preview, RawFrame, contact_sheet
from godot_mcp.features.game.protocol import (
    Applied,
    Called,
    Clock,
    Hello,
    Perf,
    Ping,
    Ready,
    Scripts,
    Tree,
    Values,
    Written,
    frame_reports,
)
from godot_mcp.features.game.userdata import new_data_dir

__all__ = ["Capture", "GameError", "GameRunner", "GameSession"]

log = logging.getLogger(__name__)

MODES = ("windowed", "headless")
MIN_FRAMES, MAX_FRAMES = 2, 300
MIN_FPS, MAX_FPS = 1, 60
MAX_RECORD_SECONDS = 30
FPS_SETTLES = 2.5  # seconds after its start before a game's own frame rate means anything
MIN_SIZE, MAX_SIZE = 16, 8192
EXIT_WAIT = 2.0
MARK_WAIT = 2.0  # how long a call's end marker may trail its reply (output the pipe still holds)
_PROGRESS_S = 0.25  # how often a recording's frames are counted
_RETIRED_MARKS = 64
_DEBUGGER_LINES = frozenset({"PROFILING ALRIGHT!", "PROFILING END!"})
# The commands whose arguments carry JSON values, and the argument that does.
_VALUES = {"set": "values", "call": "args"}
_BRIDGES = {3: "bridge3.gd", 4: "bridge4.gd"}
_SCENE = re.compile(r"res://[^\x00-\x1f\\]+\.(?:tscn|scn)")

T = TypeVar("T")


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


def validate_recording(frames: int, fps: int) -> None:
    """Raise invalid_argument unless 2 ≤ frames ≤ 300, 1 ≤ fps ≤ 60 and frames/fps ≤ 30 s."""
    for name, value, low, high in (
        ("frames", frames, MIN_FRAMES, MAX_FRAMES),
        ("fps", fps, MIN_FPS, MAX_FPS),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise GameInvalid(f"{name} must be an integer from {low} to {high}")
    if frames > fps * MAX_RECORD_SECONDS:
        raise GameInvalid(
            f"{frames} frames at {fps} fps is {frames / fps:g} s; at most "
            f"{MAX_RECORD_SECONDS} s of game time",
        )


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


def bridge_script(major: int | None) -> Path:
    """The bridge script for a Godot major version (3 when unknown)."""
    name = _BRIDGES[4] if (major or 3) >= 4 else _BRIDGES[3]
    return Path(__file__).resolve().parent / name


class GameSession:
    """One running game, driven through its bridge connection."""

    def __init__(
        self,
        child: Child,
        mode: str,
        scratch: Path,
        scrub: Scrubber,
    ) -> None:
        self._born = time.monotonic()
        self.mode = mode
        # Before the log and its readers: a reader thread asks it from its first line on.
        self.gate: Gate | None = None  # a debugger's breaks, for a session started with one
        self._child = child
        # The marks of the calls in flight: each names its call's span and its end of it.
        self._marks: dict[str, tuple[list[int | None], int]] = {}
        self._retired: dict[str, None] = {}  # the last marks used: a late line is hidden too
        self.log = GameLog(scrub, take=self._take_mark)
        self._pumps = [
            _pump(self.log, name, pipe)
            for name, pipe in (("stdout", child.stdout), ("stderr", child.stderr))
            if pipe is not None
        ]
        self._scratch = scratch
        self._scrub = scrub
        self._conn: BridgeConnection | None = None
        self._state = "starting"
        self._exit_code: int | None = None
        self._hello: Hello | None = None
        self._ready: Ready | None = None
        self._capture_lock = anyio.Lock()
        # the bridge's failure after a debug start
        self._attach_error: GameError | Malformed | None = None
        self._attached = anyio.Event()  # the bridge connected (or failed to)
        self.data_dir: Path | None = None  # its own XDG_DATA_HOME (user://), its runner's

    # -- state -----------------------------------------------------------------------------

    @property
    def state(self) -> str:
        """``starting``, ``running``, ``exited`` (on its own) or ``stopped`` (by us)."""
        return self.poll()

    @property
    def exit_code(self) -> int | None:
        """The game's exit code once it ended (negative: killed by that signal)."""
        self.poll()
        return self._exit_code

    @property
    def scrub(self) -> Scrubber:
        """What every text of this game passes before a client sees it."""
        return self._scrub

    @property
    def pid(self) -> int:
        """The game's pid (also its process group id)."""
        return self._child.pid

    @property
    def headless(self) -> bool:
        """True when the engine cannot draw: captures are unavailable."""
        return self.mode == "headless" or (self._hello is not None and self._hello.headless)

    @property
    def engine_version(self) -> str | None:
        """The version string the engine reported."""
        return self._hello.engine if self._hello is not None else None

    @property
    def viewport_size(self) -> tuple[int, int] | None:
        """The root viewport size reported when the scene was ready."""
        if self._ready is None:
            return None
        return self._ready.width, self._ready.height

    def poll(self) -> str:
        """Refresh and return the state, noticing a game that exited on its own."""
        code = self._child.poll()
        if code is not None:
            self._exit_code = code
            if self._state in ("starting", "running"):
                self._state = "exited"
        return self._state

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of the game's output, private paths scrubbed."""
        return "\n".join(self.log.tail(lines))

    async def drained(self, timeout: float = 1.0) -> None:
        """Wait (bounded) until the game's output has been read to its end."""
        with anyio.move_on_after(timeout):
            while any(p.is_alive() for p in self._pumps):
                await anyio.sleep(0.01)

    # -- captures --------------------------------------------------------------------------

    async def screenshot(self, timeout: float = 15, raw: bool = False) -> Capture:
        """A PNG of the root viewport, written to a temp file in the scratch dir; with
        ``raw``, its pixels too when the engine can write them (``Capture.raw``)."""
        self._require_capturable()
        path = _temp_file(self._scratch, "shot-", ".png")
        pixels = _temp_file(self._scratch, "shot-", ".raw") if raw else None
        args: dict[str, Any] = {"path": str(path)}
        if pixels is not None:
            args["raw_path"] = str(pixels)
        try:
            reply = await self._call("screenshot", timeout, **args)
            (frame,) = frame_reports("screenshot", reply, 1)
            given = None
            if pixels is not None and frame.raw is not None:
                given = RawFrame(pixels, frame.raw, frame.width, frame.height)
            # The game wrote these files: opened off the loop, as features/game/files.py says.
            digest, shown = await anyio.to_thread.run_sync(
                lambda: check_screenshot(self._scratch, path, frame.width, frame.height, given),
                abandon_on_cancel=True,
            )
        except (GameError, Malformed) as exc:
            _unlink(path, pixels)
            raise self._explain(exc) from None
        except BaseException:
            _unlink(path, pixels)
            raise
        if pixels is not None and shown is None:
            pixels.unlink(missing_ok=True)
        return Capture(
            path=path,
            media_type="image/png",
            width=frame.width,
            height=frame.height,
            frames=1,
            engine_ms=frame.ms,
            raw=shown,
            digest=digest,
            root=self._scratch,
        )

    async def record(
        self,
        frames: int,
        fps: int,
        timeout: float | None = None,
        sheet: tuple[int, int] | None = None,
    ) -> Capture:
        """``frames`` frames ``1/fps`` s of game time apart, as one looping APNG; with
        ``sheet`` (width, bytes at most), a contact sheet of them too (``preview.py``).

        Bounded as ``pacing.py`` says; ``timeout``: a bound of the caller's instead, which the
        recording's own rate never extends."""
        validate_recording(frames, fps)
        self._require_capturable()
        first = cap = timeout if timeout is not None else float(MAX_RECORD_WAIT)
        if timeout is None:
            first = recording_bound(frames, fps, await self._measured_fps())
        work = Path(tempfile.mkdtemp(prefix="rec-", dir=self._scratch))
        out = _temp_file(self._scratch, "rec-", ".png")
        paths = [work / f"frame-{i:04d}.png" for i in range(frames)]
        try:
            reply = await self._paced_record(paths, fps, first, cap)
            infos = frame_reports("record", reply, frames)
            width, height = infos[0].width, infos[0].height
            if any((i.width, i.height) != (width, height) for i in infos):
                raise GameFailed("the window was resized during the recording")

            def check_and_assemble() -> tuple[Digest, Preview | None]:  # off the loop
                for path, info in zip(paths, infos, strict=True):
                    check_png(path, info.width, info.height, self._scratch)
                digest = assemble_apng(paths, out, fps, self._scratch)
                shown = _sheet(paths, sheet, self._scratch) if sheet is not None else None
                return digest, shown

            digest, preview = await anyio.to_thread.run_sync(
                check_and_assemble, abandon_on_cancel=True
            )
        except (GameError, Malformed) as exc:
            out.unlink(missing_ok=True)
            raise self._explain(exc) from None
        except OSError as exc:
            out.unlink(missing_ok=True)
            why = GameFailed(f"the recording could not be written: {exc.strerror}")
            raise self._explain(why) from None
        except BaseException:
            out.unlink(missing_ok=True)
            raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return Capture(
            path=out,
            media_type="image/apng",
            width=width,
            height=height,
            frames=frames,
            engine_ms=round(sum(info.ms for info in infos), 3),
            preview=preview,
            digest=digest,
            root=self._scratch,
        )

    async def _paced_record(
        self, paths: Sequence[Path], fps: int, first: float, cap: float
    ) -> dict[str, Any]:
        """The bridge's answer to a recording into ``paths``, watched while it runs: given up
        at ``recording_deadline`` (the bridge drops the job as the call is abandoned) with a
        timeout saying how far it got and at what rate."""
        started = time.monotonic()
        seen: list[float] = []  # when each frame file was first seen
        outcome: list[dict[str, Any] | BaseException] = []

        async def record() -> None:
            try:
                outcome.append(
                    await self._call("record", cap + 1, fps=fps, paths=[str(p) for p in paths])
                )
            except Exception as exc:  # the call's own answer (a failure, the game gone)
                outcome.append(exc)
            group.cancel_scope.cancel()

        async def count() -> None:
            got = await anyio.to_thread.run_sync(
                frames_written, paths, len(seen), abandon_on_cancel=True
            )
            seen.extend([time.monotonic()] * (got - len(seen)))

        async def watch() -> None:
            while time.monotonic() < recording_deadline(started, seen, len(paths), first, cap):
                await anyio.sleep(_PROGRESS_S)
                await count()
            group.cancel_scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(record)
            group.start_soon(watch)
        if outcome:
            answer = outcome[0]
            if isinstance(answer, dict):
                return answer
            if not isinstance(answer, GameTimeout):
                raise answer
        await count()
        now = time.monotonic()
        rate = recording_rate(seen, started, now)
        drew = f"the game drew {fps_text(rate)} fps for it" if seen else "no frame came"
        raise GameTimeout(
            f"the recording got {len(seen)} of {len(paths)} frames within {now - started:.0f} s "
            f"({drew}); nothing was registered",
            fps=round(rate, 3),
            frames_captured=len(seen),
        )

    async def _measured_fps(self) -> float:
        """The game's own frame rate now (0 when it has not measured one yet: the engines
        count frames a second at a time, and say 0 or 1 before the first count is in)."""
        if time.monotonic() - self._born < FPS_SETTLES:
            return 0.0
        try:
            return (await self.ping(5)).fps
        except GameTimeout:
            return 0.0

    def _explain(self, exc: GameError | Malformed) -> GameError | Malformed:
        """A capture failure on a full disk says so (the engine's half-written file does not)."""
        if isinstance(exc, Failed) and disk_full(self._scratch):
            return GameFailed(
                "the server's state dir disk is full: the capture could not be written"
            )
        return exc

    def _require_capturable(self) -> None:
        if self.headless:
            raise GameUnavailable("captures need a windowed session; this one is headless")

    # -- commands: each answers its reply parsed (game/protocol.py) -------------------------

    async def ping(self, timeout: float = 10) -> Ping:
        """The frame the game is at and its measured rate."""
        return Ping.parse(await self._command("ping", timeout))

    async def send_input(self, events: Sequence[Any], timeout: float = 30) -> Applied:
        """Apply the input events in order (waits included)."""
        return Applied.parse(await self._command("input", timeout, events=list(events)))

    async def tree(self, root: str, depth: int, max_nodes: int) -> Tree:
        """The scene tree below ``root``, ``depth`` levels, at most ``max_nodes`` nodes."""
        reply = await self._command("tree", root=root, depth=depth, max_nodes=max_nodes)
        tree = Tree.parse(reply)
        scene = tree.current_scene
        return replace(
            tree,
            nodes=self._scrub.game_json(tree.nodes),
            current_scene=self._scrub.game(scene) if scene is not None else None,
        )

    async def time(self, action: str, frames: int, time_scale: float, timeout: float) -> Clock:
        """Pause, resume, step ``frames`` frames or scale time."""
        reply = await self._command(
            "time", timeout, action=action, frames=frames, time_scale=time_scale
        )
        return Clock.parse(reply)

    async def get(self, path: str, properties: Sequence[str] | None = None) -> Values:
        """A node's class and values (``properties``, or its editor-visible ones)."""
        args: dict[str, Any] = {"path": path}
        if properties:
            args["properties"] = list(properties)
        read = Values.parse(await self._command("get", **args))
        return replace(
            read,
            class_name=self._scrub.game(read.class_name),
            values=self._scrub.game_json(read.values),
        )

    async def set(self, path: str, values: dict[str, Any]) -> Written:
        """Write a node's properties; each as the node holds it after."""
        written = Written.parse(await self._command("set", path=path, values=values))
        return Written(self._scrub.game_json(written.values))

    async def loaded_scripts(self) -> list[str]:
        """The project's scripts the game uses (its nodes' scripts and their bases)."""
        return Scripts.parse("scripts", "scripts", await self._command("scripts")).paths

    async def reload(self, paths: Sequence[str], timeout: float = 30) -> list[str]:
        """Read ``paths`` again and recompile them in the running game (instances keep their
        members); the paths reloaded. The caller makes sure they parse."""
        reply = await self._command("reload", timeout, paths=list(paths))
        return [self._scrub.game(p) for p in Scripts.parse("reload", "reloaded", reply).paths]

    async def perf(self) -> Perf:
        """The engine's performance monitors at one frame."""
        return Perf.parse(await self._command("perf"))

    async def _command(self, cmd: str, timeout: float = 10, **args: Any) -> dict[str, Any]:
        """One bridge command (scene tree, time, input…): concurrent with any other command.

        The JSON values of ``set`` and ``call`` go with their number kinds kept
        (:func:`~godot_mcp.features.game.bridge.keep_number_kinds`). Raises GameNotFound,
        GameInvalid, GameFailed or GameTimeout as the bridge answers.
        """
        field = _VALUES.get(cmd)
        if field is not None and field in args:
            if (path := outside_res(args[field])) is not None:
                raise GameInvalid(f"an Object path must stay inside res://: {quoted(path)}")
            args[field] = keep_number_kinds(args[field])
        return await self._call(cmd, timeout, exclusive=False, **args)

    async def call(
        self, path: str, method: str, args: Sequence[Any], timeout: float = 10
    ) -> tuple[Any, Entry | None]:
        """Call a node's method: its result, and the first script error the call logged.

        One round trip: the bridge prints this call's two marker lines to stderr just before
        and just after the call and answers after the second, so once the log has read that
        line (already in the pipe), every error line of the call, with its ``At:`` line, is
        in the log between the two.
        """
        marks = [new_mark(), new_mark()]
        span: list[int | None] = [None, None]  # seq of the next line kept after each marker
        for at, token in enumerate(marks):
            self._marks[token] = (span, at)
        start = self.log.next_seq
        try:
            reply = Called.parse(
                await self._command(
                    "call", timeout, path=path, method=method, args=list(args), marks=marks
                )
            )
            with anyio.move_on_after(MARK_WAIT):
                while span[1] is None:
                    await anyio.sleep(0.001)
        finally:
            for token in marks:
                self._marks.pop(token, None)
                self._retired[token] = None
            while len(self._retired) > _RETIRED_MARKS:
                self._retired.pop(next(iter(self._retired)))
        begin = span[0] if span[0] is not None else start
        return self._scrub.game_json(reply.result), self._first_error(begin, span[1])

    async def _synced(self, timeout: float = MARK_WAIT) -> None:
        """Wait (bounded) until every line the game printed to stderr so far is in its log:
        the bridge prints a marker line there and the log reads up to it."""
        token = new_mark()
        span: list[int | None] = [None]
        self._marks[token] = (span, 0)
        try:
            with anyio.move_on_after(timeout):
                if self._conn is not None:
                    await self._race(self._conn.request, "ping", marks=[token])
                while span[0] is None:
                    await anyio.sleep(0.001)
        except (GameError, Malformed, BridgeClosed):
            pass  # a game that cannot answer has said what it could
        finally:
            self._marks.pop(token, None)
            self._retired[token] = None

    def _first_error(self, begin: int, end: int | None) -> Entry | None:
        """The first error line on stderr from seq ``begin`` up to ``end`` (None: up to now)."""
        page = self.log.read(begin, 100, "error")
        for entry in page.entries:
            if end is not None and entry.seq >= end:
                break
            if entry.stream == "stderr":
                return entry
        return None

    def _take_mark(self, stream: str, text: str, seq: int) -> bool:
        """Note a call's marker line (the log keeps it out); False for any other line.

        Run by the log, under its lock, on a pipe reader's thread. A line naming a mark no
        call was given (a game printing one) is the game's own and stays in its log; only
        the first line of a mark counts.
        """
        if self.gate is not None and stream == "stdout" and text in _DEBUGGER_LINES:
            return True  # Godot 3.2's answer to the server's own profiler requests
        if self.gate is not None and stream == "stderr" and self.gate.quiet():
            return True  # the engine's words on the server's own evaluation
        if stream != "stderr" or not text.startswith(MARK_PREFIX):
            return False
        token = parse_mark(text)
        if token is None:
            return False
        found = self._marks.get(token)
        if found is None:
            return token in self._retired
        span, at = found
        if span[at] is None:
            span[at] = seq
        return True

    async def _call(
        self, cmd: str, timeout: float, *, exclusive: bool = True, **args: Any
    ) -> dict[str, Any]:
        """Send one command, racing its reply against the game's exit, within ``timeout``.

        Captures hold the capture lock (one at a time); other commands run concurrently.
        """
        await self._bridge_ready(timeout)
        self._require_running()
        conn = self._conn
        assert conn is not None
        with anyio.move_on_after(timeout) as scope:
            async with self._capture_lock if exclusive else contextlib.nullcontext():
                self._require_running()
                reply = await self._race(conn.request, cmd, **args)
        if scope.cancelled_caught:
            raise GameTimeout(f"the game did not answer {cmd} within {timeout:g} s")
        if not reply.get("ok"):
            kind = BY_WORD.get(str(reply.get("error") or "failed"), GameFailed)
            message = echoes_cut(str(reply.get("message") or f"{cmd} failed"), args)
            raise kind(self._scrub.game(message))
        return reply

    async def _bridge_ready(self, timeout: float) -> None:
        """A debug start answers at a break before the bridge attached: once the game runs
        again, a command waits (bounded) for the bridge rather than being refused."""
        if self._ready is not None or self.gate is None or self.poll() != "running":
            return
        gate = self.gate
        with anyio.move_on_after(timeout):
            async with anyio.create_task_group() as group:

                async def first(fn: Callable[[], Awaitable[None]]) -> None:
                    await fn()
                    group.cancel_scope.cancel()

                group.start_soon(first, self._attached.wait)
                group.start_soon(first, gate.until_stopped)

    def _require_running(self) -> None:
        state = self.poll()
        if state == "exited":
            raise self._exit_error(self._exit_code)
        if state != "running":
            raise GameFailed(f"the game session is {state}")
        if self.gate is not None and (where := self.gate.stopped_at()) is not None:
            raise stopped_error(self._scrub(where))
        if self._attach_error is not None:
            raise self._attach_error
        if self._ready is None:
            raise GameUnavailable("the game has not attached its bridge yet; try again shortly")

    def _exit_error(self, code: int | None, when: str = "") -> GameError:
        lines = self.log.tail(6, telling=True)
        tail = one_line("\n".join(lines), 400)
        return GameFailed(f"game exited with code {code}{when}: {tail or 'no output'}")

    async def while_running(self, fn: Callable[[], Awaitable[T]]) -> T:
        """``fn()`` (a wait made of many commands), unless the game stops at a break first:
        then :func:`stopped_error`, as soon as the break is seen."""
        await self._bridge_ready(EXIT_WAIT * 5)
        self._require_running()
        gate = self.gate
        if gate is None:
            return await fn()
        outcome: list[tuple[bool, Any]] = []

        async def work() -> None:
            try:
                outcome.append((True, await fn()))
            except Exception as exc:  # the wait's own answer (a timeout, a refusal)
                outcome.append((False, exc))
            group.cancel_scope.cancel()

        async def stopped() -> None:
            await gate.until_stopped()
            group.cancel_scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(work)
            group.start_soon(stopped)
        if outcome:
            done, value = outcome[0]
            if not done:
                raise value
            return cast(T, value)
        raise stopped_error(self._scrub(gate.stopped_at() or "a break"))

    async def _race(
        self, fn: Callable[..., Awaitable[T]], *args: Any, gated: bool = True, **kwargs: Any
    ) -> T:
        """Run ``fn`` unless the game exits first, or (``gated``) stops at a debugger's break;
        a closed bridge becomes a GameError, a break :func:`stopped_error`."""
        result: list[T] = []
        gate = self.gate if gated else None

        async def work() -> None:
            with contextlib.suppress(BridgeClosed):
                result.append(await fn(*args, **kwargs))
            group.cancel_scope.cancel()

        async def watch() -> None:
            await self._child.wait()
            group.cancel_scope.cancel()

        async def stopped() -> None:
            assert gate is not None
            await gate.until_stopped()
            group.cancel_scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(work)
            group.start_soon(watch)
            if gate is not None:
                group.start_soon(stopped)
        if result:
            return result[0]
        if gate is not None and (where := gate.stopped_at()) is not None:
            raise stopped_error(self._scrub(where))
        code = await self._child.wait_for(EXIT_WAIT)
        if code is not None:
            self.poll()
            await self.drained()
            raise self._exit_error(code, " before connecting back" if self._conn is None else "")
        raise GameFailed("the game closed its bridge connection")

    # -- lifecycle -------------------------------------------------------------------------

    async def _connect(self, listener: BridgeListener) -> None:
        """Wait for the authenticated hello, then for the scene to be ready (unbounded)."""
        try:
            await self._attach(listener)
        finally:
            self._attached.set()

    async def _attach(self, listener: BridgeListener) -> None:
        conn, hello = await self._race(listener.accept, gated=False)
        said = Hello.parse(hello)
        engine = self._scrub.game(said.engine) if said.engine is not None else None
        self._conn, self._hello = conn, replace(said, engine=engine)
        ready = Ready.parse(await self._race(conn.receive_type, "ready", gated=False))
        if not ready.loaded:
            reason = ready.error or "the scene failed to load"
            await self._synced()  # the engine's lines of the failure, before anything is read
            details = [line for line in self.log.tail(12, telling=True) if not _is_noise(line)]
            details = details[-3:]
            if details:
                reason += ": " + one_line("\n".join(details), 300)
            raise GameFailed(self._scrub.game(reason))
        self._ready = ready
        self._state = "running"

    async def _connect_or_stop(
        self, listener: BridgeListener, background: anyio.abc.TaskGroup
    ) -> None:
        """Connect the bridge in ``background`` and wait until it did or the game stopped at a
        break first (then it is ``running``, stopped, its bridge still to come). The
        background connect closes the listener; it ends with the game at the latest."""
        gate = self.gate
        assert gate is not None
        done = anyio.Event()
        failed: list[BaseException] = []

        async def connect() -> None:
            try:
                await self._connect(listener)
            except (GameError, Malformed) as exc:
                failed.append(exc)
                self._attach_error = exc
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as exc:
                failed.append(exc)
            finally:
                done.set()
                with anyio.CancelScope(shield=True):
                    await listener.aclose()

        async def stopped() -> None:
            await gate.until_stopped()

        background.start_soon(connect)
        async with anyio.create_task_group() as group:

            async def first(fn: Callable[[], Awaitable[None]]) -> None:
                await fn()
                group.cancel_scope.cancel()

            group.start_soon(first, done.wait)
            group.start_soon(first, stopped)
        if failed:
            raise failed[0]
        if self._state == "starting" and gate.stopped_at() is not None:
            self._state = "running"  # stopped at a break: running as far as callers see

    async def end(self, reason: str) -> None:
        """End the game now, its reason written in its log: the session becomes ``exited``
        (a debugger lost while the game was stopped would leave it stopped for ever)."""
        self.log.note("stderr", "error", reason, None)
        await stop_run(self._child)
        self.poll()

    async def stop(self, timeout: float = 5) -> int | None:
        """Ask the game to quit, wait up to ``timeout`` s, then kill its process group."""
        with anyio.CancelScope(shield=True):
            live = self.poll() in ("starting", "running")
            at_break = self.gate is not None and self.gate.stopped_at() is not None
            if live and self._conn is not None and not at_break:
                with anyio.move_on_after(max(0.0, timeout)), contextlib.suppress(BridgeClosed):
                    await self._conn.send({"id": 0, "cmd": "quit"})
                    await self._child.wait()
            await stop_run(self._child)
            if self._conn is not None:
                await self._conn.aclose()
            self.poll()
            if live:
                self._state = "stopped"
            return self._exit_code
        return self._exit_code  # not reached: a shielded scope is never cancelled


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
        if mode == "windowed":
            availability, binary, major = windowed_availability(inst), inst.binary, inst.major
            flags: list[str] = inst.windowed_flags
        else:
            availability, binary, major = (
                headless_availability(inst),
                inst.headless,
                inst.headless_major,
            )
            flags = ["--headless"] if inst.headless_needs_flag else []
        if availability != "available" or binary is None:
            raise GameUnavailable(availability.removeprefix("unavailable: "))
        game_args = check_game_args(args, major)

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
        argv += ["--script", str(bridge_script(major)), "--", *game_args]
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
                    await session._connect(listener)
                else:
                    session.gate = await session._race(attach, session, gated=False)
                    handed_over = True
                    await session._connect_or_stop(listener, background)
        except TimeoutError:
            await self._discard(session)
            tail = one_line(session.log_tail(6), 400)
            if attach is not None and session.gate is None:
                raise GameFailed(
                    f"the game's debugger did not connect within {timeout:g} s; the game was "
                    f"ended: {tail or 'no output'}"
                ) from None
            what = "connect back" if session._conn is None else "load its scene"
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


def _pump(game_log: GameLog, name: str, pipe: IO[bytes]) -> threading.Thread:
    """Read one of the game's pipes into its log until EOF, on a thread of its own.

    A game printing megabytes a second costs this thread, never the event loop's reads of
    other sessions; what the buffer cannot keep is counted as dropped.
    """

    def run() -> None:
        fd = pipe.fileno()
        failed = False
        try:
            while True:
                try:
                    data = os.read(fd, 1 << 16)
                except OSError:
                    data = b""
                try:
                    game_log.feed(name, data)
                except Exception:  # a fault here must not close the pipe under the game
                    if not failed:
                        log.exception("the game's %s could not be logged", name)
                    failed = True
                if not data:
                    return
        finally:
            pipe.close()

    thread = threading.Thread(target=run, name=f"game-{name}", daemon=True)
    thread.start()
    return thread


def _is_noise(line: str) -> bool:
    """Log lines that say nothing about why a scene failed: not an error, warning or parse
    error, or one of the engine's start-up lines."""
    text = line.strip()
    telling = engine_lines.level(text) != "print" or "parse error" in text.lower()
    return not telling or engine_lines.is_startup(text)


async def _remove(folder: Path | None) -> None:
    """Remove a session's own folder (links in it are removed, never followed), off the
    loop; whatever the game left there goes with it."""
    if folder is not None:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(shutil.rmtree, folder, True)


def _temp_file(scratch: Path, prefix: str, suffix: str) -> Path:
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=scratch)
    os.close(fd)
    return Path(name)


def _unlink(*paths: Path | None) -> None:
    for path in paths:
        if path is not None:
            path.unlink(missing_ok=True)


def _sheet(paths: Sequence[Path], sheet: tuple[int, int], root: Path) -> Preview | None:
    """The contact sheet of checked frames; None (logged) if Pillow cannot make it: the
    recording itself stands without it."""
    try:
        return contact_sheet(paths, *sheet, root=root)
    except Exception:
        log.warning("the recording's contact sheet could not be made", exc_info=True)
        return None

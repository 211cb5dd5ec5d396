"""Managed game sessions bound to their caller; captures registered as artifacts.

A session survives a generation change; each capture binds to the generation
current when it is taken. Capture files are written by the bridge into the
store's private scratch dir and deleted once registered (or refused).
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio

from godot_mcp.engine.debugger import Debugger
from godot_mcp.engine.process.availability import Availability
from godot_mcp.engine.process.locate import (
    GodotInstall,
    headless_availability,
    windowed_availability,
)
from godot_mcp.engine.project.facts import refuse_csharp
from godot_mcp.engine.project.imported import refuse_never_imported
from godot_mcp.engine.project.source import code_at
from godot_mcp.errors import (
    Failed,
    InvalidArgument,
    Unavailable,
)
from godot_mcp.features.game import (
    Capture,
    Entry,
    GameRunner,
    GameSession,
    Page,
    Preview,
    decode_cursor,
    downscale,
    input_timeout,
    open_game_stream,
    project_file_warnings,
    validate_recording,
    wait_for_line,
    wait_until,
)
from godot_mcp.features.game.debugging import DebugLaunch, parse_breakpoints
from godot_mcp.features.game.protocol import (
    Applied,
    Clock,
    Inspected,
    Perf,
    Tree,
    Values,
    Written,
)
from godot_mcp.features.game.scenetree import TreeFilters
from godot_mcp.runtime.context import Runtime
from godot_mcp.runtime.ended import EndedSessions
from godot_mcp.runtime.owner import me
from godot_mcp.runtime.scratch import sweep_dead_scratch
from godot_mcp.store.binding import check_owner, unknown
from godot_mcp.store.ids import is_valid_id, new_id
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import ArtifactInfo, Caller, NewArtifact

MAX_EXITED = 16  # sessions that exited on their own kept (with their logs) per server

log = logging.getLogger(__name__)


def _register(
    store: ArtifactStore, caller: Caller, generation: int, capture: Capture
) -> ArtifactInfo:
    """Register a capture's file (a worker thread's): opened as every file a game can reach
    (``features/game/files.py``), read no further than the bytes checked, and kept only if they
    are still those bytes."""
    digest = capture.digest
    if digest is None or capture.root is None:
        raise Failed("the capture was not checked")
    with open_game_stream(capture.root, capture.path, limit=digest.size) as source:
        item = NewArtifact(
            capture.media_type,
            source,
            frames=capture.frames,
            width=capture.width,
            height=capture.height,
            expected_sha256=digest.sha256,
            expected_size=digest.size,
        )
        return store.register(caller, generation, item)


@dataclass
class Managed:
    """A game session and the caller it is bound to."""

    id: str
    game: GameSession
    owner: Caller
    debug: DebugLaunch | None = None
    warnings: list[str] = field(default_factory=list)  # what its start said to know

    def summary(self) -> dict[str, Any]:
        """The session as ``runtime.session.start`` and ``.list`` show it."""
        out: dict[str, Any] = {"id": self.id, "mode": self.game.mode, "state": self.game.poll()}
        if self.game.exit_code is not None:
            out["exit_code"] = self.game.exit_code
        if self.debug is not None:
            debugger = self.debug.debugger
            out["debug"] = debugger is not None and debugger.lost is None
        return out

    def debugger(self) -> Debugger:
        """The session's debugger; ``Unavailable`` when it has none (any more)."""
        debugger = self.debug.debugger if self.debug is not None else None
        if debugger is None:
            raise Unavailable("the session was started without debug")
        if debugger.lost is not None:
            raise debugger.not_stopped()  # its loss, worded once
        return debugger


class GameService:
    """Starts, lists, stops and captures the game sessions of one server process."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        pid, start = me()
        # Per process: servers sharing a state dir must not share an Xvfb cookie or temp files.
        self.scratch = rt.dirs.scratch_dir / "games" / f"{pid}-{start}"
        self.runner = GameRunner(rt.godot, self.scratch, rt.private_paths())
        self.sessions: dict[str, Managed] = {}
        self._ended = EndedSessions()  # HTTP sessions that ended (a start in flight checks)
        self._starting = 0
        self._stack = AsyncExitStack()
        self._tg: anyio.abc.TaskGroup | None = None  # the debuggers' readers

    async def start_service(self) -> None:
        """Sweep the scratch killed servers left, make this one's, and open the task group
        that reads the debuggers' connections; from the server's own task."""

        def prepare() -> None:
            self.rt.dirs.scratch("games")
            sweep_dead_scratch(self.rt.store)
            self.scratch.mkdir(mode=0o700, exist_ok=True)

        await self.rt.disk(prepare)
        self._tg = await self._stack.enter_async_context(anyio.create_task_group())

    def availability(self, mode: str = "windowed") -> Availability:
        install = self.rt.godot
        return (
            windowed_availability(install) if mode == "windowed" else headless_availability(install)
        )

    def any_availability(self, *modes: str) -> Availability:
        """Available when a game can run in any of ``modes``; else the first mode's reason."""
        answers = [self.availability(m) for m in modes or ("windowed", "headless")]
        return next((a for a in answers if a.ok), answers[0])

    async def start(
        self,
        caller: Caller,
        mode: str,
        scene: str | None,
        args: Sequence[str] = (),
        debug: bool = False,
        breakpoints: Sequence[str] = (),
    ) -> Managed:
        """Launch the project (or ``scene``) with the bridge, ``args`` for the game; bound
        to ``caller``. Sessions of one project run side by side up to the capacity. With
        ``debug``, the engine's debugger is attached (``breakpoints`` in force from the
        first frame)."""
        if breakpoints and not debug:
            raise InvalidArgument("breakpoints need debug: true")
        self.availability(mode).refuse()
        limit = self.rt.capacity.max_game_sessions
        if self.running() + self._starting >= limit:
            raise Unavailable(
                f"{limit} game sessions are running (this server's --max-game-sessions); "
                "stop one first"
            )
        self._starting += 1  # a slot is held from here: concurrent starts cannot overshoot
        launch: DebugLaunch | None = None
        try:
            points, warnings = await self.rt.disk(
                _vetted, self.rt.project, self.rt.godot, mode, scene, breakpoints
            )
            if debug:
                assert self._tg is not None, "start_service() first"
                profile = self.rt.godot.profile_for(mode)
                launch = await DebugLaunch.open(profile, points, self._tg)
            game = await self.runner.start(
                self.rt.project,
                mode,
                scene,
                args=args,
                engine_args=launch.engine_args() if launch else (),
                attach=launch.attach if launch else None,
                background=self._tg,
            )
        except BaseException:
            if launch is not None:
                await launch.aclose()
            raise
        finally:
            self._starting -= 1
        if caller.session_id is not None and caller.session_id in self._ended:
            await self.runner.release(game, 0)  # the session ended while it was starting
            raise Unavailable("the MCP session ended")
        managed = Managed(new_id(), game, caller, launch, warnings)
        self.sessions[managed.id] = managed
        await self._release_exited()
        return managed

    async def _release_exited(self) -> None:
        """Past ``MAX_EXITED`` sessions that exited on their own and were never stopped,
        release the oldest (their logs with them): memory stays bounded whatever callers do."""
        exited = [m for m in self.sessions.values() if m.game.poll() == "exited"]
        for managed in exited[: max(0, len(exited) - MAX_EXITED)]:
            self.sessions.pop(managed.id, None)
            await self.runner.release(managed.game, 0)

    def get(self, caller: Caller, session_id: str) -> Managed:
        """The caller's session, or a typed refusal."""
        if not isinstance(session_id, str) or not is_valid_id(session_id):
            raise unknown("game session")
        managed = self.sessions.get(session_id)
        if managed is None:
            raise unknown("game session")
        check_owner(caller, managed.owner, "game session")
        return managed

    def running(self) -> int:
        """How many of this server's games are starting or running."""
        return sum(1 for m in self.sessions.values() if m.game.poll() in ("starting", "running"))

    def list(self, caller: Caller) -> list[Managed]:
        """The caller's sessions, oldest first."""
        return [m for m in self.sessions.values() if m.owner == caller]

    async def stop(self, caller: Caller, session_id: str) -> Managed:
        """Stop a session (quit, then kill its process group)."""
        managed = self.get(caller, session_id)
        await self.runner.release(managed.game)
        self.sessions.pop(session_id, None)  # stopped for good: nothing more to list
        return managed

    async def screenshot(
        self, caller: Caller, generation: int, session_id: str, preview_px: int = 0
    ) -> tuple[ArtifactInfo, Preview | None]:
        """One PNG of the root viewport, registered as an artifact; with ``preview_px``, the
        frame downscaled too, made while the artifact is being registered."""
        game = self.get(caller, session_id).game
        capture = await game.screenshot(raw=preview_px > 0)
        done: dict[str, Any] = {}

        async def preview() -> None:
            try:
                budget = self.preview_bytes
                done["preview"] = await anyio.to_thread.run_sync(
                    lambda: downscale(capture.path, preview_px, budget, capture.raw, capture.root),
                    abandon_on_cancel=True,
                )
            except Exception:  # the artifact stands without its preview
                log.warning("a screenshot preview could not be made", exc_info=True)

        async def register() -> None:
            try:
                done["info"] = await self.rt.blocking(
                    _register, self.rt.store, caller, generation, capture
                )
            except Exception as exc:
                done["error"] = exc

        try:
            async with anyio.create_task_group() as group:
                if preview_px > 0:
                    group.start_soon(preview)
                group.start_soon(register)
        finally:
            Path(capture.path).unlink(missing_ok=True)
            if capture.raw is not None:
                capture.raw.path.unlink(missing_ok=True)
        if "error" in done:
            raise done["error"]
        return done["info"], done.get("preview")

    async def record(
        self,
        caller: Caller,
        generation: int,
        session_id: str,
        frames: int,
        fps: int,
        preview_px: int = 0,
    ) -> tuple[ArtifactInfo, Preview | None]:
        """An animated PNG of ``frames`` frames at ``fps``, registered as an artifact; with
        ``preview_px``, a contact sheet of its frames at most that on its long edge."""
        validate_recording(frames, fps)  # the arguments first, as for every tool
        game = self.get(caller, session_id).game
        sheet = (preview_px, self.preview_bytes) if preview_px > 0 else None
        capture = await game.record(frames, fps, sheet=sheet)
        try:
            info = await self.rt.blocking(_register, self.rt.store, caller, generation, capture)
        finally:
            Path(capture.path).unlink(missing_ok=True)
        return info, capture.preview

    preview_budget: Callable[[], int] | None = None
    """Set by whoever answers (the edge's one answer budget, docs/mcp.md, Limits): bytes a
    preview may take."""

    @property
    def preview_bytes(self) -> int:
        """The most a preview PNG may take (it rides in the answer as base64): what the
        answer's budget gives it; none without one."""
        return max(0, self.preview_budget()) if self.preview_budget is not None else 0

    async def send_input(self, caller: Caller, session_id: str, events: Sequence[Any]) -> Applied:
        """Inject input events into the caller's game, in order."""
        game = self.get(caller, session_id).game
        return await game.send_input(events, timeout=input_timeout(list(events)))

    async def tree(
        self,
        caller: Caller,
        session_id: str,
        root: str,
        depth: int,
        max_nodes: int,
        collapse: bool = False,
        filters: TreeFilters | None = None,
    ) -> Tree:
        """The caller's game's scene tree from ``root``, bounded in depth and entries, filtered
        and collapsed as asked."""
        game = self.get(caller, session_id).game
        return await game.tree(root, depth, max_nodes, collapse, filters)

    async def time(
        self, caller: Caller, session_id: str, action: str, frames: int, time_scale: float
    ) -> Clock:
        """Pause, resume, step ``frames`` or scale the caller's game's time."""
        game = self.get(caller, session_id).game
        return await game.time(action, frames, time_scale, timeout=10 + frames / 10)

    async def get_values(
        self, caller: Caller, session_id: str, path: str, properties: Sequence[str] | None
    ) -> Values:
        """A node's class and properties (all of them, or those named)."""
        return await self.get(caller, session_id).game.get(path, properties)

    async def set_values(
        self, caller: Caller, session_id: str, path: str, values: dict[str, Any]
    ) -> Written:
        """Set a node's properties; the values as the node now holds them."""
        return await self.get(caller, session_id).game.set(path, values)

    async def perf(self, caller: Caller, session_id: str) -> Perf:
        """The engine's performance monitors, read at one frame."""
        return await self.get(caller, session_id).game.perf()

    async def inspect(
        self, caller: Caller, session_id: str, path: str, include: Sequence[str]
    ) -> Inspected:
        """A node of the caller's game: its script, methods, wiring, groups, properties; each
        method with the ``code`` of its ``func`` line as the project's file is now."""
        got = await self.get(caller, session_id).game.inspect(path, include)
        methods = got.parts.get("methods")
        if methods:
            places = [(m["path"], m["line"]) for m in methods]
            codes = await self.rt.disk(code_at, self.rt.project, places)
            for m in methods:
                code = codes.get((m["path"], m["line"]))
                if code is not None:
                    m["code"] = code
        return got

    async def call_method(
        self, caller: Caller, session_id: str, path: str, method: str, args: Sequence[Any]
    ) -> Any:
        """Call a node's method; a script error the call raised (in the log) answers failed.

        One bridge round trip: the bridge marks where the call's output begins and ends.
        """
        game = self.get(caller, session_id).game
        result, error = await game.call(path, method, args)
        if error is not None:
            where = f" ({error.source[0]}:{error.source[1]})" if error.source else ""
            raise Failed(f"{method} raised a script error: {error.text}{where}")
        return result

    async def wait(
        self, caller: Caller, session_id: str, until: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        """Wait until a frame count, a node, a property value or a log line (bounded:
        ``features/game/waiting.py``); a log wait begins at ``until["cursor"]`` when given."""
        game = self.get(caller, session_id).game
        mark = game.log.next_seq
        if "cursor" in until:
            try:
                mark = decode_cursor(until["cursor"])
            except ValueError:
                raise InvalidArgument("invalid cursor") from None
        return await game.while_running(lambda: wait_until(game, until, mark, timeout))

    async def read_log(
        self,
        caller: Caller,
        session_id: str,
        cursor: str | None,
        max_lines: int,
        min_level: str,
        wait: float,
        take: Callable[[dict[str, Any]], bool],
    ) -> tuple[Page, str]:
        """A page of the session's log, and its state; waits up to ``wait`` s for a new line.

        ``take(line)``: whether one more line (as answered) still fits the answer; the page
        ends before the first it refuses.
        """
        managed = self.get(caller, session_id)
        try:
            after = decode_cursor(cursor) if cursor is not None else None
        except ValueError:
            raise InvalidArgument("invalid cursor") from None
        log = managed.game.log
        start = after
        if wait > 0:
            await wait_for_line(log, after if after is not None else 0, min_level, wait)

        def fits(entry: Entry) -> bool:
            return take(entry.as_dict())

        page = log.read(start, max_lines, min_level, fits)
        return await self._with_code(page), managed.game.poll()

    async def _with_code(self, page: Page) -> Page:
        """``page`` with each source's ``code`` as the project's file is now (the entries are
        copies: the log keeps none, a file may change between reads)."""
        places = [e.source for e in page.entries if e.source is not None]
        if not places:
            return page
        codes = await self.rt.disk(code_at, self.rt.project, places)
        entries = [
            replace(e, code=codes.get(e.source)) if e.source is not None else e
            for e in page.entries
        ]
        return replace(page, entries=entries)

    async def capture_log(self, caller: Caller, generation: int, session_id: str) -> ArtifactInfo:
        """The whole log kept so far, registered as a ``text/plain`` artifact."""
        managed = self.get(caller, session_id)
        data = managed.game.log.text().encode("utf-8")
        item = NewArtifact("text/plain; charset=utf-8", data)
        return await self.rt.blocking(self.rt.store.register, caller, generation, item)

    async def session_ended(self, session_id: str) -> None:
        """Kill and reap the games of an ended HTTP session (nobody can use them any more)."""
        self._ended.add(session_id)
        ended = [m for m in self.sessions.values() if m.owner.session_id == session_id]
        for managed in ended:
            self.sessions.pop(managed.id, None)
        async with anyio.create_task_group() as group:
            for managed in ended:
                group.start_soon(self.runner.release, managed.game, 0)

    async def aclose(self) -> None:
        """Stop every game and the private display, the debuggers' readers with them; remove
        this process's scratch."""
        try:
            await self.runner.aclose()
            if self._tg is not None:
                self._tg.cancel_scope.cancel()
            await self._stack.aclose()
        finally:
            with anyio.CancelScope(shield=True):
                await self.rt.disk(shutil.rmtree, self.scratch, True)


def _vetted(
    project: Path, install: GodotInstall, mode: str, scene: str | None, breakpoints: Sequence[str]
) -> tuple[dict[str, set[int]], list[str]]:
    """A start's checks of the project, in one read of it (blocking): its breakpoints parsed,
    a game that needs C# or a never-imported project refused; what the start warns of."""
    points = parse_breakpoints(project, breakpoints)
    warnings = refuse_csharp(project, install, mode, scene)
    refuse_never_imported(project, install.profile if install.major is not None else None)
    return points, warnings + project_file_warnings(project, install.version_for(mode))

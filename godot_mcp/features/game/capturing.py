"""A session's captures: a screenshot of the root viewport, a recording paced in game time.

The engine writes each frame into the server's scratch dir; the files are checked before
anything is read from them (``capture.py``), off the loop, and a recording is bounded as
``pacing.py`` says.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from godot_mcp.engine.project.tree import disk_full
from godot_mcp.errors import Failed, Malformed
from godot_mcp.features.game.capture import (
    Capture,
    Digest,
    assemble_apng,
    check_png,
    check_screenshot,
)
from godot_mcp.features.game.commands import Commands
from godot_mcp.features.game.errors import (
    GameError,
    GameFailed,
    GameInvalid,
    GameTimeout,
    GameUnavailable,
)
from godot_mcp.features.game.pacing import (
    MAX_RECORD_WAIT,
    fps_text,
    frames_written,
    recording_bound,
    recording_deadline,
    recording_rate,
)
from godot_mcp.features.game.preview import Preview, RawFrame, contact_sheet
from godot_mcp.features.game.protocol import frame_reports

__all__ = [
    "MAX_FPS",
    "MAX_FRAMES",
    "MAX_RECORD_SECONDS",
    "MIN_FPS",
    "MIN_FRAMES",
    "Captures",
    "validate_recording",
]

log = logging.getLogger(__name__)

MIN_FRAMES, MAX_FRAMES = 2, 300
MIN_FPS, MAX_FPS = 1, 60
MAX_RECORD_SECONDS = 30
_PROGRESS_S = 0.25  # how often a recording's frames are counted


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


class Captures(Commands):
    """The captures of a running game (windowed sessions only)."""

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
            fps=float(f"{rate:.3g}") if seen else None,
            frames_captured=len(seen),
        )

    async def _measured_fps(self) -> float:
        """The game's own frame rate now, over at least its last 0.5 s of frames (0 when it
        has not measured one yet)."""
        try:
            return (await self.ping(5)).fps or 0.0
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

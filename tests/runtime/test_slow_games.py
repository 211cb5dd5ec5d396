"""A game at about 0.5 fps (each frame burns 2 s of CPU) records 10 frames: the recording is
bounded by the rate its own frames come at, capture included, and completes; once it timed
out with 8 of 10 frames, bounded by the rate measured before it (the engine says 1 fps for any
rate below)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.runtime.test_captures import ok
from tests.support.engines import Engine
from tests.support.servers import stdio_client
from tests.support.slow_game import slow_project

pytestmark = [pytest.mark.anyio, pytest.mark.godot]


async def test_a_recording_that_fits_the_cap_completes_on_a_game_at_half_a_frame_a_second(
    tmp_path: Path, engine: Engine
):
    project = slow_project(engine, tmp_path / "slow")
    with anyio.fail_after(120):
        async with stdio_client(project, tmp_path / "state") as c:
            sid = (await ok(c, "runtime.session.start"))["session"]["id"]
            answer = await c.call_tool(
                "runtime_recording_capture",
                {"session_id": sid, "frames": 10, "fps": 10, "preview_px": 0},
            )
            body = answer.structured_content
            assert body["outcome"] == "ok", body
            assert (body["artifact"]["frames"], body["artifact"]["width"]) == (10, 160)
            await ok(c, "runtime.session.stop", {"session_id": sid})

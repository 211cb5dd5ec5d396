"""How long a recording may take, and frame rates in messages: the rules (``pacing.py``),
and a recording of a real game at about 0.5 fps given up on, saying the rate it got."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest

from godot_mcp.engine.process.locate import GodotInstall
from godot_mcp.features.game.errors import GameInvalid, GameTimeout
from godot_mcp.features.game.pacing import (
    MAX_RECORD_WAIT,
    SLACK,
    fps_text,
    recording_bound,
    recording_deadline,
    recording_rate,
)
from godot_mcp.features.game.runner import GameRunner
from tests.support.engines import Engine
from tests.support.slow_game import slow_project


@pytest.mark.parametrize(
    ("rate", "said"),
    [
        (60.0, "60"),
        (59.6, "60"),
        (12.34, "12"),
        (1.0, "1"),
        (2.46, "2.5"),
        (0.96, "0.96"),
        (0.48, "0.48"),
        (0.5, "0.5"),
        (0.05, "0.05"),
        (0.0123, "0.012"),
    ],
)
def test_a_rate_below_one_frame_a_second_keeps_its_decimals(rate, said):
    assert fps_text(rate) == said


def test_the_first_bound_is_the_frames_at_the_slower_rate_and_refuses_past_the_cap():
    assert recording_bound(10, 10, 0.0) == 1 + SLACK  # not measured yet: the asked rate
    assert recording_bound(10, 10, 60.0) == 1 + SLACK
    assert recording_bound(10, 10, 1.0) == 10 + SLACK
    with pytest.raises(GameInvalid) as refused:
        recording_bound(30, 10, 0.5)
    assert refused.value.message == (
        "30 frames at 0.5 fps (the game runs at 0.5 fps) would take 65 s; a recording waits "
        f"at most {MAX_RECORD_WAIT} s: ask for fewer frames"
    )


def test_a_recording_is_bounded_by_the_rate_its_own_frames_come_at():
    # 10 frames; the game said 1 fps, so 15 s at first; its frames come every 2 s.
    first, cap = recording_bound(10, 10, 1.0), float(MAX_RECORD_WAIT)
    assert recording_deadline(0.0, [], 10, first, cap) == 15.0
    assert recording_deadline(0.0, [1.0], 10, first, cap) == 15.0  # one frame: no rate yet
    # Two frames 2 s apart: 8 more at 0.5 fps end at 19 s, plus the slack.
    assert recording_deadline(0.0, [1.0, 3.0], 10, first, cap) == 3.0 + 16 + SLACK
    # A faster game never shortens the first bound; a slower one never passes the cap.
    assert recording_deadline(0.0, [1.0, 1.1], 10, first, cap) == 15.0
    assert recording_deadline(0.0, [1.0, 9.0], 10, first, cap) == cap
    assert recording_deadline(0.0, [1.0, 9.0], 10, 6.0, 6.0) == 6.0  # a caller's own bound


def test_the_rate_a_recording_got_is_its_frames_over_the_time_it_took():
    assert recording_rate([1.0, 3.0, 5.0, 7.0], 0.0, 8.0) == 0.5
    assert recording_rate([0.1, 0.2, 0.3, 0.4], 0.0, 8.0) == 0.5  # then the game stalled
    assert recording_rate([], 0.0, 8.0) == 0.0


@pytest.mark.godot
@pytest.mark.anyio
async def test_a_slow_games_recording_given_up_on_says_the_rate_it_got_with_its_decimals(
    godot_install: GodotInstall, tmp_path: Path, engine: Engine
):
    project = slow_project(engine, tmp_path / "slow")
    runner = GameRunner(godot_install, tmp_path / "scratch")
    try:
        with anyio.fail_after(90):
            session = await runner.start(project)
            with pytest.raises(GameTimeout) as caught:
                await session.record(frames=10, fps=10, timeout=7)
    finally:
        with anyio.fail_after(15):
            await runner.aclose()
    said = re.fullmatch(
        r"the recording got (\d+) of 10 frames within 7 s \(the game drew (0\.\d+) fps for "
        r"it\); nothing was registered",
        caught.value.message,
    )
    assert said is not None, caught.value.message
    assert 1 <= int(said[1]) <= 5 and 0.1 <= float(said[2]) < 1, caught.value.message
    details = caught.value.details
    assert details["frames_captured"] == int(said[1]) and fps_text(details["fps"]) == said[2]

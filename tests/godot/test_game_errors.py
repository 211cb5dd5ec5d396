"""A refusal of the process floor (a display that would not start) becomes the game's error
of the same outcome (pure logic)."""

from __future__ import annotations

import pytest

from godot_mcp.errors import Failed, GodotMcpError, InvalidArgument, Timeout, Unavailable
from godot_mcp.features.game.errors import (
    GameFailed,
    GameInvalid,
    GameTimeout,
    GameUnavailable,
    game_error,
)


@pytest.mark.parametrize(
    ("raised", "kind"),
    [
        (Unavailable("cannot start Xvfb: No such file"), GameUnavailable),
        (Timeout("Xvfb did not report a display within 10 s"), GameTimeout),
        (Failed("Xvfb exited"), GameFailed),
        (InvalidArgument("bad"), GameInvalid),
        (GodotMcpError("anything else"), GameFailed),
    ],
)
def test_a_process_refusal_keeps_its_outcome_as_the_games(raised, kind) -> None:
    made = game_error(raised, "said\nagain")
    assert type(made) is kind
    assert (made.outcome, made.message) == (raised.outcome, "said / again")

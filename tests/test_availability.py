"""A tool's availability: its text as ``server.profile`` answers it, and its refusal."""

from __future__ import annotations

import pytest

from godot_mcp.engine.process.availability import AVAILABLE, Availability, unavailable
from godot_mcp.errors import Unavailable
from godot_mcp.features.game.errors import GameUnavailable


def test_its_text_is_the_profiles() -> None:
    assert str(AVAILABLE) == "available" and AVAILABLE.ok and AVAILABLE.why is None
    why = unavailable("no DISPLAY and no Xvfb installed")
    assert str(why) == "unavailable: no DISPLAY and no Xvfb installed"
    assert not why.ok and why.why == "no DISPLAY and no Xvfb installed"
    assert why == Availability("no DISPLAY and no Xvfb installed") and Availability() == AVAILABLE


def test_it_refuses_saying_why() -> None:
    AVAILABLE.refuse()  # nothing raised
    with pytest.raises(Unavailable) as refused:
        unavailable("the server is busy").refuse()
    assert type(refused.value) is Unavailable and refused.value.message == "the server is busy"
    with pytest.raises(GameUnavailable) as game:
        unavailable("no Godot binary found").refuse(GameUnavailable)
    assert game.value.message == "no Godot binary found"

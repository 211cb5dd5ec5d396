"""The value comparison runtime.wait uses (pure logic: floats cross the bridge as text)."""

from __future__ import annotations

import pytest

from godot_mcp.features.game.waiting import same


@pytest.mark.parametrize(
    ("got", "want", "equal"),
    [
        (1.0000001, 1, True),  # within a millionth
        (1.01, 1, False),
        (1_000_000.5, 1_000_000, True),  # relative to the value's size
        (True, 1, False),  # a bool is not a number here
        (True, True, True),
        ({"x": 0.1 + 0.2, "y": [1, 2]}, {"x": 0.3, "y": [1, 2]}, True),
        ({"x": 1}, {"x": 1, "y": 2}, False),
        ([1, 2], [1, 2, 3], False),
        ("a", "a", True),
        (None, 0, False),
    ],
)
def test_values_compare_as_json_with_numbers_to_a_millionth(got, want, equal) -> None:
    assert same(got, want) is equal

"""Godot 4.0–4.3 windowed runs need OpenGL under Xvfb (no GPU); 4.4 and Godot 3 do not."""

from __future__ import annotations

import pytest

from godot_mcp.engine.process.locate import GodotInstall


@pytest.mark.parametrize(
    ("version", "flags"),
    [
        ("4.2.1.stable.official", ["--rendering-driver", "opengl3"]),
        ("4.0.stable", ["--rendering-driver", "opengl3"]),
        ("4.4.stable", []),
        ("4.10.1.stable", []),
        ("3.2.3.stable.custom_build", []),
        (None, []),
    ],
)
def test_windowed_flags_follow_the_engine_version(version: str | None, flags: list[str]) -> None:
    install = GodotInstall(None, None, version, None, None, None, None)
    assert install.windowed_flags == flags

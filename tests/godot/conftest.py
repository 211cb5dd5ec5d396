"""Fixtures for the real-Godot tests: the install (Godot 3 + Xvfb) and a fresh demo project."""

from __future__ import annotations

import dataclasses
import shutil
import warnings
from pathlib import Path

import pytest

from godot_mcp.godot.locate import GodotInstall, locate_godot

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"


@pytest.fixture(scope="session")
def godot_install() -> GodotInstall:
    """Godot 3 (windowed and server builds) with a private Xvfb; skips loudly if absent."""
    missing = [name for name in ("godot3", "godot3-server", "Xvfb") if shutil.which(name) is None]
    if missing:
        reason = (
            f"SKIPPED LOUDLY: {', '.join(missing)} not installed "
            "(apt-get install godot3 godot3-server xvfb); the real game-session tests cannot run"
        )
        warnings.warn(reason, stacklevel=1)
        pytest.skip(reason)
    install = locate_godot(godot="godot3", godot_headless="godot3-server")
    assert install.version and install.version.startswith("3."), install
    assert install.headless_version, install
    # Always the runner's own Xvfb, even when the test run has a DISPLAY.
    return dataclasses.replace(install, display=None)


@pytest.fixture
def demo_project(tmp_path: Path) -> Path:
    """A private copy of examples/demo."""
    target = tmp_path / "demo"
    shutil.copytree(DEMO, target)
    return target

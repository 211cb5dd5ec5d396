"""Fixtures for the real-Godot tests: the engine's install (with a private Xvfb) and a fresh
copy of its demo project."""

from __future__ import annotations

from pathlib import Path

import pytest

from godot_mcp.engine.process.locate import GodotInstall
from tests.support.engines import Engine


@pytest.fixture(scope="session")
def godot_install(engine: Engine) -> GodotInstall:
    """The engine's windowed and headless builds, always with the runner's own Xvfb."""
    return engine.install()


@pytest.fixture
def demo_project(tmp_path: Path, engine: Engine) -> Path:
    """A private copy of the engine's demo project."""
    return engine.copy_demo(tmp_path / "demo")

"""Real Godot behind real servers: the demo project served over stdio and HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mcp.conftest import Connect, transport_factory
from tests.support import engines
from tests.support.engines import Engine
from tests.support.servers import ServedProject, serve_project


def require_godot(*names: str) -> None:
    """Fail in CI, skip loudly elsewhere, when the running test's engine cannot start here
    (its windowed and headless builds, its templates and Xvfb: ``names`` only document)."""
    del names
    engines.current().require()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def fake_display(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake engine draws nowhere: a display name keeps the server from starting Xvfb."""
    monkeypatch.setenv("DISPLAY", ":fake")


def copy_demo(target: Path) -> Path:
    """A private copy of the running test's engine's demo project."""
    return engines.current().copy_demo(target)


@pytest.fixture(scope="module")
def game_env(tmp_path_factory: pytest.TempPathFactory, engine: Engine) -> Iterator[ServedProject]:
    base = tmp_path_factory.mktemp(f"game-{engine.name}")
    served = serve_project(engine.copy_demo(base / "demo"), base / "state")
    yield served
    served.http.stop()


@pytest.fixture(params=["stdio", "http"])
def game_connect(request: pytest.FixtureRequest, game_env: ServedProject) -> Connect:
    return transport_factory(request.param, game_env)


@pytest.fixture(params=[3, 4], ids=["fake3", "fake4"])
def fake_major(request: pytest.FixtureRequest) -> int:
    """The engine the fake engine (tests/support/fake_godot.py) plays: Godot 3, then 4."""
    major: int = request.param
    return major

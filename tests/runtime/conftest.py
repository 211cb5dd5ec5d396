"""Real Godot behind real servers: the demo project served over stdio and HTTP."""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mcp.conftest import Connect, transport_factory
from tests.support.servers import ServedProject, serve_project

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"


def require_godot(*names: str) -> None:
    """Skip loudly when a Godot or Xvfb binary is genuinely absent."""
    missing = [n for n in names if shutil.which(n) is None]
    if missing:
        reason = f"SKIPPED LOUDLY: {', '.join(missing)} not installed; real-Godot test not run"
        warnings.warn(reason, stacklevel=2)
        pytest.skip(reason)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def copy_demo(target: Path) -> Path:
    shutil.copytree(DEMO, target)
    return target


@pytest.fixture(scope="module")
def game_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedProject]:
    require_godot("godot3", "godot3-server", "Xvfb")
    base = tmp_path_factory.mktemp("game")
    served = serve_project(copy_demo(base / "demo"), base / "state")
    yield served
    served.http.stop()


@pytest.fixture(params=["stdio", "http"])
def game_connect(request: pytest.FixtureRequest, game_env: ServedProject) -> Connect:
    return transport_factory(request.param, game_env)

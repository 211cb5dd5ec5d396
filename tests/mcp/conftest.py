from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path

import pytest
from mcp import Client

from tests.support.servers import HttpServer, http_client, make_tokens, start_http, stdio_client

PROJECT_GODOT = 'config_version=4\n\n[application]\n\nconfig/name="mcp test"\n'


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class McpEnv:
    project: Path
    state_dir: Path
    http: HttpServer


def make_project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "project.godot").write_text(PROJECT_GODOT)
    return root


@pytest.fixture(scope="module")
def mcp_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpEnv]:
    base = tmp_path_factory.mktemp("mcp")
    project = make_project(base / "project")
    state = base / "state"
    tokens = make_tokens(state, ["alice", "alice", "bob"][:1] + ["bob"])
    tokens["alice2"] = make_tokens(state, ["alice"])["alice"]
    server = start_http(project, state, tokens=tokens)
    yield McpEnv(project, state, server)
    server.stop()


Connect = Callable[..., AbstractAsyncContextManager[Client]]


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest, mcp_env: McpEnv) -> Connect:
    transport = request.param

    def factory(principal: str = "alice", **kwargs: object) -> AbstractAsyncContextManager[Client]:
        if transport == "stdio":
            return stdio_client(mcp_env.project, mcp_env.state_dir)
        return http_client(mcp_env.http.url, mcp_env.http.tokens[principal], **kwargs)

    factory.transport = transport  # type: ignore[attr-defined]
    return factory

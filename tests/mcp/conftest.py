from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager

import pytest
from mcp import Client

from tests.support.projects import make_project
from tests.support.servers import ServedProject, serve_project


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def mcp_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedProject]:
    base = tmp_path_factory.mktemp("mcp")
    served = serve_project(make_project(base / "project"), base / "state")
    yield served
    served.http.stop()


Connect = Callable[..., AbstractAsyncContextManager[Client]]


def transport_factory(transport: str, served: ServedProject) -> Connect:
    def factory(principal: str = "alice", **kwargs: object) -> AbstractAsyncContextManager[Client]:
        return served.connect(transport, principal, **kwargs)

    factory.transport = transport  # type: ignore[attr-defined]
    return factory


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest, mcp_env: ServedProject) -> Connect:
    return transport_factory(request.param, mcp_env)

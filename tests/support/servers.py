"""Real servers for tests: ``godot-mcp serve`` over stdio and over HTTP (uvicorn)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.tokens import add_token

ROOT = Path(__file__).resolve().parents[2]
_URL = re.compile(r"listening on (http://\S+/mcp)")


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("GODOT_MCP_KILL_AT", None)
    env.update(extra or {})
    return env


def serve_args(project: Path, state_dir: Path, *extra: str, test_tools: bool = True) -> list[str]:
    module = "tests.support.serve_test" if test_tools else "godot_mcp.cli.serve"
    return [
        sys.executable,
        "-m",
        module,
        "serve",
        "--project",
        str(project),
        "--state-dir",
        str(state_dir),
        *extra,
    ]


@asynccontextmanager
async def stdio_client(
    project: Path,
    state_dir: Path,
    *extra: str,
    test_tools: bool = True,
    env: dict[str, str] | None = None,
) -> AsyncIterator[Client]:
    argv = serve_args(project, state_dir, *extra, test_tools=test_tools)
    params = StdioServerParameters(
        command=argv[0], args=argv[1:], env=server_env(env), cwd=str(ROOT)
    )
    async with Client(params) as client:
        yield client


@dataclass
class HttpServer:
    """A running ``godot-mcp serve --transport http`` child process."""

    url: str
    process: subprocess.Popen[bytes]
    tokens: dict[str, str] = field(default_factory=dict)
    log_path: Path | None = None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


async def answer(c: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """The structured answer of ``tool`` (its dotted name) called with ``args``."""
    r = await c.call_tool(tool.replace(".", "_"), args)
    assert r.structured_content is not None
    return r.structured_content


async def ok(c: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """:func:`answer`, asserted to be an ``ok`` outcome."""
    got = await answer(c, tool, args)
    assert got["outcome"] == "ok", (tool, got)
    return got


def make_tokens(state_dir: Path, principals: list[str]) -> dict[str, str]:
    store = ArtifactStore(state_dir)
    try:
        return {p: add_token(store.engine, p) for p in principals}
    finally:
        store.close()


def start_http(
    project: Path,
    state_dir: Path,
    *extra: str,
    tokens: dict[str, str],
    env: dict[str, str] | None = None,
    test_tools: bool = True,
    timeout: float = 60.0,
) -> HttpServer:
    log_path = state_dir.parent / f"http-{time.monotonic_ns()}.log"
    log = open(log_path, "wb")  # noqa: SIM115 (kept open for the child's lifetime)
    argv = serve_args(
        project, state_dir, "--transport", "http", "--port", "0", *extra, test_tools=test_tools
    )
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=log,
        env=server_env(env),
        cwd=ROOT,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log_path.read_text(errors="replace")
        match = _URL.search(text)
        if match:
            return HttpServer(match.group(1), proc, tokens, log_path)
        if proc.poll() is not None:
            raise RuntimeError(f"http server exited: {text}")
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("http server did not start in time")


@asynccontextmanager
async def http_client(url: str, token: str, **kwargs: object) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http, **kwargs)) as client,
    ):
        yield client


@dataclass
class ServedProject:
    """One project served over both transports from one state dir."""

    project: Path
    state_dir: Path
    http: HttpServer
    stdio_extra: tuple[str, ...] = ()
    env: dict[str, str] | None = None

    def connect(self, transport: str, principal: str = "alice", **kwargs: object):
        """An async context manager yielding a connected SDK client."""
        if transport == "stdio":
            return stdio_client(self.project, self.state_dir, *self.stdio_extra, env=self.env)
        return http_client(self.http.url, self.http.tokens[principal], **kwargs)


def serve_project(
    project: Path, state_dir: Path, *extra: str, env: dict[str, str] | None = None
) -> ServedProject:
    """Start an HTTP server (tokens alice, alice2, bob) for ``project``; stdio starts per client."""
    tokens = make_tokens(state_dir, ["alice", "bob"])
    tokens["alice2"] = make_tokens(state_dir, ["alice"])["alice"]
    http = start_http(project, state_dir, *extra, tokens=tokens, env=env)
    return ServedProject(project, state_dir, http, tuple(extra), env)


def run_admin(*argv: str) -> subprocess.CompletedProcess[str]:
    """Run ``godot-mcp-admin`` as a user would; output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "godot_mcp.cli.admin", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=server_env(),
    )

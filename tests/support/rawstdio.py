"""A raw stdio MCP session: ``godot-mcp serve`` as a child, its JSON-RPC lines read as bytes,
for tests that measure what the server writes."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.support.servers import ROOT, serve_args, server_env

HANDSHAKE = "2025-11-25"
MAX_LINE = 64 << 20


class RawStdio:
    """One MCP session over a server's stdin and stdout."""

    def __init__(self, process: Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.reader = BufferedByteReceiveStream(process.stdout)
        self._next = 0

    async def send(self, method: str, params: dict[str, Any] | None = None) -> int | None:
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
        request_id = None
        if not method.startswith("notifications/"):
            self._next += 1
            request_id = body["id"] = self._next
        assert self.process.stdin is not None
        await self.process.stdin.send(json.dumps(body).encode() + b"\n")
        return request_id

    async def request(self, method: str, params: dict[str, Any] | None = None) -> bytes:
        """The reply's line exactly as the server wrote it, its newline included."""
        request_id = await self.send(method, params)
        while True:
            line = await self.reader.receive_until(b"\n", MAX_LINE) + b"\n"
            message = json.loads(line)
            if message.get("id") == request_id and "method" not in message:
                return line

    async def call(self, tool: str, arguments: dict[str, Any] | None = None) -> bytes:
        return await self.request("tools/call", {"name": tool, "arguments": arguments or {}})


@asynccontextmanager
async def raw_stdio(project: Path, state_dir: Path, *extra: str) -> AsyncIterator[RawStdio]:
    """An initialized raw session with a ``godot-mcp serve`` child; ended on exit."""
    argv = serve_args(project, state_dir, *extra, test_tools=False)
    process = await anyio.open_process(argv, env=server_env(), cwd=ROOT, stderr=subprocess.DEVNULL)
    try:
        session = RawStdio(process)
        await session.request(
            "initialize",
            {
                "protocolVersion": HANDSHAKE,
                "capabilities": {},
                "clientInfo": {"name": "raw-stdio", "version": "0"},
            },
        )
        await session.send("notifications/initialized")
        yield session
    finally:
        assert process.stdin is not None
        await process.stdin.aclose()
        with anyio.move_on_after(15):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()

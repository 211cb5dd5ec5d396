"""MCP edge benchmark: range reads against floors measured in the same run.

    python tools/bench_edge.py [--mib 64]

1. Server-side cost of one 512 KiB range read (resolve, binding, block
   verification, base64, the SDK's JSON serialization) against the floor:
   pread + base64 + JSON framing of the same bytes. Goal <= 2x.
2. End-to-end throughput of reading a 64 MiB artifact in 512 KiB ranges with
   the SDK client over stdio and over HTTP, next to the SDK's own throughput for
   a trivial server that answers every read with the same payload size.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx2
from mcp import Client, StdioServerParameters, types
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from godot_mcp.app import open_app  # noqa: E402
from godot_mcp.config import Settings  # noqa: E402
from godot_mcp.mcp.resources import make_handlers  # noqa: E402
from godot_mcp.store.values import Limits  # noqa: E402
from tests.support.producer import PRODUCER  # noqa: E402
from tests.support.servers import (  # noqa: E402
    http_client,
    make_tokens,
    server_env,
    start_http,
    stdio_client,
)

CHUNK = 512 * 1024


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def server_side(base: Path) -> tuple[float, float]:
    project = base / "p1"
    project.mkdir()
    (project / "project.godot").write_text("config_version=4\n")
    settings = Settings(base / "s1", None, None, Limits())
    async with open_app(settings, project, "stdio", [PRODUCER]) as app, Client(app.server) as c:
        r = await c.call_tool("test.produce", {"size": 8 * CHUNK, "seed": 1})
        uri = r.structured_content["artifact"]["uri"]
        read = make_handlers(app.deps)["on_read_resource"]
        blob_path = app.deps.store.blobs.objects.path_of(r.structured_content["artifact"]["sha256"])
        floor, edge = [], []
        for i in range(60):
            off = (i % 7) * CHUNK
            t = time.perf_counter()
            with open(blob_path, "rb", buffering=0) as f:
                data = os.pread(f.fileno(), CHUNK, off)
            b64 = base64.b64encode(data).decode()
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": i,
                    "result": {
                        "contents": [
                            {"uri": uri, "mimeType": "application/octet-stream", "blob": b64}
                        ]
                    },
                }
            )
            floor.append(time.perf_counter() - t)
            t = time.perf_counter()
            result = await read(
                _Ctx(), types.ReadResourceRequestParams(uri=f"{uri}?offset={off}&length={CHUNK}")
            )
            result.model_dump_json(by_alias=True, exclude_none=True)
            edge.append(time.perf_counter() - t)
        return statistics.median(floor), statistics.median(edge)


class _Ctx:
    request = None


async def _read_all(client: Client, uri: str, total: int) -> float:
    t = time.perf_counter()
    for off in range(0, total, CHUNK):
        r = await client.read_resource(f"{uri}?offset={off}&length={CHUNK}")
        assert len(r.contents[0].blob) > 0
    return time.perf_counter() - t


async def _trivial(client: Client, total: int) -> float:
    t = time.perf_counter()
    for off in range(0, total, CHUNK):
        await client.read_resource(f"x://y/{off}")
    return time.perf_counter() - t


async def end_to_end(base: Path, mib: int) -> dict[str, tuple[float, float]]:
    total = mib * 1024 * 1024
    project = base / "p2"
    project.mkdir()
    (project / "project.godot").write_text("config_version=4\n")
    state = base / "s2"
    out: dict[str, tuple[float, float]] = {}
    async with stdio_client(project, state) as c:
        r = await c.call_tool("test.produce", {"size": total, "seed": 2})
        ours = await _read_all(c, r.structured_content["artifact"]["uri"], total)
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(ROOT / "tools" / "trivial_server.py"), "stdio", str(CHUNK)],
        env=server_env(),
    )
    async with Client(params) as c:
        sdk = await _trivial(c, total)
    out["stdio"] = (ours, sdk)

    tokens = make_tokens(state, ["bench"])
    server = start_http(project, state, tokens=tokens)
    try:
        async with http_client(server.url, tokens["bench"]) as c:
            r = await c.call_tool("test.produce", {"size": total, "seed": 3})
            ours = await _read_all(c, r.structured_content["artifact"]["uri"], total)
    finally:
        server.stop()
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tools" / "trivial_server.py"), "http", str(CHUNK), str(port)],
        env=server_env(),
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        with anyio.fail_after(30):
            while True:
                try:
                    async with httpx2.AsyncClient() as h:
                        await h.get(url)
                    break
                except httpx2.HTTPError:
                    await anyio.sleep(0.1)
        # legacy: the same handshake revision (and SSE responses) godot-mcp speaks over HTTP
        async with (
            httpx2.AsyncClient(timeout=60) as h,
            Client(streamable_http_client(url, http_client=h), mode="legacy") as c,
        ):
            sdk = await _trivial(c, total)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    out["http"] = (ours, sdk)
    return out


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=64)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        floor, edge = await server_side(base)
        flows = await end_to_end(base, args.mib)
    ratio = edge / floor
    print(f"{'case':<34}{'floor':>12}{'godot-mcp':>12}{'ratio':>8}  goal")
    print(
        f"{'512 KiB range read, server side':<34}{floor * 1e3:>10.2f}ms{edge * 1e3:>10.2f}ms"
        f"{ratio:>8.2f}  <= 2.0"
    )
    for name, (ours, sdk) in flows.items():
        mb = args.mib * 1.048576
        print(
            f"{f'{args.mib} MiB read over {name} (MB/s)':<34}{mb / sdk:>12.1f}{mb / ours:>12.1f}"
            f"{sdk / ours:>8.2f}  report (floor = trivial SDK server)"
        )
    return 0 if ratio <= 2.0 else 1


if __name__ == "__main__":
    sys.exit(anyio.run(main))

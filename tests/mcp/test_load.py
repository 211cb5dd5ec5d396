"""Many concurrent HTTP sessions reading and listing: no leak, no stray error."""

from __future__ import annotations

import base64
import time

import anyio
import pytest
from mcp import MCPError

from tests.mcp.test_resources import produce
from tests.support.producer import payload
from tests.support.servers import http_client

# slow: runs eight sessions against a real server.
pytestmark = [pytest.mark.anyio, pytest.mark.slow]
SESSIONS = 8
SECONDS = 6.0


async def test_eight_sessions_read_and_list_concurrently_without_leaks(mcp_env, capsys):
    url = mcp_env.http.url
    owned: dict[int, list[str]] = {}
    stats = {"requests": 0, "refusals": 0}
    errors: list[str] = []
    ready = anyio.Event()
    registered = {"n": 0}

    async def worker(n: int) -> None:
        token = mcp_env.http.tokens["alice" if n % 2 else "bob"]
        async with http_client(url, token) as c:
            arts = [await produce(c, 20_000 + n, seed=1000 * n + i) for i in range(3)]
            owned[n] = [a["uri"] for a in arts]
            registered["n"] += 1
            if registered["n"] == SESSIONS:
                ready.set()
            await ready.wait()
            deadline = time.monotonic() + SECONDS
            i = 0
            while time.monotonic() < deadline:
                i += 1
                mine = arts[i % 3]
                r = await c.read_resource(f"{mine['uri']}?offset={i % 100}&length=64")
                data = base64.b64decode(r.contents[0].blob)
                seed = 1000 * n + i % 3
                if data != payload(20_000 + n, seed)[i % 100 : i % 100 + 64]:
                    errors.append(f"session {n} read wrong bytes")
                listed = {x.uri for x in (await c.list_resources()).resources}
                if listed != set(owned[n]):
                    errors.append(f"session {n} listed {len(listed)} entries, not its own 3")
                other = owned[(n + 1) % SESSIONS][0]
                try:
                    await c.read_resource(other)
                    errors.append(f"session {n} read another session's artifact")
                except MCPError as exc:
                    if exc.data != {"uri": other, "outcome": "not_found"}:
                        errors.append(f"unexpected refusal {exc.data}")
                    stats["refusals"] += 1
                stats["requests"] += 3

    with anyio.fail_after(SECONDS + 90):
        async with anyio.create_task_group() as tg:
            for n in range(SESSIONS):
                tg.start_soon(worker, n)
    assert errors == []
    assert stats["requests"] > SESSIONS * 3
    with capsys.disabled():
        print(
            f"\nload: {SESSIONS} sessions, {stats['requests']} requests in {SECONDS:.0f} s "
            f"= {stats['requests'] / SECONDS:.0f} req/s, {stats['refusals']} expected refusals"
        )

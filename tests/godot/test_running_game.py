"""A running game's wait for its output's end keeps its bound when every worker thread is
taken (captures, disk reads, other sessions' waits): it never queues past it for one."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from godot_mcp.engine.process.redact import Scrubber
from godot_mcp.features.game.running import RunningGame
from tests.support.stand_ins import Running

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_wait_for_the_output_end_is_bounded_with_no_worker_thread_free(
    tmp_path: Path,
) -> None:
    child = Running()
    game = RunningGame(child, "headless", tmp_path, Scrubber([], secrets=[]))  # type: ignore[arg-type]
    threads = anyio.to_thread.current_default_thread_limiter()
    tokens = threads.total_tokens
    threads.total_tokens = 1
    done = anyio.Event()

    async def busy() -> None:  # another task holds the only worker thread
        async with threads:
            await done.wait()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(busy)
            await anyio.sleep(0)
            began = time.monotonic()
            try:
                with anyio.fail_after(5):
                    await game.drained(0.1)
            finally:
                done.set()
        assert time.monotonic() - began < 2
    finally:
        threads.total_tokens = tokens
        child.close()

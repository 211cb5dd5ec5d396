"""A session waits for a marker line on the event its log's reader sets as it reads the line,
never by polling: a session over a stand-in process (its stderr a pipe the test writes) and a
stand-in bridge whose marker lines trail its replies, as a busy pipe makes them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from godot_mcp.engine.process.redact import Scrubber
from godot_mcp.features.game.errors import GameFailed
from godot_mcp.features.game.marks import CallMarks
from godot_mcp.features.game.session import GameSession
from tests.support.stand_ins import Running

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Bridge:
    """A bridge that prints a call's first mark before its reply, its error and end mark
    after it, and a ping's mark after its reply."""

    def __init__(self, child: Running, ready: dict[str, Any]) -> None:
        self.child = child
        self.ready = ready

    async def accept(self) -> tuple[Bridge, dict[str, Any]]:
        return self, {"type": "hello", "engine": "3.5.stable", "headless": True}

    async def receive_type(self, kind: str) -> dict[str, Any]:
        return {"type": kind, **self.ready}

    async def request(self, cmd: str, **args: Any) -> dict[str, Any]:
        marks = [f"godot-mcp-mark {token}" for token in args.get("marks", [])]
        if cmd == "call":
            self.child.say(marks[0])
            self.child.say_later("SCRIPT ERROR: explode: it blew up", marks[1])
            return {"ok": True, "result": 42}
        self.child.say_later("ERROR: Cannot open file 'res://missing.tscn'.", *marks)
        return {"ok": True, "frame": 1, "fps": 60}


@pytest.fixture
def child() -> Iterator[Running]:
    running = Running()
    yield running
    running.close()


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every ``anyio.sleep`` from now on: a wait that polls shows there."""
    seen: list[float] = []
    sleep = anyio.sleep

    async def counted(delay: float) -> None:
        seen.append(delay)
        await sleep(delay)

    monkeypatch.setattr(anyio, "sleep", counted)
    return seen


async def test_a_call_waits_for_its_end_mark_on_its_line_not_by_polling(
    tmp_path: Path, child: Running, sleeps: list[float]
) -> None:
    game = GameSession(child, "headless", tmp_path, Scrubber([], secrets=[]))  # type: ignore[arg-type]
    with anyio.fail_after(10):
        await game.connect(Bridge(child, {"loaded": True}))  # type: ignore[arg-type]
        result, error = await game.call("/root/Main", "explode", [])
    assert result == 42
    assert error is not None and error.text == "SCRIPT ERROR: explode: it blew up"
    assert sleeps == []


async def test_a_failed_scene_waits_for_its_lines_on_the_pings_mark_not_by_polling(
    tmp_path: Path, child: Running, sleeps: list[float]
) -> None:
    game = GameSession(child, "headless", tmp_path, Scrubber([], secrets=[]))  # type: ignore[arg-type]
    with anyio.fail_after(10), pytest.raises(GameFailed) as failed:
        await game.connect(Bridge(child, {"loaded": False, "error": "the scene failed"}))  # type: ignore[arg-type]
    assert failed.value.message == (
        "the scene failed: ERROR: Cannot open file 'res://missing.tscn'."
    )
    assert sleeps == []


async def test_a_mark_already_read_or_never_printed_ends_its_wait() -> None:
    marks = CallMarks()
    read, never = marks.issue(2)
    assert marks.take(f"godot-mcp-mark {read.token}", 7)
    with anyio.fail_after(10):
        await marks.wait(read, 60)
        await marks.wait(never, 0.01)
    assert (read.seq, never.seq) == (7, None)
    marks.retire(read, never)
    assert marks.take(f"godot-mcp-mark {never.token}", 8) and never.seq is None


class _ReadWhileRetired(dict[str, Any]):
    """A call's open marks, whose line the reader's thread reads as the call retires it."""

    def __init__(self, marks: CallMarks, line: str) -> None:
        super().__init__(marks._open)
        self.marks, self.line, self.kept_out = marks, line, []

    def pop(self, *args: Any) -> Any:
        out = super().pop(*args)
        self.kept_out.append(self.marks.take(self.line, 9))
        return out


def test_a_mark_read_as_it_is_retired_is_kept_out_of_the_log() -> None:
    marks = CallMarks()
    (late,) = marks.issue(1)
    reading = _ReadWhileRetired(marks, f"godot-mcp-mark {late.token}")
    marks._open = reading
    marks.retire(late)
    assert reading.kept_out == [True]

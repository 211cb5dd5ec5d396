"""The fake engine's debugger (``tests/support/fake_godot.py``) sends its messages in the
shapes the real engines do: each message it sends in a recorded session
(``tests/data/debugger``) has the name, argument count and argument types of one the real
engine sent, on Godot 3's framing and on Godot 4's."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from godot_mcp.engine.debugger.variant import Dictionary, ObjectId
from godot_mcp.engine.debugger.wire import Framer, Message
from tests.support import fake_godot

DATA = Path(__file__).parent.parent / "data" / "debugger"
RECORDED = {3: "godot3-session.bin", 4: "godot4-session.bin"}
# Messages whose last argument is a variable's value (any type): only the others are shaped.
VALUED = {"stack_frame_var", "evaluation_return"}


def shape(m: Message) -> tuple[str, tuple[Any, ...]]:
    args = m.args[:-1] if m.name in VALUED else m.args
    if m.name == "stack_frame_vars" and len(m.args) > 1:  # Godot 3: counts, names, values
        args = m.args[:1]
    return m.name, tuple(_kind(a) for a in args)


def _kind(value: Any) -> Any:
    if isinstance(value, Dictionary):
        return tuple(k for k, _ in value.items)
    if isinstance(value, ObjectId):
        return "Object"
    return type(value).__name__


def fake_session(major: int) -> list[Message]:
    """What the fake sends for: a stop, its stack and variables, an evaluation (Godot 4), a
    step, a continue, a break between frames and its empty stack."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        kind = fake_godot.FakeDebugger4 if major >= 4 else fake_godot.FakeDebugger
        debugger = kind(f"127.0.0.1:{port}", "")
        conn, _ = server.accept()
    with conn:
        debugger.stop("res://main.gd", 7)
        debugger.command("get_stack_dump", [])
        debugger.command("get_stack_frame_vars", [0])
        if major >= 4:
            debugger.command("evaluate", ["speed", 0])
        debugger.command("next", [])
        debugger.command("get_stack_dump", [])
        debugger.command("continue", [])
        debugger.command("break", [])
        debugger.command("get_stack_dump", [])
        debugger.sock.close()
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    return Framer(major).feed(data)


@pytest.mark.parametrize("major", [3, 4], ids=["fake3", "fake4"])
def test_the_fake_debugger_sends_what_the_engine_sent(major: int) -> None:
    recorded = Framer(major).feed((DATA / RECORDED[major]).read_bytes())
    real = {shape(m) for m in recorded}
    sent = [shape(m) for m in fake_session(major)]
    names = [name for name, _ in sent]
    assert names.count("debug_enter") == 3 and names.count("stack_dump") == 3
    assert ("evaluation_return" in names) == (major >= 4)
    assert [s for s in sent if s not in real] == []

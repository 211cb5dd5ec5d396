"""The debugger's wire format, on bytes the real engines sent (``tests/data/debugger``), and on
what a hostile game could send instead."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from godot_mcp.engine.debugger.session import Debugger, NotStopped
from godot_mcp.engine.debugger.variant import (
    Dictionary,
    Malformed,
    ObjectId,
    Value,
    decode,
    decode_all,
    encode,
    to_json,
)
from godot_mcp.engine.debugger.wire import Framer, Message
from godot_mcp.engine.profile import profile_of

DATA = Path(__file__).parent.parent / "data" / "debugger"


def replay(name: str, major: int, chunk: int = 7) -> list[Message]:
    """The recording fed in small pieces, as a socket may deliver it."""
    data = (DATA / name).read_bytes()
    framer = Framer(major)
    out: list[Message] = []
    for i in range(0, len(data), chunk):
        out += framer.feed(data[i : i + chunk])
    return out


def interesting(messages: list[Message]) -> list[tuple[str, list[object]]]:
    return [(m.name, m.args) for m in messages if m.name not in ("output", "error")]


def test_a_godot3_session_decodes_message_by_message() -> None:
    seen = interesting(replay("godot3-session.bin", 3))
    frame = Dictionary([("file", "res://main.gd"), ("line", 7), ("function", "_ready"), ("id", 0)])
    assert seen[:3] == [
        ("debug_enter", [True, "Breakpoint"]),
        ("stack_dump", [frame]),
        (
            "stack_frame_vars",
            [1, "local_a", None, 3, "self", ObjectId(1174), "speed", 42, "label", "hello", 0],
        ),
    ]
    stacks = [args for name, args in seen if name == "stack_dump"]
    lines = [[(f.items[0][1], f.items[1][1], f.items[2][1]) for f in s] for s in stacks]
    assert lines == [
        [("res://main.gd", 7, "_ready")],
        [("res://main.gd", 8, "_ready")],  # after next
        [("res://main.gd", 18, "helper"), ("res://main.gd", 15, "_process")],
        [("res://main.gd", 19, "helper"), ("res://main.gd", 15, "_process")],  # after step
        [],  # after break: between frames
    ]
    names = [name for name, _ in seen]
    assert names.count("debug_enter") == 5 and names.count("debug_exit") == 5
    outputs = [m for m in replay("godot3-session.bin", 3) if m.name == "output"]
    assert outputs[0].args[0] == [
        "Godot Engine v3.2.3.stable.custom_build - https://godotengine.org",
        0,
    ]


def test_a_godot4_session_decodes_message_by_message() -> None:
    messages = replay("godot4-session.bin", 4)
    seen = interesting(messages)
    assert seen[0][0] == "set_pid"
    assert seen[1] == ("debug_enter", [True, "Breakpoint", True, 1])
    assert seen[2] == ("stack_dump", [3, "res://main.gd", 7, "_ready"])
    assert seen[3] == ("stack_frame_vars", [5])
    assert [args for _, args in seen[4:9]] == [
        ["local_a", 0, 0, None],
        ["local_b", 0, 0, None],
        ["self", 1, 24, ObjectId(26759660985)],
        ["speed", 1, 2, 42],
        ["label", 1, 4, "hello"],
    ]
    assert seen[9] == ("evaluation_return", ["local_a + speed", 3, 0, None])
    dumps = [args for name, args in seen if name == "stack_dump"]
    assert dumps[2] == [6, "res://main.gd", 18, "helper", "res://main.gd", 15, "_process"]
    assert dumps[3] == [3, "res://main.gd", 12, "_process"]  # after out
    assert dumps[4] == [0]
    assert {m.thread for m in messages} == {1}
    first = next(m for m in messages if m.name == "output")
    assert first.args[1].type == "PackedInt32Array"
    assert first.args[1].fields["items"].values() == [0]
    assert to_json(first.args[1]) == {"type": "PackedInt32Array", "items": [0]}


@pytest.mark.parametrize("major", [3, 4])
def test_values_round_trip_and_show_as_section_7(major: int) -> None:
    value = [None, True, 7, -(2**40), 0.5, "ü", {"a": [1]}, Value("Vector2", {"x": 1.0, "y": 2.0})]
    back = decode_all(encode(value, major), major)
    assert back == [None, True, 7, -(2**40), 0.5, "ü", Dictionary([("a", [1])]), value[7]]
    assert to_json(back) == [
        None,
        True,
        7,
        -(2**40),
        0.5,
        "ü",
        {"a": [1]},
        {"type": "Vector2", "x": 1.0, "y": 2.0},
    ]
    shown = to_json(Dictionary([(1, "x"), ("type", 2)]))
    assert shown == {"type": "Dictionary", "items": [[1, "x"], ["type", 2]]}
    assert to_json(float("nan")) == {"type": "float", "value": "nan"}
    long = to_json("x" * 10_001)
    assert long["truncated"] is True and long["length"] == 10_001


def test_a_basis_shows_its_columns_as_the_engine_names_them() -> None:
    # Godot 3 sends a Basis row by row: rows (1,2,3), (4,5,6), (7,8,9); basis.x is (1,4,7).
    rows = struct.pack("<I9f", 12, 1, 2, 3, 4, 5, 6, 7, 8, 9)
    shown = to_json(decode_all(rows, 3))
    assert shown == {"type": "Basis", "x": [1, 4, 7], "y": [2, 5, 8], "z": [3, 6, 9]}


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (struct.pack("<I", 200), "unknown type id 200"),
        (struct.pack("<II", 4, 1 << 30), "does not fit"),  # a string claiming 1 GiB
        (struct.pack("<II", 19, 0x7FFFFFFF), "does not fit"),  # an array claiming 2**31 items
        (struct.pack("<II", 4, 2) + b"\xff\xfe\0\0", "not UTF-8"),
        (struct.pack("<I", 2), "past the end"),
        (struct.pack("<II", 19, 1) * 100 + struct.pack("<I", 0), "nest"),
    ],
)
def test_what_does_not_decode_is_malformed_never_a_crash(data: bytes, why: str) -> None:
    with pytest.raises(Malformed, match=why):
        decode(data, 3)


def test_a_broken_frame_is_refused_before_its_bytes_are_kept() -> None:
    framer = Framer(3, max_packet=1024)
    with pytest.raises(Malformed, match="larger than 1024"):
        framer.feed(struct.pack("<I", 1 << 30) + b"x" * 10)
    with pytest.raises(Malformed, match="does not start with its name"):
        Framer(3).feed(struct.pack("<I", 8) + encode(5, 3))
    with pytest.raises(Malformed, match="not \\[name, thread, arguments\\]"):
        Framer(4).feed(struct.pack("<I", 8) + encode(5, 4))
    count = encode("m", 3), encode(-1, 3)
    with pytest.raises(Malformed, match="argument count"):
        Framer(3).feed(b"".join(struct.pack("<I", len(p)) + p for p in count))


@pytest.mark.parametrize("major", [3, 4])
def test_commands_are_framed_as_the_engine_reads_them(major: int) -> None:
    packet = Framer(major).command("breakpoint", ["res://a.gd", 3, True])
    (size,) = struct.unpack_from("<I", packet)
    value = decode_all(packet[4:], major)
    assert size == len(packet) - 4
    if major == 3:
        assert value == ["breakpoint", "res://a.gd", 3, True]
    else:
        assert value == ["breakpoint", 1, ["res://a.gd", 3, True]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _attached(
    major: int, sent: bytes, clock: Callable[[], float] = time.monotonic
) -> Debugger:
    """A Debugger on a real loopback connection whose other end sends ``sent``, then waits
    (``clock``: the flood gate's)."""
    import socket

    import anyio

    (listener,) = (await anyio.create_tcp_listener(local_host="127.0.0.1")).listeners
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    peer = socket.create_connection(("127.0.0.1", port))
    stream = await listener.accept()  # type: ignore[attr-defined]
    await listener.aclose()
    peer.sendall(sent)
    dbg = Debugger(stream, profile_of(major), clock=clock)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(dbg.run)
            while dbg.lost is None:
                await dbg.wait_for_change(0.2)
            tg.cancel_scope.cancel()
    peer.close()
    return dbg


@pytest.mark.anyio
@pytest.mark.parametrize("major", [3, 4])
async def test_a_game_that_breaks_the_framing_loses_its_debugger(major: int) -> None:
    dbg = await _attached(major, struct.pack("<I", 1 << 30) + b"\0" * 64)
    assert dbg.lost is not None and "larger than" in dbg.lost
    dbg = await _attached(major, struct.pack("<I", 4) + struct.pack("<I", 250))
    assert dbg.lost == "the game sent what is not the debugger's protocol: unknown type id 250"
    with pytest.raises(NotStopped, match="unknown type id 250"):
        await dbg.variables(0)


@pytest.mark.anyio
async def test_the_debuggers_refusals_are_worded_where_it_raises_them() -> None:
    from godot_mcp.engine.debugger.session import DebuggerLost
    from godot_mcp.errors import Unavailable

    dbg = await _attached(4, struct.pack("<I", 4) + struct.pack("<I", 250))
    for call in (dbg.variables(0), dbg.evaluate("1", 0), dbg.control("step", 1), dbg.profile(1)):
        with pytest.raises(DebuggerLost) as refused:
            await call
        assert isinstance(refused.value, Unavailable)
        assert refused.value.message == (
            "the debugger connection was lost: the game sent what is not the debugger's "
            "protocol: unknown type id 250"
        )


@pytest.mark.parametrize("major", [3, 4])
def test_the_profilers_messages_give_each_function_its_calls_and_times(major: int) -> None:
    from godot_mcp.engine.debugger.session import Profile

    profile = Profile(profile_of(major))
    for m in replay(f"godot{major}-profile.bin", major):
        profile.take(m)
    got = profile.result()
    (busiest,) = got.functions  # only _process ran while it was on
    line = 11 if major == 3 else 12  # Godot 3 names the func line, Godot 4 its first body line
    assert (busiest.path, busiest.line, busiest.function) == ("res://main.gd", line, "_process")
    assert busiest.calls == (317 if major == 3 else 69)  # the engine's own total
    assert 0 < busiest.self_ms <= busiest.total_ms < 10
    assert got.frames == (317 if major == 3 else 69) and got.dropped == 0
    assert profile.signatures[0][2] == "_process"


def _frame4(*rows: tuple[object, ...]) -> Message:
    """A Godot 4 profile frame: no servers, then each (id, calls, self, total, internal)."""
    values = [v for row in rows for v in row]
    return Message("servers:profile_frame", [1, 0.0, 0.0, 0.0, 0.0, 0.0, 0, len(values), *values])


def test_a_profile_drops_each_function_whose_figures_are_no_finite_numbers() -> None:
    from godot_mcp.engine.debugger.session import MAX_SAFE, Measured, Profile, Profiled

    profile = Profile(profile_of(4))
    names = ["plain", "huge", "summed", "nan", "negative", "counted", "most"]
    for i, name in enumerate(names):
        profile.take(Message("servers:function_signature", [f"res://a.gd::{i + 1}::{name}", i]))
    profile.take(Message("servers:function_signature", ["<bridge>::1::theirs", 9]))
    rows = [
        (0, 1, 0.001, 0.002, 0.0),
        (1, 1, 1e306, 1e306, 0.0),  # finite, but not in ms
        (2, 1, 1e308, 1e308, 0.0),  # finite, but not summed over two frames
        (3, 1, float("nan"), 0.0, 0.0),
        (4, -1, 0.0, 0.0, 0.0),
        (5, MAX_SAFE // 2 + 1, 0.0, 0.0, 0.0),  # past what JSON holds exactly, twice
        (6, MAX_SAFE // 2, 0.0, 0.0, 0.0),
        (9, 1, float("inf"), 0.0, 0.0),  # not the project's: neither shown nor counted
    ]
    for _ in range(2):
        profile.take(_frame4(*rows))
    assert profile.result() == Profiled(
        frames=2,
        functions=[
            Measured("res://a.gd", 1, "plain", 2, 2.0, 4.0),
            Measured("res://a.gd", 7, "most", MAX_SAFE - 1, 0.0, 0.0),
        ],
        dropped=5,
    )
    # The engine's own total is taken whole, its figures checked as the frames' are.
    profile.take(Message("servers:profile_total", _frame4((0, 3, 0.5, 1.0, 0.0)).args))
    assert profile.result().functions == [Measured("res://a.gd", 1, "plain", 3, 500.0, 1000.0)]
    profile.take(Message("servers:profile_total", _frame4((0, 3, 1e306, 1.0, 0.0)).args))
    assert profile.result() == Profiled(2, [], 1)


@pytest.mark.parametrize("major", [3, 4])
def test_a_packed_array_stays_its_bytes_until_shown(major: int) -> None:
    vectors = {3: 24, 4: 35}[major]  # PoolVector2Array / PackedVector2Array
    count = 300_000
    data = struct.pack("<II", vectors, count) + struct.pack(f"<{2 * count}f", *range(2 * count))
    value = decode_all(data, major)
    assert len(value.fields["items"].raw) == 8 * count  # no object an element
    shown = to_json(value)
    assert shown["items"][:2] == [
        {"type": "Vector2", "x": 0.0, "y": 1.0},
        {"type": "Vector2", "x": 2.0, "y": 3.0},
    ]
    assert shown["items"][-1] == {"type": "truncated", "remaining": count - 1000}


def test_a_packet_of_too_many_values_is_refused() -> None:
    nils = struct.pack("<II", 19, (1 << 20) + 1) + b"\0" * 4 * ((1 << 20) + 1)
    with pytest.raises(Malformed, match="more than 1048576 values"):
        decode(nils, 3)


def test_a_godot3_message_is_bounded_as_a_whole() -> None:
    framer = Framer(3, max_packet=1024)
    head = b"".join(struct.pack("<I", len(p)) + p for p in (encode("m", 3), encode(1000, 3)))
    framer.feed(head)
    arg = encode("x" * 900, 3)
    with pytest.raises(Malformed, match="larger than"):
        for _ in range(100):
            framer.feed(struct.pack("<I", len(arg)) + arg)


def test_a_second_of_more_than_any_engine_sends_is_a_flood() -> None:
    from godot_mcp.engine.debugger.session import Flooded, FloodGate

    now = [100.0]
    gate = FloodGate(max_bytes=1000, max_messages=10, clock=lambda: now[0])
    for i in range(10):
        now[0] = 100.0 + i * 0.05
        gate.count(90, 1)
    now[0] = 101.2  # a new second
    gate.count(0, 0)
    now[0] = 101.3
    for _ in range(10):
        gate.count(1, 1)
    with pytest.raises(Flooded, match="more than 10 messages in a second"):
        gate.count(0, 1)
    with pytest.raises(Flooded, match="more than 1000 bytes in a second"):
        FloodGate(max_bytes=1000, clock=lambda: 5.0).count(1001, 0)


@pytest.mark.anyio
async def test_a_flooding_game_loses_its_debugger() -> None:
    one = encode("output", 3), encode(1, 3), encode(["x", 0], 3)
    message = b"".join(struct.pack("<I", len(p)) + p for p in one)
    # However slowly they are read, they all come within one second of the gate's clock.
    dbg = await _attached(3, message * 20_001, clock=lambda: 7.0)
    assert (
        dbg.lost == "the game flooded the debugger connection: more than 20000 messages in a second"
    )


@pytest.mark.anyio
async def test_a_message_no_engine_sends_loses_the_debugger_and_says_so() -> None:
    bad = ["debug_enter", 2, True, "Breakpoint", "stack_dump", 1, Dictionary([([1], 2)])]
    # a Dictionary with an Array key: hashable nowhere, read without fault
    data = b"".join(struct.pack("<I", len(p)) + p for p in (encode(v, 3) for v in bad))
    dbg = await _attached(3, data + struct.pack("<I", 4) + struct.pack("<I", 250))
    # The odd frame was read (no fault killed the reader); what came after ended it.
    assert dbg.lost == "the game sent what is not the debugger's protocol: unknown type id 250"
    assert dbg.stopped is None and dbg.lost_at_break


class _Recorded:
    """A connection that keeps what the debugger sends (the game's side is dispatched by
    hand): for the ordering rules, which need no engine."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def extra(self, attribute: Any, default: Any = None) -> Any:
        return default

    async def send(self, data: bytes) -> None:
        self.sent.append(decode_all(data[4:], 4))

    async def aclose(self) -> None:
        pass


async def _stop(dbg: Debugger) -> None:
    await dbg._dispatch(Message("debug_enter", [True, "Breakpoint", True, 1]))
    await dbg._dispatch(Message("stack_dump", [3, "res://a.gd", 2, "f"]))


@pytest.mark.anyio
async def test_a_late_evaluation_answer_is_not_the_next_ones() -> None:
    import anyio

    stream = _Recorded()
    dbg = Debugger(stream, profile_of(4))  # type: ignore[arg-type]
    await _stop(dbg)
    await dbg._dispatch(Message("stack_frame_vars", [1]))
    await dbg._dispatch(Message("stack_frame_var", ["self", 1, 24, ObjectId(5)]))
    async with anyio.create_task_group() as tg:
        got: list[Any] = []

        async def ask() -> None:
            got.append(await dbg.evaluate("fast", 0))

        tg.start_soon(ask)
        await anyio.sleep(0.05)
        await dbg._dispatch(Message("evaluation_return", ["slow", 3, 0, "value of slow"]))
        await anyio.sleep(0.05)
        assert got == []
        await dbg._dispatch(Message("evaluation_return", ["fast", 3, 0, "value of fast"]))
    assert got == ["value of fast"]


@pytest.mark.anyio
async def test_a_profile_cut_short_by_a_break_stops_the_profiler_on_resume() -> None:
    import anyio

    from godot_mcp.engine.debugger.session import AtBreak

    stream = _Recorded()
    dbg = Debugger(stream, profile_of(4))  # type: ignore[arg-type]
    async with anyio.create_task_group() as tg:
        failed: list[str] = []

        async def profile() -> None:
            try:
                await dbg.profile(5)
            except AtBreak as exc:
                failed.append(exc.message)

        tg.start_soon(profile)
        await anyio.sleep(0.05)
        await _stop(dbg)
    assert failed == ["the game is stopped at res://a.gd:2 (break)"]
    names = [m[0] for m in stream.sent]
    assert names.count("profiler:servers") == 1  # started; not stopped while stopped
    await dbg._dispatch(Message("debug_exit", []))
    assert stream.sent[-1] == ["profiler:servers", 1, [False]]

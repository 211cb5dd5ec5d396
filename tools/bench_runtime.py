"""Runtime-loop latency: each tool against the bridge's own round trip, measured in one run.

    python tools/bench_runtime.py [--rounds 30] [--one]

On Godot 3 (this host) and Godot 4 (the sid root) in one run, side by side (``--one``: the
engine ``GODOT_BIN`` names only; see ``tools/bench_engines.py``).

A headless game of a generated project whose scene holds 1,000 nodes, driven through an
in-process MCP client. Floors, taken on the same game in the same run: the bridge's raw
round trip (a no-op ``ping``), and that round trip plus the bridge's own walk of the tree
(a ``tree`` command straight to the bridge). Goals: ``runtime.node.get``,
``runtime.input.send`` and ``runtime.log.read`` <= 1.5x the round trip;
``runtime.scene.tree`` of the 1,000-node scene <= 2x its floor; ``runtime.node.call`` <= 1.5x
``runtime.node.get`` (a call is one bridge round trip too: no wait for late error lines).
With ``debug`` (interface §10): a breakpoint hit to ``runtime.debug.state`` answering <= two
of the game's frames + 5 ms; ``runtime.debug.variables`` of a frame of 50 script variables
<= 1.5x ``runtime.node.get`` of the same 50; the game's frame time with the debugger attached
<= 1.05x without.
Exits 1 when a goal is missed on either engine. The project is written in each engine's
format.

Each call, floors included, starts at a random point of the game's frame, as an agent's
calls (seconds apart) do: back-to-back calls would measure whole frames only, since the
bridge reads its commands once a frame. A tool is timed twice: as the server answers it
(the goal), and as the Python SDK's client returns it, which then re-validates every answer
against the tool's ``outputSchema`` with ``jsonschema`` (a cost of that client, printed
beside it: the TypeScript SDK most hosts use validates with compiled ``ajv``).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from godot_mcp.app import open_app  # noqa: E402
from godot_mcp.config import Settings  # noqa: E402
from godot_mcp.engine.process.locate import locate_godot  # noqa: E402
from godot_mcp.store.values import Limits  # noqa: E402
from tools import bench_engines  # noqa: E402
from tools.bench_engines import Row  # noqa: E402

NODES = 1000
PROJECT = """config_version=4

[application]

config/name="bench"
run/main_scene="res://many.tscn"

[input]

poke={
"deadzone": 0.5,
"events": [  ]
}
"""
VARIABLES = [f"v{i}" for i in range(50)]
SCRIPT = (
    'extends Node2D\n\nvar value := 1\n\nfunc _ready():\n\tprint("ready")\n\n'
    "func poke(by):\n\treturn value + by\n\n"
    "func _process(_delta):\n"
    "\tvar s = 0\n"  # line 13: the debug cases' breakpoint
    "\tfor i in range(20000):\n\t\ts += i % 3\n"
    "\tvalue = 1 + s % 2\n\n" + "".join(f"var {v} := {i}\n" for i, v in enumerate(VARIABLES))
)
BREAK_LINE = "res://many.gd:13"


def make_project(root: Path, major: int) -> Path:
    root.mkdir()
    project = PROJECT if major == 3 else PROJECT.replace("config_version=4", "config_version=5")
    (root / "project.godot").write_text(project)
    (root / "many.gd").write_text(SCRIPT)
    if major == 3:
        head = [
            "[gd_scene load_steps=2 format=2]",
            "",
            '[ext_resource path="res://many.gd" type="Script" id=1]',
            "",
            '[node name="Many" type="Node2D"]',
            "script = ExtResource( 1 )",
        ]
    else:
        head = [
            "[gd_scene load_steps=2 format=3]",
            "",
            '[ext_resource type="Script" path="res://many.gd" id="1_many"]',
            "",
            '[node name="Many" type="Node2D"]',
            'script = ExtResource("1_many")',
        ]
    lines = head
    for i in range(NODES - 1):  # ten groups of children, so the tree has some depth
        parent = "." if i % 100 == 0 else f"G{i // 100 * 100}"
        lines += [
            "",
            f'[node name="{"G" if i % 100 == 0 else "N"}{i}" type="Node2D" parent="{parent}"]',
        ]
    (root / "many.tscn").write_text("\n".join(lines) + "\n")
    return root


FRAME = 1 / 60  # the bridge runs the game at 60 fps
PHASE = random.Random(7)


async def timed(rounds: int, fn: Callable[[], Awaitable[Any]]) -> float:
    """Median seconds of ``fn`` over ``rounds`` calls, after two warm-up calls, each call
    started at a random point of the game's frame."""
    samples = []
    for i in range(rounds + 2):
        await anyio.sleep(PHASE.uniform(0, FRAME))
        t = time.perf_counter()
        await fn()
        if i >= 2:
            samples.append(time.perf_counter() - t)
    return statistics.median(samples)


async def frame_ms(c: Client, sids: list[str], rounds: int) -> list[float]:
    """The median of the engine's own process time per frame (ms) of each game, read side by
    side (the machine's noise falls on both alike) every half second, ``rounds`` times, once
    the engine's monitors (read once a second) have their first second."""
    samples: list[list[float]] = [[] for _ in sids]
    with anyio.fail_after(rounds + 30):
        while min(len(x) for x in samples) < rounds:
            for sid, into in zip(sids, samples, strict=True):
                r = await c.call_tool("runtime_perf_read", {"session_id": sid})
                perf = r.structured_content
                if perf["fps"] > 1:
                    into.append(perf["frame_ms"])
            await anyio.sleep(0.5)
    return [statistics.median(x) for x in samples]


async def debug_rows(c: Client, rounds: int, plain: str) -> list[Row]:
    """The debugger's figures on a game started with ``debug``: a breakpoint hit to
    ``runtime.debug.state`` answering (floor: two of the game's frames + 5 ms), the variables
    of a frame of 50 script variables (floor: ``runtime.node.get`` of the same 50), and the
    game's frame time with the debugger attached (floor: the same game without).

    A stopped engine reads its debugger's commands every 10 ms or so (its break loop sleeps
    between looks), as a running bridge reads its own once a frame: both are timed from a
    random point of those waits."""
    started = await c.call_tool("runtime_session_start", {"mode": "headless", "debug": True})
    sid = {"session_id": started.structured_content["session"]["id"]}

    async def ok(tool: str, **args: Any) -> dict[str, Any]:
        r = await c.call_tool(tool, {**sid, **args})
        assert r.structured_content["outcome"] == "ok", r.structured_content
        return dict(r.structured_content)

    plain_frame, debug_frame = await frame_ms(c, [plain, sid["session_id"]], rounds)
    fps = (await ok("runtime_perf_read"))["fps"] or 60.0
    hits, reads, gets = [], [], []
    await ok("runtime_debug_breakpoints", set=[BREAK_LINE])
    await ok("runtime_debug_state", wait_seconds=5)
    for _ in range(rounds):
        # From a resume to the next hit of a line the game runs every frame: the hit comes
        # within that frame, so the time is the hit to the answer, plus at most one frame.
        t = time.perf_counter()
        await ok("runtime_debug_control", action="continue")
        at = await ok("runtime_debug_state", wait_seconds=5)
        hits.append(time.perf_counter() - t)
        assert at["state"] == "break", at
        await anyio.sleep(PHASE.uniform(0, FRAME))  # as an agent's call: any time after
        t = time.perf_counter()
        shown = await ok("runtime_debug_variables")
        reads.append(time.perf_counter() - t)
        assert set(VARIABLES) <= set(shown["members"]), shown
    await ok("runtime_debug_breakpoints", clear=[BREAK_LINE])
    await ok("runtime_debug_control", action="continue")
    for _ in range(rounds):
        await anyio.sleep(PHASE.uniform(0, FRAME))
        t = time.perf_counter()
        await ok("runtime_node_get", path="/root/Many", properties=VARIABLES)
        gets.append(time.perf_counter() - t)
    await c.call_tool("runtime_session_stop", sid)
    hit, read, get50 = (statistics.median(x) for x in (hits, reads, gets))
    floor = 2 / fps + 0.005
    print(
        f"debug: the game ran at {fps:.0f} fps; frame time {plain_frame:.3f} ms plain, "
        f"{debug_frame:.3f} ms with debug"
    )
    return [
        Row(
            "resume -> hit -> debug.state (floor: 2 frames + 5 ms)",
            hit * 1e3,
            floor * 1e3,
            1.0,
        ),
        Row("runtime.debug.variables, 50 (floor: node.get of 50)", read * 1e3, get50 * 1e3, 1.5),
        Row("frame time with debug (floor: without)", debug_frame, plain_frame, 1.05),
    ]


async def measure(args: argparse.Namespace) -> tuple[str, list[Row]]:
    n = args.rounds
    major = locate_godot().major or 3
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        project = make_project(Path(tmp) / "bench", major)
        settings = Settings(Path(tmp) / "state", None, None, Limits())
        async with open_app(settings, project, "stdio") as app, Client(app.server) as c:
            started = await c.call_tool("runtime_session_start", {"mode": "headless"})
            sid = started.structured_content["session"]["id"]
            game = app.deps.games.sessions[sid].game

            session = c.session
            validate = session.validate_tool_result

            async def unvalidated(_name: str, _result: Any) -> None:
                return None

            async def tool(name: str, arguments: dict[str, Any]) -> None:
                r = await c.call_tool(name, {"session_id": sid, **arguments})
                assert r.structured_content["outcome"] == "ok", r.structured_content

            ping = await timed(n, lambda: game.ping())
            walk = await timed(n, lambda: game.tree("/root", depth=64, max_nodes=NODES + 10))
            cases = [
                (
                    "runtime.node.get",
                    ping,
                    1.5,
                    lambda: tool(
                        "runtime_node_get", {"path": "/root/Many", "properties": ["value"]}
                    ),
                ),
                (
                    "runtime.input.send",
                    ping,
                    1.5,
                    lambda: tool(
                        "runtime_input_send",
                        {"events": [{"type": "action", "action": "poke", "pressed": True}]},
                    ),
                ),
                (
                    "runtime.log.read",
                    ping,
                    1.5,
                    lambda: tool("runtime_log_read", {"max_lines": 50}),
                ),
                (
                    "runtime.scene.tree",
                    walk,
                    2.0,
                    lambda: tool("runtime_scene_tree", {"depth": 64, "max_nodes": NODES + 10}),
                ),
            ]
            get = 0.0
            for name, floor, goal, fn in cases:
                session.validate_tool_result = unvalidated  # type: ignore[method-assign,assignment]
                wall = await timed(n, fn)
                session.validate_tool_result = validate  # type: ignore[method-assign]
                client = await timed(n, fn)
                get = wall if name == "runtime.node.get" else get
                rows.append(Row(name, wall * 1e3, floor * 1e3, goal))
                rows.append(Row(f"  {name} (python sdk client)", client * 1e3, floor * 1e3, None))
            # node.call, against node.get: the same round trip, plus the call's marker lines.
            session.validate_tool_result = unvalidated  # type: ignore[method-assign,assignment]
            call = await timed(
                n,
                lambda: tool(
                    "runtime_node_call", {"path": "/root/Many", "method": "poke", "args": [2]}
                ),
            )
            session.validate_tool_result = validate  # type: ignore[method-assign]
            rows.append(Row("runtime.node.call (floor: node.get)", call * 1e3, get * 1e3, 1.5))
            rows += await debug_rows(c, n, sid)
            await c.call_tool("runtime_session_stop", {"session_id": sid})
            version = game.engine_version or "?"
    print(
        f"floors: bridge round trip {ping * 1e3:.2f} ms; round trip + walk of "
        f"{NODES} nodes {walk * 1e3:.2f} ms"
    )
    return version, rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    sys.exit(bench_engines.main(measure, parser, "bench_runtime.py"))

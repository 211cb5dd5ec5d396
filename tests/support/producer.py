"""A test-only tool that registers deterministic bytes as an artifact of the caller.

The shipped server never offers it (a test proves that); tests start the real
server through ``tests.support.serve_test``, which adds it.
"""

from __future__ import annotations

import random

import anyio
from mcp import types

from godot_mcp.mcp.deps import ToolCall
from godot_mcp.mcp.describe import artifact_dict, resource_link
from godot_mcp.mcp.outcomes import ok
from godot_mcp.mcp.spec import ARTIFACT, Arg, Tool
from godot_mcp.store.values import NewArtifact


def payload(size: int, seed: int) -> bytes:
    """The bytes ``test.produce`` registers for ``size`` and ``seed``."""
    return random.Random(seed).randbytes(size)


async def produce(call: ToolCall) -> types.CallToolResult:
    size, seed = call.args["size"], call.args["seed"]
    item = NewArtifact("application/octet-stream", payload(size, seed))
    # On a worker thread, as captures register: the loop keeps serving meanwhile.
    info = await anyio.to_thread.run_sync(
        call.deps.store.register, call.caller, call.generation, item
    )
    return ok([resource_link(info)], artifact=artifact_dict(info))


PRODUCER = Tool(
    "test.produce",
    "Produce test bytes",
    "TEST ONLY: register deterministic bytes as an artifact of the caller.",
    produce,
    args=(
        Arg("size", "integer", minimum=0, maximum=64 << 20, default=1000),
        Arg("seed", "integer", minimum=0, maximum=1 << 30, default=0),
    ),
    answer={"artifact": ARTIFACT},
    required=("artifact",),
    toolset="core",
)

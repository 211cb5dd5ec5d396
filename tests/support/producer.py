"""A test-only tool that registers deterministic bytes as an artifact of the caller.

The shipped server never offers it (a test proves that); tests start the real
server through ``tests.support.serve_test``, which adds it.
"""

from __future__ import annotations

import random

from mcp import types

from godot_mcp.edge.args import Args
from godot_mcp.edge.deps import ToolCall, ToolSpec, schema
from godot_mcp.edge.describe import artifact_dict, resource_link
from godot_mcp.edge.outcomes import ok
from godot_mcp.store.values import NewArtifact


def payload(size: int, seed: int) -> bytes:
    """The bytes ``test.produce`` registers for ``size`` and ``seed``."""
    return random.Random(seed).randbytes(size)


async def produce(call: ToolCall) -> types.CallToolResult:
    args = Args(call.arguments, {"size", "seed"})
    size = args.integer("size", 0, 64 << 20, 1000)
    seed = args.integer("seed", 0, 1 << 30, 0)
    info = call.deps.store.register(
        call.caller, call.generation, NewArtifact("application/octet-stream", payload(size, seed))
    )
    return ok([resource_link(info)], artifact=artifact_dict(info))


PRODUCER = ToolSpec(
    "test.produce",
    "TEST ONLY: register deterministic bytes as an artifact of the caller.",
    schema({"size": {"type": "integer"}, "seed": {"type": "integer"}}),
    produce,
)

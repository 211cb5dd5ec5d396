"""A child process that works on a store until it is killed (crash tests).

Usage: python -m tests.store.crash_child STATE PROJECT OP CLOCK_OFFSET_S SEED
OP is register, group, reconcile or loop. GODOT_MCP_KILL_AT picks the crash point.
"""

from __future__ import annotations

import random
import sys
from datetime import timedelta
from pathlib import Path

from godot_mcp.store.reconcile import reconcile
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import Caller, Limits, NewArtifact, utc_now

BUDGET = 8 * 1024 * 1024


def main() -> None:
    state, project, op, offset, seed = sys.argv[1:6]
    rng = random.Random(int(seed))
    shift = timedelta(seconds=float(offset))
    store = ArtifactStore(
        Path(state), Limits(store_budget_bytes=BUDGET), clock=lambda: utc_now() + shift
    )
    ps = store.projects.observe(Path(project))
    caller = Caller("local", None, None, ps.id)

    def payload() -> bytes:
        return rng.randbytes(rng.choice([1, 70_000, 300_000, 700_000]))

    if op == "register":
        for _ in range(3):
            store.register(caller, ps.generation, NewArtifact("image/png", payload()))
    elif op == "group":
        items = [NewArtifact("application/octet-stream", payload(), name=f"o{i}") for i in range(3)]
        store.register_group(caller, ps.generation, items, export_id=f"x{seed}")
    elif op == "reconcile":
        reconcile(store)
    elif op == "loop":
        while True:
            try:
                store.register(caller, ps.generation, NewArtifact("image/png", payload()))
            except Exception:
                store.release_expired()
    print("finished", flush=True)


if __name__ == "__main__":
    main()

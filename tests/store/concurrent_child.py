"""Registers fixed-size artifacts until the budget refuses (concurrency tests).

Usage: python -m tests.store.concurrent_child STATE PROJECT BUDGET SIZE COUNT [DATABASE_URL
[BLOB_STORE_URL]]
Prints the number of successful registrations.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from godot_mcp.errors import TooLarge
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import Caller, Limits, NewArtifact


def main() -> None:
    state, project, budget, size, count = sys.argv[1:6]
    database = sys.argv[6] if len(sys.argv) > 6 and sys.argv[6] else None
    blob_store = sys.argv[7] if len(sys.argv) > 7 and sys.argv[7] else None
    store = ArtifactStore(
        Path(state),
        Limits(store_budget_bytes=int(budget)),
        database_url=database,
        blob_store_url=blob_store,
    )
    ps = store.projects.observe(Path(project))
    caller = Caller("local", None, None, ps.id)
    ok = 0
    for _ in range(int(count)):
        try:
            store.register(caller, ps.generation, NewArtifact("image/png", os.urandom(int(size))))
            ok += 1
        except TooLarge:
            pass
    print(ok, flush=True)


if __name__ == "__main__":
    main()
